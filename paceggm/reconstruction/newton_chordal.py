"""Newton on a chordal embedding of the pattern: the same answers, work that follows the sparse pattern.

:mod:`.newton` and :mod:`.newton_pcg` hold ``P`` and ``W = P⁻¹`` as dense ``d × d``
arrays: every Newton iteration factors ``P`` (``d³/3``) and inverts it, and every
Hessian product ``(W ΔP W)_S`` reads all of ``W``. But ``P`` is zero off the
measured pattern ``S``, and on a sparse pattern a chordal embedding ``E ⊇ S``
(the pattern of ``P``'s Cholesky factor in a minimum-degree order) is a small
fraction of ``d²``. On ``E`` everything a Newton iteration needs has a
multifrontal algorithm over the clique tree (CHOMPACK, on top of CVXOPT):

* the Cholesky factor of ``P`` (no fill outside ``E``) and ``log det P``;
* the gradient, from the *projected inverse* ``W`` restricted to ``E`` (``W`` on
  ``S`` is all the gradient reads);
* Hessian products ``v ↦ m ⊙ (W ΔP W)_S + μ q ⊙ v``, from the factored Hessian
  of ``log det`` on ``E``, ``P_E(W U W) = G*(G(U))``;
* and the *inverse* of that ``E``-Hessian, as cheap as a product.

CG is preconditioned as :mod:`.newton_pcg` does it, with its helpers and its
state: a Hessian factor kept from earlier rounds, refactored at the current
iterate (from the one dense ``W`` such a refactorisation needs) when it has gone
stale or CG misses its tolerance. A block that has no factor yet (a cold solve)
starts instead with the ``S × S`` block of the inverse ``E``-Hessian,
``(K_E⁻¹)_SS``: the inverse of the Schur complement of the fill entries, below
the Hessian (the preconditioned spectrum is ``≥ 1``) and exact where ``S`` is
chordal, for no ``|S|³`` factorisation. Measured on ``hard_cols``, that one
alone leaves CG short of its tolerance on most Newton systems of late rounds
(the fill couples the entries), so it is not kept once a factor exists.

The symbolic analysis (ordering, clique tree, where each entry lives in the
factor's storage) is kept in the solver's state and redone only when the
pattern gains an entry outside ``E`` (counted as ``"symbolic analyses"``). The stages,
stopping rules and answers are those of :mod:`.newton_pcg` (warm starts try the
μ = 0 limit first, the μ_min stage and the exact stage otherwise, the cold
continuation from the diagonal last), to the exact solvers' tolerance. Dense
``d × d`` work is left only where something needs all of ``W``: the answer, once
per solve (a dense factorisation and inverse, about three Choleskys), because the
caller needs it (PACE-GGM's selection scores every unmeasured entry from the
covariance), and a refactorisation of the preconditioner.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from paceggm.reconstruction.counters import counted, counted_solve, note_decrement
from paceggm.reconstruction.newton import (
    _BACKOFF,
    _EARLY,
    _FLOOR,
    _FULL_STEP,
    _WARM_DAMPED,
    _WARM_ITER,
    DEFAULTS,
    _assemble_warm_start,
    _decrement,
    _factor_at,
    _inverse,
    _Pattern,
    covers_all,
)
from paceggm.reconstruction.newton_pcg import (
    _CG_MIN_STEPS,
    _CG_RTOL_MAX,
    _CG_RTOL_MIN,
    _FACTOR_IN_STEPS,
    _KKT_STOP,
    PCGNewtonState,
    _factor_solve,
    _hessian_factor,
    _hessian_factor_single,
    _PCGDirection,
    _Preconditioner,
    _single,
    _warm_refine,
)
from paceggm.reconstruction.problem import Problem, diagonal_barrier_solution, mu_schedule
from paceggm.reconstruction.result import BlockSolution


def _chompack():
    """CHOMPACK and CVXOPT, imported when a chordal solve first needs them (a clear error when missing)."""
    try:
        import chompack
        from cvxopt import amd, spmatrix
    except ImportError as exc:  # pragma: no cover - both are dependencies of the package
        raise ImportError("solver 'newton_chordal' needs chompack and cvxopt (pip install chompack cvxopt)") from exc
    return chompack, amd, spmatrix


class Embedding:
    """A chordal embedding ``E`` of a pattern in a minimum-degree order, and where each entry lives in its storage.

    ``symb`` is CHOMPACK's symbolic factorisation; ``keys`` (sorted) and
    ``positions`` list the lower entries of ``E`` in the permuted order as
    ``row * d + col`` and their offsets in a :class:`chompack.cspmatrix`'s values.
    """

    @counted("symbolic analyses")
    def __init__(self, d: int, rows: np.ndarray, cols: np.ndarray) -> None:
        chompack, amd, spmatrix = _chompack()
        self.d = d
        pattern = spmatrix(1.0, [int(i) for i in np.maximum(rows, cols)], [int(j) for j in np.minimum(rows, cols)],
                           (d, d))
        self.symb = chompack.symbolic(pattern, p=amd.order)
        s = self.symb
        self.ip = np.asarray(s.ip, dtype=np.int64).ravel()
        snptr, sncolptr = np.asarray(s.snptr).ravel(), np.asarray(s.sncolptr).ravel()
        snrowidx, blkptr = np.asarray(s.snrowidx, dtype=np.int64).ravel(), np.asarray(s.blkptr).ravel()
        keys, positions = [], []
        for k in range(s.Nsn):
            R = snrowidx[sncolptr[k]:sncolptr[k + 1]]
            nj = R.size
            # After CHOMPACK's post-ordering supernode k holds the columns snptr[k], …, snptr[k + 1] − 1, stored
            # column-major in an nj × nn block whose rows are R; the lower part of column i starts at row i.
            for i, col in enumerate(range(snptr[k], snptr[k + 1])):
                keys.append(R[i:] * d + col)
                positions.append(blkptr[k] + nj * i + np.arange(i, nj))
        keys, positions = np.concatenate(keys), np.concatenate(positions)
        order = np.argsort(keys)
        self.keys, self.positions = keys[order], positions[order]
        self.size = int(blkptr[-1])

    @property
    def entries(self) -> int:
        """Entries of ``E``'s lower triangle (diagonal included): those of the Cholesky factor."""
        return int(self.keys.size)

    @property
    def clique_number(self) -> int:
        return int(self.symb.clique_number)

    def locate(self, rows: np.ndarray, cols: np.ndarray) -> np.ndarray | None:
        """Storage offsets of the entries ``(rows, cols)`` (original indices), or None if one lies outside ``E``."""
        pr, pc = self.ip[rows], self.ip[cols]
        key = np.maximum(pr, pc) * self.d + np.minimum(pr, pc)
        at = np.minimum(np.searchsorted(self.keys, key), self.keys.size - 1)
        if not np.array_equal(self.keys[at], key):
            return None
        return self.positions[at]


def embedding_of(p: Problem) -> Embedding:
    """The chordal embedding of ``p``'s measured pattern (what ``auto``'s cost model measures)."""
    return Embedding(p.d, p.rows, p.cols)


class _Point:
    """An iterate: entries ``x`` on the pattern, the sparse Cholesky factor of ``P(x)``, and ``W`` on ``E`` when asked."""

    def __init__(self, ops: _Kernels, x: np.ndarray, L) -> None:
        self.ops, self.x, self.L = ops, x, L
        self.logdet = 2.0 * float(np.sum(np.log(ops.values(L)[ops.diag])))
        self._Y = None

    @property
    def Y(self):
        """The projected inverse ``W`` on ``E``, computed once."""
        if self._Y is None:
            self._Y = self.ops.projected_inverse(self.L)
        return self._Y

    @property
    def w(self) -> np.ndarray:
        """``W`` on the pattern, in its order."""
        return self.ops.values(self.Y)[self.ops.pos]

    @property
    def w_diag(self) -> np.ndarray:
        """``W``'s diagonal, by original index."""
        return self.ops.values(self.Y)[self.ops.diag]


class _Kernels:
    """The sparse kernels on one embedding, for one block's pattern."""

    def __init__(self, emb: Embedding, pat: _Pattern, pos: np.ndarray) -> None:
        self.chompack = _chompack()[0]
        self.emb, self.pat, self.pos = emb, pat, pos
        d = pat.d
        self.diag = emb.locate(np.arange(d), np.arange(d))
        self._U = self.chompack.cspmatrix(emb.symb)

    @staticmethod
    def values(X) -> np.ndarray:
        """The values of a :class:`chompack.cspmatrix`, as a NumPy view."""
        return np.frombuffer(X.blkval, dtype=np.float64)

    @counted("factorisations of P")
    def point(self, x: np.ndarray) -> _Point | None:
        """The iterate at ``x``, or None when ``P(x)`` is not positive definite (or not finite)."""
        if not np.all(np.isfinite(x)):
            return None
        L = self.chompack.cspmatrix(self.emb.symb)
        self.values(L)[self.pos] = x
        try:
            self.chompack.cholesky(L)
        except ArithmeticError:
            return None
        if not np.all(self.values(L)[self.diag] > 0):
            return None
        return _Point(self, x, L)

    @counted("projected inverses")
    def projected_inverse(self, L):
        Y = L.copy()
        self.chompack.projected_inverse(Y)
        return Y

    def _apply(self, pt: _Point, u: np.ndarray, *, inverse: bool) -> np.ndarray:
        """``P_E(W U W)`` (or its inverse) of the symmetric ``U`` with lower entries ``u`` on the pattern, on the pattern."""
        U = self._U
        values = self.values(U)
        values[:] = 0.0
        values[self.pos] = u
        if inverse:
            self.chompack.hessian(pt.L, pt.Y, U, adj=True, inv=True)
            self.chompack.hessian(pt.L, pt.Y, U, adj=False, inv=True)
        else:
            self.chompack.hessian(pt.L, pt.Y, U, adj=False, inv=False)
            self.chompack.hessian(pt.L, pt.Y, U, adj=True, inv=False)
        return values[self.pos].copy()

    @counted("Hessian products")
    def hessian_times(self, pt: _Point, v: np.ndarray, mu: float) -> np.ndarray:
        """``∇²F v = m ⊙ (W ΔP W)_S + μ q ⊙ v`` (``ΔP`` the symmetric matrix of ``v``)."""
        pat = self.pat
        return pat.m * self._apply(pt, v, inverse=False) + mu * pat.q * v

    @counted("preconditioner solves")
    def precondition(self, pt: _Point, r: np.ndarray) -> np.ndarray:
        """``(K_E⁻¹)_SS r``, ``K_E`` the μ = 0 Hessian on all of ``E`` (see the module docstring).

        ``K_E u = m ⊙ P_E(W U W)`` in the entries of ``E``, so ``K_E⁻¹ b`` is the
        inverse Hessian map of the matrix with entries ``b / m``; ``r`` is padded
        with zeros on the fill entries and the answer read back on the pattern.
        """
        return self._apply(pt, r / self.pat.m, inverse=True)

    def dense_inverse(self, pt: _Point) -> np.ndarray:
        """``W = P⁻¹``, all ``d × d`` of it, exactly symmetric: :mod:`.newton`'s dense factorisation and inverse.

        Two sparse triangular solves with ``d`` right-hand sides (CHOMPACK's ``trsm``)
        do the same flops in theory but were 1.9x slower than LAPACK's ``dpotrf`` +
        ``dpotri`` here (d = 1,000, one thread: 114 against 60 ms), so they are the
        fallback only: where ``P`` is barely positive definite (``y`` not completable,
        ``P`` of the order of ``1/μ``) the dense factorisation can fail on rounding
        that the sparse one, in its own order, survived.
        """
        L = _factor_at(self.pat, pt.x)
        if L is not None:
            return _inverse(L)
        from cvxopt import matrix

        B = matrix(np.eye(self.pat.d))
        self.chompack.trsm(pt.L, B)
        self.chompack.trsm(pt.L, B, trans="T")
        W = np.array(B)
        W += W.T
        W *= 0.5
        return W

    def value(self, pt: _Point, mu: float) -> float:
        """``F_μ`` at the iterate."""
        pat = self.pat
        return -pt.logdet + float(np.dot(pat.m * pat.y, pt.x)) + 0.5 * mu * float(np.dot(pat.q * pt.x, pt.x))


class _Direction:
    """Newton directions by CG on the embedding's Hessian products, preconditioned as :mod:`.newton_pcg` does.

    The preconditioner is :mod:`.newton_pcg`'s: the Hessian factors inherited from
    earlier rounds (new entries on the diagonal), refactored at the current iterate
    when CG misses its tolerance within its budget or the kept factor has gone
    stale (its rule, its helpers and its state). Only a block without any factor
    (a cold solve) starts with the embedding's inverse Hessian (:meth:`_Kernels.precondition`)
    instead, which is exact where the pattern is chordal and costs no ``|S|³`` factorisation.
    """

    # newton_pcg's bookkeeping of kept factors, on the attributes it reads (pat, S, pre, factor, use, n_cg, ...).
    _inherit = _PCGDirection._inherit
    _use_factor = _PCGDirection._use_factor
    state_hessian = _PCGDirection.state_hessian

    def __init__(self, ops: _Kernels, init) -> None:
        self.ops = ops
        self.pat = ops.pat
        self.S = self.pat.r.size
        self.pre = _Preconditioner(self.S)
        self.factor = None
        self.n_factor = self.n_cg = self._steps_before = 0
        self.rtol = _CG_RTOL_MAX
        self.use = (0, 0, 0)
        self._inherit(init)
        solves, steps, last = self.use
        self._refactor = solves > 0 and last * solves > self.S / _FACTOR_IN_STEPS + steps
        self.max_steps = max(_CG_MIN_STEPS, self.S // 12)

    def gradient(self, pt: _Point, mu: float) -> np.ndarray:
        pat = self.pat
        return pat.m * (pat.y - pt.w) + mu * pat.q * pt.x

    def diagonal(self, pt: _Point, mu: float) -> np.ndarray:
        """The Hessian's diagonal (:func:`.newton_pcg._hessian_diagonal`), from ``W`` on the embedding."""
        pat, wd = self.pat, pt.w_diag
        return 0.5 * pat.m * pat.m * (wd[pat.r] * wd[pat.c] + pt.w**2) + mu * pat.q

    def _precondition(self, pt: _Point, r: np.ndarray, diag: np.ndarray) -> np.ndarray:
        return self.pre.solve(r, diag) if self.pre.pieces else self.ops.precondition(pt, r)

    def __call__(self, pt: _Point, mu: float):
        step, dec = self._direction(pt, mu)
        note_decrement(dec)
        if step is not None:
            self.rtol = min(_CG_RTOL_MAX, max(_CG_RTOL_MIN, dec * dec))
        return step, dec

    def _direction(self, pt: _Point, mu: float):
        pat = self.pat
        g = self.gradient(pt, mu)
        diag = self.diagonal(pt, mu)
        if not (np.all(np.isfinite(diag)) and np.all(diag > 0) and np.all(np.isfinite(g))):
            return None, np.nan
        if not self._refactor:
            step = self._cg(-g, pt, mu, diag)
            if step is not None:
                return _decrement(g, step)
        self._refactor = False
        # The Hessian at this iterate, factored (newton_pcg's helpers): the one dense W of a Newton system.
        W = self.ops.dense_inverse(pt)
        if mu == 0.0:
            factor = _hessian_factor_single(pat, W, diag)
            if factor is not None:
                self._use_factor(factor)
                step = self._cg(-g, pt, mu, diag)
                if step is not None:
                    return _decrement(g, step)
        factor = _hessian_factor(pat, W, mu)
        if factor is None:
            return None, np.nan
        cf, h = factor
        self._use_factor((_single(cf), h))
        return _decrement(g, -_factor_solve(cf, g / h) / h)

    def decrement_bound(self, pt: _Point, mu: float) -> float:
        """A lower bound on the Newton decrement, ``|gᵀv| / sqrt(vᵀ H v)`` with ``v = M⁻¹ g`` (as :mod:`.newton_pcg`)."""
        g = self.gradient(pt, mu)
        diag = self.diagonal(pt, mu)
        if not (np.all(np.isfinite(diag)) and np.all(diag > 0) and np.all(np.isfinite(g))):
            return 0.0
        v = self._precondition(pt, g, diag)
        vHv = float(np.dot(v, self.ops.hessian_times(pt, v, mu)))
        gv = float(np.dot(g, v))
        if not (vHv > 0 and np.isfinite(vHv) and np.isfinite(gv)):
            return 0.0
        return abs(gv) / np.sqrt(vHv)

    def _cg(self, b: np.ndarray, pt: _Point, mu: float, diag: np.ndarray) -> np.ndarray | None:
        ops = self.ops
        x = np.zeros_like(b)
        r = b.copy()
        z = self._precondition(pt, r, diag)
        p = z.copy()
        rz = float(np.dot(r, z))
        if rz <= 0 or not np.isfinite(rz):
            return None
        target = self.rtol**2 * rz
        for _ in range(self.max_steps):
            self.n_cg += 1
            Ap = ops.hessian_times(pt, p, mu)
            pAp = float(np.dot(p, Ap))
            if not (pAp > 0 and np.isfinite(pAp)):
                return None
            alpha = rz / pAp
            x += alpha * p
            r -= alpha * Ap
            z = self._precondition(pt, r, diag)
            rz_new = float(np.dot(r, z))
            if rz_new <= target:
                return x
            p = z + (rz_new / rz) * p
            rz = rz_new
        return None


def _kkt(pt: _Point) -> float:
    """``max |y − W|`` on the pattern relative to ``max |W|`` there."""
    w = pt.w
    return float(np.max(np.abs(pt.ops.pat.y - w)) / np.max(np.abs(w)))


def _stage(ops: _Kernels, direction: _Direction, pt: _Point, mu: float, *, tol: float, max_newton: int,
           exact_stage: bool = False, damped: int = 0, kkt_stop: float | None = None, bound: bool = False):
    """Minimise ``F_μ`` from ``pt``: ``(pt, converged, n_iter)``, the rules of :func:`.newton._stage`.

    With ``bound`` (exact stage without damped iterations) a stage whose first decrement is provably
    outside the quadratic region fails before solving a Newton system (:meth:`_Direction.decrement_bound`).
    """
    if exact_stage and damped == 0 and bound and direction.decrement_bound(pt, mu) >= _FULL_STEP:
        return pt, False, 0
    f = ops.value(pt, mu)
    prev = np.inf
    for it in range(1, max_newton + 1):
        step, dec = direction(pt, mu)
        if step is None:
            return pt, False, it
        if dec <= tol or (dec <= _FLOOR and dec >= prev):
            new = ops.point(pt.x + step)
            return (pt if new is None else new), True, it
        if exact_stage and ((dec >= _FULL_STEP and it > damped) or (prev < _FULL_STEP and dec > 0.5 * prev)):
            return pt, False, it
        if exact_stage and kkt_stop is not None and dec <= _EARLY and prev < _FULL_STEP:
            new = ops.point(pt.x + step)
            if new is not None:
                pt = new
                if _kkt(pt) <= kkt_stop:
                    return pt, True, it
                prev = dec
                f = ops.value(pt, mu)
                continue
        prev = dec
        if dec < _FULL_STEP:
            t = 1.0
            new = ops.point(pt.x + step)
            while new is None and t > 1e-12:
                t *= 0.5
                new = ops.point(pt.x + t * step)
            if new is None:
                return pt, False, it
            pt = new
            f = ops.value(pt, mu)
        else:
            # Backtracking (Armijo, slope −δ²) that keeps P positive definite.
            t = 1.0
            while True:
                new = ops.point(pt.x + t * step)
                if new is not None:
                    f_new = ops.value(new, mu)
                    if f_new <= f - 0.25 * t * dec * dec:
                        break
                t *= 0.5
                if t < 1e-12:
                    return pt, False, it
            pt, f = new, f_new
    return pt, False, max_newton


@dataclass(frozen=True)
class ChordalNewtonState(PCGNewtonState):
    """A :class:`.newton_pcg.PCGNewtonState` (every exact solver warm-starts from it) that also keeps the embedding.

    ``embedding`` is the :class:`Embedding` of the block's pattern, reused by the
    next round while its pattern stays inside; ``entries`` is ``(rows, cols, x)``,
    the precision on the pattern (local indices, normalised units), read
    without going through the dense ``precision`` (None when another solver
    made the state: ``solver="auto"`` keeps its choice's inputs in one);
    ``n_iter`` the Newton iterations of the solve that made it. A Hessian
    factor inherited from :mod:`.newton_pcg` is passed on, for when that
    solver takes the block back.
    """

    embedding: Embedding | None = None
    entries: tuple | None = None
    n_iter: int = 0


def _warm_start(p: Problem, pat: _Pattern, init, mu: float):
    """``(x0, exact_start, embedding)``: the start on the pattern (None without a warm start), whether it is an
    exact limit, and the embedding of the earlier block when one covered this one."""
    if not init:
        return None, False, None
    if len(init) == 1 and covers_all(np.asarray(init[0][0]), p.d):
        state = init[0][1]
        entries = getattr(state, "entries", None)
        if isinstance(state, PCGNewtonState) and entries is not None:
            rows, cols, x = entries
            d = p.d
            keys = pat.r * d + pat.c  # increasing: the pattern is listed row-major
            old = rows * d + cols
            at = np.minimum(np.searchsorted(keys, old), keys.size - 1)
            if np.array_equal(keys[at], old):
                x0 = np.zeros(keys.size)
                x0[at] = x * (p.scale / state.scale)
                return x0, state.mu == 0.0, state.embedding
    P0, exact_start = _assemble_warm_start(p, init, mu)
    if P0 is None:
        return None, False, None
    emb = None
    if len(init) == 1 and covers_all(np.asarray(init[0][0]), p.d):
        emb = getattr(init[0][1], "embedding", None)
    return pat.entries(P0), exact_start, emb


def _solve(p: Problem, init, *, mu0, mu_min, mu_factor, tol, max_newton, exact_limit):
    """The stages: ``(ops, point, mu, n_iter, direction)``."""
    mus = mu_schedule(mu0, mu_min, mu_factor)
    pat = _Pattern(p)
    x0, exact_start, emb = _warm_start(p, pat, init, mus[-1])
    pos = None if emb is None or emb.d != p.d else emb.locate(pat.r, pat.c)
    if pos is None:  # no earlier embedding, or the new entry lies outside it
        emb = embedding_of(p)
        pos = emb.locate(pat.r, pat.c)
    ops = _Kernels(emb, pat, pos)
    direction = _Direction(ops, init)
    n_iter = 0
    best = None
    skip = exact_limit and exact_start
    if x0 is not None:
        # newton_pcg's warm start: the new entry and its neighbourhood at their optimum (dense, O(d²): the kept W
        # updated in low rank), of which the chordal path keeps P.
        P, _, _ = _warm_refine(pat, pat.matrix(x0), 0.0 if skip else mus[-1], init=init, scale=p.scale)
        start = ops.point(pat.entries(P))
        if start is None:  # the refined entries left the cone: the plain start
            start = ops.point(x0)
        if start is not None and skip:
            # The earlier answer is an exact μ = 0 limit, usually close to the new one: the limit directly.
            pt, ok, k = _stage(ops, direction, start, 0.0, tol=tol, max_newton=min(max_newton, _WARM_ITER),
                               exact_stage=True, damped=_WARM_DAMPED, kkt_stop=_KKT_STOP)
            n_iter += k
            if ok:
                return ops, pt, 0.0, n_iter, direction
        if start is not None:
            pt, ok, k = _stage(ops, direction, start, mus[-1], tol=tol, max_newton=min(max_newton, _WARM_ITER))
            n_iter += k
            if ok:
                best = (pt, mus[-1])
    warm = best is not None
    diag = np.flatnonzero(pat.r == pat.c)
    for backoff in _BACKOFF:
        if best is not None:
            break
        lead = mu_schedule(mu0 * backoff, mu0, mu_factor)[:-1] if backoff > 1 else []
        schedule = [m for m in lead if m > mu0 * (1 + 1e-12)] + mus
        x = np.zeros(pat.r.size)
        x[diag] = 1.0 / diagonal_barrier_solution(p, schedule[0])[pat.r[diag]]
        pt = ops.point(x)
        if pt is None:
            continue
        for mu in schedule:
            pt_new, ok, k = _stage(ops, direction, pt, mu, tol=tol, max_newton=max_newton)
            n_iter += k
            if not ok:
                break  # divergence guard: keep the previous stage's answer
            pt = pt_new
            if mu <= mu0:
                best = (pt, mu)
    if best is None:
        raise RuntimeError(
            f"Newton failed at the first barrier stage (mu={mu0:g}, also when starting the path "
            f"at {mu0 * _BACKOFF[-1]:g}); the block's measurements are not finite or not on a usable scale"
        )
    pt, mu = best
    if exact_limit:
        pt0, ok, k = _stage(ops, direction, pt, 0.0, tol=tol, max_newton=max_newton, exact_stage=True,
                            kkt_stop=_KKT_STOP if warm else None, bound=True)
        n_iter += k
        if ok:
            pt, mu = pt0, 0.0
    return ops, pt, mu, n_iter, direction


@counted_solve
def solve_newton_chordal(
    p: Problem,
    *,
    init=None,
    mu0: float = DEFAULTS["mu0"],
    mu_min: float = DEFAULTS["mu_min"],
    mu_factor: float = DEFAULTS["mu_factor"],
    tol: float = DEFAULTS["tol"],
    max_newton: int = DEFAULTS["max_newton"],
    exact_limit: bool = DEFAULTS["exact_limit"],
) -> BlockSolution:
    """Solve one block like :func:`paceggm.reconstruction.newton.solve_newton`, on a chordal embedding of its pattern.

    Parameters are those of :func:`~paceggm.reconstruction.newton.solve_newton`.

    Returns
    -------
    BlockSolution
        ``W = P⁻¹`` (dense: the caller's selection reads all of it) and a
        :class:`ChordalNewtonState`.

    Examples
    --------
    >>> import numpy as np
    >>> from paceggm.reconstruction.problem import make_problem
    >>> y = np.array([[1.0, 0.5, 0.0], [0.5, 1.0, 0.5], [0.0, 0.5, 1.0]])
    >>> sol = solve_newton_chordal(make_problem(y, np.where(y != 0, 1.0, 0.0), scale=1.0, lam_unit=1.0))
    >>> round(float(sol.W[2, 0]), 6), sol.mu
    (0.25, 0.0)
    """
    ops, pt, mu, n_iter, direction = _solve(p, init, mu0=mu0, mu_min=mu_min, mu_factor=mu_factor, tol=tol,
                                            max_newton=max_newton, exact_limit=exact_limit)
    pat = ops.pat
    W = ops.dense_inverse(pt)
    hessian, use = direction.state_hessian()
    state = ChordalNewtonState(pat.matrix(pt.x), p.scale, mu, hessian=hessian, factor_use=use, covariance=W,
                               logdet=pt.logdet, embedding=ops.emb, entries=(pat.r, pat.c, pt.x), n_iter=n_iter)
    return BlockSolution(W=W, state=state, mu=mu, n_iter=n_iter, converged=mu <= mu_min)

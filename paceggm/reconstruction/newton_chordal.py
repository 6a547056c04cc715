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

The stages are :mod:`.newton`'s (:func:`.newton._solve`, on these kernels:
:class:`_Kernels` stands in for its dense ones) and the Newton directions
:mod:`.newton_pcg`'s (:class:`.newton_pcg._PCGDirection`: its CG loop, its
preconditioner and its kept Hessian factors, on the embedding's products), with
:mod:`.newton_pcg`'s choices: warm starts try the μ = 0 limit first, then the
μ_min stage, a stalled μ_min stage is re-centred warm from the centred points
the block kept (:func:`.newton._recentre`), and the cold continuation from the
diagonal comes last. The answers are those of :mod:`.newton` to the exact
solvers' tolerance. A kept Hessian factor is refactored at the current iterate
(from the one dense ``W`` such a refactorisation needs) when it has gone stale
or CG misses its tolerance. A block that has no factor yet (a cold solve)
preconditions instead with the ``S × S`` block of the inverse ``E``-Hessian,
``(K_E⁻¹)_SS``: the inverse of the Schur complement of the fill entries, below
the Hessian (the preconditioned spectrum is ``≥ 1``) and exact where ``S`` is
chordal, for no ``|S|³`` factorisation. Measured on ``hard_cols``, that one
alone leaves CG short of its tolerance on most Newton systems of late rounds
(the fill couples the entries), so it is not kept once a factor exists.

The symbolic analysis (ordering, clique tree, where each entry lives in the
factor's storage) is kept in the solver's state and redone only when the
pattern gains an entry outside ``E`` (counted as ``"symbolic analyses"``).
Dense ``d × d`` work is left only where something needs all of ``W``: the
answer, once per solve (a dense factorisation and inverse, about three
Choleskys), because the caller needs it (PACE-GGM's selection scores every
unmeasured entry from the covariance), a refactorisation of the
preconditioner, and a warm start's local refinement and re-centring start
(:mod:`.newton_pcg`'s, ``O(d²)`` and a factorisation respectively).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from paceggm.reconstruction.counters import counted, counted_solve
from paceggm.reconstruction.newton import DEFAULTS, _factor_at, _inverse, _Pattern, _solve, covers_all
from paceggm.reconstruction.newton_pcg import (
    _KKT_STOP,
    PCGNewtonState,
    _PCGDirection,
    _recentring,
    _warm_refine,
)
from paceggm.reconstruction.problem import Problem
from paceggm.reconstruction.result import BlockSolution


def _chompack():
    """CHOMPACK and CVXOPT, imported when a chordal solve first needs them (a clear error when missing)."""
    try:
        import chompack
        from cvxopt import amd, spmatrix
    except ImportError as exc:  # pragma: no cover - both are dependencies of the package
        raise ImportError("solver 'newton_chordal' needs chompack and cvxopt (pip install chompack cvxopt)") from exc
    return chompack, amd, spmatrix


# A round's entry outside the embedding is analysed in the kept fill-reducing ordering while the
# embedding holds at most this factor times the factor entries per pattern entry of the last
# embedding made from a fresh ordering; past it, the pattern is ordered afresh. Measured at d = 1,000
# (hard_cols-like patterns, 2.46 entries a row): an ordering is 1.5 % of an analysis (0.5 of 32 ms),
# the rest is CHOMPACK's symbolic factorisation, which a kept ordering does not spare; and a stale
# ordering's fill costs every Newton system (at 1.1: 4.6 % more entries after 100 rounds, Hessian
# products 20-22 % slower). So the ordering is kept only while its fill stays within 2 %.
_REORDER_FILL = 1.02


def _lower(d: int, rows: np.ndarray, cols: np.ndarray):
    """The pattern's lower triangle as a CVXOPT sparse matrix (what CHOMPACK analyses)."""
    spmatrix = _chompack()[2]
    return spmatrix(1.0, [int(i) for i in np.maximum(rows, cols)], [int(j) for j in np.minimum(rows, cols)], (d, d))


@counted("fill-reducing orderings")
def _ordering(pattern):
    """A minimum-degree ordering of the pattern (CVXOPT's AMD)."""
    return _chompack()[1].order(pattern)


class Embedding:
    """A chordal embedding ``E`` of a pattern in a fill-reducing order, and where each entry lives in its storage.

    ``symb`` is CHOMPACK's symbolic factorisation of the pattern in the
    ``order`` given (a permutation); ``keys`` (sorted) and ``positions`` list the
    lower entries of ``E`` in the permuted order as ``row * d + col`` and their
    offsets in a :class:`chompack.cspmatrix`'s values. ``fill`` is ``E``'s lower
    entries per pattern entry; ``fresh_fill`` that of the last embedding whose
    order was made for its own pattern (:func:`embedding_of`).
    """

    @counted("symbolic analyses")
    def __init__(self, d: int, pattern, order, fresh_fill: float | None = None) -> None:
        chompack = _chompack()[0]
        self.d, self.order = d, order
        self.symb = chompack.symbolic(pattern, p=order)
        s = self.symb
        self.ip = np.asarray(s.ip, dtype=np.int64).ravel()
        snptr, sncolptr = np.asarray(s.snptr, dtype=np.int64).ravel(), np.asarray(s.sncolptr, dtype=np.int64).ravel()
        snrowidx, blkptr = np.asarray(s.snrowidx, dtype=np.int64).ravel(), np.asarray(s.blkptr, dtype=np.int64).ravel()
        # After CHOMPACK's post-ordering supernode k holds the columns snptr[k], …, snptr[k + 1] − 1, stored
        # column-major in an nj × nn block (nj = sncolptr[k + 1] − sncolptr[k]) at blkptr[k] whose rows are
        # snrowidx[sncolptr[k]:sncolptr[k + 1]]; the lower part of its column i starts at row i. Every offset of
        # the storage at once: its supernode, column i and row t, the lower ones (t ≥ i) kept.
        self.size = int(blkptr[-1])
        at = np.arange(self.size)
        k = np.searchsorted(blkptr, at, side="right") - 1
        nj = sncolptr[k + 1] - sncolptr[k]
        i, t = np.divmod(at - blkptr[k], nj)
        lower = t >= i
        keys = snrowidx[sncolptr[k] + t][lower] * d + (snptr[k] + i)[lower]
        order_ = np.argsort(keys)
        self.keys, self.positions = keys[order_], at[lower][order_]
        self.fill = self.keys.size / len(pattern)
        self.fresh_fill = self.fill if fresh_fill is None else fresh_fill

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


def embedding_of(p: Problem, kept: Embedding | None = None) -> Embedding:
    """A chordal embedding of ``p``'s measured pattern (what ``auto``'s cost model measures).

    ``kept``, an embedding of an earlier pattern of the block, is returned while
    it covers this one. Otherwise the pattern is analysed in ``kept``'s order
    (no new ordering) while ``kept``'s fill is at most ``_REORDER_FILL`` times
    that of the last embedding made from a fresh ordering; past that, and
    without ``kept``, the pattern is ordered afresh. The rule reads ``kept``
    only, so a round makes one analysis at most.
    """
    if kept is not None and kept.d == p.d:
        if kept.locate(p.rows, p.cols) is not None:
            return kept
        if kept.fill <= _REORDER_FILL * kept.fresh_fill:
            return Embedding(p.d, _lower(p.d, p.rows, p.cols), kept.order, kept.fresh_fill)
    pattern = _lower(p.d, p.rows, p.cols)
    return Embedding(p.d, pattern, _ordering(pattern))


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

    # The kernels the stages of newton._solve run on (newton._DenseKernels'): a factor ("L") is a _Point, which is
    # also the "W" the directions read (W on the embedding, computed when first read).
    def pattern(self, p: Problem) -> _Pattern:
        return self.pat

    def factor(self, pat: _Pattern, x: np.ndarray) -> _Point | None:
        return self.point(x)

    def start(self, pat: _Pattern, P0: np.ndarray) -> _Point | None:
        return self.point(pat.entries(P0))

    @staticmethod
    def inverse(pt: _Point) -> _Point:
        return pt

    def value(self, pat: _Pattern, x: np.ndarray, pt: _Point | None, mu: float, logdet: float | None = None) -> float:
        """``F_μ`` at ``x``, from its point or, when that is None, from its known ``logdet``."""
        logdet = pt.logdet if pt is not None else logdet
        return -logdet + float(np.dot(pat.m * pat.y, x)) + 0.5 * mu * float(np.dot(pat.q * x, x))

    @staticmethod
    def on_pattern(pat: _Pattern, pt: _Point) -> np.ndarray:
        return pt.w

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



class _ChordalDirection(_PCGDirection):
    """:mod:`.newton_pcg`'s Newton directions (its CG loop, preconditioner and kept factors) on the embedding.

    Only the kernels differ: the iterate is a :class:`_Point`, the gradient and
    Hessian's diagonal come from ``W`` on the embedding, Hessian products are
    the embedding's, and a Hessian factorisation assembles from the one dense
    ``W`` it needs (:meth:`_Kernels.dense_inverse`). A block without any factor
    (a cold solve) preconditions with the embedding's inverse Hessian
    (:meth:`_Kernels.precondition`) instead of the diagonal: exact where the
    pattern is chordal, and no ``|S|³`` factorisation.
    """

    def __init__(self, ops: _Kernels, init) -> None:
        self.ops = ops
        super().__init__(ops.pat, init)

    def _prepare_products(self) -> None:
        pass  # the products are the embedding's

    def _gradient(self, pat: _Pattern, x: np.ndarray, pt: _Point, mu: float) -> np.ndarray:
        return pat.m * (pat.y - pt.w) + mu * pat.q * x

    def _diagonal(self, pat: _Pattern, pt: _Point, mu: float) -> np.ndarray:
        """The Hessian's diagonal (:func:`.newton_pcg._hessian_diagonal`), from ``W`` on the embedding."""
        wd = pt.w_diag
        return 0.5 * pat.m * pat.m * (wd[pat.r] * wd[pat.c] + pt.w**2) + mu * pat.q

    def _ready(self) -> bool:
        return True

    def _dense(self, pat: _Pattern, x: np.ndarray, pt: _Point) -> np.ndarray:
        return self.ops.dense_inverse(pt)

    def _products(self, pt: _Point, mu: float, single: bool = False):
        return lambda v: self.ops.hessian_times(pt, v, mu)

    def _precondition(self, pt: _Point, r: np.ndarray, diag: np.ndarray) -> np.ndarray:
        return self.pre.solve(r, diag) if self.pre.pieces else self.ops.precondition(pt, r)


@dataclass(frozen=True)
class ChordalNewtonState(PCGNewtonState):
    """A :class:`.newton_pcg.PCGNewtonState` (every exact solver warm-starts from it) that also keeps the embedding.

    ``embedding`` is the :class:`Embedding` of the block's pattern, reused by the
    next round while its pattern stays inside (or extended in its ordering:
    :func:`embedding_of`); ``entries`` is ``(rows, cols, x)``, the precision on
    the pattern (local indices, normalised units; None when another solver made
    the state: ``solver="auto"`` keeps its choice's inputs in one, and reads
    from it whether the chordal path solved the block last); ``n_iter`` the
    Newton iterations of the solve that made it. A Hessian factor inherited
    from :mod:`.newton_pcg` is passed on, for when that solver takes the block
    back, and so are the centred points ``path`` for re-centring.
    """

    embedding: Embedding | None = None
    entries: tuple | None = None
    n_iter: int = 0


def _kept_embedding(init, d: int) -> Embedding | None:
    """The embedding of the one earlier block a warm start covers, if that block kept one."""
    if init and len(init) == 1 and covers_all(np.asarray(init[0][0]), d):
        emb = getattr(init[0][1], "embedding", None)
        if emb is not None and emb.d == d:
            return emb
    return None


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
    pat = _Pattern(p)
    emb = embedding_of(p, _kept_embedding(init, p.d))
    ops = _Kernels(emb, pat, emb.locate(pat.r, pat.c))
    direction = _ChordalDirection(ops, init)
    recentre_at, keep, kept = _recentring(p, init, mu0, mu_min, mu_factor)

    def refine(pat, P0, mu):
        # newton_pcg's warm start: the new entry and its neighbourhood at their optimum (dense, O(d²): the kept W
        # updated in low rank), of which the chordal path keeps P, factored on the embedding.
        P, _, _ = _warm_refine(pat, P0, mu, init=init, scale=p.scale)
        pt = ops.point(pat.entries(P))
        if pt is None:  # the refined entries left the cone: the plain start
            P, pt = P0, ops.point(pat.entries(P0))
        return (P, pt, pt.logdet) if pt is not None else (P0, None, None)

    pat, x, _, pt, mu, n_iter = _solve(p, init, mu0=mu0, mu_min=mu_min, mu_factor=mu_factor, tol=tol,
                                       max_newton=max_newton, exact_limit=exact_limit, warm_direction=direction,
                                       cold_direction=direction, decrement_bound=direction.decrement_bound,
                                       refine_start=refine, skip_to_limit=True, kkt_stop=_KKT_STOP,
                                       recentre_at=recentre_at, on_centred=keep, kernels=ops)
    W = ops.dense_inverse(pt)
    hessian, use = direction.state_hessian()
    state = ChordalNewtonState(pat.matrix(x), p.scale, mu, hessian=hessian, factor_use=use, covariance=W,
                               logdet=pt.logdet, path=kept(), embedding=ops.emb, entries=(pat.r, pat.c, x),
                               n_iter=n_iter)
    return BlockSolution(W=W, state=state, mu=mu, n_iter=n_iter, converged=mu <= mu_min)

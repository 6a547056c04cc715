"""Newton with preconditioned conjugate gradients: the same answers, fewer Hessian factorisations.

The Newton solver of :mod:`.newton` factors the ``|S| × |S|`` Hessian at every
iteration; once one component of the pattern holds most variables that is
``|S|³/3`` flops per iteration, far more than anything else in a round. But a
PACE-GGM round changes one entry: the Hessian at the new answer is close to the
Hessian at the old one. This solver therefore keeps the Cholesky factor (in single precision) of
a Hessian from an earlier iteration (or round) and solves each Newton system by
conjugate gradients preconditioned with it:

* a Hessian–vector product needs no Hessian: with ``ΔP`` the sparse symmetric
  matrix of ``v`` on the pattern, ``∇²F v = m ⊙ (W ΔP W)_S + μ q ⊙ v``, which
  costs ``O(d |S|)``, and is computed in single precision in the exact stage's
  systems that do not decide the answer (``_SINGLE_RTOL``);
* a preconditioner solve costs two triangular solves, ``O(|S|²)``;
* when CG has not reached its tolerance within a budget of steps worth about
  one factorisation, the Hessian at the current iterate is factored and that
  factor is the preconditioner from then on: towards the exact limit (μ = 0)
  assembled and factored in single precision, the direction then found by CG
  with it in a few steps (:func:`_hessian_factor_single`); at μ > 0 in double
  precision, the direction then exactly the one :mod:`.newton` computes;
* a warm start inherits the factors of the blocks it starts from (variables new
  to the block get the Hessian's diagonal), and how much CG they have cost: a
  factor goes stale as the rounds move ``W``, so when the last solve's CG steps
  exceed the factor's average cost per solve so far (its factorisation
  included) the first Newton system of the next solve factors instead.

The Newton systems are solved inexactly far from the answer and to a relative
residual of ``1e-12`` (in the preconditioner's norm) near it — the forcing term
is the square of the last Newton decrement — so Newton keeps its quadratic
convergence and the stages, stopping rules and answers are those of
:func:`.newton.solve_newton` to the solver's tolerance (tested against it) —
except that an exact stage after a warm start ends on the full step from a
decrement below ``1e-4`` when that step's KKT residual is within ``1e-9``
(relative), instead of solving one more Newton system. The cold continuation of
a new block factors the Hessian at every step as :mod:`.newton` does.

Where the measurements are not completable, the answer at μ_min grows like
``1/μ`` in the directions that witness it, and a round whose new entry changes
those directions stalls in its warm μ_min stage (the decrement stays near 1.7).
On a large block such a stage ends after four steps without progress
(``newton._STALL_STEPS``) and the solve is re-centred warm
(:func:`.newton._recentre`): the block keeps the last centred points its solves
found at ``μ_min·10`` and ``μ_min·100`` (``PCGNewtonState.path``), the stage is
solved at ``μ_min·10`` from the point kept there (the entries measured since
set to their own optima), at ``μ_min·100`` if that fails, and the schedule
then goes back down to μ_min with the warm directions. The cold continuation
from the diagonal is the last resort, counted as ``cold restarts``
(:mod:`.counters`).

A warm round needs no factorisation of ``P`` to start: each block keeps its
answer's ``W = P⁻¹``, the start's inverse is assembled from those, and the
entry the round adds is set by a rank-two Sherman–Morrison–Woodbury update of
it (:func:`_rank_two_start`). On large blocks the start goes further, at μ_min
as towards the exact limit: the new entry and every entry sharing a variable
with it are set to their joint optimum for the stage's μ, a problem on the few
variables involved, and ``W`` follows by a low-rank update (:func:`_local_start`). A round's move is largest there, and
the full Newton iterations it saves are the ones that factor and invert ``P``.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import numpy as np
from scipy.linalg import cho_solve
from scipy.linalg.blas import dtrsv, strsv
from scipy.linalg.lapack import dpotrf, spotrf
from scipy.sparse import csr_matrix

from paceggm.reconstruction.counters import counted, counted_solve, note_decrement
from paceggm.reconstruction.newton import (
    DEFAULTS,
    NewtonState,
    _assemble_warm_start,
    _decrement,
    _factor,
    _gradient,
    _hessian_products,
    _logdet,
    _newton_direction,
    _Pattern,
    _solve,
    covers_all,
    symmetric_matrix,
)
from paceggm.reconstruction.problem import Problem, mu_schedule
from paceggm.reconstruction.result import BlockSolution

# The tuning constants below were each measured on whole fits; the measurements are in
# docs/scale.md, *newton_pcg's constants*.

# Relative residual of the Newton systems (preconditioned norm): the square of the previous
# decrement within these bounds, so inexact Newton keeps its quadratic convergence.
_CG_RTOL_MAX, _CG_RTOL_MIN = 1e-1, 1e-12
# Measured entries (diagonal included) from which CG directions cost less than a Hessian factorisation.
_CG_MIN_ENTRIES = 500
# A warm start gains from refining at most this many new entries (a round adds one).
_MAX_REFINED = 4
# The local start (_local_start): damped Newton steps on the new entry's neighbourhood at this
# graph distance, until this local decrement, with full steps from this one.
_LOCAL_STEPS = 8
_LOCAL_HOPS = 1
_LOCAL_TOL = 1e-8
_FULL_STEP_LOCAL = 0.25
# KKT residual (relative) at which a warm exact stage may end on the step from a decrement
# below 1e-4 instead of one more Newton system: a tenth of the 1e-8 the answers must match.
_KKT_STOP = 1e-9
# Systems asked for at least this relative residual use single-precision Hessian products, in
# exact (μ = 0) stages only: their error stays below what Newton's own convergence leaves there.
_SINGLE_RTOL = 1e-9
# A Hessian factorisation (assembly included) is counted as |S| / this many CG steps when
# deciding whether a kept factor has gone stale.
_FACTOR_IN_STEPS = 96
# CG steps allowed before the Hessian is factored instead: a step costs about
# 2|S|² + 4d|S| flops against about |S|³/3 for assembling and factoring.
_CG_MIN_STEPS = 10
# Centred points a large block keeps for re-centring (newton._recentre): at μ_min·10ᵏ,
# k = 1 … this many (measured on indian_pines_cols: a stalled round re-centres from the
# first in 27–32 Newton systems, from the second in 34–44, against 100–117 cold).
_KEPT_LEVELS = 2


@dataclass(frozen=True)
class CentredPoint:
    """A centred point a block keeps for re-centring: ``P`` on the pattern it was found on.

    ``P`` is zero off its pattern, so the point is kept as its entries (local
    indices ``rows``, ``cols``, values ``x``; O(|S|) memory, where a dense ``P``
    of a block of 10,000 variables takes 800 MB a level) and made dense only
    when a stalled round starts from it.
    """

    d: int
    rows: np.ndarray
    cols: np.ndarray
    x: np.ndarray

    def matrix(self) -> np.ndarray:
        return symmetric_matrix(self.d, self.rows, self.cols, self.x)


@dataclass(frozen=True)
class PCGNewtonState(NewtonState):
    """A :class:`NewtonState` that also keeps the last Hessian factorisation.

    ``hessian`` is ``(cf, h, rows, cols)``: the Cholesky factor of the
    Jacobi-scaled Hessian (in single precision: it only preconditions), its scaling and the pattern entries (local indices)
    in the factor's order. ``factor_use`` is ``(solves, steps, last)``: the
    solves that have preconditioned with that factor, their CG steps in all, and
    the last one's. ``covariance`` is ``precision⁻¹`` (normalised units), the
    answer's ``W``, and ``logdet`` is ``log det precision``: the next round
    updates both in low rank instead of factoring and inverting. ``path`` holds
    ``(μ, CentredPoint, scale)``: the last centred points the block's solves found
    above μ_min (at most ``_KEPT_LEVELS``, each in its own solve's units), from
    which a round whose μ_min stage stalls re-centres (:func:`.newton._recentre`).
    """

    hessian: tuple | None = None
    factor_use: tuple[int, int, int] = (0, 0, 0)
    covariance: np.ndarray | None = None
    logdet: float | None = None
    path: tuple = ()


def _hessian_diagonal(pat: _Pattern, W: np.ndarray, mu: float) -> np.ndarray:
    return 0.5 * pat.m * pat.m * (W[pat.r, pat.r] * W[pat.c, pat.c] + W[pat.r, pat.c] ** 2) + mu * pat.q


@counted("Hessian factorisations")
def _hessian_factor(pat: _Pattern, W: np.ndarray, mu: float):
    """:func:`.newton._hessian_factor` with fewer passes (the same ``(cf, h)`` to rounding).

    The ``m mᵀ / 2`` weights and the Jacobi scaling are applied together as one
    rank-one scaling, in place, and the diagonal comes from ``O(|S|)`` entries
    before anything ``|S| × |S|`` is built. The reference keeps its textbook
    arithmetic instead, so that its answers stay bit for bit the committed ones.
    """
    r, c = pat.r, pat.c
    Wr, Wc = W[r], W[c]
    i = np.arange(r.size)
    h2 = 0.5 * pat.m * pat.m * (Wr[i, r] * Wc[i, c] + Wr[i, c] ** 2) + mu * pat.q
    if not (np.all(np.isfinite(h2)) and np.all(h2 > 0)):
        return None
    h = np.sqrt(h2)
    H = _hessian_products(pat, Wr, Wc)
    u = np.sqrt(0.5) * pat.m / h
    H *= u[:, None]
    H *= u[None, :]
    H[i, i] += mu * pat.q / h2
    if not np.all(np.isfinite(H)):
        return None
    cf, info = dpotrf(H, lower=1, overwrite_a=1, clean=0)
    if info != 0:
        return None
    return (cf, True), h


@counted("Hessian factorisations, single")
def _hessian_factor_single(pat: _Pattern, W: np.ndarray, diag: np.ndarray):
    """:func:`_hessian_factor` at μ = 0 assembled and factored in single precision, to precondition only.

    The preconditioner is kept in single precision anyway (:func:`_single`);
    making it so from the start halves the ``|S|³/3`` flops of the factorisation
    and the memory its assembly gathers. Its direction then comes from CG
    preconditioned with it (a few steps to the system's tolerance, the residuals
    in double precision) instead of from two triangular solves. The Jacobi
    scaling is the square root of ``diag``, the Hessian's diagonal
    (:func:`_hessian_diagonal` at μ = 0, finite and positive), in double
    precision. None when the factor is not usable (non-finite, or not positive
    definite in single precision): the caller factors in double precision instead.
    """
    r, c = pat.r, pat.c
    h = np.sqrt(diag)
    W32 = W.astype(np.float32)
    H = _hessian_products(pat, W32[r], W32[c])
    u = (np.sqrt(0.5) * pat.m / h).astype(np.float32)
    H *= u[:, None]
    H *= u[None, :]
    if not np.all(np.isfinite(H)):
        return None
    # H is symmetric up to the rounding of its scaling: its C-ordered array read in
    # Fortran order (the same matrix to that rounding) is factored in place.
    cf, info = spotrf(H.T, lower=1, overwrite_a=1, clean=0)
    if info != 0:
        return None
    return (cf, True), h


# Newton steps of the small blocks' warm stages. The cold continuation keeps the
# reference's assembly: where the measurements are not completable the answer at
# μ_min is only defined to about 1e-8 in floating point (``P`` of the order of
# ``1/μ``), and Hessians assembled with other roundings move it by that much
# (measured: 0.9–2e-8 relative on 8 × 8 blocks), while the reference's path
# reproduces it bit for bit.
_factored_direction = partial(_newton_direction, hessian_factor=_hessian_factor)


def _factor_solve(cf, b: np.ndarray) -> np.ndarray:
    """``(L Lᵀ)⁻¹ b`` for a lower Cholesky factor ``cf = (L, True)``, by two triangular solves.

    CG solves one right-hand side at a time, and for one right-hand side two BLAS
    ``trsv`` calls are about 3× faster than LAPACK's ``potrs`` (what
    :func:`scipy.linalg.cho_solve` calls) with the OpenBLAS NumPy ships
    (measured at |S| = 1,400, one thread: 0.21 against 0.59 ms); the
    preconditioner solves were a third of a low-rank fit's time.
    """
    L, lower = cf
    if not lower:
        raise ValueError("expected a lower Cholesky factor")
    if L.dtype == np.float32:
        return strsv(L, strsv(L, b.astype(np.float32), lower=1), lower=1, trans=1).astype(np.float64)
    return dtrsv(L, dtrsv(L, b, lower=1), lower=1, trans=1)


def _single(cf):
    """A factor in single precision, for preconditioning only.

    The solves read the whole triangle for a few flops per entry, so they go at
    the speed of memory: half the bytes, half the time (measured at |S| =
    1,900: 0.21 against 0.44 ms; on late blocks of a low-rank d = 400 fit,
    1.27x faster solves with the same Newton iterations and answers). Rounding
    at 1e-7 of a factor only moves the preconditioner, not the system CG
    solves: its residuals are computed in double precision. Directions taken
    straight from a fresh factorisation use the double-precision factor.
    """
    L, lower = cf
    return np.asfortranarray(L, dtype=np.float32), lower


class _Preconditioner:
    """Block-diagonal: earlier Hessian factors on their variables, a diagonal elsewhere."""

    def __init__(self, n: int) -> None:
        self.pieces: list[tuple[np.ndarray, tuple, np.ndarray]] = []
        self.covered = np.zeros(n, dtype=bool)

    def add(self, positions: np.ndarray, cf, h: np.ndarray) -> None:
        self.pieces.append((positions, cf, h))
        self.covered[positions] = True

    @counted("preconditioner solves")
    def solve(self, v: np.ndarray, diag: np.ndarray) -> np.ndarray:
        out = v / diag
        for pos, cf, h in self.pieces:
            out[pos] = _factor_solve(cf, v[pos] / h) / h
        return out


class _PCGDirection:
    """Newton directions by preconditioned CG, for the stages of one block solve."""

    def __init__(self, pat: _Pattern, init) -> None:
        self.pat = pat
        self.S = pat.r.size
        self.pre = _Preconditioner(self.S)
        self.factor = None  # (cf, h) of the whole block, once factored here
        self.n_factor = self.n_cg = 0
        self.rtol = _CG_RTOL_MAX
        self.use = (0, 0, 0)  # factor_use of the largest inherited factor
        self._inherit(init)
        # A factor goes stale as rounds move W away from where it was made, and CG
        # then needs more steps. Refactoring at once when the last solve's steps
        # exceed the average cost per solve of the factor so far (its
        # factorisation included) keeps that average near its minimum, the
        # replacement rule for a cost that grows with age.
        solves, steps, last = self.use
        self._refactor = solves > 0 and last * solves > self.S / _FACTOR_IN_STEPS + steps
        self._steps_before = 0  # CG steps of this solve before its own factorisation
        self._max_steps = max(_CG_MIN_STEPS, self.S // 12)
        self._prepare_products()

    def _prepare_products(self) -> None:
        """ΔP as CSR with a fixed structure: the lower entries and their mirrors."""
        pat = self.pat
        off = pat.r != pat.c
        rows = np.concatenate([pat.r, pat.c[off]])
        cols = np.concatenate([pat.c, pat.r[off]])
        src = np.concatenate([np.arange(self.S), np.flatnonzero(off)])
        order = np.lexsort((cols, rows))
        self._src = src[order]
        self._dP = csr_matrix((np.ones(order.size), (rows[order], cols[order])), shape=(pat.d, pat.d))
        self._dP.sort_indices()
        self._dP_single = self._dP.astype(np.float32)
        # Building from COO sorts by (row, col) too, so data aligns with _src.

    def _inherit(self, init) -> None:
        d = self.pat.d
        keys = self.pat.r * d + self.pat.c  # increasing: the pattern is listed row-major
        for ix, state in init or []:
            hess = getattr(state, "hessian", None)
            if hess is None:
                continue
            cf, h, rows, cols = hess
            ix = np.asarray(ix)
            pos = np.searchsorted(keys, ix[rows] * d + ix[cols])
            if pos.size and np.array_equal(keys[np.minimum(pos, keys.size - 1)], ix[rows] * d + ix[cols]):
                if pos.size > max((piece[0].size for piece in self.pre.pieces), default=0):
                    self.use = state.factor_use
                self.pre.add(pos, cf, h)

    @counted("Hessian products")
    def _hessian_times(self, v: np.ndarray, W: np.ndarray, Wr: np.ndarray, mu: float) -> np.ndarray:
        """``∇²F v``; with ``W`` and ``Wr`` in single precision, the products are (the rest stays double).

        See ``_SINGLE_RTOL`` for where single precision is used.
        """
        pat = self.pat
        dP = self._dP if W.dtype == np.float64 else self._dP_single
        dP.data = v[self._src].astype(W.dtype, copy=False)
        # (W ΔP W)_rc = W[r] · (W ΔP)[c]; gathering rows of W ΔP = (ΔP W)ᵀ, made
        # contiguous, reads far less memory than gathering columns of ΔP W.
        WdP = np.ascontiguousarray((dP @ W).T)
        return pat.m * np.einsum("ij,ij->i", Wr, WdP[pat.c]) + mu * pat.q * v

    def __call__(self, pat: _Pattern, x: np.ndarray, W: np.ndarray, mu: float):
        step, dec = self._direction(pat, x, W, mu)
        note_decrement(dec)
        return step, dec

    # The kernels of the iterate, on the dense W; a direction on another kind of iterate
    # (:class:`.newton_chordal._ChordalDirection`) overrides these and keeps the rest.
    def _gradient(self, pat: _Pattern, x: np.ndarray, W, mu: float) -> np.ndarray:
        return _gradient(pat, x, W, mu)

    def _diagonal(self, pat: _Pattern, W, mu: float) -> np.ndarray:
        return _hessian_diagonal(pat, W, mu)

    def _ready(self) -> bool:
        """Whether CG has a preconditioner better than the diagonal, before any factorisation here."""
        return bool(self.pre.pieces)

    def _dense(self, pat: _Pattern, x: np.ndarray, W) -> np.ndarray:
        """The dense ``W`` a Hessian factorisation assembles from."""
        return W

    def _products(self, W, mu: float, single: bool = False):
        """``v ↦ ∇²F v`` at ``W``; with ``single``, the products in single precision."""
        if single:
            W = W.astype(np.float32)
        Wr = W[self.pat.r]
        return lambda v: self._hessian_times(v, W, Wr, mu)

    def _precondition(self, W, r: np.ndarray, diag: np.ndarray) -> np.ndarray:
        return self.pre.solve(r, diag)

    def _direction(self, pat: _Pattern, x: np.ndarray, W, mu: float):
        g = self._gradient(pat, x, W, mu)
        diag = self._diagonal(pat, W, mu)
        if not (np.all(np.isfinite(diag)) and np.all(diag > 0) and np.all(np.isfinite(g))):
            return None, np.nan
        if self._ready() and not self._refactor:
            step = self._cg(-g, W, mu, diag)
            if step is not None:
                return self._next_tolerance(*_decrement(g, step))
        self._refactor = False
        dense = self._dense(pat, x, W)
        if mu == 0.0:
            factor = _hessian_factor_single(pat, dense, diag)
            if factor is not None:
                self._use_factor(factor)
                step = self._cg(-g, W, mu, diag)
                if step is not None:
                    return self._next_tolerance(*_decrement(g, step))
        factor = _hessian_factor(pat, dense, mu)
        if factor is None:
            return None, np.nan
        cf, h = factor
        self._use_factor((_single(cf), h))
        return self._next_tolerance(*_decrement(g, -_factor_solve(cf, g / h) / h))

    def _use_factor(self, factor) -> None:
        """Precondition with ``factor``, the block's own, from now on."""
        self.n_factor += 1
        self._steps_before = self.n_cg
        self.factor = factor
        self.pre = _Preconditioner(self.S)
        self.pre.add(np.arange(self.S), *factor)

    def decrement_bound(self, pat: _Pattern, x: np.ndarray, W: np.ndarray, mu: float) -> float:
        """A lower bound on the Newton decrement at ``x``: one preconditioner solve and one Hessian product.

        ``δ² = gᵀ H⁻¹ g ≥ (gᵀv)² / vᵀHv`` for any ``v`` (Cauchy–Schwarz in the
        ``H`` norm); ``v = M⁻¹ g`` with the preconditioner ``M`` makes it tight
        when ``M`` is close to ``H``. Where the measurements are not completable,
        the exact stage after the μ_min stage starts far outside the quadratic
        region (measured: every one of 643 such attempts in a low-rank fit), and
        this replaces the Newton system, solved to ``1e-12``, that found it out.
        """
        g = self._gradient(pat, x, W, mu)
        diag = self._diagonal(pat, W, mu)
        if not (np.all(np.isfinite(diag)) and np.all(diag > 0) and np.all(np.isfinite(g))):
            return 0.0
        v = self._precondition(W, g, diag) if self._ready() else g / diag
        vHv = float(np.dot(v, self._products(W, mu)(v)))
        gv = float(np.dot(g, v))
        if not (vHv > 0 and np.isfinite(vHv) and np.isfinite(gv)):
            return 0.0
        return abs(gv) / np.sqrt(vHv)

    def _next_tolerance(self, step, dec):
        if step is not None:
            self.rtol = min(_CG_RTOL_MAX, max(_CG_RTOL_MIN, dec * dec))
        return step, dec

    def _cg(self, b: np.ndarray, W, mu: float, diag: np.ndarray) -> np.ndarray | None:
        times = self._products(W, mu, single=mu == 0.0 and self.rtol >= _SINGLE_RTOL)
        x = np.zeros_like(b)
        r = b.copy()
        z = self._precondition(W, r, diag)
        p = z.copy()
        rz = float(np.dot(r, z))
        target = self.rtol**2 * rz
        if rz <= 0 or not np.isfinite(rz):
            return None
        for _ in range(self._max_steps):
            self.n_cg += 1
            Ap = times(p)
            pAp = float(np.dot(p, Ap))
            if not (pAp > 0 and np.isfinite(pAp)):
                return None
            alpha = rz / pAp
            x += alpha * p
            r -= alpha * Ap
            z = self._precondition(W, r, diag)
            rz_new = float(np.dot(r, z))
            if rz_new <= target:
                return x
            p = z + (rz_new / rz) * p
            rz = rz_new
        return None

    def state_hessian(self):
        """What the next round preconditions with, and its use: the factor made here, else the largest inherited one."""
        if self.factor is not None:
            cf, h = self.factor
            steps = self.n_cg - self._steps_before
            return (cf, h, self.pat.r, self.pat.c), (1, steps, steps)
        if not self.pre.pieces:
            return None, (0, 0, 0)
        pos, cf, h = max(self.pre.pieces, key=lambda piece: piece[0].size)
        solves, steps, _ = self.use
        return (cf, h, self.pat.r[pos], self.pat.c[pos]), (solves + 1, steps + self.n_cg, self.n_cg)


def _recentring(p: Problem, init, mu0: float, mu_min: float, mu_factor: float):
    """``(recentre_at, on_centred, kept)``: a large block's re-centring, for :func:`.newton._solve`.

    ``recentre_at`` starts from the centred points the block kept
    (:func:`_kept_start`), ``on_centred`` keeps those this solve finds at
    ``μ_min·10ᵏ`` (k = 1 … ``_KEPT_LEVELS``), ``kept()`` is the state's ``path``.
    """
    levels = mu_schedule(mu0, mu_min, mu_factor)[-1 - _KEPT_LEVELS:-1]
    path = _inherited_path(init, levels)

    def keep(pat, mu, x):
        for level in levels:
            if abs(mu - level) <= 1e-12 * level:
                path[level] = (CentredPoint(p.d, pat.r, pat.c, x.copy()), p.scale)

    def kept():
        return tuple((level, *path[level]) for level in levels if level in path)

    return partial(_kept_start, p, init, path), keep, kept


def _inherited_path(init, levels) -> dict:
    """The centred points kept by the one earlier block a warm start covers, by level: ``{μ: (point, scale)}``.

    A start assembled from several blocks keeps none: their points, if any, lie
    at different rounds' measurements (the block-diagonal start they would make
    is far from centred where the blocks have just been joined).
    """
    if not init or len(init) != 1:
        return {}
    ix, state = init[0]
    path = getattr(state, "path", ())
    return {level: (point, scale) for mu, point, scale in path for level in levels
            if abs(mu - level) <= 1e-12 * level and point.d == len(ix)}


def _kept_start(p: Problem, init, path: dict, pat: _Pattern, mu: float):
    """A start at ``mu`` from the centred point the block kept there, for :func:`.newton._recentre`, or None.

    The kept ``P`` is converted to this block's units (``P`` scales as ``1/s``)
    and embedded as :func:`.newton._assemble_warm_start` embeds an answer;
    entries measured since are set to their own optima (:func:`_coordinate_start`).
    """
    level = next((level for level in path if abs(mu - level) <= 1e-12 * level), None)
    if level is None:
        return None
    point, scale = path[level]
    ix = np.asarray(init[0][0])
    P0, _ = _assemble_warm_start(p, [(ix, NewtonState(point.matrix(), scale, mu))], mu)
    if P0 is None:
        return None
    P0, _, _ = _coordinate_start(pat, P0, mu)
    return pat.entries(P0), None, None, None


def _new_entries(pat: _Pattern, P0: np.ndarray) -> np.ndarray:
    """Positions of the off-diagonal pattern entries a warm start leaves at 0: the ones a round added."""
    return np.flatnonzero((pat.r != pat.c) & (P0[pat.r, pat.c] == 0.0))


def _coordinate_start(pat: _Pattern, P0: np.ndarray, mu: float) -> tuple[np.ndarray, None, None]:
    """``P0`` with its new entries (on the pattern, still 0) each set to its own optimum.

    A warm start leaves the entry a round has just measured at ``P_jk = 0``;
    minimising ``F_μ`` over that entry alone, all others fixed, is one-dimensional
    (the update of a single precision entry, as in iterative proportional
    fitting): with ``a = W_jk``, ``b = W_jj W_kk`` and ``c = b − a²``,
    ``det(P + t(e_j e_kᵀ + e_k e_jᵀ)) = det P · D(t)``, ``D(t) = 1 + 2at − ct²``, and
    ``f(t) = −log D(t) + 2 y_jk t + (μ/2) q t²`` is convex on the interval where
    ``D > 0``. Only a few new entries (a round adds one) are refined, one after
    another.
    """
    new = _new_entries(pat, P0)
    if new.size == 0 or new.size > _MAX_REFINED:
        return P0, None, None
    P = P0.copy()
    for i in new:
        j, k = int(pat.r[i]), int(pat.c[i])
        L = _factor(P)
        if L is None:
            return P0, None, None
        E = np.zeros((P.shape[0], 2))
        E[j, 0] = E[k, 1] = 1.0
        cols = cho_solve((L, True), E, check_finite=False)  # W e_j, W e_k
        a, b = cols[k, 0], cols[j, 0] * cols[k, 1]
        t = _best_entry(a, b - a * a, pat.y[i], mu * pat.q[i])
        if t is not None:
            P[j, k] = P[k, j] = t
    return P, None, None


def _rank_two_start(pat: _Pattern, P0: np.ndarray, mu: float, W0: np.ndarray,
                    logdet0: float | None = None) -> tuple[np.ndarray, np.ndarray, float | None]:
    """:func:`_coordinate_start` from a known ``W0 = P0⁻¹``, which it keeps up to date: no factorisation.

    Setting ``P_jk = P_kj = t`` is the rank-two change ``U C Uᵀ`` (``U = [e_j, e_k]``,
    ``C = [[0, t], [t, 0]]``), so by Sherman–Morrison–Woodbury the new inverse is
    ``W − W U N Uᵀ W`` with ``N = (I + C Uᵀ W U)⁻¹ C``, a symmetric 2 × 2 whose
    determinant is the ``D(t) > 0`` of the one-entry problem: ``O(d²)`` instead of
    a Cholesky and an inverse of ``P`` (``d³``), which were 3 of a round's ≈ 18
    Cholesky-equivalents of dense work. The stage that follows recomputes ``W``
    from a fresh factorisation after its first step, so rounding here only moves
    that first direction. ``log det P0``, if given, follows as ``+ log D(t)``.
    """
    new = _new_entries(pat, P0)
    if new.size > _MAX_REFINED:
        return _coordinate_start(pat, P0, mu)
    P, W, logdet = P0.copy(), W0, logdet0
    for i in new:
        j, k = int(pat.r[i]), int(pat.c[i])
        a, b = W[j, k], W[j, j] * W[k, k]
        t = _best_entry(a, b - a * a, pat.y[i], mu * pat.q[i])
        if t is None:
            continue
        P[j, k] = P[k, j] = t
        D = 1.0 + 2.0 * a * t - (b - a * a) * t * t
        if logdet is not None:
            logdet += float(np.log(D))
        u, v = W[:, j].copy(), W[:, k].copy()
        # W − n_jk (u vᵀ + v uᵀ) − n_jj u uᵀ − n_kk v vᵀ (n_jj, n_kk < 0), each term
        # exactly symmetric, so W stays so.
        uv = np.outer(u, v)
        uv += uv.T
        uv *= t * (1.0 + a * t) / D
        uu, vv = u * abs(t) * np.sqrt(W[k, k] / D), v * abs(t) * np.sqrt(W[j, j] / D)
        uv -= np.outer(uu, uu)
        uv -= np.outer(vv, vv)
        W = W - uv
    return P, W, logdet


@counted("local start")
def _local_start(pat: _Pattern, P0: np.ndarray, W0: np.ndarray, logdet0: float | None = None,
                 mu: float = 0.0) -> tuple[np.ndarray, np.ndarray, float | None] | None:
    """A warm start at ``mu`` whose new entries, and every entry sharing a variable with them, are at their optimum.

    A round's new entry ``(j, k)`` moves the answer most around ``j`` and ``k``. The
    entries ``B`` touching them involve only the variables ``V`` of their pairs, and
    changing ``P`` there changes the Schur complement ``S = (W₀)_VV⁻¹`` of the rest by
    the same amount, so minimising ``F_0`` over ``B`` with everything else fixed is a
    problem on ``|V| × |V|`` matrices (``|V|`` ≈ 10–30): damped Newton on it costs
    nothing of size ``d``. At ``mu > 0`` the local problem keeps the barrier's
    quadratic term on ``B`` (the rest of it is constant there). The change found, supported on the rows and columns of
    ``j`` and ``k`` (rank ≤ 4 per new entry), then updates ``W₀`` by
    Sherman–Morrison–Woodbury, and ``log det P₀``, if given, by ``log det S − log
    det S₀`` (the rest of ``P`` is unchanged). Returns ``(P, W, logdet)``, or
    None when the local problem is not usable (a non-finite or indefinite block).
    """
    new = _new_entries(pat, P0)
    ends = np.unique(np.concatenate([pat.r[new], pat.c[new]]))
    B = np.flatnonzero(np.isin(pat.r, ends) | np.isin(pat.c, ends))
    for _ in range(_LOCAL_HOPS - 1):
        ends = np.unique(np.concatenate([pat.r[B], pat.c[B]]))
        B = np.flatnonzero(np.isin(pat.r, ends) | np.isin(pat.c, ends))
    V = np.unique(np.concatenate([pat.r[B], pat.c[B]]))
    r, c = np.searchsorted(V, pat.r[B]), np.searchsorted(V, pat.c[B])
    W_VV = W0[np.ix_(V, V)]
    try:
        S0 = np.linalg.inv(W_VV)
    except np.linalg.LinAlgError:
        return None
    S0 = 0.5 * (S0 + S0.T)
    m, y, x = pat.m[B], pat.y[B], P0[pat.r[B], pat.c[B]]
    muq = mu * pat.q[B]
    mm = 0.5 * np.outer(m, m)
    S, Wl = S0.copy(), W_VV
    for i in np.flatnonzero(np.isin(B, new)):  # each new entry first at its own optimum
        a, b = Wl[r[i], c[i]], Wl[r[i], r[i]] * Wl[c[i], c[i]]
        t = _best_entry(a, b - a * a, y[i], muq[i])
        if t is not None:
            x[i] += t
            S[r[i], c[i]] += t
            S[c[i], r[i]] += t
            Wl = np.linalg.inv(S)
    for _ in range(_LOCAL_STEPS):
        g = m * (y - Wl[r, c]) + muq * x
        H = mm * (Wl[np.ix_(r, r)] * Wl[np.ix_(c, c)] + Wl[np.ix_(r, c)] * Wl[np.ix_(c, r)])
        H[np.diag_indices_from(H)] += muq
        try:
            step = -np.linalg.solve(H, g)
        except np.linalg.LinAlgError:
            break
        lam = np.sqrt(max(-float(np.dot(g, step)), 0.0))
        if not np.isfinite(lam) or lam <= _LOCAL_TOL:
            break
        # Damped Newton on a self-concordant function stays in its domain.
        t = 1.0 if lam < _FULL_STEP_LOCAL else 1.0 / (1.0 + lam)
        dS = np.zeros_like(S)
        np.add.at(dS, (r, c), t * step)
        dS[c[r != c], r[r != c]] = dS[r[r != c], c[r != c]]
        x += t * step
        S = S + dS
        Wl = np.linalg.inv(S)
    if not (np.all(np.isfinite(Wl)) and np.all(np.isfinite(x))):
        return None
    logdet = None
    if logdet0 is not None:
        (sign, new_logdet), (sign0, old_logdet) = np.linalg.slogdet(S), np.linalg.slogdet(S0)
        if not (sign > 0 and sign0 > 0):
            return None
        logdet = logdet0 + float(new_logdet - old_logdet)
    # W = W₀ − W₀[:, V] M W₀[V, :] with M = D (I + W_VV D)⁻¹, D = S − S₀ of rank ≤ 2|ends|:
    # applied as that many exactly symmetric rank-one terms.
    D = S - S0
    M = np.linalg.solve((np.eye(V.size) + W_VV @ D).T, D.T).T
    lam, Q = np.linalg.eigh(0.5 * (M + M.T))
    keep = np.argsort(-np.abs(lam))[: min(V.size, 2 * ends.size)]
    Y = W0[:, V] @ Q[:, keep]
    W = W0.copy()
    for col, ev in zip(Y.T, lam[keep]):
        u = col * np.sqrt(abs(ev))
        if ev > 0:
            W -= np.outer(u, u)
        else:
            W += np.outer(u, u)
    P = P0.copy()
    P[pat.r[B], pat.c[B]] = x
    P[pat.c[B], pat.r[B]] = x
    return P, W, logdet


def _known_inverse(init, P0: np.ndarray, scale: float) -> np.ndarray | None:
    """``P₀⁻¹`` for the warm start ``P0`` assembled from ``init``, when every earlier block kept its ``W``.

    ``P0`` is block diagonal (:func:`.newton._assemble_warm_start`): the earlier
    blocks' precisions, and a diagonal on the indices none of them covers; so is
    its inverse.
    """
    if not init:
        return None
    if len(init) == 1 and covers_all(np.asarray(init[0][0]), P0.shape[0]):
        state = init[0][1]
        cov = getattr(state, "covariance", None)
        if cov is None or cov.shape != P0.shape:
            return None
        return cov * (state.scale / scale)
    W = np.diag(1.0 / np.diag(P0))
    for ix, state in init:
        cov = getattr(state, "covariance", None)
        if cov is None or cov.shape != (len(ix), len(ix)):
            return None
        # W scales as s, the inverse of the precision's 1/s.
        W[np.ix_(ix, ix)] = cov * (state.scale / scale)
    return W


def _known_logdet(init, P0: np.ndarray, scale: float) -> float | None:
    """``log det P₀`` for the warm start assembled from ``init``, when every earlier block kept its own.

    ``P0`` is block diagonal: each block's precision, converted from its units
    (``P`` scales as ``1/s``: ``log det`` gains ``n log(s / s_block)``), and a
    diagonal on the indices none covers.
    """
    if not init:
        return None
    covered = np.zeros(P0.shape[0], dtype=bool)
    total = 0.0
    for ix, state in init:
        logdet = getattr(state, "logdet", None)
        if logdet is None:
            return None
        total += logdet + len(ix) * float(np.log(scale / state.scale))
        covered[np.asarray(ix)] = True
    rest = np.diag(P0)[~covered]
    return total + float(np.sum(np.log(rest)))


def _best_entry(a: float, c: float, y: float, muq: float) -> float | None:
    """Minimiser of ``−log(1 + 2at − ct²) + 2yt + (μq/2)t²``, or None when it is not well defined."""
    if not (c > 0 and np.isfinite(a) and np.isfinite(c) and np.isfinite(y)):
        return None
    root = np.sqrt(a * a + c)
    lo, hi = (a - root) / c, (a + root) / c  # D(t) > 0 in between
    # μ = 0 has a closed form (the stable root of a quadratic); it starts Newton for μ > 0.
    t = 2.0 * (a - y) / (2.0 * y * a + c + np.sqrt(4.0 * y * y * (a * a + c) + c * c))
    for _ in range(50):
        D = 1.0 + 2.0 * a * t - c * t * t
        dD = 2.0 * a - 2.0 * c * t
        g = -dD / D + 2.0 * y + muq * t
        h = (2.0 * c * D + dD * dD) / (D * D) + muq
        # Stay inside the domain: at most halfway to its edge per step.
        t_new = min(max(t - g / h, 0.5 * (t + lo)), 0.5 * (t + hi))
        if abs(t_new - t) <= 1e-15 * max(1.0, abs(t)):
            return t_new
        t = t_new
    return t if np.isfinite(t) else None


def _warm_refine(pat: _Pattern, P0: np.ndarray, mu: float, *, init, scale: float, local: bool = True):
    """``(P, W, logdet)``: the warm start's new entries at their optima, and ``P⁻¹``, ``log det P`` when known.

    Both are known when the earlier blocks kept theirs (else None).

    With ``local``, the new entries' neighbourhoods are optimised with them
    for the stage at ``mu`` (:func:`_local_start`); otherwise only the new entries
    move (:func:`_rank_two_start`); without kept inverses, by factorisation
    (:func:`_coordinate_start`).
    """
    W0 = _known_inverse(init, P0, scale)
    if W0 is None:
        return _coordinate_start(pat, P0, mu)
    logdet0 = _known_logdet(init, P0, scale)
    new = _new_entries(pat, P0)
    if local and _LOCAL_STEPS and 0 < new.size <= _MAX_REFINED:
        local = _local_start(pat, P0, W0, logdet0, mu)
        if local is not None:
            return local
    return _rank_two_start(pat, P0, mu, W0, logdet0)


@counted_solve
def solve_newton_pcg(
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
    """Solve one block like :func:`paceggm.reconstruction.newton.solve_newton`, with CG directions.

    Parameters are those of :func:`~paceggm.reconstruction.newton.solve_newton`;
    ``init`` may hold :class:`PCGNewtonState` s, whose Hessian factors precondition
    this solve.

    Returns
    -------
    BlockSolution
        As :func:`~paceggm.reconstruction.newton.solve_newton`, with a
        :class:`PCGNewtonState`.

    Examples
    --------
    >>> import numpy as np
    >>> from paceggm.reconstruction.problem import make_problem
    >>> y = np.array([[1.0, 0.5, 0.0], [0.5, 1.0, 0.5], [0.0, 0.5, 1.0]])
    >>> sol = solve_newton_pcg(make_problem(y, np.where(y != 0, 1.0, 0.0), scale=1.0, lam_unit=1.0))
    >>> round(float(sol.W[2, 0]), 6), sol.mu
    (0.25, 0.0)
    """
    # The local steps cost about a millisecond of small-matrix work, which only the
    # Newton iterations of large blocks repay (measured on spambase, d = 58: ten
    # fits at rho = 10 took 0.36 s with them on every block, 0.29 s without).
    refine = partial(_warm_refine, init=init, scale=p.scale, local=p.rows.size >= _CG_MIN_ENTRIES)
    if p.rows.size < _CG_MIN_ENTRIES:
        # Small enough that factoring the Hessian is cheaper than CG.
        pat, x, L, W, mu, n_iter = _solve(p, init, mu0=mu0, mu_min=mu_min, mu_factor=mu_factor, tol=tol,
                                          max_newton=max_newton, exact_limit=exact_limit,
                                          warm_direction=_factored_direction,
                                          refine_start=refine, skip_to_limit=True, kkt_stop=_KKT_STOP)
        logdet = None if L is None else _logdet(L)
        return BlockSolution(W=W, state=PCGNewtonState(pat.matrix(x), p.scale, mu, covariance=W, logdet=logdet), mu=mu,
                             n_iter=n_iter, converged=mu <= mu_min)
    holder = {}
    recentre_at, keep, kept = _recentring(p, init, mu0, mu_min, mu_factor)

    def pcg(pat):
        if "dir" not in holder or holder["dir"].pat is not pat:
            holder["dir"] = _PCGDirection(pat, init)
        return holder["dir"]

    pat, x, L, W, mu, n_iter = _solve(p, init, mu0=mu0, mu_min=mu_min, mu_factor=mu_factor, tol=tol,
                                      max_newton=max_newton, exact_limit=exact_limit,
                                      warm_direction=lambda pat, x, W, mu: pcg(pat)(pat, x, W, mu),
                                      decrement_bound=lambda pat, x, W, mu: pcg(pat).decrement_bound(pat, x, W, mu),
                                      refine_start=refine, skip_to_limit=True, kkt_stop=_KKT_STOP,
                                      recentre_at=recentre_at, on_centred=keep)
    hessian, use = None, (0, 0, 0)
    if "dir" in holder:
        hessian, use = holder["dir"].state_hessian()
    if hessian is None:
        # Solved without warm stages (a cold start): factor once at the answer for
        # the next round.
        factor = _hessian_factor(pat, W, mu)
        if factor is not None:
            hessian = (_single(factor[0]), factor[1], pat.r, pat.c)
    logdet = None if L is None else _logdet(L)
    return BlockSolution(W=W, state=PCGNewtonState(pat.matrix(x), p.scale, mu, hessian, use, W, logdet, kept()), mu=mu,
                         n_iter=n_iter, converged=mu <= mu_min)

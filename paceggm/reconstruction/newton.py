"""Newton on the sparse precision: the exact, fast max-entropy solver (the default).

At the optimum of ``min_W L(W) − μ log det W`` the precision ``P = W⁻¹`` is zero
off the pattern ``S`` and, with ``W = P⁻¹``,

* ``W_jk = y_jk + μ P_jk / λ_jk`` on measured off-diagonal pairs,
* ``W_jj = y_jj + μ P_jj / (2 λ_jj)`` on the diagonal.

These are the stationarity conditions of the strictly convex function of the
``|S|`` free entries ``x`` of ``P ≻ 0``

    F_μ(P) = −log det P + ⟨P, Y⟩ + (μ/2) [Σ_j P_jj² / (2λ_jj) + 2 Σ_{j>k∈S} P_jk² / λ_jk]

(``⟨P, Y⟩`` counts each off-diagonal pair twice). ``F_μ`` is self-concordant
(``−log det`` plus a convex quadratic), so damped Newton converges from any
``P ≻ 0`` and quadratically near the optimum. With ``m_i`` = 1 on the diagonal
and 2 off it, ``c_i = 1/(2λ_jj)`` or ``2/λ_jk``:

    ∇F_i = m_i (y_i − W_i) + μ c_i x_i,
    ∇²F_{(ab),(cd)} = (m_i m_j / 2)(W_ac W_bd + W_ad W_bc) + μ c_i δ_ij.

Each iteration costs one Cholesky of ``P`` (``d³/3``) and one of the
``|S| × |S|`` Hessian — never the ``d(d+1)/2`` variables of a dense solver.

Stages and stopping (all μ in the normalised units of
:mod:`paceggm.reconstruction.problem`, like IPM-Cholesky):

* cold start: ``P`` from the exact barrier solution of the diagonal alone at
  ``μ_0 = 1e-1``, then ``μ ← c_μ μ`` down to ``μ_min = 1e-8`` (``c_μ = 0.1``);
  if the first stage does not converge (off-diagonal measurements far larger
  than the diagonal ones put the diagonal start far from the centre), the path
  restarts at ``1e3 μ_0``, then ``1e6 μ_0``, where the barrier dominates;
* a stage stops when the Newton decrement ``δ = sqrt(∇Fᵀ ∇²F⁻¹ ∇F)`` is at most
  ``tol = 1e-9`` (after one last full step, so the error is ``O(δ²)``), or when it
  has stopped decreasing below ``1e-6`` (the floating-point floor);
* a stage that fails (no convergence in ``max_newton`` iterations, a
  non-finite value) is discarded and the previous stage's answer returned with
  its μ — the divergence guard at tiny μ;
* a final ``μ = 0`` stage gives the μ → 0 limit *exactly* when ``y`` is
  positive-definite completable. It is attempted only when the decrement of
  ``F_0`` at the ``μ_min`` answer is below ``1/4`` (inside the quadratic region)
  and accepted only if the decrement then keeps shrinking quadratically. When
  ``y`` is not completable, ``P`` grows like ``1/μ``, the limit does not exist
  in floating point and the estimate is *defined* as the barrier solution at
  ``μ_min`` (the returned ``mu``), as for IPM-Cholesky.

Warm starts (PACE-GGM rounds): ``init`` is a list of ``(local_indices, state)``
of earlier blocks inside this one; their precisions are assembled into a
block-diagonal ``P₀`` (converted between the blocks' normalisations: ``P`` scales
as ``1/s``) and indices not covered start from the diagonal barrier solution.
From ``P₀`` the solver goes straight to ``μ_min`` and then ``0``, and falls back
to the cold continuation if that stage has not converged within 20 iterations.
A solver built on these stages may re-centre such a stage warm instead
(:func:`_recentre`, used by :mod:`.newton_pcg` and :mod:`.newton_chordal`): from points it kept centred at
``μ_min·10ᵏ``, back down the schedule to ``μ_min``. ``solve_newton`` itself
keeps the path above, bit for bit.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
from scipy.linalg import LinAlgError, cho_factor, cho_solve
from scipy.linalg.lapack import dpotrf, dpotri

from paceggm.reconstruction.counters import counted, event
from paceggm.reconstruction.problem import Problem, diagonal_barrier_solution, mu_schedule
from paceggm.reconstruction.result import BlockSolution

DEFAULTS = dict(mu0=1e-1, mu_min=1e-8, mu_factor=0.1, tol=1e-9, max_newton=200, exact_limit=True)
# Iterations a warm start may take before the cold continuation is used instead.
# A warm start is either good (a handful of steps) or badly centred for the new
# measurements (non-completable y at tiny μ: damped steps that barely move), so
# waiting longer only wastes time.
_WARM_ITER = 20
# A warm μ_min stage that can be re-centred gives up once its decrement is at least _STALL_DEC
# and has not fallen by a tenth in _STALL_STEPS steps (measured stalls on indian_pines_cols:
# the decrement falls to 1.6–1.7 in 5–9 steps and stays there for hundreds).
_STALL_DEC = 1.0
_STALL_STEPS = 4
# Iterations a re-centring stage above μ_min may take before the next larger μ is tried
# (measured on indian_pines_cols: 13 from a point kept at μ_min·10 some rounds earlier). A stage
# that converges may first wander for 12–132 steps, and at 80 a whole fit ends cold 14 times
# instead of 48, but the hopeless stages' extra steps cost more than the cold paths spared:
# 21,355 against 19,723 Newton systems, 262 against 247 CPU s (paired, one process).
_RECENTRE_ITER = 20
# Damped iterations the exact stage may take from a warm start before it must be
# in the quadratic region (measured: a good start gets there in 2–4).
_WARM_DAMPED = 6
# Decrement below which a full Newton step is safe for a self-concordant function
# (quadratic-convergence region, (3 − √5)/2 ≈ 0.38 in theory).
_FULL_STEP = 0.25
# Once below this, a decrement that no longer decreases is rounding noise.
_FLOOR = 1e-6
# Decrement below which an exact stage with ``kkt_stop`` tries to end on the full
# step: from the quadratic region that step is within (δ/(1 − δ))² ≈ 1e-8 of the
# optimum for a self-concordant function, and its KKT residual decides.
_EARLY = 1e-4
# Factors on μ_0 at which the cold path restarts when its first stage fails.
_BACKOFF = (1.0, 1e3, 1e6)


@dataclass(frozen=True)
class NewtonState:
    """What a later solve warm-starts from.

    ``precision`` is ``P`` in the normalised units of the block it solved,
    ``scale`` that block's ``s``: ``precision / scale`` is ``P`` in data units.
    ``mu`` is the normalised μ the precision solves (0 for the exact limit).
    """

    precision: np.ndarray
    scale: float
    mu: float


def symmetric_matrix(d: int, rows: np.ndarray, cols: np.ndarray, x: np.ndarray) -> np.ndarray:
    """The symmetric ``d × d`` matrix with ``x`` at ``(rows, cols)`` and ``(cols, rows)``, zero elsewhere."""
    P = np.zeros((d, d))
    P[rows, cols] = x
    P[cols, rows] = x
    return P


class _Pattern:
    """The ``|S|`` free entries of ``P`` and the fixed data of ``F_μ`` on them."""

    def __init__(self, p: Problem) -> None:
        self.d = p.d
        self.r, self.c = p.rows, p.cols
        diag = self.r == self.c
        self.m = np.where(diag, 1.0, 2.0)
        lam = p.weights
        self.q = np.where(diag, 0.5 / lam, 2.0 / lam)
        self.y = p.targets

    @cached_property
    def mm(self) -> np.ndarray:
        """The Hessian's weights ``m_i m_j / 2``, ``|S| × |S|``: made only for a solver that assembles it."""
        return 0.5 * np.outer(self.m, self.m)

    def matrix(self, x: np.ndarray) -> np.ndarray:
        return symmetric_matrix(self.d, self.r, self.c, x)

    def entries(self, P: np.ndarray) -> np.ndarray:
        return P[self.r, self.c].copy()


def _factor(P: np.ndarray):
    """Lower Cholesky factor of ``P``, or None when ``P`` is not positive definite."""
    if not np.all(np.isfinite(P)):
        return None
    L, info = dpotrf(P, lower=1, clean=1)
    return L if info == 0 else None


@counted("factorisations of P")
def _factor_at(pat: _Pattern, x: np.ndarray):
    """:func:`_factor` of ``P(x)``, built here and factored in its own memory.

    ``P(x)`` is exactly symmetric, so its C-ordered array read in Fortran order
    is the same matrix, which LAPACK can overwrite instead of copying first:
    the same factor, bit for bit, one ``d × d`` copy fewer per factorisation.
    """
    if not np.all(np.isfinite(x)):
        return None
    L, info = dpotrf(pat.matrix(x).T, lower=1, clean=1, overwrite_a=1)
    return L if info == 0 else None


# Rows mirrored at a time by _inverse: a block of this many rows and the
# columns it reads stay in cache.
_MIRROR_ROWS = 64


@counted("inverses of P")
def _inverse(L: np.ndarray) -> np.ndarray:
    """``W = P⁻¹`` from a factor made by :func:`_factor`, C-contiguous and exactly symmetric.

    ``dpotri`` writes the lower triangle of ``P⁻¹`` (in Fortran order) and leaves
    the upper one as it found it, zero (``_factor`` cleans it): its transpose is
    a C-ordered view holding the inverse in the upper triangle. The lower one is
    mirrored into it a block of rows at a time (at d = 750, 2.6 ms faster than
    adding the whole strict lower triangle, which reads one of its operands
    across rows; ``dpotri`` 6.7 ms). Every entry gets ``+ 0.0``, as that sum
    gave it (``dpotri`` leaves some zeros negative): bit for bit ``Winv.T +
    tril(Winv, -1)`` (tested), which is ``tril(Winv) + tril(Winv, -1).T``.
    """
    Winv, info = dpotri(L, lower=1)
    if info != 0:
        raise LinAlgError("dpotri failed")
    W = Winv.T
    d = W.shape[0]
    for r0 in range(0, d, _MIRROR_ROWS):
        r1 = min(r0 + _MIRROR_ROWS, d)
        W[r0:r1, :r0] = W[:r0, r0:r1].T  # already + 0.0: the rows above did it
        block = W[r0:r1, r0:r1]
        block += np.tril(block.T, -1)
        W[r0:r1, r1:] += 0.0
    return W


def _logdet(L: np.ndarray) -> float:
    """``log det P`` from its Cholesky factor."""
    return 2.0 * float(np.sum(np.log(np.diag(L))))


def _value(pat: _Pattern, x: np.ndarray, L: np.ndarray | None, mu: float, logdet: float | None = None) -> float:
    """``F_μ`` at ``x``, from the factor ``L`` of ``P(x)`` or, when ``L`` is None, from its known ``logdet``."""
    logdet = _logdet(L) if L is not None else logdet
    return -logdet + float(np.dot(pat.m * pat.y, x)) + 0.5 * mu * float(np.dot(pat.q * x, x))


def _gradient(pat: _Pattern, x: np.ndarray, W: np.ndarray, mu: float) -> np.ndarray:
    return pat.m * (pat.y - W[pat.r, pat.c]) + mu * pat.q * x


def _hessian_products(pat: _Pattern, Wr: np.ndarray, Wc: np.ndarray) -> np.ndarray:
    """``W[r, r] ⊙ W[c, c] + W[r, c] ⊙ W[c, r]`` over the pattern, from the rows ``Wr = W[r]``, ``Wc = W[c]``.

    The Hessian before its weights. One index per gather and the products in
    place: 1.4-1.7x faster than the four ``np.ix_`` gathers, bit for bit the
    same (measured at |S| = 500-1,400).
    """
    H = np.take(Wr, pat.r, axis=1)
    H *= np.take(Wc, pat.c, axis=1)
    T = np.take(Wr, pat.c, axis=1)
    T *= np.take(Wc, pat.r, axis=1)
    H += T
    return H


def _hessian_factor(pat: _Pattern, W: np.ndarray, mu: float):
    """``(cf, h)``: Cholesky factor of the Jacobi-scaled Hessian and the scaling, or None.

    ``∇²F = D (cf cfᵀ) D`` with ``D = diag(h)``.

    ``H = mm ⊙ (W[r, r] ⊙ W[c, c] + W[r, c] ⊙ W[c, r])`` (:func:`_hessian_products`),
    the arithmetic in the order of that textbook expression: bit for bit its factor.
    """
    H = _hessian_products(pat, W[pat.r], W[pat.c])
    H *= pat.mm
    H[np.diag_indices_from(H)] += mu * pat.q
    # Jacobi scaling: the Hessian's diagonal spans many orders of magnitude when P
    # is large (non-completable y at small μ); scaling keeps the Cholesky accurate.
    h = np.sqrt(np.diag(H))
    if not (np.all(np.isfinite(H)) and np.all(h > 0)):
        return None
    H /= np.outer(h, h)
    try:
        return cho_factor(H, lower=True, overwrite_a=True, check_finite=False), h
    except LinAlgError:
        return None


class _DenseKernels:
    """What the stages do to an iterate ``x``, on dense ``d × d`` arrays: the kernels :func:`_stage` is written in.

    ``factor(pat, x)`` is the factor of ``P(x)`` (None when it is not positive
    definite), ``start(pat, P0)`` that of a warm start's matrix, ``inverse(L)``
    the ``W`` a direction reads, ``value`` is ``F_μ``, ``on_pattern`` ``W`` on
    the pattern (the KKT residual's). A solver that keeps ``P`` otherwise
    (:mod:`.newton_chordal`: a sparse factor on a chordal embedding) gives the
    stages its own kernels and types.
    """

    @staticmethod
    def pattern(p: Problem) -> _Pattern:
        return _Pattern(p)

    @staticmethod
    def factor(pat: _Pattern, x: np.ndarray):
        return _factor_at(pat, x)

    @staticmethod
    def start(pat: _Pattern, P0: np.ndarray):
        return _factor(P0)

    @staticmethod
    def inverse(L: np.ndarray) -> np.ndarray:
        return _inverse(L)

    @staticmethod
    def value(pat: _Pattern, x: np.ndarray, L, mu: float, logdet: float | None = None) -> float:
        return _value(pat, x, L, mu, logdet)

    @staticmethod
    def on_pattern(pat: _Pattern, W: np.ndarray) -> np.ndarray:
        return W[pat.r, pat.c]


def _decrement(g: np.ndarray, step: np.ndarray):
    """``(Δ, δ)`` with ``δ = sqrt(−∇Fᵀ Δ)``, or ``(None, nan)`` when that is not a descent step."""
    dec2 = -float(np.dot(g, step))
    if not np.isfinite(dec2) or dec2 < 0:
        return None, np.nan
    return step, np.sqrt(dec2)


def _newton_direction(pat: _Pattern, x: np.ndarray, W: np.ndarray, mu: float, *, hessian_factor=_hessian_factor):
    """``(Δ, δ)``: Newton step ``−∇²F⁻¹ ∇F`` and decrement, or ``(None, nan)``."""
    g = _gradient(pat, x, W, mu)
    factor = hessian_factor(pat, W, mu)
    if factor is None:
        return None, np.nan
    cf, h = factor
    return _decrement(g, -cho_solve(cf, g / h, check_finite=False) / h)


def _stage(pat: _Pattern, x: np.ndarray, L: np.ndarray, mu: float, *, tol: float, max_newton: int,
           exact_stage: bool = False, damped: int = 0, direction=_newton_direction, kkt_stop: float | None = None,
           decrement_bound=None, W: np.ndarray | None = None, logdet: float | None = None,
           stall: int | None = None, kernels=_DenseKernels):
    """Minimise ``F_μ`` from ``x`` (with ``L`` the Cholesky factor of ``P(x)``).

    Returns ``(x, L, W, converged, n_iter)``. With ``exact_stage`` (μ = 0), the
    stage gives up as soon as it leaves the quadratic region or stops converging
    quadratically: then the limit does not exist (or not in floating point).
    ``damped`` iterations outside the quadratic region are allowed first (a warm
    start that has not reached it yet).

    ``kkt_stop`` (exact stage only) ends the stage one Newton system early: once
    the decrement ``δ`` is below ``_EARLY`` and shrinking quadratically, the full
    step lands within ``(δ/(1 − δ))² ≈ 1e-8`` of the optimum (self-concordance),
    which is accepted when its KKT residual ``max |y − W|`` on the pattern is at
    most ``kkt_stop`` relative to ``max |W|`` there — otherwise the stage goes on
    from the step as usual.

    ``decrement_bound(pat, x, W, mu)`` (exact stage without damped iterations
    only), if given, is a cheap lower bound on the first Newton decrement: when
    it is already outside the quadratic region the stage fails as it would after
    computing that decrement, without solving a Newton system.

    ``W``, if given, is ``P(x)⁻¹`` already known to the caller (a warm start
    updated in low rank): the stage's first inverse is then not recomputed.
    With ``W`` and ``logdet = log det P(x)`` both known, ``L`` may be None: the
    stage starts without factoring ``P(x)`` (and returns ``L`` None if it
    takes no step). Every step the stage takes recomputes ``W`` from a fresh
    factorisation.

    ``stall``, if given, ends the stage unconverged as soon as the decrement is
    at least ``_STALL_DEC`` and has not fallen by a tenth in ``stall`` steps:
    for a caller that has a better way on than waiting (:func:`_recentre`).

    ``kernels`` factor, invert and evaluate (:class:`_DenseKernels`): ``L`` and
    ``W`` are of their types.
    """
    if L is None and (W is None or logdet is None):
        L = kernels.factor(pat, x)
        if L is None:
            return x, None, W, False, 0
    if W is None:
        W = kernels.inverse(L)
    if exact_stage and damped == 0 and decrement_bound is not None and decrement_bound(pat, x, W, mu) >= _FULL_STEP:
        return x, L, W, False, 0
    f = kernels.value(pat, x, L, mu, logdet)
    prev = np.inf
    decs = []
    for it in range(1, max_newton + 1):
        event("Newton systems")
        step, dec = direction(pat, x, W, mu)
        if step is None:
            return x, L, W, False, it
        decs.append(dec)
        if stall is not None and it > stall and dec >= _STALL_DEC and dec > 0.9 * decs[-1 - stall]:
            return x, L, W, False, it
        if dec <= tol or (dec <= _FLOOR and dec >= prev):
            x_new = x + step
            L_new = kernels.factor(pat, x_new)
            if L_new is not None:
                x, L = x_new, L_new
                W = kernels.inverse(L)
            return x, L, W, True, it
        if exact_stage and ((dec >= _FULL_STEP and it > damped) or (prev < _FULL_STEP and dec > 0.5 * prev)):
            return x, L, W, False, it
        if exact_stage and kkt_stop is not None and dec <= _EARLY and prev < _FULL_STEP:
            x_new = x + step
            L_new = kernels.factor(pat, x_new)
            if L_new is not None:
                x, L = x_new, L_new
                W = kernels.inverse(L)
                W_s = kernels.on_pattern(pat, W)
                if np.max(np.abs(pat.y - W_s)) <= kkt_stop * np.max(np.abs(W_s)):
                    return x, L, W, True, it
                prev = dec
                f = kernels.value(pat, x, L, mu)
                continue
        prev = dec
        if dec < _FULL_STEP:
            t = 1.0
            L_new = kernels.factor(pat, x + step)
            while L_new is None and t > 1e-12:
                t *= 0.5
                L_new = kernels.factor(pat, x + t * step)
            if L_new is None:
                return x, L, W, False, it
            x = x + t * step
            L = L_new
            f = kernels.value(pat, x, L, mu)
        else:
            # Backtracking (Armijo, slope −δ²) that keeps P positive definite.
            t = 1.0
            while True:
                x_new = x + t * step
                L_new = kernels.factor(pat, x_new)
                if L_new is not None:
                    f_new = kernels.value(pat, x_new, L_new, mu)
                    if f_new <= f - 0.25 * t * dec * dec:
                        break
                t *= 0.5
                if t < 1e-12:
                    return x, L, W, False, it
            x, L, f = x_new, L_new, f_new
        W = kernels.inverse(L)
    return x, L, W, False, max_newton


def _assemble_warm_start(p: Problem, init, mu: float) -> tuple[np.ndarray | None, bool]:
    """Block-diagonal ``P₀`` from earlier blocks' precisions, in this block's units.

    Also says whether every earlier block was solved to the exact μ = 0 limit.
    """
    pieces = [(np.asarray(ix), s) for ix, s in (init or []) if isinstance(s, NewtonState)]
    if not pieces:
        return None, False
    mask = p.lam > 0
    if len(pieces) == 1 and covers_all(pieces[0][0], p.d) and pieces[0][1].precision.shape == (p.d, p.d):
        # A round that changed an entry inside one block (most rounds): the same
        # numbers as below without building and overwriting a d × d diagonal.
        _, s = pieces[0]
        return np.where(mask, s.precision * (p.scale / s.scale), 0.0), s.mu == 0.0
    P = np.diag(1.0 / diagonal_barrier_solution(p, mu))
    covered = np.zeros(p.d, dtype=bool)
    for ix, s in pieces:
        if covered[ix].any() or s.precision.shape != (ix.size, ix.size):
            return None, False
        # P' = P_data · s_new and P_data = P'_old / s_old.
        P[np.ix_(ix, ix)] = s.precision * (p.scale / s.scale)
        covered[ix] = True
    # Keep only the pattern: earlier blocks lie inside this one, so their
    # patterns are sub-patterns and nothing is lost.
    return np.where(mask, P, 0.0), all(s.mu == 0.0 for _, s in pieces)


def covers_all(ix: np.ndarray, d: int) -> bool:
    """Whether the local indices ``ix`` of an earlier block are all of ``0, …, d − 1`` in order."""
    return ix.size == d and (d == 0 or (ix[0] == 0 and ix[-1] == d - 1 and bool(np.all(np.diff(ix) == 1))))


def solve_newton(
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
    """Solve one block by damped Newton on the sparse precision; see the module docstring.

    Parameters
    ----------
    p : Problem
        The block, in normalised units.
    init : list of (ndarray, NewtonState), optional
        Earlier blocks inside this one (from :func:`paceggm.reconstruction.reconstruct`).
    mu0, mu_min, mu_factor : float
        Continuation ``μ_0 > … ≥ μ_min`` (normalised units), geometric with factor ``mu_factor``.
    tol : float
        Newton-decrement tolerance of each stage.
    max_newton : int
        Newton iterations allowed per stage.
    exact_limit : bool
        Attempt the final ``μ = 0`` stage (the exact μ → 0 limit when it exists).

    Returns
    -------
    BlockSolution
        ``W = P⁻¹``, ``state`` a :class:`NewtonState`, ``mu`` the μ of the
        answer (0.0 when the exact limit was reached).
    """
    pat, x, _, W, mu, n_iter = _solve(p, init, mu0=mu0, mu_min=mu_min, mu_factor=mu_factor, tol=tol,
                                      max_newton=max_newton, exact_limit=exact_limit)
    # A stage that failed to converge ends the continuation early, above mu_min.
    return BlockSolution(W=W, state=NewtonState(pat.matrix(x), p.scale, mu), mu=mu, n_iter=n_iter,
                         converged=mu <= mu_min)


def _recentre(pat: _Pattern, mus, *, tol: float, max_newton: int, direction, start_at, on_centred=None,
              kernels=_DenseKernels):
    """Re-centre a warm start whose μ_min stage stalled: ``(best, n_iter)``, ``best`` None if it fails.

    Where the measurements are not completable the answer grows like ``1/μ``
    in the directions that witness it, and a round's new entry can change
    those directions: from the last answer at μ_min the change is then of
    order ``1/μ_min``, which damped Newton covers only in many steps (a
    measured stall: the decrement stays near 1.7 for hundreds of steps). At
    ``μ_min·10ᵏ`` the same change is ``10ᵏ`` times smaller.
    ``start_at(pattern, μ)`` gives a warm start centred (for the earlier
    measurements) at ``μ``, ``(x, L, W, logdet)`` as :func:`_stage` takes it,
    or None when there is none. The stage is tried at ``μ_min·10``,
    ``μ_min·100``, … (the schedule ``mus`` upwards) from the start there,
    until one converges within ``_RECENTRE_ITER`` iterations; from that
    centred point the schedule goes back down to μ_min, each stage warm from
    the last, with the warm directions (and whatever they keep, such as a
    Hessian factor). ``on_centred(pattern, μ, x)``, if given, is told of each centred
    point above μ_min. ``best`` is ``(x, L, W, μ_min)``.
    """
    event("warm re-centrings")
    n_iter = 0
    for i in range(len(mus) - 2, -1, -1):
        start = start_at(pat, mus[i])
        if start is None:
            continue
        x, L, W, logdet = start
        x, L, W, ok, k = _stage(pat, x, L, mus[i], tol=tol, max_newton=min(max_newton, _RECENTRE_ITER),
                                direction=direction, W=W, logdet=logdet, kernels=kernels)
        n_iter += k
        if not ok:
            continue
        for up, mu in zip(mus[i:], mus[i + 1:]):
            if on_centred is not None:
                on_centred(pat, up, x)
            x, L, W, ok, k = _stage(pat, x, L, mu, tol=tol, max_newton=max_newton, direction=direction, W=W,
                                    kernels=kernels)
            n_iter += k
            if not ok:
                return None, n_iter
        return (x, L, W, mus[-1]), n_iter
    return None, n_iter


def _solve(p: Problem, init, *, mu0: float, mu_min: float, mu_factor: float, tol: float, max_newton: int,
           exact_limit: bool, warm_direction=_newton_direction, refine_start=None, skip_to_limit: bool = False,
           kkt_stop: float | None = None, decrement_bound=None, recentre_at=None, on_centred=None,
           cold_direction=_newton_direction, kernels=_DenseKernels):
    """The stages of :func:`solve_newton`: ``(pattern, x, L, W, mu, n_iter)``, ``L`` the factor of ``P(x)`` (or None).

    ``warm_direction`` computes the Newton steps of the stages that start from a
    warm start (and of the final exact stage after them); the cold continuation
    always factors the Hessian. ``refine_start(pattern, P0, mu)``, if given,
    improves a warm start ``P0`` for the stage at ``mu`` it will start and
    returns ``(P0, W0, logdet0)``: ``W0`` its inverse and ``logdet0`` its
    log-determinant when it knows them (else None). With
    ``skip_to_limit``, a warm start from exact earlier answers tries the μ = 0
    limit before the μ_min stage (:func:`solve_newton` keeps the published path,
    so that its answers stay bit for bit those of the committed results).
    ``kkt_stop`` lets the exact stages that follow a warm start end one Newton
    system early (see :func:`_stage`); the cold path never does.
    ``decrement_bound`` may spare the final exact stage a Newton system when
    the limit is out of reach (see :func:`_stage`).
    With ``recentre_at`` (the ``start_at`` of :func:`_recentre`), a warm μ_min
    stage that stalls is re-centred before the cold continuation is tried.
    ``on_centred(pattern, μ, x)``, if given, is told of every centred point above μ_min
    that the continuation or a re-centring finds (a later round may re-centre from it).
    ``cold_direction`` computes the steps of the cold continuation (and of the exact
    stage after it). ``kernels`` (:class:`_DenseKernels`) make the pattern and the
    iterates the stages work on.
    """
    mus = mu_schedule(mu0, mu_min, mu_factor)
    pat = kernels.pattern(p)
    n_iter = 0
    best = None  # (x, L, W, mu) of the last converged stage

    P0, exact_start = _assemble_warm_start(p, init, mus[-1])
    W0 = logdet0 = None
    if P0 is not None and refine_start is not None:
        P0, W0, logdet0 = refine_start(pat, P0, 0.0 if exact_limit and exact_start and skip_to_limit else mus[-1])
    if P0 is not None:
        x = pat.entries(P0)
        # A start whose inverse and log-determinant are known (updated in low rank
        # from factored answers, positive definite by construction) is not factored.
        L = kernels.start(pat, P0) if W0 is None or logdet0 is None else None
        start_ok = L is not None or logdet0 is not None
        if start_ok and exact_limit and exact_start and skip_to_limit:
            # The earlier answers are exact μ = 0 limits, usually close to the new
            # one: try the limit directly, skipping the μ_min stage. The exact stage
            # accepts only quadratic convergence to ``tol``, so a miss costs one
            # Newton direction and the usual path follows.
            x1, L1, W1, ok, k = _stage(pat, x, L, 0.0, tol=tol, max_newton=min(max_newton, _WARM_ITER),
                                       exact_stage=True, damped=_WARM_DAMPED, direction=warm_direction,
                                       kkt_stop=kkt_stop, W=W0, logdet=logdet0, kernels=kernels)
            n_iter += k
            if ok:
                return pat, x1, L1, W1, 0.0, n_iter
        if start_ok:
            x1, L1, W1, ok, k = _stage(pat, x, L, mus[-1], tol=tol, max_newton=min(max_newton, _WARM_ITER),
                                       direction=warm_direction, W=W0, logdet=logdet0,
                                       stall=None if recentre_at is None else _STALL_STEPS, kernels=kernels)
            n_iter += k
            if ok:
                best = (x1, L1, W1, mus[-1])
            elif recentre_at is not None:
                best, k = _recentre(pat, mus, tol=tol, max_newton=max_newton, direction=warm_direction,
                                    start_at=recentre_at, on_centred=on_centred, kernels=kernels)
                n_iter += k
    final_direction, final_stop = (warm_direction, kkt_stop) if best is not None else (cold_direction, None)
    if best is None:
        event("cold starts" if P0 is None else "cold restarts")

    # Cold continuation. When the off-diagonal measurements dwarf the diagonal
    # ones (a far from completable y), the diagonal start is badly centred for
    # μ_0 and damped Newton crawls; starting the path at a larger μ, where the
    # barrier dominates and the diagonal start is nearly optimal, fixes that.
    for backoff in _BACKOFF:
        if best is not None:
            break
        # The standard schedule, preceded by stages from μ_0·backoff down towards μ_0.
        lead = mu_schedule(mu0 * backoff, mu0, mu_factor)[:-1] if backoff > 1 else []
        schedule = [m for m in lead if m > mu0 * (1 + 1e-12)] + mus
        x = pat.entries(np.diag(1.0 / diagonal_barrier_solution(p, schedule[0])))
        L = kernels.factor(pat, x)
        W = None
        for mu in schedule:
            # Each stage starts where the last ended, whose W it already has
            # (the same function of the same factor: the same bits).
            x_new, L_new, W_new, ok, k = _stage(pat, x, L, mu, tol=tol, max_newton=max_newton, W=W,
                                                direction=cold_direction, kernels=kernels)
            n_iter += k
            if not ok:
                break  # divergence guard: keep the previous stage's answer
            x, L, W = x_new, L_new, W_new
            if on_centred is not None and mu > mus[-1]:
                on_centred(pat, mu, x)
            if mu <= mu0:  # stages above μ_0 only centre the path
                best = (x, L, W, mu)
    if best is None:
        raise RuntimeError(
            f"Newton failed at the first barrier stage (mu={mu0:g}, also when starting the path "
            f"at {mu0 * _BACKOFF[-1]:g}); the block's measurements are not finite or not on a usable scale"
        )

    x, L, W, mu = best
    if exact_limit:
        x0, L0, W0, ok, k = _stage(pat, x, L, 0.0, tol=tol, max_newton=max_newton, exact_stage=True,
                                   direction=final_direction, kkt_stop=final_stop, decrement_bound=decrement_bound,
                                   W=W, kernels=kernels)
        n_iter += k
        if ok:
            x, L, W, mu = x0, L0, W0, 0.0
    return pat, x, L, W, mu, n_iter

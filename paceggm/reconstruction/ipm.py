"""IPM-Cholesky: the published reference solver (docs/design.md, *Reconstruction and its solvers*).

``W = L Lᵀ`` with ``L`` lower triangular, ``L_jj > 0``. For a geometric
sequence ``μ_0 > μ_1 > … ≥ μ_min`` the barrier objective
``φ_μ(L) = L(LLᵀ) − 2μ Σ_j log L_jj`` is minimised by L-BFGS-B (bounds on the
diagonal), each stage warm-started from the previous one.

Choices the publication leaves open (all in normalised units, see
:mod:`paceggm.reconstruction.problem`). Two named settings (``preset=``,
:data:`PRESETS`); the measurements behind them are in the design notes docs/solvers.md
and docs/stopping-rules.md:

``"warm"`` (the default)
    A PACE-GGM round changes one entry of a block, so its solve starts from the
    previous round's factors (``warm_start=True``; blocks merging in a round
    contribute their factors block-diagonally) and runs the continuation from
    ``warm_mu0 = 1e-3`` down to ``μ_min = 1e-5`` only, at most 300 L-BFGS-B
    iterations a stage; a block seen for the first time runs the whole
    continuation from ``μ_0``. Below ``μ ≈ 1e-5`` this first-order method stalls
    (see ``"tight"``) without coming closer to the exact completion, and the
    errors of whole PACE-GGM runs stay within trial noise of the exact solver's,
    at 19.3 s per trial on communities_crime at ρ = 10 against ``"tight"``'s 610 s
    (``make bench-stopping``, ten paired trials per data set and ρ).
``"tight"``
    Every solve runs the whole continuation from the diagonal: ``μ_0 = 1e-1``,
    ``c_μ = 0.1``, ``μ_min = 1e-8`` (eight stages), relative-reduction tolerance
    ``ftol = 1e-12`` in the intermediate stages and ``1e-15`` in the last,
    ``gtol = 1e-8`` throughout, caps of 5,000 iterations per intermediate stage and
    7,500 in the last. At small μ the scaled objective has curvature ~1/μ on the
    measured entries and O(1) elsewhere, so the small-μ stages of large blocks
    end at their caps (~1e-3 relative error on hard instances); the caps set the
    cost. These were the defaults of the first reproductions.

Common to both:

* Each stage minimises ``φ_μ / μ`` rather than ``φ_μ``: same minimiser, but
  L-BFGS-B's relative-reduction stop would otherwise end the small-μ stages
  after a few iterations.
* ``maxfun`` is twice the stage's iteration cap, so that iterations, not
  evaluations, bind; a solve that ends a stage at its cap is reported as not
  converged (``n_capped`` in the results).
* ``maxcor = 5`` correction pairs: L-BFGS-B's own ``O(m² n)`` subspace step
  (``n = d(d+1)/2``) dominates at ``d ≈ 60–100`` with more, for no gain in accuracy.
* L-BFGS-B is SciPy's routine driven directly (:mod:`._lbfgsb`), not through
  ``minimize``: the same iterates without the wrapper's per-iteration cost.
* A warm start whose first step runs a diagonal entry of ``L`` onto its bound
  (the weak small-μ barrier does not pull it back) is discarded and the block
  solved by the whole continuation instead.

When ``y`` is not PSD-completable the limit does not exist in floating point and
the estimate is the barrier solution at ``μ_min``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.sparse import csr_matrix

from paceggm.reconstruction.problem import Problem, diagonal_barrier_solution, mu_schedule
from paceggm.reconstruction.result import BlockSolution

try:  # private to SciPy: the kernel of ``csr_matrix @ ndarray`` (see _ScaledBarrier)
    from scipy.sparse._sparsetools import csr_matvecs as _csr_matvecs
except ImportError:  # pragma: no cover - depends on the SciPy build
    _csr_matvecs = None

#: Named settings (``preset=``): each replaces every option it names; see the
#: module docstring. ``stage_gtol``/``final_gtol`` bound the projected gradient of
#: the scaled stage objective ``φ_μ/μ``, i.e. ``‖∇φ_μ‖∞ ≤ gtol·μ`` (a centrality test).
PRESETS = {
    "warm": dict(mu_min=1e-5, warm_start=True, warm_mu0=1e-3, stage_maxiter=300, maxiter=300, stage_ftol=1e-12,
                 final_ftol=1e-15, stage_gtol=1e-8, final_gtol=1e-8),
    "tight": dict(mu_min=1e-8, warm_start=False, warm_mu0=None, stage_maxiter=5000, maxiter=7500,
                  stage_ftol=1e-12, final_ftol=1e-15, stage_gtol=1e-8, final_gtol=1e-8),
}
DEFAULTS = dict(mu0=1e-1, mu_factor=0.1, maxcor=5, **PRESETS["warm"])
# Smallest value L-BFGS-B may give a diagonal entry of L (normalised units): the
# barrier keeps it far above this at every μ we use, it only keeps log finite.
_DIAG_FLOOR = 1e-30
# A diagonal entry this close to the floor means the iterate ran onto the bound.
_COLLAPSED = 1e3 * _DIAG_FLOOR


@dataclass(frozen=True)
class IPMState:
    """What a later solve warm-starts from: ``L`` in the normalised units of the
    block it solved, and that block's scale ``s`` (``W = s·L Lᵀ`` in data units)."""

    L: np.ndarray
    scale: float


def _assemble_warm_start(p: Problem, init, mu: float) -> np.ndarray | None:
    """Block-diagonal ``L₀`` from earlier blocks' factors, in this block's units.

    Earlier blocks are disjoint and lie inside this one, so (in the sorted order of
    this block) their factors scatter into a lower-triangular ``L₀`` whose product
    is block-diagonal; indices not covered start from the diagonal barrier solution.
    """
    pieces = [(np.asarray(ix), s) for ix, s in (init or []) if isinstance(s, IPMState)]
    if not pieces:
        return None
    L = np.diag(np.sqrt(diagonal_barrier_solution(p, mu)))
    for ix, s in pieces:
        # W_data = s_old·L_old L_oldᵀ = s_new·L_new L_newᵀ.
        L[np.ix_(ix, ix)] = s.L * np.sqrt(s.scale / p.scale)
    return L


class _ScaledBarrier:
    """``φ_μ(L)/μ`` and its gradient over the lower triangle ``v`` of ``L``.

    ``φ_μ(L) = Σ_S λ (W_jk − y_jk)² − 2μ Σ_j log L_jj`` with ``W = LLᵀ``, whose
    gradient is ``2 G L − 2μ/L_jj`` on the diagonal, ``G`` symmetric on the
    pattern (``G_jj = 2λ r``, ``G_jk = G_kj = λ r``). Cost ``O(|S|·d)``: ``W`` only
    on the pattern, and ``G L`` as a sparse–dense product with ``G``'s CSR
    structure built once per problem — an evaluation only refills its values
    (building it anew cost more than the arithmetic). ``L`` lives in one buffer
    whose upper triangle stays zero, so an evaluation only scatters ``v`` into
    it, and ``G L`` is read back through flat indices. Timings: docs/solvers.md.

    Its arrays are preallocated, and ``G L`` calls the kernel ``G @ L`` calls
    (SciPy's ``csr_matvecs``) without the operator's dispatch, which cost about a
    tenth of an evaluation: every value is the one the plain expressions give, bit
    for bit (tests/test_ipm_evaluation.py compares them).
    """

    def __init__(self, p: Problem) -> None:
        d = self.d = p.d
        self.tril = np.tril_indices(d)
        self.diag_pos = np.flatnonzero(self.tril[0] == self.tril[1])
        self.rows, self.cols, self.w, self.t = p.rows, p.cols, p.weights, p.targets
        self.off = self.rows != self.cols
        tgt = np.concatenate([self.rows, self.cols[self.off]])
        src = np.concatenate([self.cols, self.rows[self.off]])
        which = np.concatenate([np.arange(self.rows.size), np.flatnonzero(self.off)])
        order = np.argsort(tgt, kind="stable")
        self.which = which[order]  # G's stored values, row by row, as indices into the pattern
        indptr = np.append(np.searchsorted(tgt[order], np.arange(d)), tgt.size)
        self.G = csr_matrix((np.zeros(tgt.size), src[order], indptr), shape=(d, d))
        self.flat_tril = self.tril[0] * d + self.tril[1]
        self.grad_weight = np.where(self.off, self.w, 2.0 * self.w)
        self._L = np.zeros((d, d))
        self._GL = np.zeros((d, d))
        self._L_rows, self._L_cols = np.empty((self.rows.size, d)), np.empty((self.rows.size, d))
        self._G_data = np.empty(self.which.size)

    def unpack(self, v: np.ndarray) -> np.ndarray:
        L = np.zeros((self.d, self.d))
        L[self.tril] = v
        return L

    def _times_L(self, data: np.ndarray, L: np.ndarray) -> np.ndarray:
        """``G L`` for ``G``'s stored values ``data``."""
        if _csr_matvecs is None or self.d == 1:  # (d = 1: the operator takes its one-vector path)
            self.G.data = data
            return self.G @ L
        GL = self._GL
        GL.fill(0.0)  # the kernel adds to it
        _csr_matvecs(self.d, self.d, self.d, self.G.indptr, self.G.indices, data, L.ravel(), GL.ravel())
        return GL

    def __call__(self, v: np.ndarray, mu: float) -> tuple[float, np.ndarray]:
        L = self._L
        L.ravel()[self.flat_tril] = v
        # (mode="clip": the indices are in range, and take's default mode copies through a buffer)
        L_rows = np.take(L, self.rows, axis=0, out=self._L_rows, mode="clip")
        L_cols = np.take(L, self.cols, axis=0, out=self._L_cols, mode="clip")
        r = np.einsum("ij,ij->i", L_rows, L_cols) - self.t
        data = np.take(self.grad_weight * r, self.which, out=self._G_data, mode="clip")
        gv = 2.0 * self._times_L(data, L).ravel()[self.flat_tril]
        ldiag = v[self.diag_pos]
        # np.add.reduce is np.sum's own reduction, without its wrapper
        f = float(np.add.reduce(self.w * r * r)) - 2.0 * mu * float(np.add.reduce(np.log(ldiag)))
        gv[self.diag_pos] -= 2.0 * mu / ldiag
        return f / mu, gv / mu


def solve_ipm(
    p: Problem,
    *,
    init=None,
    mu0: float = DEFAULTS["mu0"],
    mu_min: float = DEFAULTS["mu_min"],
    mu_factor: float = DEFAULTS["mu_factor"],
    stage_maxiter: int = DEFAULTS["stage_maxiter"],
    maxiter: int = DEFAULTS["maxiter"],
    stage_ftol: float = DEFAULTS["stage_ftol"],
    final_ftol: float = DEFAULTS["final_ftol"],
    stage_gtol: float = DEFAULTS["stage_gtol"],
    final_gtol: float = DEFAULTS["final_gtol"],
    maxcor: int = DEFAULTS["maxcor"],
    warm_start: bool = DEFAULTS["warm_start"],
    warm_mu0: float | None = DEFAULTS["warm_mu0"],
    preset: str | None = None,
) -> BlockSolution:
    """Solve one block by IPM-Cholesky; see the module docstring.

    Parameters
    ----------
    p : Problem
        The block, normalised.
    init : list of (ndarray, IPMState), optional
        Earlier blocks inside this one (their local indices and final state);
        used only with ``warm_start``.
    mu0, mu_min, mu_factor : float
        The continuation ``μ_0 > c μ_0 > … ≥ μ_min`` of a cold solve.
    stage_maxiter, stage_ftol, stage_gtol : int, float, float
        Iteration cap, L-BFGS-B relative-reduction tolerance and projected-gradient
        tolerance (on ``φ_μ/μ``) of each μ-stage but the last.
    maxiter, final_ftol, final_gtol : int, float, float
        The same for the last stage.
    maxcor : int
        L-BFGS-B's number of correction pairs.
    warm_start : bool
        Start from ``init``'s factors when there are any, with the continuation
        from ``warm_mu0`` (``None``: ``μ_min`` alone) down to ``μ_min``.
    preset : {"warm", "tight"}, optional
        A row of :data:`PRESETS` whose values replace the options it names.

    Returns
    -------
    BlockSolution
        ``W`` in normalised units, the final ``IPMState`` and ``μ``, the
        iterations, and whether no stage ended at its cap.
    """
    if preset is not None:
        if preset not in PRESETS:
            raise ValueError(f"unknown IPM preset {preset!r}; choose one of {sorted(PRESETS)}")
        named = PRESETS[preset]
        mu_min, warm_start, warm_mu0 = named["mu_min"], named["warm_start"], named["warm_mu0"]
        stage_maxiter, maxiter, stage_ftol, final_ftol, stage_gtol, final_gtol = (
            named[k] for k in ("stage_maxiter", "maxiter", "stage_ftol", "final_ftol", "stage_gtol", "final_gtol"))
    objective = _ScaledBarrier(p)
    stages = dict(stage_maxiter=stage_maxiter, maxiter=maxiter, stage_ftol=stage_ftol, final_ftol=final_ftol,
                  stage_gtol=stage_gtol, final_gtol=final_gtol, maxcor=maxcor)
    L0 = _assemble_warm_start(p, init, mu_min) if warm_start else None
    n_warm = 0
    if L0 is not None:
        mus = mu_schedule(mu_min if warm_mu0 is None else max(warm_mu0, mu_min), mu_min, mu_factor)
        v, n_warm, capped = _continuation(objective, L0[objective.tril], mus, **stages)
        if v[objective.diag_pos].min() > _COLLAPSED:
            L = objective.unpack(v)
            return BlockSolution(W=L @ L.T, state=IPMState(L, p.scale), mu=mus[-1], n_iter=n_warm,
                                 converged=not capped)
        # A warm start far from the new answer can send L-BFGS-B's first step onto
        # the diagonal's bound, where the weak small-μ barrier no longer pulls it
        # back: start again from the cold continuation.
    mus = mu_schedule(mu0, mu_min, mu_factor)
    L0 = np.diag(np.sqrt(diagonal_barrier_solution(p, mus[0])))
    v, n_iter, capped = _continuation(objective, L0[objective.tril], mus, **stages)
    L = objective.unpack(v)
    return BlockSolution(W=L @ L.T, state=IPMState(L, p.scale), mu=mus[-1], n_iter=n_warm + n_iter,
                         converged=not capped)


def _continuation(objective: _ScaledBarrier, v: np.ndarray, mus: list[float], *, stage_maxiter: int, maxiter: int,
                  stage_ftol: float, final_ftol: float, stage_gtol: float, final_gtol: float,
                  maxcor: int) -> tuple[np.ndarray, int, bool]:
    """Minimise ``φ_μ/μ`` for each ``μ`` of ``mus`` in turn from ``v``; returns the
    last minimiser, the iterations and whether a stage ended at its cap."""
    # Imported here: it loads scipy.optimize, which dominates ``import paceggm``.
    from paceggm.reconstruction._lbfgsb import minimize_lbfgsb

    v = v.copy()
    lower = np.full(v.size, -np.inf)
    lower[objective.diag_pos] = _DIAG_FLOOR
    n_iter = 0
    capped = False
    for stage, mu in enumerate(mus):
        last = stage == len(mus) - 1
        cap = maxiter if last else stage_maxiter
        v, nit = minimize_lbfgsb(
            lambda x, mu=mu: objective(x, mu),
            v,
            lower=lower,
            maxcor=maxcor,
            ftol=final_ftol if last else stage_ftol,
            gtol=final_gtol if last else stage_gtol,
            maxiter=cap,
            maxfun=2 * cap,
        )
        n_iter += nit
        capped = capped or nit >= cap
    return v, n_iter, capped

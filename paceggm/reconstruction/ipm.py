"""IPM-Cholesky: the published reference solver (README, *Reconstruction and its solvers*).

``W = L Lᵀ`` with ``L`` lower triangular, ``L_jj > 0``. For a geometric
sequence ``μ_0 > μ_1 > … ≥ μ_min`` the barrier objective
``φ_μ(L) = L(LLᵀ) − 2μ Σ_j log L_jj`` is minimised by L-BFGS-B (bounds on the
diagonal), each stage warm-started from the previous one.

Choices the publication leaves open (all in normalised units, see
:mod:`paceggm.reconstruction.problem`); the measurements behind them are in
REPRODUCTION.md, *How the solvers' settings were chosen*:

* ``μ_0 = 1e-1``, ``c_μ = 0.1``, ``μ_min = 1e-8`` — eight stages: close to the
  μ → 0 limit, and above the ~1e-10 below which a non-completable ``y`` cannot be
  resolved in double precision.
* Each stage minimises ``φ_μ / μ`` rather than ``φ_μ``: same minimiser, but
  L-BFGS-B's relative-reduction stop would otherwise end the small-μ stages
  after a few iterations.
* Tolerances: L-BFGS-B's relative-reduction test ``ftol = 1e-12`` in the
  intermediate stages and ``1e-15`` in the last, ``gtol = 1e-8`` throughout. At
  small μ the scaled objective has curvature ~1/μ on the measured entries and
  O(1) elsewhere, so this first-order method stalls rather than converges
  (~1e-3 relative error on hard instances): it is the faithful reference, not an
  exact solver.
* Iteration caps: 5,000 per intermediate stage, 7,500 in the last. On the large
  blocks of a PACE-GGM run the small-μ stages end at their cap, so the caps set
  the cost; a higher last cap buys almost nothing because that stage stalls.
  ``maxfun`` is set to twice the cap so that iterations, not evaluations, bind.
* ``maxcor = 5`` correction pairs: L-BFGS-B's own ``O(m² n)`` subspace step
  (``n = d(d+1)/2``) dominates at ``d ≈ 60–100`` with more, for no gain in accuracy.
* L-BFGS-B is SciPy's routine driven directly (:mod:`._lbfgsb`), not through
  ``minimize``: the same iterates without the wrapper's per-iteration cost.

When ``y`` is not PSD-completable the limit does not exist in floating point and
the estimate is the barrier solution at ``μ_min``.
"""

from __future__ import annotations

import numpy as np
from scipy.sparse import csr_matrix

from paceggm.reconstruction.problem import Problem, diagonal_barrier_solution, mu_schedule
from paceggm.reconstruction.result import BlockSolution

#: Named stopping settings (``preset=``). ``"tight"``, the default, is the one
#: measured in the notes above; the six options let a caller trade accuracy for
#: time. ``stage_gtol``/``final_gtol`` bound the projected gradient of the scaled
#: stage objective ``φ_μ/μ``, i.e. ``‖∇φ_μ‖∞ ≤ gtol·μ`` (a centrality test).
#: Coarser stopping was measured and rejected for the default (REPRODUCTION.md §11,
#: "Stopping rule of the first-order reference solvers"): on communities_crime at
#: ρ = 10 it doubles the Mahalanobis error of whole runs.
PRESETS = {
    "tight": dict(stage_maxiter=5000, maxiter=7500, stage_ftol=1e-12, final_ftol=1e-15, stage_gtol=1e-8,
                  final_gtol=1e-8),
}
DEFAULTS = dict(mu0=1e-1, mu_min=1e-8, mu_factor=0.1, maxcor=5, **PRESETS["tight"])
# Smallest value L-BFGS-B may give a diagonal entry of L (normalised units): the
# barrier keeps it far above this at every μ we use, it only keeps log finite.
_DIAG_FLOOR = 1e-30


class _ScaledBarrier:
    """``φ_μ(L)/μ`` and its gradient over the lower triangle ``v`` of ``L``.

    ``φ_μ(L) = Σ_S λ (W_jk − y_jk)² − 2μ Σ_j log L_jj`` with ``W = LLᵀ``, whose
    gradient is ``2 G L − 2μ/L_jj`` on the diagonal, ``G`` symmetric on the
    pattern (``G_jj = 2λ r``, ``G_jk = G_kj = λ r``). Cost ``O(|S|·d)``: ``W`` only
    on the pattern, and ``G L`` as a sparse–dense product with ``G``'s CSR
    structure built once per problem — an evaluation only refills its values
    (building it anew cost more than the arithmetic). ``L`` lives in one buffer
    whose upper triangle stays zero, so an evaluation only scatters ``v`` into
    it, and ``G L`` is read back through flat indices. Timings: REPRODUCTION.md,
    *How the solvers' settings were chosen*.
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

    def unpack(self, v: np.ndarray) -> np.ndarray:
        L = np.zeros((self.d, self.d))
        L[self.tril] = v
        return L

    def __call__(self, v: np.ndarray, mu: float) -> tuple[float, np.ndarray]:
        L = self._L
        L.ravel()[self.flat_tril] = v
        r = np.einsum("ij,ij->i", L[self.rows], L[self.cols]) - self.t
        self.G.data = (self.grad_weight * r)[self.which]
        gv = 2.0 * (self.G @ L).ravel()[self.flat_tril]
        ldiag = v[self.diag_pos]
        f = float(np.sum(self.w * r * r)) - 2.0 * mu * float(np.sum(np.log(ldiag)))
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
    preset: str | None = None,
) -> BlockSolution:
    """Solve one block by IPM-Cholesky; see the module docstring.

    ``stage_maxiter``, ``stage_ftol`` and ``stage_gtol`` are the iteration cap,
    L-BFGS-B relative-reduction tolerance and projected-gradient tolerance (on
    ``φ_μ/μ``) of each μ-stage but the last; ``maxiter``, ``final_ftol`` and
    ``final_gtol`` those of the last. ``preset`` names a row of :data:`PRESETS`
    whose values replace these six options (``"tight"``: the, equal to the defaults).
    """
    if preset is not None:
        if preset not in PRESETS:
            raise ValueError(f"unknown IPM preset {preset!r}; choose one of {sorted(PRESETS)}")
        stage_maxiter, maxiter, stage_ftol, final_ftol, stage_gtol, final_gtol = (
            PRESETS[preset][k] for k in ("stage_maxiter", "maxiter", "stage_ftol", "final_ftol", "stage_gtol",
                                         "final_gtol"))
    # Imported here: it loads scipy.optimize, which dominates ``import paceggm``.
    from paceggm.reconstruction._lbfgsb import minimize_lbfgsb

    d = p.d
    mus = mu_schedule(mu0, mu_min, mu_factor)
    objective = _ScaledBarrier(p)
    tril, diag_pos = objective.tril, objective.diag_pos
    L0 = init if init is not None and init.shape == (d, d) else np.diag(np.sqrt(diagonal_barrier_solution(p, mus[0])))
    v = L0[tril].copy()
    lower = np.full(v.size, -np.inf)
    lower[diag_pos] = _DIAG_FLOOR
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
    L = objective.unpack(v)
    return BlockSolution(W=L @ L.T, state=L, mu=mus[-1], n_iter=n_iter, converged=not capped)

"""``solver="auto"``, the default: each block to the exact solver measured fastest for it.

The candidates are the exact Newton paths, which return the same answers to
the exact solvers' tolerance:

* :mod:`.newton_pcg` on the CPU: at least as fast as :mod:`.newton`, the
  reference, on every block size measured, and up to 10x faster on large ones
  (docs/scale.md, docs/gpu.md), so the CPU choice is it for blocks of every size;
* :mod:`.newton_xp` on an array backend (a GPU), when one is given: dense
  ``d³`` and ``|S|³`` kernels at GPU speed, for blocks of at least
  ``backend_min_d`` variables, where a GPU Newton step beats the CPU's
  (below, its launch and transfer latency dominates; see
  ``studies.gpu_bench`` for the measurement and
  ``figures/tables/gpu_bench.md`` for its results on one H100).
"""

from __future__ import annotations

from paceggm.reconstruction.newton import DEFAULTS
from paceggm.reconstruction.newton_pcg import solve_newton_pcg
from paceggm.reconstruction.newton_xp import solve_newton_xp
from paceggm.reconstruction.problem import Problem
from paceggm.reconstruction.result import BlockSolution

#: Blocks of at least this many variables go to the backend, when one is given: from there a GPU
#: Newton step beats one CPU core by enough to cover the copies of a block's first step (docs/gpu.md).
BACKEND_MIN_D = 200


def solve_auto(
    p: Problem,
    *,
    init=None,
    mu0: float = DEFAULTS["mu0"],
    mu_min: float = DEFAULTS["mu_min"],
    mu_factor: float = DEFAULTS["mu_factor"],
    tol: float = DEFAULTS["tol"],
    max_newton: int = DEFAULTS["max_newton"],
    exact_limit: bool = DEFAULTS["exact_limit"],
    backend: str | None = None,
    backend_min_d: int = BACKEND_MIN_D,
) -> BlockSolution:
    """Solve one block with the exact solver chosen for its size (see the module docstring).

    Parameters
    ----------
    p, init, mu0, mu_min, mu_factor, tol, max_newton, exact_limit
        As for :func:`~paceggm.reconstruction.newton.solve_newton`.
    backend : str or None
        An array backend (:data:`paceggm.reconstruction.backend.BACKENDS`,
        e.g. ``"torch"`` for the GPU) for the large blocks; None: CPU only.
    backend_min_d : int
        Variables from which a block goes to ``backend``.
    """
    options = dict(mu0=mu0, mu_min=mu_min, mu_factor=mu_factor, tol=tol, max_newton=max_newton,
                   exact_limit=exact_limit)
    if backend is not None and p.d >= backend_min_d:
        return solve_newton_xp(p, init=init, backend=backend, **options)
    return solve_newton_pcg(p, init=init, **options)

"""Maximum-entropy reconstruction of a covariance from noisy entries (docs/design.md, *Reconstruction and its solvers*).

One entry point, :func:`reconstruct`, in front of interchangeable solvers:

``"auto"`` (default)
    Each block to the exact Newton path measured fastest for it (:mod:`.auto`):
    ``"newton_pcg"`` on the CPU, ``"newton_xp"`` on a GPU for large blocks when
    ``solver_options={"backend": "torch"}`` (or ``"cupy"``) is given.
``"newton"`` (the reference)
    Damped Newton on the ``|S|`` free entries of the sparse precision with μ
    continuation and a final exact μ = 0 stage (:mod:`.newton`): the max-entropy
    completion to machine-level accuracy, warm-started across PACE-GGM rounds.
``"newton_pcg"``
    The same Newton iterations with the Newton systems of warm-started stages
    solved by conjugate gradients, preconditioned by an earlier Hessian
    factorisation (:mod:`.newton_pcg`): far fewer ``|S|³`` factorisations when
    one component holds most variables.
``"newton_chordal"``
    The same Newton iterations on a chordal embedding of the pattern
    (:mod:`.newton_chordal`): sparse Cholesky factors, projected inverses and
    Hessian products through the clique tree, for sparse patterns on many variables.
``"newton_xp"``
    The reference's iterations with the dense kernels on an array backend
    (:mod:`.newton_xp`, :mod:`.backend`): NumPy, torch or CuPy, a GPU when there is one.
``"ipm"``
    IPM-Cholesky, the published reference (:mod:`.ipm`): first-order, it stalls at
    small μ; by default each PACE-GGM round continues from the previous round's
    factors with a fixed iteration budget per μ-stage (``preset="tight"``: the
    whole continuation every solve).
``"pgd0"``, ``"pgd1"``
    Projected gradient with unmeasured entries started at 0 or 1 (:mod:`.pgd`):
    a minimiser of the loss, not the max-entropy one.

Solvers receive each connected component of the measured pattern separately
(or the whole matrix when ``use_components=False``), in normalised units.
"""

from __future__ import annotations

import inspect
import time
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from paceggm._validation import check_choice
from paceggm.reconstruction.auto import solve_auto
from paceggm.reconstruction.blocks import solve_block, unchanged
from paceggm.reconstruction.components import pattern_components
from paceggm.reconstruction.ipm import solve_ipm
from paceggm.reconstruction.newton import NewtonState, solve_newton
from paceggm.reconstruction.newton_chordal import solve_newton_chordal
from paceggm.reconstruction.newton_pcg import solve_newton_pcg
from paceggm.reconstruction.newton_xp import solve_newton_xp
from paceggm.reconstruction.pgd import solve_pgd
from paceggm.reconstruction.problem import Problem
from paceggm.reconstruction.result import BlockSolution, Reconstruction

__all__ = [
    "DEFAULT_SOLVER",
    "SOLVERS",
    "BlockSolution",
    "NewtonState",
    "Problem",
    "Reconstruction",
    "SolverSpec",
    "check_solver",
    "pattern_components",
    "reconstruct",
    "register_solver",
    "solver_defaults",
]


@dataclass(frozen=True)
class SolverSpec:
    """A registered solver: ``solve(problem, *, init, **options) -> BlockSolution``.

    ``max_entropy`` says whether it returns the maximum-entropy completion
    (then components on/off give the same answer); ``warm_start`` whether it
    uses ``init``, a list of ``(local_indices, state)`` from earlier blocks.
    """

    solve: Callable[..., BlockSolution]
    max_entropy: bool
    warm_start: bool = False


#: The solver PACE-GGM and :func:`reconstruct` use unless told otherwise.
DEFAULT_SOLVER = "auto"

SOLVERS: dict[str, SolverSpec] = {
    "newton": SolverSpec(solve_newton, max_entropy=True, warm_start=True),
    "newton_pcg": SolverSpec(solve_newton_pcg, max_entropy=True, warm_start=True),
    "newton_chordal": SolverSpec(solve_newton_chordal, max_entropy=True, warm_start=True),
    "newton_xp": SolverSpec(solve_newton_xp, max_entropy=True, warm_start=True),
    "auto": SolverSpec(solve_auto, max_entropy=True, warm_start=True),
    "ipm": SolverSpec(solve_ipm, max_entropy=True, warm_start=True),
    "pgd0": SolverSpec(partial(solve_pgd, init_value=0.0), max_entropy=False),
    "pgd1": SolverSpec(partial(solve_pgd, init_value=1.0), max_entropy=False),
}


def register_solver(name: str, spec: SolverSpec) -> None:
    """Make a solver available under ``name`` (to PACE-GGM and the harness)."""
    SOLVERS[name] = spec


def solver_defaults() -> dict[str, dict]:
    """Every registered solver's default options: what it computes with unless told otherwise.

    The benchmark harness stores this with a run, so that a sweep is not resumed
    across a change of, say, a tolerance (its cells would not be comparable).
    """
    out = {}
    for name, spec in SOLVERS.items():
        params = inspect.signature(spec.solve).parameters.values()
        out[name] = {p.name: p.default if isinstance(p.default, (bool, int, float, str, type(None))) else repr(p.default)
                     for p in params if p.default is not inspect.Parameter.empty and p.name != "init"}
    return out


def check_solver(solver, solver_options=None) -> SolverSpec:
    """The registered spec of ``solver``, after refusing an unknown name or options it does not take.

    The one check of a solver name: :func:`reconstruct`, :class:`.IncrementalReconstruction`
    and PACE-GGM's settings (:class:`paceggm.settings.PACEGGMSettings`) call it.
    """
    check_choice(solver, SOLVERS, "solver")
    if solver_options is None:
        return SOLVERS[solver]
    if not isinstance(solver_options, Mapping):
        raise TypeError(
            f"solver_options must be a dict of keyword options or None, got {type(solver_options).__name__}"
        )
    valid = solver_defaults()[solver]
    unknown = sorted(set(solver_options) - set(valid))
    if unknown:
        raise ValueError(f"solver {solver!r} has no option(s) {unknown}; its options are {sorted(valid)}")
    return SOLVERS[solver]


def _check_inputs(y, lam) -> tuple[np.ndarray, np.ndarray]:
    y = np.asarray(y, dtype=float)
    lam = np.asarray(lam, dtype=float)
    if y.ndim != 2 or y.shape[0] != y.shape[1] or lam.shape != y.shape:
        raise ValueError(f"y and lam must be square arrays of one shape, got {y.shape} and {lam.shape}")
    if not (np.all(np.isfinite(y)) and np.all(np.isfinite(lam))):
        raise ValueError("y and lam must be finite")
    if np.any(lam < 0):
        raise ValueError("precisions lam must be >= 0")
    if not (np.array_equal(lam, lam.T) and np.array_equal(y, y.T)):
        raise ValueError("y and lam must be symmetric")
    if np.any(np.diag(lam) <= 0):
        raise ValueError("every diagonal entry must be measured (lam_jj > 0)")
    return y, lam


def reconstruct(
    y,
    lam,
    *,
    solver: str = DEFAULT_SOLVER,
    use_components: bool = True,
    previous: Reconstruction | None = None,
    solver_options: dict | None = None,
) -> Reconstruction:
    """Max-entropy covariance from precision-weighted measurements.

    Parameters
    ----------
    y : array_like of shape (d, d)
        Symmetric matrix of measured values (ignored where ``lam == 0``).
    lam : array_like of shape (d, d)
        Symmetric precisions; 0 marks an unmeasured entry. Every diagonal
        entry must be measured.
    solver : str
        A key of :data:`SOLVERS`.
    use_components : bool
        Solve each connected component of the pattern separately. Components
        with a single index get the closed form ``max(y_jj, 0)`` (the μ → 0 limit).
        Where the μ → 0 limit exists (``y`` PSD-completable) on and off give the
        same answer (Newton: to 1e-10). Otherwise the estimate is the barrier
        solution at ``μ_min`` in each block's own unit ``s²λ̄``, so on and off
        differ by the effect of that μ (up to ~1e-5 relative in the tests).
    previous : Reconstruction, optional
        An earlier result of the same solver: blocks whose measurements did not
        change are reused as they are, and warm-starting solvers start from it.
    solver_options : dict, optional
        Keyword options of the solver (for example ``mu_min`` for ``"newton"``
        and ``"ipm"``).

    Returns
    -------
    Reconstruction

    Examples
    --------
    >>> import numpy as np
    >>> y = np.array([[1.0, 0.5], [0.5, 1.0]])
    >>> rec = reconstruct(y, np.ones((2, 2)))
    >>> bool(np.allclose(rec.covariance, y, atol=1e-4))
    True
    """
    spec = check_solver(solver, solver_options)
    y, lam = _check_inputs(y, lam)
    options = dict(solver_options or {})
    d = y.shape[0]
    comps = pattern_components(lam > 0) if use_components else [np.arange(d)]
    reusable = previous.blocks if (previous is not None and previous.solver == solver) else {}
    cov = np.zeros((d, d))
    blocks: dict = {}
    mus: list[float] = []
    n_solved = n_iter = n_capped = max_iter = 0
    t0 = time.perf_counter()
    for idx in comps:
        ix = np.ix_(idx, idx)
        if idx.size == 1 and use_components:
            cov[ix] = max(y[ix].item(), 0.0)
            continue
        y_b, lam_b = y[ix], lam[ix]
        key = tuple(int(i) for i in idx)
        block = reusable.get(key)
        if not unchanged(block, y_b, lam_b):
            init = _warm_start(idx, reusable) if spec.warm_start else None
            block = solve_block(y_b, lam_b, solve=spec.solve, init=init, options=options)
            n_solved += 1
            n_iter += block["n_iter"]
            n_capped += not block["converged"]
            max_iter = max(max_iter, block["n_iter"])
        blocks[key] = block
        cov[ix] = block["W"]
        if block["mu"] is not None:
            mus.append(block["mu"])
    solve_time = time.perf_counter() - t0
    converged = all(b.get("converged", True) for b in blocks.values())
    if not converged:
        warn_unconverged(solver, stacklevel=3)
    return Reconstruction(
        covariance=0.5 * (cov + cov.T),
        solver=solver,
        components=comps,
        solve_time=solve_time,
        mu=max(mus) if mus else None,
        n_solved=n_solved,
        blocks=blocks,
        n_iter=n_iter,
        converged=converged,
        n_capped=n_capped,
        max_iter=max_iter,
    )


def warn_unconverged(solver: str, *, stacklevel: int = 2) -> None:
    """The warning of a reconstruction with at least one block that did not converge."""
    warnings.warn(
        f"solver {solver!r} stopped before converging on at least one block (an iteration cap was hit, "
        "or a continuation stage failed); raise its caps through solver_options",
        ConvergenceWarning, stacklevel=stacklevel + 1,
    )


def _warm_start(idx: np.ndarray, previous_blocks: dict) -> list:
    """Earlier blocks lying inside ``idx``, as ``(local_indices, state)`` pairs."""
    position = {int(g): i for i, g in enumerate(idx)}
    out = []
    for key, block in previous_blocks.items():
        if block["state"] is not None and all(g in position for g in key):
            out.append((np.array([position[g] for g in key]), block["state"]))
    return out

"""``solver="auto"``, the default: each block to the exact solver measured fastest for it.

The candidates are the exact Newton paths, which return the same answers to
the exact solvers' tolerance:

* :mod:`.newton_pcg` on the CPU: at least as fast as :mod:`.newton`, the
  reference, on every block size measured, and up to 10x faster on large ones
  (docs/scale.md, docs/gpu.md);
* :mod:`.newton_chordal` on the CPU for large blocks whose pattern is sparse
  *and* whose rounds make :mod:`.newton_pcg` work (the cost model below);
* :mod:`.newton_xp` on an array backend (a GPU), when one is given: dense
  ``d³`` and ``|S|³`` kernels at GPU speed, for blocks of at least
  ``backend_min_d`` variables, where a GPU Newton step beats the CPU's
  (below, its launch and transfer latency dominates; see
  ``studies.gpu_bench`` for the measurement and
  ``figures/tables/gpu_bench.md`` for its results on one H100).

The CPU cost model, in dense Choleskys of the block's ``d`` (docs/solvers.md,
*The chordal path*, has the measurements). Every Newton iteration of
:mod:`.newton_pcg` factors and inverts the dense ``P`` (about 3 Choleskys) and
its Hessian products read all of ``W``; :mod:`.newton_chordal` does that dense
work once a solve (the answer ``W`` the caller needs), the rest on the chordal
embedding ``E`` of the pattern, which costs about the fraction of ``E`` in a dense
triangle. So a block goes to the chordal path when

* it has at least :data:`CHORDAL_MIN_D` variables,
* its embedding holds at most :data:`CHORDAL_MAX_FILL` of a dense triangle's entries, and
* it is solved cold, or :mod:`.newton_pcg`'s last solve of it took at least
  :data:`CHORDAL_MIN_ITER` Newton iterations (rounds that :mod:`.newton_pcg`
  ends in one iteration, from its low-rank local start, cost it no more than the
  chordal path's one dense inverse), or the chordal path solved it last.

The embedding is computed only for a block that passes the first test and whose
last solve made :mod:`.newton_pcg` work, and is kept in the block's state
(:class:`.newton_chordal.ChordalNewtonState`, which :mod:`.newton_pcg` warm-starts
from as from its own), so later rounds do not redo it while the pattern stays inside.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from paceggm.reconstruction.newton import DEFAULTS, covers_all
from paceggm.reconstruction.newton_chordal import ChordalNewtonState, Embedding, embedding_of, solve_newton_chordal
from paceggm.reconstruction.newton_pcg import PCGNewtonState, solve_newton_pcg
from paceggm.reconstruction.newton_xp import solve_newton_xp
from paceggm.reconstruction.problem import Problem
from paceggm.reconstruction.result import BlockSolution

#: Blocks of at least this many variables go to the backend, when one is given: from there a GPU
#: Newton step beats one CPU core by enough to cover the copies of a block's first step (docs/gpu.md).
BACKEND_MIN_D = 200
#: Blocks below this many variables stay dense: there a dense Cholesky costs less than CHOMPACK's
#: per-supernode overhead on the embedding (docs/solvers.md, *The chordal path*).
CHORDAL_MIN_D = 500
#: The largest fraction of a dense triangle's entries the embedding's factor may hold for the chordal path.
CHORDAL_MAX_FILL = 0.05
#: Newton iterations of newton_pcg's last solve of a block from which the chordal path is cheaper.
CHORDAL_MIN_ITER = 2


def _previous(p: Problem, init):
    """The state of the one earlier block that covered this one, if so."""
    if init and len(init) == 1 and covers_all(np.asarray(init[0][0]), p.d):
        return init[0][1]
    return None


def _sparse_enough(emb: Embedding, d: int) -> bool:
    return emb.entries <= CHORDAL_MAX_FILL * d * (d + 1) / 2


def choose_cpu(p: Problem, init) -> tuple[str, Embedding | None]:
    """``(solver, embedding)``: the CPU solver the cost model picks for the block, and its embedding if measured."""
    d = p.d
    if d < CHORDAL_MIN_D or p.rows.size > CHORDAL_MAX_FILL * d * (d + 1) / 2:
        return "newton_pcg", None  # small, or denser than any embedding the chordal path takes
    state = _previous(p, init)
    kept = emb = getattr(state, "embedding", None)
    if emb is not None and emb.d == d and emb.locate(p.rows, p.cols) is None:
        emb = None  # the pattern has left it (extended in its order below, if need be)
    chordal_last = isinstance(state, ChordalNewtonState) and state.entries is not None
    pcg_worked = isinstance(state, ChordalNewtonState) and state.n_iter >= CHORDAL_MIN_ITER
    if state is not None and not (chordal_last or pcg_worked):
        return "newton_pcg", None  # newton_pcg's rounds here are cheap: no embedding needed
    if emb is None:
        emb = embedding_of(p, kept)
    return ("newton_chordal" if _sparse_enough(emb, d) else "newton_pcg"), emb


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
    """Solve one block with the exact solver chosen for it (see the module docstring).

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
    solver, emb = choose_cpu(p, init)
    if solver == "newton_chordal":
        state = _previous(p, init)
        if emb is not None and isinstance(state, PCGNewtonState):
            # Hand over the embedding just measured, so the solve does not analyse the pattern again.
            if not isinstance(state, ChordalNewtonState):
                state = ChordalNewtonState(**{f.name: getattr(state, f.name) for f in dataclasses.fields(state)})
            init = [(init[0][0], dataclasses.replace(state, embedding=emb))]
        return solve_newton_chordal(p, init=init, **options)
    sol = solve_newton_pcg(p, init=init, **options)
    if p.d >= CHORDAL_MIN_D and isinstance(sol.state, PCGNewtonState):
        # What the next round's choice reads: this solve's Newton iterations and the embedding, if measured.
        fields = {f.name: getattr(sol.state, f.name) for f in dataclasses.fields(sol.state)}
        state = ChordalNewtonState(**fields, embedding=emb, n_iter=sol.n_iter)
        sol = dataclasses.replace(sol, state=state)
    return sol

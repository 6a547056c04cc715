"""Round-by-round reconstruction: same answers as reconstructing from scratch, less work."""

from __future__ import annotations

import numpy as np
import pytest

from paceggm.measurement import MeasuredEntries, Measurement
from paceggm.reconstruction import NewtonState, reconstruct
from paceggm.reconstruction.incremental import IncrementalReconstruction
from paceggm.reconstruction.newton import solve_newton
from paceggm.reconstruction.newton_pcg import solve_newton_pcg
from paceggm.reconstruction.problem import make_problem

from reference_outputs import RTOL, compute, relative_difference
from reference_outputs import load as load_recording


def _entries(d: int, n: int, rng: np.random.Generator):
    """A measurement sequence: the diagonal, then ``n`` random lower entries (repeats and diagonal included)."""
    A = rng.normal(size=(d, d + 3))
    sigma = A @ A.T / (d + 3)
    diag = [Measurement((j, j), sigma[j, j] + rng.normal(scale=0.05), 0.05, 1.0) for j in range(d)]
    rest = []
    for _ in range(n):
        j, k = sorted(rng.integers(0, d, size=2), reverse=True)
        rest.append(Measurement((int(j), int(k)), sigma[j, k] + rng.normal(scale=0.05), 0.05, 1.0))
    return diag, rest


@pytest.mark.parametrize("solver", ["newton", "ipm", "pgd0"])
@pytest.mark.parametrize("use_components", [True, False])
def test_incremental_equals_reconstruct_bit_for_bit(solver, use_components):
    rng = np.random.default_rng(11)
    d = 9
    diag, rest = _entries(d, 14 if solver == "newton" else 5, rng)
    state = MeasuredEntries.from_measurements(d, diag)
    inc = IncrementalReconstruction(state.y, state.lam, solver=solver, use_components=use_components)
    previous = None
    for m in rest:
        state.add(m)
        inc.update(*m.entry)
        previous = reconstruct(state.y, state.lam, solver=solver, use_components=use_components, previous=previous)
        assert np.array_equal(inc.covariance, previous.covariance)
        if use_components:
            assert any(np.array_equal(inc.component(m.entry[0]), c) for c in previous.components)
    final = inc.result()
    assert final.mu == previous.mu
    assert sorted(final.blocks) == sorted(previous.blocks)
    # The records' measurements, kept up to date in place, are the blocks' own.
    for key, block in final.blocks.items():
        assert np.array_equal(block["y"], previous.blocks[key]["y"])
        assert np.array_equal(block["lam"], previous.blocks[key]["lam"])


def test_incremental_result_is_a_snapshot():
    # Later rounds update the records' measurements in place; a result taken
    # earlier must not see that.
    rng = np.random.default_rng(5)
    diag, rest = _entries(6, 10, rng)
    state = MeasuredEntries.from_measurements(6, diag)
    inc = IncrementalReconstruction(state.y, state.lam, use_components=False)  # one block, updated every round
    for m in rest[:5]:
        state.add(m)
        inc.update(*m.entry)
    early = inc.result()
    saved = {key: (b["y"].copy(), b["lam"].copy()) for key, b in early.blocks.items()}
    for m in rest[5:]:
        state.add(m)
        inc.update(*m.entry)
    for key, (y_b, lam_b) in saved.items():
        assert np.array_equal(early.blocks[key]["y"], y_b) and np.array_equal(early.blocks[key]["lam"], lam_b)


def test_incremental_failed_solve_keeps_the_block_it_had():
    # A solve that raises leaves the block's record (and so the next round's
    # starting point) exactly as it was; the round after re-solves from it.
    from paceggm.reconstruction import SOLVERS, SolverSpec, register_solver

    calls = {"n": 0, "fail_at": None}

    def flaky(p, *, init=None, **options):
        calls["n"] += 1
        if calls["n"] == calls["fail_at"]:
            raise FloatingPointError("solver failed on purpose")
        return solve_newton(p, init=init, **options)

    register_solver("flaky_newton", SolverSpec(flaky, max_entropy=True, warm_start=True))
    try:
        d = 5
        state = MeasuredEntries.from_measurements(d, [Measurement((j, j), 1.0, 0.1, 1.0) for j in range(d)])
        inc = IncrementalReconstruction(state.y, state.lam, solver="flaky_newton", use_components=False)
        for j, k in [(1, 0), (2, 1), (3, 2)]:
            state.add(Measurement((j, k), 0.3, 0.1, 1.0))
            inc.update(j, k)
        (before,) = inc.result().blocks.values()
        state.add(Measurement((4, 3), 0.2, 0.1, 1.0))
        calls["fail_at"] = calls["n"] + 1
        with pytest.raises(FloatingPointError):
            inc.update(4, 3)
        (after,) = inc.result().blocks.values()
        assert np.array_equal(after["y"], before["y"]) and np.array_equal(after["lam"], before["lam"])
        inc.update(4, 3)  # retried: the same answer as a solve from scratch
        expected = reconstruct(state.y, state.lam, solver="newton", use_components=False)
        np.testing.assert_allclose(inc.covariance, expected.covariance, rtol=1e-9, atol=1e-12)
    finally:
        SOLVERS.pop("flaky_newton")


def test_incremental_tracks_merging_components():
    d = 6
    state = MeasuredEntries.from_measurements(d, [Measurement((j, j), 1.0, 0.1, 1.0) for j in range(d)])
    inc = IncrementalReconstruction(state.y, state.lam)
    for j, k in [(1, 0), (3, 2), (5, 4), (2, 1)]:
        state.add(Measurement((j, k), 0.3, 0.1, 1.0))
        inc.update(j, k)
    assert inc.component(3).tolist() == [0, 1, 2, 3]
    assert inc.component(5).tolist() == [4, 5]
    assert [c.tolist() for c in inc.result().components] == [[0, 1, 2, 3], [4, 5]]
    # Untouched entries between components stay exactly zero.
    assert np.all(inc.covariance[np.ix_([0, 1, 2, 3], [4, 5])] == 0.0)


def test_incremental_refuses_off_diagonal_start_and_views():
    y, lam = np.eye(3), np.ones((3, 3))
    with pytest.raises(ValueError, match="diagonal alone"):
        IncrementalReconstruction(y, lam)
    with pytest.raises(TypeError, match="float arrays"):
        IncrementalReconstruction(np.eye(3, dtype=int), np.eye(3))


def test_pace_ggm_selections_unchanged():
    """The round loop's bookkeeping leaves the run as it was: these selections and
    this estimate come from the loop that reconstructed and scored the whole matrix
    every round. The solver is exact, so the path is the same on any machine and the
    estimate agrees within Newton's accuracy (``RTOL["newton"]``, derived in
    ``reference_outputs``); test_outputs_unchanged checks the same two runs bit for bit
    where what moves the last bits is as recorded."""
    expected = [(3, 0), (11, 0), (10, 2), (12, 2), (13, 2), (9, 3), (10, 4), (10, 8), (12, 9), (8, 6), (8, 0),
                (12, 0), (13, 3), (8, 4), (6, 2), (7, 4), (11, 9), (11, 7), (2, 1), (12, 4), (9, 8), (4, 1),
                (9, 7), (12, 11), (7, 6), (4, 2), (5, 2), (11, 3), (9, 9), (8, 7), (13, 11), (11, 8), (3, 0),
                (8, 4), (4, 2), (5, 0), (7, 4), (10, 1), (10, 8), (9, 3), (3, 2)]
    _, arrays = load_recording()
    for case in ("synthetic/pace_ggm_components", "synthetic/pace_ggm_one_block"):
        out, res = compute(case)
        assert [r.entry for r in res.history] == expected
        recorded = arrays[f"{case}:covariance"]
        assert relative_difference(res.covariance, recorded) <= RTOL["newton"]
        assert res.mu == 0.0


def test_warm_exact_start_skips_the_barrier_stage():
    """From an exact earlier answer, newton_pcg goes straight to the μ = 0 limit: the same
    answer as a cold solve, in fewer iterations than through the μ_min stage (which
    the reference solver keeps)."""
    rng = np.random.default_rng(5)
    d = 25
    A = rng.normal(size=(d, 2 * d))
    sigma = A @ A.T / (2 * d)
    pattern = np.eye(d, dtype=bool)
    for j in range(1, d):
        k = int(rng.integers(0, j))
        pattern[j, k] = pattern[k, j] = True
    y, lam = np.where(pattern, sigma, 0.0), pattern.astype(float)
    first = make_problem(y, lam, scale=1.0, lam_unit=1.0)
    old = solve_newton(first)
    assert old.mu == 0.0
    pattern[d - 1, 0] = pattern[0, d - 1] = True  # one more entry, as in a PACE-GGM round
    y2, lam2 = np.where(pattern, sigma, 0.0), pattern.astype(float)
    p = make_problem(y2, lam2, scale=1.0, lam_unit=1.0)
    cold = solve_newton(p)
    everything = np.arange(d)
    warm = solve_newton_pcg(p, init=[(everything, old.state)])
    through_barrier = solve_newton_pcg(p, init=[(everything, NewtonState(old.state.precision, 1.0, 1e-8))])
    reference = solve_newton(p, init=[(everything, old.state)])
    assert warm.mu == cold.mu == 0.0
    assert np.abs(warm.W - cold.W).max() <= 1e-10 * np.abs(cold.W).max()
    assert warm.n_iter < through_barrier.n_iter
    assert warm.n_iter < reference.n_iter


def test_library_modules_import_scipy_optimize_only_where_used():
    """scipy.optimize takes longer to import than the rest of the library; only the IPM
    solve and the CKS conversion need it, so no module imports it at its top level.
    (scikit-learn's base classes load it too, so ``import paceggm`` does not avoid it.)"""
    import ast
    from pathlib import Path

    import paceggm

    offenders = []
    for path in Path(paceggm.__file__).parent.rglob("*.py"):
        if "bench" in path.parts:
            continue
        for node in ast.parse(path.read_text()).body:  # top-level statements only
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            # _lbfgsb is SciPy's L-BFGS-B driver, itself imported only inside the IPM solve.
            if any(n.startswith("scipy.optimize") for n in names) and path.name != "_lbfgsb.py":
                offenders.append(path.name)
            if any(n.endswith("._lbfgsb") for n in names):
                offenders.append(path.name)
    assert not offenders, offenders

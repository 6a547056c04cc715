"""End-to-end sweeps: store, resume, failures, determinism across workers and backends, SIGKILL."""

from __future__ import annotations

import json
import os
import re
import signal
import time

import numpy as np
import pandas as pd
import pytest

from paceggm.bench.__main__ import main
from paceggm.bench.cells import expand
from paceggm.bench.collect import collect
from paceggm.bench.config import compose_config, to_plain
from paceggm.bench.execute import COLUMNS, _split
from paceggm.bench.runner import run_sweep, store_for
from paceggm.bench.schema import CLOCK_COLUMNS
from paceggm.bench.store import IncompatibleRunError

from bench_loaders import GATED, WORKER_PROCESSES, gate_env, harness_process

BASE = [
    "experiment=demo", "method=[paceggm]", "datasets=[syn1,syn2]", "rho=[0.1,1.0]", "trials=2",
    "preprocessing=paper", "loader=bench_loaders:small_loader", "progress=false", "backend.n_jobs=1",
]
TIMES = ["wall_time", "solve_time", *CLOCK_COLUMNS]  # the clocks and the load differ run to run


def _cfg(tmp_path, *overrides):
    return to_plain(compose_config([*BASE, f"runs_dir={tmp_path}", *overrides]))


def _never_load(name, **kw):
    raise AssertionError(f"data set {name} was loaded although every cell is finished")


def _table(cfg):
    df, report = collect(store_for(cfg), expected=expand(cfg))
    return df, report


def test_end_to_end_sweep_store_and_table(tmp_path):
    cfg = _cfg(tmp_path, "+method.paceggm.grid.solver=[ipm,pgd0]")
    summary = run_sweep(cfg)
    assert (summary.n_cells, summary.n_ok, summary.n_failed, summary.n_skipped) == (16, 16, 0, 0)
    assert "failures: 0" in summary.format()
    df, report = _table(cfg)
    assert len(df) == 16 and df["cell_key"].is_unique and not report.missing and not report.corrupt
    assert (df["status"] == "ok").all() and (df["experiment"] == "demo").all()
    assert set(df["variant"]) == {"paceggm[solver=ipm]", "paceggm[solver=pgd0]"}
    assert set(df["p_solver"]) == {"ipm", "pgd0"}  # parameters are columns of their own
    assert list(df.columns) == [*COLUMNS, "bound_check", "p_alpha", "p_beta", "p_solver", "p_use_components"]
    assert (df["bound_check"] == "waive").all()  # the policy each record states (paper preprocessing: waive)
    assert (df["rho_spent"] <= df["rho"] * (1 + 1e-12)).all()
    assert (df["n_measured_diag"] == df["d"]).all()
    assert (df["n_measured_offdiag"] <= df["d"] * (df["d"] - 1) // 2).all()
    assert (df["n_rounds"] >= 1).all()
    assert (df["solve_time"] <= df["wall_time"]).all() and (df["wall_time"] > 0).all()
    assert np.isfinite(df[["mahalanobis", "frobenius"]].to_numpy()).all() and df["mse"].isna().all()
    # solvers of one trial share the method seed (paired comparison)
    assert (df.groupby(["dataset", "rho", "trial"])["seed"].nunique() == 1).all()
    # the manifest records config, versions and commit
    manifest = json.loads(store_for(cfg).manifest_path.read_text())
    assert manifest["config"]["name"] == "demo" and manifest["runs"][0]["versions"]["numpy"]
    assert manifest["runs"][0]["git_commit"]
    # a rerun skips every finished cell before loading any data
    again = run_sweep(cfg, loader=_never_load)
    assert (again.n_skipped, again.n_ran) == (16, 0)


def _comparable(df):
    return df.drop(columns=TIMES + ["experiment"]).sort_values("cell_key").reset_index(drop=True)


@pytest.mark.slow
@pytest.mark.xdist_group(WORKER_PROCESSES)
def test_identical_results_for_one_and_two_workers_and_dask(tmp_path):
    grid = "+method.paceggm.grid.solver=[ipm,pgd1]"
    frames = []
    # dask's local cluster on threads: its worker processes are started by the dask command line and
    # checked against the local bits in test_memory_layout; here, the joblib backend and the scatter.
    for name, extra in [("seq", ["backend.n_jobs=1"]), ("loky2", ["backend.n_jobs=2"]),
                        ("dask", ["backend=dask", "backend.n_workers=2", "backend.n_jobs=2", "backend.processes=false"])]:
        cfg = _cfg(tmp_path / name, "datasets=[syn1]", "trials=1", grid, *extra)  # 4 cells: 2 a worker
        summary = run_sweep(cfg)
        assert summary.n_ok == 4, summary.format()
        frames.append(_comparable(_table(cfg)[0]))
    pd.testing.assert_frame_equal(frames[0], frames[1], check_exact=True)
    pd.testing.assert_frame_equal(frames[0], frames[2], check_exact=True)


def test_failing_method_is_recorded_the_sweep_completes_and_failures_are_retried(tmp_path):
    # a class that cannot be imported fails its cells (it may exist on the next run); a parameter the
    # class refuses is a config error, refused before anything runs (test_a_refused_parameter_runs_nothing)
    cfg = _cfg(tmp_path, "datasets=[syn1]", "+method.paceggm.grid.alpha=[0.3,0.5]",
               "+method.broken={key:broken,target:'paceggm.no_such_module:Estimator'}")
    summary = run_sweep(cfg)
    assert (summary.n_cells, summary.n_ok, summary.n_failed) == (12, 8, 4)
    text = summary.format()
    assert "failures: 4" in text and "paceggm.no_such_module" in text
    df, _ = _table(cfg)
    failed = df[df["status"] == "failed"]
    assert set(failed["variant"]) == {"broken"}
    assert failed["error"].str.contains("Traceback").all()
    assert failed["mahalanobis"].isna().all()
    assert (df.loc[df["status"] == "ok", "error"] == "").all()
    retry = run_sweep(cfg)
    assert (retry.n_skipped, retry.n_ran, retry.n_failed) == (8, 4, 4)


def test_a_refused_parameter_runs_nothing(tmp_path):
    cfg = _cfg(tmp_path, "datasets=[syn1]", "+method.paceggm.grid.alpha=[0.3,1.5]")
    with pytest.raises(ValueError, match=r"method.paceggm \(paceggm\[alpha=1.5\]\): alpha must lie in the open"):
        run_sweep(cfg)
    assert not (tmp_path / "demo").exists()


def test_unavailable_data_is_reported_not_stored_and_retried(tmp_path):
    cfg = _cfg(tmp_path, "datasets=[syn1,not_here]", "method.paceggm.params.solver=pgd0")
    summary = run_sweep(cfg)
    assert (summary.n_ok, summary.n_failed, summary.n_unavailable) == (4, 0, 4)
    assert summary.exit_status == 0
    text = summary.format()
    assert "unavailable: 4" in text and "4 cells of not_here" in text and "unknown test data set" in text
    df, report = _table(cfg)
    assert set(df["dataset"]) == {"syn1"} and {c.dataset for c in report.missing} == {"not_here"}
    again = run_sweep(cfg)  # retried: still pending, still not a failure
    assert (again.n_skipped, again.n_unavailable, again.exit_status) == (4, 4, 0)


def test_a_data_set_that_fails_to_load_fails_its_cells(tmp_path):
    cfg = _cfg(tmp_path, "datasets=[syn1,damaged]", "method.paceggm.params.solver=pgd0")
    summary = run_sweep(cfg)
    assert (summary.n_ok, summary.n_failed, summary.n_unavailable, summary.exit_status) == (4, 4, 0, 1)
    df, _ = _table(cfg)
    bad = df[df["dataset"] == "damaged"]
    assert (bad["status"] == "failed").all()
    assert bad["error"].str.contains("could not be loaded").all()
    assert bad["error"].str.contains("registry expects 7").all()


def test_corrupt_cell_is_reported_not_used_and_recomputed(tmp_path):
    cfg = _cfg(tmp_path, "datasets=[syn1]")
    run_sweep(cfg)
    store = store_for(cfg)
    before, _ = _table(cfg)
    victim = sorted(store.cells_dir.glob("*.json"))[0]
    payload = json.loads(victim.read_text())
    payload["row"]["mahalanobis"] = 0.0  # a silent edit: valid JSON, wrong content
    victim.write_text(json.dumps(payload))
    df, report = _table(cfg)
    assert [c.path for c in report.corrupt] == [victim] and "checksum" in report.corrupt[0].reason
    assert victim.stem not in set(df["cell_key"]) and [c.key for c in report.missing] == [victim.stem]
    assert "CORRUPT" in report.format()
    summary = run_sweep(cfg)
    assert (summary.n_ran, len(summary.corrupt)) == (1, 1) and "corrupt cell file" in summary.format()
    after, report = _table(cfg)
    assert not report.corrupt and not report.missing
    pd.testing.assert_frame_equal(_comparable(before), _comparable(after), check_exact=True)


def test_regression_cells_use_the_trial_split(tmp_path):
    from paceggm.bench.seeds import seed_sequence

    from bench_loaders import PrivateMeanRegressor, small_loader

    cfg = _cfg(tmp_path, "datasets=[syn1]", "method=[]", "rho=[1.0]", "trials=1",
               "+method.mean={key:mean,target:'bench_loaders:PrivateMeanRegressor',task:regression,measures:none}")
    summary = run_sweep(cfg)
    assert summary.n_ok == 1, summary.format()
    df, _ = _table(cfg)
    (cell,) = expand(cfg)
    Xf, y = small_loader("syn1", preprocessing="paper").features_and_target()
    train, test = _split(len(y), 0.2, cell.data_seed)
    est = PrivateMeanRegressor(1.0, bound_check="waive", random_state=seed_sequence(cell.seed)).fit(Xf[train], y[train])
    assert df["mse"].iloc[0] == pytest.approx(np.mean((est.predict(Xf[test]) - y[test]) ** 2), rel=1e-12)
    assert np.isnan(df["mahalanobis"].iloc[0]) and pd.isna(df["n_measured_diag"].iloc[0])


def test_split_is_a_seeded_partition():
    train, test = _split(100, 0.2, 7)
    assert len(test) == 20 and len(train) == 80 and not set(train) & set(test)
    assert np.array_equal(_split(100, 0.2, 7)[1], test) and not np.array_equal(_split(100, 0.2, 8)[1], test)




@pytest.mark.slow
def test_resume_with_an_incompatible_config_is_refused(tmp_path, capsys):
    args = [*BASE, f"runs_dir={tmp_path}", "datasets=[syn1]", "trials=1", "rho=[1.0]"]
    first = run_sweep(_cfg(tmp_path, *args[len(BASE) + 1:]))
    assert (first.n_ok, first.n_failed) == (1, 0), first.format()
    capsys.readouterr()
    assert main(["run", *args, "base_seed=1"]) == 2  # the command line: its exit status and one-line refusal
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert len(err) == 1 and err[0].startswith("error: ") and "refusing to resume" in err[0], err
    assert "base_seed: stored 0, requested 1" in err[0]
    with pytest.raises(IncompatibleRunError):
        run_sweep(_cfg(tmp_path, "datasets=[syn1]", "trials=1", "rho=[1.0]", "preprocessing=strict"))


def test_resume_after_a_solver_default_changed_is_refused(tmp_path, monkeypatch):
    """Tolerances live in the library, not the config: the store still sees them change."""
    from functools import partial

    from paceggm.reconstruction import SOLVERS, SolverSpec
    from paceggm.reconstruction.pgd import solve_pgd

    cfg = _cfg(tmp_path, "datasets=[syn1]", "trials=1", "rho=[1.0]")
    run_sweep(cfg)
    manifest = json.loads((store_for(cfg).root / "manifest.json").read_text())
    assert manifest["fingerprint"]["solver_defaults"]["pgd0"]["tol"] == solve_pgd.__kwdefaults__["tol"]
    monkeypatch.setitem(SOLVERS, "pgd0", SolverSpec(partial(solve_pgd, init_value=0.0, tol=1e-9), max_entropy=False))
    stored = re.escape(repr(solve_pgd.__kwdefaults__["tol"]))
    with pytest.raises(IncompatibleRunError, match=rf"solver_defaults: stored .*'tol': {stored}.*requested .*'tol': 1e-09"):
        run_sweep(cfg)


@pytest.mark.slow
def test_sweep_killed_with_sigkill_resumes_without_losing_or_duplicating_cells(tmp_path):
    # 4 of the 8 cells finish; the others are held in their workers until the kill (bench_loaders.GatedDiagonal)
    args = [*BASE, f"runs_dir={tmp_path}", "datasets=[syn1,bc]", "trials=2", "method=[]", GATED, "backend.n_jobs=2"]
    cells_dir = tmp_path / "demo" / "cells"
    total = 8
    (tmp_path / "gate").mkdir()
    # own process group: the kill takes its workers too
    proc = harness_process(["run", *args], env=gate_env(tmp_path / "gate", 4), start_new_session=True)
    deadline = time.monotonic() + 120
    written = []
    while time.monotonic() < deadline and proc.poll() is None:
        written = sorted(cells_dir.glob("*.json")) if cells_dir.is_dir() else []
        if len(written) >= 4:
            break
        time.sleep(0.02)
    assert proc.poll() is None, "the sweep ended before it could be killed: " + proc.communicate()[1][-2000:]
    os.killpg(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    survivors = {p.name: p.read_bytes() for p in cells_dir.glob("*.json")}
    assert len(survivors) == 4  # killed in the middle, with exactly the gate's 4 fits finished
    # The rerun in this process, on one worker (the cells do not depend on the workers): what is tested
    # is what it finds in the store; a second interpreter's start-up would double the test's time.
    cfg = _cfg(tmp_path, *args[len(BASE) + 1:-1], "backend.n_jobs=1")
    summary = run_sweep(cfg)
    assert summary.n_skipped == len(survivors) and summary.n_failed == 0, summary.format()
    files = sorted(cells_dir.glob("*.json"))
    assert len(files) == total
    for name, content in survivors.items():  # finished cells were skipped, not recomputed
        assert (cells_dir / name).read_bytes() == content
    df, _ = _table(cfg)
    assert len(df) == total and df["cell_key"].is_unique and (df["status"] == "ok").all()
    assert {c.key for c in expand(_cfg(tmp_path, *args[len(BASE) + 1:]))} == set(df["cell_key"])


def test_cells_finished_by_another_recipe_are_reused_not_recomputed(tmp_path):
    source = _cfg(tmp_path, "datasets=[syn1]")
    run_sweep(source)
    reuse = _cfg(tmp_path, "datasets=[syn1]", "name=copy", "reuse_from=[demo]")
    summary = run_sweep(reuse, loader=_never_load)
    assert (summary.n_reused, summary.n_ran) == (4, 0) and "reused: 4" in summary.format()
    copied, _ = _table(reuse)
    assert (copied["experiment"] == "copy").all()
    pd.testing.assert_frame_equal(_comparable(_table(source)[0]), _comparable(copied), check_exact=True)
    # a store made with another fingerprint is not a source
    other_seed = _cfg(tmp_path, "datasets=[syn1]", "name=copy2", "reuse_from=[demo]", "base_seed=1")
    assert run_sweep(other_seed).n_reused == 0


def test_quick_recipe_runs_every_method_end_to_end(tmp_path):
    # The quick recipe as shipped (every method, every varied parameter), on a small synthetic
    # data set with a target; newton is left out where the branch providing it is not merged.
    from paceggm.reconstruction import SOLVERS

    solvers = [s for s in ("ipm", "pgd0", "pgd1", "newton") if s in SOLVERS]
    cfg = to_plain(compose_config([
        "experiment=quick", f"runs_dir={tmp_path}", "datasets=[syn1]", "rho=[1.0]", "trials=1",
        "loader=bench_loaders:small_loader", "progress=false", "backend.n_jobs=1",  # workers: tested above
        f"method.paceggm.grid.solver=[{','.join(solvers)}]",
        "method.adassp.datasets=[syn1]", "method.paceggm_regression.datasets=[syn1]",
    ]))
    summary = run_sweep(cfg)
    assert summary.n_failed == 0, summary.format()
    df, report = _table(cfg)
    from conftest import package_methods

    # PACE-GGM once a solver and twice more (components off, another (alpha, beta)); every other method once.
    assert not report.missing and len(df) == len(solvers) + 2 + len(set(package_methods()) - {"paceggm"})

    assert set(df["method"]) == set(package_methods())  # the recipe's methods: the package's, not a plugin's
    cov = df[df["mse"].isna()]
    assert np.isfinite(cov[["mahalanobis", "frobenius"]].to_numpy()).all()
    d = int(df["d"].iloc[0])
    full = cov[cov["method"].isin([k for k, spec in package_methods().items() if spec.measures == "all"])]
    assert (full["n_measured_offdiag"] == d * (d - 1) // 2).all() and (full["n_measured_diag"] == d).all()
    assert (cov.loc[cov["method"] == "diagonal", "n_measured_offdiag"] == 0).all()
    reg = df[df["method"].isin(["adassp", "paceggm_regression"])]
    assert len(reg) == 2 and np.isfinite(reg["mse"]).all() and reg["mahalanobis"].isna().all()
    assert reg.loc[reg["method"] == "paceggm_regression", "n_rounds"].notna().all()
    assert (df["rho_spent"] <= 1.0 + 1e-12).all() and (df["rho_spent"] > 0.999).all()


def test_cost_ordered_dispatch_sorts_by_rho_then_d():
    from types import SimpleNamespace

    from paceggm.bench.runner import _dispatch_order

    cfg = to_plain(compose_config(["experiment=solver", "trials=1"]))
    cells = expand(cfg)
    widths = {"adult": 6, "life_expectancy": 15, "ibm": 23, "spambase": 58, "communities_crime": 102}
    data = {k: SimpleNamespace(X=np.zeros((2, d))) for k, d in widths.items()}
    ordered = _dispatch_order(cells, data, "cheapest_first")
    costs = [(c.rho, widths[c.dataset]) for c in ordered]
    assert costs == sorted(costs) and sorted(c.key for c in ordered) == sorted(c.key for c in cells)
    costliest = _dispatch_order(cells, data, "costliest_first")
    assert [c.key for c in costliest] == [c.key for c in ordered][::-1]
    assert (costliest[0].rho, widths[costliest[0].dataset]) == (10.0, 102)
    assert [c.key for c in _dispatch_order(cells, data, "shuffled")] == sorted(c.key for c in cells)


def test_unknown_dispatch_order_fails_before_the_store_is_created(tmp_path):
    from paceggm.bench.runner import run_sweep

    cfg = to_plain(compose_config(["experiment=quick", f"runs_dir={tmp_path}", "order=fastest"]))
    with pytest.raises(ValueError, match="cheapest_first"):
        run_sweep(cfg)
    assert not (tmp_path / "quick").exists()


def test_drop_target_runs_the_covariance_cells_on_the_features_only(tmp_path):
    full = _cfg(tmp_path / "full")
    dropped = _cfg(tmp_path / "dropped", "drop_target=true")
    run_sweep(full)
    run_sweep(dropped)
    a, _ = _table(full)
    b, _ = _table(dropped)
    assert (a["d"] == 6).all() and (b["d"] == 5).all() and (b["status"] == "ok").all()
    # the same cells and seeds, one column fewer: a paired comparison with the full-d run
    assert a["seed"].tolist() == b["seed"].tolist()
    assert (b["n_measured_offdiag"] <= 5 * 4 // 2).all()
    # a store made without the option keeps its fingerprint; one made with it refuses a full-d resume
    assert "drop_target" not in json.loads(store_for(full).manifest_path.read_text())["fingerprint"]
    with pytest.raises(IncompatibleRunError):
        run_sweep({**full, "runs_dir": dropped["runs_dir"]})
    with pytest.raises(ValueError, match="cannot reuse"):
        run_sweep(_cfg(tmp_path / "reuse", "drop_target=true", "reuse_from=[demo]"))


def test_drop_target_refuses_regression_cells_and_data_without_an_outcome(tmp_path):
    from paceggm.bench.execute import prepare_data

    from bench_loaders import small_loader

    ds = small_loader("syn1", preprocessing="paper")
    with pytest.raises(ValueError, match="need the target"):
        prepare_data(ds, name="syn1", preprocessing="paper", bound_check="waive", need_target=True, drop_target=True)
    ds.target = None
    with pytest.raises(ValueError, match="no target or label column"):
        prepare_data(ds, name="syn1", preprocessing="paper", bound_check="waive", need_target=False, drop_target=True)

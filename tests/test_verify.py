"""`make verify` on a small committed-like results table: agreement passes, every planted disagreement fails."""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from paceggm.bench import verify as V
from paceggm.bench.collect import collect
from paceggm.bench.config import compose_config, to_plain
from paceggm.bench.runner import run_sweep, store_for

from bench_loaders import WORKER_PROCESSES

# Two data sets, Newton and IPM-Cholesky beside SSP: exact, inexact and baseline strata.
RECIPE = ["experiment=demo", "preprocessing=paper", "loader=bench_loaders:small_loader"]
GRID = ["method=[paceggm,ssp]", "+method.paceggm.grid.solver=[newton,ipm]", "datasets=[syn1,syn2]",
        "rho=[0.1,1.0]", "trials=3", "progress=false", "backend.n_jobs=1"]
SAMPLE = ["--per-stratum", "2", "--per-stratum-inexact", "4", "--jobs", "1"]


# One pytest worker runs this module, so that its fixture `committed` is computed once; its group is the
# one whose tests share worker processes.
pytestmark = pytest.mark.xdist_group(WORKER_PROCESSES)


@pytest.fixture(scope="session")
def committed(tmp_path_factory):
    """A results table as `make reproduce` publishes it: figures/results/demo/results.parquet."""
    root = tmp_path_factory.mktemp("verify")
    cfg = to_plain(compose_config([*RECIPE, *GRID, f"runs_dir={root / 'runs'}"]))
    summary = run_sweep(cfg)
    assert summary.n_failed == 0 and summary.n_ok == 2 * 2 * 3 * 3
    table, _ = collect(store_for(cfg))
    return table


def _publish(tmp_path, table) -> object:
    dest = tmp_path / "results" / "demo" / "results.parquet"
    dest.parent.mkdir(parents=True)
    table.to_parquet(dest, index=False)
    return dest.parent.parent


def _verify(tmp_path, table, *extra, loader=None, capsys=None):
    results = _publish(tmp_path, table)
    status = V.main(["--results", str(results), *SAMPLE, *extra, *RECIPE], loader=loader)
    return status, capsys.readouterr().out if capsys is not None else ""


def _sampled(table):
    return V.sample(table, per_stratum=2, per_stratum_inexact=4)


@pytest.mark.slow
def _fresh_environment() -> str:
    """The bit environment a fresh worker reports. This process may have loaded more BLAS libraries than
    a worker (cvxopt's, when the chordal solver's tests ran first), so it is not the reference."""
    code = "from paceggm.bench.bits import bit_environment, describe; print(describe(bit_environment()))"
    return subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout.strip()


def test_a_faithful_rerun_is_within_tolerance_and_reported_per_solver(tmp_path, committed, capsys):
    status, out = _verify(tmp_path, committed, "--out", str(tmp_path / "verify.md"), "--jobs", "2",
                          "--rows", str(tmp_path / "rows.parquet"), capsys=capsys)
    assert status == 0, out
    assert (tmp_path / "verify.md").read_text() == out
    # the rerun rows compare with another rerun (another kernel) by the same rules, running nothing
    rows = pd.read_parquet(tmp_path / "rows.parquet")
    assert len(rows) == len(_sampled(committed))
    results = str(tmp_path / "results")
    assert V.main(["--pair", str(tmp_path / "rows.parquet"), str(tmp_path / "rows.parquet"), "--results", results,
                   "--out", str(tmp_path / "pair.md")]) == 0
    assert (tmp_path / "pair.md").read_text() == capsys.readouterr().out  # the report, printed and written
    exact = rows.index[rows["params"].str.contains('"newton"')][0]
    rows.loc[exact, "mahalanobis"] *= 1 + 1e-5
    rows.to_parquet(tmp_path / "other.parquet", index=False)
    assert V.main(["--pair", str(tmp_path / "rows.parquet"), str(tmp_path / "other.parquet"),
                   "--results", results]) == 1
    assert "rel. difference 1.0e-05" in capsys.readouterr().out.split("# Two reruns")[-1]
    lines = {ln.split("|")[1].strip(): ln for ln in out.splitlines() if ln.startswith("| ")}
    for label in ("paceggm (newton)", "paceggm (ipm)", "ssp"):
        assert lines[label].rstrip().endswith("| ok |"), lines[label]
    # same machine, same kernel: every cell bit for bit, no path differs
    n = len(_sampled(committed))
    assert f"**Sample**: {n} of the {len(committed)} committed cells" in out
    assert f"what moves the last bits in the workers: {_fresh_environment()} (" in out
    assert f"| demo | paper | {n} | {n} | 0 | 0 |" in out
    assert "Mahalanobis ×1.0000" in lines["paceggm (ipm)"]


def test_a_planted_difference_in_an_exact_cell_fails(tmp_path, committed, capsys):
    table = committed.copy()
    picked = _sampled(table)
    key = picked[picked["params"].str.contains('"newton"')]["cell_key"].iloc[0]
    table.loc[table["cell_key"] == key, "frobenius"] *= 1 + 1e-5  # ten times the 1e-6 tolerance
    status, out = _verify(tmp_path, table, capsys=capsys)
    assert status == 1
    assert key in out and "**beyond tolerance**" in [c.strip() for c in
                                                      next(ln for ln in out.splitlines()
                                                           if ln.startswith("| paceggm (newton)")).split("|")]


def test_a_planted_path_difference_fails_even_with_equal_errors(tmp_path, committed, capsys):
    table = committed.copy()
    picked = _sampled(table)
    key = picked[picked["method"] == "ssp"]["cell_key"].iloc[0]
    table.loc[table["cell_key"] == key, "n_measured_offdiag"] += 1
    status, out = _verify(tmp_path, table, capsys=capsys)
    assert status == 1 and key in out


def test_an_inexact_solver_off_by_more_than_the_trial_noise_fails(tmp_path, committed, capsys):
    table = committed.copy()
    ipm = table["params"].str.contains('"ipm"')
    table.loc[ipm, "mahalanobis"] *= 3.0  # every committed IPM error three times the rerun's
    status, out = _verify(tmp_path, table, capsys=capsys)
    assert status == 1
    row = next(ln for ln in out.splitlines() if ln.startswith("| paceggm (ipm)"))
    assert "**beyond tolerance**" in row and "Mahalanobis ×0.3333" in row
    assert next(ln for ln in out.splitlines() if ln.startswith("| paceggm (newton)")).rstrip().endswith("| ok |")


def test_a_row_the_harness_cannot_rebuild_fails(tmp_path, committed, capsys):
    table = committed.copy()
    key = _sampled(table)["cell_key"].iloc[0]
    table.loc[table["cell_key"] == key, "seed"] += 1  # not the seed this cell's identity gives
    status, out = _verify(tmp_path, table, capsys=capsys)
    assert status == 1 and "not rebuildable" in out


def test_unavailable_data_is_reported_not_failed(tmp_path, committed, capsys):
    from bench_loaders import small_loader

    def without_syn2(name, **kw):
        if name == "syn2":
            raise FileNotFoundError("syn2.csv is not here")
        return small_loader(name, **kw)

    status, out = _verify(tmp_path, committed, loader=without_syn2, capsys=capsys)
    assert status == 0, out
    assert "**Data sets not available here** (their cells are not run): syn2 (FileNotFoundError" in out
    n_syn1 = int((_sampled(committed)["dataset"] == "syn1").sum())
    assert f"| demo | paper | {n_syn1} |" in out

    def nothing(name, **kw):
        raise FileNotFoundError(f"{name} is not here")

    status, out = _verify(tmp_path / "none", committed, loader=nothing, capsys=capsys)
    assert status == 2


def test_the_sample_is_deterministic_stratified_and_prefers_cheap_cells(committed):
    a = V.sample(committed, seed=0, per_stratum=2, per_stratum_inexact=4)
    assert a["cell_key"].tolist() == V.sample(committed, seed=0, per_stratum=2, per_stratum_inexact=4)[
        "cell_key"].tolist()
    strata = committed.groupby(list(V.STRATUM)).ngroups
    assert a.groupby(list(V.STRATUM)).ngroups == strata
    counts = a.groupby(list(V.STRATUM)).size()
    ipm = [s for s in counts.index if "ipm" in s[1]]
    assert ipm and all(counts[s] == 4 for s in ipm)
    assert all(counts[s] == 2 for s in counts.index if s not in ipm)
    assert set(V.sample(committed, seed=1, per_stratum=2, per_stratum_inexact=4)["cell_key"]) != set(a["cell_key"])
    # only cells under the time cap, or each stratum's cheapest when none is under it
    cheap = V.sample(committed, per_stratum=6, per_stratum_inexact=6, max_seconds=1e-12)
    assert len(cheap) == strata
    fastest = committed.loc[committed.groupby(list(V.STRATUM))["wall_time"].idxmin(), "cell_key"]
    assert set(cheap["cell_key"]) == set(fastest)


def test_the_paired_rule_reads_the_trial_noise():
    """|mean log ratio| ≤ 2σ/√n, σ² the mean trial variance of the cells' log errors."""
    g = V.GroupReport("paceggm (ipm)", inexact=True, cells=4)
    sd = 0.2
    g.noise_var["mahalanobis"] = [sd ** 2] * 4
    band = 2 * sd / math.sqrt(4)
    g.log_ratios["mahalanobis"] = [band * 0.9] * 4
    assert g.passed and g.paired("mahalanobis")[2] == pytest.approx(band)
    g.log_ratios["mahalanobis"] = [band * 1.1] * 4
    assert not g.passed
    # one far trial among many within noise is what an inexact solver may do
    g.log_ratios["mahalanobis"] = [math.log(2.18)] + [0.0] * 39
    g.noise_var["mahalanobis"] = [sd ** 2] * 40
    assert g.passed
    exact = V.GroupReport("paceggm (newton)", inexact=False, cells=1, max_rel=2e-6)
    assert not exact.passed
    exact.max_rel = 5e-7
    assert exact.passed
    exact.path_diffs = 1
    assert not exact.passed


def test_compare_reads_every_stored_value():
    old = {"status": "ok", "mahalanobis": 2.0, "frobenius": 1.0, "mse": np.nan, "rho_spent": 1.0,
           "n_measured_diag": 5, "n_measured_offdiag": 3, "n_rounds": 4, "converged": True, "n_solves": 7,
           "n_capped_solves": 0, "max_solve_iter": 9, "n": 100, "d": 5}
    assert V.compare(old, dict(old))["identical"]
    c = V.compare(old, {**old, "mahalanobis": 2.0 * (1 + 1e-9)})
    assert c["rel"] == pytest.approx(1e-9) and not c["identical"] and not c["path_differs"]
    assert V.compare(old, {**old, "n_solves": 8})["identical"] is False
    assert V.compare(old, {**old, "n_rounds": 5})["path_differs"]
    assert V.compare(old, {**old, "mse": 0.5})["rel"] == math.inf  # a value where none was stored
    assert V.compare(old, {**old, "n_rounds": pd.NA})["path_differs"]
    failed = V.compare(old, {**old, "status": "failed"})
    assert not failed["ok"] and failed["rel"] == math.inf


def test_usage_errors_exit_2(tmp_path, capsys):
    assert V.main(["--results", str(tmp_path)]) == 2  # no committed table there
    with pytest.raises(SystemExit) as exc:
        V.main(["--jobs", "0"])
    assert exc.value.code == 2
    with pytest.raises(SystemExit) as exc:  # a pair runs nothing: there are no rerun rows to write
        V.main(["--pair", "a.parquet", "b.parquet", "--rows", str(tmp_path / "rows.parquet")])
    assert exc.value.code == 2 and "--pair runs nothing" in capsys.readouterr().err


def test_ipm_cells_rerun_with_the_preset_they_were_made_with(committed):
    from paceggm.reconstruction.ipm import PRESETS

    cfg = to_plain(compose_config(RECIPE))
    rows = committed.to_dict("records")
    ipm = V.rebuild_cell(next(r for r in rows if '"ipm"' in r["params"]), cfg)
    newton = V.rebuild_cell(next(r for r in rows if '"newton"' in r["params"]), cfg)
    assert V.UNRECORDED_IPM_PRESET in PRESETS
    made = V.as_run(ipm)
    assert made.param_dict["solver_options"] == {"preset": V.UNRECORDED_IPM_PRESET}
    assert made.seed == ipm.seed and made.key != ipm.key  # same noise, another computation's key
    assert V.as_run(made) == made  # a cell that names its preset keeps it
    assert V.as_run(ipm, "tight").param_dict["solver_options"] == {"preset": "tight"}
    assert V.as_run(newton) is newton and V.as_run(newton, "tight") is newton


def test_the_unrecorded_ipm_preset_is_the_one_the_committed_cells_were_made_with():
    """Committed IPM rows name no preset: they were made with the library's default.

    When that default changes, this fails: IPM cells must then record their preset in their
    params (so new tables say what made them) while UNRECORDED_IPM_PRESET keeps naming the
    preset of the tables already committed, until they are regenerated.
    """
    from paceggm.reconstruction.ipm import DEFAULTS, PRESETS

    made_with = PRESETS[V.UNRECORDED_IPM_PRESET]
    assert {k: DEFAULTS[k] for k in made_with} == made_with


def test_a_rerun_keeps_the_fits_cpu_time_and_reports_the_cells_apart(monkeypatch):
    """The row's ``cpu_time`` is the fit's clock, as a sweep records it; the cell's CPU is returned beside it."""
    from paceggm.bench import runner

    def fake(cell, data, *, experiment, test_fraction):
        sum(i * i for i in range(200_000))  # CPU the cell spends outside its fit
        return {"cpu_time": 0.125, "wall_time": 0.5}

    monkeypatch.setattr(runner, "_run_in_worker", fake)
    row, _, cell_cpu = V._rerun(None, None, experiment="demo", test_fraction=0.2)
    assert row["cpu_time"] == 0.125
    assert cell_cpu > 0.0

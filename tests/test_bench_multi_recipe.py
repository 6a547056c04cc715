"""Several recipes as one pool: the cells of each, stored as if run one by one, dispatched longest first."""

from __future__ import annotations

import math

import pandas as pd
import pytest

import paceggm.bench.runner as runner
from paceggm.bench.__main__ import main
from paceggm.bench.collect import collect
from paceggm.bench.config import compose_config, to_plain
from paceggm.bench.runner import cost_estimates, pool_order, run_pool, run_sweep, store_for

COMMON = ["method=[paceggm]", "datasets=[syn1,syn2]", "rho=[0.1,1.0]", "trials=2", "preprocessing=paper",
          "loader=bench_loaders:small_loader", "progress=false", "backend.n_jobs=1"]
# Two recipes, the second copying from the first (as `solver` copies from `runtime`): 8 of its 40 cells
# are the first recipe's.
FIRST = ["experiment=demo", "+method.paceggm.grid.solver=[newton]"]
SECOND = ["experiment=quick", "method.paceggm.grid.solver=[ipm,pgd0,newton]", "reuse_from=[demo]"]
# What differs between two runs of the same cell: its clocks and the machine's load.
CLOCKS = ["wall_time", "solve_time", "cpu_time", "cpu_scope", "load_start", "load_end"]


def _cfg(runs, recipe):
    return to_plain(compose_config([*recipe, *COMMON, f"runs_dir={runs}"]))


def _stored(cfg):
    table, _ = collect(store_for(cfg), write=False)
    return table.drop(columns=[c for c in CLOCKS if c in table.columns]).sort_values("cell_key").reset_index(drop=True)


def _reused_from(cfg):
    scan = store_for(cfg).scan()
    return {key: (meta.get("computed") or {}).get("reused_from") for key, meta in scan.meta.items()}


def test_the_pool_stores_what_the_recipes_store_one_by_one(tmp_path, monkeypatch):
    one_by_one = [_cfg(tmp_path / "alone", r) for r in (FIRST, SECOND)]
    alone = [run_sweep(cfg) for cfg in one_by_one]
    assert [(s.n_cells, s.n_ok, s.n_reused, s.n_failed) for s in alone] == [(8, 8, 0, 0), (40, 32, 8, 0)]

    calls = []
    real = runner._run_in_worker
    monkeypatch.setattr(runner, "_run_in_worker", lambda cell, data, **kw: calls.append(cell.key) or real(
        cell, data, **kw))
    pooled_cfgs = [_cfg(tmp_path / "pool", r) for r in (FIRST, SECOND)]
    pooled = run_pool(pooled_cfgs)
    assert [(s.n_cells, s.n_ok, s.n_reused, s.n_failed) for s in pooled] == [(8, 8, 0, 0), (40, 32, 8, 0)]
    assert len(calls) == len(set(calls)) == 40  # each shared cell computed once
    assert all(s.cpu_time > 0 for s in pooled)

    for a, b in zip(one_by_one, pooled_cfgs):
        left, right = _stored(a), _stored(b)
        assert len(left) == len(right) and list(left["cell_key"]) == list(right["cell_key"])
        pd.testing.assert_frame_equal(left, right, check_exact=True)  # same keys, seeds, values: bit for bit
        assert _reused_from(a) == _reused_from(b)
    assert sorted(v for v in _reused_from(pooled_cfgs[1]).values() if v) == ["demo"] * 8

    # Resumable: a second pooled run finds everything stored and computes nothing.
    calls.clear()
    again = run_pool(pooled_cfgs)
    assert calls == [] and [(s.n_skipped, s.n_ran) for s in again] == [(8, 0), (40, 0)]


def test_cells_are_dispatched_longest_first(tmp_path, monkeypatch):
    cfgs = [_cfg(tmp_path / "pool", r) for r in (FIRST, SECOND)]
    cells = [runner.check_config(cfg) for cfg in cfgs]
    # Committed times: every cell of the second recipe recorded, one variant of each data set unrecorded.
    keys = {c.key: c for cs in cells for c in cs}
    recorded = [c for c in cells[1] if not (c.dataset == "syn2" and c.variant.endswith("pgd0]"))]
    table = pd.DataFrame({"cell_key": [c.key for c in recorded], "dataset": [c.dataset for c in recorded],
                          "variant": [c.variant for c in recorded], "rho": [c.rho for c in recorded],
                          "status": "ok", "wall_time": [1.0 + (i * 7919 % 23) for i in range(len(recorded))]})
    (tmp_path / "committed" / "quick").mkdir(parents=True)
    table.to_parquet(tmp_path / "committed" / "quick" / "results.parquet")
    estimates = cost_estimates(list(keys.values()), tmp_path / "committed")
    own = dict(zip(table["cell_key"], table["wall_time"]))
    for key, c in keys.items():
        if key in own:  # its own recorded time
            assert estimates[key] == own[key]
        else:  # no cell of its variant recorded on its data set: the median of its data set's at its rho
            same = table[(table["dataset"] == c.dataset) & (table["rho"] == c.rho)]["wall_time"]
            assert estimates[key] == same.median()

    calls = []
    real = runner._run_in_worker
    monkeypatch.setattr(runner, "_run_in_worker", lambda cell, data, **kw: calls.append(cell.key) or real(
        cell, data, **kw))
    run_pool(cfgs, committed=tmp_path / "committed")
    assert len(calls) == 40
    ran = [estimates[k] for k in calls]
    assert ran == sorted(ran, reverse=True)  # longest first, by the committed times


def test_cells_without_estimates_go_first_by_rho_then_d():
    class C:
        def __init__(self, key, rho, dataset="a"):
            self.key, self.rho, self.dataset = key, rho, dataset

    items = [(0, C("k1", 0.1)), (1, C("k2", 1.0)), (0, C("k3", 10.0, "b")), (1, C("k4", 10.0)), (0, C("k5", 0.1))]
    dims = {(0, "a"): 5, (1, "a"): 5, (0, "b"): 50}
    order = [c.key for _, c in pool_order(items, {"k1": 3.0, "k5": 9.0}, dims)]
    assert order == ["k3", "k4", "k2", "k5", "k1"]


def test_a_failing_cell_is_recorded_and_the_pool_goes_on(tmp_path, monkeypatch):
    cfgs = [_cfg(tmp_path, FIRST), _cfg(tmp_path, SECOND)]
    real = runner._run_in_worker
    doomed = next(c for c in runner.check_config(cfgs[0]) if c.dataset == "syn1").key

    def flaky(cell, data, **kw):
        if cell.key == doomed:
            raise_in = runner.failed_row(cell, kw["experiment"], "Traceback: RuntimeError: boom")
            return raise_in
        return real(cell, data, **kw)

    monkeypatch.setattr(runner, "_run_in_worker", flaky)
    first, second = run_pool(cfgs)
    assert (first.n_failed, first.exit_status) == (1, 1)
    # the second recipe copies the 7 that succeeded and computes the failed one itself (as run alone after)
    assert (second.n_reused, second.n_ok + second.n_failed, second.n_failed) == (7, 33, 1)
    assert second.exit_status == 1


@pytest.mark.parametrize("bad", [["experiment=[demo,demo]"], ["experiment=[]"], ["-m", "experiment=[demo,quick]"]])
def test_bad_pooled_command_lines_exit_2(tmp_path, bad, capsys):
    assert main(["run", *bad, *COMMON, f"runs_dir={tmp_path}"]) == 2
    assert capsys.readouterr().err.startswith("error: ")


def test_the_command_line_runs_a_pool_and_states_its_cpu_seconds(tmp_path, capsys):
    # as make reproduce writes it: the option first, then the recipes and the overrides for all
    status = main(["run", "--costs", str(tmp_path / "none"), "experiment=[demo,quick]",
                   "++method.paceggm.grid.solver=[newton]", "rho=[1.0]", "trials=1",
                   *[o for o in COMMON if not o.startswith(("rho=", "trials="))], f"runs_dir={tmp_path}"])
    out = capsys.readouterr().out
    assert status == 0
    assert "[demo] cells: 2 |" in out and "[quick] cells: 6 |" in out
    pool_line = next(line for line in out.splitlines() if line.startswith("[pool]"))
    cpu = float(pool_line.split("CPU: ")[1].split(" s")[0])
    assert "ran 8 cells (failed 0)" in pool_line and cpu > 0 and math.isfinite(cpu)

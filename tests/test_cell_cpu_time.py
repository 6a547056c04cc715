"""Every cell records the CPU seconds of its fit, its wall seconds and the machine's load at its start
and end; runtime tables read CPU seconds where every row has them, and say so."""

from __future__ import annotations

import dataclasses
import math
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from paceggm.baselines import DiagonalOnly
from paceggm.bench.cells import expand
from paceggm.bench.collect import to_frame
from paceggm.bench.config import compose_config, to_plain
from paceggm.bench.execute import COLUMNS, prepare_data, run_cell
from paceggm.bench.figures import tables
from paceggm.bench.figures.published import runtime_comparison
from paceggm.bench.figures.results import validate_results
from paceggm.bench.figures.synthetic import synthetic_results
from paceggm.bench.schema import CLOCK_COLUMNS, check_row
from paceggm.bench.summary import runtime_metric, summarize

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_loaders import small_loader  # noqa: E402

#: What clock reading and bookkeeping around a fit may add (seconds).
SLACK = 0.05


class BusyDiagonal(DiagonalOnly):
    """The diagonal baseline after ``WORK`` CPU seconds of busy work in the fitting thread."""

    WORK = {"value": 0.0}

    def fit(self, X, y=None):
        t0 = time.thread_time()
        while time.thread_time() - t0 < self.WORK["value"]:
            pass
        return super().fit(X, y)


def _busy_cell():
    cells = expand(to_plain(compose_config([
        "experiment=demo", "method=[diagonal]", "datasets=[syn1]", "rho=[1.0]", "trials=1",
        "loader=bench_loaders:small_loader", "progress=false", "backend.n_jobs=1"])))
    return dataclasses.replace(cells[0], target=f"{__name__}:BusyDiagonal")


def _data():
    return prepare_data(small_loader("syn1", preprocessing="paper"), name="syn1", preprocessing="paper",
                        bound_check="waive", need_target=False)


def _run(work: float) -> dict:
    BusyDiagonal.WORK["value"] = work
    try:
        row = run_cell(_busy_cell(), _data(), experiment="demo")
    finally:
        BusyDiagonal.WORK["value"] = 0.0
    assert row["status"] == "ok", row["error"]
    return row


def test_a_cell_records_cpu_seconds_wall_seconds_and_the_load_and_its_row_passes_the_store_s_check():
    row = _run(0.05)
    assert set(CLOCK_COLUMNS) <= set(row) and set(CLOCK_COLUMNS) <= set(COLUMNS)
    assert row["cpu_scope"] == "process"  # the fit ran in this process's main thread
    assert 0.05 <= row["cpu_time"] <= row["wall_time"] * 1 + SLACK  # one worker: CPU ≤ wall
    assert row["load_start"] >= 0 and row["load_end"] >= 0  # Linux and macOS have a load average
    check_row(row)
    with pytest.raises(ValueError, match="cpu_scope must be a string"):
        check_row({**row, "cpu_scope": 1})
    with pytest.raises(ValueError, match="cpu_time must be a number"):
        check_row({**row, "cpu_time": "1 s"})


def test_cpu_seconds_grow_with_the_fit_s_work():
    light, heavy = _run(0.02), _run(0.4)
    assert heavy["cpu_time"] - light["cpu_time"] >= 0.38 - SLACK
    assert heavy["cpu_time"] <= heavy["wall_time"] + SLACK


def test_in_a_thread_beside_busy_neighbours_a_cell_counts_its_own_thread_only():
    """A dask worker runs cells in threads of one process: the process clock would count the neighbours'."""
    stop = threading.Event()

    def neighbour():
        while not stop.is_set():
            pass

    others = [threading.Thread(target=neighbour, daemon=True) for _ in range(2)]
    out = {}
    for t in others:
        t.start()
    try:
        cell = threading.Thread(target=lambda: out.update(row=_run(0.3)))
        cell.start()
        cell.join()
    finally:
        stop.set()
        for t in others:
            t.join()
    row = out["row"]
    assert row["cpu_scope"] == "thread"
    assert 0.3 <= row["cpu_time"] <= 0.3 + 0.2  # its own 0.3 s, not the neighbours' seconds too
    assert row["cpu_time"] <= row["wall_time"] + SLACK


def test_a_table_without_the_clock_columns_reads_them_as_missing():
    old = [{c: v for c, v in _run(0.0).items() if c not in CLOCK_COLUMNS}]
    df = to_frame(old)
    assert df["cpu_time"].isna().all() and df["load_start"].isna().all() and (df["cpu_scope"] == "").all()
    assert df["cpu_time"].dtype == float
    assert runtime_metric(df) == ("wall_time", "wall")


def _timed(cpu: bool, *, all_rows: bool = True) -> pd.DataFrame:
    df = validate_results(synthetic_results("runtime", datasets=("adult", "ibm"), rhos=(0.1, 1.0), trials=3,
                                            fail_rate=0.0, missing_rate=0.0))
    df = df[df["method"] == "paceggm"].copy()
    if cpu:
        df["cpu_time"] = 0.4 * df["wall_time"]
        if not all_rows:
            df.loc[df.index[0], "cpu_time"] = np.nan
    return df


def test_a_runtime_table_of_rows_with_cpu_seconds_reads_them_and_says_so():
    with_cpu, without = _timed(True), _timed(False)
    t, w = tables.runtime_table(with_cpu), tables.runtime_table(without)
    assert t.caption.startswith("CPU seconds of the fit per trial")
    assert w.caption.startswith("Time per trial in seconds")  # wall, as committed tables were written
    assert np.allclose(t.data["mean"], 0.4 * w.data["mean"])
    # one row without CPU seconds: the whole table stays in wall seconds, never a mix of clocks
    mixed = tables.runtime_table(_timed(True, all_rows=False))
    assert mixed.caption == w.caption and np.allclose(mixed.data["mean"], w.data["mean"])
    assert "cpu_time" in summarize(with_cpu).columns and "cpu_time" not in summarize(without).columns


def test_table_4_s_comparison_reads_cpu_seconds_where_every_row_has_them():
    rows = _timed(True)
    cpu, _ = runtime_comparison(rows[rows["dataset"] == "adult"], "paper")
    wall, _ = runtime_comparison(_timed(False).query("dataset == 'adult'"), "paper")
    assert "CPU seconds" in cpu.caption and "CPU" not in wall.caption
    assert np.allclose(cpu.data["ours"].dropna(), 0.4 * wall.data["ours"].dropna())


def test_the_runtime_verdict_reads_cpu_seconds_where_every_row_has_them():
    from paceggm.bench.figures.verdicts import c7

    rows = _timed(True)
    rows["p_solver"] = "ipm"
    on_cpu = c7({"runtime": rows})
    on_wall = c7({"runtime": rows.drop(columns="cpu_time")})
    assert " CPU s " in on_cpu.evidence and " CPU s " not in on_wall.evidence
    assert math.isfinite(rows["cpu_time"].sum())


def test_a_runtime_table_states_the_load_its_fits_ran_under():
    rows = _timed(True)
    rows["load_start"] = np.linspace(1.0, 3.0, len(rows))
    assert "one-minute load at the fits' start: median 2.00, 1.00–3.00" in tables.runtime_table(rows).caption
    assert "load" not in tables.runtime_table(_timed(False)).caption.replace("other load", "")

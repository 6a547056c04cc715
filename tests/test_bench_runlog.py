"""One log: a run's warnings reach its log file and their cells' records, never the console mid-run;
the console counts them in one line; progress is a bar on a terminal only."""

from __future__ import annotations

import json
import threading
import warnings
from pathlib import Path

import pytest

from paceggm.baselines import DiagonalOnly
from paceggm.bench.config import compose_config, to_plain
from paceggm.bench.runlog import captured_warnings
from paceggm.bench.runner import run_sweep, store_for

from bench_loaders import WORKER_PROCESSES, run_cli, small_loader

# preprocessing=paper waives the bound check: every fit warns with PrivacyLeakWarning
BASE = ["experiment=demo", "method=[paceggm]", "datasets=[syn1]", "rho=[0.1,1.0]", "trials=2",
        "preprocessing=paper", "loader=bench_loaders:small_loader", "method.paceggm.params.solver=pgd0"]
LEAK = "bound_check='waive'"  # the PrivacyLeakWarning's text


class WarnsThenFails(DiagonalOnly):
    """A method whose fit warns, then fails."""

    def fit(self, X, y=None):
        warnings.warn("toy method: about to fail", RuntimeWarning, stacklevel=2)
        raise RuntimeError("toy method failed")


def noisy_loader(name, **kw):
    """The tests' loader, warning in the sweep's process (outside any cell) as it loads."""
    warnings.warn(f"toy loader: loading {name}", UserWarning, stacklevel=2)
    return small_loader(name, **kw)


def _records(root: Path) -> dict[str, dict]:
    return {p.stem: json.loads(p.read_text())["row"] for p in sorted((root / "cells").glob("*.json"))}


def _where(row: dict) -> str:
    return (f"warning in cell {row['cell_key']} {row['variant']} on {row['dataset']}, rho={row['rho']:g}, "
            f"trial={row['trial']} (method {row['method']}): ")


def _check_one_log(tmp_path, capsys, *backend):
    code, out, err = run_cli(capsys, "run", *BASE, f"runs_dir={tmp_path}", "progress=true", *backend)
    assert code == 0, out + err
    (log,) = (tmp_path / "demo" / "logs").glob("*.log")
    console = out + err
    said = [ln.strip() for ln in console.splitlines() if "Warning" in ln or ln.strip().startswith("warnings")]
    assert said == [f"warnings: 4 (PrivacyLeakWarning 4); each is in {log} and the record of the cell that raised it"]
    assert out.rstrip().splitlines()[-1] == said[0]  # the run's last line, after the collected table's
    assert LEAK not in console and "\r" not in console  # no warning text, no bar frames (not a terminal)
    assert [ln for ln in err.splitlines() if ln.startswith("demo: ")][-1].startswith("demo: 4/4 cells (100%)")
    text = log.read_text()
    rows = _records(tmp_path / "demo")
    assert len(rows) == 4 and text.count("WARNING warning in cell ") == 4
    for row in rows.values():
        (w,) = row["warnings"]
        assert w["category"] == "PrivacyLeakWarning" and w["message"].startswith(LEAK)
        assert text.count(_where(row) + f"PrivacyLeakWarning: {w['message']} ({w['filename']}:{w['lineno']})") == 1
    return rows


def test_sequential_run_logs_each_warning_with_its_cell_and_counts_them_in_one_console_line(tmp_path, capsys):
    _check_one_log(tmp_path, capsys, "backend.n_jobs=1")


@pytest.mark.xdist_group(WORKER_PROCESSES)
def test_warnings_of_worker_processes_reach_the_log_and_the_records_not_the_console(tmp_path, capsys):
    seq = _check_one_log(tmp_path / "seq", capsys, "backend.n_jobs=1")
    loky = _check_one_log(tmp_path / "loky", capsys, "backend.n_jobs=2")
    assert {k: r["warnings"] for k, r in loky.items()} == {k: r["warnings"] for k, r in seq.items()}


@pytest.mark.slow
@pytest.mark.xdist_group(WORKER_PROCESSES)
def test_warnings_of_dask_workers_processes_and_threads_reach_the_log(tmp_path, capsys, dask_cluster):
    _check_one_log(tmp_path / "procs", capsys, "backend=dask", f"backend.address={dask_cluster}", "backend.n_jobs=2")
    _check_one_log(tmp_path / "threads", capsys, "backend=dask", "backend.processes=false", "backend.n_workers=2",
                   "backend.n_jobs=2")


def test_failing_cells_and_the_sweeps_own_process_have_their_warnings_logged_and_reuse_keeps_them(tmp_path):
    flaky = "+method.flaky={key:flaky,target:'test_bench_runlog:WarnsThenFails',measures:diagonal}"
    cfg = to_plain(compose_config([*BASE, f"runs_dir={tmp_path}", "progress=false", "backend.n_jobs=1", flaky,
                                   "loader=test_bench_runlog:noisy_loader"]))
    summary = run_sweep(cfg)
    assert (summary.n_ok, summary.n_failed) == (4, 4)
    assert summary.warnings == {"PrivacyLeakWarning": 4, "RuntimeWarning": 4, "UserWarning": 1}
    assert summary.format().splitlines()[-1].strip() == (
        f"warnings: 9 (PrivacyLeakWarning 4, RuntimeWarning 4, UserWarning 1); each is in {summary.log_path} "
        "and the record of the cell that raised it")
    text = summary.log_path.read_text()
    assert text.count("WARNING warning outside any cell: UserWarning: toy loader: loading syn1 (") == 1
    rows = _records(store_for(cfg).root)
    failed = [r for r in rows.values() if r["status"] == "failed"]
    assert len(failed) == 4 and all("toy method failed" in r["error"] for r in failed)
    for row in failed:  # a failing cell keeps what it warned before it failed
        (w,) = row["warnings"]
        assert (w["category"], w["message"]) == ("RuntimeWarning", "toy method: about to fail")
        assert text.count(_where(row) + "RuntimeWarning: toy method: about to fail (") == 1

    # resumed: the finished cells are kept as they are, warnings with them; the failed ones run again
    again = run_sweep(cfg)
    assert (again.n_skipped, again.n_failed) == (4, 4)
    assert again.warnings == {"RuntimeWarning": 4, "UserWarning": 1}
    kept = _records(store_for(cfg).root)
    assert all(kept[k] == r for k, r in rows.items() if r["status"] == "ok")
    # reused by another recipe: the cells' records travel with their warnings; this run raised none
    other = {**cfg, "name": "other", "reuse_from": ["demo"], "method": {"paceggm": cfg["method"]["paceggm"]}}
    reused = run_sweep(other)
    assert (reused.n_reused, reused.n_ran, reused.warnings) == (4, 0, {})
    assert "warnings:" not in reused.format()
    assert {k: r["warnings"] for k, r in _records(store_for(other).root).items()} == {
        k: r["warnings"] for k, r in rows.items() if r["status"] == "ok"}


def test_progress_redirected_to_a_file_is_plain_lines(tmp_path):
    cfg = to_plain(compose_config([*BASE, f"runs_dir={tmp_path}", "backend.n_jobs=1", "trials=3"]))
    with open(tmp_path / "console.txt", "w") as fh:
        run_sweep(cfg, progress=True, log=fh)
    lines = (tmp_path / "console.txt").read_text()
    assert "\r" not in lines and LEAK not in lines
    assert len(lines.splitlines()) == 6  # one line per tenth of the cells at most
    for n, line in enumerate(lines.splitlines(), start=1):
        assert line.startswith(f"demo: {n}/6 cells ({100 * n // 6}%), ") and line.endswith(" s")
    with open(tmp_path / "quiet.txt", "w") as fh:
        run_sweep({**cfg, "name": "quiet"}, progress=False, log=fh)
    assert (tmp_path / "quiet.txt").read_text() == ""


def test_each_thread_keeps_its_own_warnings_and_the_hook_is_restored():
    before = warnings.showwarning
    got, start = {}, threading.Barrier(2)

    def cell(name):
        with captured_warnings() as caught:
            start.wait()
            for _ in range(3):
                warnings.warn(f"from {name}", UserWarning, stacklevel=1)
            start.wait()
        got[name] = [(w["message"], w["count"]) for w in caught]

    threads = [threading.Thread(target=cell, args=(name,)) for name in ("a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # each cell keeps its own, once, with how many times it came, whatever ran beside it
    assert got == {"a": [("from a", 3)], "b": [("from b", 3)]}
    assert warnings.showwarning is before

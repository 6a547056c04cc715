"""The harness from its command line: exit status, one-line user errors, signals, lock, Hydra CLI."""

from __future__ import annotations

import errno
import json
import os
import runpy
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from paceggm.bench.cells import expand
from paceggm.bench.config import compose_config, to_plain
from paceggm.bench.runner import n_workers, run_sweep, store_for
from paceggm.bench.store import RunStore, _payload_digest

from bench_loaders import GATED, gate_env, harness_process, one_error_line, run_cli
from conftest import free_port

SMALL = ["experiment=demo", "method=[paceggm]", "datasets=[syn1]", "rho=[0.1,1.0]", "trials=2",
         "loader=bench_loaders:small_loader", "progress=false", "backend.n_jobs=1"]


# ---------------------------------------------------------------- exit status

def test_all_ok_exits_0_a_failed_cell_exits_1(tmp_path, capsys):
    code, out, _ = run_cli(capsys, "run", *SMALL, f"runs_dir={tmp_path}")
    assert code == 0 and "failures: 0" in out
    broken = "+method.broken={key:broken,target:'paceggm.no_such_module:Estimator'}"
    code, out, _ = run_cli(capsys, "run", *SMALL, f"runs_dir={tmp_path}", broken)
    assert code == 1 and "failures: 4" in out


def test_unavailable_data_exits_0_and_is_reported(tmp_path, capsys):
    code, out, _ = run_cli(capsys, "run", *SMALL, f"runs_dir={tmp_path}", "datasets=[syn1,not_here]")
    assert code == 0 and "unavailable: 4" in out and "4 cells of not_here" in out
    assert "this grid: 8 cells, 4 stored, 4 missing" in out


@pytest.mark.parametrize("override, words", [
    ("datasets=[nosuch]", "unknown data set(s) nosuch; valid names: adult"),
    ("order=foo", "order must be one of shuffled"),
    ("backend.n_jobs=0", "backend.n_jobs must be a non-zero integer"),
    ("backend.n_jobs=abc", "backend.n_jobs must be a non-zero integer"),
    ("backend=nosuch", "no backend 'nosuch'; valid names: dask, loky"),
    ("test_fraction=-1", "test_fraction must be a number strictly between 0 and 1"),
    ("bound_check=sometimes", "bound_check must be auto"),
    ("experiment=nosuch", "no recipe 'nosuch'; valid names: components, demo"),
    ("method=[nosuch]", "no method 'nosuch'; valid names: adaptivecov"),
    # every config error of the harness's own grammar, the schema and the methods' declarations
    ("method=[paceggm,sssp]", "no method 'sssp' (did you mean 'ssp' or 'adassp'?); valid names: adaptivecov"),
    ("method.paceggm.params.solver=ipn", "unknown solver 'ipn' (did you mean 'ipm'?); choose one of "
                                         "['auto', 'ipm', 'newton', 'newton_chordal', 'newton_pcg', 'newton_xp', "
                                         "'pgd0', 'pgd1']"),
    ("method.paceggm.params.solvr=ipm", "method 'paceggm' has no parameter 'solvr' (did you mean 'solver'?)"),
    ("+method.paceggm.params.solvr=ipm", "method 'paceggm' has no parameter 'solvr' (did you mean 'solver'?)"),
    ("method.paceggm.parms.solver=ipm", "unknown config key 'method.paceggm.parms' (did you mean 'params'?)"),
    ("method.paceggm.params.alpha=1.5", "alpha must lie in the open interval (0, 1)"),
    ("+method.paceggm.params.solver_options={preset:tight}", "solver 'newton' has no option(s) ['preset']"),
    ("+nosuch=1", "unknown config key 'nosuch'; valid keys: backend, base_seed"),
    ("rh0=1", "unknown config key 'rh0' (did you mean 'rho'?)"),
    ("backend.njobs=2", "unknown config key 'backend.njobs' (did you mean 'n_jobs'?)"),
    ("drop_target=maybe", "drop_target: Value 'maybe' is not a valid bool"),
    ("hydra.run.dir=elsewhere", "Hydra's own settings (hydra.*) are not used by this harness"),
    ("hydra.verbose=true", "Hydra's own settings (hydra.*) are not used by this harness"),
    ("hydra.sweeper.params={rho:0.1}", "Hydra's own settings (hydra.*) are not used by this harness"),
    ("hydra/launcher=basic", "Hydra's own settings (hydra.*) are not used by this harness"),
    ("trials=100000000", "the grid has 900,000,000 cells, more than max_cells=50,000"),
    ("trials=0", "trials must be >= 1"),
    ("rho=0.1,1", "add -m (--multirun)"),
])
def test_user_errors_get_one_line_exit_2_and_nothing_runs(tmp_path, capsys, override, words):
    # the default loader: names are checked against the data-set registry
    args = ["run", "experiment=demo", f"runs_dir={tmp_path}", "progress=false", override]
    code, out, err = run_cli(capsys, *args)
    assert code == 2 and words in one_error_line(err)
    assert not list(tmp_path.iterdir())  # no store, no cell


def test_runs_dir_naming_a_file_is_a_user_error(tmp_path, capsys):
    target = tmp_path / "a_file"
    target.write_text("x")
    code, _, err = run_cli(capsys, "run", *SMALL, f"runs_dir={target}")
    assert code == 2 and "is not a directory" in one_error_line(err)
    assert target.read_text() == "x"


def test_a_full_disk_is_one_line_and_the_store_stays_resumable(tmp_path, capsys, monkeypatch):
    real_fsync = os.fsync
    calls = {"n": 0}

    def fsync(fd):
        calls["n"] += 1
        if calls["n"] > 3:  # the manifest and two cells fit; then the disk is full
            raise OSError(errno.ENOSPC, "No space left on device")
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    code, _, err = run_cli(capsys, "run", *SMALL, f"runs_dir={tmp_path}")
    line = one_error_line(err)
    assert code == 2 and "No space left on device" in line and "cells" in line
    store = RunStore(tmp_path / "demo")
    assert len(store.scan().finished) == 2 and not list(store.cells_dir.glob(".*.tmp"))
    monkeypatch.setattr(os, "fsync", real_fsync)
    code, out, _ = run_cli(capsys, "run", *SMALL, f"runs_dir={tmp_path}")
    assert code == 0 and "already done: 2" in out and "ran: 2" in out


def test_a_run_with_nothing_to_do_writes_nothing(tmp_path, capsys):
    assert run_cli(capsys, "run", *SMALL, f"runs_dir={tmp_path}")[0] == 0
    store = RunStore(tmp_path / "demo")
    files = [store.manifest_path, store.results_path, *store.cells_dir.iterdir()]
    before = {p: (p.stat().st_mtime_ns, p.read_bytes()) for p in files}
    code, out, _ = run_cli(capsys, "run", *SMALL, f"runs_dir={tmp_path}")
    assert code == 0 and "already done: 4" in out
    assert {p: (p.stat().st_mtime_ns, p.read_bytes()) for p in files} == before


def test_a_read_only_store_can_be_rechecked(tmp_path, capsys, monkeypatch):
    """Without write permission there is no lock to take; a finished store still reruns and collects."""
    assert run_cli(capsys, "run", *SMALL, f"runs_dir={tmp_path}")[0] == 0
    real_open = os.open

    def read_only(path, flags, *a, **kw):
        if flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT):
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return real_open(path, flags, *a, **kw)

    monkeypatch.setattr(os, "open", read_only)
    code, out, _ = run_cli(capsys, "run", *SMALL, f"runs_dir={tmp_path}")
    assert code == 0 and "already done: 4" in out and "collected 4 cells" in out


def test_a_second_writer_is_refused_with_a_clear_line(tmp_path, capsys):
    with RunStore(tmp_path / "demo").lock():
        code, _, err = run_cli(capsys, "run", *SMALL, f"runs_dir={tmp_path}")
    assert code == 2 and "is being written by another run (pid" in one_error_line(err)
    assert not (tmp_path / "demo" / "cells").exists()


def test_a_bad_scheduler_address_is_one_line(tmp_path, capsys):
    port = free_port()
    t0 = time.monotonic()
    code, _, err = run_cli(capsys, "run", *SMALL, f"runs_dir={tmp_path}", "backend=dask",
                        f"backend.address=tcp://127.0.0.1:{port}", "backend.timeout=0.5")
    assert code == 2 and f"cannot reach the dask scheduler at tcp://127.0.0.1:{port}" in one_error_line(err)
    assert time.monotonic() - t0 < 30


def test_worker_count_is_capped_by_cores_and_pending_cells(tmp_path):
    cores = len(os.sched_getaffinity(0))
    assert n_workers(1000, 1) == 1 and n_workers(1000, 10_000) == cores
    assert n_workers(-1, 10_000) == cores and n_workers(-1, 1) == 1
    assert n_workers(1000, 3, local=False) == 3
    cfg = to_plain(compose_config([*SMALL, f"runs_dir={tmp_path}", "rho=[1.0]", "trials=1",
                                   "backend.n_jobs=1000"]))
    summary = run_sweep(cfg)
    assert (summary.n_ok, summary.n_workers) == (1, 1)


# ---------------------------------------------------------------- signals



def _descendants(pid: int) -> set[int]:
    out, todo = set(), [pid]
    while todo:
        p = todo.pop()
        kids = subprocess.run(["ps", "-o", "pid=", "--ppid", str(p)], capture_output=True, text=True).stdout.split()
        for k in map(int, kids):
            if k not in out:
                out.add(k)
                todo.append(k)
    return out


def _running(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "\nState:\tZ" not in status  # a zombie has ended; only its exit status is left


@pytest.mark.slow
@pytest.mark.parametrize("signum, group", [(signal.SIGTERM, False), (signal.SIGINT, True)])
def test_a_signal_ends_the_run_cleanly_and_it_resumes(tmp_path, capsys, signum, group):
    # 3 of the 8 cells finish; the others are held in their workers until the signal (bench_loaders.GatedDiagonal)
    args = [*(a for a in SMALL if not a.startswith("method=")), f"runs_dir={tmp_path}", "datasets=[syn1,bc]",
            "trials=2", "method=[]", GATED, "backend.n_jobs=2"]
    cells_dir = tmp_path / "demo" / "cells"
    (tmp_path / "gate").mkdir()
    proc = harness_process(["run", *args], env=gate_env(tmp_path / "gate", 3), start_new_session=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if cells_dir.is_dir() and len(list(cells_dir.glob("*.json"))) >= 3:
            break
        time.sleep(0.02)
    assert proc.poll() is None, "the sweep ended before the signal: " + proc.communicate()[1][-2000:]
    workers = _descendants(proc.pid)
    assert workers, "no worker processes were started"
    # Ctrl-C in a terminal reaches the whole process group; `kill` reaches the sweep's process only
    (os.killpg if group else os.kill)(proc.pid, signum)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signum
    assert "Traceback" not in err and "interrupted" in err, err
    assert [ln for ln in err.splitlines() if ln.strip()] == [
        f"interrupted ({signal.Signals(signum).name}): every finished cell is stored; "
        "rerun the same command to resume"]
    deadline = time.monotonic() + 20
    while any(_running(w) for w in workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [w for w in workers if _running(w)], "worker processes outlived the run"
    assert not list((tmp_path / "demo").rglob("*.tmp"))
    survivors = {p.name: p.read_bytes() for p in cells_dir.glob("*.json")}
    # The rerun in this process and on one worker (the cells do not depend on the workers): what is
    # tested is what it finds in the store, and a second interpreter's start-up would double the time.
    code, out, err = run_cli(capsys, "run", *args[:-1], "backend.n_jobs=1")
    assert code == 0, err
    assert len(survivors) == 3 and "already done: 3" in out and "failures: 0" in out
    assert len(list(cells_dir.glob("*.json"))) == 8
    for name, content in survivors.items():
        assert (cells_dir / name).read_bytes() == content


# ---------------------------------------------------------------- results never shrink

def test_a_reduced_grid_adds_to_the_table_and_summary_shows_its_view(tmp_path, capsys):
    assert run_cli(capsys, "run", *SMALL, f"runs_dir={tmp_path}")[0] == 0  # 4 cells
    code, out, _ = run_cli(capsys, "run", *SMALL, f"runs_dir={tmp_path}", "rho=[0.1]", "trials=[0]",
                        "datasets=[syn1,syn2]")
    assert code == 0 and "this grid: 2 cells, 2 stored, 0 missing; 3 stored cells of other grids" in out
    table = pd.read_parquet(tmp_path / "demo" / "results.parquet")
    assert len(table) == 5 == len(RunStore(tmp_path / "demo").scan().rows)
    assert run_cli(capsys, "collect", *SMALL, f"runs_dir={tmp_path}", "rho=[0.1]")[0] == 0
    assert len(pd.read_parquet(tmp_path / "demo" / "results.parquet")) == 5
    code, out, _ = run_cli(capsys, "summary", *SMALL, f"runs_dir={tmp_path}", "datasets=[syn2]")
    assert code == 0 and "syn2" in out and "syn1" not in out
    assert "1 of the grid's 4 cells are stored" in out and "holds 5 cells in all" in out


def test_summary_of_a_recipe_shows_what_the_figures_draw(tmp_path, capsys):
    """The recipe's grid alone: cells outside it are one line of the summary, and the figures refuse them."""
    from paceggm.bench.figures.results import load_results

    args = ["experiment=demo", f"runs_dir={tmp_path}", "progress=false", "backend.n_jobs=1"]
    assert run_cli(capsys, "run", *args)[0] == 0
    code, out, _ = run_cli(capsys, "summary", *args)
    n = len(expand(to_plain(compose_config(args))))
    assert code == 0 and f"# the recipe's grid: {n} of its {n} cells are stored" in out
    shown = {float(line.split()[2]) for line in out.splitlines()[1:] if line.startswith("breast")}
    drawn = load_results(tmp_path)[0]["demo"]
    assert shown == set(drawn["rho"]) == {0.01, 0.1, 1.0}
    assert run_cli(capsys, "run", *args, "rho=[0.5]", "trials=[0]")[0] == 0  # cells outside the recipe
    code, out, _ = run_cli(capsys, "summary", *args)
    assert code == 0 and f"# the recipe's grid: {n} of its {n} cells are stored" in out
    assert "# not summarized: 3 stored cells outside the recipe's grid (bound policy raise: 3)" in out
    assert {float(line.split()[2]) for line in out.splitlines()[1:] if line.startswith("breast")} == shown
    tables, errors = load_results(tmp_path)
    assert "demo" not in tables and "3 rows are cells outside the recipe's grid" in errors["demo"]
    code, out, _ = run_cli(capsys, "summary", *args, "rho=[0.5]", "trials=[0]")
    assert code == 0 and "3 of the grid's 3 cells are stored" in out and " 0.01 " not in out


def test_publish_writes_only_a_complete_recipe_grid(tmp_path, capsys):
    dest = tmp_path / "published"
    args = ["experiment=demo", f"runs_dir={tmp_path / 'runs'}", "progress=false", "backend.n_jobs=1"]
    assert run_cli(capsys, "run", *args)[0] == 0
    victims = sorted((tmp_path / "runs" / "demo" / "cells").glob("*.json"))[:3]
    for path in victims:  # as if their data set had been unavailable
        path.unlink()
    code, out, _ = run_cli(capsys, "collect", "--publish", str(dest), *args)
    n = len(expand(to_plain(compose_config(args))))
    assert code == 0 and f"not published: 3 of the grid's {n} cells are not stored" in out
    assert not dest.exists()
    assert run_cli(capsys, "run", *args)[0] == 0
    code, out, _ = run_cli(capsys, "collect", "--publish", str(dest), *args)
    assert code == 0 and f"published {n} cells" in out
    assert set(pd.read_parquet(dest / "demo" / "results.parquet")["cell_key"]) == \
        {c.key for c in expand(to_plain(compose_config(args)))}


def test_publish_leaves_out_only_cells_of_unavailable_data(tmp_path, capsys, monkeypatch):
    from paceggm.bench import runner

    dest = tmp_path / "published"
    args = ["experiment=demo", f"runs_dir={tmp_path / 'runs'}", "progress=false", "backend.n_jobs=1"]

    def offline(name, **kw):
        raise ConnectionError("no network")

    monkeypatch.setattr(runner, "default_loader", offline)
    code, out, _ = run_cli(capsys, "run", *args)
    assert code == 0 and "unavailable: " in out
    assert RunStore(tmp_path / "runs" / "demo").unavailable() == {
        "breast_cancer_sklearn": "ConnectionError: no network"}
    code, out, _ = run_cli(capsys, "collect", "--publish", str(dest), *args)
    assert code == 0 and "not published: no cell of the grid is stored" in out and not dest.exists()
    monkeypatch.undo()
    assert run_cli(capsys, "run", *args)[0] == 0
    assert RunStore(tmp_path / "runs" / "demo").unavailable() == {}  # available again: forgotten


def test_publish_leaves_out_the_cells_of_unavailable_data_sets_only(tmp_path):
    from paceggm.bench.collect import publish

    cfg = to_plain(compose_config(SMALL + ["datasets=[syn1,syn2]"]))
    cells = expand(cfg)
    from paceggm.bench.collect import collect

    half = to_plain(compose_config(SMALL + ["datasets=[syn1]", f"runs_dir={tmp_path}"]))
    run_sweep(half)
    table, _ = collect(store_for(half))
    ok, text = publish(table, cells, tmp_path / "out.parquet")
    assert not ok and "not published: 4 of the grid's 8 cells" in text
    ok, text = publish(table, cells, tmp_path / "out.parquet", unavailable={"syn2"})
    assert ok and text.endswith("; 4 cells of unavailable data sets (syn2) left out")
    assert len(pd.read_parquet(tmp_path / "out.parquet")) == 4


def test_publishing_a_recipe_with_grid_overrides_is_refused(tmp_path, capsys):
    code, _, err = run_cli(capsys, "collect", "--publish", str(tmp_path), "experiment=demo", "rho=[0.1]",
                        f"runs_dir={tmp_path}")
    assert code == 2 and "drop them" in one_error_line(err)


# ---------------------------------------------------------------- a conventional command line

def test_help_for_the_program_and_each_command(capsys, monkeypatch):
    code, out, _ = run_cli(capsys, "--help")
    assert code == 0 and all(c in out for c in ("run", "collect", "show", "summary", "figures"))
    for command in ("run", "collect", "show", "summary"):
        code, out, _ = run_cli(capsys, command, "--help")
        assert code == 0 and "--multirun" in out and "--cfg" in out and f"paceggm-bench {command}" in out
    code, out, _ = run_cli(capsys, "figures", "--help")
    assert code == 0 and "--runs" in out
    # `python -m paceggm.bench --help`, run here (a fresh interpreter would add seconds of imports)
    monkeypatch.setattr(sys, "argv", ["__main__.py", "--help"])
    monkeypatch.delitem(sys.modules, "paceggm.bench.__main__")  # run as the interpreter would: not imported yet
    with pytest.raises(SystemExit) as exit_:
        runpy.run_module("paceggm.bench", run_name="__main__")
    assert exit_.value.code == 0 and "usage: paceggm-bench" in capsys.readouterr().out


def test_cfg_job_prints_the_composed_config_and_runs_nothing(tmp_path, capsys):
    import yaml

    code, out, _ = run_cli(capsys, "run", "--cfg", "job", "experiment=hyperparameters", "trials=2",
                        f"runs_dir={tmp_path}")
    cfg = yaml.safe_load(out)
    assert code == 0 and cfg["name"] == "hyperparameters" and cfg["trials"] == 2
    assert not list(tmp_path.iterdir())


def test_multirun_runs_one_job_per_swept_value(tmp_path, capsys):
    code, out, _ = run_cli(capsys, "run", "-m", *SMALL, f"runs_dir={tmp_path}", "rho=0.1,1", "trials=1")
    assert code == 0 and "# job 1/2: " in out and "# job 2/2: " in out
    table = pd.read_parquet(tmp_path / "demo" / "results.parquet")
    assert sorted(table["rho"]) == [0.1, 1.0]
    code, out, _ = run_cli(capsys, "show", "--multirun", *SMALL, f"runs_dir={tmp_path}", "rho=choice(0.1,1)",
                        "trials=range(1,3)")
    assert code == 0 and out.count("# job ") == 4 and out.count("# 1 cells") == out.count("# 2 cells") == 2


def test_the_multirun_hint_of_a_sweep_without_m_works(tmp_path, capsys):
    code, _, err = run_cli(capsys, "show", *SMALL, f"runs_dir={tmp_path}", "rho=0.1,1")
    assert code == 2 and "add -m (--multirun)" in err
    assert run_cli(capsys, "show", "-m", *SMALL, f"runs_dir={tmp_path}", "rho=0.1,1")[0] == 0


# ---------------------------------------------------------------- no file breaks a store

def test_malformed_and_mistyped_cell_files_are_quarantined_and_recomputed(tmp_path, capsys):
    assert run_cli(capsys, "run", *SMALL, f"runs_dir={tmp_path}")[0] == 0
    store = RunStore(tmp_path / "demo")
    first, second, third = sorted(store.cells_dir.glob("*.json"))[:3]
    first.write_text("[" * 100_000)  # RecursionError in a JSON parser
    payload = json.loads(second.read_text())
    payload["row"].update(n=[1, 2], rho="abc")  # and sealed again: the checksum alone cannot tell
    payload["sha256"] = _payload_digest({k: v for k, v in payload.items() if k != "sha256"})
    second.write_text(json.dumps(payload))
    third.write_bytes(b"\xff" * 10)
    code, out, err = run_cli(capsys, "collect", *SMALL, f"runs_dir={tmp_path}")
    assert code == 0 and "corrupt 3" in out and "moved to" in out and "Traceback" not in err
    assert len(list((store.root / "quarantine").glob("*.json.*Z"))) == 3
    code, out, _ = run_cli(capsys, "run", *SMALL, f"runs_dir={tmp_path}")
    assert code == 0 and "already done: 1 | ran: 3 (ok 3, failed 0)" in out
    assert len(store.scan().rows) == 4 and not store.scan().corrupt


def test_a_damaged_results_table_is_rebuilt_for_the_summary(tmp_path, capsys):
    assert run_cli(capsys, "run", *SMALL, f"runs_dir={tmp_path}")[0] == 0
    path = tmp_path / "demo" / "results.parquet"
    path.write_bytes(path.read_bytes()[:300])
    code, out, err = run_cli(capsys, "summary", *SMALL, f"runs_dir={tmp_path}")
    assert code == 0 and "cannot be used" in err and "rebuilt from the cell files" in err and "Traceback" not in err
    assert "4 of the grid's 4 cells are stored" in out
    pd.read_parquet(path).drop(columns=["rho_spent"]).to_parquet(path)  # a column lost
    code, out, err = run_cli(capsys, "summary", *SMALL, f"runs_dir={tmp_path}")
    assert code == 0 and "no column(s) rho_spent" in err and "rho_spent" in pd.read_parquet(path).columns


def test_a_damaged_manifest_is_not_rebuilt_into_another_bound_policy(tmp_path, capsys):
    assert run_cli(capsys, "run", *SMALL, f"runs_dir={tmp_path}")[0] == 0
    manifest = tmp_path / "demo" / "manifest.json"
    manifest.write_text("{")
    code, out, err = run_cli(capsys, "run", *SMALL, f"runs_dir={tmp_path}", "bound_check=waive")
    line = one_error_line(err)
    assert code == 2 and "4 cells with bound policy raise; this run: preprocessing strict, bound policy waive" in line
    assert manifest.read_text() == "{" and len(RunStore(tmp_path / "demo").scan().rows) == 4
    code, out, _ = run_cli(capsys, "run", *SMALL, f"runs_dir={tmp_path}")  # the cells' own policy: rebuilt
    assert code == 0 and "has been rebuilt" in out


# ---------------------------------------------------------------- prune, summary labels, --yes, log

def test_prune_failed_cells_a_policy_and_a_commit(tmp_path, capsys):
    broken = "+method.broken={key:broken,target:'paceggm.no_such_module:Estimator'}"
    assert run_cli(capsys, "run", *SMALL, f"runs_dir={tmp_path}", broken)[0] == 1
    store = RunStore(tmp_path / "demo")
    assert len(store.scan().rows) == 8
    code, out, _ = run_cli(capsys, "prune", "--failed", "--dry-run", *SMALL, f"runs_dir={tmp_path}")
    assert code == 0 and "would prune 4 of 8 cells (failed)" in out and len(store.scan().rows) == 8
    code, out, _ = run_cli(capsys, "prune", "--failed", *SMALL, f"runs_dir={tmp_path}")
    assert code == 0 and "pruned 4 of 8 cells (failed)" in out and "collected 4 cells (ok 4, failed 0" in out
    code, out, _ = run_cli(capsys, "prune", "--policy", "waive", *SMALL, f"runs_dir={tmp_path}")
    assert code == 0 and "pruned 0 of 4 cells" in out  # demo's strict preprocessing enforces the bound
    commit = next(iter(store.scan().meta.values()))["computed"]["commit"]
    code, out, _ = run_cli(capsys, "prune", "--policy", "raise", "--commit", commit[:7], *SMALL, f"runs_dir={tmp_path}")
    assert code == 0 and f"pruned 4 of 4 cells (bound policy raise, commit {commit[:7]})" in out
    assert not store.scan().rows and len(pd.read_parquet(store.results_path)) == 0
    code, _, err = run_cli(capsys, "prune", *SMALL, f"runs_dir={tmp_path}")
    assert code == 2 and "prune needs at least one of --failed, --policy, --commit" in one_error_line(err)


def test_summary_never_shows_a_variant_under_the_default_s_name(tmp_path, capsys):
    # one grid holding both: the default entry and one run with another solver under its own entry name
    pgd0 = "+method.pgd={key:paceggm,params:{solver:pgd0}}"
    assert run_cli(capsys, "run", *SMALL, f"runs_dir={tmp_path}", pgd0)[0] == 0
    code, out, _ = run_cli(capsys, "summary", *SMALL, f"runs_dir={tmp_path}", pgd0)
    assert code == 0 and "paceggm[solver=pgd0]" in out
    lines = [ln.split() for ln in out.splitlines() if ln.split()[:1] == ["syn1"] and ln.split()[1].startswith("paceggm")]
    assert sorted(ln[1] for ln in lines) == ["paceggm", "paceggm", "paceggm[solver=pgd0]", "paceggm[solver=pgd0]"]
    assert all(ln[3] == "2" for ln in lines)  # two trials each, never four
    assert run_cli(capsys, "run", *SMALL, f"runs_dir={tmp_path}", "method.paceggm.params.solver=pgd0")[0] == 0
    code, out, _ = run_cli(capsys, "summary", *SMALL, f"runs_dir={tmp_path}", "method.paceggm.params.solver=pgd0")
    assert code == 0 and "paceggm[solver=pgd0]" in out  # alone in its view, still not "paceggm"


def test_a_large_grid_runs_only_when_confirmed(tmp_path, capsys):
    code, _, err = run_cli(capsys, "show", *SMALL, "max_cells=3")
    assert code == 2 and "the grid has 4 cells, more than max_cells=3" in one_error_line(err)
    code, out, _ = run_cli(capsys, "show", "--yes", *SMALL, "max_cells=3")
    assert code == 0 and out.rstrip().endswith("# 4 cells")


def test_each_run_writes_a_log_file_in_its_store(tmp_path, capsys):
    broken = "+method.broken={key:broken,target:'paceggm.no_such_module:Estimator'}"
    code, out, err = run_cli(capsys, "run", *SMALL, f"runs_dir={tmp_path}", broken, "datasets=[syn1,not_here]")
    assert code == 1
    logs = list((tmp_path / "demo" / "logs").glob("*.log"))
    assert len(logs) == 1 and f"log: {logs[0]}" in out
    text = logs[0].read_text()
    assert "paceggm-bench run demo" in text and "grid: 16 cells, 0 already stored, 16 to run" in text
    assert "WARNING data set not_here not available (8 cells left pending)" in text
    assert text.count("ERROR   failed") == 4 and "ModuleNotFoundError" in text and "Traceback" in text
    assert text.count("INFO    ok ") == 4 and "done: ran 8 (ok 4, failed 4), unavailable 8" in text
    assert "INFO" not in out and "Traceback" not in err  # the console stays as it was
    manifest = json.loads((tmp_path / "demo" / "manifest.json").read_text())
    assert manifest["runs"][-1]["log"] == str(logs[0].relative_to(tmp_path / "demo"))
    # nothing to do: no file (the store may be read-only)
    assert run_cli(capsys, "run", *SMALL, f"runs_dir={tmp_path}")[0] == 0
    assert len(list((tmp_path / "demo" / "logs").glob("*.log"))) == 1


def test_a_missing_extra_is_one_line_naming_it(monkeypatch, capsys):
    for name in [m for m in sys.modules if m == "hydra" or m.startswith("hydra.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "hydra", None)  # import hydra -> ModuleNotFoundError
    code, out, err = run_cli(capsys, "run", "experiment=demo")
    assert code == 2 and one_error_line(err) == ("error: this command needs the 'bench' extra (module 'hydra' is "
                                                  "not installed): pip install \"paceggm[bench]\"")


ENTRY_POINTS = {"paceggm.bench.figures": ["--runs", "nowhere"], "paceggm.bench.data": ["list"],
                "paceggm.bench": ["figures"]}


def test_every_entry_point_names_a_missing_extra_in_one_line():
    # A fresh interpreter where pandas cannot be imported, as after `pip install paceggm` alone; one
    # interpreter runs every entry point in turn (each start-up imports scikit-learn: seconds apiece).
    code = ("import contextlib, io, json, runpy, sys; sys.modules['pandas'] = None; out = {}\n"
            f"for module, args in {ENTRY_POINTS!r}.items():\n"
            "    sys.argv, err = [module, *args], io.StringIO()\n"
            "    with contextlib.redirect_stderr(err):\n"
            "        try:\n"
            "            runpy.run_module(module, run_name='__main__')\n"
            "            status = 0\n"
            "        except SystemExit as exc:\n"
            "            status = exc.code\n"
            "    out[module] = [status, err.getvalue()]\n"
            "print(json.dumps(out))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    results = json.loads(proc.stdout)
    assert list(results) == list(ENTRY_POINTS)
    for module, (status, err) in results.items():
        assert status == 2, (module, err)
        assert err.strip().splitlines() == [
            "error: this command needs the 'bench' extra (module 'pandas' is not installed): pip install "
            "\"paceggm[bench]\""], module


def test_an_offline_run_says_per_data_set_what_is_missing_and_where_to_put_it(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("PACEGGM_OFFLINE", "1")
    empty = tmp_path / "data"
    empty.mkdir()
    code, out, _ = run_cli(capsys, "run", "experiment=demo", "method=[diagonal]", "datasets=[seoul_bike,madeline]",
                        f"data_dir={empty}", f"runs_dir={tmp_path}", "progress=false")
    assert code == 0 and "unavailable: 18" in out
    assert (f"9 cells of seoul_bike: no seoul_bike.csv.gz in {empty}; no OpenML copy is registered. To fix: put "
            "the file(s) there (gzip or plain; addresses: raw.urls in conf/dataset/seoul_bike.yaml) or point "
            "$PACEGGM_DATA_DIR / data_dir=… at the folder holding it") in out
    assert ("9 cells of madeline: no local copy (only on OpenML); OpenML 41144: ConnectionError. To fix: download "
            "OpenML 41144 once with network access") in out


@pytest.mark.parametrize("name", ["../x", "a/b", "a\\b", ".hidden", "figures", "tables", "results"])
def test_a_sweep_name_that_leaves_its_folder_or_takes_the_figures_own_is_refused(tmp_path, capsys, name):
    code, out, err = run_cli(capsys, "run", "experiment=demo", f"name={name}", f"runs_dir={tmp_path}")
    assert code == 2 and "the experiment name" in one_error_line(err) and repr(name) in err
    assert not any(tmp_path.iterdir())

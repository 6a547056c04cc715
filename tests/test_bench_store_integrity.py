"""A store's cells are read for what they are: their bound policy, inside or outside their recipe's grid.

Summaries never average cells of two bound policies or cells outside the recipe's grid, the figures stage
refuses a table that would, and publishing leaves them out — with or without the store's manifest. Hostile
``target=`` / ``reuse_from=`` values are one-line usage errors, and a read-only store stays readable.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
from pathlib import Path

import pandas as pd
import pytest

from paceggm.bench.cells import expand
from paceggm.bench.collect import collect, publish
from paceggm.bench.config import compose_config, to_plain
from paceggm.bench.figures.results import load_results
from paceggm.bench.runner import store_for
from paceggm.bench.store import RunStore, _payload_digest

from bench_loaders import one_error_line, run_cli

DEMO = ["experiment=demo", "progress=false", "backend.n_jobs=1"]


def _plant(capsys, tmp_path, runs: Path, *overrides) -> int:
    """Compute cells of ``overrides`` in a scratch store and copy their (validly sealed) files into ``runs``."""
    scratch = tmp_path / "scratch"
    assert run_cli(capsys, "run", *DEMO, f"runs_dir={scratch}", *overrides)[0] == 0
    files = sorted((scratch / "demo" / "cells").glob("*.json"))
    for path in files:
        shutil.copy2(path, runs / "demo" / "cells" / path.name)
    shutil.rmtree(scratch)
    return len(files)


def _rows(out: str, dataset: str = "breast_cancer_sklearn") -> list[list[str]]:
    return [ln.split() for ln in out.splitlines() if ln.startswith(dataset)]


@pytest.fixture
def demo_store(tmp_path, capsys):
    """The demo recipe's whole grid, stored: (runs_dir, number of cells, the recipe's trials)."""
    runs = tmp_path / "runs"
    assert run_cli(capsys, "run", *DEMO, f"runs_dir={runs}")[0] == 0
    cfg = to_plain(compose_config([*DEMO, f"runs_dir={runs}"]))
    return runs, len(expand(cfg)), cfg["trials"]


# ---------------------------------------------------------------- two bound policies in one store

def test_a_run_under_another_policy_is_refused_even_without_the_manifest(demo_store, capsys):
    runs, n, _ = demo_store
    code, _, err = run_cli(capsys, "run", *DEMO, f"runs_dir={runs}", "bound_check=clip")
    assert code == 2 and "created with a different configuration" in one_error_line(err)
    (runs / "demo" / "manifest.json").unlink()
    code, _, err = run_cli(capsys, "run", *DEMO, f"runs_dir={runs}", "bound_check=clip")
    line = one_error_line(err)
    assert code == 2 and "has no manifest.json, and its cells were computed with another configuration" in line
    assert f"{n} cells with bound policy raise" in line
    assert len(list((runs / "demo" / "cells").glob("*.json"))) == n  # nothing added beside them


@pytest.mark.parametrize("manifest", ["kept", "deleted"])
def test_cells_of_another_policy_are_never_averaged_with_the_recipe_s(demo_store, tmp_path, capsys, manifest):
    runs, n, trials = demo_store
    planted = _plant(capsys, tmp_path, runs, "bound_check=clip")
    if manifest == "deleted":
        (runs / "demo" / "manifest.json").unlink()
    code, out, _ = run_cli(capsys, "collect", *DEMO, f"runs_dir={runs}")
    assert code == 0 and f"computed under 2 bound policies (clip: {planted}, raise: {n})" in out
    assert f"{planted} stored cells are outside the recipe's grid (clip: {planted}" in out
    table = pd.read_parquet(runs / "demo" / "results.parquet")
    assert table.groupby("bound_check")["in_grid"].agg(lambda s: set(s)).to_dict() == {"clip": {False},
                                                                                       "raise": {True}}
    code, out, _ = run_cli(capsys, "summary", *DEMO, f"runs_dir={runs}")
    assert code == 0 and f"# the recipe's grid: {n} of its {n} cells are stored" in out
    assert f"# not summarized: {planted} stored cells outside the recipe's grid (bound policy clip: {planted})" in out
    assert _rows(out) and all(row[3] == str(trials) for row in _rows(out))  # trials of one policy only
    # the figures stage refuses the mixed table; publishing writes the recipe's grid alone
    tables, errors = load_results(runs)
    assert "demo" not in tables and "outside the recipe's grid" in errors["demo"]
    code, out, _ = run_cli(capsys, "collect", "--publish", str(tmp_path / "pub"), *DEMO, f"runs_dir={runs}")
    assert code == 0 and f"published {n} cells" in out and f"{planted} stored cells outside the grid left out" in out
    published = pd.read_parquet(tmp_path / "pub" / "demo" / "results.parquet")
    assert set(published["bound_check"]) == {"raise"} and published["in_grid"].all()
    assert "demo" in load_results(tmp_path / "pub")[0]


def test_summary_groups_by_policy_when_a_grid_s_records_disagree():
    rows = [dict(dataset="a", variant="paceggm", rho=1.0, trial=t, status="ok", mahalanobis=float(m),
                 frobenius=1.0, mse=float("nan"), wall_time=0.1, bound_check=p)
            for t, (m, p) in enumerate([(1, "raise"), (2, "raise"), (3, "raise"), (10, "clip"), (20, "clip"),
                                        (30, "clip")])]
    from paceggm.bench.summary import summarize

    out = summarize(pd.DataFrame(rows)).set_index("bound_check")
    assert out.loc["raise", "trials"] == 3 and out.loc["raise", "mahalanobis"] == 2.0
    assert out.loc["clip", "trials"] == 3 and out.loc["clip", "mahalanobis"] == 20.0


def test_publish_refuses_a_grid_cell_recording_another_policy(demo_store, tmp_path, capsys):
    """A record whose policy disagrees with its key (sealed anew: the checksum detects damage, not forgery)."""
    runs, n, _ = demo_store
    victim = sorted((runs / "demo" / "cells").glob("*.json"))[0]
    payload = json.loads(victim.read_text())
    payload["computed"]["bound_check"] = "clip"
    payload["sha256"] = _payload_digest(payload)
    victim.write_text(json.dumps(payload))
    code, out, _ = run_cli(capsys, "collect", "--publish", str(tmp_path / "pub"), *DEMO, f"runs_dir={runs}")
    assert code == 1 and "not published: 1 stored cells of the grid record another bound policy (clip)" in out
    assert not (tmp_path / "pub").exists()
    code, out, _ = run_cli(capsys, "summary", *DEMO, f"runs_dir={runs}")
    assert code == 0 and "bound policy" in out.splitlines()[0] and " clip " in out


# ---------------------------------------------------------------- a planted cell outside the grid

@pytest.mark.parametrize("manifest", ["kept", "deleted"])
def test_a_planted_cell_outside_the_grid_is_reported_not_counted(demo_store, tmp_path, capsys, manifest):
    runs, n, trials = demo_store
    before = run_cli(capsys, "summary", *DEMO, f"runs_dir={runs}")[1]
    planted = _plant(capsys, tmp_path, runs, f"trials=[{trials}]", "rho=[1.0]", "method=[diagonal]")
    assert planted == 1
    if manifest == "deleted":
        (runs / "demo" / "manifest.json").unlink()
    assert run_cli(capsys, "collect", *DEMO, f"runs_dir={runs}")[0] == 0
    code, out, _ = run_cli(capsys, "summary", *DEMO, f"runs_dir={runs}")
    assert code == 0 and _rows(out) == _rows(before)  # same trials, same means
    assert "# not summarized: 1 stored cells outside the recipe's grid (bound policy raise: 1)" in out


# ---------------------------------------------------------------- hostile configuration

@pytest.mark.parametrize("override, words", [
    ("+method.ssp.target=os:system", "target 'os:system' is not an estimator class the harness can run"),
    ("+method.ssp.target=subprocess:Popen", "it has no argument rho, bound, bound_check, random_state"),
    ("+method.ssp.target=builtins:dict", "it has no argument rho"),
    ("+method.ssp.target=:system", "target must look like 'module:Class'"),
    ("reuse_from=[../evil]", "reuse_from: '../evil' is not a store name"),
    ("reuse_from=[/etc]", "reuse_from: '/etc' is not a store name"),
    ("reuse_from=[..]", "reuse_from: '..' is not a store name"),
])
@pytest.mark.parametrize("command", ["show", "run"])
def test_hostile_target_and_reuse_from_are_one_line_usage_errors(tmp_path, capsys, monkeypatch, command,
                                                                  override, words):
    called = []
    monkeypatch.setattr(os, "system", lambda *a, **k: called.append(a) or 0)
    code, out, err = run_cli(capsys, command, *DEMO, f"runs_dir={tmp_path}", override)
    assert code == 2 and words in one_error_line(err) and not called
    assert not (tmp_path / "demo").exists()


def test_reuse_from_a_folder_that_is_no_store_is_refused(tmp_path, capsys):
    (tmp_path / "notastore").mkdir()
    (tmp_path / "notastore" / "secret.txt").write_text("x")
    code, _, err = run_cli(capsys, "run", *DEMO, f"runs_dir={tmp_path}", "reuse_from=[notastore]")
    assert code == 2 and f"reuse_from: {tmp_path / 'notastore'} is not a store" in one_error_line(err)


def test_a_target_meeting_the_contract_is_accepted(tmp_path, capsys):
    code, out, _ = run_cli(capsys, "show", *DEMO, "+method.ssp.target=paceggm.baselines:SSPTight")
    assert code == 0 and out.rstrip().endswith("cells")


# ---------------------------------------------------------------- a read-only store

def _read_only_mount(monkeypatch, root: Path) -> None:
    """What a read-only mount does to the store (root ignores file modes): a write open under it fails."""
    real_open = os.open

    def refuse(path, flags, *a, **kw):
        if Path(path).resolve().is_relative_to(root.resolve()) and flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT):
            raise OSError(errno.EROFS, "Read-only file system", str(path))
        return real_open(path, flags, *a, **kw)

    monkeypatch.setattr(os, "open", refuse)


def test_a_read_only_store_is_read_by_summary_collect_and_the_figures(demo_store, capsys, monkeypatch):
    runs, n, _ = demo_store
    store = runs / "demo"
    (store / ".lock").unlink()  # a complete store copied or mounted without one
    _read_only_mount(monkeypatch, store)
    code, out, _ = run_cli(capsys, "summary", *DEMO, f"runs_dir={runs}")
    assert code == 0 and f"# the recipe's grid: {n} of its {n} cells are stored" in out
    code, out, _ = run_cli(capsys, "collect", *DEMO, f"runs_dir={runs}")
    assert code == 0 and f"collected {n} cells" in out
    assert "demo" in load_results(runs)[0]
    # the table gone: summary and collect rebuild it in memory, and write nothing
    (store / "results.parquet").unlink()
    code, out, err = run_cli(capsys, "summary", *DEMO, f"runs_dir={runs}")
    assert code == 0 and "rebuilt from the cell files" in err and f"{n} of its {n} cells" in out
    code, out, _ = run_cli(capsys, "collect", *DEMO, f"runs_dir={runs}")
    assert code == 0 and f"collected {n} cells" in out and "not written" in out and "read-only" in out
    assert not (store / ".lock").exists() and not (store / "results.parquet").exists()
    assert sorted(p.name for p in store.iterdir()) == ["cells", "logs", "manifest.json"]


def test_collect_reads_a_read_only_store_in_memory(demo_store, monkeypatch):
    runs, n, _ = demo_store
    store = store_for(to_plain(compose_config([*DEMO, f"runs_dir={runs}"])))
    (store.root / "results.parquet").unlink()
    _read_only_mount(monkeypatch, store.root)
    with store.lock():
        assert not store.writable
        table, report = collect(store, write=store.writable)
    assert len(table) == n and not report.written and not store.results_path.exists()
    assert store.writable  # only while the lock was held


def test_publish_of_a_table_without_the_new_columns(demo_store, tmp_path):
    """A table collected before the records said their policy (the committed ones) is read as declared."""
    runs, n, _ = demo_store
    cfg = to_plain(compose_config([*DEMO, f"runs_dir={runs}"]))
    table = pd.read_parquet(runs / "demo" / "results.parquet").drop(columns=["bound_check", "in_grid"])
    done, message = publish(table, expand(cfg), tmp_path / "pub" / "demo" / "results.parquet")
    assert done and f"published {n} cells" in message
    assert "demo" in load_results(tmp_path / "pub")[0]


def test_the_store_lock_of_a_writable_store_is_unchanged(tmp_path):
    store = RunStore(tmp_path / "exp")
    with store.lock():
        assert store.writable and (tmp_path / "exp" / ".lock").is_file()


def test_each_record_states_its_bound_policy_and_grid(demo_store):
    from paceggm.bench.cells import grid_id

    runs, n, _ = demo_store
    cells = expand(to_plain(compose_config([*DEMO, f"runs_dir={runs}"])))
    scan = RunStore(runs / "demo").scan()
    assert len(scan.meta) == n
    assert {(m["computed"]["bound_check"], m["computed"]["grid"]) for m in scan.meta.values()} == \
        {("raise", grid_id("demo", cells))}

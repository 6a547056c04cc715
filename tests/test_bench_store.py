"""The results store: atomic cells, corruption detection, manifest compatibility, collect."""

from __future__ import annotations

import json
import math

import pytest

from paceggm.bench.store import IncompatibleRunError, RunStore


def _row(key="k1", **kw):
    row = {"cell_key": key, "status": "ok", "mahalanobis": 1.5, "frobenius": math.nan, "error": ""}
    row.update(kw)
    return row


def test_write_then_read_roundtrip(tmp_path):
    store = RunStore(tmp_path / "exp")
    path = store.write_cell(_row())
    assert path.name == "k1.json"
    row = store.read_cell(path)
    assert row["mahalanobis"] == 1.5 and math.isnan(row["frobenius"])
    assert [p.name for p in store.cells_dir.iterdir()] == ["k1.json"]  # no temporary file left behind
    scan = store.scan()
    assert scan.finished == {"k1"} and not scan.corrupt


def test_failed_cells_are_stored_but_not_finished(tmp_path):
    store = RunStore(tmp_path)
    store.write_cell(_row("a"))
    store.write_cell(_row("b", status="failed", error="Traceback…"))
    scan = store.scan()
    assert set(scan.rows) == {"a", "b"} and scan.finished == {"a"}


def test_overwrite_is_atomic_replace(tmp_path):
    store = RunStore(tmp_path)
    store.write_cell(_row(status="failed"))
    store.write_cell(_row(status="ok"))
    assert store.scan().finished == {"k1"}


@pytest.mark.parametrize(
    "damage, reason",
    [
        (lambda text: text[: len(text) // 2], "unreadable JSON"),
        (lambda text: text.replace("1.5", "0.5"), "checksum"),
        (lambda text: "[]", "not a cell record"),
        (lambda text: text.replace('"store_schema": 1', '"store_schema": 99'), "schema"),
    ],
)
def test_corrupt_cell_is_reported_not_used(tmp_path, damage, reason):
    store = RunStore(tmp_path)
    path = store.write_cell(_row())
    path.write_text(damage(path.read_text()))
    scan = store.scan()
    assert not scan.rows and len(scan.corrupt) == 1
    assert reason in scan.corrupt[0].reason and scan.corrupt[0].path == path


def test_renamed_cell_file_is_corrupt(tmp_path):
    store = RunStore(tmp_path)
    path = store.write_cell(_row())
    path.rename(path.with_name("other.json"))
    assert "does not match" in store.scan().corrupt[0].reason


def test_interrupted_write_leftovers_are_ignored(tmp_path):
    store = RunStore(tmp_path)
    store.write_cell(_row())
    (store.cells_dir / ".k2.json.abc.tmp").write_text('{"half')
    scan = store.scan()
    assert scan.finished == {"k1"} and not scan.corrupt


def test_manifest_refuses_an_incompatible_resume(tmp_path):
    store = RunStore(tmp_path)
    fp = {"name": "e", "base_seed": 0, "preprocessing": "paper"}
    store.open(fingerprint=fp, config={"a": 1}, provenance={"run": 1})
    store.open(fingerprint=dict(fp), config={"a": 2}, provenance={"run": 2})  # same fingerprint: fine
    manifest = json.loads(store.manifest_path.read_text())
    assert [r["run"] for r in manifest["runs"]] == [1, 2] and manifest["config"] == {"a": 2}
    with pytest.raises(IncompatibleRunError, match=r"base_seed: stored 0, requested 1"):
        store.open(fingerprint={**fp, "base_seed": 1}, config={}, provenance={})


@pytest.mark.parametrize("damage", ["{", "", "[]", '{"runs": []}'])
def test_damaged_manifest_is_rebuilt_from_the_cells(tmp_path, damage):
    store = RunStore(tmp_path)
    fp = {"name": "e", "base_seed": 0}
    store.open(fingerprint=fp, config={}, provenance={"run": 1})
    store.write_cell(_row("a"))
    store.manifest_path.write_text(damage)
    again = RunStore(tmp_path)
    manifest = again.open(fingerprint=fp, config={"a": 1}, provenance={"run": 2})
    assert manifest["fingerprint"] == fp and [r["run"] for r in manifest["runs"]] == [2]
    assert again.rebuilt["cell_files"] == 1 and "damaged" in again.rebuilt["damage"]
    assert (tmp_path / "manifest.json.damaged").read_text() == damage
    assert json.loads(store.manifest_path.read_text())["rebuilt"] == again.rebuilt
    assert again.scan().finished == {"a"}  # the cells are untouched


def test_a_run_with_nothing_to_record_does_not_write_the_manifest(tmp_path):
    store = RunStore(tmp_path)
    fp = {"name": "e"}
    store.open(fingerprint=fp, config={}, provenance={"run": 1})
    before = store.manifest_path.stat().st_mtime_ns, store.manifest_path.read_bytes()
    store.open(fingerprint=fp, config={}, provenance={"run": 2}, record=False)
    assert (store.manifest_path.stat().st_mtime_ns, store.manifest_path.read_bytes()) == before


def test_one_writer_per_store(tmp_path):
    import os

    from paceggm.bench.store import StoreBusyError

    store = RunStore(tmp_path / "exp")
    with store.lock():
        with pytest.raises(StoreBusyError, match="being written by another run .*pid"):
            with RunStore(tmp_path / "exp").lock():
                pass
        # another process too: a forked child opens the lock file anew, as a second run would (a fresh
        # interpreter would only add the seconds of importing scikit-learn)
        child = os.fork()
        if child == 0:
            try:
                RunStore(tmp_path / "exp").lock().__enter__()
                status = 0
            except StoreBusyError:
                status = 7
            except BaseException:
                status = 1
            os._exit(status)
        assert os.waitstatus_to_exitcode(os.waitpid(child, 0)[1]) == 7
    with RunStore(tmp_path / "exp").lock():  # released on exit
        pass


def test_the_lock_removes_temporaries_of_killed_writers(tmp_path):
    store = RunStore(tmp_path)
    store.write_cell(_row())
    stray = [store.cells_dir / ".k2.json.abc.tmp", tmp_path / ".manifest.json.x.tmp",
             tmp_path / ".results.y.parquet.tmp"]
    for path in stray:
        path.write_text("half")
    with store.lock():
        assert not any(p.exists() for p in stray)
    assert store.scan().finished == {"k1"}


def test_a_full_disk_is_an_os_error_naming_the_file(tmp_path, monkeypatch):
    import errno
    import os

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    store = RunStore(tmp_path)
    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(OSError, match="No space left") as info:
        store.write_cell(_row())
    assert info.value.filename == str(store.cell_path("k1"))
    assert list(store.cells_dir.iterdir()) == []  # neither the cell nor a temporary file

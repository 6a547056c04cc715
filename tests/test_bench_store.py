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


def test_unreadable_manifest_is_refused(tmp_path):
    store = RunStore(tmp_path)
    tmp_path.joinpath("manifest.json").write_text("{")
    with pytest.raises(IncompatibleRunError, match="cannot be read"):
        store.open(fingerprint={}, config={}, provenance={})

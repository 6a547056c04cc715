"""The store against random and adversarial files: nothing it reads breaks it, and no valid cell is lost.

A seeded generator (fixed seeds: the same files on every machine) writes cell
files that are random bytes, truncated or bit-flipped records, nesting too
deep to parse, records of the wrong shape, records with a recomputed checksum
but mistyped or inconsistent values, records whose key does not match their
description, directories and oversized files; then manifests and results
tables of the same kinds. The store must report every one, move the cell
files aside, keep every valid cell, rebuild or refuse the manifest (never
adopt another configuration), and rebuild the table from the cells.
"""

from __future__ import annotations

import copy
import json
import math
import random

import pandas as pd
import pytest

from paceggm.bench.cells import Cell
from paceggm.bench.collect import collect
from paceggm.bench.execute import failed_row
from paceggm.bench.runner import _disagreement
from paceggm.bench.schema import check_row
from paceggm.bench.store import MAX_CELL_BYTES, IncompatibleRunError, RunStore, _payload_digest

CFG = {"name": "fuzz", "preprocessing": "paper", "bound_check": "auto", "base_seed": 0}
FINGERPRINT = {"name": "fuzz", "base_seed": 0, "preprocessing": "paper", "bound_check": "auto"}


def _cell(i: int) -> Cell:
    return Cell(f"ds{i % 3}", "paper", "paceggm", "paceggm:PACEGGM", "covariance", "pattern",
                (("alpha", 0.3), ("solver", "newton")), "paceggm", [0.1, 1.0][i % 2], i, 0, "waive")


def _valid_row(cell: Cell, rng: random.Random) -> dict:
    row = failed_row(cell, "fuzz", "")
    row.update(n=100, d=5, guarantee_holds=False)
    if rng.random() < 0.2:
        row.update(error="Traceback (most recent call last):\n  ...\nValueError: boom")
    else:
        row.update(status="ok", mahalanobis=rng.uniform(0, 5), frobenius=rng.uniform(0, 5),
                   rho_spent=cell.rho, wall_time=rng.uniform(0, 2), n_rounds=3, converged=True)
    return row


def _record(store: RunStore, cell: Cell, row: dict) -> dict:
    path = store.write_cell(row, cell=cell.description(), computed={"bound_check": "waive", "commit": "abc"})
    return json.loads(path.read_text())


def _resealed(payload: dict) -> str:
    """A record edited and given a correct checksum again (damage a checksum alone cannot catch)."""
    payload = {k: v for k, v in payload.items() if k != "sha256"}
    payload["sha256"] = _payload_digest(payload)
    return json.dumps(payload)


_WRONG_VALUES = [
    ("n", [1, 2]), ("rho", "abc"), ("rho", -1.0), ("rho", float("inf")), ("trial", -1), ("trial", True),
    ("trial", 10**30), ("seed", 1.5), ("status", "maybe"), ("status", None), ("params", "[1]"), ("params", 7),
    ("error", 5), ("mahalanobis", "x"), ("guarantee_holds", "yes"), ("d", 10**40), ("dataset", ["a"]),
    ("wall_time", [0]), ("mahalanobis", float("nan")), ("rho_spent", 5.0), ("cell_key", None),
    ("converged", 1), ("n_rounds", -3), ("frobenius", {"a": 1}),
]


def _adversarial(rng: random.Random, sample: dict) -> tuple[str, bytes | str | None]:
    """One adversarial cell-file content (None: a directory), and what kind it is."""
    kind = rng.choice(["bytes", "empty", "nested", "truncated", "flipped", "not_object", "no_row",
                       "wrong_type", "ok_nan", "edited_unsealed", "renamed", "description_edited",
                       "row_vs_description", "non_utf8", "directory", "schema", "huge_number", "deep_value"])
    text = json.dumps(sample)
    if kind == "bytes":
        return kind, bytes(rng.randrange(256) for _ in range(rng.randrange(1, 400)))
    if kind == "empty":
        return kind, b""
    if kind == "nested":
        return kind, "[" * rng.choice([1000, 50_000, 200_000]) + "]" * rng.choice([0, 10])
    if kind == "truncated":
        return kind, text[: rng.randrange(1, len(text))]
    if kind == "flipped":
        data = bytearray(text.encode())
        for _ in range(rng.randrange(1, 4)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        return kind, bytes(data)
    if kind == "not_object":
        return kind, json.dumps(rng.choice([[], [1, 2], 3, "cell", None, True]))
    if kind == "no_row":
        return kind, json.dumps({k: v for k, v in sample.items() if k != "row"})
    if kind == "schema":
        return kind, _resealed({**sample, "store_schema": rng.choice([0, 2, "1", None])})
    payload = copy.deepcopy(sample)
    if kind == "wrong_type":
        col, value = rng.choice(_WRONG_VALUES)
        payload["row"][col] = value
        return kind, _resealed(payload)
    if kind == "ok_nan":
        payload["row"].update(status="ok", mahalanobis=math.nan, frobenius=math.nan, mse=math.nan)
        return kind, _resealed(payload)
    if kind == "edited_unsealed":
        payload["row"]["mahalanobis"] = 0.0
        return kind, json.dumps(payload)
    if kind == "description_edited":
        payload["cell"]["rho"] = 123.0
        return kind, _resealed(payload)
    if kind == "row_vs_description":
        payload["row"]["dataset"] = "other"
        return kind, _resealed(payload)
    if kind == "non_utf8":
        return kind, b"\xff\xfe" + text.encode("utf-16-le")
    if kind == "directory":
        return kind, None
    if kind == "huge_number":
        return kind, text.replace('"trial": ', '"trial": 1' + "0" * 5000, 1)
    if kind == "deep_value":
        payload["row"]["error"] = {"a": json.loads("[" * 300 + "]" * 300)}
        return kind, _resealed(payload)
    return kind, _resealed(payload)  # "renamed": a sound record under another cell's name


def test_no_cell_file_breaks_the_store_and_no_valid_cell_is_lost(tmp_path, capsys):
    rng = random.Random(20261127)
    store = RunStore(tmp_path / "fuzz", validate_row=check_row)
    store.open(fingerprint=FINGERPRINT, config={}, provenance={})
    valid = {}
    for i in range(60):
        cell = _cell(i)
        valid[cell.key] = _valid_row(cell, rng)
        _record(store, cell, valid[cell.key])
    sample = json.loads(store.cell_path(next(iter(valid))).read_text())
    tried: dict[str, int] = {}
    planted = []
    for j in range(300):
        kind, content = _adversarial(rng, sample)
        name = f"{rng.getrandbits(80):020x}" if kind != "renamed" else _cell(1000 + j).key
        path = store.cells_dir / f"{name}.json"
        if content is None:
            path.mkdir()
        elif isinstance(content, str):
            path.write_text(content, encoding="utf-8")
        else:
            path.write_bytes(content)
        tried[kind] = tried.get(kind, 0) + 1
        planted.append(path)
    huge = store.cells_dir / ("f" * 20 + ".json")
    with open(huge, "wb") as fh:  # sparse: larger than any record, never read whole
        fh.truncate(MAX_CELL_BYTES + 1)
    planted.append(huge)
    tried["huge_file"] = 1

    scan = store.scan()
    assert {c.path for c in scan.corrupt} == set(planted)
    assert scan.rows.keys() == valid.keys()
    lost = sum(1 for k, row in valid.items() if json.dumps(scan.rows.get(k), sort_keys=True)
               != json.dumps(row, sort_keys=True))
    assert lost == 0
    moved = store.quarantine(scan.corrupt)
    assert all(dest is not None and dest.parent == store.root / "quarantine" for _, dest in moved)
    assert {p.name for p in store.cells_dir.iterdir()} == {f"{k}.json" for k in valid}

    table, report = collect(store)
    assert set(table["cell_key"]) == valid.keys() and not report.corrupt
    with capsys.disabled():
        kinds = ", ".join(f"{k} {n}" for k, n in sorted(tried.items()))
        print(f"\nstore fuzz: {len(planted)} adversarial cell files tried ({kinds}); "
              f"{len(moved)} reported and quarantined; {len(valid)} valid cells, lost {lost}")


def _manifests(rng: random.Random) -> list[bytes]:
    good = {"store_schema": 1, "fingerprint": FINGERPRINT, "runs": []}
    out = [b"", b"{", b"[" * 100_000, b"null", b"[]", b'"x"', b"\xff\xfe\x00",
           json.dumps({"fingerprint": "x"}).encode(), json.dumps({**good, "runs": 5}).encode(),
           json.dumps({**good, "unavailable": ["a"]}).encode(), json.dumps({**good, "unavailable": {"a": 1}}).encode(),
           json.dumps({**good, "config": 3}).encode()]
    out += [bytes(rng.randrange(256) for _ in range(rng.randrange(1, 200))) for _ in range(20)]
    text = json.dumps(good).encode()
    out += [text[: rng.randrange(1, len(text))] for _ in range(10)]
    return out


def test_no_manifest_breaks_the_store_nor_adopts_another_configuration(tmp_path, capsys):
    rng = random.Random(7)
    tried = rebuilt = refused = 0
    for i, content in enumerate(_manifests(rng)):
        store = RunStore(tmp_path / f"m{i}", validate_row=check_row)
        store.open(fingerprint=FINGERPRINT, config={}, provenance={})
        cell = _cell(i)
        _record(store, cell, _valid_row(cell, rng))
        store.manifest_path.write_bytes(content)
        tried += 1
        scan = store.scan()
        # the same configuration as the cells': rebuilt
        manifest = store.open(fingerprint=FINGERPRINT, config={}, provenance={},
                              disagreement=lambda scan=scan: _disagreement(CFG, scan))
        assert store.rebuilt and manifest["fingerprint"] == FINGERPRINT
        rebuilt += 1
        assert store.scan().rows.keys() == {cell.key}  # the cells are untouched
        # damaged again, and a run asks for another bound policy: refused, the damaged file stays
        store.manifest_path.write_bytes(content)
        other = RunStore(store.root, validate_row=check_row)
        with pytest.raises(IncompatibleRunError, match="bound policy waive.*this run: preprocessing paper, "
                                                       "bound policy raise"):
            other.open(fingerprint={**FINGERPRINT, "bound_check": "raise"}, config={}, provenance={},
                       disagreement=lambda scan=scan: _disagreement({**CFG, "bound_check": "raise"}, scan))
        assert store.manifest_path.read_bytes() == content
        refused += 1
    with capsys.disabled():
        print(f"\nmanifest fuzz: {tried} damaged manifests tried; {rebuilt} rebuilt for the cells' configuration, "
              f"{refused} refused for another bound policy")


def test_a_damaged_results_table_is_rebuilt_from_the_cells(tmp_path):
    rng = random.Random(3)
    store = RunStore(tmp_path / "t", validate_row=check_row)
    keys = set()
    for i in range(5):
        cell = _cell(i)
        _record(store, cell, _valid_row(cell, rng))
        keys.add(cell.key)
    good, _ = collect(store)
    data = store.results_path.read_bytes()
    damaged = [b"", b"PAR1", data[: len(data) // 2], bytes(rng.randrange(256) for _ in range(500)),
               data[:100] + bytes(50) + data[150:]]
    dropped = tmp_path / "dropped.parquet"
    good.drop(columns=["mahalanobis"]).to_parquet(dropped, index=False)
    damaged.append(dropped.read_bytes())
    for content in damaged:
        store.results_path.write_bytes(content)
        table, _ = collect(store)
        assert set(table["cell_key"]) == keys
        again = pd.read_parquet(store.results_path)
        assert list(again.columns) == list(good.columns) and len(again) == 5

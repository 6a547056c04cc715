"""Results store of one experiment: ``runs/<experiment>/``.

Layout::

    manifest.json           resolved config, fingerprint, package versions, git commit, run history
    cells/<key>.json        one finished cell (ok or failed), written atomically
    results.parquet         the tidy table built by :func:`paceggm.bench.collect.collect`

A cell file is written to a temporary name in the same directory, flushed to
disk and renamed over its final name, so a reader (or a rerun after SIGKILL)
sees either the whole file or none of it. It carries a SHA-256 of its row: a
file that does not parse, does not match its name, or fails the checksum is
*corrupt* — reported, never used, and recomputed on the next run.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from paceggm.bench.seeds import canonical_json

__all__ = ["STORE_SCHEMA", "CorruptCell", "IncompatibleRunError", "RunStore", "ScanResult"]

STORE_SCHEMA = 1


class IncompatibleRunError(RuntimeError):
    """Resuming a store with a config that would mix incomparable results."""


@dataclass(frozen=True)
class CorruptCell:
    path: Path
    reason: str


@dataclass
class ScanResult:
    rows: dict[str, dict] = field(default_factory=dict)  # key -> row
    corrupt: list[CorruptCell] = field(default_factory=list)

    @property
    def finished(self) -> set[str]:
        """Keys of cells that ran to completion (failed cells are retried)."""
        return {k for k, r in self.rows.items() if r.get("status") == "ok"}


def _row_digest(row: dict) -> str:
    # NaN is not JSON; hash a representation where it is a marker.
    clean = {k: ("NaN" if isinstance(v, float) and math.isnan(v) else v) for k, v in row.items()}
    return hashlib.sha256(canonical_json(clean).encode()).hexdigest()


def _atomic_write_text(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


class RunStore:
    """The on-disk store of one experiment."""

    def __init__(self, root) -> None:
        self.root = Path(root)
        self.cells_dir = self.root / "cells"
        self.manifest_path = self.root / "manifest.json"
        self.results_path = self.root / "results.parquet"

    # -- manifest ---------------------------------------------------------
    def read_manifest(self) -> dict | None:
        if not self.manifest_path.exists():
            return None
        try:
            return json.loads(self.manifest_path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise IncompatibleRunError(
                f"{self.manifest_path} cannot be read ({exc}); move the store away to start afresh"
            ) from exc

    def open(self, *, fingerprint: dict, config: dict, provenance: dict) -> dict:
        """Create the store, or check that resuming it with ``fingerprint`` is sound.

        Returns the manifest as written (with this run appended to its history).

        Raises
        ------
        IncompatibleRunError
            The store was created with another fingerprint (base seed,
            preprocessing, bound policy, …): its cells and the new ones would
            not be comparable.
        """
        self.cells_dir.mkdir(parents=True, exist_ok=True)
        manifest = self.read_manifest()
        if manifest is None:
            manifest = {"store_schema": STORE_SCHEMA, "fingerprint": fingerprint, "runs": []}
        else:
            if manifest.get("store_schema") != STORE_SCHEMA:
                raise IncompatibleRunError(
                    f"{self.root} has store schema {manifest.get('store_schema')!r}, this harness writes "
                    f"{STORE_SCHEMA}; move it away or use another runs_dir"
                )
            old = manifest.get("fingerprint", {})
            if old != fingerprint:
                diffs = [
                    f"{k}: stored {old.get(k)!r}, requested {fingerprint.get(k)!r}"
                    for k in sorted(set(old) | set(fingerprint)) if old.get(k) != fingerprint.get(k)
                ]
                raise IncompatibleRunError(
                    f"refusing to resume {self.root}: it was created with a different configuration "
                    f"({'; '.join(diffs)}). Its cells would not be comparable with new ones. "
                    "Use another runs_dir (runs_dir=...), restore the original settings, "
                    "or move the old store away."
                )
        manifest["config"] = config
        manifest["runs"] = list(manifest.get("runs", [])) + [provenance]
        self.write_manifest(manifest)
        return manifest

    def write_manifest(self, manifest: dict) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        _atomic_write_text(self.manifest_path, json.dumps(manifest, indent=2, sort_keys=True, default=str))

    # -- cells ------------------------------------------------------------
    def cell_path(self, key: str) -> Path:
        return self.cells_dir / f"{key}.json"

    def write_cell(self, row: dict) -> Path:
        """Write one finished cell atomically (write, fsync, rename)."""
        key = row["cell_key"]
        path = self.cell_path(key)
        payload = {"store_schema": STORE_SCHEMA, "sha256": _row_digest(row), "row": row}
        self.cells_dir.mkdir(parents=True, exist_ok=True)
        _atomic_write_text(path, json.dumps(payload, sort_keys=True))
        return path

    def read_cell(self, path: Path) -> dict:
        """The row of a cell file; :class:`ValueError` naming the defect if it is corrupt."""
        try:
            payload = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            raise ValueError(f"unreadable JSON ({type(exc).__name__}: {exc})") from exc
        if not isinstance(payload, dict) or not isinstance(payload.get("row"), dict):
            raise ValueError("not a cell record (no 'row' object)")
        if payload.get("store_schema") != STORE_SCHEMA:
            raise ValueError(f"store schema {payload.get('store_schema')!r}, expected {STORE_SCHEMA}")
        row = payload["row"]
        if row.get("cell_key") != Path(path).stem:
            raise ValueError(f"cell_key {row.get('cell_key')!r} does not match the file name")
        if payload.get("sha256") != _row_digest(row):
            raise ValueError("checksum mismatch (the file was modified or damaged after it was written)")
        if row.get("status") not in ("ok", "failed"):
            raise ValueError(f"status {row.get('status')!r} is neither 'ok' nor 'failed'")
        return row

    def scan(self) -> ScanResult:
        """Every cell file, parsed and checked; temporary files of interrupted writes are ignored."""
        result = ScanResult()
        if not self.cells_dir.is_dir():
            return result
        for path in sorted(self.cells_dir.glob("*.json")):
            try:
                row = self.read_cell(path)
            except ValueError as exc:
                result.corrupt.append(CorruptCell(path, str(exc)))
                continue
            result.rows[row["cell_key"]] = row
        return result

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

One process writes a store at a time: :meth:`RunStore.lock` takes an exclusive
``flock`` on ``.lock`` (released by the kernel if the process dies), so a second
sweep on the same store is refused at once instead of computing every cell twice
and racing on the manifest. Holding the lock also makes it safe to delete the
temporary files an earlier, killed writer left behind. The cells are the
store's truth: a damaged manifest is rebuilt from them (every input that changes
a result is in a cell's key), losing only the run history.
"""

from __future__ import annotations

import datetime as _dt
import errno
import fcntl
import hashlib
import json
import math
import os
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from paceggm.bench.seeds import canonical_json

__all__ = ["STORE_SCHEMA", "CorruptCell", "IncompatibleRunError", "RunStore", "ScanResult", "StoreBusyError"]

STORE_SCHEMA = 1


class IncompatibleRunError(RuntimeError):
    """Resuming a store with a config that would mix incomparable results."""


class StoreBusyError(RuntimeError):
    """Another process holds the store's lock."""


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


TMP_SUFFIX = ".tmp"


def _atomic_write_text(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=TMP_SUFFIX)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        if isinstance(exc, OSError) and exc.filename is None:
            # a full disk surfaces in write/fsync, whose error names no file
            raise OSError(exc.errno, exc.strerror, str(path)) from exc
        raise


class RunStore:
    """The on-disk store of one experiment."""

    def __init__(self, root) -> None:
        self.root = Path(root)
        self.cells_dir = self.root / "cells"
        self.manifest_path = self.root / "manifest.json"
        self.results_path = self.root / "results.parquet"
        self.rebuilt: dict | None = None  # set when open() replaced a damaged manifest

    # -- lock -------------------------------------------------------------
    @property
    def lock_path(self) -> Path:
        return self.root / ".lock"

    @contextmanager
    def lock(self):
        """Hold the store's exclusive write lock; :class:`StoreBusyError` if another process has it.

        A store whose directory this process may not write is opened without a
        lock: nothing can be written through it anyway (a run with work to do
        fails on its first write, with the path), and reading it is safe.
        """
        if self.root.exists() and not self.root.is_dir():
            raise NotADirectoryError(errno.ENOTDIR, "the store path exists and is not a directory", str(self.root))
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        except PermissionError:
            if not self.root.is_dir():
                raise
            yield self
            return
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = os.pread(fd, 200, 0).decode(errors="replace").strip() or "unknown"
                raise StoreBusyError(
                    f"{self.root} is being written by another run ({holder}); wait for it to finish, "
                    "or use another runs_dir=…"
                ) from None
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"pid {os.getpid()} since "
                          f"{_dt.datetime.now(_dt.timezone.utc).isoformat(timespec='seconds')}\n".encode(), 0)
            self.remove_temporaries()
            yield self
        finally:
            os.close(fd)  # releases the flock

    def remove_temporaries(self) -> list[Path]:
        """Delete the temporary files of interrupted writes (call only while holding the lock)."""
        removed = []
        for folder in (self.root, self.cells_dir):
            if folder.is_dir():
                for path in folder.glob(f".*{TMP_SUFFIX}"):
                    path.unlink(missing_ok=True)
                    removed.append(path)
        return removed

    # -- manifest ---------------------------------------------------------
    def read_manifest(self) -> dict | None:
        """The manifest, ``None`` if there is none; :class:`ValueError` if it is damaged."""
        if not self.manifest_path.exists():
            return None
        try:
            manifest = json.loads(self.manifest_path.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, ValueError) as exc:
            raise ValueError(f"{self.manifest_path} is damaged ({type(exc).__name__}: {exc})") from exc
        if not isinstance(manifest, dict) or not isinstance(manifest.get("fingerprint"), dict):
            raise ValueError(f"{self.manifest_path} is damaged (not a manifest object with a fingerprint)")
        return manifest

    def _rebuild_manifest(self, fingerprint: dict, damage: str) -> dict:
        """A fresh manifest for the cells on disk; the damaged file is kept beside it."""
        kept = self.manifest_path.with_name(self.manifest_path.name + ".damaged")
        os.replace(self.manifest_path, kept)
        n_cells = len(list(self.cells_dir.glob("*.json"))) if self.cells_dir.is_dir() else 0
        self.rebuilt = {"at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
                        "cell_files": n_cells, "damage": damage, "damaged_copy": kept.name}
        return {"store_schema": STORE_SCHEMA, "fingerprint": fingerprint, "runs": [], "rebuilt": self.rebuilt}

    def open(self, *, fingerprint: dict, config: dict, provenance: dict, record: bool = True) -> dict:
        """Create the store, or check that resuming it with ``fingerprint`` is sound.

        Returns the manifest, with this run appended to its history and written
        when ``record`` is true or the manifest is new or rebuilt (a run with
        nothing to do need not write, so a read-only store can be re-checked).
        A damaged manifest is replaced by one rebuilt from the cells (its run
        history is lost; the damaged file is kept as ``manifest.json.damaged``);
        ``manifest["rebuilt"]`` then says so.

        Raises
        ------
        IncompatibleRunError
            The store was created with another fingerprint (base seed,
            preprocessing, bound policy, …): its cells and the new ones would
            not be comparable.
        """
        try:
            manifest = self.read_manifest()
        except ValueError as exc:
            manifest = self._rebuild_manifest(fingerprint, str(exc))
            record = True
        if manifest is None:
            manifest = {"store_schema": STORE_SCHEMA, "fingerprint": fingerprint, "runs": []}
            record = True
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
        if record:
            self.cells_dir.mkdir(parents=True, exist_ok=True)
            manifest["config"] = config
            manifest["runs"] = list(manifest.get("runs", [])) + [provenance]
            self.write_manifest(manifest)
        return manifest

    def write_manifest(self, manifest: dict) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        _atomic_write_text(self.manifest_path, json.dumps(manifest, indent=2, sort_keys=True, default=str))

    def record_availability(self, *, unavailable: dict[str, str], loaded) -> None:
        """Remember which data sets the last run could not load (name → why); ``loaded`` ones are forgotten.

        Publishing reads this: cells waiting for unavailable data are not a
        sign of an unfinished sweep.
        """
        manifest = self.read_manifest() or {}
        known = {k: v for k, v in (manifest.get("unavailable") or {}).items() if k not in set(loaded)}
        known.update(unavailable)
        if known != (manifest.get("unavailable") or {}):
            manifest["unavailable"] = known
            self.write_manifest(manifest)

    def unavailable(self) -> dict[str, str]:
        """Data sets the last run that needed them could not load (see :meth:`record_availability`)."""
        try:
            return dict((self.read_manifest() or {}).get("unavailable") or {})
        except ValueError:  # a damaged manifest is rebuilt by the next run
            return {}

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

"""Results store of one experiment: ``runs/<experiment>/``.

Layout::

    manifest.json           resolved config, fingerprint, package versions, git commit, run history
    cells/<key>.json        one finished cell (ok or failed), written atomically
    results.parquet         the tidy table built by :func:`paceggm.bench.collect.collect`

A cell file is written to a temporary name in the same directory, flushed to
disk and renamed over its final name, so a reader (or a rerun after SIGKILL)
sees either the whole file or none of it. It holds the row, the cell's
canonical description (whose hash is its key and its file name), what the
key does not say about how it was computed (the bound policy, the commit),
and a SHA-256 over all of it. A file that cannot be read, does not parse,
does not match its name or its description, fails the checksum, or holds a
row the store's ``validate_row`` refuses (wrong types, an ``ok`` row without
finite metrics) is *corrupt*: it is reported, never used, moved aside into
``quarantine/`` by the next run or collect (:meth:`RunStore.quarantine`), and
its cell is recomputed. The checksum detects damage, not forgery: anyone who
can write the store can also recompute it.

One process writes a store at a time: :meth:`RunStore.lock` takes an exclusive
``flock`` on ``.lock`` (released by the kernel if the process dies), so a second
sweep on the same store is refused at once instead of computing every cell twice
and racing on the manifest. Holding the lock also makes it safe to delete the
temporary files an earlier, killed writer left behind. A store this process
may not write (a read-only mount, no permission) is opened without a lock, its
lock file neither created nor written: the commands that only read (summary,
collect without writing, the figures stage) read it as it is. The cells are the
store's truth: a damaged manifest is rebuilt from them (every input that changes
a result is in a cell's key), losing only the run history; a missing one is
created afresh only if the stored cells agree with the new run (see :meth:`RunStore.open`).

Besides its key, a cell record says under which bound policy it was computed
(``computed["bound_check"]``) and for which grid (``computed["grid"]``,
``"<recipe>@<hash of the grid's cell keys>"``, see :func:`paceggm.bench.cells.grid_id`).
Whether a stored cell belongs to a recipe's grid is decided by its key
(:func:`paceggm.bench.collect.collect`), so a cell planted with a valid checksum
but outside the grid is reported as such, never counted in it.
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

from paceggm.bench.seeds import canonical_json, stable_hash

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
    # key -> {"cell": description, "computed": {...}} for files that record them (older files do not)
    meta: dict[str, dict] = field(default_factory=dict)

    @property
    def finished(self) -> set[str]:
        """Keys of cells that ran to completion (failed cells are retried)."""
        return {k for k, r in self.rows.items() if r.get("status") == "ok"}


def _nan_marked(value):
    # NaN is not JSON; hash a representation where it is a marker.
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else repr(value)  # "inf", "-inf"
    if isinstance(value, dict):
        return {k: _nan_marked(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_nan_marked(v) for v in value]
    return value


def _row_digest(row: dict) -> str:
    """The checksum of cell files that hold only a row (written before descriptions were stored)."""
    return hashlib.sha256(canonical_json(_nan_marked(row)).encode()).hexdigest()


def _payload_digest(payload: dict) -> str:
    """The checksum of a cell file: everything in it but the checksum (row, description, key, provenance)."""
    return hashlib.sha256(canonical_json(_nan_marked({k: v for k, v in payload.items() if k != "sha256"}))
                          .encode()).hexdigest()


#: A cell file is a row and a traceback at most; anything larger is not one (and is not read whole).
MAX_CELL_BYTES = 16 * 2**20
QUARANTINE = "quarantine"


TMP_SUFFIX = ".tmp"
# errors that say "this process may not write here", not that something is broken
_NOT_WRITABLE = (errno.EACCES, errno.EPERM, errno.EROFS)


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

    def __init__(self, root, *, validate_row=None) -> None:
        self.root = Path(root)
        # False while lock() holds a store this process may not write (a read-only mount, no permission)
        self.writable = True
        # validate_row(row) raises ValueError for a row its reader cannot use (the harness: schema.check_row)
        self.validate_row = validate_row
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

        A store whose directory this process may not write (no permission, a
        read-only mount) is opened without a lock and with ``writable`` false:
        nothing can be written through it anyway (a run with work to do fails on
        its first write, with the path), and reading it is safe.
        """
        if self.root.exists() and not self.root.is_dir():
            raise NotADirectoryError(errno.ENOTDIR, "the store path exists and is not a directory", str(self.root))
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            if exc.errno not in _NOT_WRITABLE or not self.root.is_dir():
                raise
            self.writable = False
            try:
                yield self
            finally:
                self.writable = True
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
            if self.manifest_path.stat().st_size > MAX_CELL_BYTES:
                raise ValueError("larger than any manifest")
            manifest = json.loads(self.manifest_path.read_bytes().decode("utf-8"))
        except (ValueError, RecursionError, MemoryError) as exc:
            raise ValueError(f"{self.manifest_path} is damaged ({type(exc).__name__}: {str(exc)[:200]})") from None
        except OSError as exc:
            raise ValueError(f"{self.manifest_path} cannot be read ({type(exc).__name__}: {exc.strerror})") from None
        if not isinstance(manifest, dict) or not isinstance(manifest.get("fingerprint"), dict):
            raise ValueError(f"{self.manifest_path} is damaged (not a manifest object with a fingerprint)")
        for name, kind in (("runs", list), ("unavailable", dict), ("config", dict)):
            if name in manifest and not isinstance(manifest[name], kind):
                raise ValueError(f"{self.manifest_path} is damaged ({name!r} is not a {kind.__name__})")
        if not all(isinstance(v, str) for v in (manifest.get("unavailable") or {}).values()):
            raise ValueError(f"{self.manifest_path} is damaged ('unavailable' holds non-text reasons)")
        return manifest

    def _rebuild_manifest(self, fingerprint: dict, damage: str) -> dict:
        """A fresh manifest for the cells on disk; the damaged file is kept beside it."""
        kept = self.manifest_path.with_name(self.manifest_path.name + ".damaged")
        os.replace(self.manifest_path, kept)
        n_cells = len(list(self.cells_dir.glob("*.json"))) if self.cells_dir.is_dir() else 0
        self.rebuilt = {"at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
                        "cell_files": n_cells, "damage": damage, "damaged_copy": kept.name}
        return {"store_schema": STORE_SCHEMA, "fingerprint": fingerprint, "runs": [], "rebuilt": self.rebuilt}

    def open(self, *, fingerprint: dict, config: dict, provenance: dict, record: bool = True,
             disagreement=None) -> dict:
        """Create the store, or check that resuming it with ``fingerprint`` is sound.

        Returns the manifest, with this run appended to its history and written
        when ``record`` is true or the manifest is new or rebuilt (a run with
        nothing to do need not write, so a read-only store can be re-checked).
        A damaged manifest is replaced by one rebuilt from the cells (its run
        history is lost; the damaged file is kept as ``manifest.json.damaged``);
        ``manifest["rebuilt"]`` then says so. Only into the configuration its
        cells were computed with: ``disagreement()`` (given by the caller, who
        knows what a cell records) returns how the stored cells differ from
        ``fingerprint``, or None.

        Raises
        ------
        IncompatibleRunError
            The store was created with another fingerprint (base seed,
            preprocessing, bound policy, …), or its manifest is damaged or
            missing and its cells disagree with ``fingerprint``: its cells and
            the new ones would not be comparable.
        """
        try:
            manifest = self.read_manifest()
        except ValueError as exc:
            differs = disagreement() if disagreement is not None else None
            if differs:
                raise IncompatibleRunError(
                    f"{self.manifest_path} is damaged, and its cells were computed with another configuration "
                    f"than this run's ({differs}): refusing to rebuild it into this one. Rerun with the cells' "
                    "settings, prune those cells (paceggm-bench prune), or use another runs_dir=…") from None
            manifest = self._rebuild_manifest(fingerprint, str(exc))
            record = True
        if manifest is None:
            # a deleted manifest must not let a run add cells of another configuration beside the stored ones
            differs = disagreement() if disagreement is not None else None
            if differs:
                raise IncompatibleRunError(
                    f"{self.root} has no {self.manifest_path.name}, and its cells were computed with another "
                    f"configuration than this run's ({differs}): refusing to add incomparable cells beside them. "
                    "Rerun with the cells' settings, prune those cells (paceggm-bench prune), "
                    "or use another runs_dir=…") from None
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

    def write_cell(self, row: dict, *, cell: dict | None = None, computed: dict | None = None) -> Path:
        """Write one finished cell atomically (write, fsync, rename).

        ``cell`` is the cell's canonical description (its key is the hash of
        it: :meth:`read_record` checks that), ``computed`` what the key does
        not say about how the row was computed (bound policy, commit).
        """
        key = row["cell_key"]
        path = self.cell_path(key)
        payload = {"store_schema": STORE_SCHEMA, "row": row}
        if cell is not None:
            payload["cell"] = cell
        if computed is not None:
            payload["computed"] = computed
        payload["sha256"] = _payload_digest(payload) if (cell is not None or computed is not None) else _row_digest(row)
        self.cells_dir.mkdir(parents=True, exist_ok=True)
        _atomic_write_text(path, json.dumps(payload, sort_keys=True))
        return path

    def read_cell(self, path: Path) -> dict:
        """The row of a cell file; :class:`ValueError` naming the defect if it is corrupt."""
        return self.read_record(path)["row"]

    def read_record(self, path: Path) -> dict:
        """The whole checked record of a cell file (``row``, and ``cell``, ``computed`` when it has them).

        Raises
        ------
        ValueError
            Naming the defect: the file cannot be read or parsed (any damage,
            nesting too deep included), is not a cell record, does not match
            its name or its description, fails its checksum, or its row is
            refused by ``validate_row``.
        """
        path = Path(path)
        try:
            if not path.is_file():
                raise ValueError("not a regular file")
            if path.stat().st_size > MAX_CELL_BYTES:
                raise ValueError(f"{path.stat().st_size} bytes, larger than any cell record")
            payload = json.loads(path.read_bytes().decode("utf-8"))
        except ValueError as exc:
            raise ValueError(f"unreadable JSON ({type(exc).__name__}: {str(exc)[:200]})") from None
        except (OSError, RecursionError, MemoryError) as exc:
            raise ValueError(f"unreadable ({type(exc).__name__}: {str(exc)[:200]})") from None
        if not isinstance(payload, dict) or not isinstance(payload.get("row"), dict):
            raise ValueError("not a cell record (no 'row' object)")
        if payload.get("store_schema") != STORE_SCHEMA:
            raise ValueError(f"store schema {payload.get('store_schema')!r}, expected {STORE_SCHEMA}")
        row = payload["row"]
        if row.get("cell_key") != path.stem:
            raise ValueError(f"cell_key {str(row.get('cell_key'))[:80]!r} does not match the file name")
        described = "cell" in payload or "computed" in payload
        try:
            digest = _payload_digest(payload) if described else _row_digest(row)
        except (TypeError, ValueError, RecursionError) as exc:
            raise ValueError(f"cannot be checksummed ({type(exc).__name__})") from None
        if payload.get("sha256") != digest:
            raise ValueError("checksum mismatch (the file was modified or damaged after it was written)")
        if row.get("status") not in ("ok", "failed"):
            raise ValueError(f"status {str(row.get('status'))[:80]!r} is neither 'ok' nor 'failed'")
        if "cell" in payload:
            cell = payload["cell"]
            try:
                matches = isinstance(cell, dict) and stable_hash(cell) == path.stem
            except (TypeError, ValueError, RecursionError):
                matches = False
            if not matches:
                raise ValueError("its key is not the hash of the cell description it records")
        if "computed" in payload and not isinstance(payload["computed"], dict):
            raise ValueError("'computed' is not an object")
        if self.validate_row is not None:
            try:
                self.validate_row(row, payload.get("cell"))
            except (TypeError, ValueError, OverflowError) as exc:
                raise ValueError(f"invalid row: {' '.join(str(exc).split())[:300]}") from None
        return payload

    def scan(self) -> ScanResult:
        """Every cell file, parsed and checked; temporary files of interrupted writes are ignored."""
        result = ScanResult()
        if not self.cells_dir.is_dir():
            return result
        for path in sorted(self.cells_dir.glob("*.json")):
            try:
                record = self.read_record(path)
            except ValueError as exc:
                result.corrupt.append(CorruptCell(path, str(exc)))
                continue
            key = record["row"]["cell_key"]
            result.rows[key] = record["row"]
            if "cell" in record or "computed" in record:
                result.meta[key] = {"cell": record.get("cell"), "computed": record.get("computed") or {}}
        return result

    def quarantine(self, corrupt) -> list[tuple[CorruptCell, Path | None]]:
        """Move corrupt cell files aside into ``quarantine/`` (call only while holding the lock).

        Their cells are then missing, so the next run recomputes them, and the
        damaged bytes are kept for inspection. Returns each file with where it
        went (None when it could not be moved, e.g. a read-only store: it stays,
        reported and unused, as before).
        """
        out = []
        stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        for bad in corrupt:
            dest = self.root / QUARANTINE / f"{bad.path.name}.{stamp}"
            try:
                dest.parent.mkdir(parents=True, exist_ok=True)
                n = 0
                while dest.exists():
                    n += 1
                    dest = dest.with_name(f"{bad.path.name}.{stamp}.{n}")
                os.replace(bad.path, dest)
                _atomic_write_text(dest.with_name(dest.name + ".reason"), bad.reason + "\n")
            except OSError:
                dest = None
            out.append((bad, dest))
        return out

"""What a run says, and where: its log file, its warnings and its progress.

The log file of a run is ``<store>/logs/<UTC time>-pid<pid>.log``: Python
:mod:`logging`, logger ``paceggm.bench.run``: what ran (command line, grid,
each cell's outcome), warnings (corrupt cell files moved aside, data sets not
available, every Python warning of the run) and failures with their
tracebacks. The console is not affected: the logger does not propagate.

Python warnings never reach the console mid-run. A warning a cell raises, in
whatever process or thread runs it, is caught there (:func:`captured_warnings`)
and travels back in the cell's row (``row["warnings"]``, kept in its cell
record); the sweep writes each to the log with its cell. A warning raised in
the sweep's process outside any cell (loading data, starting a backend) is
written to the log as it comes. The console gets one line at the end
(:func:`warnings_line`) counting them by category.

A run with nothing to do writes no file (a finished store may be read-only):
records are kept in memory until :meth:`RunLog.start_file` is called, then
written out, and every later record goes straight to the file.
"""

from __future__ import annotations

import collections
import datetime as _dt
import logging
import logging.handlers
import os
import threading
import time
import warnings
from contextlib import contextmanager
from pathlib import Path

__all__ = ["LOGGER_NAME", "RunLog", "captured_warnings", "progress_bar", "run_log", "warning_record",
           "warnings_line"]

LOGGER_NAME = "paceggm.bench.run"
_FORMAT = "%(asctime)s %(levelname)-7s %(message)s"


def warning_record(message, category, filename, lineno) -> dict:
    """A warning as a cell record stores it: category name, message, file, line, and times raised."""
    return {"category": category.__name__, "message": str(message), "filename": str(filename),
            "lineno": int(lineno), "count": 1}


def _describe(w: dict) -> str:
    times = f" (raised {w['count']} times)" if w.get("count", 1) > 1 else ""
    return f"{w['category']}: {w['message']} ({w['filename']}:{w['lineno']}){times}"


class RunLog:
    """The records of one run, buffered until the run knows it writes its store."""

    def __init__(self, logger: logging.Logger) -> None:
        self.logger = logger
        self.path: Path | None = None
        self._buffer = logging.handlers.MemoryHandler(capacity=1_000_000, flushLevel=logging.CRITICAL + 1)
        logger.addHandler(self._buffer)
        self._file: logging.FileHandler | None = None
        self.warnings: collections.Counter[str] = collections.Counter()  # category name -> warnings logged
        self.n_cell_warnings = 0

    def start_file(self, folder: Path) -> Path | None:
        """Write the buffered records and every later one to a new file in ``folder`` (None if it cannot)."""
        if self._file is not None:
            return self.path
        stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        path = Path(folder) / f"{stamp}-pid{os.getpid()}.log"
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            handler = logging.FileHandler(path, encoding="utf-8")
        except OSError as exc:
            self.logger.warning("no log file: %s", exc)
            return None
        handler.setFormatter(logging.Formatter(_FORMAT))
        self._buffer.setTarget(handler)
        self._buffer.flush()
        self.logger.removeHandler(self._buffer)
        self.logger.addHandler(handler)
        self._file, self.path = handler, path
        return path

    def warning(self, w: dict, *, cell: str | None = None) -> None:
        """Log one warning record (:func:`warning_record`) in full, with the cell that raised it, and count it."""
        self.warnings[w["category"]] += 1
        if cell is None:
            self.logger.warning("warning outside any cell: %s", _describe(w))
        else:
            self.n_cell_warnings += 1
            self.logger.warning("warning in cell %s: %s", cell, _describe(w))

    def close(self) -> None:
        for handler in (self._buffer, self._file):
            if handler is not None:
                self.logger.removeHandler(handler)
                handler.close()


def warnings_line(counts, *, log_path: Path | None, in_cells: bool) -> str | None:
    """The console's one line about a run's warnings (None when there were none)."""
    total = sum(counts.values())
    if not total:
        return None
    by = ", ".join(f"{name} {n}" for name, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
    homes = [str(log_path)] if log_path is not None else []
    if in_cells:
        homes.append("its cell's record" if log_path is None else "the record of the cell that raised it")
    where = f"each is in {' and '.join(homes)}" if homes else "no log file was written"
    return f"warnings: {total} ({by}); {where}"


@contextmanager
def run_log(part: str | None = None):
    """A :class:`RunLog` on logger ``paceggm.bench.run`` (``paceggm.bench.run.<part>`` for one recipe of
    a pooled run, so that each store's log holds its own recipe's records); closed on exit.

    Python warnings raised in this process while it is open (outside the cells,
    whose own are caught by :func:`captured_warnings`) go to the log and its
    count, not to the console.
    """
    logger = logging.getLogger(LOGGER_NAME if part is None else f"{LOGGER_NAME}.{part}")
    logger.setLevel(logging.DEBUG)
    logger.propagate = False  # the console keeps its own concise output
    log = RunLog(logger)
    shown = warnings.showwarning

    def show(message, category, filename, lineno, file=None, line=None):
        log.warning(warning_record(message, category, filename, lineno))

    warnings.showwarning = show
    try:
        yield log
    except BaseException as exc:
        logger.error("the run ended with %s", type(exc).__name__, exc_info=not isinstance(exc, KeyboardInterrupt))
        raise
    finally:
        warnings.showwarning = shown
        log.close()


# -- warnings of a cell ------------------------------------------------------------------------
# ``warnings.catch_warnings(record=True)`` swaps process-wide state and restores it on exit, so two
# threads running cells at once (dask on threads) would restore each other's hooks; and Python's
# "show once per place" registry is shared by the threads, so one cell's warning would hide the same
# warning of a cell running beside it. While any cell runs, one hook serves every thread instead (it
# files a warning under the thread that raised it, and shows it as before otherwise), the filters'
# "show once" actions become "always" (what is ignored or an error stays so), and each cell keeps
# each distinct warning once, with how many times it came.
_lock = threading.Lock()
_capturing = 0
_shown_before = None
_restore: dict[int, tuple] = {}  # id of a rewritten filter -> (it, the filter it replaced)
_default_before = None
_ONCE = ("default", "module", "once")
_sink = threading.local()


def _show(message, category, filename, lineno, file=None, line=None):
    records = getattr(_sink, "records", None)
    if records is None:
        if _shown_before is not None:
            _shown_before(message, category, filename, lineno, file, line)
        return
    record = warning_record(message, category, filename, lineno)
    for kept in records:
        if all(kept[k] == record[k] for k in ("category", "message", "filename", "lineno")):
            kept["count"] += 1
            return
    records.append(record)


def _forget_shown() -> None:
    with warnings.catch_warnings():  # entering and leaving marks the filters changed: Python forgets what it showed
        pass


def _start_capturing() -> None:
    global _shown_before, _default_before
    _shown_before, _default_before = warnings.showwarning, warnings.defaultaction
    warnings.showwarning = _show
    rewritten = []
    for f in warnings.filters:
        if f[0] in _ONCE:
            always = ("always", *f[1:])
            _restore[id(always)] = (always, f)
            f = always
        rewritten.append(f)
    warnings.filters[:] = rewritten
    if warnings.defaultaction in _ONCE:
        warnings.defaultaction = "always"
    _forget_shown()


def _stop_capturing() -> None:
    global _shown_before, _default_before
    if warnings.showwarning is _show:
        warnings.showwarning = _shown_before
    # filters added meanwhile (an import's) stay; the rewritten ones get their own action back
    warnings.filters[:] = [_restore[id(f)][1] if _restore.get(id(f), (None,))[0] is f else f
                           for f in warnings.filters]
    if warnings.defaultaction == "always":
        warnings.defaultaction = _default_before
    _restore.clear()
    _shown_before = _default_before = None
    _forget_shown()


@contextmanager
def captured_warnings():
    """The warnings this thread raises while the block runs, as records (:func:`warning_record`); none is shown.

    Each distinct warning (category, message, place) is one record, with
    ``count`` the times it was raised: Python's "once per place", for each cell
    alone whatever ran before or beside it. Filters that ignore a warning or make
    it an error (``-W``, ``PYTHONWARNINGS``) still do.
    """
    global _capturing
    records: list[dict] = []
    with _lock:
        if _capturing == 0:
            _start_capturing()
        _capturing += 1
    outer = getattr(_sink, "records", None)
    _sink.records = records
    try:
        yield records
    finally:
        _sink.records = outer
        with _lock:
            _capturing -= 1
            if _capturing == 0:
                _stop_capturing()


# -- progress ----------------------------------------------------------------------------------
class _PlainProgress:
    """Progress for a console that is not a terminal: a plain line at each tenth of the work."""

    def __init__(self, total: int, desc: str, file) -> None:
        self.total, self.desc, self.file = total, desc, file
        self.n, self.tenths, self.postfix = 0, 0, ""
        self.t0 = time.perf_counter()

    def update(self, n: int = 1) -> None:
        self.n += n
        tenths = 10 * self.n // self.total if self.total else 10
        if tenths > self.tenths:
            self.tenths = tenths
            print(f"{self.desc}: {self.n}/{self.total} cells ({100 * self.n // self.total}%), "
                  f"{time.perf_counter() - self.t0:.1f} s{self.postfix}", file=self.file, flush=True)

    def set_postfix(self, refresh: bool = True, **values) -> None:
        self.postfix = "".join(f", {k} {v}" for k, v in values.items())

    def close(self) -> None:
        pass


def progress_bar(total: int, *, desc: str, file, show: bool):
    """A tqdm bar on a terminal; plain lines (one per tenth of ``total``) elsewhere; nothing without ``show``."""
    from tqdm.auto import tqdm

    isatty = getattr(file, "isatty", None)
    if show and not (callable(isatty) and isatty()):
        return _PlainProgress(total, desc, file)
    return tqdm(total=total, desc=desc, unit="cell", disable=not show, file=file, dynamic_ncols=True, smoothing=0.05)

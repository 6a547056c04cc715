"""The log file of a run: ``<store>/logs/<UTC time>-pid<pid>.log``.

Python :mod:`logging`, logger ``paceggm.bench.run``: what ran (command line,
grid, each cell's outcome), warnings (corrupt cell files moved aside, data
sets not available, Python warnings raised in the sweep's process) and
failures with their tracebacks. The console is not affected: the logger does
not propagate, and the console shows what it always showed plus the log's path.

A run with nothing to do writes no file (a finished store may be read-only):
records are kept in memory until :meth:`RunLog.start_file` is called, then
written out, and every later record goes straight to the file.
"""

from __future__ import annotations

import datetime as _dt
import logging
import logging.handlers
import os
import warnings
from contextlib import contextmanager
from pathlib import Path

__all__ = ["LOGGER_NAME", "RunLog", "run_log"]

LOGGER_NAME = "paceggm.bench.run"
_FORMAT = "%(asctime)s %(levelname)-7s %(message)s"


class RunLog:
    """The records of one run, buffered until the run knows it writes its store."""

    def __init__(self, logger: logging.Logger) -> None:
        self.logger = logger
        self.path: Path | None = None
        self._buffer = logging.handlers.MemoryHandler(capacity=1_000_000, flushLevel=logging.CRITICAL + 1)
        logger.addHandler(self._buffer)
        self._file: logging.FileHandler | None = None

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

    def close(self) -> None:
        for handler in (self._buffer, self._file):
            if handler is not None:
                self.logger.removeHandler(handler)
                handler.close()


@contextmanager
def run_log():
    """A :class:`RunLog` on logger ``paceggm.bench.run`` that also records Python warnings; closed on exit."""
    logger = logging.getLogger(LOGGER_NAME)
    logger.setLevel(logging.DEBUG)
    logger.propagate = False  # the console keeps its own concise output
    log = RunLog(logger)
    shown = warnings.showwarning

    def show(message, category, filename, lineno, file=None, line=None):
        logger.warning("%s", warnings.formatwarning(message, category, filename, lineno, line).strip())
        shown(message, category, filename, lineno, file, line)

    warnings.showwarning = show
    try:
        yield log
    except BaseException as exc:
        logger.error("the run ended with %s", type(exc).__name__, exc_info=not isinstance(exc, KeyboardInterrupt))
        raise
    finally:
        warnings.showwarning = shown
        log.close()

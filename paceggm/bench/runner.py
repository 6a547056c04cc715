"""The sweep: expand a recipe, skip what is stored, run the rest in parallel.

Order of work in :func:`run_sweep` (and why):

1. expand the config into cells and open the store (the manifest check comes
   before any computation, so an incompatible resume costs nothing);
2. scan the store and drop finished cells — *before* any data set is loaded,
   so a finished sweep reruns in the time it takes to read its cell files;
3. load each data set that still has pending cells, once, in the parent; a
   data set that is not available (no file, no network) leaves its cells
   pending — reported as *unavailable*, not stored, retried next run — and one
   that fails otherwise (a damaged file) fails its cells; neither stops the sweep;
4. run the pending cells with joblib — loky locally, dask through joblib's
   dask backend — and write each row the moment it comes back.

The whole sweep holds the store's lock (one writer per store). Everything a
user can get wrong in a config is checked by :func:`check_config` before the
store is touched.

Results do not depend on ``n_jobs``, the backend or where the arrays landed in
a worker's memory: every seed derives from the cell, BLAS runs one thread per
worker, and a worker copies its data into aligned buffers before using them.
"""

from __future__ import annotations

import dataclasses
import numbers
import os
import sys
import time
import traceback
import warnings
from collections.abc import Callable, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from paceggm._validation import aligned_copy
from paceggm.bench.cells import Cell, bound_policy, expand, grid_id
from paceggm.bench.config import fingerprint, provenance
from paceggm.bench.execute import CellData, failed_row, prepare_data, run_cell
from paceggm.bench.runlog import progress_bar, run_log, warnings_line
from paceggm.bench.schema import check_row, guarantee_holds
from paceggm.bench.store import RunStore, ScanResult

__all__ = ["BackendError", "SweepSummary", "check_config", "cost_estimates", "default_loader", "is_unavailable",
           "load_cell_data", "pool_order", "resolve_loader", "run_pool", "run_sweep", "store_for"]


class BackendError(RuntimeError):
    """The parallel backend cannot be started (e.g. no dask scheduler at the address)."""


def default_loader(name: str, *, preprocessing: str, data_dir=None):
    """``paceggm.bench.data.load_dataset``, imported only when a data set is needed."""
    from paceggm.bench.data import load_dataset

    return load_dataset(name, preprocessing=preprocessing, data_dir=data_dir)


def resolve_loader(spec: str | None) -> Callable:
    """The loader named by the config's ``loader`` field (``"module:function"``), or the default."""
    if spec in (None, ""):
        return default_loader
    import importlib

    module_name, sep, attr = str(spec).partition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"loader must look like 'module:function', got {spec!r}")
    try:
        return getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise ValueError(f"cannot import the data-set loader {spec!r}: {exc}") from exc


#: Folders the figures stage writes beside the sweeps' own (``<out>/<name>/``, and ``runs/figures`` by
#: default beside ``runs/<name>/``): a sweep of one of these names would mix its files with theirs.
RESERVED_NAMES = ("figures", "tables", "results")


def store_for(cfg: Mapping) -> RunStore:
    name = cfg.get("name")
    if not isinstance(name, str) or not name or "/" in name or "\\" in name or name.startswith("."):
        raise ValueError(f"the experiment name must be a plain non-empty string, got {name!r}")
    if name in RESERVED_NAMES:
        raise ValueError(f"the experiment name {name!r} is the figures stage's own folder; choose another "
                         f"(reserved: {', '.join(RESERVED_NAMES)})")
    runs_dir = Path(cfg.get("runs_dir") or "runs")
    for folder in (runs_dir, runs_dir / name):
        if folder.exists() and not folder.is_dir():
            raise ValueError(f"runs_dir: {folder} exists and is not a directory")
    return RunStore(runs_dir / name, validate_row=check_row)


def _uses_default_loader(cfg: Mapping, loader) -> bool:
    return loader is None and cfg.get("loader") in (None, "")


def _check_backend(backend: Mapping) -> None:
    name = backend.get("name", "loky")
    if name not in ("loky", "dask"):
        raise ValueError(f"backend must be loky or dask, got {name!r}")
    n_jobs = backend.get("n_jobs", 1)
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, numbers.Integral) or n_jobs == 0:
        raise ValueError(f"backend.n_jobs must be a non-zero integer (-1 = every core), got {n_jobs!r}")
    if name == "dask":
        address = backend.get("address")
        if address is not None and (not isinstance(address, str) or "://" not in address and ":" not in address):
            raise ValueError(f"backend.address must look like tcp://host:port, got {address!r}")
        count = backend.get("n_workers", 2)
        if isinstance(count, bool) or not isinstance(count, numbers.Integral) or count < 1:
            raise ValueError(f"backend.n_workers must be a positive integer, got {count!r}")
        timeout = backend.get("timeout", 30)
        if isinstance(timeout, bool) or not isinstance(timeout, numbers.Real) or not timeout > 0:
            raise ValueError(f"backend.timeout must be a positive number of seconds, got {timeout!r}")


def check_config(cfg: Mapping, *, loader: Callable | None = None) -> list[Cell]:
    """Every check a config can fail, before anything runs or is written; returns its cells.

    Checks the grid (:func:`~paceggm.bench.cells.expand`: data sets, methods,
    ρ, trials, bound policy, split), the dispatch order, the backend, the
    runs directory, the loader and — with the default loader — that every
    data set is in the registry.

    Raises
    ------
    ValueError
        With one line saying what is wrong and what is allowed.
    """
    order = cfg.get("order", "shuffled")
    if order not in DISPATCH_ORDERS:
        raise ValueError(f"order must be one of {', '.join(DISPATCH_ORDERS)}, got {order!r}")
    if not isinstance(cfg.get("progress", True), bool):
        raise ValueError(f"progress must be true or false, got {cfg.get('progress')!r}")
    if cfg.get("drop_target") and cfg.get("reuse_from"):
        # a cell's key names its data set, not its columns: a reused cell would be a full-d one
        raise ValueError("drop_target=true cannot reuse cells (reuse_from): they were computed on every column")
    _check_backend(cfg.get("backend") or {})
    store_for(cfg)
    _check_reuse_from(cfg)
    cells = expand(cfg)
    if loader is None:
        resolve_loader(cfg.get("loader"))
    if _uses_default_loader(cfg, loader):
        from paceggm.bench.data.registry import list_datasets

        known = set(list_datasets())
        unknown = sorted({c.dataset for c in cells} - known)
        if unknown:
            raise ValueError(f"unknown data set(s) {', '.join(unknown)}; valid names: {', '.join(sorted(known))}")
    return cells


def _check_reuse_from(cfg: Mapping) -> None:
    """Each ``reuse_from`` entry names a store of the same runs directory: ``<runs_dir>/<name>``.

    A name is a plain recipe name (no path, no ``..``, no leading dot): a path could
    reach any directory. Where ``<runs_dir>/<name>`` exists it must be a store (a
    ``cells/`` folder or a manifest); a store not made yet has nothing to reuse and
    is skipped (its recipe may simply not have run yet).
    """
    sources = cfg.get("reuse_from") or []
    if isinstance(sources, str) or not isinstance(sources, (list, tuple)):
        raise ValueError(f"reuse_from must be a list of recipe names, got {sources!r}")
    for source in sources:
        if (not isinstance(source, str) or not source or source.startswith(".")
                or any(sep in source for sep in ("/", "\\", "\0"))):
            raise ValueError(f"reuse_from: {source!r} is not a store name; give the names of stores in "
                             f"runs_dir ({cfg.get('runs_dir') or 'runs'}), e.g. reuse_from=[main]")
        folder = Path(cfg.get("runs_dir") or "runs") / source
        if folder.exists() and not ((folder / "cells").is_dir() or (folder / "manifest.json").is_file()):
            raise ValueError(f"reuse_from: {folder} is not a store (no cells/ and no manifest.json in it)")


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def n_workers(requested: int, n_pending: int, *, local: bool = True) -> int:
    """Workers worth starting: ``requested`` (negative counts back from the cores, joblib's
    convention), never more than there are pending cells, nor — on this machine — cores."""
    cores = _cores()
    n = requested if requested > 0 else cores + 1 + requested
    n = min(n, n_pending)
    if local:
        n = min(n, cores)
    return max(1, n)


def is_unavailable(exc: BaseException) -> bool:
    """No file, no network: the data set may come later; everything else is a failure."""
    from urllib.error import URLError

    return isinstance(exc, (FileNotFoundError, ConnectionError, TimeoutError, URLError))


def load_cell_data(cfg: Mapping, dataset: str, cells: Sequence[Cell], loader: Callable) -> CellData:
    """Load ``dataset`` as the recipe ``cfg`` prepares it for ``cells`` (its preprocessing, bound
    policy, regression target when a cell needs it, outcome column dropped when asked)."""
    loaded = loader(dataset, preprocessing=cfg["preprocessing"], data_dir=cfg.get("data_dir"))
    return prepare_data(
        loaded, name=dataset, preprocessing=cfg["preprocessing"], bound_check=cfg.get("bound_check", "auto"),
        need_target=any(c.task == "regression" for c in cells), drop_target=bool(cfg.get("drop_target", False)),
    )


@dataclass
class SweepSummary:
    """What one call of :func:`run_sweep` did."""

    experiment: str
    store: Path
    n_cells: int
    n_skipped: int = 0
    n_reused: int = 0
    n_ok: int = 0
    n_failed: int = 0
    elapsed: float = 0.0
    failures: list[dict] = field(default_factory=list)
    corrupt: list = field(default_factory=list)  # (CorruptCell, where it was moved or None)
    unavailable: dict[str, tuple[int, str]] = field(default_factory=dict)  # data set -> (cells, why)
    n_workers: int = 0
    notes: list[str] = field(default_factory=list)
    log_path: Path | None = None
    warnings: dict[str, int] = field(default_factory=dict)  # category -> Python warnings this run raised
    n_cell_warnings: int = 0  # of them, raised by cells (in their records; the rest outside any cell)
    cpu_time: float = 0.0  # CPU seconds of the cells this run computed (their rows' cpu_time)

    @property
    def n_ran(self) -> int:
        return self.n_ok + self.n_failed

    @property
    def n_unavailable(self) -> int:
        return sum(n for n, _ in self.unavailable.values())

    @property
    def exit_status(self) -> int:
        """0 when no cell failed (cells waiting for unavailable data are not failures), else 1."""
        return 1 if self.n_failed else 0

    def warnings_said(self) -> str | None:
        """The console's one line about the run's warnings (None when there were none)."""
        return warnings_line(self.warnings, log_path=self.log_path, in_cells=self.n_cell_warnings > 0)

    def format(self, *, warnings: bool = True) -> str:
        """The run's console report; ``warnings=False`` leaves its warnings line to the caller, to print last."""
        reused = f"reused: {self.n_reused} | " if self.n_reused else ""
        unavailable = f"unavailable: {self.n_unavailable} | " if self.unavailable else ""
        lines = [
            f"[{self.experiment}] cells: {self.n_cells} | already done: {self.n_skipped} | {reused}"
            f"ran: {self.n_ran} (ok {self.n_ok}, failed {self.n_failed}) | {unavailable}"
            f"time: {self.elapsed:.1f}s | failures: {self.n_failed} | store: {self.store}"
        ]
        lines += [f"  {note}" for note in self.notes]
        if self.unavailable:
            lines.append("  data not available (cells not run, not stored; rerun once the data is there):")
            for ds, (n, why) in sorted(self.unavailable.items()):
                lines.append(f"    {n:5d} cells of {ds}: {why}")
        for c, moved in self.corrupt:
            where = f"moved to {moved}" if moved is not None else "left in place (cannot be moved)"
            lines.append(f"  corrupt cell file not used, {where}; its cell is recomputed: {c.path.name} ({c.reason})")
        if self.failures:
            # Group by the last line of the traceback: usually one cause fails many cells.
            by_cause: dict[str, list[dict]] = {}
            for f in self.failures:
                by_cause.setdefault(f["cause"], []).append(f)
            where = self.log_path if self.log_path is not None else f"{self.store}/cells/"
            lines.append(f"  failures by cause (retried on the next run; tracebacks in {where}):")
            for cause, fs in sorted(by_cause.items(), key=lambda kv: -len(kv[1]))[:_MAX_CAUSES]:
                variants = sorted({f["variant"] for f in fs})
                datasets = sorted({f["dataset"] for f in fs})
                lines.append(f"    {len(fs):5d} cells: {cause}")
                lines.append(f"           variants: {_short(variants)}; data sets: {_short(datasets)}")
            if len(by_cause) > _MAX_CAUSES:
                lines.append(f"    … and {len(by_cause) - _MAX_CAUSES} more causes")
        if self.log_path is not None:
            lines.append(f"  log: {self.log_path}")
        said = self.warnings_said() if warnings else None
        if said is not None:
            lines.append(f"  {said}")
        return "\n".join(lines)


_MAX_CAUSES = 15


def _short(names: list[str], limit: int = 6) -> str:
    return ", ".join(names[:limit]) + (f", … ({len(names)} in all)" if len(names) > limit else "")


def _cause(error: str) -> str:
    lines = [ln for ln in error.strip().splitlines() if ln.strip()]
    return lines[-1].strip()[:300] if lines else "unknown error"


def _stop_loky_workers() -> None:
    """Kill the reusable loky pool: an interrupted sweep must leave no worker behind."""
    from joblib.externals.loky import get_reusable_executor

    get_reusable_executor().shutdown(wait=True, kill_workers=True)


def _quiet_loky_resource_tracker() -> None:
    """Keep loky's resource tracker from reporting the semaphores of killed workers.

    An interrupted sweep kills its workers mid-cell; the tracker (a process of its
    own, started with this interpreter's ``-W`` options) then frees their
    semaphores, as it is there to do, and warns about each on stderr, after the
    sweep's one-line message. Nothing is lost; the note would only look like an error.
    """
    option = "ignore:resource_tracker:UserWarning"
    if option not in sys.warnoptions:
        sys.warnoptions.append(option)


@contextmanager
def _backend(backend: Mapping, scatter: Sequence = (), *, n_pending: int):
    """joblib configuration for the ``backend`` config group; yields the number of workers."""
    from joblib import parallel_config

    name = backend.get("name", "loky")
    requested = int(backend.get("n_jobs", 1))
    if name == "loky":
        n_jobs = n_workers(requested, n_pending)
        _quiet_loky_resource_tracker()
        # inner_max_num_threads pins BLAS/OpenMP in the workers' environment;
        # run_cell also limits threads in-process (n_jobs=1 runs here).
        try:
            with parallel_config(backend="loky", n_jobs=n_jobs, inner_max_num_threads=1):
                yield n_jobs
        except BaseException:
            if n_jobs > 1:
                _stop_loky_workers()
            raise
    elif name == "dask":
        from distributed import Client, LocalCluster

        address = backend.get("address")
        timeout = float(backend.get("timeout", 30))
        cluster = None
        if address:
            n_jobs = n_workers(requested, n_pending, local=False)
            try:
                client = Client(address, timeout=timeout)
            except (OSError, TimeoutError) as exc:
                raise BackendError(f"cannot reach the dask scheduler at {address} within {timeout:g} s "
                                   f"({type(exc).__name__}); is it running? (backend.address=…)") from None
        else:
            n_jobs = n_workers(requested, n_pending)
            cluster = LocalCluster(
                n_workers=n_workers(int(backend.get("n_workers", 2)), n_pending), threads_per_worker=1,
                processes=bool(backend.get("processes", True)), dashboard_address=None,
            )
            client = Client(cluster)
        try:
            # Data sets are scattered once, not shipped with every cell.
            with parallel_config(backend="dask", n_jobs=n_jobs, scatter=list(scatter) or None):
                yield n_jobs
        finally:
            client.close()
            if cluster is not None:
                cluster.close()
    else:
        raise ValueError(f"unknown backend {name!r}; choose loky or dask")


def _leave_sigint_to_the_parent() -> None:
    """In a worker process, ignore SIGINT: Ctrl-C reaches the whole process group, and
    the sweep's process ends the workers itself (a worker would print a traceback)."""
    import multiprocessing
    import signal
    import threading

    if multiprocessing.parent_process() is not None and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)


def _run_in_worker(cell: Cell, data: CellData, **kwargs) -> dict:
    """:func:`run_cell` on copies of the data in aligned buffers.

    Arrays shipped to a worker (dask scatter, pickling) land at whatever
    address the transport gives them, and BLAS rounds differently at another
    alignment: without this copy, a cell's bits would depend on where it ran.
    """
    _leave_sigint_to_the_parent()
    data = dataclasses.replace(data, **{
        f.name: aligned_copy(getattr(data, f.name)) for f in dataclasses.fields(data)
        if f.name in ("X", "truth", "features", "target") and getattr(data, f.name) is not None
    })
    return run_cell(cell, data, **kwargs)


def _reuse(cfg: Mapping, store: RunStore, todo: Sequence[Cell], *, grid: str) -> set[str]:
    """Copy finished cells with the same key from the stores named in ``reuse_from``.

    A key fixes the computation and seeds, so a cell another recipe finished is
    this cell's result too — provided that store was made with the same
    fingerprint (base seed, preprocessing, bound policy, split). Its timings
    are those of the run that computed it: ``runtime`` does not reuse.
    """
    wanted = {c.key for c in todo}
    todo_by_key = {c.key: c for c in todo}
    mine = {k: v for k, v in fingerprint(cfg).items() if k != "name"}
    reused: set[str] = set()
    for source in cfg.get("reuse_from") or ():
        other = store_for({**cfg, "name": source})
        if not other.cells_dir.is_dir() or other.root.resolve() == store.root.resolve():
            continue
        manifest = other.read_manifest() or {}
        theirs = {k: v for k, v in (manifest.get("fingerprint") or {}).items() if k != "name"}
        if theirs != mine:
            continue
        for key in sorted(wanted - reused):
            path = other.cell_path(key)
            if not path.is_file():
                continue
            try:
                record = other.read_record(path)
            except ValueError:
                continue  # corrupt there: compute it here
            row = record["row"]
            if row.get("status") == "ok":
                _write_reused(store, cfg, todo_by_key[key], row, record.get("computed") or {}, source=source,
                              grid=grid)
                reused.add(key)
    return reused


def _write_reused(store: RunStore, cfg: Mapping, cell: Cell, row: dict, computed: dict, *, source: str,
                  grid: str) -> None:
    """Store another recipe's finished ``row`` of the same key as this recipe's cell."""
    store.write_cell({**row, "experiment": cfg["name"]}, cell=cell.description(),
                     computed={**computed, "reused_from": source, "grid": grid, "bound_check": cell.bound_check})


DISPATCH_ORDERS = ("shuffled", "cheapest_first", "costliest_first")


def _dispatch_order(cells: Sequence[Cell], data: Mapping, order: str) -> list[Cell]:
    """The order cells are handed to workers; results never depend on it.

    ``shuffled`` (key order, a fixed pseudo-random shuffle) mixes slow and fast
    cells, so the ETA is not fooled by small data sets coming first and workers
    stay busy to the end. The cost of a PACE-GGM run grows with ρ and d (more
    rounds, larger blocks). ``cheapest_first`` runs by ρ, then d, so a sweep
    stopped at a deadline leaves whole low-cost (data set, ρ) columns done, not a
    random scatter of cells; resuming it finishes the rest. ``costliest_first``
    is the reverse, longest-processing-time-first: when a few cells take
    minutes each, starting them first keeps one worker from finishing the
    longest of them alone while the others idle, which shortens the sweep.
    """
    if order in ("cheapest_first", "costliest_first"):
        by_cost = sorted(cells, key=lambda c: (c.rho, data[c.dataset].X.shape[1], c.key))
        return by_cost if order == "cheapest_first" else by_cost[::-1]
    return sorted(cells, key=lambda c: c.key)


def run_sweep(
    cfg: Mapping,
    *,
    loader: Callable | None = None,
    overrides: Sequence[str] = (),
    progress: bool | None = None,
    log=None,
) -> SweepSummary:
    """Run every cell of ``cfg`` (a resolved plain mapping) not already stored.

    Parameters
    ----------
    cfg : mapping
        The composed experiment config (see ``conf/config.yaml``).
    loader : callable, optional
        ``loader(name, *, preprocessing, data_dir)`` returning a data set with
        ``X``, ``bound`` and ``features_and_target()``; defaults to the
        config's ``loader`` (``"module:function"``), else :func:`default_loader`.
    overrides : sequence of str
        The command-line overrides, recorded in the manifest.
    progress : bool, optional
        Show progress; defaults to ``cfg["progress"]``. A bar on a terminal,
        else a plain line per tenth of the cells.
    log : file, optional
        Where progress goes; defaults to ``sys.stderr``.

    Returns
    -------
    SweepSummary

    Raises
    ------
    ValueError
        The config is invalid (:func:`check_config`); nothing was written.
    StoreBusyError, IncompatibleRunError
        Another run holds the store, or the store was made with another
        fingerprint; nothing was computed.
    BackendError
        The backend cannot be started; finished cells stay stored.
    """
    t_start = time.perf_counter()
    name = cfg["name"]
    # a config error fails here, before the store is opened or any data is loaded
    cells = check_config(cfg, loader=loader)
    order = cfg.get("order", "shuffled")
    store = store_for(cfg)
    with store.lock(), run_log() as runlog:
        return _sweep(cfg, cells, store, loader=loader or resolve_loader(cfg.get("loader")), order=order,
                      overrides=overrides, show=cfg.get("progress", True) if progress is None else progress,
                      log=sys.stderr if log is None else log, t_start=t_start, name=name, runlog=runlog)


def _disagreement(cfg: Mapping, scan: ScanResult) -> str | None:
    """How the stored cells' preprocessing, bound policy or base seed differ from ``cfg``'s, or None.

    A cell file records its description and bound policy; older ones only
    whether the guarantee held (False exactly when the policy was ``waive``).
    """
    preprocessing = cfg.get("preprocessing")
    policy = bound_policy(cfg.get("bound_check", "auto"), preprocessing)
    seed = cfg.get("base_seed")
    found: dict[str, int] = {}
    for key, row in scan.rows.items():
        meta = scan.meta.get(key) or {}
        theirs = []
        if row.get("preprocessing") != preprocessing:
            theirs.append(f"preprocessing {row.get('preprocessing')}")
        stored_policy = (meta.get("computed") or {}).get("bound_check")
        if stored_policy is not None and stored_policy != policy:
            theirs.append(f"bound policy {stored_policy}")
        elif stored_policy is None and row.get("guarantee_holds") not in (None, guarantee_holds(policy)):
            theirs.append("bound policy " + ("waive" if policy != "waive" else "raise or clip"))
        stored_seed = (meta.get("cell") or {}).get("base_seed")
        if stored_seed is not None and stored_seed != seed:
            theirs.append(f"base_seed {stored_seed}")
        if theirs:
            what = ", ".join(theirs)
            found[what] = found.get(what, 0) + 1
    if not found:
        return None
    cells = "; ".join(f"{n} cells with {what}" for what, n in sorted(found.items()))
    return f"{cells}; this run: preprocessing {preprocessing}, bound policy {policy}, base_seed {seed}"


@dataclass
class _Prepared:
    """One recipe ready to run: its store opened, stored and reusable cells set aside, its data loaded."""

    cfg: Mapping
    store: RunStore
    summary: SweepSummary
    runlog: object
    record: Callable[[dict], None]
    data: dict
    runnable: list[Cell]
    grid: str


def _prepare(cfg, cells, store, *, loader, overrides, runlog) -> _Prepared:
    name = cfg["name"]
    logger = runlog.logger
    scan = store.scan()
    todo = [c for c in cells if c.key not in scan.finished]
    prov = provenance(cfg, overrides=overrides)
    summary = _open_store(cfg, cells, todo, scan, store, prov, overrides=overrides, name=name, runlog=runlog)
    grid = grid_id(name, cells)
    if todo and cfg.get("reuse_from"):
        reused = _reuse(cfg, store, todo, grid=grid)
        summary.n_reused = len(reused)
        todo = [c for c in todo if c.key not in reused]
        logger.info("reused %d cells from %s", len(reused), list(cfg.get("reuse_from")))
    record = _recorder(store, todo, {"commit": prov["git_commit"], "grid": grid}, summary, runlog)
    data = _load_data(cfg, todo, loader, store, record, summary, logger, name=name)
    return _Prepared(cfg, store, summary, runlog, record, data, [c for c in todo if c.dataset in data], grid)


def _finish(prep: _Prepared, t_start: float) -> SweepSummary:
    summary, runlog = prep.summary, prep.runlog
    summary.elapsed = time.perf_counter() - t_start
    summary.warnings, summary.n_cell_warnings = dict(runlog.warnings), runlog.n_cell_warnings
    runlog.logger.info("done: ran %d (ok %d, failed %d), unavailable %d, %d warnings, %.1f s", summary.n_ran,
                       summary.n_ok, summary.n_failed, summary.n_unavailable, sum(summary.warnings.values()),
                       summary.elapsed)
    return summary


def _sweep(cfg, cells, store, *, loader, order, overrides, show, log, t_start, name, runlog) -> SweepSummary:
    prep = _prepare(cfg, cells, store, loader=loader, overrides=overrides, runlog=runlog)
    runnable = _dispatch_order(prep.runnable, prep.data, order)
    if runnable:
        _run_cells(cfg, runnable, prep.data, prep.record, prep.summary, name=name, show=show, log=log)
    return _finish(prep, t_start)


def _open_store(cfg, cells, todo, scan, store, prov, *, overrides, name, runlog) -> SweepSummary:
    """Log the run, open the store (recording the run only if it will write), quarantine corrupt cells."""
    logger = runlog.logger
    logger.info("paceggm-bench run %s: %s", name, " ".join(prov["argv"]))
    logger.info("store %s; commit %s; overrides %s", store.root, prov["git_commit"], list(overrides))
    logger.debug("versions %s; backend %s", prov["versions"], prov["backend"])
    # A run with nothing to do does not touch the store (it may be read-only).
    writes = bool(todo) or bool(scan.corrupt)
    if writes:
        log_path = runlog.start_file(store.root / "logs")
        if log_path is not None:
            prov["log"] = str(log_path.relative_to(store.root))
    store.open(fingerprint=fingerprint(cfg), config=dict(cfg), provenance=prov, record=writes,
               disagreement=lambda: _disagreement(cfg, scan))
    moved = store.quarantine(scan.corrupt)
    for bad, dest in moved:
        logger.warning("corrupt cell file %s (%s): %s; its cell is recomputed", bad.path,
                       bad.reason, f"moved to {dest}" if dest is not None else "cannot be moved, left in place")
    summary = SweepSummary(experiment=name, store=store.root, n_cells=len(cells), corrupt=moved,
                           log_path=runlog.path)
    if store.rebuilt:
        info = store.rebuilt
        summary.notes.append(f"{store.manifest_path.name} was damaged and has been rebuilt from the "
                             f"{info['cell_files']} cell files (run history lost; the damaged file is kept "
                             f"as {info['damaged_copy']}): {info['damage']}")
        logger.warning(summary.notes[-1])
    summary.n_skipped = len(cells) - len(todo)
    logger.info("grid: %d cells, %d already stored, %d to run", len(cells), summary.n_skipped, len(todo))
    return summary


def _recorder(store, todo, provenance: dict, summary: SweepSummary, runlog):
    """What is done with each finished row: written to the store at once, counted and logged.

    Each record says how it was computed beyond its key: the bound policy, the
    commit and the grid identity of the run (``provenance``: commit, grid). Each
    warning the cell raised is in its row and, in full with the cell, in the log.
    """
    cell_of = {c.key: c for c in todo}
    logger = runlog.logger

    def record(row: dict) -> None:
        cell = cell_of[row["cell_key"]]
        store.write_cell(row, cell=cell.description(), computed={"bound_check": cell.bound_check, **provenance})
        where = f"{row['cell_key']} {row['variant']} on {row['dataset']}, rho={row['rho']:g}, trial={row['trial']}"
        cpu = row.get("cpu_time")
        if isinstance(cpu, numbers.Real) and cpu == cpu:  # NaN in a row that never ran its fit
            summary.cpu_time += float(cpu)
        if row["status"] == "ok":
            logger.info("ok     %s (%.3g s)", where, row["wall_time"])
            summary.n_ok += 1
        else:
            logger.error("failed %s:\n%s", where, row["error"].rstrip())
            summary.n_failed += 1
            summary.failures.append(
                {"cell_key": row["cell_key"], "variant": row["variant"], "dataset": row["dataset"],
                 "cause": _cause(row["error"])}
            )
        for w in row.get("warnings") or ():
            runlog.warning(w, cell=f"{where} (method {row['method']})")

    return record


def _load_data(cfg, todo, loader, store, record, summary: SweepSummary, logger, *, name: str) -> dict:
    """Each pending data set's CellData; an unavailable one leaves its cells pending, a broken one fails them."""
    by_dataset: dict[str, list[Cell]] = {}
    for c in todo:
        by_dataset.setdefault(c.dataset, []).append(c)
    data = {}
    for ds, ds_cells in by_dataset.items():
        try:
            data[ds] = load_cell_data(cfg, ds, ds_cells, loader)
        except Exception as exc:
            if is_unavailable(exc):
                hint = getattr(exc, "hint", None)  # what is missing and where to put it
                summary.unavailable[ds] = (len(ds_cells), hint or _cause(f"{type(exc).__name__}: {exc}"))
                logger.warning("data set %s not available (%d cells left pending): %s", ds, len(ds_cells), exc)
                continue
            error = f"data set {ds!r} could not be loaded:\n{traceback.format_exc()}"
            for c in ds_cells:
                record(failed_row(c, name, error))
    if by_dataset:
        store.record_availability(unavailable={ds: why for ds, (_, why) in summary.unavailable.items()},
                                  loaded=list(data))
    return data


def _run_cells(cfg, runnable, data, record, summary: SweepSummary, *, name: str, show: bool, log) -> None:
    """The cells on the configured backend, each row recorded as it arrives, whatever order they finish in."""
    test_fraction = float(cfg.get("test_fraction", 0.2))
    tasks = [(c, data[c.dataset], name, test_fraction) for c in runnable]
    summary.n_workers = _run_tasks(cfg.get("backend") or {}, tasks, list(data.values()), record,
                                   failed=lambda: summary.n_failed, desc=name, show=show, log=log)


def _run_tasks(backend: Mapping, tasks: Sequence[tuple[Cell, CellData, str, float]], scatter: Sequence,
               record: Callable[[dict], None], *, failed: Callable[[], int], desc: str, show: bool, log) -> int:
    """``(cell, its data, experiment, test_fraction)`` in this order on ``backend``; returns the workers used."""
    from joblib import Parallel, delayed

    with _backend(backend, scatter=scatter, n_pending=len(tasks)) as n_jobs:
        jobs = (delayed(_run_in_worker)(c, data, experiment=experiment, test_fraction=test_fraction)
                for c, data, experiment, test_fraction in tasks)
        bar = progress_bar(len(tasks), desc=desc, file=log, show=show)
        rows = Parallel(n_jobs=n_jobs, return_as="generator_unordered")(jobs)
        try:
            for row in rows:
                record(row)
                bar.update(1)
                if failed():
                    bar.set_postfix(failed=failed(), refresh=False)
        finally:
            # Closing the generator of an interrupted sweep cancels the cells in flight, and
            # joblib warns about each batch after the sweep's one-line message; the cells are
            # simply pending, as the message says.
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", message=".*still being processed by the workers have been "
                                        "cancelled", category=UserWarning)
                rows.close()
            bar.close()
    return n_jobs


# ---- several recipes as one pool ----------------------------------------------------------------


def cost_estimates(cells: Sequence[Cell], committed: Path | str | None) -> dict[str, float]:
    """Seconds each cell is expected to take, from the committed results tables; absent where unknown.

    A cell's estimate is its own recorded ``wall_time`` in any table
    ``<committed>/<recipe>/results.parquet`` (a key fixes the computation, so the
    same cell of another recipe counts), else the median over the recorded cells
    of its data set, variant and ρ, else of its data set and ρ. It reads no data
    and does not change while the committed tables do not: the order is stable.
    """
    import numpy as np
    import pandas as pd

    if committed is None or not Path(committed).is_dir():
        return {}
    tables = []
    for path in sorted(Path(committed).glob("*/results.parquet")):
        try:
            t = pd.read_parquet(path, columns=["cell_key", "dataset", "variant", "rho", "status", "wall_time"])
        except Exception:  # another table's layout, or damaged: it only lends estimates
            continue
        tables.append(t[(t["status"] == "ok") & np.isfinite(t["wall_time"])])
    if not tables:
        return {}
    table = pd.concat(tables, ignore_index=True)
    own = table.groupby("cell_key")["wall_time"].median().to_dict()
    by_variant = table.groupby(["dataset", "variant", "rho"])["wall_time"].median().to_dict()
    by_rho = table.groupby(["dataset", "rho"])["wall_time"].median().to_dict()
    out = {}
    for c in cells:
        for estimate in (own.get(c.key), by_variant.get((c.dataset, c.variant, c.rho)), by_rho.get((c.dataset, c.rho))):
            if estimate is not None:
                out[c.key] = float(estimate)
                break
    return out


def pool_order(items: Sequence[tuple[int, Cell]], estimates: Mapping[str, float],
               dims: Mapping[tuple[int, str], int]) -> list[tuple[int, Cell]]:
    """``(recipe index, cell)`` longest first: by estimate (:func:`cost_estimates`), the cells without one
    first, those by ρ then d (what a PACE-GGM run's cost grows with); ties by recipe and key."""
    def rank(item):
        i, c = item
        estimate = estimates.get(c.key)
        return (estimate is not None, -(estimate or 0.0), -c.rho, -dims[(i, c.dataset)], i, c.key)

    return sorted(items, key=rank)


def _pool_owners(preps: Sequence[_Prepared]) -> dict[tuple[int, str], int]:
    """``(recipe, key) -> recipe`` for each pending cell that another recipe of the pool computes.

    As a recipe run alone after the ones it names in ``reuse_from`` would copy their
    finished cells, a pooled one waits for the same cell of the first of them (in its
    ``reuse_from`` order, with the same fingerprint) that computes it here, and copies it.
    """
    index = {p.cfg["name"]: i for i, p in enumerate(preps)}
    keys = [{c.key for c in p.runnable} for p in preps]
    fingerprints = [{k: v for k, v in fingerprint(p.cfg).items() if k != "name"} for p in preps]

    def owner(i: int, key: str, seen: frozenset) -> int:
        for source in preps[i].cfg.get("reuse_from") or ():
            j = index.get(source)
            if j is not None and j not in seen and key in keys[j] and fingerprints[j] == fingerprints[i]:
                return owner(j, key, seen | {j})
        return i

    owners = {}
    for i, p in enumerate(preps):
        for c in p.runnable:
            o = owner(i, c.key, frozenset({i}))
            if o != i:
                owners[(i, c.key)] = o
    return owners


def run_pool(cfgs: Sequence[Mapping], *, committed: Path | str | None = None,
             overrides: Sequence[Sequence[str]] | None = None, progress: bool | None = None,
             log=None) -> list[SweepSummary]:
    """Run several recipes' pending cells as one pool, longest first; one :class:`SweepSummary` per recipe.

    Each recipe is checked, locked, resumed, reused from and recorded as
    :func:`run_sweep` does it (same stores, keys, seeds and rows), but their
    cells share the workers: ordered by :func:`pool_order` with the estimates of
    :func:`cost_estimates` (``committed``: the folder of the committed results
    tables), no worker idles in one recipe's tail while another's cells wait.
    A cell that a recipe would copy from a store named in its ``reuse_from``
    (:func:`_pool_owners`) runs once, in the recipe that owns it, and is copied
    when it finishes; if it fails there, it runs in its own recipe afterwards,
    as it would after a sequential run. The recipes share one backend (the
    first one's; they must agree). Each recipe's ``order`` does not apply.
    ``overrides`` holds each recipe's command-line overrides, recorded in its manifest.
    """
    from contextlib import ExitStack

    from paceggm.bench.seeds import canonical_json

    t_start = time.perf_counter()
    checked = [(cfg, check_config(cfg)) for cfg in cfgs]
    names = [cfg["name"] for cfg in cfgs]
    if len(set(names)) != len(names):
        raise ValueError(f"a pooled run names each recipe once, got {', '.join(names)}")
    if len({canonical_json(cfg.get("backend") or {}) for cfg in cfgs}) > 1:
        raise ValueError("the recipes of a pooled run share one backend; these configure different ones")
    backend = cfgs[0].get("backend") or {}
    show = cfgs[0].get("progress", True) if progress is None else progress
    log = sys.stderr if log is None else log
    with ExitStack() as stack:
        preps = []
        for k, (cfg, cells) in enumerate(checked):
            store = store_for(cfg)
            stack.enter_context(store.lock())
            runlog = stack.enter_context(run_log(cfg["name"]))
            preps.append(_prepare(cfg, cells, store, loader=resolve_loader(cfg.get("loader")),
                                  overrides=overrides[k] if overrides else (), runlog=runlog))
        owners = _pool_owners(preps)
        waiting: dict[tuple[int, str], list[tuple[int, Cell]]] = {}
        for (i, key), o in owners.items():
            waiting.setdefault((o, key), []).append((i, next(c for c in preps[i].runnable if c.key == key)))
        items = [(i, c) for i, p in enumerate(preps) for c in p.runnable if (i, c.key) not in owners]
        dims = {(i, ds): d.X.shape[1] for i, p in enumerate(preps) for ds, d in p.data.items()}
        ordered = pool_order(items, cost_estimates([c for _, c in items], committed), dims)
        index = {name: i for i, name in enumerate(names)}
        left: list[tuple[int, Cell]] = []

        def record(row: dict) -> None:
            i = index[row["experiment"]]
            preps[i].record(row)
            for j, cell in waiting.pop((i, row["cell_key"]), ()):
                if row["status"] != "ok":
                    left.append((j, cell))
                    continue
                source = preps[i].store.read_record(preps[i].store.cell_path(row["cell_key"]))
                _write_reused(preps[j].store, preps[j].cfg, cell, source["row"], source.get("computed") or {},
                              source=names[i], grid=preps[j].grid)
                preps[j].summary.n_reused += 1

        def failed() -> int:
            return sum(p.summary.n_failed for p in preps)

        def tasks(pairs):
            return [(c, preps[i].data[c.dataset], names[i], float(preps[i].cfg.get("test_fraction", 0.2)))
                    for i, c in pairs]

        scatter = [d for p in preps for d in p.data.values()]
        n_jobs = 0
        if ordered:
            n_jobs = _run_tasks(backend, tasks(ordered), scatter, record, failed=failed, desc="pool", show=show,
                                log=log)
        if left:
            n_jobs = max(n_jobs, _run_tasks(backend, tasks(left), scatter, record, failed=failed, desc="pool",
                                            show=show, log=log))
        for p in preps:
            p.summary.n_workers = n_jobs
        return [_finish(p, t_start) for p in preps]

"""Running one cell: build the estimator, fit, measure, and return its row.

This is what a worker executes. It never raises: an exception becomes a
``status="failed"`` row carrying the traceback, so one bad cell cannot stop a
sweep, and the row is retried on the next run.
"""

from __future__ import annotations

import math
import os
import sys
import threading
import time
import traceback
from dataclasses import asdict, dataclass, replace

import numpy as np

from paceggm._validation import aligned_copy
from paceggm.bench.cells import Cell, bound_policy
from paceggm.bench.fitted import read_fit
from paceggm.bench.methods import method_spec, resolve
from paceggm.bench.runlog import captured_warnings
from paceggm.bench.schema import (
    CLOCK_COLUMNS,
    SPEND_RTOL,
    STORED_COLUMNS,
    SUBSPACE_KS,
    TASK_COLUMNS,
    guarantee_holds,
)
from paceggm.bench.seeds import canonical_json, seed_sequence
from paceggm.metrics import (
    frobenius_error,
    mahalanobis_error,
    subspace_errors,
    support_edges,
    support_recovery,
)

__all__ = ["COLUMNS", "CellData", "FitClock", "prepare_data", "run_cell", "failed_row", "scaled", "task_metrics"]

COLUMNS = (*STORED_COLUMNS, *CLOCK_COLUMNS, *TASK_COLUMNS)  # the stored results table (paceggm.bench.schema)


@dataclass(frozen=True)
class CellData:
    """What a worker needs of a data set; computed once per data set in the parent."""

    dataset: str
    preprocessing: str
    X: np.ndarray
    truth: np.ndarray  # Σ(X) = XᵀX/n, the non-private target of the covariance metrics
    bound: float
    bound_check: str
    features: np.ndarray | None = None
    target: np.ndarray | None = None
    target_error: str | None = None  # why there is no regression target
    # The population's Σ and Ω where the data were drawn from a known one (paceggm.bench.data.populations),
    # in the units of X: the targets of the *_pop and support_* columns. Clipping (bound_check="clip") is
    # not reflected: they are the unclipped distribution's.
    population: np.ndarray | None = None
    population_precision: np.ndarray | None = None

    @property
    def n(self) -> int:
        return int(self.X.shape[0])

    @property
    def d(self) -> int:
        return int(self.X.shape[1])


def prepare_data(dataset, *, name: str, preprocessing: str, bound_check: str, need_target: bool,
                 drop_target: bool = False) -> CellData:
    """``CellData`` from a loaded data set (anything with ``X``, ``bound``, ``features_and_target()``).

    ``drop_target=True`` removes the data set's outcome column (its regression target, else its
    class label) from ``X``: the covariance methods then see the d − 1 features only.
    """
    got = getattr(dataset, "preprocessing", preprocessing)
    if got != preprocessing:
        raise ValueError(f"loader returned {name!r} with preprocessing {got!r}, expected {preprocessing!r}")
    X = aligned_copy(dataset.X)
    if X.ndim != 2 or X.shape[0] < 2 or not np.all(np.isfinite(X)):
        raise ValueError(f"data set {name!r}: X must be a finite 2-D array with n >= 2, got shape {X.shape}")
    if drop_target:
        X = _without_outcome(dataset, X, name=name, need_target=need_target)
    features = target = None
    target_error = None
    if need_target:
        try:
            features, target = dataset.features_and_target()
            features = aligned_copy(features)
            target = aligned_copy(np.ravel(target))
        except Exception as exc:  # recorded in the regression cells of this data set
            target_error = f"data set {name!r} has no usable regression target: {type(exc).__name__}: {exc}"
            features = target = None
    population, precision = (None, None) if drop_target else _population(dataset, name, preprocessing)
    return CellData(
        dataset=name, preprocessing=preprocessing, X=X, truth=X.T @ X / X.shape[0],
        bound=float(dataset.bound), bound_check=bound_policy(bound_check, preprocessing),
        features=features, target=target, target_error=target_error,
        population=population, population_precision=precision,
    )


def _population(dataset, name: str, preprocessing: str) -> tuple[np.ndarray | None, np.ndarray | None]:
    """``(Σ, Ω)`` of the population ``dataset`` was drawn from, where known; else ``(None, None)``.

    A loaded record's own ``covariance`` (synthetic data, ``Dataset.covariance``), else a population
    registered under ``name`` (:func:`paceggm.bench.data.populations.population_of`) when the rows are
    unscaled (``none``): ``paper`` and ``strict`` rescale each column by its sample range.
    """
    cov = getattr(dataset, "covariance", None)
    if cov is not None:
        cov = aligned_copy(cov)
        return cov, np.linalg.pinv(cov, hermitian=True)
    # only a process that loaded the module (a recipe's plugin) can have registered a population
    populations = sys.modules.get("paceggm.bench.data.populations")
    found = populations.population_of(name) if populations is not None and preprocessing == "none" else None
    if found is None:
        return None, None
    if found.covariance.shape != (dataset.X.shape[1],) * 2:
        raise ValueError(f"data set {name!r}: {dataset.X.shape[1]} columns, its population has {found.d}")
    return aligned_copy(found.covariance), aligned_copy(found.precision)


def _without_outcome(dataset, X: np.ndarray, *, name: str, need_target: bool) -> np.ndarray:
    outcome = getattr(dataset, "target", None) or getattr(dataset, "label", None)
    columns = tuple(getattr(dataset, "columns", ()))
    if need_target:
        raise ValueError(f"data set {name!r}: drop_target=true cannot run regression cells, which need the target")
    if outcome is None or outcome not in columns:
        raise ValueError(f"data set {name!r} has no target or label column to drop (drop_target=true)")
    return aligned_copy(np.delete(X, columns.index(outcome), axis=1))


def _base_row(cell: Cell, experiment: str) -> dict:
    return {
        "experiment": experiment,
        "cell_key": cell.key,
        "dataset": cell.dataset,
        "preprocessing": cell.preprocessing,
        "n": None,
        "d": None,
        "method": cell.method,
        "variant": cell.variant,
        "rho": cell.rho,
        "trial": cell.trial,
        "seed": cell.seed,
        "status": "failed",
        "error": "",
        "mahalanobis": math.nan,
        "frobenius": math.nan,
        "mse": math.nan,
        "n_measured_diag": None,
        "n_measured_offdiag": None,
        "n_rounds": None,
        "rho_spent": math.nan,
        "wall_time": math.nan,
        "solve_time": math.nan,
        "cpu_time": math.nan,
        "cpu_scope": "",
        "load_start": math.nan,
        "load_end": math.nan,
        "guarantee_holds": None,
        "converged": None,
        "n_solves": None,
        "n_capped_solves": None,
        "max_solve_iter": None,
        "params": canonical_json(cell.recorded_params),  # the p_* columns are built from it
        "label": cell.label,  # the row's display name and what it varies, decided when the cell was made
        "varies": canonical_json(dict(cell.varies)),
        **dict.fromkeys(TASK_COLUMNS, math.nan),
    }


def failed_row(cell: Cell, experiment: str, error: str, data: CellData | None = None) -> dict:
    """The row of a cell that could not run (e.g. its data set failed to load)."""
    row = _base_row(cell, experiment)
    if data is not None:
        row.update(n=data.n, d=data.d, guarantee_holds=guarantee_holds(data.bound_check))
    row["error"] = error
    return row


def _split(n: int, test_fraction: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    perm = np.random.default_rng(seed_sequence(seed)).permutation(n)
    n_test = min(n - 1, max(1, int(round(test_fraction * n))))
    return np.sort(perm[n_test:]), np.sort(perm[:n_test])


def scaled(data: CellData, factor: float) -> CellData:
    """``data`` with every value multiplied by ``factor`` (the cell's ``data_scale``), Σ(X) recomputed.

    Applied to the preprocessed matrix before the estimator checks (``raise``), clips (``clip``)
    or waives its bound: the noise of every mechanism is calibrated to the bound, not to the data,
    so the factor moves the signal-to-noise ratio of every measurement by ``factor²``. A factor of
    1 returns ``data`` itself (the same arrays, so the same bits).
    """
    if factor == 1.0:
        return data
    X = aligned_copy(factor * data.X)
    out = {"X": X, "truth": X.T @ X / X.shape[0]}
    if data.population is not None:
        out.update(population=factor**2 * data.population, population_precision=data.population_precision / factor**2)
    if data.features is not None:
        out.update(features=aligned_copy(factor * data.features), target=aligned_copy(factor * data.target))
    return replace(data, **out)


def _load() -> float:
    """The one-minute load average of the machine (NaN where the system has none)."""
    try:
        return float(os.getloadavg()[0])
    except (AttributeError, OSError):
        return math.nan


class FitClock:
    """Times one fit: wall seconds, CPU seconds and the machine's load at its start and end.

    The CPU clock is that of the fit's *process* (user + system, every thread of it;
    :func:`time.process_time`) when the fit runs in its process's main thread, as in a
    local sweep (each loky worker, or the sequential parent, runs one cell at a time);
    otherwise — a thread of a worker that may run other cells in its other threads, as
    dask's threaded workers do — the clock of the fit's *thread* (:func:`time.thread_time`),
    which counts all of the fit's work because BLAS runs in the calling thread
    (:func:`run_cell` limits it to one). ``cpu_scope`` records which ("process" or
    "thread"). The fit starts no process of its own, so no child's time is missed.
    On a shared machine CPU seconds move far less with the neighbours than wall
    seconds; the load shows how shared it was.
    """

    def __init__(self) -> None:
        self.scope = "process" if threading.current_thread() is threading.main_thread() else "thread"
        self._cpu = time.process_time if self.scope == "process" else time.thread_time
        self.load_start = _load()
        self._wall0, self._cpu0 = time.perf_counter(), self._cpu()

    def stop(self) -> dict:
        """The row's ``wall_time``, ``cpu_time``, ``cpu_scope``, ``load_start`` and ``load_end``."""
        cpu, wall = self._cpu() - self._cpu0, time.perf_counter() - self._wall0
        return {"wall_time": wall, "cpu_time": cpu, "cpu_scope": self.scope, "load_start": self.load_start,
                "load_end": _load()}


def _fit_and_measure(cell: Cell, data: CellData, row: dict, test_fraction: float) -> None:
    data = scaled(data, cell.data_scale)
    spec = method_spec(cell.method, target=cell.target, task=cell.task, measures=cell.measures)
    cls = resolve(spec)
    est = cls(
        cell.rho, bound=data.bound, bound_check=data.bound_check,
        random_state=seed_sequence(cell.seed), **cell.param_dict,
    )
    if cell.task == "regression":
        if data.features is None:
            raise ValueError(data.target_error or f"data set {cell.dataset!r} has no regression target")
        train, test = _split(data.features.shape[0], test_fraction, cell.data_seed)
        clock = FitClock()
        est.fit(data.features[train], data.target[train])
        row.update(clock.stop())
        pred = np.asarray(est.predict(data.features[test]), dtype=float).ravel()
        row["mse"] = float(np.mean((pred - data.target[test]) ** 2))
        fit = read_fit(est, spec, data.features.shape[1] + 1)  # PACE-GGM's covariance is of [X, y]
    else:
        clock = FitClock()
        est.fit(data.X)
        row.update(clock.stop())
        fit = read_fit(est, spec, data.d)
        cov = np.asarray(est.covariance_, dtype=float)
        row["mahalanobis"] = mahalanobis_error(cov_true=data.truth, cov_pred=cov)
        row["frobenius"] = frobenius_error(cov_true=data.truth, cov_pred=cov)
        row.update(task_metrics(data, est, cov))
    check_spent(fit.rho_spent, cell.rho)
    row.update(asdict(fit))


def task_metrics(data: CellData, est, cov: np.ndarray) -> dict:
    """The :data:`~paceggm.bench.schema.TASK_COLUMNS` of a covariance cell whose release is ``cov``.

    The subspace errors against ``XᵀX/n``; where the population is known, the errors against its
    ``Σ`` and the support recovery of the release's precision (the estimator's ``precision_``, else
    the pseudo-inverse of ``cov``) against its ``Ω``, unless ``Ω``'s graph is complete (NaN: there
    is no missing edge to find).
    """
    out = {f"subspace_k{k}": e for k, e in subspace_errors(cov_true=data.truth, cov_pred=cov, ks=SUBSPACE_KS).items()}
    if data.population is None:
        return out
    pop = data.population
    out["mahalanobis_pop"] = mahalanobis_error(cov_true=pop, cov_pred=cov)
    out["frobenius_pop"] = frobenius_error(cov_true=pop, cov_pred=cov)
    out.update({f"subspace_k{k}_pop": e for k, e in subspace_errors(cov_true=pop, cov_pred=cov, ks=SUBSPACE_KS).items()})
    if support_edges(data.population_precision).all():
        # a complete graph (a dense Ω: spiked): every claimed edge is true, and F1 would measure density
        return out
    released = getattr(est, "precision_", None)
    released = np.linalg.pinv(cov, hermitian=True) if released is None else np.asarray(released, dtype=float)
    found = support_recovery(precision_true=data.population_precision, precision_pred=released)
    out.update(support_precision=found.precision, support_recall=found.recall, support_f1=found.f1)
    return out


def check_spent(rho_spent: float, rho: float) -> None:
    """Refuse a fit that reports spending more than its budget ``rho`` (beyond the float rounding of its ledger)."""
    if not rho_spent <= rho * (1.0 + SPEND_RTOL):
        raise RuntimeError(f"privacy budget overspent: rho_spent={rho_spent!r} > rho={rho!r}")


def run_cell(cell: Cell, data: CellData, *, experiment: str, test_fraction: float = 0.2) -> dict:
    """Run one cell and return its row; failures are rows, not exceptions.

    The Python warnings the cell raises are not shown: they are the row's
    ``warnings`` (:func:`paceggm.bench.runlog.captured_warnings`), ok or failed.

    BLAS is limited to one thread for the duration: the sweep parallelises
    over cells, and a fixed thread count keeps floating-point reductions —
    hence results — identical whatever the worker.
    """
    from threadpoolctl import threadpool_limits

    row = _base_row(cell, experiment)
    row.update(n=data.n, d=data.d, guarantee_holds=guarantee_holds(data.bound_check))
    with captured_warnings() as caught:
        try:
            with threadpool_limits(limits=1):
                _fit_and_measure(cell, data, row, test_fraction)
        except Exception:
            row.update(status="failed", error=traceback.format_exc(), mahalanobis=math.nan,
                       frobenius=math.nan, mse=math.nan, **dict.fromkeys(TASK_COLUMNS, math.nan))
        else:
            row["status"] = "ok"
    row["warnings"] = caught  # travels back with the row, whatever process ran it (paceggm.bench.runlog)
    return row

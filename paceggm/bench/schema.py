"""The tidy results table: the contract between the harness and the figures stage.

One row per cell (data set, method + parameters, ρ, trial). The harness writes
one file per finished cell under ``runs/<experiment>/cells/`` and collects them
into ``runs/<experiment>/results.parquet``; figures and tables read only that
table. Columns, in order:

| column | type | meaning |
|---|---|---|
| experiment | str | recipe name: main, measurements, runtime, solver, components, hyperparameters, regression, quick, demo |
| cell_key | str | stable hash of the cell's canonical description |
| dataset | str | data-set key (e.g. adult, breast_cancer_sklearn) |
| preprocessing | str | paper / strict / none (populations: rows as drawn) |
| n, d | int | size of the data after preprocessing |
| method | str | a key of the method registry (:data:`paceggm.bench.methods.METHODS`) |
| variant | str | recipe entry + the parameters its grid varies: "paceggm", "paceggm[solver=pgd0]", "paceggm_nocc" |
| rho | float | zCDP budget of the cell |
| trial | int | 0-based trial index |
| seed | int | the cell's method seed (derived from base seed, dataset, trial, method, rho) |
| status | str | "ok" or "failed" |
| error | str | exception type + message + traceback ("" when ok) |
| mahalanobis | float | Mahalanobis error (NaN for regression or failed) |
| frobenius | float | Frobenius error (NaN for regression or failed) |
| mse | float | test MSE (regression only, else NaN) |
| n_measured_diag | int or NA | diagonal entries measured (PACE-GGM: d) |
| n_measured_offdiag | int or NA | distinct off-diagonal entries measured |
| n_rounds | int or NA | PACE-GGM rounds |
| rho_spent | float | budget actually spent |
| wall_time | float | seconds for the whole cell's fit |
| solve_time | float or NaN | seconds in the reconstruction solver |
| guarantee_holds | bool | False when the bound was waived (``bound_check="waive"``): the data may exceed it |
| converged | bool or NA | PACE-GGM: the solver converged in every round (no iteration cap hit) |
| n_solves | int or NA | PACE-GGM: block solves over all rounds (unchanged blocks are reused, not solved) |
| n_capped_solves | int or NA | PACE-GGM: solves that stopped at an iteration cap (the answer is not the converged one) |
| max_solve_iter | int or NA | PACE-GGM: most iterations one block solve took |

After them come the fit's clock (:data:`CLOCK_COLUMNS`, measured around ``fit`` alone by
:class:`paceggm.bench.execute.FitClock`; NaN, or "" for ``cpu_scope``, in a failed row that never
reached its fit and in tables written before they existed, which are read as they are):

| column | type | meaning |
|---|---|---|
| cpu_time | float | CPU seconds of the fit, user + system, of the clock ``cpu_scope`` names |
| cpu_scope | str | "process": the fit's process (loky, sequential: one cell at a time); "thread": its thread (dask) |
| load_start, load_end | float | the machine's one-minute load average (``os.getloadavg``) at the fit's start and end |

Runtime summaries use ``cpu_time`` where every row they summarise has it, else ``wall_time``,
and say which (:func:`paceggm.bench.summary.runtime_metric`).

Tables written before these two columns existed are read with ``guarantee_holds``
derived from the preprocessing under the default bound policy (``"auto"``: waived
for ``paper``, enforced for ``strict``; see :func:`paceggm.bench.cells.bound_policy`)
and ``converged`` and the three solve counts unknown (NA).

After ``params``, ``label`` and ``varies`` (below) come the task metrics and the
errors against a known population (:data:`TASK_COLUMNS`), all float, NaN where not measured (a regression or
failed cell; a ``_pop`` or ``support_`` column on data without a known population):

| column | meaning |
|---|---|
| mahalanobis_pop, frobenius_pop | the two errors against the population's ``Σ`` |
| subspace_k1, subspace_k3, subspace_k5 | :func:`paceggm.metrics.subspace_error` vs ``XᵀX/n`` (NaN: ``k >= d``, a tie at ``k``) |
| subspace_k1_pop, subspace_k3_pop, subspace_k5_pop | the same against the population's ``Σ`` |
| support_precision, support_recall, support_f1 | :func:`paceggm.metrics.support_recovery` (NaN: ``Ω`` complete) |

The population is the one a loaded record states (``Dataset.covariance``) or the one
registered under the data set's name (:mod:`paceggm.bench.data.populations`, with
preprocessing ``none``: the others rescale columns by their sample range); the
support is that of the method's ``precision_`` (else the pseudo-inverse of the
release), thresholded at :data:`paceggm.metrics.SUPPORT_THRESHOLD`.

Tables written before these columns existed lack them, and are read as they are (no
reader requires them); a table collected since has them, NaN for the rows of older cell records.

The stored table has one more column, ``params``: the cell's constructor
parameters as canonical JSON, with the harness's ``data_scale`` when it is not 1
— the record the cell's key was computed from —
and then one column ``p_<name>`` per constructor parameter that any cell of
the table has (as benchopt names its parametrised columns): ``p_solver``,
``p_alpha``, ``p_use_components``, …, empty where a method has no such
parameter. :func:`param_columns` derives them from ``params`` when a table is collected.

Two more stored columns name the row's variant, decided once, when its cell was
made (:mod:`paceggm.bench.variants`): ``varies``, the parameters that differed
from its method's defaults then (canonical JSON), and ``label``, its display
name, ``method[k=v,…]`` over those (``"paceggm"``, ``"paceggm[use_components=False]"``).
Summaries and figures name, select and style rows by them and the ``p_*``
columns; rows written before they existed (every committed table) have neither,
and are read against the defaults of that time
(:data:`paceggm.bench.variants.DEFAULTS_OF_UNLABELLED_ROWS`).

A row as its cell record stores it (not a column of the table) also holds
``warnings``: the Python warnings the cell raised, each distinct one
``{"category", "message", "filename", "lineno", "count"}`` with the times it
was raised (:mod:`paceggm.bench.runlog`); rows written before it existed have none.

A collected table has two more columns before the ``p_*`` ones, read from the
cell records (:mod:`paceggm.bench.store`): ``bound_check`` (str), the bound
policy the cell was computed under, and ``in_grid`` (bool), whether the cell is
one of its recipe's grid (by key). Summaries never average rows of two
policies together, and leave rows outside the grid out, said so; the figures
stage refuses a table that mixes policies or holds rows outside its grid. A
table without these columns (every committed one was published before they
existed) is read as its recipe declares: one policy, the default one
(``auto``), and only cells of its grid — :func:`paceggm.bench.collect.publish`
writes nothing else.
"""

from __future__ import annotations

import json
import math

RESULT_COLUMNS = (
    "experiment", "cell_key", "dataset", "preprocessing", "n", "d", "method", "variant",
    "rho", "trial", "seed", "status", "error",
    "mahalanobis", "frobenius", "mse", "n_measured_diag", "n_measured_offdiag", "n_rounds",
    "rho_spent", "wall_time", "solve_time", "guarantee_holds", "converged",
    "n_solves", "n_capped_solves", "max_solve_iter",
)

#: The fit's CPU seconds and its clock's scope, and the machine's load at its start and end (see above).
CLOCK_COLUMNS = ("cpu_time", "cpu_scope", "load_start", "load_end")

#: The k of the subspace columns, and the task metrics' and population errors' columns (optional, see above).
SUBSPACE_KS = (1, 3, 5)
TASK_COLUMNS = (
    "mahalanobis_pop", "frobenius_pop", *(f"subspace_k{k}" for k in SUBSPACE_KS),
    *(f"subspace_k{k}_pop" for k in SUBSPACE_KS), "support_precision", "support_recall", "support_f1",
)

#: A row's display label and the parameters it varies (see above).
LABEL, VARIES = "label", "varies"
STORED_COLUMNS = (*RESULT_COLUMNS, "params", LABEL, VARIES)
PARAM_PREFIX = "p_"
#: The bound policy a row was computed under, and whether it is a cell of its recipe's grid (see above).
POLICY = "bound_check"
IN_GRID = "in_grid"


_STR = ("experiment", "cell_key", "dataset", "preprocessing", "method", "variant", "status", "error", "params",
        LABEL, VARIES, "cpu_scope")
_COUNTS = ("n", "d", "n_measured_diag", "n_measured_offdiag", "n_rounds", "n_solves", "n_capped_solves",
           "max_solve_iter")
_REALS = ("mahalanobis", "frobenius", "mse", "rho_spent", "wall_time", "solve_time", "cpu_time", "load_start",
          "load_end", *TASK_COLUMNS)
_FLAGS = ("guarantee_holds", "converged")
_INT64 = 2**63
#: Relative slack of the overspending check (the ledger adds floats), as in paceggm.bench.execute.
SPEND_RTOL = 1e-9


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and -_INT64 < v < _INT64


def _is_real(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and (not isinstance(v, int) or _is_int(v))


def _finite(v) -> bool:
    return _is_real(v) and math.isfinite(v)


def check_row(row: dict, cell: dict | None = None) -> None:
    """Refuse a stored row the results table cannot hold as it claims (the store's ``validate_row``).

    Every column of the table has its type (a string, a count, a real number
    or NaN, a flag or null); an ``ok`` row has the sizes of its data, finite
    errors (covariance) or MSE (regression), a finite spent budget within its
    ρ, and a finite time. With the cell's description (``cell``, recorded
    beside the row), the row must describe the same cell.

    Raises
    ------
    ValueError
        Naming the first column that is wrong.
    """
    for col in ("cell_key", "dataset", "preprocessing", "method", "variant", "status", "params"):
        if col not in row:
            raise ValueError(f"no {col!r}")
    for col in _STR:
        if col in row and not isinstance(row[col], str):
            raise ValueError(f"{col} must be a string, got {type(row[col]).__name__}")
    for col in _COUNTS:
        v = row.get(col)
        if v is not None and not (_is_int(v) and v >= 0):
            raise ValueError(f"{col} must be a non-negative integer or null, got {str(v)[:40]}")
    for col in _REALS:
        v = row.get(col)
        if v is not None and not _is_real(v):
            raise ValueError(f"{col} must be a number, got {type(v).__name__}")
    for col in _FLAGS:
        v = row.get(col)
        if v is not None and not isinstance(v, bool):
            raise ValueError(f"{col} must be true, false or null, got {str(v)[:40]}")
    if not (_finite(row.get("rho")) and row["rho"] > 0):
        raise ValueError(f"rho must be a positive finite number, got {str(row.get('rho'))[:40]}")
    for col in ("trial", "seed"):
        if not (_is_int(row.get(col)) and row[col] >= 0):
            raise ValueError(f"{col} must be a non-negative integer, got {str(row.get(col))[:40]}")
    try:
        params = json.loads(row["params"])
    except (ValueError, RecursionError):
        params = None
    if not isinstance(params, dict):
        raise ValueError("params is not a JSON object")
    caught = row.get("warnings", [])
    if not (isinstance(caught, list) and all(
            isinstance(w, dict) and all(isinstance(w.get(k), str) for k in ("category", "message", "filename"))
            and _is_int(w.get("lineno")) and _is_int(w.get("count")) and w["count"] >= 1 for w in caught)):
        raise ValueError("warnings must be a list of {category, message, filename, lineno, count} records")
    if row["status"] == "ok":
        if not (_is_int(row.get("n")) and row["n"] >= 2 and _is_int(row.get("d")) and row["d"] >= 1):
            raise ValueError("an ok row needs its data's n >= 2 and d >= 1")
        covariance = _finite(row.get("mahalanobis")) and _finite(row.get("frobenius"))
        if not (covariance or _finite(row.get("mse"))):
            raise ValueError("an ok row needs finite mahalanobis and frobenius errors, or a finite mse")
        if not (_finite(row.get("rho_spent")) and 0 <= row["rho_spent"] <= row["rho"] * (1 + SPEND_RTOL)):
            raise ValueError(f"an ok row needs a spent budget within its rho, got {str(row.get('rho_spent'))[:40]}")
        if not (_finite(row.get("wall_time")) and row["wall_time"] >= 0):
            raise ValueError("an ok row needs a finite wall_time")
    if cell is not None:
        same = {"dataset": cell.get("dataset"), "preprocessing": cell.get("preprocessing"),
                "rho": cell.get("rho"), "trial": cell.get("trial")}
        for col, want in same.items():
            if row.get(col) != want:
                raise ValueError(f"{col} {str(row.get(col))[:40]} differs from the cell's description ({str(want)[:40]})")
        if params != cell.get("params"):
            raise ValueError("params differ from the cell's description")


def guarantee_holds(bound_check: str) -> bool:
    """Whether a cell run under ``bound_check`` keeps its privacy guarantee (all but ``"waive"``)."""
    return bound_check != "waive"


def param_columns(params):
    """One typed column ``p_<name>`` per parameter found in the ``params`` JSON strings.

    A parameter whose values are all booleans becomes a nullable boolean
    column, all real numbers a float column (NaN where absent), anything else
    a column of strings (missing where absent).

    >>> cols = param_columns(['{"alpha":0.1,"solver":"ipm"}', "{}"])
    >>> list(cols.columns), cols["p_alpha"].tolist(), cols["p_solver"].isna().tolist()
    (['p_alpha', 'p_solver'], [0.1, nan], [False, True])
    """
    import pandas as pd

    parsed = [json.loads(p) if p else {} for p in params]
    names = sorted({k for p in parsed for k in p})
    out = {}
    for name in names:
        values = [p.get(name) for p in parsed]
        present = [v for v in values if v is not None]
        if present and all(isinstance(v, bool) for v in present):
            col = pd.array(values, dtype="boolean")
        elif present and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in present):
            col = pd.array([float("nan") if v is None else float(v) for v in values], dtype=float)
        else:
            col = [None if v is None else str(v) for v in values]
        out[PARAM_PREFIX + name] = col
    return pd.DataFrame(out, index=params.index if isinstance(params, pd.Series) else None)


def with_param_columns(df):
    """``df`` with its ``p_*`` columns (re)built from ``params``, after the stored columns."""
    rest = [c for c in df.columns if not c.startswith(PARAM_PREFIX)]
    return df[rest].join(param_columns(df["params"]))

"""Reading the harness's results tables: validation, variants, and the gaps of a grid.

The figures stage reads nothing else: ``runs/<experiment>/results.parquet`` with
the columns of the results contract (:mod:`paceggm.bench.schema`). Summaries
(:func:`paceggm.bench.summary.trial_stats`) use only ``status == "ok"`` rows;
cells without any such row are *missing* (never run) or *failed* (run, every
trial failed), and are reported, never interpolated.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from paceggm.bench.cells import bound_policy
from paceggm.bench.schema import POLICY, RESULT_COLUMNS, guarantee_holds
from paceggm.bench.summary import policies, strays
from paceggm.bench.variants import row_labels, row_params

_NUMERIC = ("n", "d", "rho", "trial", "mahalanobis", "frobenius", "mse",
            "n_measured_diag", "n_measured_offdiag", "n_rounds", "rho_spent", "wall_time", "solve_time")
STATUSES = ("ok", "failed")
CELL = ("dataset", "variant", "rho")


class ResultsError(ValueError):
    """A results table is unreadable or breaks the results contract."""


def validate_results(df: pd.DataFrame, *, source: str = "results table") -> pd.DataFrame:
    """Check the contract and return a copy with numeric columns as floats.

    Raises
    ------
    ResultsError
        Missing columns, unknown status values, non-numeric metrics or ρ ≤ 0,
        each named with ``source``.
    """
    if not isinstance(df, pd.DataFrame):
        raise ResultsError(f"{source}: expected a pandas DataFrame, got {type(df).__name__}")
    df = _with_guarantee_columns(df)
    missing = [c for c in RESULT_COLUMNS if c not in df.columns]
    if missing:
        raise ResultsError(f"{source}: missing columns {missing} (see paceggm.bench.schema)")
    _check_one_grid(df, source)
    out = df.copy()
    for col in _NUMERIC:
        try:
            out[col] = pd.to_numeric(out[col]).astype(float)
        except (ValueError, TypeError) as exc:
            raise ResultsError(f"{source}: column {col!r} is not numeric ({exc})") from exc
    bad_status = sorted(set(out["status"].astype(str)) - set(STATUSES))
    if bad_status:
        raise ResultsError(f"{source}: unknown status values {bad_status}; expected {STATUSES}")
    if len(out) and not (out["rho"] > 0).all():
        raise ResultsError(f"{source}: rho must be > 0 in every row")
    for col in ("experiment", "dataset", "method", "variant", "preprocessing", "error"):
        out[col] = out[col].fillna("").astype(str)
    # One row per cell and trial: the same cell can be listed twice when a
    # recipe (``quick``) reuses it in several parts; keep an ``ok`` row first.
    out = (out.assign(_ok=out["status"].ne("ok"))
              .sort_values(["_ok"], kind="stable")
              .drop_duplicates(["cell_key"], keep="first")
              .drop(columns="_ok")
              .sort_index())
    return canonical_variants(out.reset_index(drop=True))


def _check_one_grid(df: pd.DataFrame, source: str) -> None:
    """Refuse a table whose rows a figure would average across bound policies or beyond its recipe's grid.

    A table without the ``bound_check`` / ``in_grid`` columns (every committed
    one) is what its recipe declares: one policy, its grid alone
    (:mod:`paceggm.bench.schema`).
    """
    fix = ("draw the recipe's grid alone: paceggm-bench collect --publish DIR experiment=<recipe>, "
           "then --runs DIR")
    outside = len(strays(df))
    if outside:
        raise ResultsError(f"{source}: {outside} rows are cells outside the recipe's grid (in_grid false), "
                           f"which a figure would average with its cells; {fix}")
    found = policies(df)
    if len(found) > 1:
        counts = df[POLICY].astype(str).value_counts()
        raise ResultsError(f"{source}: rows of {len(found)} bound policies "
                           f"({', '.join(f'{p}: {counts[p]}' for p in found)}), which a figure would "
                           f"average together; {fix}")


def _with_guarantee_columns(df: pd.DataFrame) -> pd.DataFrame:
    """Rows older than the ``guarantee_holds``/``converged``/solve-count columns: derive the first, the rest unknown.

    The guarantee follows from the preprocessing under the default bound policy
    (``auto``), which every committed table was computed with.
    """
    if "preprocessing" not in df.columns:
        return df  # reported as missing columns by the caller
    out = df.copy()
    holds = (out["guarantee_holds"] if "guarantee_holds" in out.columns
             else pd.Series(pd.NA, index=out.index)).astype("boolean")
    derived = out["preprocessing"].map(lambda p: guarantee_holds(bound_policy("auto", str(p)))).astype("boolean")
    out["guarantee_holds"] = holds.fillna(derived)
    if "converged" not in out.columns:
        out["converged"] = pd.array([pd.NA] * len(out), dtype="boolean")
    for col in ("n_solves", "n_capped_solves", "max_solve_iter"):
        if col not in out.columns:
            out[col] = pd.array([pd.NA] * len(out), dtype="Int64")
    return out


def canonical_variants(df: pd.DataFrame) -> pd.DataFrame:
    """Name every variant by what it computes, keeping the harness's label in ``variant_raw``.

    The harness labels a variant by its recipe entry and grid, so the same
    computation is ``paceggm`` in ``main``, ``paceggm[alpha=0.3,beta=0.5]`` in
    ``hyperparameters`` and ``paceggm_nocc`` in ``quick`` for components off. The
    name is the row's stored display label (:func:`paceggm.bench.variants.row_labels`:
    its method and the parameters that differed from the method's defaults when
    its cell was made). If two original labels would merge into one while being
    different computations of the same (data set, ρ, trial) — a difference the
    columns cannot show — both keep their original label.
    """
    out = df.copy()
    out["variant_raw"] = out["variant"]
    if not len(out):
        return out
    out["variant"] = row_labels(out)
    for _, g in out.groupby("variant"):
        if g["variant_raw"].nunique() > 1 and g.duplicated(["dataset", "preprocessing", "rho", "trial"]).any():
            out.loc[g.index, "variant"] = g["variant_raw"]
    return out


def load_results(runs: str | Path) -> tuple[dict[str, pd.DataFrame], dict[str, str]]:
    """Read every ``runs/<experiment>/results.parquet``.

    Returns
    -------
    tables : dict
        Experiment name → validated DataFrame.
    errors : dict
        Experiment name → why its table could not be used (unreadable file,
        broken contract). The caller decides whether that is fatal.
    """
    runs = Path(runs)
    tables: dict[str, pd.DataFrame] = {}
    errors: dict[str, str] = {}
    if not runs.is_dir():
        return tables, errors
    for path in sorted(runs.glob("*/results.parquet")):
        name = path.parent.name
        try:
            df = pd.read_parquet(path)
        except Exception as exc:  # pyarrow raises several types for a corrupt file
            errors[name] = f"{path}: unreadable parquet file ({type(exc).__name__}: {exc})"
            continue
        try:
            tables[name] = validate_results(df, source=str(path))
        except ResultsError as exc:
            errors[name] = str(exc)
    return tables, errors


def select_variants(df: pd.DataFrame, *, methods=None, params: set[str] = frozenset(),
                    plain: bool = True) -> pd.DataFrame:
    """Rows of the given methods whose parameters differ from the defaults only in ``params``.

    Read from what each row stores it varies (:func:`paceggm.bench.variants.row_params`).
    ``plain=False`` drops the rows run with the method's defaults.
    """
    if not len(df):
        return df
    varied = row_params(df)
    keep = varied.map(lambda p: set(p) <= set(params) if p else plain).astype(bool)
    if methods is not None:
        keep &= df["method"].isin(list(methods))
    return df[keep]


def pick_preprocessing(df: pd.DataFrame, preferred: str) -> tuple[pd.DataFrame, str, list[str]]:
    """Keep one preprocessing: ``preferred`` if present, else the first there is.

    Returns the rows, the preprocessing kept and the ones left out (for the report).
    """
    present = sorted(df["preprocessing"].unique())
    if not present:
        return df, preferred, []
    chosen = preferred if preferred in present else present[0]
    return df[df["preprocessing"] == chosen], chosen, [p for p in present if p != chosen]


def datasets_by_d(df: pd.DataFrame, only=None) -> list[str]:
    """Data sets ordered by dimension ``d`` (then name; unknown ``d`` last); ``only`` restricts them."""
    dims = df.groupby("dataset")["d"].max()
    names = [n for n in dims.index if only is None or n in only]
    return sorted(names, key=lambda n: (dims[n] if np.isfinite(dims[n]) else np.inf, n))


def dims(df: pd.DataFrame) -> dict[str, int]:
    return {k: int(v) for k, v in df.groupby("dataset")["d"].max().items() if np.isfinite(v)}


@dataclass(frozen=True)
class CellProblem:
    """A (data set, variant, ρ) cell without a usable result for a metric."""

    dataset: str
    variant: str
    rho: float
    kind: str  # "missing": no row at all; "failed": rows, none ok; "partial": some trials failed
    detail: str


def cell_problems(df: pd.DataFrame, *, datasets, variants, rhos, metric: str) -> list[CellProblem]:
    """Every cell of the full grid ``datasets × variants × rhos`` lacking ok trials.

    A cell is *missing* when the table has no row for it, *failed* when no row
    is ok with a finite ``metric``, *partial* when some trials failed or are
    absent (fewer trials than the variant has elsewhere in ``df``).
    """
    problems: list[CellProblem] = []
    trials_of = {v: set(g["trial"].dropna().astype(int)) for v, g in df.groupby("variant")}
    # One grouped pass tells the complete cells apart (every row ok, every trial of the variant
    # present): only the others, few, are looked at row by row.
    ok = (df["status"] == "ok") & np.isfinite(df[metric])
    groups = df.assign(_ok=ok, _trial=np.trunc(df["trial"])).groupby(list(CELL))
    summary = groups.agg(rows=("_ok", "size"), ok=("_ok", "sum"), trials=("_trial", "nunique"))
    complete = {k for k, rows, n_ok, trials in zip(summary.index, summary["rows"], summary["ok"], summary["trials"])
                if n_ok == rows and trials == len(trials_of.get(k[1], ()))}
    present, grouped = set(summary.index), None
    for ds in datasets:
        for var in variants:
            expected = trials_of.get(var, set())
            for rho in rhos:
                key = (ds, var, rho)
                if key in complete:
                    continue
                if key not in present:
                    problems.append(CellProblem(ds, var, rho, "missing", "no result row"))
                    continue
                if grouped is None:
                    grouped = dict(iter(groups))
                g = grouped[key]
                good = g["_ok"]
                failed = g[~good]
                absent = sorted(expected - set(g["trial"].dropna().astype(int)))
                if len(failed) == 0 and not absent:
                    continue
                total = len(expected | set(g["trial"].dropna().astype(int)))
                parts = [f"{int(good.sum())} of {total} trials ok"]
                if len(failed):
                    reasons = sorted({_first_line(e) or f"non-finite {metric}" for e in failed["error"]})
                    parts.append(f"failed: {_trial_list(failed['trial'])} ({'; '.join(reasons)})")
                if absent:
                    parts.append(f"not run: {_trial_list(absent)}")
                kind = "failed" if not good.any() else "partial"
                problems.append(CellProblem(ds, var, rho, kind, "; ".join(parts)))
    return problems


def _trial_list(trials) -> str:
    """``trial 3`` / ``trials 0–4, 7``: consecutive indices as ranges."""
    ts = sorted(int(t) for t in trials)
    runs, start = [], ts[0]
    for prev, cur in zip(ts, ts[1:] + [None]):
        if cur != prev + 1:
            runs.append(str(start) if start == prev else f"{start}–{prev}")
            start = cur
    return ("trial " if len(ts) == 1 else "trials ") + ", ".join(runs)


def _first_line(error: str) -> str:
    """One line saying why a trial failed, from a stored error (message and/or traceback).

    The harness stores ``message`` or ``Type: message`` followed by the traceback,
    whose last line is the exception actually raised; both are kept when they differ
    (e.g. "data set 'x' could not be loaded: ModuleNotFoundError: ...").
    """
    lines = [ln.strip() for ln in str(error).splitlines() if ln.strip()]
    if not lines:
        return ""
    marker = "Traceback (most recent call last):"
    if marker in lines:
        i = lines.index(marker)
        head = " ".join(lines[:i])
        tail = lines[-1] if i < len(lines) - 1 else ""
        if tail.startswith(("File ", "^", "~")):  # a cut traceback: no exception line
            tail = ""
        text = " ".join(x for x in (head, tail if tail not in head else "") if x)
    else:
        text = lines[0]
    return text if len(text) <= 200 else text[:197] + "..."

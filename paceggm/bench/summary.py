"""Summaries of a results table over trials: the statistics every figure and table uses, and the terminal table."""

from __future__ import annotations

import numpy as np
import pandas as pd

from paceggm.bench.schema import IN_GRID, PARAM_PREFIX, POLICY, TASK_COLUMNS
from paceggm.bench.variants import row_labels

KEYS = ["dataset", "variant", "rho"]
#: Printed where a table has a value: the task columns (population errors, subspace, support) only where measured.
METRICS = ["mahalanobis", "frobenius", "mse", *TASK_COLUMNS, "wall_time", "cpu_time"]


def trial_stats(df: pd.DataFrame, metric: str, by=KEYS) -> pd.DataFrame:
    """Mean and spread of ``metric`` over the ok trials (finite values) of each group.

    Columns: ``count, mean, sd, min, max, sem`` (sd, sem with ``ddof=1``; NaN
    for a single trial). Every summary of the harness — this module's table and
    the figures' — is computed here.
    """
    ok = df[(df["status"] == "ok") & np.isfinite(df[metric])]
    g = ok.groupby(list(by))[metric]
    out = pd.DataFrame({
        "count": g.count(),
        "mean": g.mean(),
        "sd": g.std(ddof=1),
        "min": g.min(),
        "max": g.max(),
    })
    out["sem"] = out["sd"] / np.sqrt(out["count"])
    return out


def runtime_metric(df: pd.DataFrame, wall: str = "wall_time") -> tuple[str, str]:
    """The time column a runtime summary of ``df`` reads, and its word: ``("cpu_time", "CPU")`` or ``(wall, "wall")``.

    CPU seconds of the fit (:class:`paceggm.bench.execute.FitClock`) where every ok row has them,
    since on a shared machine wall seconds move with the neighbours' load; else ``wall`` (the fit's
    ``wall_time``, or the solver's ``solve_time``), as in tables written before cells recorded
    CPU time: never a mix of the two clocks.

    >>> runtime_metric(pd.DataFrame({"status": ["ok"], "wall_time": [1.0]}))
    ('wall_time', 'wall')
    >>> runtime_metric(pd.DataFrame({"status": ["ok"], "wall_time": [1.0], "cpu_time": [0.4]}))
    ('cpu_time', 'CPU')
    """
    ok = df[df["status"] == "ok"] if "status" in df.columns else df
    if "cpu_time" in ok.columns and len(ok) and np.isfinite(pd.to_numeric(ok["cpu_time"]).astype(float)).all():
        return "cpu_time", "CPU"
    return wall, "wall"


def capped_exact_trials(table: pd.DataFrame, solver: str = "newton") -> pd.DataFrame:
    """Per recipe: the trials of ``solver`` (the exact Newton solver by default) whose solve an iteration
    cap ended (``converged`` false, or a capped block solve), out of its trials with the counts recorded.

    Newton stops each barrier stage on its tolerance; a stage that exhausts its iterations (or meets a
    non-finite value) ends the continuation early, and the answer is the last converged stage's, at a
    larger μ than the exact limit's: nearly but not exactly the maximum-entropy completion.
    Columns ``capped`` and ``trials``; recipes without such rows are left out.
    """
    empty = pd.DataFrame({"capped": pd.Series(dtype=int), "trials": pd.Series(dtype=int)})
    if not {"p_solver", "converged", "experiment"} <= set(table.columns):
        return empty
    rows = table[(table["p_solver"] == solver) & (table["status"] == "ok") & table["converged"].notna()]
    if not len(rows):
        return empty
    capped = ~rows["converged"].astype(bool)
    if "n_capped_solves" in rows.columns:
        capped |= pd.to_numeric(rows["n_capped_solves"]).fillna(0).to_numpy() > 0
    return pd.DataFrame({"capped": capped.groupby(rows["experiment"]).sum().astype(int),
                         "trials": rows.groupby("experiment").size()})


def capped_exact_line(table: pd.DataFrame, solver: str = "newton") -> str:
    """One line naming :func:`capped_exact_trials` per recipe ("" when the table has no such rows)."""
    counts = capped_exact_trials(table, solver)
    if not len(counts):
        return ""
    per = "; ".join(f"{name} {r.capped} of {r.trials:,}" for name, r in counts.iterrows())
    return (f"{solver} trials whose solve an iteration cap ended (answer at the last converged barrier stage, not "
            f"the exact limit): {int(counts['capped'].sum())} of {int(counts['trials'].sum()):,} ({per})")


def distinct_variants(table: pd.DataFrame) -> pd.DataFrame:
    """``table`` with each ``variant`` named by its method and the parameters that differ from its defaults.

    The name is the row's stored display label (:func:`paceggm.bench.variants.row_labels`), not the
    recipe's label, so a store holding one entry run with other fixed parameters
    (``method.paceggm.params.solver=ipm``) never lets it stand in for the defaults: ``paceggm``
    alone always means the method's defaults. Tables without ``p_*`` columns are returned as they are.
    """
    if table.empty or "method" not in table.columns or not any(c.startswith(PARAM_PREFIX) for c in table.columns):
        return table
    out = table.copy()
    out["variant"] = row_labels(table)
    return out


def policies(table: pd.DataFrame) -> list[str]:
    """The bound policies of a table's rows (column ``bound_check``; none for a table without it)."""
    if POLICY not in table.columns:
        return []
    return sorted({str(p) for p in table[POLICY].dropna()})


def strays(table: pd.DataFrame, keys=None) -> pd.DataFrame:
    """The rows outside the grid: keys not in ``keys`` when given, else ``in_grid`` false."""
    if keys is not None:
        return table[~table["cell_key"].isin(set(keys))]
    if IN_GRID not in table.columns:
        return table.iloc[:0]
    return table[table[IN_GRID].eq(False).fillna(False).astype(bool)]


def strays_line(rows: pd.DataFrame) -> str:
    """One line saying how many rows outside the grid were left out, by bound policy ("" if none)."""
    if not len(rows):
        return ""
    by = (rows[POLICY].fillna("unknown").astype(str).value_counts().sort_index()
          if POLICY in rows.columns else pd.Series({"unknown": len(rows)}))
    return (f"# not summarized: {len(rows)} stored cells outside the recipe's grid "
            f"({', '.join(f'bound policy {k}: {n}' for k, n in by.items())}); paceggm-bench show lists its grid")


def summarize(table: pd.DataFrame) -> pd.DataFrame:
    """Mean of each metric over the ``ok`` trials of every (data set, variant, ρ).

    Columns: the keys, ``trials`` (ok trials averaged), ``failed`` (failed
    cells), then the metrics that have at least one value. Variants are told
    apart by their parameters (:func:`distinct_variants`). Rows computed under
    different bound policies are never averaged together: when the table holds
    more than one (column ``bound_check``), it is a key too.
    """
    missing = [c for c in KEYS + ["status", "trial"] if c not in table.columns]
    if missing:
        raise ValueError(f"not a results table: missing columns {missing}")
    keys = KEYS + [POLICY] if len(policies(table)) > 1 else KEYS
    table = distinct_variants(table)
    ok = table[table["status"] == "ok"]
    metrics = [m for m in METRICS if m in ok.columns and ok[m].notna().any()]
    out = pd.DataFrame({"trials": ok.groupby(keys)["trial"].nunique()})
    for m in metrics:
        out[m] = trial_stats(ok, m, by=keys)["mean"]
    failed = table[table["status"] != "ok"].groupby(keys).size()
    out = out.join(failed.rename("failed"), how="outer")
    out["trials"] = out["trials"].fillna(0).astype(int)
    out["failed"] = out["failed"].fillna(0).astype(int)
    return out[["trials", "failed", *metrics]].reset_index()


#: The terminal table's header of each column, with its unit (metrics are means over ok trials).
HEADERS = {"rho": "ρ (zCDP)", "trials": "ok trials", "failed": "failed cells", POLICY: "bound policy",
           "mahalanobis": "mahalanobis", "frobenius": "frobenius", "mse": "mse", "wall_time": "fit time (s)",
           "cpu_time": "fit CPU (s)"}
#: Significant digits of every real value the terminal table prints.
SIGNIFICANT = 4
#: A column is printed in fixed-point while each of its non-zero magnitudes lies in this range, else in
#: scientific notation, the whole column alike (the harness's errors span 5e-5 to 8e8: fixed-point).
FIXED_RANGE = (1e-5, 1e12)


def _fixed(value: float, digits: int) -> str:
    """``value`` in fixed-point with ``digits`` significant digits (the integer part whole), thousands grouped."""
    if value == 0:
        return "0"
    exponent = int(f"{value:.{digits - 1}e}".split("e")[1])  # after rounding: 9.9996 is 10.00
    return f"{value:,.{max(0, digits - 1 - exponent)}f}"


def format_column(values, digits: int = SIGNIFICANT) -> list[str]:
    """Real ``values`` with ``digits`` significant digits, in one notation for the whole column.

    Fixed-point (``14,012``, ``0.6131``, ``0.0002801``) while every non-zero
    magnitude lies in :data:`FIXED_RANGE`, else scientific (``1.401e+04``,
    ``6.131e-01``) for every value: never a mix of the two in one column.

    Examples
    --------
    >>> format_column([14012.3, 0.61314, 0.0002801, float("nan")])
    ['14,012', '0.6131', '0.0002801', 'NaN']
    >>> format_column([1e-7, 0.5])
    ['1.000e-07', '5.000e-01']
    """
    v = np.asarray(values, dtype=float)
    magnitudes = np.abs(v[np.isfinite(v) & (v != 0)])
    fixed = not magnitudes.size or (magnitudes.min() >= FIXED_RANGE[0] and magnitudes.max() < FIXED_RANGE[1])
    return [("NaN" if np.isnan(x) else f"{x}") if not np.isfinite(x)
            else _fixed(x, digits) if fixed else f"{x:.{digits - 1}e}" for x in v]


def _column(name: str, values: pd.Series) -> tuple[list[str], bool]:
    """The printed cells of one column and whether they are right-aligned (numbers) or not (names)."""
    if name == "rho":  # a grid value: printed as given (0.0001, 10), never rounded or grouped
        return [np.format_float_positional(float(v), trim="-") for v in values], True
    if pd.api.types.is_integer_dtype(values):
        return [f"{int(v):,}" for v in values], True
    if pd.api.types.is_float_dtype(values):
        return format_column(values), True
    return [str(v) for v in values], False


def format_summary(summary: pd.DataFrame) -> str:
    """The terminal table of :func:`summarize`: a unit in each header, one number format per column.

    Names are left-aligned and numbers right-aligned; each real metric has
    :data:`SIGNIFICANT` significant digits (:func:`format_column`), ρ is
    printed as given, counts as integers, times in seconds.
    """
    columns = []
    for name in summary.columns:
        cells, right = _column(name, summary[name])
        header = HEADERS.get(name, name)
        width = max([len(header), *map(len, cells)])
        columns.append([(c.rjust if right else c.ljust)(width) for c in [header, *cells]])
    return "\n".join("  ".join(row).rstrip() for row in zip(*columns))

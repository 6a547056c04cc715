"""Summaries of a results table over trials: the statistics every figure and table uses, and the terminal table."""

from __future__ import annotations

import numpy as np
import pandas as pd

from paceggm.bench.cells import variant_label
from paceggm.bench.schema import IN_GRID, PARAM_PREFIX, POLICY
from paceggm.bench.variants import row_params

KEYS = ["dataset", "variant", "rho"]
METRICS = ["mahalanobis", "frobenius", "mse", "wall_time"]


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


def distinct_variants(table: pd.DataFrame) -> pd.DataFrame:
    """``table`` with each ``variant`` named by its method and the parameters that differ from its defaults.

    The name comes from the ``p_*`` columns (:func:`paceggm.bench.variants.label`), not from the
    recipe's label, so a store holding one entry run with other fixed parameters
    (``method.paceggm.params.solver=ipm``) never lets it stand in for the defaults: ``paceggm``
    alone always means the method's defaults. Tables without ``p_*`` columns are returned as they are.
    """
    if table.empty or "method" not in table.columns or not any(c.startswith(PARAM_PREFIX) for c in table.columns):
        return table
    out = table.copy()
    out["variant"] = [variant_label(m, p) for m, p in zip(table["method"], row_params(table))]
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


def format_summary(summary: pd.DataFrame) -> str:
    return summary.to_string(index=False, float_format=lambda v: f"{v:.4g}")

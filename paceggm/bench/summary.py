"""Summaries of a results table over trials: the statistics every figure and table uses, and the terminal table."""

from __future__ import annotations

import numpy as np
import pandas as pd

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


def summarize(table: pd.DataFrame) -> pd.DataFrame:
    """Mean of each metric over the ``ok`` trials of every (data set, variant, ρ).

    Columns: the keys, ``trials`` (ok trials averaged), ``failed`` (failed
    cells), then the metrics that have at least one value.
    """
    missing = [c for c in KEYS + ["status", "trial"] if c not in table.columns]
    if missing:
        raise ValueError(f"not a results table: missing columns {missing}")
    ok = table[table["status"] == "ok"]
    metrics = [m for m in METRICS if m in ok.columns and ok[m].notna().any()]
    out = pd.DataFrame({"trials": ok.groupby(KEYS)["trial"].nunique()})
    for m in metrics:
        out[m] = trial_stats(ok, m)["mean"]
    failed = table[table["status"] != "ok"].groupby(KEYS).size()
    out = out.join(failed.rename("failed"), how="outer")
    out["trials"] = out["trials"].fillna(0).astype(int)
    out["failed"] = out["failed"].fillna(0).astype(int)
    return out[["trials", "failed", *metrics]].reset_index()


def format_summary(summary: pd.DataFrame) -> str:
    return summary.to_string(index=False, float_format=lambda v: f"{v:.4g}")

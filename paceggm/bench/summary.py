"""A terminal summary of a results table: mean errors per data set, variant and ρ."""

from __future__ import annotations

import pandas as pd

KEYS = ["dataset", "variant", "rho"]
METRICS = ["mahalanobis", "frobenius", "mse", "wall_time"]


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
    out = ok.groupby(KEYS)[metrics].mean()
    out.insert(0, "trials", ok.groupby(KEYS)["trial"].nunique())
    failed = table[table["status"] != "ok"].groupby(KEYS).size()
    out = out.join(failed.rename("failed"), how="outer")
    out["trials"] = out["trials"].fillna(0).astype(int)
    out["failed"] = out["failed"].fillna(0).astype(int)
    return out[["trials", "failed", *metrics]].reset_index()


def format_summary(summary: pd.DataFrame) -> str:
    return summary.to_string(index=False, float_format=lambda v: f"{v:.4g}")

"""Summaries of a results table over trials: the statistics every figure and table uses, and the terminal table."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from paceggm.bench.methods import method_defaults

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
    """``table`` with each ``variant`` naming the parameters that set its rows apart.

    A variant label names only the parameters its recipe varies
    (``paceggm[solver=pgd0]``); a store may also hold the same entry run with
    other fixed parameters (``method.paceggm.params.solver=ipm``). So that one
    never stands in for the other, a label gets ``{k=v,…}``: for an entry
    named after its method (the registry's default entry), the parameters
    that differ from the method's defaults (its registered params over its
    class's declared defaults), so ``paceggm`` alone always means the
    defaults; for any other entry, the parameters whose
    values differ between rows sharing its label. Tables without ``params``
    are returned as they are.
    """
    if "params" not in table.columns or "method" not in table.columns or table.empty:
        return table
    parsed = table["params"].map(lambda p: json.loads(p) if p else {})
    labels = table["variant"].copy()
    for variant, idx in table.groupby("variant").groups.items():
        rows = parsed.loc[idx]
        grid = _grid_keys(str(variant))
        methods = set(table.loc[idx, "method"])
        if len(methods) == 1 and str(variant).split("[", 1)[0] == next(iter(methods)):
            # the registry's default entry: name what differs from the method's defaults, row by row
            defaults = method_defaults(next(iter(methods)))
            extras = {i: {k: v for k, v in rows[i].items() if k in defaults and v != defaults[k] and k not in grid}
                      for i in idx}
        elif len({json.dumps(p, sort_keys=True) for p in rows}) > 1:
            names = {k for p in rows for k in p} - grid
            keys = sorted(k for k in names if len({json.dumps(p.get(k)) for p in rows}) > 1)
            extras = {i: {k: rows[i].get(k) for k in keys} for i in idx}
        else:
            continue
        for i, extra in extras.items():
            if extra:
                labels.loc[i] = f"{variant}{{{','.join(f'{k}={_fmt(extra[k])}' for k in sorted(extra))}}}"
    return table.assign(variant=labels)


def _grid_keys(variant: str) -> set[str]:
    inside = variant.partition("[")[2].rstrip("]")
    return {part.split("=", 1)[0] for part in inside.split(",") if "=" in part}


def _fmt(value) -> str:
    from paceggm.bench.cells import variant_label

    return variant_label("", {"v": value})[3:-1]


def summarize(table: pd.DataFrame) -> pd.DataFrame:
    """Mean of each metric over the ``ok`` trials of every (data set, variant, ρ).

    Columns: the keys, ``trials`` (ok trials averaged), ``failed`` (failed
    cells), then the metrics that have at least one value. Variants are told
    apart by their parameters (:func:`distinct_variants`).
    """
    missing = [c for c in KEYS + ["status", "trial"] if c not in table.columns]
    if missing:
        raise ValueError(f"not a results table: missing columns {missing}")
    table = distinct_variants(table)
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

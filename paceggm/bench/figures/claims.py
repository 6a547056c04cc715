"""The publication's claims, as tables read off a results table.

The abstract claims "consistent improvements in estimation error with respect to
the Gaussian mechanism and other baselines, particularly in high-dimensional and
low-to-moderate privacy regimes". Three tables test it on the main comparison:

* :func:`winners_table` — which method has the smallest mean error per data set
  and ρ, and by how much (its error relative to the runner-up's); built among
  the main text's methods and again with the diagonal baseline, which the
  publication shows only in its all-data-set figure;
* :func:`gain_table` — the gain over a reference method (SSP, the Gaussian
  mechanism): the reference's mean error divided by the method's, per data set
  (rows ordered by d) and ρ, with two summary rows per ρ: the median gain over
  data sets and Spearman's rank correlation between d and the gain (does the
  gain grow with the dimension?).

For the solver comparison (the `solver` recipe), where every variant of a trial shares
its seed:

* :func:`ratio_table` — each variant's mean error or time divided by a
  reference variant's (Newton's), per data set and ρ, summarised by the median
  over data sets per ρ;
* :func:`paired_ratio_table` — the same ratio trial by trial (paired by data
  set, ρ and trial): its median and range over all pairs.

Means are over ok trials only; a cell without them is ``—``, never a made-up value.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from paceggm.bench.summary import trial_stats

from . import style
from .results import datasets_by_d, dims
from .tables import MISSING, Table, dataset_row_label, fmt_sig, rho_label

__all__ = ["gain_table", "paired_ratio_table", "ratio_table", "spearman", "winners_table"]


def _means(df: pd.DataFrame, metric: str) -> pd.Series:
    """Mean of ``metric`` over ok trials, indexed by (dataset, variant, rho)."""
    return trial_stats(df, metric, by=("dataset", "variant", "rho"))["mean"].dropna()


def spearman(x, y) -> float:
    """Spearman's rank correlation (average ranks for ties); NaN below 3 points."""
    x, y = pd.Series(x, dtype=float), pd.Series(y, dtype=float)
    if len(x) < 3 or x.nunique() < 2 or y.nunique() < 2:
        return float("nan")
    return float(np.corrcoef(x.rank(), y.rank())[0, 1])


def winners_table(df: pd.DataFrame, metric: str, *, name: str | None = None) -> Table:
    """Method with the smallest mean ``metric`` per data set and ρ.

    A cell reads ``label (r)`` with ``r`` = winner's mean / runner-up's mean
    (< 1; smaller is a clearer win). ``data`` holds one row per (dataset, rho):
    winner, runner-up, ratio and how many methods had ok trials there.
    """
    means, looks = _means(df, metric), style.variant_styles(df)
    order, d = datasets_by_d(df), dims(df)
    rhos = sorted(df["rho"].unique())
    text = pd.DataFrame(MISSING, index=[dataset_row_label(x, d) for x in order],
                        columns=[rho_label(r) for r in rhos])
    text.index.name = "data set"
    rows = []
    for (ds, rho), group in means.groupby(level=["dataset", "rho"]):
        ranked = group.droplevel(["dataset", "rho"]).sort_values()
        winner, runner_up = ranked.index[0], (ranked.index[1] if len(ranked) > 1 else None)
        ratio = ranked.iloc[0] / ranked.iloc[1] if runner_up is not None and ranked.iloc[1] > 0 else np.nan
        rows.append(dict(dataset=ds, rho=rho, winner=winner, runner_up=runner_up, ratio=ratio,
                         n_methods=len(ranked)))
        label = style.look(winner, looks).label
        text.loc[dataset_row_label(ds, d), rho_label(rho)] = (
            f"{label} ({fmt_sig(ratio, 2)})" if np.isfinite(ratio) else label)
    data = pd.DataFrame(rows, columns=["dataset", "rho", "winner", "runner_up", "ratio", "n_methods"])
    among = ", ".join(style.look(v, looks).label for v in style.variant_order(df["variant"].unique(), looks))
    return Table(name or f"winners_{metric}",
                 f"Method with the smallest mean {metric} error per data set and ρ, among {among}; in "
                 f"brackets its mean error divided by the runner-up's.", text, data)


def gain_table(df: pd.DataFrame, metric: str, *, method: str = "paceggm", reference: str = "ssp",
               name: str | None = None) -> Table:
    """Reference's mean ``metric`` divided by ``method``'s, per data set and ρ.

    Rows are data sets ordered by d, then ``median`` (over data sets) and
    ``Spearman(d, gain)`` per ρ. Gains above 1 favour ``method``.
    """
    means = _means(df, metric)
    order, d = datasets_by_d(df), dims(df)
    rhos = sorted(df["rho"].unique())
    looks = style.variant_styles(df)
    ref_label, m_label = style.look(reference, looks).label, style.look(method, looks).label
    gains = []
    for ds in order:
        for rho in rhos:
            a, b = means.get((ds, reference, rho), np.nan), means.get((ds, method, rho), np.nan)
            if np.isfinite(a) and np.isfinite(b) and b > 0:
                gains.append(dict(dataset=ds, d=d.get(ds, np.nan), rho=rho, gain=a / b))
    data = pd.DataFrame(gains, columns=["dataset", "d", "rho", "gain"])
    text = pd.DataFrame(MISSING, index=[dataset_row_label(x, d) for x in order] + ["median", "Spearman(d, gain)"],
                        columns=[rho_label(r) for r in rhos])
    text.index.name = "data set"
    for row in data.itertuples():
        text.loc[dataset_row_label(row.dataset, d), rho_label(row.rho)] = fmt_sig(row.gain, 3)
    for rho, group in data.groupby("rho"):
        text.loc["median", rho_label(rho)] = fmt_sig(float(group["gain"].median()), 3)
        rs = spearman(group["d"], group["gain"])
        text.loc["Spearman(d, gain)", rho_label(rho)] = f"{rs:+.2f}" if np.isfinite(rs) else MISSING
    return Table(name or f"gain_over_{reference}_{metric}",
                 f"Gain of {m_label} over {ref_label} on {metric} error: {ref_label}'s mean error divided "
                 f"by {m_label}'s (above 1: {m_label} is better); last rows: median over data sets and "
                 f"Spearman's rank correlation between d and the gain.", text, data)


def _ratio_rows(variants, reference: str, metrics, looks) -> list[tuple[str, str]]:
    return [(m, v) for m in metrics for v in style.variant_order(variants, looks) if v != reference]


def ratio_table(df: pd.DataFrame, metrics, *, reference: str, name: str) -> Table:
    """Median over data sets, per ρ, of each variant's mean ``metric`` over ``reference``'s.

    ``data`` holds every (data set, ρ) ratio behind the medians.
    """
    rhos = sorted(df["rho"].unique())
    looks = style.variant_styles(df)
    ref_label = style.look(reference, looks).label
    rows = []
    for metric in metrics:
        means = _means(df, metric)
        for (ds, variant, rho), value in means.items():
            ref = means.get((ds, reference, rho), np.nan)
            if variant != reference and np.isfinite(ref) and ref > 0:
                rows.append(dict(metric=metric, variant=variant, dataset=ds, rho=rho, ratio=value / ref))
    data = pd.DataFrame(rows, columns=["metric", "variant", "dataset", "rho", "ratio"])
    index = [f"{m}, {style.look(v, looks).label} / {ref_label}"
             for m, v in _ratio_rows(df["variant"].unique(), reference, metrics, looks)]
    text = pd.DataFrame(MISSING, index=index, columns=[rho_label(r) for r in rhos])
    text.index.name = "ratio (median over data sets)"
    for (metric, variant, rho), group in data.groupby(["metric", "variant", "rho"]):
        label = f"{metric}, {style.look(variant, looks).label} / {ref_label}"
        text.loc[label, rho_label(rho)] = fmt_sig(float(group["ratio"].median()), 3)
    n_ds = data.groupby("rho")["dataset"].nunique() if len(data) else pd.Series(dtype=int)
    counts = ", ".join(f"{rho_label(r)}: {n}" for r, n in n_ds.items())
    return Table(name, f"Each variant's mean over {ref_label}'s, per data set and ρ; median over data sets "
                       f"(data sets per ρ — {counts or 'none'}).", text, data)


def paired_ratio_table(df: pd.DataFrame, metrics, *, reference: str, name: str) -> Table:
    """Per-trial ratio to ``reference`` (same data set, ρ and trial): median, min, max, pairs."""
    ok = df[df["status"] == "ok"]
    looks = style.variant_styles(df)
    ref_label = style.look(reference, looks).label
    rows, text_rows = [], {}
    for metric, variant in _ratio_rows(df["variant"].unique(), reference, metrics, looks):
        key = ["dataset", "rho", "trial"]
        a = ok[ok["variant"] == variant].set_index(key)[metric]
        b = ok[ok["variant"] == reference].set_index(key)[metric]
        r = (a / b.where(b > 0)).dropna()
        r = r[np.isfinite(r)]
        label = f"{metric}, {style.look(variant, looks).label} / {ref_label}"
        stats = dict(metric=metric, variant=variant, pairs=len(r),
                     median=float(r.median()) if len(r) else np.nan,
                     min=float(r.min()) if len(r) else np.nan, max=float(r.max()) if len(r) else np.nan)
        rows.append(stats)
        text_rows[label] = [str(stats["pairs"])] + [fmt_sig(stats[k], 4) for k in ("median", "min", "max")]
    text = pd.DataFrame.from_dict(text_rows, orient="index", columns=["pairs", "median", "min", "max"])
    text.index.name = "per-trial ratio"
    return Table(name, f"Each variant's value over {ref_label}'s in the same trial (same data set, ρ and "
                       f"seed): median and range over all pairs.", text,
                 pd.DataFrame(rows, columns=["metric", "variant", "pairs", "median", "min", "max"]))

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

Means are over ok trials only; a cell without them is ``—``, never a made-up value.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from . import style
from .results import datasets_by_d, dims, summarize
from .tables import MISSING, Table, dataset_row_label, fmt_sig, rho_label

__all__ = ["gain_table", "spearman", "winners_table"]


def _means(df: pd.DataFrame, metric: str) -> pd.Series:
    """Mean of ``metric`` over ok trials, indexed by (dataset, variant, rho)."""
    return summarize(df, metric, by=("dataset", "variant", "rho"))["mean"].dropna()


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
    means = _means(df, metric)
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
        label = style.variant_style(winner).label
        text.loc[dataset_row_label(ds, d), rho_label(rho)] = (
            f"{label} ({fmt_sig(ratio, 2)})" if np.isfinite(ratio) else label)
    data = pd.DataFrame(rows, columns=["dataset", "rho", "winner", "runner_up", "ratio", "n_methods"])
    among = ", ".join(style.variant_style(v).label for v in style.variant_order(df["variant"].unique()))
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
    ref_label, m_label = style.variant_style(reference).label, style.variant_style(method).label
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

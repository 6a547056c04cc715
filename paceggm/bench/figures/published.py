"""The publication's tables beside ours: side-by-side tables, distance figures and scatter plots.

The published numbers ship with the package as CSV files in ``published/``, transcribed
from the tables of Ferrando, Fuentes, Mullins, Musco, Sheldon, *Private Adaptive
Covariance Estimation via Gaussian Graphical Models* (arXiv:2605.24295), with the
publication's display names mapped to the data-set registry's keys:

================================================  ==========================================
file                                              publication table
================================================  ==========================================
``table3_measurements.csv``                       Table 3: mean measured entries per trial
                                                  (``d_printed`` is the d of that row; the
                                                  table prints d − 1 for five data sets)
``table4_runtime.csv``                            Table 4: seconds per trial, mean ± SE
                                                  (IPM-Cholesky with connected components)
``table5_best_alpha_beta_frobenius.csv``          Table 5: best (α, β), Frobenius, 5 trials
``table6_best_alpha_beta_mahalanobis.csv``        Table 6: best (α, β), Mahalanobis
================================================  ==========================================

(Table 2, the data-set statistics, is the ``published`` field of each data set's
configuration and is compared by the data stage.)

Numeric tables are compared cell by cell as ``ours / published`` with our standard
error over trials; the *distance figures* of a table are how many cells lie within
10 %, 25 % and 2× of the published value, the median ratio, and how many differ from
it by more than three of our standard errors. Winner tables (best α, β) are compared
by exact matches, α matches and β matches, and by what our error at the published
winner costs relative to our own winner.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from paceggm.bench.summary import trial_stats

from .results import dims
from .tables import MISSING, Table, _alpha_beta, dataset_row_label, fmt_sig, rho_label

PUBLISHED_DIR = Path(__file__).with_name("published")

#: Table key -> (file, what it holds).
PUBLISHED_TABLES = {
    "measurements": ("table3_measurements.csv", "Table 3 (measured entries)"),
    "runtime": ("table4_runtime.csv", "Table 4 (runtime, IPM-Cholesky)"),
    "best_frobenius": ("table5_best_alpha_beta_frobenius.csv", "Table 5 (best α, β, Frobenius)"),
    "best_mahalanobis": ("table6_best_alpha_beta_mahalanobis.csv", "Table 6 (best α, β, Mahalanobis)"),
}

#: Relative distances reported for numeric tables ("within 10 %" = 0.9 ≤ ours/published ≤ 1.1).
BANDS = (0.10, 0.25)


@functools.cache
def _read(key: str) -> pd.DataFrame:
    if key not in PUBLISHED_TABLES:
        raise KeyError(f"unknown published table {key!r}; expected one of {sorted(PUBLISHED_TABLES)}")
    return pd.read_csv(PUBLISHED_DIR / PUBLISHED_TABLES[key][0])


def published_table(key: str) -> pd.DataFrame:
    """A copy of the published table ``key`` (a key of :data:`PUBLISHED_TABLES`).

    Examples
    --------
    >>> t = published_table("measurements")
    >>> float(t.query("dataset == 'communities_crime' and rho == 10")["offdiagonal_mean"].iloc[0])
    255.3
    """
    return _read(key).copy()


@dataclass(frozen=True)
class Distance:
    """How far our numbers of one table are from the published ones."""

    table: str
    preprocessing: str
    cells: int  # published cells with a value of ours
    missing: int  # published cells we have no ok trial for
    within_10: int
    within_25: int
    within_2x: int
    beyond_3se: int  # |ours − published| > 3 standard errors of our mean
    median_ratio: float

    def summary(self) -> str:
        return (f"{self.table} ({self.preprocessing}): {self.cells} cells; within 10 %: {self.within_10}, "
                f"within 25 %: {self.within_25}, within 2×: {self.within_2x}; median ours/published "
                f"{fmt_sig(self.median_ratio)}; beyond 3 SE: {self.beyond_3se}"
                + (f"; {self.missing} published cells without ours" if self.missing else ""))


def _ratio(ours: float, published: float) -> float:
    if published == 0:
        return 1.0 if ours == 0 else np.inf
    return ours / published


def compare_numeric(ours: pd.DataFrame, published: pd.DataFrame, *, value: str, name: str, what: str,
                    preprocessing: str) -> tuple[Table, Distance]:
    """Side-by-side table of ``published[value]`` and our mean ± SE per (dataset, ρ).

    ``ours`` is :func:`trial_stats`' output indexed by (dataset, rho). ``data`` holds one row per
    published cell: published, ours, sem, n_ok, ratio, z (difference in our standard errors).
    """
    records = []
    for _, p in published.iterrows():
        key = (p["dataset"], float(p["rho"]))
        st = ours.loc[key] if key in ours.index else None
        mean = float(st["mean"]) if st is not None else np.nan
        sem = float(st["sem"]) if st is not None else np.nan
        n_ok = int(st["count"]) if st is not None else 0
        pub = float(p[value])
        ratio = _ratio(mean, pub) if np.isfinite(mean) else np.nan
        z = (mean - pub) / sem if np.isfinite(mean) and np.isfinite(sem) and sem > 0 else np.nan
        records.append(dict(dataset=key[0], rho=key[1], d_printed=p.get("d_printed", np.nan),
                            published=pub, published_se=float(p.get("seconds_se", np.nan)),
                            ours=mean, sem=sem, n_ok=n_ok, ratio=ratio, z=z))
    data = pd.DataFrame(records)
    have = data[np.isfinite(data["ours"])]
    r = have["ratio"].to_numpy(dtype=float)
    dist = Distance(
        table=name, preprocessing=preprocessing, cells=len(have), missing=len(data) - len(have),
        within_10=int(np.sum(np.abs(r - 1) <= BANDS[0] + 1e-12)),
        within_25=int(np.sum(np.abs(r - 1) <= BANDS[1] + 1e-12)),
        within_2x=int(np.sum((r >= 0.5) & (r <= 2.0))),
        beyond_3se=int(np.sum(np.abs(have["z"].to_numpy(dtype=float)) > 3)),
        median_ratio=float(np.median(r)) if len(r) else np.nan)
    return _numeric_text(data, name, what, dist), dist


def _numeric_text(data: pd.DataFrame, name: str, what: str, dist: Distance) -> Table:
    d = dict(zip(data["dataset"], data["d_printed"]))
    order = list(dict.fromkeys(data["dataset"]))
    rhos = sorted(data["rho"].unique())
    text = pd.DataFrame(MISSING, index=[dataset_row_label(x, {k: int(v) for k, v in d.items()
                                                               if np.isfinite(v)}) for x in order],
                        columns=[rho_label(r) for r in rhos])
    text.index.name = "data set (published d)"
    labels = dict(zip(order, text.index))
    for _, row in data.iterrows():
        pub = fmt_sig(row["published"])
        if np.isfinite(row["published_se"]):
            pub += f" ± {fmt_sig(row['published_se'], 2)}"
        if not np.isfinite(row["ours"]):
            cell = f"{pub} / {MISSING}"
        else:
            sem = fmt_sig(row["sem"], 2) if np.isfinite(row["sem"]) else "n/a"
            cell = f"{pub} / {fmt_sig(row['ours'])} ± {sem} ({fmt_sig(row['ratio'], 2)}×)"
        text.loc[labels[row["dataset"]], rho_label(row["rho"])] = cell
    caption = (f"{what}: published (± its standard error where printed) / ours ± standard error over "
               f"trials (ours ÷ published). "
               f"{dist.summary()}.")
    return Table(name, caption, text, data)


def measurements_comparison(rows: pd.DataFrame, preprocessing: str) -> tuple[Table, Distance]:
    """Table 3 (mean off-diagonal entries measured per trial) against PACE-GGM's default rows."""
    ours = trial_stats(rows, "n_measured_offdiag", by=("dataset", "rho"))
    table, dist = compare_numeric(ours, published_table("measurements"), value="offdiagonal_mean",
                                  name=f"published_measurements_{preprocessing}",
                                  what="Off-diagonal entries measured per trial, Table 3",
                                  preprocessing=preprocessing)
    d = dims(rows)
    table.data["d_ours"] = [d.get(x, np.nan) for x in table.data["dataset"]]
    return table, dist


def runtime_comparison(rows: pd.DataFrame, preprocessing: str, *, label: str = "") -> tuple[Table, Distance]:
    """Table 4 (seconds per trial) against one variant's whole-fit time per trial."""
    ours = trial_stats(rows, "wall_time", by=("dataset", "rho"))
    suffix = f"_{label}" if label else ""
    return compare_numeric(ours, published_table("runtime"), value="seconds_mean",
                           name=f"published_runtime_{preprocessing}{suffix}",
                           what=f"Seconds per trial, Table 4 (IPM-Cholesky) vs ours"
                                f"{' (' + label + ')' if label else ''}",
                           preprocessing=preprocessing)


@dataclass(frozen=True)
class WinnerDistance:
    """How often our best (α, β) is the published one."""

    table: str
    metric: str
    cells: int
    exact: int
    alpha: int
    beta: int
    within_1se: int  # our mean error at the published pair is within one SE of our winner's
    median_cost: float  # our mean error at the published pair ÷ our winner's, median over cells

    def summary(self) -> str:
        return (f"{self.table}: {self.cells} cells; exact winner matches {self.exact}, α matches {self.alpha}, "
                f"β matches {self.beta}; the published pair is within 1 SE of our winner in {self.within_1se}; "
                f"median error at the published pair ÷ our best {fmt_sig(self.median_cost)}")


def best_pair_comparison(rows: pd.DataFrame, metric: str) -> tuple[Table, WinnerDistance]:
    """Tables 5/6 (best (α, β) per data set and ρ) against our grid of (α, β) variants.

    Our winner of a cell has the smallest mean error over ok trials (ties: smaller α, then β),
    as in :func:`~paceggm.bench.figures.tables.best_hyperparameters`.
    """
    key = {"frobenius": "best_frobenius", "mahalanobis": "best_mahalanobis"}[metric]
    stats = trial_stats(_alpha_beta(rows), metric, by=("dataset", "rho", "alpha", "beta"))
    records = []
    for _, p in published_table(key).iterrows():
        ds, rho = p["dataset"], float(p["rho"])
        pa, pb = float(p["best_alpha"]), float(p["best_beta"])
        try:
            g = stats.xs((ds, rho), level=["dataset", "rho"]).reset_index()
        except KeyError:
            g = pd.DataFrame()
        g = g[np.isfinite(g["mean"])] if len(g) else g
        if not len(g):
            records.append(dict(dataset=ds, rho=rho, published_alpha=pa, published_beta=pb))
            continue
        g = g.sort_values(["mean", "alpha", "beta"])
        best = g.iloc[0]
        at_pub = g[(g["alpha"] == pa) & (g["beta"] == pb)]
        pub_mean = float(at_pub["mean"].iloc[0]) if len(at_pub) else np.nan
        pub_sem = float(at_pub["sem"].iloc[0]) if len(at_pub) else np.nan
        records.append(dict(dataset=ds, rho=rho, published_alpha=pa, published_beta=pb,
                            alpha=float(best["alpha"]), beta=float(best["beta"]),
                            best_mean=float(best["mean"]), published_pair_mean=pub_mean,
                            cost=pub_mean / float(best["mean"]) if best["mean"] > 0 else np.nan,
                            within_1se=bool(np.isfinite(pub_mean)
                                            and pub_mean - float(best["mean"]) <= np.nan_to_num(pub_sem))))
    data = pd.DataFrame(records)
    have = data.dropna(subset=["alpha"]) if "alpha" in data else data.iloc[:0]
    exact = (have["alpha"] == have["published_alpha"]) & (have["beta"] == have["published_beta"])
    dist = WinnerDistance(
        table=f"{PUBLISHED_TABLES[key][1]}", metric=metric, cells=len(have), exact=int(exact.sum()),
        alpha=int((have["alpha"] == have["published_alpha"]).sum()),
        beta=int((have["beta"] == have["published_beta"]).sum()),
        within_1se=int(have["within_1se"].astype(bool).sum()),
        median_cost=float(np.nanmedian(have["cost"])) if len(have) else np.nan)
    order = list(dict.fromkeys(data["dataset"]))
    rhos = sorted(data["rho"].unique())
    text = pd.DataFrame(MISSING, index=order, columns=[rho_label(r) for r in rhos])
    text.index.name = "data set"
    for _, r in data.iterrows():
        pub = f"({r['published_alpha']:g}, {r['published_beta']:g})"
        if not np.isfinite(r.get("alpha", np.nan)):
            text.loc[r["dataset"], rho_label(r["rho"])] = f"{pub} / {MISSING}"
            continue
        mark = "=" if r["alpha"] == r["published_alpha"] and r["beta"] == r["published_beta"] else "≠"
        text.loc[r["dataset"], rho_label(r["rho"])] = (
            f"{pub} {mark} ({r['alpha']:g}, {r['beta']:g}) [{fmt_sig(r['cost'], 3)}]")
    caption = (f"Best (α, β), {PUBLISHED_TABLES[key][1]}: published {{=,≠}} ours, and in brackets our mean "
               f"error at the published pair ÷ at our best pair. {dist.summary()}.")
    return Table(f"published_best_{metric}", caption, text, data), dist


def distance_table(distances: list[Distance], winners: list[WinnerDistance]) -> Table:
    """One row per compared table: its distance figures."""
    rows = {}
    for d in distances:
        rows[f"{d.table}"] = {
            "cells": str(d.cells), "within 10 %": str(d.within_10), "within 25 %": str(d.within_25),
            "within 2×": str(d.within_2x), "median ours/published": fmt_sig(d.median_ratio),
            "beyond 3 SE": str(d.beyond_3se), "exact winner matches": "n/a"}
    for w in winners:
        rows[f"published_best_{w.metric}"] = {
            "cells": str(w.cells), "within 10 %": "n/a", "within 25 %": "n/a", "within 2×": "n/a",
            "median ours/published": f"cost {fmt_sig(w.median_cost)}", "beyond 3 SE": "n/a",
            "exact winner matches": f"{w.exact} (α {w.alpha}, β {w.beta}; ≤1 SE {w.within_1se})"}
    text = pd.DataFrame.from_dict(rows, orient="index")
    text.index.name = "comparison"
    data = pd.DataFrame([vars(d) for d in distances] + [vars(w) for w in winners])
    return Table("published_distances",
                 "Distance of our results from each published table: cells within 10 %, 25 % and 2× of the "
                 "published value, the median ratio ours/published and cells more than 3 of our standard "
                 "errors away; for the best-(α, β) tables exact winner matches (α alone, β alone, and cells "
                 "where the published pair is within one standard error of our best), and the median cost "
                 "of the published pair (our error there ÷ our best).", text, data)


def scatter_figure(panels: list[tuple[str, pd.DataFrame]], *, xlabel: str, ylabel: str, width: float):
    """Ours against published per cell, log axes, the y = x line; colour = data set.

    ``panels`` holds (title, data) pairs, data as a comparison table's ``data``.
    """
    import matplotlib as mpl

    from . import style
    from .plots import _new_figure

    with mpl.rc_context(style.RC):
        one = len(panels) == 1
        fig = _new_figure(0.7 * width if one else width, 0.5 * width)
        axes = fig.subplots(1, len(panels), squeeze=False)[0]
        datasets = list(dict.fromkeys(ds for _, data in panels for ds in data["dataset"]))
        cmap = mpl.colormaps["tab20"]
        colours = {ds: cmap(i % 20) for i, ds in enumerate(datasets)}
        for ax, (title, data) in zip(axes, panels):
            ok = data[np.isfinite(data["ours"]) & (data["ours"] > 0) & (data["published"] > 0)]
            for ds, g in ok.groupby("dataset", sort=False):
                ax.scatter(g["published"], g["ours"], s=10, color=colours[ds], label=ds.replace("_", " "),
                           edgecolor="none", alpha=0.9)
            if len(ok):
                lo = float(min(ok["published"].min(), ok["ours"].min())) / 1.5
                hi = float(max(ok["published"].max(), ok["ours"].max())) * 1.5
                xs = np.array([lo, hi])
                ax.plot(xs, xs, color="k", lw=0.8, label="y = x")
                ax.fill_between(xs, xs / 1.25, xs * 1.25, color="0.85", zorder=0, label="±25 %")
                ax.set_xlim(lo, hi)
                ax.set_ylim(lo, hi)
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_aspect("equal", adjustable="box")
            ax.set_title(title)
            ax.set_xlabel(xlabel)
            ax.set_ylabel(ylabel)
            ax.grid(True, which="major")
        handles, labels = [], []
        for ax in axes:
            for h, lab in zip(*ax.get_legend_handles_labels()):
                if lab not in labels:
                    handles.append(h)
                    labels.append(lab)
        fig.legend(handles, labels, loc="outside right center", frameon=False)
    return fig

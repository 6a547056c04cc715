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
it by more than three standard errors of the difference (both sides' errors: the
publication's printed one, else assumed equal to ours). Winner tables (best α, β) are
compared by exact matches, α matches and β matches, and by what our error at the
published winner costs relative to our own winner. Every count stands beside what an
exact replicate of the publication would score (:mod:`.replicate`).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from paceggm.bench.summary import runtime_metric, trial_stats

from . import replicate as rep
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
    beyond_3se: int  # |ours − published| > 3 standard errors of the difference (both sides' errors)
    median_ratio: float
    replicate: rep.ReplicateCheck | None = None  # the same counts scored by an exact replicate

    def summary(self) -> str:
        count = functools.partial(_with_replicate, self.replicate)
        return (f"{self.table} ({self.preprocessing}): {self.cells} cells; within 10 %: {count('within 10 %', self.within_10)}, "
                f"within 25 %: {count('within 25 %', self.within_25)}, within 2×: {count('within 2×', self.within_2x)}; "
                f"median ours/published {fmt_sig(self.median_ratio)}; beyond 3 SE of the difference: "
                f"{count('beyond 3 SE', self.beyond_3se)}"
                + (f"; {self.missing} published cells without ours" if self.missing else ""))


def compare_numeric(ours: pd.DataFrame, published: pd.DataFrame, *, value: str, name: str, what: str,
                    preprocessing: str, se: str | None = None) -> tuple[Table, Distance]:
    """Side-by-side table of ``published[value]`` and our mean ± SE per (dataset, ρ).

    ``ours`` is :func:`trial_stats`' output indexed by (dataset, rho). ``data`` holds one row per
    published cell: published, published_se (printed, else NaN), ours, sem, n_ok, ratio, sigma
    (the difference's standard error, the publication's assumed equal to ours where it prints
    none: ``published_se_assumed``), df, z (difference in ``sigma``) and z_ours (in our sem).
    """
    # One join, not a lookup per published row: the replicate checks draw these tables many times.
    mine = (ours[["mean", "sem", "count"]].astype(float)
            .rename(columns={"mean": "ours", "count": "n_ok"}).rename_axis(["dataset", "rho"]).reset_index())
    mine["rho"] = mine["rho"].astype(float)
    data = pd.DataFrame({"dataset": published["dataset"].to_numpy(), "rho": published["rho"].astype(float).to_numpy(),
                         "d_printed": published["d_printed"].to_numpy(dtype=float) if "d_printed" in published
                         else np.nan,
                         "published": published[value].to_numpy(dtype=float),
                         "published_se": published[se].to_numpy(dtype=float) if se else np.nan})
    data = data.merge(mine, on=["dataset", "rho"], how="left", sort=False)  # ours: one row per (data set, ρ)
    data["n_ok"] = data["n_ok"].fillna(0).astype(int)
    mean, pub, sem = (data[c].to_numpy(dtype=float) for c in ("ours", "published", "sem"))
    with np.errstate(divide="ignore", invalid="ignore"):
        data["ratio"] = np.where(np.isfinite(mean), np.where(pub == 0, np.where(mean == 0, 1.0, np.inf), mean / pub),
                                 np.nan)
        data["z_ours"] = np.where(np.isfinite(mean) & np.isfinite(sem) & (sem > 0), (mean - pub) / sem, np.nan)
    sigma, df, assumed = rep.difference_errors(data["sem"], data["n_ok"], data["published_se"])
    data["sigma"], data["df"], data["published_se_assumed"] = sigma, df, assumed
    diff = (data["ours"] - data["published"]).to_numpy(dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        data["z"] = np.where(sigma > 0, diff / np.where(sigma > 0, sigma, 1), np.where(diff == 0, 0.0, np.inf))
    have = data[np.isfinite(data["ours"])]
    r = have["ratio"].to_numpy(dtype=float)
    counts = rep.numeric_replicate(data, BANDS)
    printed = int((~have["published_se_assumed"]).sum())
    note = ("the publication's printed standard errors" if printed == len(have) else
            "the publication's standard errors assumed equal to ours (it prints none)" if printed == 0 else
            f"the publication's printed standard errors ({printed} cells), else assumed equal to ours")
    dist = Distance(
        table=name, preprocessing=preprocessing, cells=len(have), missing=len(data) - len(have),
        within_10=int(np.sum(np.abs(r - 1) <= BANDS[0] + 1e-12)),
        within_25=int(np.sum(np.abs(r - 1) <= BANDS[1] + 1e-12)),
        within_2x=int(np.sum((r >= 0.5) & (r <= 2.0))),
        beyond_3se=int(np.sum(np.abs(have["z"].to_numpy(dtype=float)) > rep.K_SE)),
        median_ratio=float(np.median(r)) if len(r) else np.nan,
        replicate=rep.ReplicateCheck(f"{what} ({preprocessing})", tuple(counts.values()), note))
    return _numeric_text(data, name, what, dist), dist


def _numeric_text(data: pd.DataFrame, name: str, what: str, dist: Distance) -> Table:
    dims_printed = {k: int(v) for k, v in zip(data["dataset"], data["d_printed"]) if np.isfinite(v)}
    order = list(dict.fromkeys(data["dataset"]))
    columns = [rho_label(r) for r in sorted(data["rho"].unique())]
    cells: dict[str, dict[str, str]] = {x: {} for x in order}
    # Plain records, not pandas rows: a table of a few hundred cells is drawn many times (each
    # replicate check of the tests), and per-row indexing was most of its cost.
    for row in data[["dataset", "rho", "published", "published_se", "ours", "sem", "ratio"]].to_dict("records"):
        pub = fmt_sig(row["published"])
        if np.isfinite(row["published_se"]):
            pub += f" ± {fmt_sig(row['published_se'], 2)}"
        if not np.isfinite(row["ours"]):
            cell = f"{pub} / {MISSING}"
        else:
            sem = fmt_sig(row["sem"], 2) if np.isfinite(row["sem"]) else "n/a"
            cell = f"{pub} / {fmt_sig(row['ours'])} ± {sem} ({fmt_sig(row['ratio'], 2)}×)"
        cells[row["dataset"]][rho_label(row["rho"])] = cell
    text = pd.DataFrame([[cells[x].get(c, MISSING) for c in columns] for x in order],
                        index=[dataset_row_label(x, dims_printed) for x in order], columns=columns, dtype=object)
    text.index.name = "data set (published d)"
    caption = (f"{what}: published (± its standard error where printed) / ours ± standard error over "
               f"trials (ours ÷ published). {dist.summary()}.")
    if dist.replicate is not None:
        caption += (f" In brackets: what an exact replicate of the publication would score (mean and 95 % "
                    f"range; {dist.replicate.note}).")
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
    """Table 4 (seconds per trial) against one variant's whole-fit time per trial: CPU seconds where
    every row has them (said in the caption), else wall seconds."""
    clock, word = runtime_metric(rows)
    ours = trial_stats(rows, clock, by=("dataset", "rho"))
    suffix = f"_{label}" if label else ""
    return compare_numeric(ours, published_table("runtime"), value="seconds_mean", se="seconds_se",
                           name=f"published_runtime_{preprocessing}{suffix}",
                           what=f"Seconds per trial, Table 4 (IPM-Cholesky) vs ours"
                                f"{' (' + label + ')' if label else ''}"
                                f"{', ours in CPU seconds of the fit' if word == 'CPU' else ''}",
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
    replicate: rep.ReplicateCheck | None = None  # the same counts scored by an exact replicate

    def summary(self) -> str:
        count = functools.partial(_with_replicate, self.replicate)
        return (f"{self.table}: {self.cells} cells; exact winner matches {count('exact winner matches', self.exact)}, "
                f"α matches {count('α matches', self.alpha)}, β matches {count('β matches', self.beta)}; the "
                f"published pair is within 1 SE of our winner in {count('published pair within 1 SE', self.within_1se)}; "
                f"median error at the published pair ÷ our best "
                f"{count('median cost', fmt_sig(self.median_cost))}")


def best_pair_comparison(rows: pd.DataFrame, metric: str, *, fresh: pd.DataFrame | None = None
                         ) -> tuple[Table, WinnerDistance]:
    """Tables 5/6 (best (α, β) per data set and ρ) against our grid of (α, β) variants.

    Our winner of a cell has the smallest mean error over ok trials (ties: smaller α, then β),
    as in :func:`~paceggm.bench.figures.tables.best_hyperparameters`. ``fresh`` (the best-pairs
    study's further trials of the same cells: dataset, rho, trial, p_alpha, p_beta and the
    errors) joins the replicate's pool of whole trials, from which each side draws as many as
    the recipe ran.
    """
    key = {"frobenius": "best_frobenius", "mahalanobis": "best_mahalanobis"}[metric]
    ab = _alpha_beta(rows)
    stats = trial_stats(ab, metric, by=("dataset", "rho", "alpha", "beta"))
    # per trial, all pairs side by side: a trial's pairs share its seed, and the replicate resamples whole trials
    ok = ab[ab["status"] == "ok"]
    per_cell = int(ok.groupby(["dataset", "rho", "alpha", "beta"]).size().max()) if len(ok) else 0
    if fresh is not None:
        ok = pd.concat([ok, fresh.rename(columns={"p_alpha": "alpha", "p_beta": "beta"})
                        .astype({"rho": float})], ignore_index=True)
    wide = ok.pivot_table(index=["dataset", "rho", "trial"], columns=["alpha", "beta"], values=metric)
    records, sim_cells = [], []
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
        pairs = list(zip(g["alpha"], g["beta"]))
        sim_cells.append((g["alpha"].to_numpy(dtype=float), g["beta"].to_numpy(dtype=float),
                          wide.xs((ds, rho), level=["dataset", "rho"])[pairs].to_numpy(dtype=float)))
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
    observed = dict(exact=int(exact.sum()), alpha=int((have["alpha"] == have["published_alpha"]).sum()),
                    beta=int((have["beta"] == have["published_beta"]).sum()),
                    within_1se=int(have["within_1se"].astype(bool).sum()),
                    median_cost=float(np.nanmedian(have["cost"])) if len(have) else np.nan)
    check = None
    if sim_cells:
        draws = rep.winner_replicate(sim_cells, seed_key=f"replicate/{key}", trials=per_cell)
        names = dict(exact="exact winner matches", alpha="α matches", beta="β matches",
                     within_1se="published pair within 1 SE", median_cost="median cost")
        check = rep.ReplicateCheck(
            PUBLISHED_TABLES[key][1],
            tuple(rep.from_draws(names[k], observed[k], draws[k], high_is_worse=(k == "median_cost"),
                                 cells=len(sim_cells)) for k in names),
            f"whole-trial bootstrap, a trial's nine pairs resampled together (they share its seed), "
            f"{per_cell} trials a side from " + (f"{len(wide) // max(len(sim_cells), 1)} per cell (the committed "
                                                 "and the best-pairs study's fresh trials)" if fresh is not None
                                                 else "the committed ones")
            + "; the publication's noise assumed equal to ours (it prints none)")
    dist = WinnerDistance(table=f"{PUBLISHED_TABLES[key][1]}", metric=metric, cells=len(have), **observed,
                          replicate=check)
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
    if check is not None:
        caption += (f" Beside each count: what an exact replicate of the publication would score (mean and 95 % "
                    f"range; {check.note}).")
    return Table(f"published_best_{metric}", caption, text, data), dist


def _with_replicate(check, name: str, observed) -> str:
    """``observed``, and beside it the replicate's score of the count ``name`` where ``check`` has it."""
    e = {x.name: x for x in check.counts} if check else {}
    return f"{observed}" + (f" [{e[name].brief()}]" if name in e else "")


def _verdict(check) -> str:
    if check is None or not check.counts:
        return "n/a"
    return "yes" if check.consistent else "no"


def distance_table(distances: list[Distance], winners: list[WinnerDistance]) -> Table:
    """One row per compared table: its distance figures, each beside an exact replicate's score."""
    rows = {}
    for d in distances:
        c = d.replicate
        rows[f"{d.table}"] = {
            "cells": str(d.cells), "within 10 %": _with_replicate(c, "within 10 %", d.within_10),
            "within 25 %": _with_replicate(c, "within 25 %", d.within_25),
            "within 2×": _with_replicate(c, "within 2×", d.within_2x),
            "median ours/published": fmt_sig(d.median_ratio),
            "beyond 3 SE": _with_replicate(c, "beyond 3 SE", d.beyond_3se), "exact winner matches": "n/a",
            "consistent with an exact replicate": _verdict(c)}
    for w in winners:
        c = w.replicate
        rows[f"published_best_{w.metric}"] = {
            "cells": str(w.cells), "within 10 %": "n/a", "within 25 %": "n/a", "within 2×": "n/a",
            "median ours/published": "cost " + _with_replicate(c, "median cost", fmt_sig(w.median_cost)),
            "beyond 3 SE": "n/a",
            "exact winner matches": (f"{_with_replicate(c, 'exact winner matches', w.exact)}; "
                                     f"α {_with_replicate(c, 'α matches', w.alpha)}; "
                                     f"β {_with_replicate(c, 'β matches', w.beta)}; "
                                     f"≤1 SE {_with_replicate(c, 'published pair within 1 SE', w.within_1se)}"),
            "consistent with an exact replicate": _verdict(c)}
    text = pd.DataFrame.from_dict(rows, orient="index")
    text.index.name = "comparison"
    data = pd.DataFrame([{k: v for k, v in vars(d).items() if k != "replicate"} for d in distances]
                        + [{k: v for k, v in vars(w).items() if k != "replicate"} for w in winners])
    return Table("published_distances",
                 "Distance of our results from each published table: cells within 10 %, 25 % and 2× of the "
                 "published value, the median ratio ours/published and cells more than 3 standard errors of the "
                 "difference away (both sides' errors: the publication's printed one, else assumed equal to ours); "
                 "for the best-(α, β) tables exact winner matches (α alone, β alone, and cells where the published "
                 "pair is within one standard error of our best), and the median cost of the published pair (our "
                 "error there ÷ our best). In brackets beside each count: what an exact replicate of the "
                 "publication would score, its mean and 95 % range, given both sides' trial noise (closed form "
                 "for the numeric tables, a seeded simulation for the winner tables; "
                 "`paceggm.bench.figures.replicate`). Last column: no count beyond its replicate's 95 % range on "
                 "the side away from the publication.",
                 text, data)


def replicate_lines(distances: list[Distance], winners: list[WinnerDistance]) -> list[str]:
    """One line per compared table: consistent with an exact replicate or not, and by how much."""
    return [rep.consistency_line(d.replicate) for d in [*distances, *winners] if d.replicate is not None]


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

"""An effective signal-to-noise factor against Table 3's counts: what the data-scale sweep measures.

PACE-GGM's noise is calibrated to the declared bound, not to the data, so multiplying the
preprocessed data by ``s`` multiplies every measurement's signal-to-noise ratio by ``s²`` and moves
how many entries the selection finds worth measuring. Gaussian noise of scale 1/√ρ makes that the same
as running at ρ·s⁴ (equivalently n·s², or the bound B/s): the sweep cannot tell a change of scale from
a budget convention, a different n or a different bound, and what it measures is one **effective
signal-to-noise factor** f = s⁴ on ρ. The harness's ``data_scale`` does exactly that
(before the bound is checked; the ``paper`` preprocessing waives it, as published). This study runs
the ``measurements`` recipe's PACE-GGM cells (same seeds: the noise is paired across scales, and
scale 1 is the committed cells bit for bit) on adult and communities_crime at every scale of a grid,
and sets each cell's mean count beside Table 3::

    python -m studies.scale_sweep                 # the committed grid (make study-scale)
    python -m studies.scale_sweep --trials 2 --scales 0.8,1 --out-dir /tmp/x

Per (data set, ρ, scale): the mean off-diagonal count ± SE over trials; the difference from the
published mean in standard errors of the difference, z, with the publication's standard error taken
as our per-trial SD over its 10 trials (it prints none). Per (data set, scale): χ² = Σ z² over the
ρ's, and its p-value (χ² with one degree of freedom per cell). Per (data set, ρ): the scale at which
our mean count equals the published one, and the smallest and largest scale at which the published
count is within 2 SE of the difference (mean and SE linear in log scale between grid points).

**The joint fit** (``--fit``) tests that factor on all of Table 3 at once. Our count at ρ·f is read
off each data set's count-against-ρ curve (the committed ``measurements`` cells, this sweep's cells
at ρ·s⁴, and the cells ``--fit`` runs at the ρ's of :data:`FIT_RHOS`, 10 trials, the recipe's seeds;
log-linear between points). Each cell's z (the publication's SE taken as our per-trial SD over its 10
trials) is put on the normal scale through Student's t with 9 degrees of freedom (our SD's), so that
Σ z² is χ² with one degree of freedom per cell less one per fitted factor. Three hypotheses, nested:
no factor (f = 1), one common f, one f per data set; each fitted factor is counted. **Criterion,
stated before the fit**: a hypothesis *fits* when its χ² has p ≥ 0.05 at its degrees of freedom; the
per-data-set factors are *needed* when the likelihood ratio against the common factor has p < 0.05
(χ² with 11 degrees of freedom). Cells whose ρ·f leaves the curve over the search range are left out
and named, with the command that runs them::

    python -m studies.scale_sweep --fit          # the joint fit; writes scale_fit.{md,csv}

Writes ``scale_sweep.md`` (tables) and ``scale_sweep.csv`` (one row per data set, ρ and scale) to
``--out-dir`` (default ``figures/results/investigations``); a grid other than the default needs an
explicit ``--out-dir``, so a reduced run never writes over the committed study. Exit 1 if a cell
failed.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from studies._sweeps import floats, harness_config, is_default, markdown, names, publish, run_grids, study_parser

SCALES = (0.5, 0.65, 0.8, 1.0, 1.25)
DATASETS = ("adult", "communities_crime")
RHOS = (0.01, 0.1, 1.0, 2.0, 10.0)
TRIALS = 15
#: Table 3's trials per cell (the publication's 10), for its assumed standard error.
PUBLISHED_TRIALS = 10
OUT_DIR = Path("figures") / "results" / "investigations"
#: Within this many standard errors of the difference, a scale "reproduces" a published cell.
K = 2.0
#: The joint fit's extra budgets (scale 1, every data set, 10 trials): between the recipe's ρ's, so the
#: count-against-ρ curve is read within half a decade, and beyond them, so ρ·f stays on it for f in FIT_RANGE.
FIT_RHOS = (3e-6, 1e-5, 3e-5, 3e-4, 3e-3, 0.03, 0.3, 0.5, 5.0, 20.0, 30.0)
FIT_TRIALS = 10
#: The effective factor f = s⁴ searched (s from 0.42 to 1.32), on a log grid.
FIT_RANGE = (0.03, 3.0)
FIT_GRID = 1201
LEVEL = 0.05


def configs(scales, datasets, rhos, trials, *, runs_dir, extra=()) -> list[dict]:
    """One harness config per scale: the ``measurements`` recipe's PACE-GGM cells on the grid."""
    base = ["experiment=measurements", "name=scale_sweep", "reuse_from=[]", "progress=false",
            "backend.n_jobs=1", "order=cheapest_first", f"runs_dir={runs_dir}",
            f"datasets=[{','.join(datasets)}]", f"rho=[{','.join(repr(float(r)) for r in rhos)}]",
            f"trials={int(trials)}", *extra]
    return [harness_config([*base, f"data_scale={float(s)!r}"]) for s in scales]


def _scale_column(rows: pd.DataFrame) -> pd.Series:
    if "p_data_scale" not in rows.columns:
        return pd.Series(1.0, index=rows.index)
    return rows["p_data_scale"].astype(float).fillna(1.0)  # no record = the default scale


def cell_stats(rows: pd.DataFrame, published: pd.DataFrame, *, published_trials: int = PUBLISHED_TRIALS) -> pd.DataFrame:
    """Per (dataset, rho, scale): our mean count, SD, SE, trials, the published mean, ratio and z."""
    ok = rows[rows["status"] == "ok"].assign(scale=lambda r: _scale_column(r))
    g = ok.astype({"n_measured_offdiag": float}).groupby(["dataset", "rho", "scale"])["n_measured_offdiag"]
    out = g.agg(mean="mean", sd="std", trials="count").reset_index()
    out["sem"] = out["sd"] / np.sqrt(out["trials"])
    pub = published.drop_duplicates(["dataset", "rho"])[["dataset", "rho", "offdiagonal_mean"]]
    out = out.merge(pub.rename(columns={"offdiagonal_mean": "published"}), on=["dataset", "rho"], how="left")
    out["published_se"] = out["sd"] / math.sqrt(published_trials)  # assumed: our per-trial SD
    out["sigma"] = np.hypot(out["sem"], out["published_se"])
    out["ratio"] = out["mean"] / out["published"]
    with np.errstate(divide="ignore", invalid="ignore"):
        out["z"] = np.where(out["sigma"] > 0, (out["mean"] - out["published"]) / out["sigma"],
                            np.where(out["mean"] == out["published"], 0.0, np.inf * np.sign(out["mean"] - out["published"])))
    return out.sort_values(["dataset", "rho", "scale"]).reset_index(drop=True)


def fit_by_scale(stats_: pd.DataFrame) -> pd.DataFrame:
    """Per (dataset, scale), and per scale over all data sets (``dataset == "all"``): χ², cells, p, cells within K SE."""
    have = stats_[np.isfinite(stats_["published"])]

    def one(g):
        z = g["z"].to_numpy(dtype=float)
        chi2 = float(np.sum(z ** 2))
        return pd.Series({"chi2": chi2, "cells": len(z), "p": float(stats.chi2.sf(chi2, len(z))),
                          f"within_{K:g}se": int(np.sum(np.abs(z) <= K))})

    per = have.groupby(["dataset", "scale"]).apply(one, include_groups=False).reset_index()
    joint = have.groupby("scale").apply(one, include_groups=False).reset_index().assign(dataset="all")
    out = pd.concat([per, joint], ignore_index=True)
    return out.astype({"cells": int, f"within_{K:g}se": int})


def _crossing(log_s: np.ndarray, curve: np.ndarray, target: float) -> float:
    """The scale where the piecewise-linear ``curve`` (over log scale) first crosses ``target``; NaN if never."""
    diff = curve - target
    for i in range(len(diff) - 1):
        if diff[i] == 0:
            return float(np.exp(log_s[i]))
        if diff[i] * diff[i + 1] < 0:
            t = diff[i] / (diff[i] - diff[i + 1])
            return float(np.exp(log_s[i] + t * (log_s[i + 1] - log_s[i])))
    return float(np.exp(log_s[-1])) if diff[-1] == 0 else math.nan


def matching_scale(stats_: pd.DataFrame, *, points: int = 2001) -> pd.DataFrame:
    """Per (dataset, rho): the scale at which our mean equals the published count, and the smallest and
    largest scale at which the published count is within K SE of the difference, both on the curves
    interpolated linearly in log scale between grid points (mean and SE alike; NaN where none)."""
    records = []
    for (name, rho), g in stats_[np.isfinite(stats_["published"])].groupby(["dataset", "rho"]):
        g = g.sort_values("scale")
        log_s, mean, sigma = np.log(g["scale"].to_numpy()), g["mean"].to_numpy(), g["sigma"].to_numpy()
        pub = float(g["published"].iloc[0])
        fine = np.linspace(log_s[0], log_s[-1], points)
        inside = np.abs(np.interp(fine, log_s, mean) - pub) <= K * np.interp(fine, log_s, sigma)
        rec = {"dataset": name, "rho": rho, "published": pub, "scale_match": _crossing(log_s, mean, pub),
               "below_grid": bool(np.all(mean > pub)), "above_grid": bool(np.all(mean < pub)),
               "range_low": math.nan, "range_high": math.nan, "range_at_grid_end": False}
        if inside.any():
            rec.update(range_low=float(np.exp(fine[inside][0])), range_high=float(np.exp(fine[inside][-1])),
                       range_at_grid_end=bool(inside[0] or inside[-1]))
        records.append(rec)
    return pd.DataFrame.from_records(records)


def committed_check(rows: pd.DataFrame, committed: pd.DataFrame) -> tuple[int, int]:
    """(cells at scale 1 whose count equals the committed cell of the same key, such cells compared)."""
    one = rows[(_scale_column(rows) == 1.0) & (rows["status"] == "ok")]
    both = one.merge(committed[["cell_key", "n_measured_offdiag", "mahalanobis"]], on="cell_key",
                     suffixes=("", "_committed"))
    same = (both["n_measured_offdiag"] == both["n_measured_offdiag_committed"]) & \
           np.isclose(both["mahalanobis"], both["mahalanobis_committed"], rtol=1e-9, atol=0)
    return int(same.sum()), len(both)


def report(stats_: pd.DataFrame, fits: pd.DataFrame, match: pd.DataFrame, check: tuple[int, int] | None,
           *, trials: int, seconds: float) -> str:
    lines = ["# Scale sweep: Table 3's counts against the data's scale", "",
             f"`python -m studies.scale_sweep`: PACE-GGM (`measurements` recipe, `paper` preprocessing, Newton) "
             f"at data_scale × the preprocessed data; {trials} trials per cell; mean off-diagonal entries ± SE; "
             f"z = (ours − published) ÷ SE of the difference (the publication's SE: our per-trial SD over its "
             f"{PUBLISHED_TRIALS} trials). {seconds:.0f} s of fitting (wall time summed over the cells).", ""]
    if check is not None:
        lines += [f"Scale 1 against the committed `measurements` cells of the same keys: {check[0]} of {check[1]} "
                  "identical (count and Mahalanobis error).", ""]
    for name, g in stats_.groupby("dataset"):
        lines += [f"## {name}", ""]
        g = g.assign(text=[f"{m:.1f} ± {s:.1f}" + (f" ({z:+.1f})" if np.isfinite(z) else "")
                           for m, s, z in zip(g["mean"], g["sem"], g["z"])])
        wide = g.pivot(index="scale", columns="rho", values="text")
        pub = g.drop_duplicates("rho").set_index("rho")["published"]
        wide.loc["published"] = [f"{pub[r]:g}" if np.isfinite(pub[r]) else "" for r in wide.columns]
        wide.columns = [f"ρ = {r:g}" for r in wide.columns]
        wide.index.name = "scale"
        lines += [markdown(wide), ""]
    lines += ["## Fit over the ρ's, per scale", "",
              f"χ² = Σ z² over the data set's cells; p from χ² with one degree of freedom per cell; "
              f"cells within {K:g} SE of the difference. `all`: both data sets.", ""]
    wide = fits.assign(text=[f"χ² {c:.1f}, p {p:.2g}, {w}/{n}" for c, p, w, n in
                             zip(fits["chi2"], fits["p"], fits[f"within_{K:g}se"], fits["cells"])])
    wide = wide.pivot(index="scale", columns="dataset", values="text")
    lines += [markdown(wide), ""]
    lines += ["## Scale that reproduces each published cell", "",
              f"`match`: our mean equals the published count; `range`: smallest to largest scale where the published "
              f"count is within {K:g} SE of the difference (both log-linear between grid scales; `…` at a grid end: "
              "it may extend beyond).", ""]
    m = match.copy()
    m["match"] = [f"{s:.2f}" if np.isfinite(s) else ("< grid" if lo else "> grid" if hi else "none")
                  for s, lo, hi in zip(m["scale_match"], m["below_grid"], m["above_grid"])]
    m["range"] = [f"{lo:.2f}–{hi:.2f}" + (" …" if end else "") if np.isfinite(lo) else "none"
                  for lo, hi, end in zip(m["range_low"], m["range_high"], m["range_at_grid_end"])]
    lines += [markdown(m.set_index(["dataset", "rho"])[["published", "match", "range"]], floatfmt="g"), ""]
    return "\n".join(lines)


def curves(rows: pd.DataFrame, summaries: pd.DataFrame | None = None) -> dict[str, pd.DataFrame]:
    """Per data set: our count against the effective budget ρ·s⁴ (mean, per-trial SD, trials), sorted.

    ``summaries`` adds cells known by their summary only (a ``scale_sweep.csv``: dataset, rho, scale,
    mean, sd, trials); a budget both give is taken from ``rows``.
    """
    ok = rows[rows["status"] == "ok"].assign(scale=lambda r: _scale_column(r))
    ok = ok.assign(rho_eff=ok["rho"].astype(float) * ok["scale"] ** 4).astype({"n_measured_offdiag": float})
    g = ok.groupby(["dataset", "rho_eff"])["n_measured_offdiag"].agg(mean="mean", sd="std", trials="count")
    if summaries is not None and len(summaries):
        more = summaries.assign(rho_eff=summaries["rho"] * summaries["scale"] ** 4).set_index(["dataset", "rho_eff"])
        more = more[["mean", "sd", "trials"]]
        g = pd.concat([g, more[~more.index.isin(g.index)]])
    return {name: c.reset_index("dataset", drop=True).sort_index() for name, c in g.groupby(level="dataset")}


def at(curve: pd.DataFrame, rho_eff: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mean, SD and trials at ``rho_eff`` (log-linear between the curve's points; NaN off it)."""
    x = np.log(curve.index.to_numpy(dtype=float))
    q = np.log(np.asarray(rho_eff, dtype=float))
    inside = (q >= x[0] - 1e-12) & (q <= x[-1] + 1e-12)
    out = [np.where(inside, np.interp(q, x, curve[c].to_numpy(dtype=float)), np.nan) for c in ("mean", "sd", "trials")]
    return out[0], out[1], out[2]


def cell_z(curve: pd.DataFrame, rho: np.ndarray, published: np.ndarray, f) -> np.ndarray:
    """The cells' z at factor(s) ``f`` on the normal scale (Student's t, 9 df, mapped through its CDF)."""
    mean, sd, n = at(curve, rho * f)
    sigma = sd * np.sqrt(1 / n + 1 / PUBLISHED_TRIALS)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(sigma > 0, (mean - published) / sigma,
                     np.where(mean == published, 0.0, np.inf * np.sign(mean - published)))
    t = np.where(np.isnan(mean), np.nan, t)  # off the curve: no value, not an infinite one
    # beyond 1e-300 in the t tail the normal quantile saturates: ±40 stands for "impossibly far"
    return np.where(np.isfinite(t), stats.norm.isf(stats.t.sf(t, PUBLISHED_TRIALS - 1)), np.sign(t) * 40.0)


def joint_fit(rows: pd.DataFrame, published: pd.DataFrame, *, summaries: pd.DataFrame | None = None,
              datasets=None, f_range=FIT_RANGE, points: int = FIT_GRID) -> dict:
    """No factor, one common factor, one per data set: χ², degrees of freedom, p and the fitted factors."""
    cv = curves(rows, summaries)
    pub = published[published["dataset"].isin(cv if datasets is None else set(cv) & set(datasets))]
    pub = pub.drop_duplicates(["dataset", "rho"])
    grid = np.exp(np.linspace(np.log(f_range[0]), np.log(f_range[1]), points))
    if not np.any(np.isclose(grid, 1.0)):
        grid = np.sort(np.r_[grid, 1.0])
    cells, left_out = {}, []
    for name, g in pub.groupby("dataset"):
        rho, value = g["rho"].to_numpy(dtype=float), g["offdiagonal_mean"].to_numpy(dtype=float)
        z = np.stack([cell_z(cv[name], rho, value, f) for f in grid])  # (grid, cells)
        keep = np.all(np.isfinite(z), axis=0)
        left_out += [(name, r) for r in rho[~keep]]
        cells[name] = (rho[keep], z[:, keep])
    per = {name: (z ** 2).sum(axis=1) for name, (_, z) in cells.items()}  # χ² along the grid, per data set
    total = sum(per.values())
    n = sum(z.shape[1] for _, z in cells.values())
    one = int(np.argmin(np.abs(grid - 1.0)))
    best = int(np.argmin(total))
    each = {name: int(np.argmin(c)) for name, c in per.items()}
    chi_each = float(sum(per[name][i] for name, i in each.items()))
    k = len(cells)
    hyp = [("no factor (f = 1)", float(total[one]), n, 0),
           ("one common factor", float(total[best]), n - 1, 1),
           (f"a factor per data set ({k})", chi_each, n - k, k)]
    table = pd.DataFrame([{"hypothesis": h, "fitted factors": p, "cells": n, "chi2": c, "df": df,
                           "p": float(stats.chi2.sf(c, df))} for h, c, df, p in hyp])
    lr = pd.DataFrame([{"test": "common factor against none", "chi2": hyp[0][1] - hyp[1][1], "df": 1},
                       {"test": "per data set against common", "chi2": hyp[1][1] - hyp[2][1], "df": k - 1}])
    lr["p"] = stats.chi2.sf(lr["chi2"], lr["df"])

    def interval(c, i):  # the factors within Δχ² = 3.84 of the minimum (95 %, one parameter)
        inside = grid[c <= c[i] + stats.chi2.isf(LEVEL, 1)]
        return float(inside[0]), float(inside[-1]), bool(inside[0] == grid[0] or inside[-1] == grid[-1])

    sets = []
    for name, (_, z) in cells.items():
        c, i = per[name], each[name]
        lo, hi, edge = interval(c, i)
        sets.append({"dataset": name, "cells": z.shape[1], "f": float(grid[i]), "s": float(grid[i] ** 0.25),
                     "f_low": lo, "f_high": hi, "at_range_end": edge, "chi2_own": float(c[i]),
                     "p_own": float(stats.chi2.sf(c[i], z.shape[1] - 1)) if z.shape[1] > 1 else np.nan,
                     "chi2_common": float(c[best]), "p_common": float(stats.chi2.sf(c[best], z.shape[1])),
                     "within_2se_common": int(np.sum(np.abs(z[best]) <= K)),
                     "chi2_none": float(c[one]), "p_none": float(stats.chi2.sf(c[one], z.shape[1]))})
    lo, hi, edge = interval(total, best)
    fits = table["p"] >= LEVEL
    needed = bool(lr["p"].iloc[1] < LEVEL)
    if fits.iloc[1] and not needed:
        verdict = "one common factor explains Table 3"
    elif fits.iloc[2] and needed:
        verdict = "a factor per data set explains Table 3, one common factor does not"
    elif needed:
        verdict = "no effective signal-to-noise factor explains Table 3: even one per data set leaves more than noise"
    else:
        verdict = "no effective signal-to-noise factor explains Table 3"
    return dict(table=table, lr=lr, per_dataset=pd.DataFrame(sets), common=(float(grid[best]), lo, hi, edge),
                left_out=left_out, verdict=verdict, cells=n)


def fit_report(fit: dict, *, extra_rhos, command: str, title: str | None = None) -> str:
    f, lo, hi, edge = fit["common"]
    head = [f"## {title}", ""] if title else [
        "# Table 3 against one effective signal-to-noise factor: the joint fit", "",
        f"`{command}`. Multiplying the data by s runs PACE-GGM at ρ·s⁴ (equivalently n·s² or the bound B/s), so the "
        "scale sweep measures one effective factor f = s⁴ on ρ. Our count at ρ·f is read off each data set's "
        "count-against-ρ curve: the committed `measurements` cells, the scale sweep's cells at ρ·s⁴, and cells at "
        f"ρ = {', '.join(f'{r:g}' for r in extra_rhos)} ({FIT_TRIALS} trials, the recipe's seeds), log-linear between "
        f"points. z per cell: (ours − published) ÷ SE of the difference (the publication's: our per-trial SD over its "
        f"{PUBLISHED_TRIALS} trials), put on the normal scale through Student's t with {PUBLISHED_TRIALS - 1} degrees "
        "of freedom; χ² = Σ z², one degree of freedom per cell less one per fitted factor; f searched over "
        f"{FIT_RANGE[0]:g}–{FIT_RANGE[1]:g} (s {FIT_RANGE[0] ** 0.25:.2f}–{FIT_RANGE[1] ** 0.25:.2f}).", "",
        f"**Criterion, stated before the fit**: a hypothesis fits when its χ² has p ≥ {LEVEL:g}; the per-data-set "
        f"factors are needed when the likelihood ratio against one common factor has p < {LEVEL:g}.", ""]
    lines = head + [
        f"**Verdict: {fit['verdict']}.** One common factor: f = {f:.3g} (s = {f ** 0.25:.3g}; 95 %: f "
        f"{lo:.3g}–{hi:.3g}{', at the search range' if edge else ''}).", "",
        markdown(fit["table"].set_index("hypothesis"), floatfmt=".4g"), "", "Likelihood ratios:", "",
        markdown(fit["lr"].set_index("test"), floatfmt=".4g"), "",
        "Per data set: its own factor (95 % by Δχ² = 3.84) and χ² over its cells at its own factor (cells − 1 df), "
        f"at the common factor and at none (cells df); cells within {K:g} SE at the common factor.", "",
        markdown(fit["per_dataset"].set_index("dataset"), floatfmt=".3g"), ""]
    if fit["left_out"]:
        lines += [f"Left out ({len(fit['left_out'])} cells, ρ·f off the curve over the search range): "
                  + ", ".join(f"{n} ρ = {r:g}" for n, r in fit["left_out"])
                  + f". They need cells at ρ·f beyond the curve: `{command}` with more ρ's in `FIT_RHOS`.", ""]
    return "\n".join(lines)


def fit_configs(datasets, *, runs_dir, extra=()) -> list[dict]:
    """The joint fit's extra cells: the measurements recipe's PACE-GGM cells at :data:`FIT_RHOS`, scale 1."""
    return configs([1.0], datasets, FIT_RHOS, FIT_TRIALS, runs_dir=runs_dir, extra=extra)


def run_fit(args, published: pd.DataFrame, out_dir: Path) -> int:
    committed = pd.read_parquet(args.committed)
    sweep = pd.read_csv(args.sweep) if Path(args.sweep).is_file() else None
    datasets = sorted(set(committed["dataset"]))
    cpu = os.times()
    extra, failed = run_grids(fit_configs(datasets, runs_dir=args.runs_dir, extra=args.set))
    rows = pd.concat([committed, extra], ignore_index=True).drop_duplicates("cell_key")
    fit = joint_fit(rows, published, summaries=sweep)  # the sweep's cells: its per-cell summaries
    text = fit_report(fit, extra_rhos=FIT_RHOS, command="python -m studies.scale_sweep --fit")
    # Table 3 prints d − 1 for five data sets (their target column likely dropped): the same fit without them
    d = committed.drop_duplicates("dataset").set_index("dataset")["d"]
    pub = published.drop_duplicates("dataset").set_index("dataset")["d_printed"]
    same_d = sorted(x for x in datasets if x in pub.index and int(pub[x]) == int(d[x]))
    sub = joint_fit(rows, published, summaries=sweep, datasets=same_d)
    text += "\n\n" + fit_report(sub, extra_rhos=FIT_RHOS, command="python -m studies.scale_sweep --fit",
                                 title=f"The same fit on the {len(same_d)} data sets whose printed d is ours "
                                       f"({', '.join(same_d)})")
    table = pd.concat([fit["table"].assign(part="hypotheses"), fit["lr"].rename(columns={"test": "hypothesis"})
                       .assign(part="likelihood ratio"), fit["per_dataset"].assign(part="per data set")],
                      ignore_index=True)
    return publish(out_dir, "scale_fit", table, text, cells=len(extra), failed=failed, cpu_start=cpu)


def main(argv: Sequence[str] | None = None) -> int:
    parser = study_parser("python -m studies.scale_sweep", __doc__, OUT_DIR)
    parser.add_argument("--scales", type=floats, default=list(SCALES))
    parser.add_argument("--datasets", type=names, default=list(DATASETS))
    parser.add_argument("--rhos", type=floats, default=list(RHOS))
    parser.add_argument("--trials", type=int, default=TRIALS)
    parser.add_argument("--published", default=None, help="a Table 3 CSV (default: the package's copy)")
    parser.add_argument("--committed", default="figures/results/measurements/results.parquet",
                        help="the committed cells scale 1 is checked against ('' to skip)")
    parser.add_argument("--fit", action="store_true",
                        help="the joint fit of one effective factor to all of Table 3 (runs FIT_RHOS' cells)")
    parser.add_argument("--sweep", default=str(OUT_DIR / "scale_sweep.csv"),
                        help="with --fit: the scale sweep's cells, read as their summaries")
    args = parser.parse_args(argv)
    if args.fit:
        if args.out_dir is None and args.set:
            parser.error("a fit with overrides needs --out-dir")
        from paceggm.bench.figures.published import published_table

        published = pd.read_csv(args.published) if args.published else published_table("measurements")
        return run_fit(args, published, Path(args.out_dir) if args.out_dir else OUT_DIR)
    grid = dict(scales=(args.scales, SCALES), datasets=(args.datasets, DATASETS), rhos=(args.rhos, RHOS),
                trials=(args.trials, TRIALS))
    reduced = [k for k, (value, default) in grid.items() if not is_default(value, default)]
    if args.out_dir is None and (reduced or args.set):
        parser.error(f"a grid other than the committed one ({', '.join(reduced) or 'overrides'}) needs --out-dir")
    out_dir = Path(args.out_dir) if args.out_dir else OUT_DIR
    if args.trials < 2:
        parser.error("--trials must be >= 2 (a standard error needs two trials)")

    if args.published:
        published = pd.read_csv(args.published)
    else:
        from paceggm.bench.figures.published import published_table

        published = published_table("measurements")
    cfgs = configs(args.scales, args.datasets, args.rhos, args.trials, runs_dir=args.runs_dir, extra=args.set)
    cpu = os.times()
    rows, failed = run_grids(cfgs)
    seconds = float(rows.loc[rows["status"] == "ok", "wall_time"].sum())
    stats_ = cell_stats(rows, published)
    fits = fit_by_scale(stats_)
    match = matching_scale(stats_)
    check = None
    if args.committed and Path(args.committed).is_file():
        check = committed_check(rows, pd.read_parquet(args.committed))
    text = report(stats_, fits, match, check, trials=args.trials, seconds=seconds)
    out = stats_.merge(match[["dataset", "rho", "scale_match", "range_low", "range_high"]], on=["dataset", "rho"],
                       how="left")
    return publish(out_dir, "scale_sweep", out, text, cells=len(rows), failed=failed, cpu_start=cpu)


if __name__ == "__main__":
    raise SystemExit(main())

"""Does the data's scale explain Table 3's counts on adult and communities_crime?

PACE-GGM's noise is calibrated to the declared bound, not to the data, so multiplying the
preprocessed data by ``s`` multiplies every measurement's signal-to-noise ratio by ``s²`` and moves
how many entries the selection finds worth measuring. The harness's ``data_scale`` does exactly that
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


def main(argv: Sequence[str] | None = None) -> int:
    parser = study_parser("python -m studies.scale_sweep", __doc__, OUT_DIR)
    parser.add_argument("--scales", type=floats, default=list(SCALES))
    parser.add_argument("--datasets", type=names, default=list(DATASETS))
    parser.add_argument("--rhos", type=floats, default=list(RHOS))
    parser.add_argument("--trials", type=int, default=TRIALS)
    parser.add_argument("--published", default=None, help="a Table 3 CSV (default: the package's copy)")
    parser.add_argument("--committed", default="figures/results/measurements/results.parquet",
                        help="the committed cells scale 1 is checked against ('' to skip)")
    args = parser.parse_args(argv)
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

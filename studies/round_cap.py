"""The round cap T and the annealing factor against Table 3's counts: a cause tested on a grid, not fitted.

No data scale can imitate T: it sets each round's share of the budget, ρ_round = (1 − α)ρ/T, and
with it how soon annealing (the budget grows 4× when a measurement moved the estimate by at most
``anneal_factor · σ``) and the final round come. The ``round_cap`` recipe runs the ``measurements``
recipe's PACE-GGM cells (Table 3's twelve data sets, seven ρ, ten trials, the same seeds) on the grid
T ∈ {d(d−1)/4, d(d−1)/2, d(d−1)} × anneal_factor ∈ {sqrt(2/π)/2, sqrt(2/π), 2 sqrt(2/π)}; the point
(d(d−1), sqrt(2/π)) is the published algorithm, the ``measurements`` cells themselves (same keys)::

    make study-round-cap            # the sweep (resumable), then this report
    python -m studies.round_cap     # the report of what the store holds (partial while it runs)

**Criterion, stated before the run** (the statistic of the data-scale fit, ``studies.scale_sweep``,
so that the two causes are judged alike). Per (data set, ρ) cell and grid point, our mean count of
off-diagonal entries ± SD over its trials against the published mean, whose SE is taken as our
per-trial SD over its 10 trials (it prints none): t = (ours − published) / (SD·sqrt(1/n + 1/10)),
put on the normal scale through Student's t with 9 degrees of freedom, z. Three hypotheses, each
with its fitted parameters counted (a grid point is two, T and the annealing factor):

* H0, the published algorithm: the default point, no parameter;
* H1, one (T, annealing factor) for every data set: the grid point of least Σz², 2 parameters;
* H2, one grid point per data set: 2 per data set.

χ² = Σz² over the cells that every grid point has finished with all their trials, degrees of
freedom the cells less the parameters. A hypothesis **fits** Table 3 when p ≥ 0.05. Verdict:
*T and annealing explain Table 3* when H1 fits; *only per data set* when H2 fits and H1 does not;
else *T and annealing do not explain Table 3*; beside it whether H1 moves the counts toward the
publication beyond noise (Δχ² of H0 against H1 above χ²₂'s 95 % point, 5.99). Printed too: each grid
point's cells within 2 SE (|z| ≤ 2) against the 95.4 % an exact replicate would score. A partial
store is judged on the cells it has, and says how many.

Writes ``round_cap.md`` and ``round_cap.csv`` (one row per data set, ρ and grid point) to
``--out-dir`` (default ``figures/results/investigations``).
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from studies._sweeps import markdown

RECIPE = "round_cap"
OUT_DIR = Path("figures") / "results" / "investigations"
PUBLISHED_TRIALS = 10
TRIALS = 10
K = 2.0
LEVEL = 0.05
GRID_POINTS = 9
DEFAULT_T = "d(d-1)"
DEFAULT_ANNEAL = math.sqrt(2.0 / math.pi)


def grid_rows(runs_dir: Path) -> pd.DataFrame:
    """The store's ok rows with their grid point: columns ``T`` (a string) and ``anneal`` (over sqrt(2/π))."""
    from paceggm.bench.collect import to_frame
    from paceggm.bench.store import RunStore

    scan = RunStore(Path(runs_dir) / RECIPE).scan()
    rows = to_frame(list(scan.rows.values()))
    rows = rows[rows["status"] == "ok"].copy()
    t = rows["p_max_rounds"] if "p_max_rounds" in rows else pd.Series(None, index=rows.index, dtype=object)
    a = rows["p_anneal_factor"] if "p_anneal_factor" in rows else pd.Series(np.nan, index=rows.index)
    rows["T"] = t.where(t.notna(), DEFAULT_T).astype(str)
    rows["anneal"] = np.round(a.fillna(DEFAULT_ANNEAL).astype(float) / DEFAULT_ANNEAL, 6)
    return rows


def cell_z(mean, sd, n, published) -> np.ndarray:
    """z of each cell on the normal scale: t with the publication's SE taken as our SD over its 10 trials,
    mapped through Student's t with 9 degrees of freedom (as ``studies.scale_sweep`` does)."""
    mean, sd, n, published = (np.asarray(v, dtype=float) for v in (mean, sd, n, published))
    sigma = sd * np.sqrt(1 / n + 1 / PUBLISHED_TRIALS)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(sigma > 0, (mean - published) / sigma,
                     np.where(mean == published, 0.0, np.inf * np.sign(mean - published)))
    return np.where(np.isfinite(t), stats.norm.isf(stats.t.sf(t, PUBLISHED_TRIALS - 1)), np.sign(t) * 40.0)


def cell_stats(rows: pd.DataFrame, published: pd.DataFrame) -> pd.DataFrame:
    """Per (data set, ρ, T, anneal): mean, SD, trials, the published mean and z."""
    g = rows.astype({"n_measured_offdiag": float}).groupby(["dataset", "rho", "T", "anneal"])["n_measured_offdiag"]
    out = g.agg(mean="mean", sd="std", trials="count").reset_index()
    pub = published.drop_duplicates(["dataset", "rho"])[["dataset", "rho", "offdiagonal_mean"]]
    out = out.merge(pub.rename(columns={"offdiagonal_mean": "published"}), on=["dataset", "rho"], how="inner")
    out["ratio"] = out["mean"] / out["published"]
    out["z"] = cell_z(out["mean"], out["sd"], out["trials"], out["published"])
    return out.sort_values(["dataset", "rho", "T", "anneal"]).reset_index(drop=True)


def complete(cells: pd.DataFrame, *, trials: int = TRIALS) -> pd.DataFrame:
    """The (data set, ρ) cells every grid point has finished with all ``trials``."""
    full = cells[cells["trials"] >= trials]
    n = full.groupby(["dataset", "rho"])["z"].transform("size")
    return full[n == GRID_POINTS]


def judge(cells: pd.DataFrame) -> dict:
    """The three hypotheses of the criterion on complete cells: χ², df, p; and the verdict."""
    z2 = cells.assign(z2=cells["z"] ** 2)
    per_point = z2.groupby(["T", "anneal"])["z2"].sum()
    n = int(z2.groupby(["dataset", "rho"]).ngroups)
    if not n:
        return dict(cells=0, verdict="no complete cell yet", table=pd.DataFrame(), points=pd.DataFrame(),
                    per_dataset=pd.DataFrame())
    default = (DEFAULT_T, 1.0)
    h0 = float(per_point.get(default, np.nan))
    best = per_point.idxmin()
    h1 = float(per_point[best])
    by_ds = z2.groupby(["dataset", "T", "anneal"])["z2"].sum()
    own = by_ds.groupby(level="dataset").idxmin()
    h2 = float(sum(by_ds[i] for i in own))
    k = int(len(own))
    hyp = [("H0 the published algorithm (T = d(d-1), sqrt(2/pi))", h0, 0),
           (f"H1 one grid point for all data sets (best: T = {best[0]}, anneal x{best[1]:g})", h1, 2),
           (f"H2 one grid point per data set ({k})", h2, 2 * k)]
    table = pd.DataFrame([{"hypothesis": h, "parameters": p, "cells": n, "chi2": c, "df": n - p,
                           "p": float(stats.chi2.sf(c, n - p)) if n > p else np.nan} for h, c, p in hyp])
    fits = table["p"] >= LEVEL
    toward = bool(h0 - h1 > stats.chi2.isf(LEVEL, 2))
    if fits.iloc[1]:
        verdict = "T and the annealing factor explain Table 3 (one grid point fits)"
    elif fits.iloc[2]:
        verdict = "only a grid point per data set fits Table 3; one for all does not"
    else:
        verdict = "T and the annealing factor do not explain Table 3 (no hypothesis fits)"
    verdict += ("; the best grid point moves the counts toward the publication beyond noise"
                if toward else "; no grid point moves the counts toward the publication beyond noise")
    within = cells.assign(w=np.abs(cells["z"]) <= K).groupby(["T", "anneal"]).agg(
        chi2=("z", lambda z: float(np.sum(z ** 2))), within_2se=("w", "sum"), median_ratio=("ratio", "median"))
    within["cells"] = n
    within["replicate_within_2se"] = round(n * (stats.norm.cdf(K) - stats.norm.cdf(-K)), 1)
    own_df = pd.DataFrame([{"dataset": ds, "T": t, "anneal": a, "chi2_own": float(by_ds[(ds, t, a)]),
                            "chi2_default": float(by_ds.get((ds, *default), np.nan)),
                            "cells": int(z2[z2["dataset"] == ds].groupby("rho").ngroups)}
                           for ds, (_, t, a) in own.items()])
    return dict(cells=n, verdict=verdict, table=table, points=within.reset_index(), per_dataset=own_df)


def committed_check(rows: pd.DataFrame, committed: pd.DataFrame) -> tuple[int, int]:
    """Of the default point's trials also in the committed ``measurements`` table (same keys): how many
    measured as many off-diagonal entries, and how many there are."""
    both = rows.merge(committed[["cell_key", "n_measured_offdiag"]], on="cell_key", suffixes=("", "_committed"))
    return int((both["n_measured_offdiag"] == both["n_measured_offdiag_committed"]).sum()), len(both)


def report(cells: pd.DataFrame, result: dict, *, done: int, total: int, check: tuple[int, int] | None = None) -> str:
    lines = ["# The round cap T and the annealing factor against Table 3", "",
             "Generated by `python -m studies.round_cap` (criterion in its docstring, stated before the run).", "",
             f"- **Store**: runs/{RECIPE}: {done} of {total} cells finished; judged on the {result['cells']} "
             f"(data set, ρ) cells that every grid point has with all {TRIALS} trials (of 84).",
             f"- **Verdict**: {result['verdict']}.", ""]
    if check is not None:
        lines[-1:-1] = [f"- **The published algorithm's point against the committed `measurements` cells** (same "
                        f"keys): the same count in {check[0]} of {check[1]} trials."]
    if result["cells"]:
        lines += [markdown(result["table"].set_index("hypothesis"), floatfmt=".4g"), "",
                  "Each grid point (anneal: the factor over sqrt(2/π)):", "",
                  markdown(result["points"].set_index(["T", "anneal"]), floatfmt=".4g"), "",
                  "Each data set's best grid point (H2):", "",
                  markdown(result["per_dataset"].set_index("dataset"), floatfmt=".4g"), ""]
    wide = cells.pivot_table(index=["dataset", "rho", "published"], columns=["T", "anneal"], values="mean")
    wide.columns = [f"{t}, x{a:g}" for t, a in wide.columns]
    wide.index = wide.index.set_levels([f"{r:g}" for r in wide.index.levels[1]], level="rho")
    lines += ["Mean off-diagonal entries per trial (columns: T, anneal over sqrt(2/π)):", "",
              markdown(wide, floatfmt=".1f"), ""]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m studies.round_cap", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs-dir", default="runs")
    parser.add_argument("--out-dir", default=str(OUT_DIR))
    parser.add_argument("--committed", default="figures/results/measurements/results.parquet",
                        help="the committed cells the default point is checked against ('' to skip)")
    args = parser.parse_args(argv)
    from paceggm.bench.figures.published import published_table

    rows = grid_rows(Path(args.runs_dir))
    cells = cell_stats(rows, published_table("measurements"))
    result = judge(complete(cells))
    check = committed_check(rows, pd.read_parquet(args.committed)) if args.committed else None
    text = report(cells, result, done=len(rows), total=84 * 9 * TRIALS, check=check)
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "round_cap.md").write_text(text, encoding="utf-8")
    cells.to_csv(out / "round_cap.csv", index=False)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Tables 5 and 6 on fresh trials: is the publication's best (α, β) pair worse than the one we pick?

A held-out design. The ``hyperparameters`` recipe runs every (α, β) in {0.1, 0.3, 0.5}² with 5
trials, as published. Per (data set, ρ) and metric, our winner is picked on those committed trials
0–4 (smallest mean error; ties: smaller α, then β) and judged against the publication's winner
(Table 5 Frobenius, Table 6 Mahalanobis) on *fresh trials only*: trials 5 … 4 + ``--fresh`` of all
nine pairs, whose seeds derive from their trial numbers and so differ from the committed ones
(checked). The paired difference ``error(published pair) − error(our pair)`` over the fresh trials
(the nine pairs of a trial share one seed) decides, at ``K`` standard errors: *published pair loses*
beyond +K, *published pair wins* below −K, else *within noise*; one look, no winner's curse::

    python -m studies.best_pairs                          # 20 fresh trials (make study-best-pairs)
    python -m studies.best_pairs --fresh 4 --datasets adult --out-dir /tmp/x
    python -m studies.best_pairs --trials figures/results/investigations/best_pairs_trials.csv

The fresh trials run through the harness into the study's store (``--runs-dir``; an interrupted run
resumes); ``--trials`` reads them from an earlier run's ``best_pairs_trials.csv`` instead.

**Yardsticks** (whole trials resampled, fixed seeds; :mod:`paceggm.bench.figures.replicate`):

* the protocol's false-positive rate when all nine pairs of every cell are truly equal: each cell's
  trials (committed and fresh) divided by their pair's mean, so every pair has mean 1 and keeps its
  relative noise and its trial-to-trial correlation with the others; 5 resampled trials pick the
  winner, ``--fresh`` others judge it. Beside it, the same null run through the earlier protocol
  (winner picked and tested on the same trials, looks at 5, 15 and 25 trials);
* how often two independent 5-trial runs agree on a cell's exact winner, counted on disjoint blocks
  of 5 of the 5 + ``--fresh`` trials (every pair of blocks), beside the figures stage's bootstrap
  replicate of Tables 5 and 6.

Writes ``best_pairs.md``, ``best_pairs.csv`` (one row per cell and metric) and
``best_pairs_trials.csv`` (the fresh trials' errors) to ``--out-dir`` (default
``figures/results/investigations``; a grid other than the default needs an explicit ``--out-dir``).
"""

from __future__ import annotations

import itertools
import math
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from studies._sweeps import harness_config, markdown, names, publish, run_grids, study_parser

FRESH = 20
COMMITTED = Path("figures") / "results" / "hyperparameters" / "results.parquet"
OUT_DIR = Path("figures") / "results" / "investigations"
K = 2.0
SELECT = 5  # the recipe's (and the publication's) trials per cell: the winner is picked on these
LOOKS = (5, 15, 25)  # the earlier protocol's stages
DRAWS = 2000
METRICS = {"frobenius": "best_frobenius", "mahalanobis": "best_mahalanobis"}  # metric -> published table
TRIAL_COLUMNS = ["dataset", "rho", "trial", "seed", "p_alpha", "p_beta", "frobenius", "mahalanobis", "wall_time"]


def wide(rows: pd.DataFrame, metric: str) -> dict[tuple[str, float], pd.DataFrame]:
    """Per (data set, ρ): trials × (α, β) of ``metric``, complete trials only, pairs sorted by α then β."""
    ok = rows[(rows["status"] == "ok") & (rows["method"] == "paceggm")] if "status" in rows else rows
    return {(name, float(rho)): g.pivot_table(index="trial", columns=["p_alpha", "p_beta"], values=metric)
            .dropna().sort_index(axis=1) for (name, rho), g in ok.groupby(["dataset", "rho"])}


def winner(table: pd.DataFrame) -> tuple[float, float]:
    """The pair of smallest mean (pairs sorted by α then β: the first minimum breaks ties as documented)."""
    return table.mean().idxmin()


def paired(fresh: pd.DataFrame, theirs, ours) -> tuple[float, float]:
    """``(cost, z)`` of the published pair against ours on ``fresh`` trials: mean ratio, paired difference in SE."""
    diff = fresh[theirs] - fresh[ours]
    sem = float(diff.std(ddof=1) / math.sqrt(len(diff)))
    z = float(diff.mean() / sem) if sem > 0 else (0.0 if diff.mean() == 0 else math.copysign(math.inf, diff.mean()))
    return float(fresh[theirs].mean() / fresh[ours].mean()), z


def status_of(z: float) -> str:
    return "published pair loses" if z > K else "published pair wins" if z < -K else "within noise"


def decide(committed: pd.DataFrame, fresh: pd.DataFrame, published: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Per (data set, ρ): our winner on the committed trials, the published one, both judged on the fresh."""
    chosen, judged = wide(committed, metric), wide(fresh, metric)
    pub = published.set_index(["dataset", "rho"])
    records = []
    for (name, rho), table in chosen.items():
        if (name, rho) not in pub.index or (name, rho) not in judged:
            continue
        ours = winner(table)
        theirs = (float(pub.loc[(name, rho), "best_alpha"]), float(pub.loc[(name, rho), "best_beta"]))
        rec = {"dataset": name, "rho": rho, "metric": metric, "picked_on": len(table), "judged_on": len(judged[name, rho]),
               "ours": f"({ours[0]:g}, {ours[1]:g})", "published": f"({theirs[0]:g}, {theirs[1]:g})",
               "winner_on_fresh": "({:g}, {:g})".format(*winner(judged[name, rho]))}
        if theirs == ours:
            rec.update(cost=1.0, z=0.0, status="same pair")
        else:
            cost, z = paired(judged[name, rho], theirs, ours)
            rec.update(cost=cost, z=z, status=status_of(z))
        records.append(rec)
    return pd.DataFrame.from_records(records)


def null_pools(cells: dict) -> list[np.ndarray]:
    """Each cell's trials with every pair divided by its mean (all pairs equal), as resampling pools."""
    from paceggm.bench.figures.replicate import trial_pool

    return [trial_pool(t.to_numpy(dtype=float) / t.to_numpy(dtype=float).mean(axis=0)) for t in cells.values()]


def _z(diff: np.ndarray) -> np.ndarray:
    """The paired differences' mean in SE along the last axis (0 where they are all equal)."""
    sem = diff.std(axis=-1, ddof=1) / np.sqrt(diff.shape[-1])
    mean = diff.mean(axis=-1)
    return np.where(sem > 0, mean / np.where(sem > 0, sem, 1), 0.0)


def false_positives(pools: list[np.ndarray], published: list[int], *, fresh: int, seed_key: str,
                    draws: int = DRAWS) -> dict[str, np.ndarray]:
    """Cells called "ours better" per draw under the null, by the held-out and by the earlier protocol.

    ``pools`` are the null pools (trials × pairs, pairs sorted by α then β), ``published`` the index
    of each cell's published pair. Held out: the winner is picked on ``SELECT`` resampled trials and
    judged on ``fresh`` others. Earlier protocol: picked and tested on the same resampled trials,
    looking again at each of :data:`LOOKS` while the difference is within ``K`` SE.
    """
    from paceggm.bench.figures.replicate import keyed_rng

    rng = keyed_rng(seed_key)
    held, same = np.zeros(draws), np.zeros(draws)
    rows = np.arange(draws)
    for pool, b in zip(pools, published):
        x = pool[rng.integers(0, len(pool), (draws, SELECT + fresh))]
        a = np.argmin(x[:, :SELECT].mean(axis=1), axis=1)
        judge = x[:, SELECT:]
        z = _z(judge[rows, :, b] - judge[rows, :, a])
        held += (a != b) & (z > K)
        y = pool[rng.integers(0, len(pool), (draws, max(LOOKS)))]
        open_ = np.ones(draws, dtype=bool)
        for look in LOOKS:
            m = y[:, :look].mean(axis=1)
            a = np.argmin(m, axis=1)
            zz = _z(y[rows, :look, b] - y[rows, :look, a])
            called = open_ & (a != b) & (zz > K)
            same += called
            open_ &= (a != b) & ~called  # a cell stops when its pair is ours or the difference is called
    return {"held_out": held, "same_trials": same}


def block_agreement(trials: dict, block: int = SELECT) -> tuple[float, int]:
    """Mean count of cells whose exact winner two disjoint ``block``-trial blocks agree on, over every pair of blocks."""
    per_cell = []
    for t in trials.values():
        n = len(t) // block
        winners = [winner(t.iloc[i * block:(i + 1) * block]) for i in range(n)]
        per_cell.append([wa == wb for wa, wb in itertools.combinations(winners, 2)])
    pairs = min(len(p) for p in per_cell) if per_cell else 0
    return (float(np.sum([np.mean(p[:pairs]) for p in per_cell])) if pairs else math.nan), pairs


def summary(decisions: pd.DataFrame) -> pd.DataFrame:
    counts = decisions.groupby(["metric", "status"]).size().unstack(fill_value=0)
    return counts.reindex(columns=["same pair", "published pair loses", "within noise", "published pair wins"],
                          fill_value=0)


def yardsticks(committed: pd.DataFrame, fresh: pd.DataFrame, published: dict, *, n_fresh: int) -> pd.DataFrame:
    """Per metric: the null's false positives (both protocols) and the disjoint blocks' agreement."""
    from paceggm.bench.figures.published import best_pair_comparison
    from paceggm.bench.figures.results import select_variants

    out = []
    both = pd.concat([committed, fresh], ignore_index=True)
    for metric in METRICS:
        cells = wide(both, metric)
        pub = published[metric].set_index(["dataset", "rho"])
        keep = {k: t for k, t in cells.items() if k in pub.index}
        index = [list(t.columns).index((float(pub.loc[k, "best_alpha"]), float(pub.loc[k, "best_beta"])))
                 for k, t in keep.items()]
        fp = false_positives(null_pools(keep), index, fresh=n_fresh, seed_key=f"best_pairs/null/{metric}")
        agree, block_pairs = block_agreement({k: t.sort_index() for k, t in keep.items()})
        rows = select_variants(committed[committed["method"] == "paceggm"], methods={"paceggm"},
                               params={"alpha", "beta"})
        boot = [{e.name: e for e in best_pair_comparison(rows, metric, fresh=f)[1].replicate.counts}[
            "exact winner matches"] for f in (None, fresh)]
        out.append({"metric": metric, "cells": len(keep),
                    "null: published pair loses, held out": float(fp["held_out"].mean()),
                    "95 % range, held out": "{:g}–{:g}".format(*np.quantile(fp["held_out"], [0.025, 0.975])),
                    "null: ours better, same trials, 3 looks": float(fp["same_trials"].mean()),
                    "95 % range, same trials": "{:g}–{:g}".format(*np.quantile(fp["same_trials"], [0.025, 0.975])),
                    "exact winner agreement, disjoint 5-trial blocks": agree, "block pairs": block_pairs,
                    "bootstrap replicate, committed trials": boot[0].mean,
                    "bootstrap replicate, committed and fresh": boot[1].mean})
    return pd.DataFrame(out)


def report(decisions: pd.DataFrame, sticks: pd.DataFrame, cost: dict) -> str:
    lines = ["# Best (α, β) pairs on fresh trials: Tables 5 and 6, held out", "",
             f"`python -m studies.best_pairs`: per cell, our winner is picked on the `hyperparameters` recipe's "
             f"committed trials 0–4 and set against the publication's on fresh trials {cost['fresh']} only (all "
             f"nine pairs; seeds from the trial numbers, none shared with the committed trials), by the paired "
             f"difference error(published) − error(ours) in SE: beyond +{K:g} the published pair loses, below "
             f"−{K:g} it wins. Fresh trials: {cost['cells']} cells, {cost['where']}.", "",
             "## Counts", "", markdown(summary(decisions)), "",
             "Median cost of the published pair on the fresh trials (its mean error ÷ our pick's), over the cells "
             "where the two differ, and where it loses: "
             + "; ".join(f"{m} {np.median(g.loc[g['status'] != 'same pair', 'cost']):.4g} and "
                         f"{np.median(g.loc[g['status'] == 'published pair loses', 'cost']):.3g}"
                         for m, g in decisions.groupby("metric")) + ".", "",
             "## Yardsticks", "",
             f"Null: every pair of a cell truly equal (each pair's trials divided by its mean; whole trials "
             f"resampled, {DRAWS} draws, fixed seeds). Cells called beyond +{K:g} SE by this protocol (held out) "
             f"and by the earlier one (winner picked and tested on the same trials, looks at "
             f"{', '.join(map(str, LOOKS))}). Agreement: mean count of cells whose exact winner two disjoint "
             f"5-trial blocks of the committed and fresh trials agree on, over every pair of blocks, beside the "
             f"figures stage's whole-trial bootstrap replicate (5 trials a side) drawn from the committed trials alone "
             f"and from the committed and fresh ones.", "",
             markdown(sticks.set_index("metric"), floatfmt=".3g"), ""]
    for metric, table in (("frobenius", "Table 5 (Frobenius)"), ("mahalanobis", "Table 6 (Mahalanobis)")):
        d = decisions[decisions["metric"] == metric].copy()
        d["z"] = [f"{z:.1f}" if np.isfinite(z) else "" for z in d["z"]]
        lines += [f"## {table}", "", markdown(d.set_index(["dataset", "rho"])[
            ["picked_on", "judged_on", "ours", "published", "winner_on_fresh", "cost", "z", "status"]],
            floatfmt=".3g"), ""]
    return "\n".join(lines)


def fresh_configs(datasets: Sequence[str], first: int, last: int, *, runs_dir, jobs: int, extra=()) -> list[dict]:
    """Trials ``first..last-1`` of every (α, β) pair on every ρ, one config per data set."""
    return [harness_config([
        "experiment=hyperparameters", "method=[paceggm]", "name=best_pairs", "progress=false", f"backend.n_jobs={jobs}",
        f"runs_dir={runs_dir}", f"datasets=[{name}]", f"trials=[{','.join(str(t) for t in range(first, last))}]",
        *extra]) for name in sorted(datasets)]


def check_seeds(committed: pd.DataFrame, fresh: pd.DataFrame) -> None:
    shared = set(committed["seed"]) & set(fresh["seed"])
    if shared:
        raise SystemExit(f"{len(shared)} fresh trials share a seed with the committed ones: not fresh")


def main(argv: Sequence[str] | None = None) -> int:
    parser = study_parser("python -m studies.best_pairs", __doc__, OUT_DIR)
    parser.add_argument("--fresh", type=int, default=FRESH, help="fresh trials per cell (numbered from 5)")
    parser.add_argument("--datasets", type=names, default=None)
    parser.add_argument("--committed", default=str(COMMITTED), help="the recipe's committed results (trials 0-4)")
    parser.add_argument("--trials", default=None, help="read the fresh trials from this best_pairs_trials.csv")
    parser.add_argument("--jobs", type=int, default=1, help="worker processes for the fresh trials")
    args = parser.parse_args(argv)
    if args.out_dir is None and (args.fresh != FRESH or args.datasets or args.set or args.committed != str(COMMITTED)):
        parser.error("a grid other than the committed one needs --out-dir")
    out_dir = Path(args.out_dir) if args.out_dir else OUT_DIR
    from paceggm.bench.figures.published import published_table

    published = {m: published_table(t) for m, t in METRICS.items()}
    committed = pd.read_parquet(args.committed)
    committed = committed[committed["method"] == "paceggm"]
    if args.datasets:
        committed = committed[committed["dataset"].isin(args.datasets)]
    first = int(committed["trial"].max()) + 1
    cpu, failed = os.times(), 0
    if args.trials:
        fresh = pd.read_csv(args.trials).assign(status="ok", method="paceggm")
        fresh = fresh[fresh["dataset"].isin(set(committed["dataset"]))
                      & fresh["trial"].between(first, first + args.fresh - 1)]
        n_cells = len(fresh)
        where = (f"read from `{Path(args.trials).name}`, {fresh['wall_time'].sum():.0f} s of fitting when they ran "
                 "(wall time summed over the cells)")
    else:
        fresh, failed = run_grids(fresh_configs(sorted(set(committed["dataset"])), first, first + args.fresh,
                                                runs_dir=args.runs_dir, jobs=args.jobs, extra=args.set))
        seconds = float(fresh.loc[fresh["status"] == "ok", "wall_time"].sum())
        n_cells, where = len(fresh), f"{seconds:.0f} s of fitting (wall time summed over the cells)"
    check_seeds(committed, fresh)
    decisions = pd.concat([decide(committed, fresh, published[m], m) for m in METRICS], ignore_index=True)
    sticks = yardsticks(committed, fresh, published, n_fresh=args.fresh)
    span = f"{first}–{first + args.fresh - 1}"
    text = report(decisions, sticks, dict(fresh=span, cells=n_cells, where=where))
    ok = fresh[fresh["status"] == "ok"] if "status" in fresh else fresh
    trials = ok[TRIAL_COLUMNS].sort_values(["dataset", "rho", "trial", "p_alpha", "p_beta"])
    out_dir.mkdir(parents=True, exist_ok=True)
    trials.to_csv(out_dir / "best_pairs_trials.csv", index=False)  # shortest round-trip repr: the same floats back
    return publish(out_dir, "best_pairs", decisions, text, cells=0 if args.trials else n_cells, failed=failed,
                   cpu_start=cpu)


if __name__ == "__main__":
    raise SystemExit(main())

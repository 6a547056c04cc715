"""PGD's stopping rule: time against distance to its limit and against the published errors.

Run ``python -m studies.stopping_rule_pgd`` (``make bench-stopping``); it
writes ``figures/tables/stopping_rule_pgd.md``. Single-threaded BLAS, every
timing of a block measured in the same process, back to back.

PGD (from 0 or from 1) converges to the minimiser its start selects; its step
tolerance only says where on that path it stops. Per candidate tolerance
(:data:`CANDIDATES`), two measurements, as for IPM-Cholesky in
:mod:`.stopping_rule` (whose helpers this module uses):

* *blocks*: the components re-solved in the second half of a Newton run on
  communities_crime (ρ = 10, seed 0), solved from 0 and from 1: seconds,
  iterations, and the relative Frobenius distance to the limit of the same path
  (the iterate at ``tol = 1e-8``);
* *runs*: whole PACE-GGM fits with ``pgd0`` and ``pgd1``, seeded as the reference
  ``solver`` results' trials, each paired with that table's PGD row (the
  ``tight`` setting) and Newton row of the same seed. A candidate is within trial
  noise when the geometric means of its paired error ratios lie within
  ``exp(±2·sd(log e)/√n)`` of the reference PGD rows' own errors over the same
  trials (as for IPM-Cholesky, with PGD's tight limit in Newton's place).

It also writes ``figures/tables/stopping_rule_pgd_reproduction.md``: every PGD
cell of the committed reproduction's ``solver`` table (the library default)
paired with the reference row of the same key and seed, with the same test —
no fit, only the two tables (``--reproduction-only`` writes just this one).

``--quick`` replays a small synthetic run and skips the whole runs (for the tests).
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from paceggm.reconstruction.pgd import DEFAULTS, solve_pgd
from paceggm.reconstruction.problem import Problem
from studies._common import rel_fro, timed
from studies.reference_solvers import PGD_LIMIT_TOL
from studies.stopping_rule import (
    bench_arguments,
    bench_blocks,
    log_noise,
    measure_runs,
    noise_band,
    noise_cells,
    ratio_cell,
    table_head,
    within_noise,
)

OUT = Path("figures/tables/stopping_rule_pgd.md")
OUT_REPRODUCTION = Path("figures/tables/stopping_rule_pgd_reproduction.md")
#: The committed reproduction's ``solver`` table: its PGD cells ran at the library default.
REPRODUCTION = Path("figures/results/solver/results.parquet")
SOLVERS = ("pgd0", "pgd1")
METRICS = ("mahalanobis", "frobenius")

#: Candidate step tolerances, from the ``tight`` preset (the reference results'
#: setting) to coarser stops on the same iterate path.
CANDIDATES = {
    "tight": dict(preset="tight"),
    "1e-5": dict(tol=1e-5),
    "2e-5": dict(tol=2e-5),
    "3e-5": dict(tol=3e-5),
    "1e-4": dict(tol=1e-4),
    "3e-4": dict(tol=3e-4),
    "1e-3": dict(tol=1e-3),
}


def measure_blocks(problems: list[Problem], log) -> dict[tuple[int, str], dict]:
    """Per start (0, 1) and candidate: total seconds and iterations, worst distance to the path's limit."""
    out = {(init, name): dict(seconds=0.0, iters=0, dist=0.0, capped=0, solves=0)
           for init in (0, 1) for name in CANDIDATES}
    for p in problems:
        for init in (0, 1):
            limit = solve_pgd(p, init_value=float(init), tol=PGD_LIMIT_TOL, maxiter=400000).W
            for name, options in CANDIDATES.items():
                sol, t = timed(lambda p=p, init=init, options=options: solve_pgd(p, init_value=float(init),
                                                                                   **options))
                row = out[(init, name)]
                row["seconds"] += t
                row["iters"] += sol.n_iter
                row["dist"] = max(row["dist"], rel_fro(sol.W, limit))
                row["capped"] += not sol.converged
                row["solves"] += 1
        log(f"  d={p.d}: " + ", ".join(f"pgd{i} {k} {v['seconds']:.1f}s" for (i, k), v in out.items()))
    return out


def trial_noise(results: Path, dataset: str, rho: float, trials: int) -> dict[str, dict[str, float]]:
    """Per PGD variant, the trial noise of a geometric mean over the reference (tight) rows of ``trials`` trials."""
    return {solver: noise_band(results, dataset, rho, trials, solver=solver) for solver in SOLVERS}


def write_table(blocks: dict, runs: dict, noise: dict, path: Path, *, source: str, rho: float, n_rounds: int,
                n_blocks: int, elapsed: float) -> None:
    lines = table_head("PGD's stopping rule: time, distance to its limit, published errors",
                       "studies.stopping_rule_pgd", elapsed,
                       f" The library's default: tol = {DEFAULTS['tol']:g}, maxiter = {DEFAULTS['maxiter']:,}.",
                       "Candidates: PGD stops when a step moves W by less than `tol` of ‖W‖_F (at most 20,000 "
                       "iterations).", CANDIDATES, source=source, rho=rho, n_rounds=n_rounds, n_blocks=n_blocks)
    lines += [
        f"`dist`: worst ‖W − W_limit‖_F / ‖W_limit‖_F, W_limit the iterate of the same path at tol = "
        f"{PGD_LIMIT_TOL:g}; `speed-up`: tight's seconds / the candidate's, same process.",
        "",
        "| start | candidate | seconds | speed-up | iterations | capped solves | dist |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for (init, name), r in blocks.items():
        tight = blocks[(init, "tight")]["seconds"]
        lines.append(f"| {init} | {name} | {r['seconds']:.2f} | {tight / r['seconds']:.1f} | {r['iters']:,} | "
                     f"{r['capped']}/{r['solves']} | {r['dist']:.1e} |")
    if runs:
        lines += [
            "",
            "## Whole runs, paired by seed with the reference results (the `solver` rows of run 3, PGD at `tight`)",
            "",
            "Error ratios of the same seed, geometric mean [min, max] over trials: to the reference PGD row "
            "(`tight`) and to Newton (the exact completion); `tight / Newton` = the reference PGD row's own ratio.",
            "",
            f"`noise`: {NOISE_NOTE}",
            "",
            "| data set | ρ | solver | candidate | trials | s / trial | Mahalanobis / tight | Frobenius / tight "
            "| noise (Mahalanobis, Frobenius) | within noise | Mahalanobis / Newton | Frobenius / Newton "
            "| tight: Mahalanobis / Newton |",
            "|---|---:|---|---|---:|---:|---:|---:|---:|---|---:|---:|---:|",
        ]
        for (dataset, r, solver), by_name in runs.items():
            band = noise[(dataset, r)][solver]
            for k, v in by_name.items():
                inside = within_noise({m: v[f"vs_tight_{m}"][0] for m in METRICS}, band)
                lines.append(f"| {dataset} | {r:g} | {solver} | {k} | {v['trials']} | {v['seconds']:.1f} | "
                             f"{ratio_cell(v['vs_tight_mahalanobis'])} | {ratio_cell(v['vs_tight_frobenius'])} | "
                             f"{noise_cells(band, inside)} | "
                             f"{ratio_cell(v['mahalanobis'])} | {ratio_cell(v['frobenius'])} | "
                             f"{ratio_cell(v['tight_mahalanobis'])} |")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")


NOISE_NOTE = ("the trial noise of a geometric mean, exp(2·sd(log error)/√n) of the reference PGD rows' own "
              "errors over the same trials; `within` when both geometric means of the paired ratios lie inside "
              "[1/noise, noise].")


def paired_reproduction(reference: Path, results: Path) -> list[dict]:
    """Every PGD cell of ``results`` paired with the ``reference`` row of the same key and seed.

    Per data set, ρ and variant: the trials paired, the mean seconds per trial of
    both, the paired error ratios (geometric mean, min, max) and the trial noise of
    the reference rows' own errors.
    """
    import pandas as pd

    keys = ["dataset", "rho", "trial", "p_solver", "seed"]
    columns = keys + list(METRICS) + ["wall_time"]

    def pgd_rows(path: Path) -> pd.DataFrame:
        df = pd.read_parquet(path)
        return df.loc[(df["status"] == "ok") & df["p_solver"].isin(SOLVERS), columns]

    pairs = pgd_rows(reference).merge(pgd_rows(results), on=keys, suffixes=("_ref", "_new"))
    out = []
    for (dataset, rho, solver), g in pairs.groupby(["dataset", "rho", "p_solver"], sort=True):
        ratio = {m: (g[f"{m}_new"] / g[f"{m}_ref"]).to_numpy() for m in METRICS}
        out.append(dict(dataset=dataset, rho=float(rho), solver=solver, trials=len(g),
                        seconds_ref=float(g["wall_time_ref"].mean()), seconds_new=float(g["wall_time_new"].mean()),
                        **{m: (float(np.exp(np.mean(np.log(r)))), float(r.min()), float(r.max()))
                           for m, r in ratio.items()},
                        band={m: log_noise(g[f"{m}_ref"]) for m in METRICS}))
    return out


def write_reproduction_table(pairs: list[dict], path: Path, *, reference: Path, results: Path) -> None:
    inside = [within_noise({m: r[m][0] for m in METRICS}, r["band"]) for r in pairs]
    core = {k: sum(r[k] * r["trials"] for r in pairs) for k in ("seconds_ref", "seconds_new")}
    lines = [
        "# PGD's default in the reproduction, paired with the tight reference",
        "",
        f"Generated by `python -m studies.stopping_rule_pgd --reproduction-only` (`make bench-stopping`) from "
        f"`{results}` (the reproduction's `solver` cells, PGD at the library default of the commit that ran them; "
        f"today's: tol = {DEFAULTS['tol']:g}) and "
        f"`{reference}` (the same cells at `preset=\"tight\"`); do not edit by hand. No fit is run: each PGD cell "
        "is paired with the reference row of the same key and seed.",
        "",
        f"Within trial noise in {sum(inside)} of {len(pairs)} (data set, ρ, variant) groups. PGD's cells cost "
        f"{core['seconds_new']:,.0f} core-seconds here and {core['seconds_ref']:,.0f} in the reference; the two "
        "compare only where both ran on one machine (the reference is not rerun here).",
        "",
        f"Ratios: this cell's error over the reference row's, geometric mean [min, max] over trials. `noise`: "
        f"{NOISE_NOTE}",
        "",
        "| data set | ρ | solver | trials | s / trial (reference) | s / trial | Mahalanobis / tight "
        "| Frobenius / tight | noise (Mahalanobis, Frobenius) | within noise |",
        "|---|---:|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r, ok in zip(pairs, inside):
        lines.append(f"| {r['dataset']} | {r['rho']:g} | {r['solver']} | {r['trials']} | {r['seconds_ref']:.2f} | "
                     f"{r['seconds_new']:.2f} | {ratio_cell(r['mahalanobis'])} | {ratio_cell(r['frobenius'])} | "
                     f"{noise_cells(r['band'], ok)} |")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")


def _own_arguments(ap) -> None:
    ap.add_argument("--reproduction", type=Path, default=REPRODUCTION,
                    help="a reproduction's solver results table, paired with --results cell by cell")
    ap.add_argument("--reproduction-out", type=Path, default=OUT_REPRODUCTION)
    ap.add_argument("--reproduction-only", action="store_true",
                    help="write only the pairing of --reproduction with --results (no fit)")


def main(argv=None) -> None:
    from threadpoolctl import threadpool_limits

    args = bench_arguments(
        argv, description=__doc__.split("\n")[0], out=OUT,
        runs=["spambase:10:5:tight,3e-4,1e-3", "communities_crime:2:8:3e-4,1e-3", "communities_crime:10:5:3e-4,1e-3",
              "life_expectancy:10:10:tight,1e-5,2e-5,3e-5,1e-4,3e-4", "life_expectancy:2:10:1e-5,2e-5,3e-5,3e-4",
              "ibm:10:10:1e-5,3e-5,3e-4"],
        runs_help="data set:ρ:trials:candidates of whole runs, for pgd0 and pgd1", extra=_own_arguments)
    log = lambda s: print(s, flush=True)  # noqa: E731
    if args.reproduction_only or (not args.quick and args.reproduction.is_file()):
        if not args.reproduction.is_file():
            raise SystemExit(f"no reproduction results at {args.reproduction}")
        write_reproduction_table(paired_reproduction(args.results, args.reproduction), args.reproduction_out,
                                 reference=args.results, results=args.reproduction)
        log(f"wrote {args.reproduction_out}")
    if args.reproduction_only:
        return
    t0 = time.perf_counter()
    with threadpool_limits(limits=1):
        problems, n_rounds, source = bench_blocks(args, log)
        blocks = measure_blocks(problems, log)
        runs, noise = {}, {}
        if not args.quick:
            for spec in args.runs:
                dataset, rho, trials, names = spec.split(":")
                noise[(dataset, float(rho))] = trial_noise(args.results, dataset, float(rho), int(trials))
                for solver in SOLVERS:
                    runs[(dataset, float(rho), solver)] = measure_runs(
                        dataset, float(rho), int(trials), names.split(","), args.results, log,
                        solver=solver, candidates=CANDIDATES)
    write_table(blocks, runs, noise, args.out, source=source, rho=args.rho, n_rounds=n_rounds,
                n_blocks=len(problems), elapsed=time.perf_counter() - t0)
    log(f"wrote {args.out}")


if __name__ == "__main__":
    main()

"""PGD's stopping rule: time against distance to its limit and against the published errors.

Run ``python -m paceggm.bench.stopping_rule_pgd`` (``make bench-stopping``); it
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
  ``tight`` setting) and Newton row of the same seed. The yardsticks of trial
  noise come from the same table: the coefficient of variation of PGD's errors
  over its trials, and the spread of the reference tight-IPM/Newton ratio.

``--quick`` replays a small synthetic run and skips the whole runs (for the tests).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from paceggm.bench.reference_solvers import PGD_LIMIT_TOL, _rel  # noqa: E402
from paceggm.bench.solver_benchmark import _timed  # noqa: E402
from paceggm.bench.stopping_rule import (  # noqa: E402
    _ratio,
    bench_arguments,
    bench_blocks,
    measure_runs,
    table_head,
)
from paceggm.reconstruction.pgd import DEFAULTS, solve_pgd  # noqa: E402
from paceggm.reconstruction.problem import Problem  # noqa: E402

OUT = Path("figures/tables/stopping_rule_pgd.md")
SOLVERS = ("pgd0", "pgd1")

#: Candidate step tolerances, from the ``tight`` preset (the reference results'
#: setting) to coarser stops on the same iterate path.
CANDIDATES = {
    "tight": dict(preset="tight"),
    "1e-5": dict(tol=1e-5),
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
                sol, t = _timed(lambda p=p, init=init, options=options: solve_pgd(p, init_value=float(init),
                                                                                   **options))
                row = out[(init, name)]
                row["seconds"] += t
                row["iters"] += sol.n_iter
                row["dist"] = max(row["dist"], _rel(sol.W, limit))
                row["capped"] += not sol.converged
                row["solves"] += 1
        log(f"  d={p.d}: " + ", ".join(f"pgd{i} {k} {v['seconds']:.1f}s" for (i, k), v in out.items()))
    return out


def trial_noise(results: Path, dataset: str, rho: float) -> dict[str, float]:
    """Yardsticks from the reference results: CV of each PGD error over trials; tight-IPM/Newton spread."""
    import pandas as pd

    df = pd.read_parquet(results)
    df = df[(df["dataset"] == dataset) & np.isclose(df["rho"], rho) & (df["status"] == "ok")]
    out = {}
    for solver in SOLVERS:
        for metric in ("mahalanobis", "frobenius"):
            v = df.loc[df["p_solver"] == solver, metric].to_numpy()
            out[f"cv_{solver}_{metric}"] = float(np.std(v, ddof=1) / np.mean(v))
    wide = df.pivot_table(index="trial", columns="p_solver", values="mahalanobis")
    ratio = (wide["ipm"] / wide["newton"]).to_numpy()
    out["ipm_newton_mahalanobis"] = (float(np.exp(np.mean(np.log(ratio)))), float(ratio.min()), float(ratio.max()))
    return out


def write_table(blocks: dict, runs: dict, noise: dict, path: Path, *, source: str, rho: float, n_rounds: int,
                n_blocks: int, elapsed: float) -> None:
    lines = table_head("PGD's stopping rule: time, distance to its limit, published errors",
                       "paceggm.bench.stopping_rule_pgd", elapsed,
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
            "| data set | ρ | solver | candidate | trials | s / trial | Mahalanobis / tight | Frobenius / tight "
            "| Mahalanobis / Newton | Frobenius / Newton | tight: Mahalanobis / Newton |",
            "|---|---:|---|---|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for (dataset, r, solver), by_name in runs.items():
            for k, v in by_name.items():
                lines.append(f"| {dataset} | {r:g} | {solver} | {k} | {v['trials']} | {v['seconds']:.1f} | "
                             f"{_ratio(v['vs_tight_mahalanobis'])} | {_ratio(v['vs_tight_frobenius'])} | "
                             f"{_ratio(v['mahalanobis'])} | {_ratio(v['frobenius'])} | "
                             f"{_ratio(v['tight_mahalanobis'])} |")
        lines += [
            "",
            "Trial noise in the reference results (10 trials): coefficient of variation of PGD's errors, and the "
            "paired ratio tight IPM / Newton (Mahalanobis, geometric mean [min, max]).",
            "",
            "| data set | ρ | CV pgd0 Mahalanobis | CV pgd0 Frobenius | CV pgd1 Mahalanobis | CV pgd1 Frobenius "
            "| IPM / Newton |",
            "|---|---:|---:|---:|---:|---:|---:|",
        ]
        for (dataset, r), n in noise.items():
            lines.append(f"| {dataset} | {r:g} | {n['cv_pgd0_mahalanobis']:.2f} | {n['cv_pgd0_frobenius']:.2f} | "
                         f"{n['cv_pgd1_mahalanobis']:.2f} | {n['cv_pgd1_frobenius']:.2f} | "
                         f"{_ratio(n['ipm_newton_mahalanobis'])} |")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")


def main(argv=None) -> None:
    from threadpoolctl import threadpool_limits

    args = bench_arguments(
        argv, description=__doc__.split("\n")[0], out=OUT,
        runs=["spambase:10:5:tight,3e-4,1e-3", "communities_crime:2:8:3e-4,1e-3", "communities_crime:10:5:3e-4,1e-3",
              "life_expectancy:10:10:tight,1e-5,1e-4,3e-4"],
        runs_help="data set:ρ:trials:candidates of whole runs, for pgd0 and pgd1")
    log = lambda s: print(s, flush=True)  # noqa: E731
    t0 = time.perf_counter()
    with threadpool_limits(limits=1):
        problems, n_rounds, source = bench_blocks(args, log)
        blocks = measure_blocks(problems, log)
        runs, noise = {}, {}
        if not args.quick:
            for spec in args.runs:
                dataset, rho, trials, names = spec.split(":")
                noise[(dataset, float(rho))] = trial_noise(args.results, dataset, float(rho))
                for solver in SOLVERS:
                    runs[(dataset, float(rho), solver)] = measure_runs(
                        dataset, float(rho), int(trials), names.split(","), args.results, log,
                        solver=solver, candidates=CANDIDATES)
    write_table(blocks, runs, noise, args.out, source=source, rho=args.rho, n_rounds=n_rounds,
                n_blocks=len(problems), elapsed=time.perf_counter() - t0)
    log(f"wrote {args.out}")


if __name__ == "__main__":
    main()

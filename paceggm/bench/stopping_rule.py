"""IPM-Cholesky's stopping rule: time against error against KKT residual.

Run ``python -m paceggm.bench.stopping_rule`` (part of ``make bench``); it writes
``figures/tables/stopping_rule.md``. Single-threaded BLAS, every timing of a
block measured in the same process, back to back.

Two measurements per candidate stopping setting (:data:`CANDIDATES`):

* *blocks*: the components re-solved in the second half of a Newton run on
  communities_crime (ρ = 10, seed 0; as :mod:`.reference_solvers`), solved by
  each candidate: seconds, L-BFGS-B iterations, relative Frobenius distance to
  Newton's exact completion, and the KKT residual of the max-entropy problem —
  the share of the precision ``W⁻¹`` lying off the measured pattern
  (``‖P_off(W⁻¹)‖_F / ‖W⁻¹‖_F``; 0 at the max-entropy completion);
* *runs*: whole PACE-GGM fits with the harness's seeds of the committed
  ``solver`` results (``--results``), so each trial is paired with that table's
  IPM (``tight``) and Newton rows of the same seed; the published errors
  (Mahalanobis, Frobenius against the data's covariance) as the geometric mean
  of the per-trial ratio to Newton, with its range.

``--quick`` replays a small synthetic run and skips the whole runs (for the tests).
"""

from __future__ import annotations

import argparse
import os
import platform
import time
import warnings
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from paceggm.bench.reference_solvers import _rel, replay_source, replayed_blocks  # noqa: E402
from paceggm.bench.solver_benchmark import _timed  # noqa: E402
from paceggm.reconstruction.ipm import solve_ipm  # noqa: E402
from paceggm.reconstruction.newton import solve_newton  # noqa: E402
from paceggm.reconstruction.problem import Problem  # noqa: E402

OUT = Path("figures/tables/stopping_rule.md")
RESULTS = Path("figures/results/solver/results.parquet")

#: Candidate stopping settings, from the library's ``tight`` preset to coarse
#: per-stage tolerances and caps (coarse early, finer in the last μ-stage).
CANDIDATES = {
    "tight": dict(preset="tight"),
    "A": dict(stage_maxiter=1000, maxiter=2000, stage_ftol=1e-9, final_ftol=1e-12, stage_gtol=1e-3,
              final_gtol=1e-5),
    "C": dict(stage_maxiter=300, maxiter=600, stage_ftol=1e-7, final_ftol=1e-9, stage_gtol=1e-1, final_gtol=1e-3),
    "E": dict(stage_maxiter=100, maxiter=300, stage_ftol=1e-6, final_ftol=1e-8, stage_gtol=1e-1, final_gtol=1e-2),
    "F": dict(stage_maxiter=300, maxiter=3000, stage_ftol=1e-7, final_ftol=1e-12, stage_gtol=1e-1,
              final_gtol=1e-6),
}


def kkt_residual(W: np.ndarray, measured: np.ndarray) -> float:
    """Share of ``W⁻¹`` off the measured pattern (Frobenius): 0 at the max-entropy completion."""
    K = np.linalg.inv(W)
    return float(np.linalg.norm(np.where(measured, 0.0, K)) / np.linalg.norm(K))


def measure_blocks(problems: list[Problem], log) -> dict[str, dict]:
    """Per candidate: total seconds and iterations, worst distance to exact and KKT residual."""
    out = {name: dict(seconds=0.0, iters=0, err=0.0, kkt=0.0, capped=0, solves=0) for name in CANDIDATES}
    for p in problems:
        exact = solve_newton(p).W
        measured = p.lam > 0
        for name, options in CANDIDATES.items():
            sol, t = _timed(lambda p=p, options=options: solve_ipm(p, **options))
            row = out[name]
            row["seconds"] += t
            row["iters"] += sol.n_iter
            row["err"] = max(row["err"], _rel(sol.W, exact))
            row["kkt"] = max(row["kkt"], kkt_residual(sol.W, measured))
            row["capped"] += not sol.converged
            row["solves"] += 1
        log(f"  d={p.d}: " + ", ".join(f"{k} {v['seconds']:.1f}s" for k, v in out.items()))
    return out


def measure_runs(dataset: str, rho: float, trials: int, names: list[str], results: Path, log, *,
                 solver: str = "ipm", candidates: dict | None = None) -> dict[str, dict]:
    """Whole fits paired by seed with the committed ``solver`` results (``solver``'s tight rows and Newton).

    Per candidate: mean seconds per trial, and as (geometric mean, min, max) over
    trials the error ratios to Newton (``mahalanobis``, ``frobenius``), to the
    committed rows of ``solver`` (``vs_tight_*``), and the committed rows' own
    ratio to Newton (``tight_*``).
    """
    import pandas as pd

    from paceggm.bench.data import load_dataset
    from paceggm.bench.seeds import seed_sequence
    from paceggm.estimator import PACEGGM
    from paceggm.metrics import frobenius_error, mahalanobis_error

    candidates = CANDIDATES if candidates is None else candidates
    data = load_dataset(dataset, preprocessing="paper")
    X = np.ascontiguousarray(np.asarray(data.X, dtype=float))
    truth = X.T @ X / X.shape[0]
    stored = pd.read_parquet(results)
    stored = stored[(stored["dataset"] == dataset) & np.isclose(stored["rho"], rho) & (stored["status"] == "ok")]
    out = {}
    for name in names:
        ratios = {f"{kind}{metric}": [] for kind in ("", "tight_", "vs_tight_")
                  for metric in ("mahalanobis", "frobenius")}
        seconds = []
        for trial in range(trials):
            rows = stored[stored["trial"] == trial].set_index("p_solver")
            est = PACEGGM(rho, bound=data.bound, bound_check="waive", solver=solver,
                          solver_options=candidates[name], random_state=seed_sequence(int(rows["seed"].iloc[0])))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                t0 = time.perf_counter()
                est.fit(X)
                seconds.append(time.perf_counter() - t0)
            errors = {"mahalanobis": mahalanobis_error(est.covariance_, truth),
                      "frobenius": frobenius_error(est.covariance_, truth)}
            for metric, value in errors.items():
                ratios[metric].append(value / rows.loc["newton", metric])
                ratios[f"tight_{metric}"].append(rows.loc[solver, metric] / rows.loc["newton", metric])
                ratios[f"vs_tight_{metric}"].append(value / rows.loc[solver, metric])
        out[name] = dict(seconds=float(np.mean(seconds)), trials=trials,
                         **{k: (float(np.exp(np.mean(np.log(v)))), float(min(v)), float(max(v)))
                            for k, v in ratios.items()})
        log(f"  {dataset} ρ={rho:g} {solver} {name}: {out[name]['seconds']:.1f} s/trial, "
            f"Mahalanobis ×{out[name]['vs_tight_mahalanobis'][0]:.3f} of tight, "
            f"×{out[name]['mahalanobis'][0]:.3f} of Newton")
    return out


def _ratio(r: tuple[float, float, float]) -> str:
    return f"{r[0]:.3f} [{r[1]:.2f}, {r[2]:.2f}]"


def write_table(blocks: dict, runs: dict, path: Path, *, source: str, rho: float, n_rounds: int,
                n_blocks: int, elapsed: float) -> None:
    lines = [
        "# IPM-Cholesky's stopping rule: time, error and KKT residual",
        "",
        "Generated by `python -m paceggm.bench.stopping_rule` (`make bench`); do not edit by hand. "
        f"{platform.processor() or platform.machine()}, Python {platform.python_version()}, numpy {np.__version__}, "
        f"single-threaded BLAS; {elapsed:.0f} s in all.",
        "",
        "Candidates (`stage_*`: every μ-stage but the last; `final_*` / `maxiter`: the last; `gtol` bounds "
        "‖∇φ_μ‖∞ / μ):",
        "",
        "| candidate | settings |",
        "|---|---|",
    ]
    lines += [f"| {k} | {', '.join(f'{a}={b}' for a, b in v.items())} |" for k, v in CANDIDATES.items()]
    lines += [
        "",
        f"## Blocks: {n_blocks} components re-solved in the second half of a Newton run on {source} "
        f"(ρ = {rho:g}, seed 0, {n_rounds} rounds)",
        "",
        "`err`: worst ‖W − W_exact‖_F / ‖W_exact‖_F against Newton's completion; `KKT`: worst "
        "‖P_off(W⁻¹)‖_F / ‖W⁻¹‖_F (0 at the max-entropy completion); `speed-up`: tight's seconds / the "
        "candidate's, same process.",
        "",
        "| candidate | seconds | speed-up | iterations | capped solves | err | KKT |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    tight = blocks["tight"]["seconds"]
    for k, r in blocks.items():
        lines.append(f"| {k} | {r['seconds']:.2f} | {tight / r['seconds']:.1f} | {r['iters']:,} | "
                     f"{r['capped']}/{r['solves']} | {r['err']:.1e} | {r['kkt']:.1e} |")
    if runs:
        lines += [
            "",
            "## Whole runs, paired by seed with the committed `solver` results",
            "",
            "Error ratio to Newton (the exact completion) of the same seed: geometric mean [min, max] over "
            "trials; `tight` = the committed IPM rows (the library's settings when they were computed).",
            "",
            "| data set | ρ | candidate | trials | s / trial | Mahalanobis / Newton | Frobenius / Newton "
            "| tight: Mahalanobis / Newton | tight: Frobenius / Newton |",
            "|---|---:|---|---:|---:|---:|---:|---:|---:|",
        ]
        for (dataset, r), by_name in runs.items():
            for k, v in by_name.items():
                lines.append(f"| {dataset} | {r:g} | {k} | {v['trials']} | {v['seconds']:.1f} | "
                             f"{_ratio(v['mahalanobis'])} | {_ratio(v['frobenius'])} | "
                             f"{_ratio(v['tight_mahalanobis'])} | {_ratio(v['tight_frobenius'])} |")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")


def main(argv=None) -> None:
    from threadpoolctl import threadpool_limits

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--results", type=Path, default=RESULTS)
    ap.add_argument("--rho", type=float, default=10.0)
    ap.add_argument("--blocks", type=int, default=2)
    ap.add_argument("--runs", nargs="*", default=["spambase:10:5", "communities_crime:1:3",
                                                  "communities_crime:10:1"],
                    help="data set:ρ:trials of whole runs (all candidates but tight)")
    ap.add_argument("--quick", action="store_true", help="a small synthetic run, no whole runs")
    args = ap.parse_args(argv)
    log = lambda s: print(s, flush=True)  # noqa: E731
    t0 = time.perf_counter()
    with threadpool_limits(limits=1):
        X, source = replay_source(quick=args.quick)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            problems, n_rounds = replayed_blocks(X, rho=args.rho, n_blocks=args.blocks)
        log(f"{source}: {n_rounds} rounds, blocks of d = {[p.d for p in problems]}")
        blocks = measure_blocks(problems, log)
        runs = {}
        if not args.quick:
            names = [k for k in CANDIDATES if k != "tight"]
            for spec in args.runs:
                dataset, rho, trials = spec.split(":")
                runs[(dataset, float(rho))] = measure_runs(dataset, float(rho), int(trials), names, args.results, log)
    write_table(blocks, runs, args.out, source=source, rho=args.rho, n_rounds=n_rounds, n_blocks=len(problems),
                elapsed=time.perf_counter() - t0)
    log(f"wrote {args.out}")


if __name__ == "__main__":
    main()

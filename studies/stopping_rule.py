"""IPM-Cholesky's stopping rule: time against error against KKT residual.

Run ``python -m studies.stopping_rule`` (``make bench-stopping``); it
writes ``figures/tables/stopping_rule.md``. Single-threaded BLAS, every timing
of a block measured in the same process, back to back.

Two measurements per candidate setting (:data:`CANDIDATES`):

* *blocks*: the components re-solved in the second half of a Newton run on
  communities_crime (ρ = 10, seed 0; as :mod:`.reference_solvers`), solved from
  scratch by each candidate: seconds, L-BFGS-B iterations, relative Frobenius
  distance to Newton's exact completion, and the KKT residual of the
  max-entropy problem — the share of the precision ``W⁻¹`` lying off the
  measured pattern (``‖P_off(W⁻¹)‖_F / ‖W⁻¹‖_F``; 0 at the max-entropy
  completion). A warm-started candidate pays this only for a block it has not
  seen; its later rounds start from the previous round's factors;
* *runs*: whole PACE-GGM fits with the harness's seeds of the reference results
  (``--results``: the ``solver`` recipe's rows of the run made with the
  ``tight`` presets), so each trial is paired with that table's IPM (``tight``)
  and Newton rows of the same seed; the published errors (Mahalanobis,
  Frobenius against the data's covariance) as the geometric mean of the
  per-trial ratio to Newton, with its range.

Whole runs are chaotic in the solver: PACE-GGM selects each entry from the
current estimate, so any change of a solve (even Newton stopped at μ = 1e-6
instead of the exact limit, :data:`CONTROL`) can send a trial down another
path of selections with its own error. A paired ratio of one trial is then not
a measure of the solver's accuracy; the decision reads the geometric mean over
trials against the trial noise of that mean: ``2·sd(log error)/√n`` of Newton's
own errors over the same trials (:func:`noise_band`).

``--quick`` replays a small synthetic run and skips the whole runs (for the tests).
"""

from __future__ import annotations

import argparse
import platform
import time
import warnings
from pathlib import Path

import numpy as np

from paceggm.reconstruction.ipm import solve_ipm
from paceggm.reconstruction.newton import solve_newton
from paceggm.reconstruction.problem import Problem
from studies._common import off_pattern, rel_fro, timed
from studies.reference_solvers import replay_source, replayed_blocks

OUT = Path("figures/tables/stopping_rule.md")
#: The ``solver`` recipe's rows of the reproduction made with IPM's and PGD's
#: ``tight`` presets: the reference every candidate is paired with.
RESULTS = Path("figures/tables/stopping_rule_reference.parquet")

#: Candidate settings: the ``warm`` preset (the default: warm-started rounds, μ
#: down to 1e-5, 300 iterations a stage), the ``tight`` preset (the earlier
#: default), and cold continuations with coarser per-stage tolerances and caps
#: (coarse early, finer in the last μ-stage).
_COLD = dict(mu_min=1e-8, warm_start=False)
CANDIDATES = {
    "warm": dict(preset="warm"),
    "tight": dict(preset="tight"),
    "A": dict(_COLD, stage_maxiter=1000, maxiter=2000, stage_ftol=1e-9, final_ftol=1e-12, stage_gtol=1e-3,
              final_gtol=1e-5),
    "C": dict(_COLD, stage_maxiter=300, maxiter=600, stage_ftol=1e-7, final_ftol=1e-9, stage_gtol=1e-1,
              final_gtol=1e-3),
    "E": dict(_COLD, stage_maxiter=100, maxiter=300, stage_ftol=1e-6, final_ftol=1e-8, stage_gtol=1e-1,
              final_gtol=1e-2),
    "F": dict(_COLD, stage_maxiter=300, maxiter=3000, stage_ftol=1e-7, final_ftol=1e-12, stage_gtol=1e-1,
              final_gtol=1e-6),
    "cold μ ≥ 1e-5": dict(mu_min=1e-5, warm_start=False, stage_maxiter=5000, maxiter=7500),
}
#: The control: the exact solver itself, stopped at μ = 1e-6 instead of its μ → 0
#: limit (the last estimate moves by about 1e-4–1e-3 relative): how far whole runs
#: move when every solve changes by almost nothing.
CONTROL = {"Newton at μ = 1e-6": dict(mu_min=1e-6, exact_limit=False)}


def noise_band(results: Path, dataset: str, rho: float, trials: int, *, solver: str = "newton") -> dict[str, float]:
    """Per error, the trial noise of a geometric mean over ``trials`` trials: ``2·sd(log e)/√n`` of
    the reference rows of ``solver`` in the same trials (as a factor, ``exp`` of it)."""
    import pandas as pd

    df = pd.read_parquet(results)
    df = df[(df["dataset"] == dataset) & np.isclose(df["rho"], rho) & (df["status"] == "ok")
            & (df["p_solver"] == solver) & (df["trial"] < trials)]
    return {m: log_noise(df[m].to_numpy()) for m in ("mahalanobis", "frobenius")}


def log_noise(errors) -> float:
    """``exp(2·sd(log e)/√n)``: the trial noise of the geometric mean of ``errors``, as a factor."""
    errors = np.asarray(errors, dtype=float)
    return float(np.exp(2.0 * np.std(np.log(errors), ddof=1) / np.sqrt(errors.size)))


def measure_blocks(problems: list[Problem], log) -> dict[str, dict]:
    """Per candidate: total seconds and iterations, worst distance to exact and KKT residual."""
    out = {name: dict(seconds=0.0, iters=0, err=0.0, kkt=0.0, capped=0, solves=0) for name in CANDIDATES}
    for p in problems:
        exact = solve_newton(p).W
        measured = p.lam > 0
        for name, options in CANDIDATES.items():
            sol, t = timed(lambda p=p, options=options: solve_ipm(p, **options))
            row = out[name]
            row["seconds"] += t
            row["iters"] += sol.n_iter
            row["err"] = max(row["err"], rel_fro(sol.W, exact))
            row["kkt"] = max(row["kkt"], off_pattern(sol.W, measured, norm="fro"))
            row["capped"] += not sol.converged
            row["solves"] += 1
        log(f"  d={p.d}: " + ", ".join(f"{k} {v['seconds']:.1f}s" for k, v in out.items()))
    return out


def measure_runs(dataset: str, rho: float, trials: int, names: list[str], results: Path, log, *,
                 solver: str = "ipm", candidates: dict | None = None) -> dict[str, dict]:
    """Whole fits paired by seed with the reference ``solver`` results (``solver``'s tight rows and Newton).

    Per candidate: mean seconds per trial, and as (geometric mean, min, max) over
    trials the error ratios to Newton (``mahalanobis``, ``frobenius``), to the
    reference rows of ``solver`` (``vs_tight_*``), and the reference rows' own
    ratio to Newton (``tight_*``).
    """
    import pandas as pd

    from paceggm.bench.data import load_dataset
    from paceggm.bench.seeds import seed_sequence
    from paceggm.estimator import PACEGGM
    from paceggm.measurement import MeasuredEntries
    from paceggm.metrics import frobenius_error, mahalanobis_error
    from paceggm.reconstruction import reconstruct

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
        seconds, reference_seconds, distance = [], [], []
        for trial in range(trials):
            rows = stored[stored["trial"] == trial].set_index("p_solver")
            reference_seconds.append(float(rows.loc[solver, "wall_time"]))
            est = PACEGGM(rho, bound=data.bound, bound_check="waive", solver=solver,
                          solver_options=candidates[name], random_state=seed_sequence(int(rows["seed"].iloc[0])))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                t0 = time.perf_counter()
                est.fit(X)
                seconds.append(time.perf_counter() - t0)
            errors = {"mahalanobis": mahalanobis_error(cov_true=truth, cov_pred=est.covariance_),
                      "frobenius": frobenius_error(cov_true=truth, cov_pred=est.covariance_)}
            # How far the last solve is from the exact completion of the same measurements.
            measured = MeasuredEntries.from_measurements(X.shape[1], est.measurements_)
            distance.append(rel_fro(est.covariance_, reconstruct(measured.y, measured.lam).covariance))
            for metric, value in errors.items():
                ratios[metric].append(value / rows.loc["newton", metric])
                ratios[f"tight_{metric}"].append(rows.loc[solver, metric] / rows.loc["newton", metric])
                ratios[f"vs_tight_{metric}"].append(value / rows.loc[solver, metric])
        out[name] = dict(seconds=float(np.mean(seconds)), reference_seconds=float(np.mean(reference_seconds)),
                         trials=trials, distance=(float(np.exp(np.mean(np.log(distance)))), min(distance),
                                                  max(distance)),
                         **{k: (float(np.exp(np.mean(np.log(v)))), float(min(v)), float(max(v)))
                            for k, v in ratios.items()})
        log(f"  {dataset} ρ={rho:g} {solver} {name}: {out[name]['seconds']:.1f} s/trial, "
            f"Mahalanobis ×{out[name]['vs_tight_mahalanobis'][0]:.3f} of tight, "
            f"×{out[name]['mahalanobis'][0]:.3f} of Newton")
    return out


def within_noise(ratios: dict[str, float], band: dict[str, float]) -> bool:
    """Every error's geometric-mean ratio inside ``[1/noise, noise]`` of its band."""
    return all(1.0 / band[m] <= ratios[m] <= band[m] for m in ratios)


def noise_cells(band: dict[str, float], inside: bool) -> str:
    """The two table cells ``noise (Mahalanobis, Frobenius) | within noise``."""
    return f"×{band['mahalanobis']:.2f}, ×{band['frobenius']:.2f} | {'yes' if inside else '**no**'}"


def ratio_cell(r: tuple[float, float, float]) -> str:
    """A (geometric mean, min, max) ratio as a table cell."""
    return f"{r[0]:.3f} [{r[1]:.2f}, {r[2]:.2f}]"


def table_head(title: str, module: str, elapsed: float, defaults: str, candidates_note: str, candidates: dict, *,
               source: str, rho: float, n_rounds: int, n_blocks: int) -> list[str]:
    """Title, provenance, the candidates' settings and the blocks section's heading of a bench table."""
    lines = [
        f"# {title}",
        "",
        f"Generated by `python -m {module}` (`make bench-stopping`); do not edit by hand. "
        f"{platform.processor() or platform.machine()}, Python {platform.python_version()}, numpy {np.__version__}, "
        f"single-threaded BLAS; {elapsed:.0f} s in all.{defaults}",
        "",
        candidates_note,
        "",
        "| candidate | settings |",
        "|---|---|",
    ]
    lines += [f"| {k} | {', '.join(f'{a}={b}' for a, b in v.items())} |" for k, v in candidates.items()]
    return lines + ["", f"## Blocks: {n_blocks} components re-solved in the second half of a Newton run on {source} "
                        f"(ρ = {rho:g}, seed 0, {n_rounds} rounds)", ""]


def write_table(blocks: dict, runs: dict, path: Path, *, source: str, rho: float, n_rounds: int,
                n_blocks: int, elapsed: float) -> None:
    lines = table_head("IPM-Cholesky's stopping rule: time, error and KKT residual", "studies.stopping_rule",
                       elapsed, "", "Candidates (`stage_*`: every μ-stage but the last; `final_*` / `maxiter`: the "
                       "last; `gtol` bounds ‖∇φ_μ‖∞ / μ):", CANDIDATES, source=source, rho=rho, n_rounds=n_rounds,
                       n_blocks=n_blocks)
    lines += [
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
            "## Whole runs, paired by seed with the reference results",
            "",
            "Error ratio to Newton (the exact completion) of the same seed: geometric mean [min, max] over "
            "trials. `noise`: the trial noise of such a mean, exp(2·sd(log error)/√n) of Newton's own errors "
            "over the same trials; `within` when both geometric means lie inside [1/noise, noise]. "
            "`tight (reference)`: the reference table's IPM rows (their time as stored, two workers). "
            f"`{next(iter(CONTROL))}`: the control, the exact solver with an almost identical answer.",
            "",
            "| data set | ρ | candidate | trials | s / trial | last estimate's distance to exact "
            "| Mahalanobis / Newton | Frobenius / Newton | noise (Mahalanobis, Frobenius) | within noise |",
            "|---|---:|---|---:|---:|---:|---:|---:|---:|---|",
        ]
        for (dataset, r), entry in runs.items():
            band, by_name = entry["noise"], entry["candidates"]
            first = next(iter(by_name.values()))
            shown = {"tight (reference)": dict(first, seconds=first["reference_seconds"], distance=None,
                                               mahalanobis=first["tight_mahalanobis"],
                                               frobenius=first["tight_frobenius"]), **by_name}
            for k, v in shown.items():
                inside = within_noise({m: v[m][0] for m in ("mahalanobis", "frobenius")}, band)
                dist = "–" if v["distance"] is None else "{:.1e} [{:.1e}, {:.1e}]".format(*v["distance"])
                lines.append(f"| {dataset} | {r:g} | {k} | {v['trials']} | {v['seconds']:.1f} | {dist} | "
                             f"{ratio_cell(v['mahalanobis'])} | {ratio_cell(v['frobenius'])} | {noise_cells(band, inside)} |")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")


def bench_arguments(argv, *, description: str, out: Path, runs: list[str], runs_help: str,
                    extra=None) -> argparse.Namespace:
    """The command line both stopping-rule benches take; ``extra(parser)`` adds a bench's own options."""
    ap = argparse.ArgumentParser(description=description)
    if extra is not None:
        extra(ap)
    ap.add_argument("--out", type=Path, default=out)
    ap.add_argument("--results", type=Path, default=RESULTS)
    ap.add_argument("--rho", type=float, default=10.0)
    ap.add_argument("--blocks", type=int, default=2)
    ap.add_argument("--runs", nargs="*", default=runs, help=runs_help)
    ap.add_argument("--quick", action="store_true", help="a small synthetic run, no whole runs")
    return ap.parse_args(argv)


def bench_blocks(args: argparse.Namespace, log) -> tuple[list[Problem], int, str]:
    """The blocks both benches solve: ``args.blocks`` components of a Newton run at ``args.rho``."""
    X, source = replay_source(quick=args.quick)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        problems, n_rounds = replayed_blocks(X, rho=args.rho, n_blocks=args.blocks)
    log(f"{source}: {n_rounds} rounds, blocks of d = {[p.d for p in problems]}")
    return problems, n_rounds, source


def main(argv=None) -> None:
    from threadpoolctl import threadpool_limits

    args = bench_arguments(
        argv, description=__doc__.split("\n")[0], out=OUT,
        runs=["communities_crime:10:10:warm,E,control", "communities_crime:2:10:warm,control",
              "communities_crime:1:10:warm", "spambase:10:10:warm", "life_expectancy:10:10:warm",
              "ibm:10:10:warm", "adult:10:10:warm"],
        runs_help="data set:ρ:trials:candidates of whole runs (names of CANDIDATES; control = CONTROL)")
    log = lambda s: print(s, flush=True)  # noqa: E731
    t0 = time.perf_counter()
    with threadpool_limits(limits=1):
        problems, n_rounds, source = bench_blocks(args, log)
        blocks = measure_blocks(problems, log)
        runs = {}
        if not args.quick:
            for spec in args.runs:
                dataset, rho, trials, names = spec.split(":")
                rho, trials, names = float(rho), int(trials), names.split(",")
                found = measure_runs(dataset, rho, trials, [n for n in names if n != "control"], args.results, log)
                if "control" in names:
                    found.update(measure_runs(dataset, rho, trials, list(CONTROL), args.results, log,
                                              solver="newton", candidates=CONTROL))
                runs[(dataset, rho)] = dict(noise=noise_band(args.results, dataset, rho, trials), candidates=found)
    write_table(blocks, runs, args.out, source=source, rho=args.rho, n_rounds=n_rounds, n_blocks=len(problems),
                elapsed=time.perf_counter() - t0)
    log(f"wrote {args.out}")


if __name__ == "__main__":
    main()

"""Does an exact solver give the reference's answers on real PACE-GGM runs?

Each fit runs PACE-GGM twice on the same data with the same seed, once with the
reference solver ``newton`` and once with the solver under test. Both must then
select the same entries in the same order (a selection sees the estimate, so an
estimate that moved changes later rounds) and give the same final estimate to
``TOLERANCE`` relative to its largest entry. CPU seconds of both fits are
recorded, one BLAS thread (``make bench-agreement``).

The default set is the publication's data sets whose PACE-GGM rounds solve
blocks of a few hundred entries (adult, spambase, communities_crime; published
preprocessing, whose data exceed the declared bound B = 1 after centring, so the
bound is waived as in the reproduction: a check of solvers, not of privacy), ρ ∈
{1, 10}, ten trials each; seeds derive from
``("solver-agreement", data set, ρ, trial)``. The command exits non-zero when a
fit disagrees, and writes ``figures/tables/solver_agreement.md`` only after the
whole default set ran (``--publish``).
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np

DATASETS = ("adult", "spambase", "communities_crime")
RHOS = (1.0, 10.0)
TRIALS = 10
TOLERANCE = 1e-8
REFERENCE = "newton"
TABLE = Path("figures/tables/solver_agreement.md")


def compare(X: np.ndarray, *, rho: float, seed: int, solver: str, reference: str = REFERENCE) -> dict:
    """One data set, one seed: both solvers' fits side by side."""
    from paceggm import pace_ggm
    from paceggm.bench.cells import bound_policy
    from paceggm.exceptions import PrivacyLeakWarning

    fits, seconds = {}, {}
    for name in (reference, solver):
        with warnings.catch_warnings():
            # The waiver is stated once, in the module and the table, not per fit.
            warnings.simplefilter("ignore", PrivacyLeakWarning)
            t0 = time.process_time()
            fits[name] = pace_ggm(X, rho=rho, solver=name, random_state=seed,
                                  bound_check=bound_policy("auto", "paper"))
            seconds[name] = time.process_time() - t0
    ref, new = fits[reference], fits[solver]
    same = [m.entry for m in ref.history] == [m.entry for m in new.history]
    diff = float(np.max(np.abs(new.covariance - ref.covariance)) / np.max(np.abs(ref.covariance)))
    return {"same_selection": same, "rel_diff": diff, "rounds": ref.n_rounds,
            "seconds_reference": seconds[reference], "seconds_solver": seconds[solver]}


def agrees(row: dict) -> bool:
    return bool(row["same_selection"]) and row["rel_diff"] <= TOLERANCE


def run(datasets, rhos, trials: int, *, solver: str, data_dir=None, log=print) -> list[dict]:
    from paceggm.bench.data import load_dataset
    from paceggm.bench.seeds import derive_seed

    rows = []
    for name in datasets:
        X = np.array(load_dataset(name, preprocessing="paper", data_dir=data_dir).X)
        for rho in rhos:
            for trial in range(trials):
                row = {"dataset": name, "d": X.shape[1], "rho": float(rho), "trial": trial,
                       **compare(X, rho=rho, seed=derive_seed("solver-agreement", name, float(rho), trial),
                                 solver=solver)}
                rows.append(row)
                log(f"{name} rho={rho:g} trial={trial}: same selection {row['same_selection']}, "
                    f"difference {row['rel_diff']:.1e}, {row['seconds_reference']:.2f} s against "
                    f"{row['seconds_solver']:.2f} s")
    return rows


def markdown(rows: list[dict], *, solver: str, commit: str = "unknown") -> str:
    lines = [f"# `{solver}` against the reference `{REFERENCE}` on real PACE-GGM runs (`make bench-agreement`)", "",
             f"Code: commit {commit[:12]}. Same data, same seed, both solvers; one BLAS thread, CPU seconds. "
             "A fit agrees when both select "
             f"the same entries in the same order and the final estimates differ by at most {TOLERANCE:g} of the "
             "largest entry. Published preprocessing, its bound waived as in the reproduction (the data exceed "
             "B = 1 after centring). Seeds derive from (\"solver-agreement\", data set, ρ, trial).", "",
             f"| data set | d | ρ | fits | same selection | largest difference | `{REFERENCE}` s | `{solver}` s |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        groups.setdefault((r["dataset"], r["d"], r["rho"]), []).append(r)
    for (name, d, rho), g in groups.items():
        lines.append(f"| {name} | {d} | {rho:g} | {len(g)} | {sum(r['same_selection'] for r in g)} | "
                     f"{max(r['rel_diff'] for r in g):.1e} | {sum(r['seconds_reference'] for r in g):.2f} | "
                     f"{sum(r['seconds_solver'] for r in g):.2f} |")
    ok = sum(agrees(r) for r in rows)
    lines += ["", f"{ok} of {len(rows)} fits agree."]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--solver", default="newton_pcg")
    parser.add_argument("--datasets", default=",".join(DATASETS))
    parser.add_argument("--rhos", default=",".join(f"{r:g}" for r in RHOS))
    parser.add_argument("--trials", type=int, default=TRIALS)
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--publish", action="store_true",
                        help=f"write {TABLE} (only after the whole default set)")
    args = parser.parse_args(argv)
    from paceggm import SOLVERS

    if args.solver not in SOLVERS:
        parser.error(f"unknown solver {args.solver!r}; choose one of {sorted(SOLVERS)}")
    datasets = [s for s in args.datasets.split(",") if s]
    rhos = [float(s) for s in args.rhos.split(",") if s]
    from paceggm.bench.data.sources import DatasetUnavailableError

    try:
        rows = run(datasets, rhos, args.trials, solver=args.solver, data_dir=args.data_dir)
    except (DatasetUnavailableError, ValueError) as err:  # unknown name, missing or corrupt file
        print(f"bench-agreement: {err}", file=sys.stderr)
        return 2
    from paceggm.bench.config import _git_commit

    text = markdown(rows, solver=args.solver, commit=_git_commit())
    print(text)
    complete = (set(datasets) >= set(DATASETS) and set(rhos) >= set(RHOS) and args.trials >= TRIALS)
    if args.publish:
        if complete:
            TABLE.parent.mkdir(parents=True, exist_ok=True)
            TABLE.write_text(text)
            print(f"wrote {TABLE}")
        else:
            print(f"not published: {TABLE} holds the whole default set only", file=sys.stderr)
    bad = [r for r in rows if not agrees(r)]
    for r in bad:
        print(f"DISAGREES: {r['dataset']} rho={r['rho']:g} trial={r['trial']}: same selection "
              f"{r['same_selection']}, difference {r['rel_diff']:.1e}", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

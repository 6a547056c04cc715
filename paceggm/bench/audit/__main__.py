"""Run the empirical privacy audit and write ``audit.md`` / ``audit.tex``.

Exits with status 1 if a mechanism of the project shows a bound above its claim
or a broken control is not caught (the tables are written either way).
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from pathlib import Path

import numpy as np

from ..figures.tables import Table, to_latex, to_markdown
from .cases import CASES
from .report import POWER_REPS, audit_case, audit_table

NOTES = """\
How to read it. Each row runs the project's own code many times on two data sets D and D' that
differ in one record, reads one number s of each release, and tests an event E (`test`) chosen on a
separate calibration half of the draws. With p the probability of E on the data set where it is
likelier and q on the other, ε-DP requires p ≤ e^ε q and ρ-zCDP requires
ρ ≥ (sqrt(ln 1/q) − sqrt(ln 1/p))² (Rényi divergence of every order a at most aρ, and Mironov 2017,
Prop. 10). One-sided Clopper–Pearson bounds on p (lower) and q (upper) on the other half of the
draws make both lower bounds hold jointly with the stated confidence. ε is audited only where the
code claims pure DP (the exponential mechanism, ε = sqrt(8ρ)); AdaptiveCov's radius index is
post-processing of its noisy trace and its sparse vector, ρ/8 each, so its claim is ρ/4 of the
fit's ρ = 128.

What it shows: no test found a violation of the claimed budgets, and the same tests catch every
broken control — each a factor-2 error in one calibration (true ρ four times the claim, or ε twice
it): the Gaussian mechanism with half its noise; the exponential mechanism with half its
sensitivity; a whole PACE-GGM fit with its measurement sensitivity halved, every Gaussian σ halved,
its selection sensitivity halved, or its selection's ε doubled; SSP, SSPTight and GaussCov with
every noise σ halved. The fits that catch them put almost all of ρ on the release the mutation
touches (one round: α = 0.05 and β = 0.1 for the measurement, β = 0.95 for the selection, on
neighbours that move the measured entry by its full sensitivity, or two selection scores up and two
down). "power (bootstrap)" is the share of {power_reps} audits on resamples of the same draws that reach the
expected verdict: for a broken control, an estimate of the chance that a fresh run catches it.

What it does not show: a lower bound below the claim is not a proof of privacy — other neighbours
or statistics could come closer. Mutations it cannot see, and why: halving the sensitivity of a
diagonal entry (PACE-GGM's initial measurements, DiagonalOnly) is not a violation — the code's 2B²/n
is twice the true B²/n of x_j², so the halved noise is exactly calibrated; a wrong split or
annealing factor of the budget changes which mechanism gets what, not the loss, because every
mechanism is charged to the fit's exact ledger with the ρ it uses and the ledger refuses more than
ρ; SSP's and GaussCov's sensitivities are sqrt(2)-conservative at d = 2, so an error below that factor
would not show; the releases of SSPProjected, SeparateCov, AdaptiveCov's covariance, AdaSSP and
PACEGGMRegression pass through projections, eigendecompositions or regression solves and have no
broken control here (their mechanisms are the audited primitives, their sensitivities unit-tested);
the default configuration's fit (α = 0.3, β = 0.5) spreads its budget over several releases, so its
single-statistic bound sits far below the claim and would not see a factor 2 in one of them.
"""


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=Path("figures/tables"), help="folder of audit.md / audit.tex")
    ap.add_argument("--draws", type=int, default=None,
                    help="draws per data set for every case (default: each case's own, 20,000-100,000)")
    ap.add_argument("--base-seed", type=int, default=0)
    ap.add_argument("--cases", default=None, help="comma-separated case names (default: all)")
    ap.add_argument("--power-reps", type=int, default=POWER_REPS,
                    help=f"bootstrap audits behind each row's power (default {POWER_REPS}; 0: power not estimated)")
    args = ap.parse_args(argv)
    if args.power_reps < 0:
        ap.error(f"--power-reps must be >= 0, got {args.power_reps}")

    wanted = None if args.cases is None else set(args.cases.split(","))
    unknown = (wanted or set()) - {c.name for c in CASES}
    if unknown:
        ap.error(f"unknown case(s) {sorted(unknown)}; known: {[c.name for c in CASES]}")
    start = time.perf_counter()
    rows = []
    for case in CASES:
        if wanted is not None and case.name not in wanted:
            continue
        row = audit_case(case, args.draws, base_seed=args.base_seed, power_reps=args.power_reps)
        print(f"{case.name:30s} rho >= {row.bound.rho:.4g} (claim {case.rho:g})  "
              f"eps >= {row.bound.epsilon:.4g}{'' if case.epsilon is None else f' (claim {case.epsilon:g})'}  "
              f"{row.verdict}  [{row.seconds:.1f} s]", flush=True)
        rows.append(row)
    table = audit_table(rows)
    args.out.mkdir(parents=True, exist_ok=True)
    header = (f"# Empirical privacy audit\n\nGenerated by `python -m paceggm.bench.audit` (`make audit`); do not edit "
              f"by hand. Base seed {args.base_seed}; {platform.machine()}, Python {platform.python_version()}, "
              f"numpy {np.__version__}; {time.perf_counter() - start:.0f} s in all.\n\n")
    (args.out / "audit.md").write_text(header + to_markdown(table) + "\n" + NOTES.format(power_reps=args.power_reps),
                                   encoding="utf-8")
    # The LaTeX table keeps the numbers; the Markdown one also says which neighbours and test.
    compact = Table(table.name, table.caption, table.text.drop(columns=list(table.text.columns[:4])), table.data)
    (args.out / "audit.tex").write_text(to_latex(compact), encoding="utf-8")
    print(f"wrote {args.out / 'audit.md'} and {args.out / 'audit.tex'}")
    failed = [r.case.name for r in rows if not r.ok]
    if failed:
        print(f"audit FAILED: {failed}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

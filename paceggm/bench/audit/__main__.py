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
from joblib import Parallel, delayed

from ..figures.tables import Table, to_latex, to_markdown
from .cases import CASES
from .report import INVOCATION_POWER_SHARE, POWER_REPS, audit_case, audit_table

NOTES = """\
How to read it. Each whole-fit row runs the project's own code many times on two data sets D and D'
that differ in one record, reads one number s of each release, and tests an event E (`test`) chosen
on a separate calibration half of the draws. With p the probability of E on the data set where it is
likelier and q on the other, ε-DP requires p ≤ e^ε q and ρ-zCDP requires
ρ ≥ (sqrt(ln 1/q) − sqrt(ln 1/p))² (Rényi divergence of every order a at most aρ, and Mironov 2017,
Prop. 10). One-sided Clopper–Pearson bounds on p (lower) and q (upper) on the other half of the
draws make both lower bounds hold jointly with the stated confidence. ε is audited only where the
code claims pure DP (the exponential mechanism, ε = sqrt(8ρ)); AdaptiveCov's radius index is
post-processing of its noisy trace and its sparse vector, ρ/8 each, so its claim is ρ/4 of the
fit's ρ = 128.

Invocation rows ("every invocation"). One fit of each registered method, at its defaults and ρ = 1,
runs on D with every mechanism call (Gaussian, exponential, PACE-GGM's row sampler, sparse vector)
and every ledger charge recorded. For each invocation the audit computes the released query from D
itself and checks it equals what the code released; its true sensitivity is the largest move of that
query over every neighbour of D that replaces one record by one of {{-B, 0, B}}^p (the audit never asks
the code's sensitivity functions, so a halved one is caught); and the mechanism, called as the code
called it, is run again `draws` times on the query and on the query moved that far. The statistic is
the Gaussian output projected on the move, or, for the exponential mechanism (its law read from the
logits or weights the code computes), the count of one candidate moved up by its sensitivity while
every other moves down. An invocation charged c is drawn as k = ⌈1/c⌉ independent copies (at most
400), whose loss is k times one copy's: the row shows, for the invocation closest to its charge, that
charge as the claim and the k-fold bound divided by k. Each invocation is tested at confidence
1 − 0.05/K (K sampled in the fit), so a row's verdict holds at 95%. A row is a violation if any
invocation's bound exceeds its charge, a release was not paid for, or the charges add to more than ρ.
The sparse vector's invocation must be paid for but is not resampled.

What it shows: no test found a violation of the claimed budgets, and the same tests catch every
broken control. Whole fits: each a factor-2 error in one calibration (true ρ four times the claim,
or ε twice it): the Gaussian mechanism with half its noise; the exponential mechanism with half its
sensitivity; a whole PACE-GGM fit with its measurement sensitivity halved, every Gaussian σ halved,
its selection sensitivity halved, or its selection's ε doubled; SSP, SSPTight and GaussCov with
every noise σ halved. The fits that catch them put almost all of ρ on the release the mutation
touches (one round: α = 0.05 and β = 0.1 for the measurement, β = 0.95 for the selection, on
neighbours that move the measured entry by its full sensitivity, or two selection scores up and two
down). One broken control is a published mechanism, not a mutation of ours: the Wishart mechanism
(Jiang, Xie and Zhang, AAAI 2016), claimed ε-DP, whose positive semi-definite noise never lets the
release fall below XᵀX/n of its own data along e₁ while a neighbour's falls below it with positive
probability (an unbounded likelihood ratio); the Laplace mechanism on the same query, read by the same
statistic, is the row beside it. Invocation rows: every registered method (and PACE-GGM with the row
sampler, and centred on its private mean) at its default configuration, with a control whose true ρ is twice its claim:
every ε times sqrt(2) and every Gaussian σ times 1/sqrt(2) — 1/2 for SSP, SSPProjected and GaussCov,
whose sensitivity is sqrt(2) times the truth at d = 2, and 1/(2 sqrt(2)) for DiagonalOnly, whose
2B²/n is twice a variance's true B²/n — so that the fit's most exactly calibrated release loses twice
its charge. "power (bootstrap)" is the share of audits on resamples of the same draws that reach the
expected verdict ({power_reps} for a whole-fit row; {invocation_reps} for an invocation row, each
resampling every invocation of the fit): for a broken control, an estimate of the chance that a
fresh run catches it (resampling reuses the draws, so it can flatter a row near its claim).

What it does not show: a lower bound below the claim is not a proof of privacy — other neighbours
or statistics could come closer. Mutations it cannot see, and why: halving the sensitivity of a
diagonal entry (PACE-GGM's initial measurements, DiagonalOnly) is not a violation — the code's 2B²/n
is twice the true B²/n of x_j², so the halved noise is exactly calibrated; a wrong split or
annealing factor of the budget changes which mechanism gets what, not the loss, because every
mechanism is charged to the fit's exact ledger with the ρ it uses and the ledger refuses more than
ρ; SSP's and GaussCov's sensitivities are sqrt(2)-conservative at d = 2, so an error below that factor
would not show. An invocation's true sensitivity is the largest move over neighbours of this D with
records on the grid, a lower bound on the global one (equal to it for the entries, SSP's matrix,
the trace, the mean and Xᵀy here); the exponential mechanism's and the row sampler's laws are read
from the code's logits and weights, so a sampler that does not draw from them is left to their own
tests; the sparse vector (AdaptiveCov's choice of radius) is audited only as a whole fit.
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
    ap.add_argument("--jobs", type=int, default=1,
                    help="worker processes over the cases (default 1: in this process); the results do not depend on it")
    args = ap.parse_args(argv)
    if args.power_reps < 0:
        ap.error(f"--power-reps must be >= 0, got {args.power_reps}")
    if args.jobs < 1:
        ap.error(f"--jobs must be >= 1, got {args.jobs}")

    wanted = None if args.cases is None else set(args.cases.split(","))
    unknown = (wanted or set()) - {c.name for c in CASES}
    if unknown:
        ap.error(f"unknown case(s) {sorted(unknown)}; known: {[c.name for c in CASES]}")
    start = time.perf_counter()
    selected = [case for case in CASES if wanted is None or case.name in wanted]
    # Every draw is seeded by (base seed, case, ...) alone: the same rows whatever the number of workers.
    work = (delayed(audit_case)(case, args.draws, base_seed=args.base_seed, power_reps=args.power_reps)
            for case in selected)
    results = (Parallel(n_jobs=args.jobs, backend="loky", return_as="generator")(work) if args.jobs > 1
               else (job(*a, **kw) for job, a, kw in work))
    rows = []
    for row in results:
        case = row.case
        power = f"power {row.power:.2f}" if np.isfinite(row.power) else "power not estimated"
        print(f"{case.name:42s} rho >= {row.rho_lower:.4g} (claim {row.claimed_rho:.4g})  "
              f"eps >= {row.bound.epsilon:.4g}{'' if case.epsilon is None else f' (claim {case.epsilon:g})'}  "
              f"{row.verdict}  {power}  [{row.seconds:.1f} s]", flush=True)
        rows.append(row)
    table = audit_table(rows)
    args.out.mkdir(parents=True, exist_ok=True)
    header = (f"# Empirical privacy audit\n\nGenerated by `python -m paceggm.bench.audit` (`make audit`); do not edit "
              f"by hand. Base seed {args.base_seed}; {platform.machine()}, Python {platform.python_version()}, "
              f"numpy {np.__version__}; {time.perf_counter() - start:.0f} s in all.\n\n")
    (args.out / "audit.md").write_text(header + to_markdown(table) + "\n" + NOTES.format(
        power_reps=args.power_reps, invocation_reps=-(-args.power_reps // INVOCATION_POWER_SHARE)),
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

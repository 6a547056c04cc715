"""The exponential mechanism's cost per PACE-GGM round against d: Gumbel-max and the row-weight sampler.

Run ``python -m studies.sampler_benchmark``. For each ``d`` it keeps ``d(d+1)/2`` candidate scores, and each round rescores the
pairs of one component of ``--component`` random variables (what a PACE-GGM
round changes) and then draws once, with
:func:`paceggm.privacy.exponential_mechanism` (``sampler="gumbel"``, the
default: every candidate every round) and with
:class:`paceggm.privacy.selection.PairSampler` (``sampler="rows"``), in the same
process, at a budget that doubles every ``--anneal-every`` rounds (PACE-GGM's
annealing: the row sampler then recomputes every weight). It prints the
milliseconds per round of each and their ratio; one BLAS thread.
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def _rounds(draw, rescore, scores, comps, rhos, rng) -> float:
    t0 = time.thread_time()
    for pos, rho in zip(comps, rhos):
        scores[pos] *= 0.9  # the estimate moved on the component's pairs
        rescore(pos)
        draw(rho, rng)
    return time.thread_time() - t0


def measure(d: int, *, component: int, rounds: int, anneal_every: int, seed: int = 0) -> dict:
    """Milliseconds per round of both samplers at dimension ``d`` (the same rescoring and budgets)."""
    from paceggm.privacy import exponential_mechanism
    from paceggm.privacy.selection import PairSampler

    rng = np.random.default_rng(seed)
    base = rng.uniform(0.0, 0.1, d * (d + 1) // 2)
    comps = []
    for _ in range(rounds):
        members = np.sort(rng.choice(d, size=min(component, d), replace=False))
        p, q = np.tril_indices(members.size)
        comps.append(members[p] * (members[p] + 1) // 2 + members[q])
    rhos = [1e-6 * 2.0 ** (t // anneal_every) for t in range(rounds)]
    delta = 1e-4
    scores = base.copy()
    gumbel = _rounds(lambda rho, g: exponential_mechanism(scores, rho=rho, sensitivity=delta, rng=g),
                     lambda pos: None, scores, comps, rhos, np.random.default_rng(1))
    scores = base.copy()
    sampler = PairSampler(scores, sensitivity=delta)
    rows = _rounds(lambda rho, g: sampler.draw(rho=rho, rng=g), sampler.rescored, scores, comps, rhos,
                   np.random.default_rng(1))
    return {"d": d, "candidates": base.size, "rescored": int(np.mean([c.size for c in comps])),
            "gumbel_ms": 1e3 * gumbel / rounds, "rows_ms": 1e3 * rows / rounds, "ratio": gumbel / rows,
            "rebuilds": sampler.n_rebuilds}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dims", default="250,500,1000,2000,4000")
    ap.add_argument("--component", type=int, default=40, help="variables of the component rescored each round")
    ap.add_argument("--rounds", type=int, default=200)
    ap.add_argument("--anneal-every", type=int, default=50, help="rounds between doublings of the budget")
    args = ap.parse_args(argv)
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1):  # one core, as the fits it serves
        _table(args)
    return 0


def _table(args) -> None:
    print("| d | candidates | rescored a round | Gumbel-max ms / round | row weights ms / round | ratio | rebuilds |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for d in (int(v) for v in args.dims.split(",")):
        r = measure(d, component=args.component, rounds=args.rounds, anneal_every=args.anneal_every)
        print(f"| {r['d']} | {r['candidates']:,} | {r['rescored']:,} | {r['gumbel_ms']:.3f} | {r['rows_ms']:.3f} "
              f"| {r['ratio']:.1f} | {r['rebuilds']} |", flush=True)


if __name__ == "__main__":
    raise SystemExit(main())

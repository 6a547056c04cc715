"""Where a PACE-GGM round's time goes, and what other exact solvers would leave of it.

``make bench-scale`` gives the time per round against one dense Cholesky; this command
takes one of its cells apart (docs/scale.md, *Where a round's time goes*)::

    python -m studies.round_floor --shape lowrank --d 400 --rho 10

It refits the cell (the same data and seeds as ``make bench-scale``; run it on one
BLAS thread, as ``make bench-round-floor`` does) with timers around the pieces of the
solver, and prints

1. the fit's time per round in pieces, in Choleskys of the same d timed in this process;
2. on the blocks solved with CG directions (at least ``_CG_MIN_ENTRIES`` measured
   entries), how many Newton systems a solve takes and its first Newton decrement;
3. the floor a solver that made the factorisations and inverses of P and the Hessian
   products free (what a chordal embedding would replace) would still leave: the
   preconditioner, the local start and everything outside the solver;
4. the chordal embedding of the fit's last pattern: a minimum-degree elimination, its
   fill and multiply–adds against a dense Cholesky's;
5. IPF: greedy rank-two updates of W from the previous round's answer to the same KKT
   residual, on the last few exact solves of the largest block.

The timed pieces do not call one another, so their sum is at most the solver's time.
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import sys
import time

import numpy as np

from paceggm.reconstruction.problem import Problem
from studies._common import SHAPES, cholesky_seconds, stationarity, synthetic
from studies.scale_benchmark import N

__all__ = ["ChordalFill", "minimum_degree_fill", "ipf", "measure", "report", "main"]

# KKT residual (relative) at which IPF stops: the one at which newton_pcg's exact stage may end.
IPF_TOL = 1e-9


@dataclasses.dataclass(frozen=True)
class ChordalFill:
    """A chordal embedding by elimination: ``counts[j]`` entries in the factor's j-th column (diagonal included)."""

    counts: np.ndarray
    fill_edges: int

    @property
    def multiply_adds(self) -> int:
        """Of a column Cholesky on the embedding: the symmetric update of each column's ``c − 1`` entries."""
        c = self.counts.astype(np.int64) - 1
        return int(np.sum(c * (c + 1) // 2))

    @property
    def dense_fraction(self) -> float:
        """``multiply_adds`` over a dense Cholesky's of the same size (column counts d, d − 1, …, 1)."""
        d = self.counts.size
        dense = ChordalFill(np.arange(d, 0, -1), 0).multiply_adds
        return self.multiply_adds / dense if dense else 0.0

    @property
    def entries_fraction(self) -> float:
        """The factor's entries over a dense triangle's."""
        d = self.counts.size
        return float(self.counts.sum()) / (d * (d + 1) / 2) if d else 0.0


def minimum_degree_fill(d: int, rows: np.ndarray, cols: np.ndarray) -> ChordalFill:
    """Eliminate the pattern's graph by minimum degree (ties to the lower index).

    Exact minimum degree on the elimination graph (not an approximation): quadratic in
    d, which is fine for the d ≤ a few thousand of the scale benchmark.

    Examples
    --------
    >>> fill = minimum_degree_fill(4, np.array([1, 2, 3, 3]), np.array([0, 1, 2, 0]))  # a 4-cycle
    >>> fill.fill_edges, fill.counts.tolist()
    (1, [3, 3, 2, 1])
    """
    adjacent = [set() for _ in range(d)]
    for a, b in zip(np.asarray(rows).tolist(), np.asarray(cols).tolist()):
        if a != b:
            adjacent[a].add(b)
            adjacent[b].add(a)
    alive = set(range(d))
    counts, fill = [], 0
    while alive:
        v = min(alive, key=lambda u: (len(adjacent[u]), u))
        neighbours = adjacent[v]
        counts.append(len(neighbours) + 1)
        for a in neighbours:
            new = neighbours - adjacent[a] - {a}
            fill += len(new)
            adjacent[a] |= new
            adjacent[a].discard(v)
        alive.discard(v)
        adjacent[v] = set()
    return ChordalFill(np.array(counts, dtype=np.int64), fill // 2)


def ipf(p: Problem, W0: np.ndarray, *, tol: float = IPF_TOL, max_updates: int = 100_000) -> tuple[int, np.ndarray]:
    """Iterative proportional fitting on the measured pairs, the pair with the largest residual first.

    Each update sets one measured pair's 2 × 2 marginal of ``W`` (or a diagonal entry) to
    its target, which changes ``P = W⁻¹`` on that pair only: a rank-two update of ``W``.
    Exact-limit problems only (``W_S = y_S``); stops at a KKT residual of ``tol``
    relative to the largest measured entry of ``W``.

    Returns
    -------
    updates : int
        Updates made (``max_updates`` if the residual was not reached).
    W : ndarray
        The last iterate.

    Examples
    --------
    >>> from paceggm.reconstruction.problem import make_problem
    >>> y = np.array([[1.0, 0.5, 0.0], [0.5, 1.0, 0.5], [0.0, 0.5, 1.0]])
    >>> n, W = ipf(make_problem(y, np.where(y != 0, 1.0, 0.0), scale=1.0, lam_unit=1.0), np.eye(3))
    >>> n, round(float(W[2, 0]), 12)
    (2, 0.25)
    """
    W = np.array(W0, dtype=float)
    r, c, y = p.rows, p.cols, p.targets
    diagonal = np.diag(p.y)
    for n in range(max_updates + 1):
        residual = np.abs(W[r, c] - y)
        e = int(np.argmax(residual))
        if residual[e] <= tol * np.max(np.abs(W[r, c])):
            return n, W
        if n == max_updates:
            break
        a, b = int(r[e]), int(c[e])
        if a == b:
            u = W[:, a].copy()
            W += np.outer(u, u) * ((y[e] - W[a, a]) / W[a, a] ** 2)
            continue
        pair = [a, b]
        Wpp = W[np.ix_(pair, pair)]
        Ypp = np.array([[diagonal[a], y[e]], [y[e], diagonal[b]]])
        inv = np.linalg.inv(Wpp)
        U = W[:, pair]
        W += U @ (inv @ (Ypp - Wpp) @ inv) @ U.T
    return max_updates, W


def _rank_two_update_seconds(d: int, rng: np.random.Generator, repeat: int = 50) -> float:
    """Best time of one IPF update's arithmetic on a d × d ``W`` (the update alone, no choice of the pair)."""
    A = rng.standard_normal((d, d))
    W = A @ A.T / d + np.eye(d)
    M = 1e-9 * np.array([[1.0, 0.5], [0.5, 1.0]])
    pair = [0, d - 1]
    best = np.inf
    for _ in range(repeat):
        t = time.perf_counter()
        U = W[:, pair]
        W += U @ M @ U.T
        best = min(best, time.perf_counter() - t)
    return best


def measure(shape: str, d: int, rho: float, *, n: int = N, late: int = 4) -> dict:
    """Refit one scale-benchmark cell with ``newton_pcg`` and take its rounds apart (see the module's docstring)."""
    from paceggm import pace_ggm
    from paceggm.bench.seeds import derive_seed
    from paceggm.reconstruction import newton_pcg
    from paceggm.reconstruction.counters import Counters

    X = synthetic(shape, d, n, np.random.default_rng(derive_seed("scale-data", shape, d)))
    chol = cholesky_seconds(d, np.random.default_rng(0))
    update = _rank_two_update_seconds(d, np.random.default_rng(0))
    solves, recorded = [], collections.deque(maxlen=late)

    def on_solve(p, init, sol, decrements):
        if p.rows.size < newton_pcg._CG_MIN_ENTRIES:
            return
        solves.append(decrements)
        # The previous round's answer covers every variable: IPF can start from it.
        if sol.mu == 0.0 and init and len(init) == 1 and np.array_equal(init[0][0], np.arange(p.d)):
            state = init[0][1]
            if getattr(state, "covariance", None) is not None:
                recorded.append((p, state.covariance * (state.scale / p.scale), sol.W))

    with Counters(on_solve=on_solve) as counters:
        t0 = time.thread_time()
        res = pace_ggm(X, rho=rho, solver="newton_pcg", random_state=derive_seed("scale-fit", shape, d, rho))
        total = time.thread_time() - t0
    seconds = {k: v for k, v in counters.seconds.items() if k != "reconstruction updates"}
    calls = {k: v for k, v in counters.calls.items() if k != "reconstruction updates"}
    rounds = res.n_rounds
    rows, cols = np.nonzero(np.tril(res.pattern))
    ipf_rounds = []
    for p, W0, W_answer in recorded:
        updates, W = ipf(p, W0)
        ipf_rounds.append({"d": p.d, "entries": int(p.rows.size), "start_kkt": stationarity(W0, p.y, p.lam),
                           "updates": updates, "kkt": stationarity(W, p.y, p.lam),
                           "vs_answer": float(np.max(np.abs(W - W_answer)) / np.max(np.abs(W_answer)))})
    return {"shape": shape, "d": d, "rho": rho, "rounds": rounds, "cpu_s": total, "chol_s": chol, "update_s": update,
            "seconds": seconds, "calls": calls, "solves": solves,
            "fill": minimum_degree_fill(d, rows, cols), "ipf": ipf_rounds}


def report(m: dict) -> str:
    """The measurements as text: Choleskys are per round, averaged over all the fit's rounds."""
    rounds, chol, sec, calls = m["rounds"], m["chol_s"], m["seconds"], m["calls"]

    def in_chol(s: float) -> str:
        return f"{s / rounds / chol:6.1f}"

    outside = m["cpu_s"] - sec.get("solver", 0.0)
    lines = [f"# {m['shape']}, d = {m['d']}, rho = {m['rho']:g}, newton_pcg: {rounds} rounds, {m['cpu_s']:.1f} CPU s,"
             f" one d x d Cholesky {chol * 1e3:.3f} ms",
             "", "| piece | calls | CPU s | Choleskys / round |", "|---|---:|---:|---:|",
             f"| whole fit | | {m['cpu_s']:.2f} | {in_chol(m['cpu_s'])} |",
             f"| outside the solver | | {outside:.2f} | {in_chol(outside)} |",
             f"| solver | {calls.get('solver', 0)} | {sec.get('solver', 0.0):.2f} | {in_chol(sec.get('solver', 0.0))} |"]
    for key in sorted(k for k in sec if k != "solver"):
        lines.append(f"| - {key} | {calls[key]} | {sec[key]:.2f} | {in_chol(sec[key])} |")
    kept = outside + sum(sec.get(k, 0.0) for k in
                         ("preconditioner solves", "Hessian factorisations", "Hessian factorisations, single",
                          "local start"))
    lines += ["", f"If the factorisations and inverses of P and the Hessian products cost nothing (the most a "
              f"chordal embedding could give), the rest would still cost {kept:.2f} s, "
              f"{kept / m['cpu_s']:.0%} of the fit: {in_chol(kept).strip()} Choleskys a round."]
    systems = collections.Counter(min(len(s), 6) for s in m["solves"])
    firsts = np.array([s[0] for s in m["solves"] if s and np.isfinite(s[0])])
    if m["solves"]:
        lines += ["", f"{len(m['solves'])} solves with CG directions; Newton systems per solve (6: six or more): "
                  + ", ".join(f"{k}: {systems[k]}" for k in sorted(systems))
                  + f"; mean {np.mean([len(s) for s in m['solves']]):.2f}"]
        if firsts.size:
            lines.append(f"first decrement: median {np.median(firsts):.2g}, upper quartile "
                         f"{np.quantile(firsts, 0.75):.2g}")
    f = m["fill"]
    lines += ["", f"Chordal embedding of the last pattern (minimum degree): {f.fill_edges} fill edges, factor "
              f"{f.entries_fraction:.0%} of a dense triangle, largest clique {int(f.counts.max())}, "
              f"{f.multiply_adds / 1e6:.2f} M multiply-adds = {f.dense_fraction:.1%} of a dense Cholesky's"]
    if m["ipf"]:
        lines.append(f"IPF: one rank-two update of W takes {m['update_s'] * 1e3:.3f} ms "
                     f"({m['update_s'] / chol:.2f} Choleskys), the pair's choice not counted")
    for r in m["ipf"]:
        lines.append(f"IPF from the previous answer, d = {r['d']}, |S| = {r['entries']}: start KKT "
                     f"{r['start_kkt']:.2g}, {r['updates']} rank-two updates to KKT {r['kkt']:.1e} "
                     f"({r['vs_answer']:.1e} from newton_pcg's answer): "
                     f"{r['updates'] * m['update_s'] / chol:.0f} Choleskys for the round")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shape", default="lowrank", choices=SHAPES)
    ap.add_argument("--d", type=int, default=400)
    ap.add_argument("--rho", type=float, default=10.0)
    ap.add_argument("--n", type=int, default=N, help="records of the synthetic data set")
    ap.add_argument("--late", type=int, default=4, help="last exact rounds of the largest block run by IPF")
    args = ap.parse_args(argv)
    if args.d < 2 or args.rho <= 0 or args.n < 2 or args.late < 0:
        ap.error("need d >= 2, rho > 0, n >= 2 and late >= 0")
    print(report(measure(args.shape, args.d, args.rho, n=args.n, late=args.late)))
    return 0


if __name__ == "__main__":
    sys.exit(main())

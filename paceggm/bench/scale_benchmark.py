"""PACE-GGM at scale: whole fits on synthetic data, d up to 1,600, one core.

Run ``python -m paceggm.bench.scale_benchmark`` (``make bench-scale``). Each
cell is one PACE-GGM fit (default solver, published α, β) on ``n`` synthetic
records with a covariance of one of three shapes:

* ``lowrank``: five factors plus independent noise (one component grows over
  all variables: the solver-bound regime);
* ``banded``: a moving average of width 4 (bandwidth 3);
* ``block``: independent blocks of 20 variables, within-block correlation 0.6.

Each cell runs in its own process (so that its peak memory is its own, and a
cell over the time limit is stopped without stopping the sweep) with one BLAS
thread, and reports its rounds, measured off-diagonal entries ``|S|``, CPU
seconds, seconds per round and their ratio to one dense ``d × d`` Cholesky
factorisation timed in the same process, peak resident memory (the data
included), and — where affordable (``d <= --reference-max-d``) — the largest
relative difference between the fit's estimate and the reference: the same
measurements reconstructed from scratch by the reference solver (cold Newton
continuation on every block, no warm start, no incremental bookkeeping), and
the KKT residual of the fit's estimate on its exact blocks.

The results table (``figures/tables/scale_benchmark.json``, one row per cell)
is what the Markdown/LaTeX tables and the time-versus-d plot are drawn from.
Seeds derive from each cell's identity (shape, d, ρ), so a cell's fit is the
same whatever else the grid holds.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path
from unittest import mock

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import numpy as np  # noqa: E402

SHAPES = ("lowrank", "banded", "block")
DIMS = (100, 200, 400, 800, 1600)
RHOS = (1.0, 10.0)
SOLVERS_COMPARED = ("newton", "newton_pcg")
N = 20_000
TABLES = Path("figures/tables")
FIGURES = Path("figures")


# ---------------------------------------------------------------- data
def synthetic(shape: str, d: int, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` records of dimension ``d`` with a covariance of ``shape``, scaled into [-1, 1]."""
    if shape == "lowrank":
        X = rng.normal(size=(n, 5)) @ rng.normal(size=(5, d)) + rng.normal(size=(n, d))
    elif shape == "banded":
        Z = rng.normal(size=(n, d + 3))
        X = Z[:, :d] + Z[:, 1:d + 1] + Z[:, 2:d + 2] + Z[:, 3:d + 3]
    elif shape == "block":
        G = rng.normal(size=(n, -(-d // 20)))
        X = np.sqrt(0.6) * np.repeat(G, 20, axis=1)[:, :d] + np.sqrt(0.4) * rng.normal(size=(n, d))
    else:
        raise ValueError(f"unknown shape {shape!r}; choose one of {SHAPES}")
    return X / np.abs(X).max(axis=0)


def _cholesky_seconds(d: int, rng: np.random.Generator, repeat: int = 5) -> float:
    from scipy.linalg.lapack import dpotrf

    G = rng.normal(size=(d, d))
    A = G @ G.T / d + np.eye(d)
    best = np.inf
    for _ in range(repeat):
        t0 = time.process_time()
        dpotrf(A, lower=1)
        best = min(best, time.process_time() - t0)
    return best


# ---------------------------------------------------------------- one cell
class _Timeout(Exception):
    pass


def _exactness(res) -> dict:
    """Difference from the from-scratch reference, and the KKT residual of the exact blocks (relative).

    On a block whose answer is the exact μ = 0 limit the KKT conditions are
    ``W = y`` on the pattern and ``W⁻¹ = 0`` off it. A block left at the barrier
    parameter ``μ_min`` (``y`` not completable) is only as stationary as its
    stopping rule makes it; there the difference from the reference is the check.
    """
    from paceggm.measurement import MeasuredEntries
    from paceggm.reconstruction import reconstruct

    state = MeasuredEntries.from_measurements(res.covariance.shape[0], res.measurements)
    ref = reconstruct(state.y, state.lam, solver="newton")
    W = res.covariance
    diff = float(np.max(np.abs(W - ref.covariance)) / np.max(np.abs(ref.covariance)))
    kkt = None
    for key, block in ref.blocks.items():
        if block["mu"] != 0.0:
            continue
        ix = np.ix_(key, key)
        W_b, on = W[ix], state.lam[ix] > 0
        P = np.linalg.inv(W_b)
        kkt = max(kkt or 0.0, float(np.max(np.abs(W_b - state.y[ix])[on]) / np.max(np.abs(W_b))),
                  float(np.max(np.abs(P[~on]), initial=0.0) / np.max(np.abs(P))))
    return {"ref_diff": diff, "kkt": kkt}


def run_cell(shape: str, d: int, rho: float, *, n: int, timeout: float, reference: bool,
             solver: str = "newton") -> dict:
    """One fit, in this process, stopped after ``timeout`` CPU seconds; the row of the results table."""
    from paceggm import estimator, pace_ggm
    from paceggm.bench.seeds import derive_seed

    row = {"shape": shape, "d": d, "rho": rho, "solver": solver, "n": n}
    X = synthetic(shape, d, n, np.random.default_rng(derive_seed("scale-data", shape, d)))
    row["chol_s"] = _cholesky_seconds(d, np.random.default_rng(0))
    rounds = [0]

    class Counting(estimator.IncrementalReconstruction):
        def update(self, j, k):
            rounds[0] += 1
            return super().update(j, k)

    def stop(signum, frame):
        raise _Timeout

    # CPU time, not wall time: on a shared machine the limit then means the same work.
    signal.signal(signal.SIGVTALRM, stop)
    signal.setitimer(signal.ITIMER_VIRTUAL, timeout)
    t0 = time.process_time()
    try:
        with mock.patch.object(estimator, "IncrementalReconstruction", Counting):
            res = pace_ggm(X, rho=rho, solver=solver, random_state=derive_seed("scale-fit", shape, d, rho))
        signal.setitimer(signal.ITIMER_VIRTUAL, 0)
        row.update(status="ok", rounds=res.n_rounds, n_offdiagonal=res.n_offdiagonal)
    except _Timeout:
        row.update(status="timeout", rounds=rounds[0], n_offdiagonal=None)
        res = None
    row["cpu_s"] = time.process_time() - t0
    row["ms_per_round"] = 1e3 * row["cpu_s"] / max(row["rounds"], 1)
    row["round_over_cholesky"] = row["ms_per_round"] / (1e3 * row["chol_s"])
    row["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    if res is not None:
        row["largest_block"] = int(max(np.bincount(_labels(res.pattern))))
        row.update(_exactness(res) if reference else {"ref_diff": None, "kkt": None})
    return row


def _labels(pattern: np.ndarray) -> np.ndarray:
    from paceggm.reconstruction import pattern_components

    labels = np.empty(pattern.shape[0], dtype=int)
    for i, c in enumerate(pattern_components(pattern)):
        labels[c] = i
    return labels


def _run_isolated(shape: str, d: int, rho: float, solver: str, args) -> dict:
    cmd = [sys.executable, "-m", "paceggm.bench.scale_benchmark", "--cell", json.dumps([shape, d, rho, solver]),
           "--n", str(args.n), "--timeout", str(args.timeout), "--reference-max-d", str(args.reference_max_d)]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        tail = (out.stderr.strip().splitlines() or ["no output"])[-1]
        return {"shape": shape, "d": d, "rho": rho, "solver": solver, "n": args.n, "status": f"error: {tail}"}
    return json.loads(out.stdout.strip().splitlines()[-1])


# ---------------------------------------------------------------- tables and plot
def _fmt(v, spec: str) -> str:
    return "—" if v is None else format(v, spec)


def _markdown(rows: list[dict], machine: str, timeout: float) -> str:
    lines = [
        "# PACE-GGM at scale (`make bench-scale`)",
        "",
        f"Machine: {machine}. One BLAS thread; CPU seconds of the fit (data generation excluded); "
        f"fits stopped after {timeout:g} CPU s are marked *timeout* with the rounds done by then. "
        "`round / Cholesky`: CPU seconds per round over one dense d × d Cholesky (LAPACK dpotrf) timed in "
        "the same process. `peak MB`: the process's peak resident memory, the data included. "
        "`vs reference`: largest difference from the same measurements reconstructed from scratch by the "
        "cold Newton continuation of the reference solver `newton`, relative to the largest entry; `KKT`: on "
        "the blocks where the answer is the exact limit, max(|W − y| on the pattern, |W⁻¹| off it), each "
        "relative to its largest entry (— : not computed at that d, or no exact block).",
        "",
        "| shape | d | ρ | solver | status | rounds | \\|S\\| | largest block | CPU s | ms / round "
        "| round / Cholesky | peak MB | vs reference | KKT |",
        "|---|---:|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['shape']} | {r['d']} | {r['rho']:g} | {r.get('solver', '—')} | {r['status']} "
            f"| {r.get('rounds', '—')} "
            f"| {_fmt(r.get('n_offdiagonal'), 'd')} | {_fmt(r.get('largest_block'), 'd')} "
            f"| {_fmt(r.get('cpu_s'), '.1f')} | {_fmt(r.get('ms_per_round'), '.1f')} "
            f"| {_fmt(r.get('round_over_cholesky'), '.1f')} | {_fmt(r.get('peak_rss_mb'), '.0f')} "
            f"| {_fmt(r.get('ref_diff'), '.1e')} | {_fmt(r.get('kkt'), '.1e')} |")
    return "\n".join(lines) + "\n"


def _latex(rows: list[dict], machine: str) -> str:
    out = [f"% PACE-GGM at scale (make bench-scale); {machine}; one BLAS thread, CPU seconds.",
           "\\begin{tabular}{lrrllrrrrrrr}", "\\toprule",
           "shape & $d$ & $\\rho$ & solver & status & rounds & $|S|$ & CPU s & ms/round & round/Cholesky & peak MB "
           "& vs reference \\\\", "\\midrule"]
    for r in rows:
        solver = r.get("solver", "---").replace("_", "\\_")
        out.append(
            f"{r['shape']} & {r['d']} & {r['rho']:g} & {solver} & {r['status'].split(':')[0]} "
            f"& {r.get('rounds', '---')} "
            f"& {_fmt(r.get('n_offdiagonal'), 'd')} & {_fmt(r.get('cpu_s'), '.1f')} "
            f"& {_fmt(r.get('ms_per_round'), '.1f')} & {_fmt(r.get('round_over_cholesky'), '.1f')} "
            f"& {_fmt(r.get('peak_rss_mb'), '.0f')} & {_fmt(r.get('ref_diff'), '.1e')} \\\\".replace("—", "---"))
    out += ["\\bottomrule", "\\end{tabular}"]
    return "\n".join(out) + "\n"


def plot(rows: list[dict], path: Path) -> None:
    """Seconds per round and one Cholesky against d, from the results rows only."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ok = [r for r in rows if "ms_per_round" in r]
    solvers = sorted({r.get("solver", "newton") for r in ok}) or ["newton"]
    fig, axes = plt.subplots(1, len(solvers), figsize=(5.0 * len(solvers), 4.0), sharey=True, squeeze=False)
    chol = sorted((d, 1e3 * float(np.median([r["chol_s"] for r in ok if r["d"] == d]))) for d in {r["d"] for r in ok})
    for ax, solver in zip(axes[0], solvers):
        for shape, marker in zip(SHAPES, "osD"):
            for rho, ls in zip(sorted({r["rho"] for r in ok}), ("-", "--", ":")):
                pts = sorted((r["d"], r["ms_per_round"]) for r in ok if r["shape"] == shape and r["rho"] == rho
                             and r.get("solver", "newton") == solver)
                if pts:
                    ax.plot(*zip(*pts), marker=marker, ls=ls, label=f"{shape}, ρ = {rho:g}")
        if chol:
            ax.plot(*zip(*chol), color="black", lw=2, label="one d × d Cholesky")
        ax.set(xscale="log", yscale="log", xlabel="d", title=f"solver {solver}")
        ax.legend(fontsize=7)
    axes[0][0].set_ylabel("CPU ms per round (timeouts: rounds done)")
    fig.tight_layout()
    for suffix in (".pdf", ".png"):
        fig.savefig(path.with_suffix(suffix), dpi=150)
    plt.close(fig)


def write_outputs(rows: list[dict], *, tables: Path, figures: Path, machine: str, timeout: float) -> None:
    tables.mkdir(parents=True, exist_ok=True)
    figures.mkdir(parents=True, exist_ok=True)
    (tables / "scale_benchmark.json").write_text(json.dumps({"machine": machine, "rows": rows}, indent=1) + "\n")
    (tables / "scale_benchmark.md").write_text(_markdown(rows, machine, timeout))
    (tables / "scale_benchmark.tex").write_text(_latex(rows, machine))
    plot(rows, figures / "scale_benchmark")


def _machine() -> str:
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return (f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, load {load:.1f} at start, "
            f"Python {platform.python_version()}, NumPy {np.__version__}")


def _floats(text: str) -> list[float]:
    return [float(v) for v in text.split(",") if v]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dims", type=lambda s: [int(v) for v in _floats(s)], default=list(DIMS))
    ap.add_argument("--rhos", type=_floats, default=list(RHOS))
    ap.add_argument("--shapes", type=lambda s: s.split(","), default=list(SHAPES))
    ap.add_argument("--n", type=int, default=N, help="records per data set")
    ap.add_argument("--solvers", type=lambda s: s.split(","), default=list(SOLVERS_COMPARED))
    ap.add_argument("--timeout", type=float, default=600.0, help="CPU seconds per fit")
    ap.add_argument("--reference-max-d", type=int, default=400,
                    help="compare with the from-scratch reference up to this d")
    ap.add_argument("--tables", type=Path, default=TABLES)
    ap.add_argument("--figures", type=Path, default=FIGURES)
    ap.add_argument("--merge", nargs="+", type=Path, metavar="JSON",
                    help="draw the tables and plot from these results tables (e.g. of sweeps run in parallel), "
                         "without running anything")
    ap.add_argument("--cell", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.merge:
        tables = [json.loads(path.read_text()) for path in args.merge]
        machine = "; ".join(dict.fromkeys(t["machine"] for t in tables))
        rows = [r for t in tables for r in t["rows"]]
        rows.sort(key=lambda r: (SHAPES.index(r["shape"]), r["d"], r["rho"], r.get("solver", "")))
        write_outputs(rows, tables=args.tables, figures=args.figures, machine=machine, timeout=args.timeout)
        return 0
    if args.cell:
        shape, d, rho, solver = json.loads(args.cell)
        row = run_cell(shape, int(d), float(rho), n=args.n, timeout=args.timeout,
                       reference=int(d) <= args.reference_max_d, solver=solver)
        print(json.dumps(row))
        return 0
    for shape in args.shapes:
        if shape not in SHAPES:
            ap.error(f"unknown shape {shape!r}; choose from {','.join(SHAPES)}")
    machine = _machine()
    rows = []
    for shape in args.shapes:
        for d in args.dims:
            for rho in args.rhos:
                for solver in args.solvers:
                    row = _run_isolated(shape, d, rho, solver, args)
                    rows.append(row)
                    print(json.dumps(row), flush=True)
                    # Written after every cell: an interrupted sweep keeps what it measured.
                    write_outputs(rows, tables=args.tables, figures=args.figures, machine=machine,
                                  timeout=args.timeout)
    return int(any(r["status"].startswith("error") for r in rows))


if __name__ == "__main__":
    sys.exit(main())

"""PACE-GGM at scale: whole fits on synthetic data, d up to 1,600, one core.

Run ``python -m studies.scale_benchmark`` (``make bench-scale``). Each
cell is one PACE-GGM fit (default solver, published α, β) on ``n`` synthetic
records with a covariance of one of three shapes:

* ``lowrank``: five factors plus independent noise (one component grows over
  all variables: the solver-bound regime);
* ``banded``: a moving average of width 4 (bandwidth 3);
* ``block``: independent blocks of 20 variables, within-block correlation 0.6.

With ``--hard`` (``make bench-scale SCALE_ARGS=--hard``) it runs the hard
shapes instead (:mod:`studies.matched_data`): ``indian_pines`` and
``madeline``, synthetic data with those data sets' published n, d and
statistics (mean and max ``|r|``, ``e_off``, effective rank), beside the
publication's seconds per trial; ``hard``, indian_pines's model (strong
common factors, effective rank ≈ 2.5) at d = 1,000, 2,000 and 4,000; and
``indian_pines_cols`` (d = 187) and ``hard_cols`` (d = 1,000), the same model
with each column scaled onto [-1, 1], whose measured-entry counts are of the
publication's order (the matched statistics alone give a few tens).
A second table sets the default solver beside the fastest exact solver of
each cell (:func:`default_vs_best`).

With ``--scale-rows`` it runs the rows of the sparse-pattern solver instead
(each beside the previous default's CPU choice, ``newton_pcg``, in the same
sweep): ``hard_cols`` at d = 1,000, 2,000, 4,000 and 10,000 (a fit past its
CPU budget is reported with the rounds it reached), and factor shapes
(:func:`factor_data`): ``k`` common factors plus noise at d = 400, several
``k`` and seeds, the data a user brings.

With ``--gpu auto`` (what ``make bench-scale`` passes) the grid gains a GPU
column where torch with CUDA imports: solver ``auto+torch``, the default solver
with its large blocks on the GPU (:mod:`paceggm.reconstruction.newton_xp`),
under a wall-clock budget instead of a CPU one; elsewhere the column is skipped
and the reason printed. ``wall s`` is every cell's wall-clock seconds.

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

Results live in a store, ``runs/scale/`` by default (one checksummed file per
cell, written atomically: :class:`paceggm.bench.store.RunStore`). A cell's key
is its identity — shape, d, ρ, solver, ``n``, CPU budget, whether the reference
is computed — and each row records the commit that measured it. A sweep skips
the cells the store already holds from the current, clean commit (so an
interrupted sweep resumes, losing no finished cell), recomputes the others,
and redraws the store's tables (``runs/scale/scale_benchmark.{md,tex,json}``,
plot ``scale_benchmark.png``) from the whole store, never from the sweep alone.
``--publish`` copies them to ``figures/`` only when the store holds every cell
of the default grid, all measured by one commit: a reduced or partial sweep can
never replace the committed table. Seeds derive from each cell's identity
(shape, d, ρ), so a cell's fit is the same whatever else the grid holds.
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
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

import numpy as np

from studies._common import (
    ALL_SHAPES,
    SHAPES,
    at_target_size,
    cell_size,
    cholesky_seconds,
    kkt_residual,
    rel_max,
    single_threaded_env,
    synthetic,
    target_of,
)

# The hard shapes (--hard) at large d: indian_pines's model; with its columns scaled onto [-1, 1] (the
# publication's workload: as many measured entries as it reports), only at d = 1,000 (a fit is minutes).
HARD_DIMS = (1000, 2000, 4000)
HARD_COLS_DIMS = (1000,)
HARD_RHOS = (10.0,)
#: --scale-rows: hard_cols at these d (10,000: a sparse pattern on many variables), and the factor shapes.
SCALE_ROWS_DIMS = (1000, 2000, 4000, 10000)
FACTOR_COUNTS = (3, 5, 10)
FACTOR_SEEDS = (1, 2, 3)
FACTOR_D = 400
SCALE_ROWS_SOLVERS = ("auto", "newton_pcg", "newton_chordal")
#: The default solver, and the exact solvers it chooses between (the table of ``default_vs_best``).
DEFAULT_SOLVER = "auto"
EXACT_SOLVERS = ("newton", "newton_pcg", "newton_chordal")
DIMS = (100, 200, 400, 800, 1600)
RHOS = (1.0, 10.0)
SOLVERS_COMPARED = ("newton", "newton_pcg", "auto")
#: The GPU column: the default solver with ``solver_options={"backend": "torch"}``.
GPU_SOLVER = "auto+torch"
N = 20_000
TIMEOUT = 600.0
STORE = Path("runs/scale")
TABLES = Path("figures/tables")
FIGURES = Path("figures")
CLONE = Path(__file__).resolve().parents[1]


# ---------------------------------------------------------------- factor shapes
def factor_shape(k: int, seed: int) -> str:
    """The name of the factor shape with ``k`` factors drawn from ``seed``: ``factors5_seed1``."""
    return f"factors{k}_seed{seed}"


def is_factor_shape(shape: str) -> bool:
    return shape.startswith("factors") and "_seed" in shape


def factor_data(shape: str, d: int, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` records of a factor shape, each column scaled onto [-1, 1].

    ``k`` factors with loadings ``0.5 + N(0, 1)`` (a common sign, as measurements of
    one phenomenon share) and strengths ``0.6^i``, signal-to-noise 4 over all
    factors, and noise of heterogeneous scales ``exp(0.5 z)``; the loadings and
    scales are drawn from the shape's seed (:func:`factor_shape`), the records from ``rng``.
    """
    from paceggm.bench.seeds import derive_seed

    k, seed = (int(v) for v in shape.removeprefix("factors").split("_seed"))
    model = np.random.default_rng(derive_seed("factor-shape", k, seed, d))
    strengths = 0.6 ** np.arange(k)
    loadings = (0.5 + model.normal(size=(d, k))) * np.sqrt(4.0 * strengths / strengths.sum())
    noise_scale = np.exp(0.5 * model.normal(size=d))
    X = rng.normal(size=(n, k)) @ loadings.T + rng.normal(size=(n, d)) * noise_scale
    return X / np.abs(X).max(axis=0)


def _data(shape: str, d: int, n: int, rng: np.random.Generator) -> np.ndarray:
    return factor_data(shape, d, n, rng) if is_factor_shape(shape) else synthetic(shape, d, n, rng)


def _shape_rank(shape: str) -> tuple:
    """The tables' order of shapes: the named ones, then the factor shapes by k and seed."""
    if is_factor_shape(shape):
        k, seed = (int(v) for v in shape.removeprefix("factors").split("_seed"))
        return (len(ALL_SHAPES), k, seed)
    return (ALL_SHAPES.index(shape), 0, 0)


# ---------------------------------------------------------------- kernel costs
def kernel_costs(d: int, per_row: float, seed: int = 0, repeat: int = 5) -> dict:
    """The Newton kernels of the dense and the chordal path on one sparse pattern, in dense Choleskys of ``d``.

    The pattern: the diagonal and ``per_row · d`` off-diagonal pairs (a random spanning
    tree, then uniform pairs), measured from a 3-factor covariance; ``P`` its exact
    answer. Each kernel is timed on this process's CPU clock (the minimum of
    ``repeat``), beside a dense Cholesky of the same ``d`` timed alike:
    ``newton_pcg`` factors and inverts the dense ``P`` and multiplies by the Hessian
    through dense ``W`` (a product; its preconditioner solve, two triangular solves
    with an ``|S| × |S|`` single-precision factor); ``newton_chordal`` the sparse
    factor, the projected inverse, a Hessian product and an inverse Hessian map on the
    embedding, and the symbolic analysis a new entry outside the embedding costs.
    """
    from scipy.linalg.lapack import dpotrf

    from paceggm.reconstruction.newton import _factor_at, _inverse, _Pattern
    from paceggm.reconstruction.newton_chordal import _Kernels, embedding_of, solve_newton_chordal
    from paceggm.reconstruction.newton_pcg import _factor_solve, _PCGDirection
    from paceggm.reconstruction.problem import make_problem, measured_pattern, natural_units
    from studies._common import random_pattern

    rng = np.random.default_rng(seed)
    mask = random_pattern(d, int(per_row * d) - (d - 1), rng)
    parents = [int(rng.integers(0, j)) for j in range(1, d)]
    mask[np.arange(1, d), parents] = mask[parents, np.arange(1, d)] = True
    B = rng.normal(size=(d, 3))
    C = B @ B.T + np.eye(d)
    lam = mask.astype(float)
    y = np.where(mask, C, 0.0)
    pattern = measured_pattern(lam)
    scale, lam_unit = natural_units(y, lam, pattern=pattern)
    p = make_problem(y, lam, scale=scale, lam_unit=lam_unit, pattern=pattern)
    x = solve_newton_chordal(p).state.entries[2]
    pat = _Pattern(p)
    emb = embedding_of(p)
    ops = _Kernels(emb, pat, emb.locate(pat.r, pat.c))
    pt = ops.point(x)
    W = _inverse(_factor_at(pat, x))
    v = rng.normal(size=x.size)
    pcg = _PCGDirection(pat, None)
    S = x.size
    cf = (np.asfortranarray(np.eye(S, dtype=np.float32)), True)
    A = C + d * np.eye(d)

    def best(fn) -> float:
        times = []
        for _ in range(repeat):
            t = time.process_time()
            fn()
            times.append(time.process_time() - t)
        return min(times)

    chol = best(lambda: dpotrf(A))
    pieces = {
        "dense factor + inverse": best(lambda: _inverse(_factor_at(pat, x))),
        "dense Hessian product": best(lambda: pcg._hessian_times(v, W, W[pat.r], 0.0)),
        "dense preconditioner solve": best(lambda: _factor_solve(cf, v)),
        "sparse factor": best(lambda: ops.point(x)),
        "projected inverse": best(lambda: ops.projected_inverse(pt.L)),
        "sparse Hessian product": best(lambda: ops.hessian_times(pt, v, 0.0)),
        "sparse preconditioner solve": best(lambda: ops.precondition(pt, v)),
        "symbolic analysis": best(lambda: embedding_of(p)),
    }
    return {"d": d, "entries": S, "embedding": emb.entries, "fill": emb.entries / (d * (d + 1) / 2),
            "clique": emb.clique_number, "cholesky_ms": 1e3 * chol,
            **{name: secs / chol for name, secs in pieces.items()}}


# ---------------------------------------------------------------- one cell
class _Timeout(Exception):
    pass


def exactness(res) -> dict:
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
    kkt = None
    for key, block in ref.blocks.items():
        if block["mu"] == 0.0:
            ix = np.ix_(key, key)
            kkt = max(kkt or 0.0, kkt_residual(res.covariance[ix], state.y[ix], state.lam[ix]))
    return {"ref_diff": rel_max(res.covariance, ref.covariance), "kkt": kkt}


def published_seconds(shape: str, rho: float) -> float | None:
    """The publication's mean seconds per PACE-GGM trial (its Table 4) on the data set ``shape`` imitates, if any."""
    import csv
    from importlib.util import find_spec

    # The harness's copy of the publication's tables, found without importing the figures stage.
    path = Path(find_spec("paceggm.bench.figures").origin).parent / "published" / "table4_runtime.csv"
    if not path.is_file():
        return None
    with path.open() as f:
        for rec in csv.DictReader(f):
            if rec["dataset"] == shape and float(rec["rho"]) == rho:
                return float(rec["seconds_mean"])
    return None


def published_for(shape: str, rho: float) -> float | None:
    """The publication's seconds per trial beside a cell: those of the data set a matched shape imitates
    at its own d (``hard``, ``hard_cols`` are its model at other d: none)."""
    if not at_target_size(shape):
        return None
    return published_seconds(target_of(shape), rho)


def gpu_available() -> tuple[bool, str]:
    """Whether the GPU column can run here, and why not."""
    try:
        import torch
    except ImportError:
        return False, "torch is not installed (pip install 'paceggm[gpu]')"
    if not torch.cuda.is_available():
        return False, f"torch {torch.__version__} sees no CUDA device"
    return True, f"torch {torch.__version__} on {torch.cuda.get_device_name(0)}"


def run_cell(shape: str, d: int, rho: float, *, n: int, timeout: float, reference: bool,
             solver: str = "newton", sampler: str = "gumbel") -> dict:
    """One fit, in this process, stopped after ``timeout`` seconds; the row of the results table.

    ``solver`` is a solver name, or ``name+backend`` for that solver with its
    dense kernels on an array backend; those cells are timed by the wall clock
    (the CPU only waits on the device), the others by this process's CPU time.
    """
    from paceggm import pace_ggm
    from paceggm.bench.seeds import derive_seed
    from paceggm.reconstruction.counters import Counters

    d, n = cell_size(shape, d, n)
    row = {"shape": shape, "d": d, "rho": rho, "solver": solver, "n": n, "sampler": sampler,
           "load_at_start": os.getloadavg()[0] if hasattr(os, "getloadavg") else None}
    X = _data(shape, d, n, np.random.default_rng(derive_seed("scale-data", shape, d)))
    row["chol_s"] = cholesky_seconds(d, np.random.default_rng(0))

    def stop(signum, frame):
        raise _Timeout

    name, _, backend = solver.partition("+")
    options = {"backend": backend} if backend else None
    # CPU time, not wall time: on a shared machine the limit then means the same work.
    # A backend's cell waits on its device, so there it is wall time.
    timer, sig = (signal.ITIMER_REAL, signal.SIGALRM) if backend else (signal.ITIMER_VIRTUAL, signal.SIGVTALRM)
    signal.signal(sig, stop)
    signal.setitimer(timer, timeout)
    # The rounds' updates are counted on the thread clock: while the CPU-budget timer runs, the
    # process clock advances only in scheduler ticks (measured: 0 or 5.6 ms for 0.4 ms of work).
    counters = Counters()
    t0, w0 = time.process_time(), time.perf_counter()
    try:
        with counters:
            res = pace_ggm(X, rho=rho, solver=name, solver_options=options, sampler=sampler,
                           random_state=derive_seed("scale-fit", shape, d, rho))
        signal.setitimer(timer, 0)
        row.update(status="ok", fit="finished", rounds=res.n_rounds, n_offdiagonal=res.n_offdiagonal)
    except _Timeout:
        row.update(status="ok", fit="timeout", rounds=counters.calls["reconstruction updates"], n_offdiagonal=None)
        res = None
    row["cpu_s"] = time.process_time() - t0
    row["wall_s"] = time.perf_counter() - w0
    # The reconstruction's share: what a solver changes (the rest is the mechanisms and X'X).
    row["recon_s"] = counters.seconds["reconstruction updates"]
    row["ms_per_round"] = 1e3 * row["wall_s" if backend else "cpu_s"] / max(row["rounds"], 1)
    row["round_over_cholesky"] = row["ms_per_round"] / (1e3 * row["chol_s"])
    row["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    row["published_s"] = published_for(shape, rho)
    if res is not None:
        row["largest_block"] = int(max(np.bincount(_labels(res.pattern))))
        row.update(exactness(res) if reference else {"ref_diff": None, "kkt": None})
    return row


def _labels(pattern: np.ndarray) -> np.ndarray:
    from paceggm.reconstruction import pattern_components

    labels = np.empty(pattern.shape[0], dtype=int)
    for i, c in enumerate(pattern_components(pattern)):
        labels[c] = i
    return labels


def cell_key(shape: str, d: int, rho: float, solver: str, *, n: int, timeout: float, reference: bool,
             sampler: str = "gumbel") -> str:
    """The stable, readable key of one cell: every input that changes its row."""
    d, n = cell_size(shape, d, n)
    return (f"{shape}-d{d}-rho{rho:g}-{solver}-n{n}-cpu{timeout:g}" + ("-ref" if reference else "")
            + ("" if sampler == "gumbel" else f"-{sampler}"))


def _run_isolated(shape: str, d: int, rho: float, solver: str, args) -> dict:
    """One cell in a fresh process; a crash or a non-zero exit becomes a failed row, never an exception."""
    d, n = cell_size(shape, d, args.n)
    reference = d <= args.reference_max_d
    cmd = [sys.executable, "-m", "studies.scale_benchmark", "--cell", json.dumps([shape, d, rho, solver]),
           "--n", str(n), "--timeout", str(args.timeout), "--reference-max-d", str(args.reference_max_d),
           "--sampler", args.sampler]
    # One BLAS thread per fit, whatever the sweep's own environment; run from the clone, where studies/ is.
    out = subprocess.run(cmd, capture_output=True, text=True, env=single_threaded_env(), cwd=CLONE)
    if out.returncode != 0:
        tail = (out.stderr.strip().splitlines() or [f"exit status {out.returncode}, no output"])[-1]
        row = {"shape": shape, "d": d, "rho": rho, "solver": solver, "n": n, "status": "failed", "error": tail}
    else:
        row = json.loads(out.stdout.strip().splitlines()[-1])
    row.update(cell_key=cell_key(shape, d, rho, solver, n=n, timeout=args.timeout, reference=reference,
                                 sampler=args.sampler),
               timeout=args.timeout, commit=args.commit)
    return row


def _grid_order(row: dict) -> tuple:
    return (_shape_rank(row["shape"]), row["d"], row["rho"], row.get("solver", ""), row.get("timeout", 0.0))


def default_grid_missing(rows: list[dict]) -> list[tuple]:
    """The cells of the default grid (shape, d, ρ, solver at ``n = N``) that no stored row measured."""
    have = {(r["shape"], r["d"], r["rho"], r["solver"]) for r in rows if r.get("n") == N and r["status"] == "ok"}
    return [(shape, d, rho, solver) for shape in SHAPES for d in DIMS for rho in RHOS for solver in SOLVERS_COMPARED
            if (shape, d, rho, solver) not in have]


def publish(rows: list[dict], *, tables: Path, figures: Path) -> tuple[bool, str]:
    """Copy the store's tables to the committed place if the store is the whole grid, from one commit."""
    missing = default_grid_missing(rows)
    commits = sorted({r.get("commit", "unknown") for r in rows})
    if missing:
        return False, (f"not published: {len(missing)} of the default grid's "
                       f"{len(SHAPES) * len(DIMS) * len(RHOS) * len(SOLVERS_COMPARED)} cells are not in the store "
                       f"(first: {missing[0]}); {tables / 'scale_benchmark.md'} left as it was")
    if len(commits) > 1:
        return False, (f"not published: the store holds rows of {len(commits)} commits ({', '.join(commits)}); "
                       "rerun the stale cells (--rerun) so that one commit measured the whole table")
    write_outputs(rows, tables=tables, figures=figures)
    return True, f"published {len(rows)} cells -> {tables / 'scale_benchmark.md'}"


# ---------------------------------------------------------------- tables and plot
def _fmt(v, spec: str) -> str:
    return "—" if v is None else format(v, spec)


def _status(row: dict) -> str:
    return row.get("fit", "—") if row["status"] == "ok" else f"error: {row.get('error', '')}"


def _commits(rows: list[dict]) -> str:
    def short(commit: str) -> str:  # the hash shortened, "+dirty" kept
        head, plus, tail = commit.partition("+")
        return head[:12] + plus + tail

    return ", ".join(sorted({short(str(r.get("commit", "unknown"))) for r in rows})) or "—"


def _markdown(rows: list[dict], machine: str) -> str:
    from paceggm.reconstruction.auto import BACKEND_MIN_D

    lines = [
        "# PACE-GGM at scale (`make bench-scale`)",
        "",
        f"Machine: {machine}. Code: commit {_commits(rows)}. One BLAS thread; CPU seconds of the fit "
        "(data generation excluded); a fit stopped at its CPU budget (`budget s`) is marked *timeout* with the "
        "rounds done by then. "
        "`round / Cholesky`: CPU seconds per round over one dense d × d Cholesky (LAPACK dpotrf) timed in "
        "the same process. `peak MB`: the process's peak resident memory, the data included. "
        "`vs reference`: largest difference from the same measurements reconstructed from scratch by the "
        "cold Newton continuation of the reference solver `newton`, relative to the largest entry; `KKT`: on "
        "the blocks where the answer is the exact limit, max(|W − y| on the pattern, |W⁻¹| off it), each "
        "relative to its largest entry (— : not computed at that d, or no exact block). `recon s`: the CPU "
        "seconds of the fit spent updating the reconstruction (solver and its bookkeeping), the part a solver "
        "changes; the rest is the mechanisms and the data's covariance. `published s`: on the shapes matched to a "
        "data set of the publication, its mean seconds per PACE-GGM trial there (Table 4, IPM-Cholesky, its "
        "own machine). `wall s`: wall-clock seconds of the fit; on the GPU column (solver `auto+torch`: the default "
        f"solver with its blocks of >= {BACKEND_MIN_D} variables on a GPU through torch) the budget, and "
        "`ms / round`, are wall-clock seconds.",
        "",
        "| shape | d | ρ | solver | budget s | status | rounds | \\|S\\| | largest block | CPU s | wall s | recon s "
        "| ms / round | round / Cholesky | peak MB | vs reference | KKT | published s |",
        "|---|---:|---:|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['shape']} | {r['d']} | {r['rho']:g} | {r.get('solver', '—')} | {_fmt(r.get('timeout'), 'g')} "
            f"| {_status(r)} | {r.get('rounds', '—')} "
            f"| {_fmt(r.get('n_offdiagonal'), 'd')} | {_fmt(r.get('largest_block'), 'd')} "
            f"| {_fmt(r.get('cpu_s'), '.1f')} | {_fmt(r.get('wall_s'), '.1f')} | {_fmt(r.get('recon_s'), '.1f')} "
            f"| {_fmt(r.get('ms_per_round'), '.1f')} "
            f"| {_fmt(r.get('round_over_cholesky'), '.1f')} | {_fmt(r.get('peak_rss_mb'), '.0f')} "
            f"| {_fmt(r.get('ref_diff'), '.1e')} | {_fmt(r.get('kkt'), '.1e')} | {_fmt(r.get('published_s'), 'g')} |")
    lines += _default_vs_best_markdown(rows)
    return "\n".join(lines) + "\n"


def default_vs_best(rows: list[dict]) -> list[dict]:
    """Per cell (shape, d, ρ): the default solver's CPU seconds beside the fastest exact solver's.

    A fit stopped at its budget counts as taking longer than the budget; a cell where every solver
    was stopped has no ratio. ``within`` is whether the default took at most 1.2× the best.
    """
    by_cell: dict[tuple, dict[str, dict]] = {}
    for r in rows:
        if r["status"] == "ok" and "+" not in r.get("solver", ""):  # the GPU column is not a CPU solver
            by_cell.setdefault((r["shape"], r["d"], r["rho"]), {})[r.get("solver", "newton")] = r
    out = []
    for (shape, d, rho), cell in sorted(by_cell.items(), key=lambda kv: (_shape_rank(kv[0][0]), *kv[0][1:])):
        default = cell.get(DEFAULT_SOLVER)
        exact = [cell[s] for s in EXACT_SOLVERS if s in cell]
        if default is None or not exact:
            continue

        def cost(r):  # a stopped fit: "more than its budget"
            return float("inf") if r.get("fit") == "timeout" else r["cpu_s"]

        best = min(exact, key=cost)
        ratio = cost(default) / cost(best) if np.isfinite(cost(best)) else None
        out.append({"shape": shape, "d": d, "rho": rho, "default_s": default["cpu_s"],
                    "default_fit": default.get("fit"), "best": best["solver"], "best_s": best["cpu_s"],
                    "best_fit": best.get("fit"), "ratio": ratio,
                    "within": None if ratio is None else bool(ratio <= 1.2)})
    return out


def _default_vs_best_markdown(rows: list[dict]) -> list[str]:
    cells = default_vs_best(rows)
    if not cells:
        return []
    decided = [c for c in cells if c["within"] is not None]
    lines = [
        "",
        f"## The default solver (`{DEFAULT_SOLVER}`) against the fastest exact solver",
        "",
        f"Per cell, the CPU seconds of the default fit beside the fastest of {', '.join(EXACT_SOLVERS)} on the "
        "same cell (a fit stopped at its budget counts as slower than any that finished; where every solver "
        "was stopped there is no ratio). "
        f"The default is within 20 % of the best in {sum(c['within'] for c in decided)} of {len(decided)} cells.",
        "",
        "| shape | d | ρ | default CPU s | fastest exact | its CPU s | default ÷ fastest | within 20 % |",
        "|---|---:|---:|---:|---|---:|---:|---|",
    ]
    for c in cells:
        def secs(v, fit):
            return f"{v:.1f}" + (" (timeout)" if fit == "timeout" else "")

        lines.append(f"| {c['shape']} | {c['d']} | {c['rho']:g} | {secs(c['default_s'], c['default_fit'])} "
                     f"| {c['best']} | {secs(c['best_s'], c['best_fit'])} | {_fmt(c['ratio'], '.2f')} "
                     f"| {'—' if c['within'] is None else ('yes' if c['within'] else '**no**')} |")
    return lines


def _latex(rows: list[dict], machine: str) -> str:
    out = [f"% PACE-GGM at scale (make bench-scale); {machine}; one BLAS thread, CPU seconds.",
           "\\begin{tabular}{lrrllrrrrrrr}", "\\toprule",
           "shape & $d$ & $\\rho$ & solver & status & rounds & $|S|$ & CPU s & ms/round & round/Cholesky & peak MB "
           "& vs reference \\\\", "\\midrule"]
    for r in rows:
        solver = r.get("solver", "---").replace("_", "\\_")
        out.append(
            f"{r['shape']} & {r['d']} & {r['rho']:g} & {solver} & {_status(r).split(':')[0]} "
            f"& {r.get('rounds', '---')} "
            f"& {_fmt(r.get('n_offdiagonal'), 'd')} & {_fmt(r.get('cpu_s'), '.1f')} "
            f"& {_fmt(r.get('ms_per_round'), '.1f')} & {_fmt(r.get('round_over_cholesky'), '.1f')} "
            f"& {_fmt(r.get('peak_rss_mb'), '.0f')} & {_fmt(r.get('ref_diff'), '.1e')} \\\\".replace("—", "---"))
    out += ["\\bottomrule", "\\end{tabular}"]
    return "\n".join(out) + "\n"


def plot(rows: list[dict], path: Path) -> None:
    """Seconds per round and one Cholesky against d, from the results rows only, in the figures' style
    (:mod:`paceggm.bench.figures.style`: its fonts, widths and colour-blind-safe palette; shape by colour
    and marker, ρ by line style, so the figure reads in grayscale)."""
    import matplotlib as mpl
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from paceggm.bench.figures import style
    from paceggm.bench.methods import PALETTE

    ok = [r for r in rows if r["status"] == "ok"]
    solvers = sorted({r.get("solver", "newton") for r in ok}) or ["newton"]
    looks = dict(zip(SHAPES, ((PALETTE["orange"], "o"), (PALETTE["blue"], "s"), (PALETTE["green"], "D"))))
    lines = dict(zip(RHOS, ("-", "--")))
    chol = sorted((d, 1e3 * float(np.median([r["chol_s"] for r in ok if r["d"] == d]))) for d in {r["d"] for r in ok})
    with mpl.rc_context(style.RC):
        fig = Figure(figsize=(style.FULL_WIDTH, 2.7), layout="constrained")
        FigureCanvasAgg(fig)
        axes = fig.subplots(1, len(solvers), sharey=True, squeeze=False)[0]
        for ax, solver in zip(axes, solvers):
            for shape in SHAPES:
                colour, marker = looks.get(shape, (PALETTE["grey"], "^"))
                for rho in sorted({r["rho"] for r in ok}):
                    pts = sorted((r["d"], r["ms_per_round"]) for r in ok if r["shape"] == shape and r["rho"] == rho
                                 and r.get("solver", "newton") == solver)
                    if pts:
                        ax.plot(*zip(*pts), color=colour, marker=marker, linestyle=lines.get(rho, ":"),
                                markerfacecolor="white", label=f"{shape}, ρ = {rho:g}")
            if chol:
                ax.plot(*zip(*chol), color=PALETTE["black"], lw=1.6, label="one d × d Cholesky")
            ax.set(xscale="log", yscale="log", xlabel="d", title=f"solver {solver}")
            ax.grid(True, which="major")
        axes[0].set_ylabel("CPU ms per round\n(timeouts: rounds done)")
        handles, labels = axes[0].get_legend_handles_labels()
        fig.legend(handles, labels, loc="outside right center", frameon=False)
        for suffix in (".pdf", ".png"):
            fig.savefig(path.with_suffix(suffix), metadata={"CreationDate": None} if suffix == ".pdf" else None)


def write_outputs(rows: list[dict], *, tables: Path, figures: Path) -> None:
    """The JSON, Markdown and LaTeX tables and the plot of ``rows`` (all of a store's rows)."""
    rows = sorted(rows, key=_grid_order)
    machine = "; ".join(sorted({r.get("machine", "unknown") for r in rows}))
    tables.mkdir(parents=True, exist_ok=True)
    figures.mkdir(parents=True, exist_ok=True)
    (tables / "scale_benchmark.json").write_text(json.dumps({"machine": machine, "rows": rows}, indent=1) + "\n")
    (tables / "scale_benchmark.md").write_text(_markdown(rows, machine))
    (tables / "scale_benchmark.tex").write_text(_latex(rows, machine))
    plot(rows, figures / "scale_benchmark")


def _machine() -> str:
    return (f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
            f"Python {platform.python_version()}, NumPy {np.__version__}")


def _floats(text: str) -> list[float]:
    return [float(v) for v in text.split(",") if v]


def _store_rows(store) -> list[dict]:
    scan = store.scan()
    for bad in scan.corrupt:
        print(f"corrupt cell file ignored (it is recomputed when its cell is swept): {bad.path}: {bad.reason}",
              file=sys.stderr)
    return list(scan.rows.values())



def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dims", type=lambda s: [int(v) for v in _floats(s)], default=list(DIMS))
    ap.add_argument("--rhos", type=_floats, default=list(RHOS))
    ap.add_argument("--shapes", type=lambda s: s.split(","), default=list(SHAPES))
    ap.add_argument("--n", type=int, default=N, help="records per data set")
    ap.add_argument("--solvers", type=lambda s: s.split(","), default=None,
                    help=f"default: {','.join(SOLVERS_COMPARED)} ({','.join(SCALE_ROWS_SOLVERS)} with --scale-rows)")
    ap.add_argument("--timeout", type=float, default=TIMEOUT, help="CPU seconds per fit (part of a cell's key)")
    ap.add_argument("--reference-max-d", type=int, default=400,
                    help="compare with the from-scratch reference up to this d")
    ap.add_argument("--store", type=Path, default=STORE, help="the results store (one file per cell)")
    ap.add_argument("--rerun", action="store_true",
                    help="recompute the swept cells even if the store holds them from the current commit")
    ap.add_argument("--jobs", type=int, default=1,
                    help="cells run at once, each in its own one-thread process (CPU seconds are per process)")
    ap.add_argument("--publish", action="store_true",
                    help="then copy the store's tables and plot to --tables/--figures, if the store holds the "
                         "whole default grid measured by one commit")
    ap.add_argument("--tables", type=Path, default=TABLES)
    ap.add_argument("--figures", type=Path, default=FIGURES)
    ap.add_argument("--hard", action="store_true",
                    help="run the hard shapes (indian_pines- and madeline-like at their n and d, rho in --rhos; "
                         f"'hard' at d in {','.join(map(str, HARD_DIMS))} and 'hard_cols' at d in "
                         f"{','.join(map(str, HARD_COLS_DIMS))}, rho in "
                         f"{','.join(f'{r:g}' for r in HARD_RHOS)}) instead of the default grid")
    ap.add_argument("--scale-rows", action="store_true",
                    help=f"run the sparse-pattern solver's rows: hard_cols at d in {','.join(map(str, SCALE_ROWS_DIMS))} "
                         f"and the factor shapes (k in {','.join(map(str, FACTOR_COUNTS))}, seeds "
                         f"{','.join(map(str, FACTOR_SEEDS))}) at d = {FACTOR_D}, rho in "
                         f"{','.join(f'{r:g}' for r in HARD_RHOS)}, with the solvers given (default: "
                         f"{','.join(SCALE_ROWS_SOLVERS)}) instead of the default grid")
    ap.add_argument("--sampler", default="gumbel", choices=("gumbel", "rows"),
                    help="the exponential mechanism's sampler (part of a cell's key when not the default)")
    ap.add_argument("--gpu", choices=("off", "auto"), default="off",
                    help=f"auto: add the GPU column (solver {GPU_SOLVER}) where torch with CUDA imports")
    ap.add_argument("--kernels", type=lambda s: [int(v) for v in _floats(s)], metavar="D,D,...",
                    help="print the Newton kernels' costs of the dense and the chordal path, in dense Choleskys, "
                         "on sparse patterns at these d (kernel_costs; --kernels-per-row entries a row), and exit")
    ap.add_argument("--kernels-per-row", type=float, default=1.5)
    ap.add_argument("--cell", help=argparse.SUPPRESS)
    return ap


def _grid(args) -> list[tuple]:
    """The (shape, d, rho, solver) cells a sweep asks for: the hard shapes with --hard, the sparse-pattern
    rows with --scale-rows, else the grid given."""
    if args.scale_rows:
        shapes = [("hard_cols", d) for d in SCALE_ROWS_DIMS]
        shapes += [(factor_shape(k, seed), FACTOR_D) for k in FACTOR_COUNTS for seed in FACTOR_SEEDS]
        return [(shape, d, rho, solver) for shape, d in shapes for rho in HARD_RHOS for solver in args.solvers]
    if args.hard:
        grid = [(shape, cell_size(shape, 0, args.n)[0], rho, solver)
                for shape in ("indian_pines", "madeline", "indian_pines_cols")
                for rho in args.rhos for solver in args.solvers]
        return grid + [(shape, d, rho, solver) for shape, dims in (("hard", HARD_DIMS), ("hard_cols", HARD_COLS_DIMS))
                       for d in dims for rho in HARD_RHOS for solver in args.solvers]
    return [(shape, *cell_size(shape, d, args.n)[:1], rho, solver) for shape in args.shapes
            for d in args.dims for rho in args.rhos for solver in args.solvers]


def _reusable(stored: dict, cell: tuple, args) -> bool:
    """Whether the store holds ``cell`` finished by this very commit (and --rerun is not given).

    Only a clean commit identifies the code that measured a row; anything else is measured again.
    """
    shape, d, rho, solver = cell
    if args.rerun or args.commit.endswith("+dirty") or args.commit == "unknown":
        return False
    old = stored.get(cell_key(shape, d, rho, solver, n=args.n, timeout=args.timeout,
                              reference=d <= args.reference_max_d, sampler=args.sampler))
    return old is not None and old["status"] == "ok" and old.get("commit") == args.commit


def main(argv=None) -> int:
    from paceggm.bench.config import _git_commit
    from paceggm.bench.store import RunStore

    ap = _parser()
    args = ap.parse_args(argv)
    if args.solvers is None:
        args.solvers = list(SCALE_ROWS_SOLVERS if args.scale_rows else SOLVERS_COMPARED)
    if args.kernels:
        for d in args.kernels:
            print(json.dumps({k: round(v, 4) if isinstance(v, float) else v
                              for k, v in kernel_costs(d, args.kernels_per_row).items()}), flush=True)
        return 0
    if args.cell:
        shape, d, rho, solver = json.loads(args.cell)
        row = run_cell(shape, int(d), float(rho), n=args.n, timeout=args.timeout,
                       reference=int(d) <= args.reference_max_d, solver=solver, sampler=args.sampler)
        print(json.dumps(row))
        return 0
    for shape in args.shapes:
        if shape not in ALL_SHAPES:
            ap.error(f"unknown shape {shape!r}; choose from {','.join(ALL_SHAPES)}")
    if args.jobs < 1:
        ap.error("--jobs must be at least 1")
    if args.gpu == "auto" and GPU_SOLVER not in args.solvers:
        ok, why = gpu_available()
        print(f"GPU column ({GPU_SOLVER}): {'on, ' if ok else 'skipped: '}{why}", file=sys.stderr)
        if ok:
            args.solvers = [*args.solvers, GPU_SOLVER]
    args.commit = _git_commit()
    machine = _machine()
    store = RunStore(args.store)
    failed = 0
    with store.lock():
        stored = {r["cell_key"]: r for r in _store_rows(store)}
        grid = _grid(args)
        todo = [cell for cell in grid if not _reusable(stored, cell, args)]
        print(f"{len(grid) - len(todo)} of {len(grid)} cells already in {store.root} from this commit; "
              f"running {len(todo)}", file=sys.stderr)

        def one(cell):
            row = _run_isolated(*cell, args)
            row["machine"] = machine
            return row

        with ThreadPoolExecutor(max_workers=args.jobs) as pool:
            for future in as_completed([pool.submit(one, cell) for cell in todo]):
                row = future.result()
                store.write_cell(row)  # at once: an interrupted sweep keeps every finished cell
                failed += row["status"] != "ok"
                print(json.dumps(row), flush=True)
                stored[row["cell_key"]] = row
                # Redrawn after every cell, so the store's tables are current if the sweep is stopped.
                write_outputs(list(stored.values()), tables=store.root, figures=store.root)
        rows = list(stored.values())
        if rows and not todo:
            write_outputs(rows, tables=store.root, figures=store.root)
    if args.publish:
        _, message = publish(rows, tables=args.tables, figures=args.figures)
        print(message, file=sys.stderr)
    return int(failed > 0)


if __name__ == "__main__":
    sys.exit(main())

"""PACE-GGM's dense kernels on a GPU against the default CPU fit: agreement, then time.

Run ``python -m studies.gpu_bench --out DIR`` on a machine with a GPU
and torch (``pip install "paceggm[gpu]"``); ``--backend numpy --quick`` runs
the same code path on the CPU (how it is tested without an accelerator). It
needs only the library (no Hydra, no baselines) and writes ``gpu_bench.json``
and ``gpu_bench.md`` into ``--out``.

1. **Agreement** (d <= 400): the same fits (data, seed, sampler) with the
   default CPU solver (``auto``: Newton-PCG) and with every block on the
   backend (``newton_xp``): the same selected entries in the same order, and
   the largest difference of the estimates relative to their largest entry,
   which must be within the exact solvers' tolerance (3.5e-9).
2. **A Newton step** at block sizes ``d_b`` (pattern of ``3 d_b`` entries):
   factor ``P``, invert, gather and factor the Hessian, solve, on one CPU core
   (the ``numpy`` backend) and on the backend: where the backend starts to pay,
   which sets ``auto``'s ``backend_min_d``.
3. **Whole fits**, default CPU fit (one BLAS thread, in parallel worker
   processes) against the GPU fit (``auto`` with the backend), same data, seed
   and sampler (``rows``, the O(d) sampler, so that selection is not the
   bottleneck at d = 4,000): low-rank d = 400 at ρ = 10, the hard shape
   (indian_pines's statistics) at d = 1,000 and 4,000 at ρ = 10. Each fit has a
   wall-clock budget; the table compares the time to the same round where one
   of the two stopped early, and reports rounds and total seconds.

On a 16-core machine with one GPU the whole run takes about 5 minutes (the
budgets above bound it: at most 6 × 25 s of agreement fits, 215 s of GPU fits,
while the CPU fits run beside them).

``--sections`` runs only some of the three; ``--fits`` replaces the whole fits
by ``shape:d:rho:budget`` cells. The low-rank fits where a block of hundreds of
variables grows (d = 800 and 1,000) and the one where it does not (d = 4,000),
with a 250 s budget each::

    python -m studies.gpu_bench --sections fits \
        --fits lowrank:800:10:250,lowrank:1000:10:250,lowrank:4000:10:250
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import platform
import signal
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

TOLERANCE = 3.5e-9
SECTIONS = ("agreement", "steps", "fits")
#: Records per data set: the hard shape has indian_pines's n (the matched shapes their target's).
N = {"hard": 9144}
N_DEFAULT = 20_000


class _Budget(Exception):
    pass


def _data(shape: str, d: int, n: int):
    import numpy as np

    from paceggm.bench.seeds import derive_seed
    from studies._common import cell_size, synthetic

    d, n = cell_size(shape, d, n)
    return synthetic(shape, d, n, np.random.default_rng(derive_seed("scale-data", shape, d)))


def fit(shape: str, d: int, n: int, rho: float, *, solver: str, options: dict | None, sampler: str,
        budget: float, threads: int | None = None) -> dict:
    """One fit under a wall-clock budget: rounds, seconds, the seconds at each round, selections and estimate."""
    if threads is not None:
        from threadpoolctl import threadpool_limits

        threadpool_limits(threads)
    from paceggm import estimator, pace_ggm
    from paceggm.bench.seeds import derive_seed

    X = _data(shape, d, n)
    stamps: list[float] = []

    class Stamped(estimator.IncrementalReconstruction):
        def update(self, j, k):
            out = super().update(j, k)
            stamps.append(time.perf_counter() - t0)
            return out

    def stop(signum, frame):
        raise _Budget

    old = signal.signal(signal.SIGALRM, stop)
    signal.setitimer(signal.ITIMER_REAL, budget)
    original = estimator.IncrementalReconstruction
    estimator.IncrementalReconstruction = Stamped
    t0 = time.perf_counter()
    res = None
    try:
        res = pace_ggm(X, rho=rho, solver=solver, solver_options=options, sampler=sampler,
                       random_state=derive_seed("scale-fit", shape, X.shape[1], rho))
    except _Budget:
        pass
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
        estimator.IncrementalReconstruction = original
    seconds = time.perf_counter() - t0
    out = {"shape": shape, "d": X.shape[1], "n": X.shape[0], "rho": rho, "solver": solver, "options": options,
           "sampler": sampler, "finished": res is not None, "rounds": len(stamps), "seconds": seconds,
           "stamps": stamps}
    if res is not None:
        out["entries"] = [list(r.entry) for r in res.history]
        out["covariance"] = res.covariance
        out["largest_block"] = int(max(len(c) for c in _components(res.pattern)))
        out["n_offdiagonal"] = int(res.n_offdiagonal)
    return out


def _components(pattern):
    from paceggm.reconstruction import pattern_components

    return pattern_components(pattern)


def agreement(cells, backend: str, budget: float) -> list[dict]:
    import numpy as np

    rows = []
    for shape, d, n, rho in cells:
        try:
            cpu = fit(shape, d, n, rho, solver="auto", options=None, sampler="gumbel", budget=budget, threads=1)
            dev = fit(shape, d, n, rho, solver="newton_xp", options={"backend": backend}, sampler="gumbel",
                      budget=budget)
        except Exception as exc:  # noqa: BLE001 - recorded, and the next cell runs
            rows.append({"shape": shape, "d": d, "rho": rho, "error": repr(exc), "cpu_s": 0.0, "device_s": 0.0,
                         "rounds": 0, "finished": False})
            print(json.dumps(rows[-1]), flush=True)
            continue
        row = {"shape": shape, "d": cpu["d"], "rho": rho, "cpu_s": cpu["seconds"], "device_s": dev["seconds"],
               "finished": cpu["finished"] and dev["finished"], "rounds": cpu["rounds"]}
        if row["finished"]:
            a, b = cpu["covariance"], dev["covariance"]
            row["same_selection"] = cpu["entries"] == dev["entries"]
            row["difference"] = float(np.max(np.abs(a - b)) / np.max(np.abs(a)))
            row["agrees"] = row["same_selection"] and row["difference"] <= TOLERANCE
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows


def newton_step(d_b: int, backend: str, repeat: int = 3) -> float:
    """Seconds of one dense Newton step (factor, invert, Hessian, solve) at block size ``d_b`` on ``backend``."""
    import numpy as np

    from paceggm.reconstruction.backend import get_backend
    from paceggm.reconstruction.newton_xp import _DevicePattern
    from paceggm.reconstruction.problem import make_problem

    rng = np.random.default_rng(d_b)
    G = rng.normal(size=(d_b, d_b + 5))
    S = G @ G.T / (d_b + 5)
    lam = np.eye(d_b)
    rows = rng.integers(1, d_b, size=2 * d_b)
    cols = (rows * rng.uniform(size=rows.size)).astype(int)
    lam[rows, cols] = lam[cols, rows] = 1.0
    prob = make_problem(np.where(lam > 0, S, 0.0), lam, scale=1.0, lam_unit=1.0)
    be = get_backend(backend)
    pat = _DevicePattern(prob, be)
    x = be.asarray(np.where(prob.rows == prob.cols, 1.0 / np.diag(S)[prob.rows], 0.0))
    best = np.inf
    for _ in range(repeat):
        be.synchronize()
        t0 = time.perf_counter()
        L = pat.factor(x)
        W = be.cho_inverse(L)
        pat.direction(x, W, 1e-3)
        be.synchronize()
        best = min(best, time.perf_counter() - t0)
    return best


def _time_at(stamps: list[float], rounds: int) -> float | None:
    return stamps[rounds - 1] if 0 < rounds <= len(stamps) else None


def _plan(args) -> tuple[list, float, tuple, list]:
    """The agreement cells and their budget, the Newton-step sizes and the whole fits the sections ask for."""
    if args.quick:
        agree_cells = [("lowrank", 40, 5000, 1.0), ("block", 60, 5000, 10.0)]
        steps = (50, 100)
        fits = [("lowrank", 60, 5000, 10.0, 20.0), ("hard", 80, 9144, 10.0, 20.0)]
        agree_budget = 60.0
    else:
        agree_cells = [("lowrank", 100, 20000, 1.0), ("indian_pines", 0, 0, 1.0), ("lowrank", 400, 20000, 1.0)]
        steps = (100, 200, 400, 800)
        fits = [("lowrank", 400, 20000, 10.0, 45.0), ("hard", 1000, 9144, 10.0, 70.0),
                ("hard", 4000, 9144, 10.0, 100.0)]
        agree_budget = 25.0
    if args.fits is not None:
        fits = args.fits
    if "agreement" not in args.sections:
        agree_cells = []
    if "steps" not in args.sections:
        steps = ()
    if "fits" not in args.sections:
        fits = []
    return agree_cells, agree_budget, steps, fits


def _paired_row(cpu: dict, dev: dict) -> dict:
    """One whole fit on the CPU and on the device, compared at the last round both reached."""
    import numpy as np

    common = min(cpu["rounds"], dev["rounds"])
    row = {"shape": dev["shape"], "d": dev["d"], "n": dev["n"], "rho": dev["rho"],
           "errors": [x["error"] for x in (cpu, dev) if "error" in x],
           "cpu_rounds": cpu["rounds"], "cpu_s": cpu["seconds"], "cpu_finished": cpu["finished"],
           "gpu_rounds": dev["rounds"], "gpu_s": dev["seconds"], "gpu_finished": dev["finished"],
           "common_rounds": common, "cpu_s_common": _time_at(cpu["stamps"], common),
           "gpu_s_common": _time_at(dev["stamps"], common),
           "largest_block": dev.get("largest_block"), "n_offdiagonal": dev.get("n_offdiagonal")}
    if row["cpu_s_common"] and row["gpu_s_common"]:
        row["speedup_common"] = row["cpu_s_common"] / row["gpu_s_common"]
    if cpu["finished"] and dev["finished"]:
        row["same_selection"] = cpu["entries"] == dev["entries"]
        row["difference"] = float(np.max(np.abs(cpu["covariance"] - dev["covariance"]))
                                  / np.max(np.abs(cpu["covariance"])))
    return row


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--backend", default="torch", help="array backend of the GPU fits (torch, torch:cuda, cupy)")
    ap.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", "runs/gpu")))
    ap.add_argument("--quick", action="store_true", help="small sizes and budgets (a CPU check of the script)")
    ap.add_argument("--backend-min-d", type=int, default=None,
                    help="auto's backend_min_d for the GPU fits (default: the library's)")
    ap.add_argument("--sections", type=_sections, default=list(SECTIONS),
                    help=f"which of {','.join(SECTIONS)} to run (comma-separated; default all)")
    ap.add_argument("--fits", type=_fit_cells, default=None,
                    help="the whole fits, as shape:d:rho:budget_s,... (replaces the default list)")
    args = ap.parse_args(argv)
    import numpy as np

    from paceggm.reconstruction.auto import BACKEND_MIN_D
    from paceggm.reconstruction.backend import get_backend

    be = get_backend(args.backend)
    args.out.mkdir(parents=True, exist_ok=True)
    min_d = args.backend_min_d if args.backend_min_d is not None else BACKEND_MIN_D
    agree_cells, agree_budget, steps, fits = _plan(args)
    started = time.perf_counter()
    report = {"machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
                         f"Python {platform.python_version()}, NumPy {np.__version__}",
              "backend": be.name, "backend_min_d": min_d, "tolerance": TOLERANCE}
    if be.name.startswith("torch"):
        report["device"] = (be.torch.cuda.get_device_name(0) if be.device.type == "cuda" else "cpu")
        report["torch"] = be.torch.__version__
    # The matched shapes' models are fitted once here, not in every worker.
    from studies._common import matched_params

    matched_params("indian_pines")

    # The CPU fits run in worker processes (one BLAS thread each) while this process drives the GPU.
    os.environ.update(OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    # Spawned, not forked: this process may already hold a GPU context.
    with ProcessPoolExecutor(max_workers=max(len(fits), 1), mp_context=multiprocessing.get_context("spawn")) as pool:
        cpu_jobs = [pool.submit(fit, shape, d, n, rho, solver="auto", options=None, sampler="rows", budget=budget,
                                threads=1) for shape, d, n, rho, budget in fits]
        report["agreement"] = agreement(agree_cells, args.backend, agree_budget)
        report["newton_step"] = []
        _write(args.out, report)
        for d_b in steps:
            cpu = _in_one_thread(newton_step, d_b, "numpy")
            dev = newton_step(d_b, args.backend)
            report["newton_step"].append({"d_b": d_b, "cpu_s": cpu, "device_s": dev, "speedup": cpu / dev})
            print(json.dumps(report["newton_step"][-1]), flush=True)
        _write(args.out, report)
        report["fits"] = []
        gpu_runs = []
        for shape, d, n, rho, budget in fits:
            try:
                gpu_runs.append(fit(shape, d, n, rho, solver="auto", sampler="rows", budget=budget,
                                    options={"backend": args.backend, "backend_min_d": min_d}))
            except Exception as exc:  # noqa: BLE001 - recorded, and the next fit runs
                gpu_runs.append({"shape": shape, "d": d, "n": n, "rho": rho, "error": repr(exc), "rounds": 0,
                                 "seconds": 0.0, "finished": False, "stamps": []})
            print(json.dumps({k: v for k, v in gpu_runs[-1].items() if k in ("shape", "d", "rounds", "seconds", "error")}),
                  flush=True)
        for job, dev in zip(cpu_jobs, gpu_runs):
            try:
                cpu = job.result()
            except Exception as exc:  # noqa: BLE001
                cpu = {"error": repr(exc), "rounds": 0, "seconds": 0.0, "finished": False, "stamps": []}
            row = _paired_row(cpu, dev)
            report["fits"].append(row)
            print(json.dumps(row), flush=True)
    report["seconds"] = time.perf_counter() - started
    _write(args.out, report)
    print(markdown(report))
    failed = [r for r in report.get("agreement", []) if r.get("finished") and not r.get("agrees")]
    return int(bool(failed))


def _sections(text: str) -> list[str]:
    names = [v for v in text.split(",") if v]
    unknown = sorted(set(names) - set(SECTIONS))
    if unknown or not names:
        raise argparse.ArgumentTypeError(f"sections must be among {','.join(SECTIONS)}, got {text!r}")
    return names


def _fit_cells(text: str) -> list[tuple]:
    """``shape:d:rho:budget,...`` -> ``(shape, d, n, rho, budget)`` cells (n by shape)."""
    from studies._common import ALL_SHAPES

    cells = []
    for spec in (v for v in text.split(",") if v):
        parts = spec.split(":")
        try:
            shape, d, rho, budget = parts[0], int(parts[1]), float(parts[2]), float(parts[3])
        except (IndexError, ValueError):
            raise argparse.ArgumentTypeError(f"a fit is shape:d:rho:budget_s, got {spec!r}") from None
        if shape not in ALL_SHAPES or len(parts) != 4 or d < 0 or rho <= 0 or budget <= 0:
            raise argparse.ArgumentTypeError(f"bad fit {spec!r}: shape in {','.join(ALL_SHAPES)}, d >= 0, "
                                             "rho > 0, budget > 0")
        cells.append((shape, d, N.get(shape, N_DEFAULT), rho, budget))
    if not cells:
        raise argparse.ArgumentTypeError("--fits needs at least one fit")
    return cells


def _write(out: Path, report: dict) -> None:
    """The report so far (a later failure leaves what was measured)."""
    (out / "gpu_bench.json").write_text(json.dumps(report, indent=1, default=float) + "\n")
    (out / "gpu_bench.md").write_text(markdown(report))


def _in_one_thread(func, *args):
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1):
        return func(*args)


def _f(v, spec: str) -> str:
    return "—" if v is None else format(v, spec)


def markdown(report: dict) -> str:
    """The report's tables; a section not run (or not reached) is left out."""
    agreement, steps, fits = (report.get(k) or [] for k in ("agreement", "newton_step", "fits"))
    lines = ["# PACE-GGM on a GPU (`python -m studies.gpu_bench`)", "",
             f"Machine: {report['machine']}; backend {report['backend']} ({report.get('device', '')}); "
             f"auto sends blocks of >= {report['backend_min_d']} variables to it. Wall-clock seconds. "
             f"CPU fits: the default solver (`auto`: Newton-PCG), one BLAS thread."]
    if agreement:
        lines += ["", "## Agreement (default CPU fit against every block on the backend, `newton_xp`)", "",
                  "| shape | d | ρ | rounds | same selection | largest difference | agrees (≤ "
                  f"{report['tolerance']:g}) | CPU s | backend s |", "|---|---:|---:|---:|---|---:|---|---:|---:|"]
    for r in agreement:
        lines.append(f"| {r['shape']} | {r['d']} | {r['rho']:g} | {r['rounds']} | {r.get('same_selection', '—')} "
                     f"| {_f(r.get('difference'), '.1e')} | {r.get('agrees', 'not finished')} | {r['cpu_s']:.1f} "
                     f"| {r['device_s']:.1f} |")
    if steps:
        lines += ["", "## One dense Newton step (factor P, invert, Hessian, solve; |S| = 3 d_b)", "",
                  "| d_b | one CPU core ms | backend ms | speed-up |", "|---:|---:|---:|---:|"]
    for r in steps:
        lines.append(f"| {r['d_b']} | {1e3 * r['cpu_s']:.2f} | {1e3 * r['device_s']:.2f} | {r['speedup']:.1f} |")
    if fits:
        lines += ["", "## Whole fits, sampler `rows` (default CPU fit against `auto` with the backend)", "",
                  "| shape | d | n | ρ | CPU rounds (finished) | CPU s | GPU rounds (finished) | GPU s | common rounds "
                  "| CPU s to them | GPU s to them | speed-up | same selection | difference | largest block |",
                  "|---|---:|---:|---:|---|---:|---|---:|---:|---:|---:|---:|---|---:|---:|"]
    for r in fits:
        lines.append(
            f"| {r['shape']} | {r['d']} | {r['n']} | {r['rho']:g} | {r['cpu_rounds']} ({r['cpu_finished']}) "
            f"| {r['cpu_s']:.1f} | {r['gpu_rounds']} ({r['gpu_finished']}) | {r['gpu_s']:.1f} | {r['common_rounds']} "
            f"| {_f(r['cpu_s_common'], '.1f')} | {_f(r['gpu_s_common'], '.1f')} | {_f(r.get('speedup_common'), '.2f')} "
            f"| {r.get('same_selection', '—')} | {_f(r.get('difference'), '.1e')} | {_f(r.get('largest_block'), 'd')} |")
    errors = [f"- {r['shape']} d = {r['d']}: {e}" for r in fits for e in r.get("errors", [])]
    errors += [f"- agreement {r['shape']} d = {r['d']}: {r['error']}" for r in agreement if "error" in r]
    if errors:
        lines += ["", "Errors:", *errors]
    lines += ["", f"Total {report['seconds']:.0f} s." if "seconds" in report else "(run not finished)"]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())

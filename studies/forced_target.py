"""Is PACE-GGM regression's gap to AdaSSP y's row going unmeasured? Force the row in, and see.

PACE-GGM regression estimates ``θ`` from its covariance of ``[X, y]``; its selection rarely measures
y's cross-covariances ``Σ_xy``, so the completion leaves y nearly independent of the features. This
study runs the ``regression`` recipe's AdaSSP and PACE-GGM cells (the same keys: bit for bit the
committed cells) beside PACE-GGM regression with ``measure_target_first=True``: the ``d`` entries of
y's row measured right after the diagonal with half of PACE-GGM's budget (``ρ/3``, AdaSSP's share
for ``Xᵀy``), the adaptive rounds after them. The pairs are fixed by the shape alone, so the fit
stays ``ρ``-zCDP. All three draw their noise from the harness's seeds of their method (the forced
variant shares PACE-GGM's), on the recipe's 80/20 splits::

    python -m studies.forced_target               # the committed grid (make study-forced-target)
    python -m studies.forced_target --trials 2 --datasets pol --rhos 1 --out-dir /tmp/x

Per (data set, ρ): mean test MSE ± SE of each method and of predicting 0 (on the same splits), and
the paired differences (same split per trial) forced − AdaSSP and forced − as run, in standard
errors of the paired difference (z). Writes ``forced_target.md`` and ``forced_target.csv`` to
``--out-dir`` (default ``figures/results/investigations``; a grid other than the default needs an
explicit ``--out-dir``). Exit 1 if a cell failed.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from studies._sweeps import floats, harness_config, is_default, markdown, names, publish, run_grids, study_parser

DATASETS = ("communities_crime", "life_expectancy", "pol", "bank32nh")
RHOS = (0.01, 0.1, 1.0)
TRIALS = 10
OUT_DIR = Path("figures") / "results" / "investigations"
FORCED = "paceggm_yfirst"
#: Label of each variant in the tables.
LABELS = {"adassp": "AdaSSP", "paceggm_regression": "PACE-GGM as run", FORCED: "PACE-GGM, y's row first"}
K = 2.0


def config(datasets, rhos, trials, *, runs_dir, extra=()) -> dict:
    """The ``regression`` recipe's two methods and the forced variant, on the grid."""
    return harness_config([
        "experiment=regression", "name=forced_target", "progress=false", "backend.n_jobs=1",
        "order=cheapest_first", f"runs_dir={runs_dir}", f"datasets=[{','.join(datasets)}]",
        f"rho=[{','.join(repr(float(r)) for r in rhos)}]", f"trials={int(trials)}",
        f"+method.{FORCED}.key=paceggm_regression", f"+method.{FORCED}.params.solver=newton",
        f"+method.{FORCED}.params.measure_target_first=true", *extra])


def paired(rows: pd.DataFrame, null: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per (dataset, rho): each variant's mean MSE ± SE, predict-0's, and the paired differences' z."""
    ok = rows[rows["status"] == "ok"]
    wide = ok.pivot_table(index=["dataset", "rho", "trial"], columns="variant", values="mse")
    if null is not None:
        wide = wide.join(null.set_index(["dataset", "trial"])["null"], on=["dataset", "trial"])
    records = []
    for (name, rho), g in wide.groupby(level=["dataset", "rho"]):
        rec = {"dataset": name, "rho": rho, "trials": int(g.dropna().shape[0])}
        for col in [c for c in (*LABELS, "null") if c in g.columns]:
            v = g[col].dropna()
            rec[f"{col}_mean"], rec[f"{col}_sem"] = float(v.mean()), float(v.std(ddof=1) / np.sqrt(len(v)))
        for a, b in ((FORCED, "adassp"), (FORCED, "paceggm_regression"), ("paceggm_regression", "adassp")):
            if a in g.columns and b in g.columns:
                diff = (g[a] - g[b]).dropna()
                sem = float(diff.std(ddof=1) / np.sqrt(len(diff)))
                rec[f"{a}_vs_{b}_ratio"] = float(g[a].mean() / g[b].mean())
                rec[f"{a}_vs_{b}_z"] = float(diff.mean() / sem) if sem > 0 else (0.0 if diff.mean() == 0 else np.inf)
        records.append(rec)
    return pd.DataFrame.from_records(records)


def tally(cells: pd.DataFrame) -> pd.DataFrame:
    """Over the cells: how often each comparison is significantly lower, within noise, significantly higher."""
    out = {}
    for a, b in ((FORCED, "adassp"), (FORCED, "paceggm_regression"), ("paceggm_regression", "adassp")):
        z = cells.get(f"{a}_vs_{b}_z")
        if z is None:
            continue
        r = cells[f"{a}_vs_{b}_ratio"]
        out[f"{LABELS[a]} vs {LABELS[b]}"] = {
            f"lower (z < −{K:g})": int((z < -K).sum()), "within noise": int((z.abs() <= K).sum()),
            f"higher (z > {K:g})": int((z > K).sum()), "median MSE ratio": float(r.median()),
            "range": f"{r.min():.3g}–{r.max():.3g}"}
    return pd.DataFrame.from_dict(out, orient="index")


def committed_check(rows: pd.DataFrame, committed: pd.DataFrame) -> tuple[int, int]:
    """(AdaSSP and as-run cells whose MSE equals the committed cell of the same key, cells compared)."""
    both = rows[rows["status"] == "ok"].merge(committed[["cell_key", "mse"]], on="cell_key", suffixes=("", "_c"))
    return int(np.isclose(both["mse"], both["mse_c"], rtol=1e-9, atol=0).sum()), len(both)


def report(cells: pd.DataFrame, check, *, trials: int, seconds: float) -> str:
    lines = ["# y's row measured first: PACE-GGM regression against AdaSSP", "",
             f"`python -m studies.forced_target`: the `regression` recipe's cells (`paper`, 80/20 splits, Newton) and "
             f"PACE-GGM regression with `measure_target_first=True` (y's row measured after the diagonal with ρ/3, "
             f"AdaSSP's share for Xᵀy); {trials} trials per cell; test MSE mean ± SE; z of the paired difference "
             f"(same split and trial). {seconds:.0f} s of fitting (wall time summed over the cells).", ""]
    if check is not None:
        lines += [f"AdaSSP and PACE-GGM as run against the committed `regression` cells of the same keys: {check[0]} "
                  f"of {check[1]} identical.", ""]
    show = pd.DataFrame({"dataset": cells["dataset"], "ρ": cells["rho"]})
    for col in (*LABELS, "null"):
        if f"{col}_mean" in cells:
            show[LABELS.get(col, "predict 0")] = [f"{m:.4g} ± {s:.2g}" for m, s in
                                                 zip(cells[f"{col}_mean"], cells[f"{col}_sem"])]
    for a, b, name in ((FORCED, "adassp", "forced ÷ AdaSSP (z)"), (FORCED, "paceggm_regression", "forced ÷ as run (z)"),
                       ("paceggm_regression", "adassp", "as run ÷ AdaSSP (z)")):
        if f"{a}_vs_{b}_z" in cells:
            show[name] = [f"{r:.3f} ({z:+.1f})" for r, z in zip(cells[f"{a}_vs_{b}_ratio"], cells[f"{a}_vs_{b}_z"])]
    lines += [markdown(show.set_index(["dataset", "ρ"]), floatfmt="g"), "", "## Over the cells", "",
              f"Cells where the first method's MSE is lower or higher beyond {K:g} SE of the paired difference.", "",
              markdown(tally(cells)), ""]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = study_parser("python -m studies.forced_target", __doc__, OUT_DIR)
    parser.add_argument("--datasets", type=names, default=list(DATASETS))
    parser.add_argument("--rhos", type=floats, default=list(RHOS))
    parser.add_argument("--trials", type=int, default=TRIALS)
    parser.add_argument("--committed", default="figures/results/regression/results.parquet",
                        help="the committed cells the recipe's methods are checked against ('' to skip)")
    args = parser.parse_args(argv)
    grid = dict(datasets=(args.datasets, DATASETS), rhos=(args.rhos, RHOS), trials=(args.trials, TRIALS))
    reduced = [k for k, (value, default) in grid.items() if not is_default(value, default)]
    if args.out_dir is None and (reduced or args.set):
        parser.error(f"a grid other than the committed one ({', '.join(reduced) or 'overrides'}) needs --out-dir")
    if args.trials < 2:
        parser.error("--trials must be >= 2 (a standard error needs two trials)")
    out_dir = Path(args.out_dir) if args.out_dir else OUT_DIR

    cfg = config(args.datasets, args.rhos, args.trials, runs_dir=args.runs_dir, extra=args.set)
    cpu = os.times()
    rows, failed = run_grids([cfg])
    from paceggm.bench.regression_references import reference_mses
    from paceggm.bench.runner import resolve_loader

    null = reference_mses(args.datasets, range(args.trials), preprocessing=cfg["preprocessing"],
                          base_seed=int(cfg["base_seed"]), test_fraction=float(cfg["test_fraction"]),
                          loader=resolve_loader(cfg.get("loader")), data_dir=cfg.get("data_dir"))
    cells = paired(rows, null)
    check = None
    if args.committed and Path(args.committed).is_file():
        check = committed_check(rows[rows["variant"] != FORCED], pd.read_parquet(args.committed))
    seconds = float(rows.loc[rows["status"] == "ok", "wall_time"].sum())
    text = report(cells, check, trials=args.trials, seconds=seconds)
    return publish(out_dir, "forced_target", cells, text, cells=len(rows), failed=failed, cpu_start=cpu)


if __name__ == "__main__":
    raise SystemExit(main())

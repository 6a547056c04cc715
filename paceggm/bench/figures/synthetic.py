"""Synthetic results tables in the exact shape the harness writes, for tests.

The values follow the qualitative shape of the real experiments (errors fall
with ρ like ``1/sqrt(ρ)``, SSP grows like ``d²/n``, the diagonal baseline has an
error floor, PACE-GGM measures more entries as ρ grows, …) so that figures and
tables built from them look like the real ones; they are *not* results. Some
trials fail and some cells are dropped on purpose so that every consumer is
exercised on gaps. Everything is drawn from a seed derived from the cell.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pandas as pd
from omegaconf import OmegaConf

from paceggm.bench.data.registry import conf_dir, get_config, paper_datasets
from paceggm.bench.methods import method_defaults
from paceggm.bench.schema import STORED_COLUMNS, with_param_columns
from paceggm.bench.seeds import canonical_json

#: Data sets whose every cell fails (as an OpenML-only data set does without network).
UNAVAILABLE = ("madeline",)
PAPER = tuple(paper_datasets())
RHOS = tuple(OmegaConf.load(conf_dir() / "config.yaml").rho)


def _recipe(name: str):
    """Recipe ``conf/experiment/<name>.yaml``: the one statement of its data sets and grid."""
    return OmegaConf.load(conf_dir() / "experiment" / f"{name}.yaml")


def _shape(name: str) -> tuple[int, int]:
    """(n, d) as published (the data-set registry), or of the embedded copy."""
    if name == "breast_cancer_sklearn":
        return 569, 30
    published = get_config(name).published
    return int(published.n), int(published.d)


FIVE = tuple(_recipe("hyperparameters").datasets)
SOLVER_FIVE = tuple(_recipe("solver").datasets)
REGRESSION = tuple(_recipe("regression").datasets)
GRID = tuple(_recipe("hyperparameters").method.paceggm.grid.alpha)
SOLVERS = tuple(_recipe("solver").method.paceggm.grid.solver)


def _v(label, method=None, **params):
    """(variant label as the harness writes it, method key, parameters)."""
    return (label, method or label, params)


# Labels follow the harness: recipe entry + grid parameters (so the default PACE-GGM
# is "paceggm" in main, "paceggm[solver=ipm]" in solver, ...).
RECIPES = {
    "main": (PAPER, (_v("paceggm"), _v("ssp"), _v("adaptivecov"), _v("diagonal")), 10),
    "main_strict": (PAPER, (_v("paceggm"), _v("ssp"), _v("adaptivecov"), _v("diagonal")), 10),
    "measurements": (PAPER, (_v("paceggm"),), 10),
    "runtime": (PAPER, tuple(_v(f"paceggm[solver={s}]", "paceggm", solver=s) for s in ("newton", "ipm")), 10),
    "solver": (SOLVER_FIVE, tuple(_v(f"paceggm[solver={s}]", "paceggm", solver=s) for s in SOLVERS), 10),
    "components": (SOLVER_FIVE, tuple(_v(f"paceggm[solver={s},use_components={u}]", "paceggm", solver=s,
                                         use_components=u) for s in ("newton", "ipm") for u in (True, False)), 10),
    "hyperparameters": (FIVE, tuple(_v(f"paceggm[alpha={a:g},beta={b:g}]", "paceggm", alpha=a, beta=b)
                                    for a in GRID for b in GRID) + (_v("ssp"),), 5),
    "regression": (REGRESSION, (_v("adassp"), _v("paceggm_regression")), 10),
}
#: Recipes whose preprocessing is fixed by the recipe itself.
RECIPE_PREPROCESSING = {"main_strict": "strict"}
#: The harness's ``quick`` recipe: every method and every varied parameter, small grid.
QUICK = (("breast_cancer_sklearn", "adult"),
         tuple(_v(f"paceggm[solver={s}]", "paceggm", solver=s) for s in SOLVERS)
         + (_v("paceggm_nocc", "paceggm", use_components=False),
            _v("paceggm_ab", "paceggm", alpha=0.1, beta=0.3))
         + tuple(_v(m) for m in ("ssp", "ssp_projected", "ssp_tight", "diagonal", "gausscov",
                                 "separatecov", "adaptivecov")),
         ("pol",), (_v("adassp"), _v("paceggm_regression")))


def _key(*parts) -> str:
    return hashlib.sha256(repr(parts).encode()).hexdigest()[:16]


def _row(experiment, dataset, preprocessing, spec, rho, trial, fail_rate) -> dict:
    n, d = _shape(dataset)
    variant, method, params = spec
    key = _key(dataset, preprocessing, method, sorted(params.items()), rho, trial)
    seed = int(key[:8], 16)
    rng = np.random.default_rng(seed)
    noise = float(np.exp(rng.normal(0.0, 0.15)))
    is_pace = method.startswith("paceggm")
    alpha = float(params.get("alpha", 0.3)) if is_pace else np.nan
    beta = float(params.get("beta", 0.5)) if is_pace else np.nan
    solver = str(params.get("solver", method_defaults("paceggm")["solver"])) if is_pace else ""
    use_comp = bool(params.get("use_components", True))
    ssp_frob = d * d / (n * np.sqrt(rho))
    floor = 0.05 + 0.3 * (d / 102)  # off-diagonal mass the diagonal baseline never sees
    frob = {
        "ssp": ssp_frob,
        "diagonal": floor + d / (n * np.sqrt(rho)),
        "adaptivecov": 0.7 * ssp_frob + 0.02,
    }.get(method, 0.25 * d**1.5 / (n * np.sqrt(rho)) + 0.4 * floor / (1 + 10 * rho))
    if is_pace:
        frob *= {"pgd0": 1.4, "pgd1": 1.8}.get(solver, 1.0)  # IPM and Newton: same estimate
        frob *= 1 + 0.3 * abs(alpha - 0.3) + 0.2 * abs(beta - 0.5) * (1 + np.sin(d + 10 * rho))
    frob *= noise
    maha = frob * (15 + d) * float(np.exp(rng.normal(0.0, 0.1)))
    off = min(d * (d - 1) / 2, d * max(0.0, 0.4 * (np.log10(rho) + 4.5)) * float(rng.uniform(0.8, 1.2)))
    base_time = 1e-3 * d**1.6 * (1 + off / d) if is_pace else 1e-4 * d**2
    if is_pace:
        base_time *= {"pgd0": 3.0, "pgd1": 3.5, "newton": 0.2}.get(solver, 1.0) * (1.0 if use_comp else 2.5)
    wall = base_time * noise
    regression = method in ("adassp", "paceggm_regression")
    mse = np.nan
    if regression:
        mse = 0.02 * (1 + (3.0 if method == "adassp" else 1.0) * d / (n * rho) ** 0.7) * noise
    row = {
        "experiment": experiment, "cell_key": key, "dataset": dataset,
        "preprocessing": preprocessing, "n": n, "d": d, "method": method, "variant": variant,
        "rho": rho, "trial": trial, "seed": seed, "status": "ok", "error": "",
        "mahalanobis": np.nan if regression else maha,
        "frobenius": np.nan if regression else frob,
        "mse": mse,
        "n_measured_diag": d if is_pace else pd.NA,
        "n_measured_offdiag": int(round(off)) if is_pace else pd.NA,
        "n_rounds": int(round(off * 1.5)) + 1 if is_pace else pd.NA,
        "rho_spent": rho, "wall_time": wall,
        "solve_time": 0.8 * wall if is_pace else np.nan,
        "params": canonical_json({"alpha": alpha, "beta": beta, "solver": solver, "use_components": use_comp}
                                 if is_pace else {}),
    }
    if dataset in UNAVAILABLE:
        row.update(status="failed", n=np.nan, d=np.nan, mahalanobis=np.nan, frobenius=np.nan,
                   mse=np.nan, n_measured_diag=pd.NA, n_measured_offdiag=pd.NA, n_rounds=pd.NA,
                   rho_spent=np.nan, wall_time=np.nan, solve_time=np.nan,
                   error=f"DatasetUnavailableError: {dataset} is only on OpenML and there is no network\n"
                         "Traceback (most recent call last):\n  File \"data.py\", line 1, in load\n"
                         f"DatasetUnavailableError: {dataset} is only on OpenML and there is no network\n")
    elif rng.uniform() < fail_rate:
        row.update(status="failed", mahalanobis=np.nan, frobenius=np.nan, mse=np.nan,
                   error="LinAlgError: Matrix is not positive definite\nTraceback (most recent call last):\n"
                         '  File "solver.py", line 1, in solve\n'
                         "LinAlgError: Matrix is not positive definite\n")
    return row


def synthetic_results(experiment: str = "main", *, preprocessing: str = "paper",
                      datasets=None, rhos=RHOS, trials: int | None = None,
                      fail_rate: float = 0.03, missing_rate: float = 0.03,
                      seed: int = 0) -> pd.DataFrame:
    """A results table for ``experiment`` (or ``"quick"``: a reduced version of all).

    Parameters
    ----------
    experiment : str
        A key of :data:`RECIPES` or ``"quick"``.
    datasets, rhos, trials
        Override the recipe's grid.
    fail_rate : float
        Probability that a trial fails (status "failed", error with traceback).
    missing_rate : float
        Probability that a whole (data set, variant, ρ) cell is absent.
    seed : int
        Seed of which cells go missing; values derive from the cell alone.
    """
    if experiment == "quick":
        cov_sets, cov_vars, reg_sets, reg_vars = QUICK
        if datasets is not None:
            cov_sets = tuple(datasets)
        quick_rhos = rhos if rhos is not RHOS else (1e-2, 1.0)
        parts = [_table("quick", cov_sets, cov_vars, quick_rhos, trials or 2, preprocessing,
                        fail_rate, missing_rate, seed),
                 _table("quick", reg_sets, reg_vars, quick_rhos, trials or 2, preprocessing,
                        fail_rate, missing_rate, seed + 1)]
        return pd.concat(parts, ignore_index=True)
    if experiment not in RECIPES:
        raise ValueError(f"unknown experiment {experiment!r}; expected one of {sorted(RECIPES)} or 'quick'")
    rec_sets, variants, rec_trials = RECIPES[experiment]
    preprocessing = RECIPE_PREPROCESSING.get(experiment, preprocessing)
    if datasets is not None:
        # A reduced run keeps the recipe's data sets that were asked for, or the
        # first few when none overlap (regression uses other data sets).
        rec_sets = tuple(ds for ds in rec_sets if ds in datasets) or rec_sets[: len(datasets)]
    trials = rec_trials if trials is None else trials
    return _table(experiment, rec_sets, variants, rhos, trials, preprocessing, fail_rate,
                  missing_rate, seed)


def _table(experiment, datasets, variants, rhos, trials, preprocessing, fail_rate, missing_rate,
           seed) -> pd.DataFrame:
    drop = np.random.default_rng(seed)
    rows = []
    for ds in datasets:
        for spec in variants:
            for rho in rhos:
                if drop.uniform() < missing_rate:
                    continue
                rows.extend(_row(experiment, ds, preprocessing, spec, rho, t, fail_rate)
                            for t in range(trials))
    df = pd.DataFrame(rows, columns=list(STORED_COLUMNS))
    for col in ("n_measured_diag", "n_measured_offdiag", "n_rounds"):
        df[col] = df[col].astype("Int64")
    return with_param_columns(df)


def write_synthetic_store(runs: str | Path, experiments=tuple(RECIPES), **kwargs) -> dict[str, Path]:
    """Write ``runs/<experiment>/results.parquet`` for each experiment; return the paths."""
    runs = Path(runs)
    paths = {}
    for exp in experiments:
        path = runs / exp / "results.parquet"
        path.parent.mkdir(parents=True, exist_ok=True)
        synthetic_results(exp, **kwargs).to_parquet(path, index=False)
        paths[exp] = path
    return paths

"""Synthetic results tables in the exact shape the harness writes, for tests.

The values follow the qualitative shape of the real experiments (errors fall
with ρ like ``1/sqrt(ρ)``, SSP grows like ``d²/n``, the diagonal baseline has an
error floor, PACE-GGM measures more entries as ρ grows, …) so that figures and
tables built from them look like the real ones; they are *not* results. Some
trials fail and some cells are dropped on purpose so that every consumer is
exercised on gaps. Everything is drawn from a seed derived from the cell.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from paceggm.bench.cells import variant_label
from paceggm.bench.config import compose_config, to_plain
from paceggm.bench.data.registry import get_config
from paceggm.bench.methods import method_defaults
from paceggm.bench.schema import STORED_COLUMNS, with_param_columns
from paceggm.bench.seeds import canonical_json
from paceggm.bench.variants import varied

#: Data sets whose every cell fails (as an OpenML-only data set does without network).
UNAVAILABLE = ("madeline",)
#: The recipes a synthetic table can imitate (``conf/experiment/<name>.yaml``).
RECIPES = ("main", "main_strict", "measurements", "runtime", "solver", "components", "hyperparameters",
           "regression", "quick")


def _shape(name: str) -> tuple[int, int]:
    """(n, d) as published (the data-set registry), or of the embedded copy."""
    if name == "breast_cancer_sklearn":
        return 569, 30
    published = get_config(name).published
    return int(published.n), int(published.d)


@dataclass(frozen=True)
class Recipe:
    """What a recipe runs, read from its composed config: the one statement of its grid."""

    parts: tuple  # ((data sets or None for the recipe's, ((label, method, params), ...)), ...)
    datasets: tuple
    rhos: tuple
    trials: int
    preprocessing: str


@functools.cache
def recipe(name: str) -> Recipe:
    """The variants of ``conf/experiment/<name>.yaml`` as the harness expands them: the entry's
    label over its grid, its method, and the parameters it sets apart from the method's defaults."""
    cfg = to_plain(compose_config([f"experiment={name}"]))
    parts: dict = {}
    for entry, node in cfg["method"].items():
        method = node.get("key") or entry
        fixed = varied(method, node.get("params") or {})
        grid = node.get("grid") or {}
        for combo in itertools.product(*grid.values()):
            combo = dict(zip(grid, combo))
            own = tuple(node["datasets"]) if node.get("datasets") else None
            parts.setdefault(own, []).append((variant_label(entry, combo), method, {**fixed, **combo}))
    trials = cfg["trials"]
    return Recipe(tuple((k, tuple(v)) for k, v in parts.items()), tuple(cfg["datasets"]), tuple(cfg["rho"]),
                  len(trials) if isinstance(trials, list) else int(trials), cfg["preprocessing"])


def _key(*parts) -> str:
    return hashlib.sha256(repr(parts).encode()).hexdigest()[:16]


def _row(experiment, dataset, shape, pace_defaults, preprocessing, spec, rho, trial, fail_rate) -> dict:
    n, d = shape
    variant, method, params = spec
    key = _key(dataset, preprocessing, method, sorted(params.items()), rho, trial)
    seed = int(key[:8], 16)
    rng = np.random.default_rng(seed)
    noise = float(np.exp(rng.normal(0.0, 0.15)))
    is_pace = method.startswith("paceggm")
    params = {**pace_defaults, **params} if is_pace else params  # what the harness would record
    alpha = float(params["alpha"]) if is_pace else np.nan
    beta = float(params["beta"]) if is_pace else np.nan
    solver = str(params["solver"]) if is_pace else ""
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
                      datasets=None, rhos=None, trials: int | None = None,
                      fail_rate: float = 0.03, missing_rate: float = 0.03,
                      seed: int = 0) -> pd.DataFrame:
    """A results table for ``experiment``, one of :data:`RECIPES`, with its recipe's grid.

    Parameters
    ----------
    experiment : str
        A recipe of ``conf/experiment/`` (:data:`RECIPES`).
    preprocessing : str
        Used where the recipe leaves the base config's ``paper`` (``main_strict`` is strict).
    datasets, rhos, trials
        Override the recipe's grid; of ``datasets``, the recipe's data sets that were asked
        for are kept, or its first few when none overlap (regression uses other data sets).
    fail_rate : float
        Probability that a trial fails (status "failed", error with traceback).
    missing_rate : float
        Probability that a whole (data set, variant, ρ) cell is absent.
    seed : int
        Seed of which cells go missing; values derive from the cell alone.
    """
    if experiment not in RECIPES:
        raise ValueError(f"unknown experiment {experiment!r}; expected one of {list(RECIPES)}")
    rec = recipe(experiment)
    preprocessing = preprocessing if rec.preprocessing == "paper" else rec.preprocessing
    rec_sets = rec.datasets
    if datasets is not None:
        rec_sets = tuple(ds for ds in rec_sets if ds in datasets) or rec_sets[: len(datasets)]
    parts = [_table(experiment, own or rec_sets, variants, rhos or rec.rhos, trials or rec.trials,
                    preprocessing, fail_rate, missing_rate, seed + i)
             for i, (own, variants) in enumerate(rec.parts)]
    return pd.concat(parts, ignore_index=True) if len(parts) > 1 else parts[0]


def _table(experiment, datasets, variants, rhos, trials, preprocessing, fail_rate, missing_rate,
           seed) -> pd.DataFrame:
    drop = np.random.default_rng(seed)
    pace_defaults = method_defaults("paceggm")  # per table, not per row: the registry reads are most of a row's cost
    rows = []
    for ds in datasets:
        shape = _shape(ds)
        for spec in variants:
            for rho in rhos:
                if drop.uniform() < missing_rate:
                    continue
                rows.extend(_row(experiment, ds, shape, pace_defaults, preprocessing, spec, rho, t, fail_rate)
                            for t in range(trials))
    df = pd.DataFrame(rows, columns=list(STORED_COLUMNS))
    for col in ("n_measured_diag", "n_measured_offdiag", "n_rounds"):
        df[col] = df[col].astype("Int64")
    return with_param_columns(df)


def write_synthetic_store(runs: str | Path, experiments=RECIPES[:-1], **kwargs) -> dict[str, Path]:
    """Write ``runs/<experiment>/results.parquet`` for each experiment; return the paths."""
    runs = Path(runs)
    paths = {}
    for exp in experiments:
        path = runs / exp / "results.parquet"
        path.parent.mkdir(parents=True, exist_ok=True)
        synthetic_results(exp, **kwargs).to_parquet(path, index=False)
        paths[exp] = path
    return paths

"""What the studies share: timing, relative errors, the KKT residuals of a max-entropy answer, synthetic data."""

from __future__ import annotations

import functools
import time

import numpy as np


# ---------------------------------------------------------------- timing
def timed(fn, repeat: int = 1):
    """``(fn(), best wall-clock seconds of repeat calls)``."""
    best, out = np.inf, None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return out, best


def cholesky_seconds(d: int, rng: np.random.Generator, repeat: int = 5) -> float:
    """Best thread CPU seconds of one dense ``d × d`` Cholesky (LAPACK dpotrf): the unit of a round's cost."""
    from scipy.linalg.lapack import dpotrf

    G = rng.normal(size=(d, d))
    A = G @ G.T / d + np.eye(d)
    best = np.inf
    for _ in range(repeat):
        t0 = time.thread_time()
        dpotrf(A, lower=1)
        best = min(best, time.thread_time() - t0)
    return best


# ---------------------------------------------------------------- errors
def rel_max(a: np.ndarray, b: np.ndarray) -> float:
    """Largest entry of ``a − b`` relative to the largest of ``b``."""
    return float(np.max(np.abs(a - b)) / np.max(np.abs(b)))


def rel_fro(a: np.ndarray, b: np.ndarray) -> float:
    """``‖a − b‖_F / ‖b‖_F``."""
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


def stationarity(W: np.ndarray, y: np.ndarray, lam: np.ndarray, mu: float = 0.0) -> float:
    """The KKT residual on the measured pattern S of the barrier problem, relative to max |W|.

    At the solution ``W_jk = y_jk + μ (W⁻¹)_jk / λ_jk`` off the diagonal and
    ``W_jj = y_jj + μ (W⁻¹)_jj / (2λ_jj)`` (μ = 0: ``W = y`` on S); with
    ``(W⁻¹)_jk = 0`` off S (:func:`off_pattern`) these are the KKT conditions.
    """
    pattern = lam > 0
    target = y.copy()
    if mu > 0:
        P = np.linalg.inv(W)
        factor = np.where(np.eye(len(y), dtype=bool), 2.0 * lam, np.where(pattern, lam, 1.0))
        target = y + mu * P / factor
    return float(np.max(np.abs(W - target)[pattern]) / np.max(np.abs(W)))


def off_pattern(W: np.ndarray, pattern: np.ndarray, *, norm: str = "max") -> float:
    """The share of ``W⁻¹`` off the pattern (largest entry, or Frobenius with ``norm="fro"``): 0 at the
    max-entropy completion. Variables with ``W_jj = 0`` (a singleton component with ``y_jj <= 0``) are left out."""
    keep = np.flatnonzero(np.diag(W) > 0)
    P = np.linalg.inv(W[np.ix_(keep, keep)])
    off = ~pattern[np.ix_(keep, keep)]
    if norm == "fro":
        return float(np.linalg.norm(np.where(off, P, 0.0)) / np.linalg.norm(P))
    return float(np.max(np.abs(P[off]), initial=0.0) / np.max(np.abs(P)))


def kkt_residual(W: np.ndarray, y: np.ndarray, lam: np.ndarray) -> float:
    """Of an exact (μ = 0) answer: ``max(|W − y|`` on S, ``|W⁻¹|`` off it), each relative to its largest entry."""
    return max(stationarity(W, y, lam), off_pattern(W, lam > 0))


# ---------------------------------------------------------------- synthetic data
SHAPES = ("lowrank", "banded", "block")
# Data sets matched to published statistics at their own n and d, and indian_pines's model at large d;
# the "_cols" variants scale each column onto [-1, 1] (studies.matched_data.sample).
HARD_SHAPES = ("indian_pines", "madeline", "hard", "indian_pines_cols", "hard_cols")
ALL_SHAPES = SHAPES + HARD_SHAPES


@functools.cache
def matched_params(shape: str):
    """The fitted model of a hard shape (``hard`` and the ``_cols`` variants are indian_pines's)."""
    from studies.matched_data import fit_shape

    return fit_shape(target_of(shape))


def target_of(shape: str) -> str:
    """The published data set whose statistics a hard shape's model matches."""
    base = shape.removesuffix("_cols")
    return "indian_pines" if base == "hard" else base


def at_target_size(shape: str) -> bool:
    """Whether a shape is a matched data set at its target's own n and d (``hard*``: the model at any d)."""
    return shape in HARD_SHAPES and not shape.startswith("hard")


def cell_size(shape: str, d: int, n: int) -> tuple[int, int]:
    """``(d, n)`` of a cell: a matched shape has its target's, whatever was asked."""
    from studies.matched_data import TARGETS

    if at_target_size(shape):
        target = TARGETS[target_of(shape)]
        return target["d"], target["n"]
    return d, n


def synthetic(shape: str, d: int, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` records of dimension ``d`` with a covariance of ``shape``, scaled into [-1, 1]."""
    if shape in HARD_SHAPES:
        from paceggm.bench.seeds import derive_seed
        from studies.matched_data import sample

        # At the target's own d, the loadings the model was fitted on (so the sample's population has the
        # target's statistics); at another d (hard, hard_cols), a draw of its own.
        base = shape.removesuffix("_cols")
        seed = derive_seed("matched-shape", base) if at_target_size(shape) else derive_seed("matched-shape", base, d)
        return sample(matched_params(shape), d, n, rng, seed=seed, per_column=shape.endswith("_cols"))
    if shape == "lowrank":
        X = rng.normal(size=(n, 5)) @ rng.normal(size=(5, d)) + rng.normal(size=(n, d))
    elif shape == "banded":
        Z = rng.normal(size=(n, d + 3))
        X = Z[:, :d] + Z[:, 1:d + 1] + Z[:, 2:d + 2] + Z[:, 3:d + 3]
    elif shape == "block":
        G = rng.normal(size=(n, -(-d // 20)))
        X = np.sqrt(0.6) * np.repeat(G, 20, axis=1)[:, :d] + np.sqrt(0.4) * rng.normal(size=(n, d))
    else:
        raise ValueError(f"unknown shape {shape!r}; choose one of {ALL_SHAPES}")
    return X / np.abs(X).max(axis=0)


def random_pattern(d: int, n_off: int, rng: np.random.Generator) -> np.ndarray:
    """A symmetric boolean pattern: the diagonal and ``n_off`` off-diagonal pairs drawn uniformly."""
    rows, cols = np.tril_indices(d, -1)
    pick = rng.choice(rows.size, n_off, replace=False)
    pat = np.zeros((d, d), dtype=bool)
    pat[rows[pick], cols[pick]] = True
    return pat | pat.T | np.eye(d, dtype=bool)


def single_threaded_env() -> dict:
    """This process's environment with one BLAS/OpenMP thread, for the child processes a study starts."""
    import os

    return {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}

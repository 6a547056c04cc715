"""Synthetic data with a target data set's published statistics: the hard shapes of the scale benchmark.

The publication's slowest data sets cannot be loaded offline (indian_pines,
madeline), but their statistics are published (n, d, mean and max ``|r|``,
``e_off``, effective rank; :mod:`paceggm.bench.data.stats` defines them). A
Gaussian factor model with those statistics in population is what a solver
meets on them at the same n and d, up to what the statistics do not pin down.

The model, on ``d`` variables: ``k`` factors with loadings ``μ + N(0, 1)``
(``μ`` gives the loadings a common sign, as for neighbouring spectral bands)
and strengths decaying as ``γ^i``, signal-to-noise ``a``, unit-variance noise,
then standardised to correlations and given scales ``exp(σ z_j)``; the two
variables of largest scale are made a pair with correlation ``max |r|``.
:func:`fit_shape` finds ``(a, γ, σ)`` matching mean ``|r|``, ``e_off`` and the
effective rank of the population covariance (Nelder–Mead, from a fixed seed);
:func:`sample` draws ``n`` records, divided by their largest ``|x|`` (one
global factor: every statistic but the bound is unchanged by it).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from paceggm.bench.seeds import derive_seed

#: Published statistics of the targets (the publication's data-set table).
TARGETS = {
    "indian_pines": dict(d=187, n=9144, mean_abs_r=0.555, max_abs_r=0.999, e_off=0.859, eff_rank=2.5),
    "madeline": dict(d=260, n=3140, mean_abs_r=0.016, max_abs_r=0.991, e_off=0.248, eff_rank=201.2),
}
_FACTORS = 8
_MAX_SIGNAL = 1e4


@dataclass(frozen=True)
class ShapeParams:
    """A fitted model: ``(a, γ, σ)``, the common loading ``μ``, the factors and the pair's correlation."""

    a: float
    gamma: float
    sigma: float
    mu: float
    factors: int
    pair_r: float


def covariance(params: ShapeParams, d: int, seed: int) -> np.ndarray:
    """The population covariance of the model on ``d`` variables (loadings and scales drawn from ``seed``)."""
    rng = np.random.default_rng(seed)
    k = min(params.factors, d)
    G = params.mu + rng.normal(size=(d, k))
    w = params.gamma ** np.arange(k)
    B = G * np.sqrt(params.a * w / w.sum())
    C = B @ B.T + np.eye(d)
    s = np.sqrt(np.diag(C))
    C /= np.outer(s, s)
    z = rng.normal(size=d)
    scales = np.exp(params.sigma * z)
    i, j = np.argsort(-scales)[:2]
    # The pair: variable j made r·i + sqrt(1 − r²)·(j's own part), in correlation units:
    # C ← T C Tᵀ with T the identity but for row j, applied to row j and then column j.
    r, q = params.pair_r, np.sqrt(1.0 - params.pair_r**2)
    jj = q * q * C[j, j] + 2.0 * r * q * C[i, j] + r * r * C[i, i]
    row = q * C[j] + r * C[i]
    C[j] = row
    C[:, j] = row
    C[j, j] = jj
    s = np.sqrt(np.diag(C))
    C /= np.outer(s, s)
    return C * np.outer(scales, scales)


def statistics(S: np.ndarray) -> dict:
    """mean and max ``|r|``, ``e_off`` and effective rank of a covariance (as :mod:`.data.stats`)."""
    d = S.shape[0]
    sd = np.sqrt(np.diag(S))
    r = np.abs((S / np.outer(sd, sd))[np.triu_indices(d, 1)])
    total = float(np.sum(S**2))
    nu = np.clip(np.linalg.eigvalsh(S), 0.0, None)
    p = nu / nu.sum()
    p = p[p > 0]
    return dict(mean_abs_r=float(r.mean()), max_abs_r=float(r.max()),
                e_off=(total - float(np.sum(np.diag(S) ** 2))) / total, eff_rank=float(np.exp(-np.sum(p * np.log(p)))))


def fit_shape(name: str) -> ShapeParams:
    """``(a, γ, σ)`` (and ``μ``) whose population statistics match the target ``name`` of :data:`TARGETS`."""
    from scipy.optimize import minimize

    if name not in TARGETS:
        raise ValueError(f"unknown target {name!r}; choose one of {sorted(TARGETS)}")
    t = TARGETS[name]
    seed = derive_seed("matched-shape", name)
    # Loadings of one sign where the correlations are strong on average.
    mu = 1.0 if t["mean_abs_r"] > 0.2 else 0.0

    def params(v) -> ShapeParams:
        # a at most 1e4: the noise keeps the population covariance of full rank.
        return ShapeParams(a=float(np.exp(min(v[0], np.log(_MAX_SIGNAL)))), gamma=float(1.0 / (1.0 + np.exp(-v[1]))),
                           sigma=float(np.exp(v[2])), mu=mu, factors=_FACTORS, pair_r=t["max_abs_r"])

    def loss(v) -> float:
        s = statistics(covariance(params(v), t["d"], seed))
        return ((s["mean_abs_r"] - t["mean_abs_r"]) / 0.01) ** 2 + ((s["e_off"] - t["e_off"]) / 0.01) ** 2 \
            + (np.log(s["eff_rank"] / t["eff_rank"]) / 0.02) ** 2

    x0 = [np.log(1e3), 0.0, np.log(1.0)] if mu else [np.log(0.1), 0.0, np.log(0.3)]
    best = minimize(loss, x0, method="Nelder-Mead", options=dict(maxiter=300, xatol=1e-3, fatol=1e-4))
    return params(best.x)


def sample(params: ShapeParams, d: int, n: int, rng: np.random.Generator, *, seed: int,
           per_column: bool = False) -> np.ndarray:
    """``n`` records of the model on ``d`` variables, scaled by one factor into ``[-1, 1]``.

    With ``per_column``, each column is instead mapped linearly onto ``[-1, 1]`` (its minimum to
    -1, its maximum to +1: the publication's per-column scaling, without the centring that
    would take values past the bound). That equalises the columns' scales, which the matched
    statistics had spread: ``e_off`` rises to about 0.99 while mean ``|r|`` and the effective
    rank stay close, and PACE-GGM measures about as many entries as the publication reports on
    the real data set (module docstring of :mod:`studies.scale_benchmark`).
    """
    S = covariance(params, d, seed)
    L = np.linalg.cholesky(S + 1e-12 * np.mean(np.diag(S)) * np.eye(d))
    X = rng.normal(size=(n, d)) @ L.T
    if per_column:
        from paceggm.bench.data.preprocess import columns_onto_unit_range

        return columns_onto_unit_range(X)
    return X / np.abs(X).max()

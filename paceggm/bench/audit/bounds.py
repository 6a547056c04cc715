"""Confidence lower bounds on a mechanism's privacy loss from samples of its output.

A threshold test reads one scalar statistic ``s`` of the released output and
asks whether the event ``E = {s > t}`` (or its complement) happened. Whatever
the mechanism, a privacy guarantee caps how differently likely ``E`` can be on
two neighbouring data sets ``D`` and ``D'``. With ``p`` the probability of
``E`` on the data set that makes it likelier and ``q`` on the other one:

``ε``-DP
    ``p ≤ e^ε q``, so ``ε ≥ ln(p / q)``.
``ρ``-zCDP
    Rényi divergences ``D_a ≤ aρ`` for every order ``a > 1``, and Rényi
    divergence preserves event probabilities as ``p ≤ (e^{aρ} q)^{(a−1)/a}``
    (Mironov 2017, Prop. 10), i.e. ``ρ ≥ ln p/(a−1) − ln q/a``. The best order
    gives ``ρ ≥ (sqrt(ln 1/q) − sqrt(ln 1/p))²`` when ``q < p`` (for the
    Gaussian mechanism with shift ``μ`` and ``t → ∞`` this tends to the exact
    ``μ²/2``).

Both bounds grow with ``p`` and shrink with ``q``, so a one-sided
Clopper–Pearson lower bound on ``p`` and upper bound on ``q``, each at level
``1 − (1 − confidence)/2``, give a lower bound that holds with probability at
least ``confidence`` (union bound). The threshold and the direction of the
test are chosen on a separate calibration share of the draws, so choosing them
spends none of that confidence.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.stats import beta

__all__ = ["AuditBound", "clopper_pearson", "epsilon_lower_bound", "rho_lower_bound", "threshold_audit"]

METRICS = ("rho", "epsilon")


def clopper_pearson(k, n, *, level: float, side: str):
    """One-sided Clopper–Pearson bound on a binomial proportion from ``k`` successes in ``n``.

    Parameters
    ----------
    k, n : int or ndarray of int
        Successes and trials (``0 <= k <= n``, ``n >= 1``).
    level : float
        Coverage of the one-sided bound, in (0, 1).
    side : {"lower", "upper"}

    Returns
    -------
    bound : float or ndarray
        ``P[true proportion >= bound] >= level`` (``"lower"``), resp. ``<=`` (``"upper"``).

    Examples
    --------
    >>> round(clopper_pearson(0, 10, level=0.95, side="upper"), 4)  # 1 − 0.05^(1/10)
    0.2589
    """
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level!r}")
    k, n = np.asarray(k, dtype=float), np.asarray(n, dtype=float)
    if np.any(n < 1) or np.any(k < 0) or np.any(k > n):
        raise ValueError("need 0 <= k <= n and n >= 1")
    if side == "lower":
        with np.errstate(invalid="ignore"):
            out = np.where(k == 0, 0.0, beta.ppf(1.0 - level, np.maximum(k, 1), n - k + 1))
    elif side == "upper":
        with np.errstate(invalid="ignore"):
            out = np.where(k == n, 1.0, beta.ppf(level, k + 1, np.maximum(n - k, 1)))
    else:
        raise ValueError(f"side must be 'lower' or 'upper', got {side!r}")
    return float(out) if out.ndim == 0 else out


def epsilon_lower_bound(p, q):
    """``ln(p / q)`` floored at 0: the least ``ε`` of an ``ε``-DP mechanism with these event probabilities."""
    p, q = np.asarray(p, dtype=float), np.asarray(q, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(p > q, np.log(p) - np.log(q), 0.0)
    return float(out) if out.ndim == 0 else out


def rho_lower_bound(p, q):
    """``(sqrt(ln 1/q) − sqrt(ln 1/p))²`` if ``q < p``, else 0: the least ``ρ`` of a ``ρ``-zCDP mechanism.

    Examples
    --------
    >>> from scipy.stats import norm
    >>> mu, t = 1.0, 6.0  # Gaussian mechanism with ρ = μ²/2 = 0.5, event {s > t}
    >>> 0.45 < rho_lower_bound(norm.sf(t - mu), norm.sf(t)) <= 0.5
    True
    """
    p, q = np.asarray(p, dtype=float), np.asarray(q, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        gap = np.sqrt(-np.log(q)) - np.sqrt(-np.log(np.minimum(p, 1.0)))
        out = np.where(p > q, gap**2, 0.0)
    return float(out) if out.ndim == 0 else out


_BOUNDS = {"rho": rho_lower_bound, "epsilon": epsilon_lower_bound}


@dataclass(frozen=True)
class AuditBound:
    """The outcome of one threshold test.

    Attributes
    ----------
    event : str
        The test, e.g. ``"s > 0.75"`` or ``"s <= 3"``.
    likelier_on : {"D", "D'"}
        The data set on which the event is likelier (``p``); ``q`` is on the other.
    k_p, n_p, k_q, n_q : int
        Event counts and draws of the evaluation share.
    p_lower, q_upper : float
        Clopper–Pearson bounds at level ``1 − (1 − confidence)/2`` each.
    rho, epsilon : float
        Lower bounds on ρ (zCDP) and ε (pure DP), jointly valid with probability
        ``confidence``.
    confidence : float
    """

    event: str
    likelier_on: str
    k_p: int
    n_p: int
    k_q: int
    n_q: int
    p_lower: float
    q_upper: float
    rho: float
    epsilon: float
    confidence: float


def _counts_above(sorted_stats: np.ndarray, thresholds: np.ndarray) -> np.ndarray:
    return sorted_stats.size - np.searchsorted(sorted_stats, thresholds, side="right")


def threshold_audit(stats_d, stats_d_prime, *, metric: str = "rho", confidence: float = 0.95,
                    calibration: float = 0.5, max_thresholds: int = 512) -> AuditBound:
    """Lower bounds on ρ and ε from draws of a statistic on two neighbouring data sets.

    The first ``calibration`` share of each sample chooses the event
    (``s > t`` or ``s <= t``, ``t`` among the calibration draws' quantiles) and
    which data set it favours, by the largest bound of ``metric``; the rest of
    the draws, never seen by that choice, give the bounds.

    Parameters
    ----------
    stats_d, stats_d_prime : array_like of shape (m,)
        The statistic on independent runs of the mechanism on ``D`` and ``D'``, in draw order.
    metric : {"rho", "epsilon"}
        The bound the calibration maximises.
    confidence : float
        Joint coverage of the two Clopper–Pearson bounds.
    calibration : float in (0, 1)
        Share of each sample used to choose the test.
    max_thresholds : int
        Candidate thresholds (quantiles of the pooled calibration draws).

    Returns
    -------
    AuditBound

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> res = threshold_audit(rng.normal(0, 1, 20000), rng.normal(1, 1, 20000))  # ρ = 0.5
    >>> 0.2 < res.rho < 0.5
    True
    """
    if metric not in METRICS:
        raise ValueError(f"metric must be one of {METRICS}, got {metric!r}")
    if not 0.0 < calibration < 1.0:
        raise ValueError(f"calibration must be in (0, 1), got {calibration!r}")
    samples = [np.asarray(s, dtype=float).ravel() for s in (stats_d, stats_d_prime)]
    if any(s.size < 4 for s in samples) or any(not np.all(np.isfinite(s)) for s in samples):
        raise ValueError("each sample needs at least 4 finite draws")
    split = [max(1, min(s.size - 1, int(round(calibration * s.size)))) for s in samples]
    calib = [np.sort(s[:c]) for s, c in zip(samples, split)]
    evaluation = [s[c:] for s, c in zip(samples, split)]
    level = 1.0 - (1.0 - confidence) / 2.0
    bound = _BOUNDS[metric]

    pooled = np.concatenate(calib)
    thresholds = np.unique(pooled)
    if thresholds.size > max_thresholds:
        thresholds = np.unique(np.quantile(pooled, np.linspace(0.0, 1.0, max_thresholds)))
    n = [c.size for c in calib]
    above = [_counts_above(c, thresholds) for c in calib]
    best = (-1.0, None)
    # (event above t?, index of the data set it favours)
    for upper in (True, False):
        k = above if upper else [n[i] - above[i] for i in range(2)]
        for fav in (0, 1):
            other = 1 - fav
            values = bound(clopper_pearson(k[fav], n[fav], level=level, side="lower"),
                           clopper_pearson(k[other], n[other], level=level, side="upper"))
            i = int(np.argmax(values))
            if values[i] > best[0]:
                best = (float(values[i]), (upper, fav, float(thresholds[i])))
    upper, fav, t = best[1]
    other = 1 - fav
    hits = [np.count_nonzero(e > t) if upper else np.count_nonzero(e <= t) for e in evaluation]
    n_eval = [e.size for e in evaluation]
    p_lower = clopper_pearson(hits[fav], n_eval[fav], level=level, side="lower")
    q_upper = clopper_pearson(hits[other], n_eval[other], level=level, side="upper")
    return AuditBound(
        event=f"s {'>' if upper else '<='} {t:.6g}", likelier_on=("D", "D'")[fav],
        k_p=int(hits[fav]), n_p=int(n_eval[fav]), k_q=int(hits[other]), n_q=int(n_eval[other]),
        p_lower=float(p_lower), q_upper=float(q_upper),
        rho=rho_lower_bound(p_lower, q_upper), epsilon=epsilon_lower_bound(p_lower, q_upper),
        confidence=float(confidence),
    )

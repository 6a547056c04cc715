"""Conversions between ρ-zCDP and (ε, δ)-DP.

The estimators account in zCDP; users often hold an (ε, δ) budget.
:func:`approx_dp_to_zcdp` is the exact inverse of the standard conversion
``ε = ρ + 2 sqrt(ρ ln(1/δ))`` (Bun & Steinke 2016, Prop. 1.3), rounded so that
converting back never exceeds the ε the user gave.
"""

from __future__ import annotations

import math

from paceggm._validation import check_rho

CONVERSIONS = ("standard", "cks")


def zcdp_to_approx_dp(rho: float, delta: float, *, method: str = "standard") -> float:
    """The ε such that ρ-zCDP implies (ε, δ)-DP.

    Parameters
    ----------
    rho : float
        zCDP parameter, > 0.
    delta : float
        In (0, 1).
    method : {"standard", "cks"}
        ``"standard"``: ``ε = ρ + 2 sqrt(ρ ln(1/δ))`` (Bun & Steinke 2016,
        Prop. 1.3). ``"cks"``: the tighter conversion of Canonne, Kamath &
        Steinke 2020 (Prop. 12/Cor. 13),
        ``ε = inf_{a>1} aρ + (ln(1/δ) + (a−1) ln(1 − 1/a) − ln a) / (a−1)``,
        never larger than the standard one (and clamped at 0, where it says
        that (0, δ)-DP already holds).

    Returns
    -------
    epsilon : float

    Examples
    --------
    >>> round(zcdp_to_approx_dp(0.5, 1e-6), 4)
    5.7565
    """
    check_rho(rho)
    delta = _check_delta(delta)
    if method not in CONVERSIONS:
        raise ValueError(f"method must be one of {CONVERSIONS}, got {method!r}")
    standard = rho + 2.0 * math.sqrt(rho * math.log(1.0 / delta))
    if method == "standard":
        return standard

    def eps_at(log_a_minus_1: float) -> float:
        a = 1.0 + math.exp(log_a_minus_1)
        return a * rho + (math.log(1.0 / delta) + (a - 1.0) * math.log1p(-1.0 / a) - math.log(a)) / (a - 1.0)

    # The objective is smooth and unimodal in log(a−1); its minimiser sits near
    # a ≈ 1 + sqrt(ln(1/δ)/ρ), well inside this bracket for any sane (ρ, δ).
    # Imported here: scipy.optimize takes longer to import than the rest of the
    # package, and only this conversion needs it.
    from scipy.optimize import minimize_scalar

    res = minimize_scalar(eps_at, bounds=(-30.0, 30.0), method="bounded", options={"xatol": 1e-10})
    # A negative value means (0, δ)-DP already holds: ε cannot go below 0.
    return float(max(0.0, min(res.fun, standard)))


def _check_delta(delta) -> float:
    if isinstance(delta, bool) or not isinstance(delta, (int, float)) or not (0.0 < float(delta) < 1.0):
        raise ValueError(f"delta must be a number in the open interval (0, 1), got {delta!r}")
    return float(delta)


def approx_dp_to_zcdp(epsilon: float, delta: float) -> float:
    """The largest ρ whose ρ-zCDP guarantee implies (ε, δ)-DP by the standard conversion.

    Solves ``ε = ρ + 2 sqrt(ρ L)`` with ``L = ln(1/δ)``: as a quadratic in
    ``sqrt(ρ)``, ``ρ = (sqrt(L + ε) − sqrt(L))²``, computed as
    ``ε² / (sqrt(L + ε) + sqrt(L))²`` (no cancellation for small ε). The float
    result is then stepped down until ``zcdp_to_approx_dp(ρ, δ) <= ε`` holds
    in floating point too, so an estimator given ``(ε, δ)`` never promises
    less privacy than asked for.

    Parameters
    ----------
    epsilon : float
        > 0.
    delta : float
        In (0, 1).

    Returns
    -------
    rho : float

    Examples
    --------
    >>> rho = approx_dp_to_zcdp(1.0, 1e-6)
    >>> round(rho, 6), zcdp_to_approx_dp(rho, 1e-6) <= 1.0
    (0.017469, True)
    """
    epsilon = check_rho(epsilon, "epsilon")
    delta = _check_delta(delta)
    log_inv_delta = math.log(1.0 / delta)
    rho = epsilon**2 / (math.sqrt(log_inv_delta + epsilon) + math.sqrt(log_inv_delta)) ** 2
    while rho > 0.0 and zcdp_to_approx_dp(rho, delta) > epsilon:
        rho = math.nextafter(rho, 0.0)
    if rho <= 0.0:
        raise ValueError(f"epsilon={epsilon!r} is too small to give a positive rho at delta={delta!r}")
    return rho

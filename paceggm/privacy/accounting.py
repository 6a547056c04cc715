"""Conversion of ρ-zCDP into (ε, δ)-DP for reporting."""

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
    if not (0.0 < delta < 1.0):
        raise ValueError(f"delta must be in (0, 1), got {delta}")
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

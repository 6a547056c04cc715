"""Conversions between ρ-zCDP and (ε, δ)-DP, with guarantees that hold in exact arithmetic.

The estimators account in zCDP; users often hold an (ε, δ) budget. Two
conversions from ρ-zCDP to (ε, δ)-DP are offered:

``"exact"`` (the default)
    Canonne, Kamath & Steinke 2020 (Prop. 12 / Cor. 13), the conversion
    OpenDP uses: ``ε(ρ) = inf_{a>1} aρ + g(a)`` with
    ``g(a) = (ln(1/δ) + (a−1) ln(1 − 1/a) − ln a) / (a−1)``.
``"standard"``
    Bun & Steinke 2016 (Prop. 1.3): ``ε = ρ + 2 sqrt(ρ ln(1/δ))``, looser.

:func:`approx_dp_to_zcdp` inverts either: the largest ρ whose conversion is
at most ε. For the exact one, ``ε(ρ) <= ε`` iff some order ``a`` has
``aρ + g(a) <= ε``, so ``ρ* = sup_a (ε − g(a))/a``. Floats find a near-best
order ``a``; the returned ρ is then *certified* at that order with rational
interval bounds on every logarithm (:func:`_ln_bounds`), so
``aρ + g(a) <= ε`` — hence ``ε(ρ) <= ε`` — holds for the real numbers, not
only up to rounding. :func:`zcdp_to_approx_dp` is certified the other way: the ε
it returns is at least the true ``ε(ρ)``. Inputs may be Python, NumPy or
``Fraction`` numbers; a ``Fraction`` δ or ε is honoured exactly.
"""

from __future__ import annotations

import functools
import math
import numbers
from fractions import Fraction

CONVERSIONS = ("exact", "standard")

# Relative precision of the rational bounds on logarithms: far below a double's 2⁻⁵³.
_BITS = 96


def _check_number(value, name: str, *, open_unit: bool = False) -> Fraction:
    """``value`` as an exact ``Fraction``: a finite real number > 0 (and < 1 if ``open_unit``)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number (int, float, NumPy scalar or Fraction), "
                        f"got {type(value).__name__}")
    if isinstance(value, numbers.Rational):
        exact = Fraction(value.numerator, value.denominator)
    else:
        as_float = float(value)  # NumPy's float16/32 widen to a double exactly
        if not math.isfinite(as_float):
            raise ValueError(f"{name} must be finite, got {value!r}")
        exact = Fraction(as_float)
    if open_unit and not (0 < exact < 1):
        raise ValueError(f"{name} must be a number in the open interval (0, 1), got {value!r}")
    if exact <= 0:
        raise ValueError(f"{name} must be > 0, got {value!r}")
    if not open_unit and exact > Fraction(1.7976931348623157e308):
        raise ValueError(f"{name}={value!r} is beyond the range of a double")
    if open_unit and float(exact) == 0.0:
        raise ValueError(f"{name}={value!r} is below the smallest double")
    return exact


def _float_at_most(q: Fraction) -> float:
    out = float(q)
    if Fraction(out) > q:
        out = math.nextafter(out, -math.inf)
    return out


def _float_at_least(q: Fraction) -> float:
    out = float(q)
    if Fraction(out) < q:
        out = math.nextafter(out, math.inf)
    return out


def _round_out(q: Fraction, down: bool) -> Fraction:
    """``q`` rounded outward (down or up) to ``_BITS`` significant bits: keeps the rationals small."""
    if q == 0:
        return q
    exp = q.numerator.bit_length() - q.denominator.bit_length()
    shift = _BITS - exp
    scaled = q * (Fraction(2) ** shift)
    n = math.floor(scaled) if down else math.ceil(scaled)
    return Fraction(n) / (Fraction(2) ** shift)


def _atanh_series(z: Fraction) -> tuple[Fraction, Fraction]:
    """Bounds on ``2 atanh(z) = ln((1+z)/(1−z))`` for ``|z| <= 1/3``: partial sum ± the tail bound."""
    total, power, z2, k = Fraction(0), z, z * z, 0
    while True:
        total += power / (2 * k + 1)
        power *= z2
        k += 1
        # Tail of Σ z^(2j+1)/(2j+1) beyond the k terms taken: at most |z|^(2k+1) / ((2k+1)(1 − z²)).
        tail = abs(power) / ((2 * k + 1) * (1 - z2))
        if tail * (Fraction(2) ** (_BITS + 8)) <= abs(total) or power == 0:
            return 2 * (total - tail), 2 * (total + tail)


_LN2 = _atanh_series(Fraction(1, 3))  # ln 2 = 2 atanh(1/3)


def _ln_bounds(x: Fraction) -> tuple[Fraction, Fraction]:
    """Rational ``lo <= ln(x) <= hi`` for a rational ``x > 0``, to about ``_BITS`` bits."""
    if x <= 0:
        raise ValueError("ln of a non-positive number")
    k = x.numerator.bit_length() - x.denominator.bit_length()
    m = x / (Fraction(2) ** k)  # in (1/2, 2)
    lo, hi = _atanh_series((m - 1) / (m + 1))  # |z| < 1/3
    if k >= 0:
        lo, hi = lo + k * _LN2[0], hi + k * _LN2[1]
    else:
        lo, hi = lo + k * _LN2[1], hi + k * _LN2[0]
    return _round_out(lo, down=True), _round_out(hi, down=False)


def _g_upper(u: Fraction, log_inv_delta_hi: Fraction) -> Fraction:
    """An upper bound on ``g(1+u) = (L + u ln(u/(1+u)) − ln(1+u)) / u`` (``u = a − 1 > 0``)."""
    ratio_hi = _ln_bounds(u / (1 + u))[1]
    log_a_lo = _ln_bounds(1 + u)[0]
    return (log_inv_delta_hi + u * ratio_hi - log_a_lo) / u


def _g_float(log_u: float, log_inv_delta: float) -> float:
    u = math.exp(log_u)
    # u ln(u/(1+u)) − ln(1+u), stably for tiny and huge u
    return (log_inv_delta + u * (log_u - math.log1p(u)) - math.log1p(u)) / u


def _best_log_order(objective, centre: float) -> float:
    """The ``log(a − 1)`` minimising ``objective`` (unimodal) near ``centre``."""
    from scipy.optimize import minimize_scalar  # slow to import; only the conversions need it

    res = minimize_scalar(objective, bounds=(centre - 25.0, centre + 25.0), method="bounded",
                          options={"xatol": 1e-12})
    return float(res.x)


def zcdp_to_approx_dp(rho, delta, *, method: str = "exact") -> float:
    """The ε such that ρ-zCDP implies (ε, δ)-DP, rounded up (never below the true value).

    Parameters
    ----------
    rho : float
        zCDP parameter, > 0.
    delta : float
        In (0, 1).
    method : {"exact", "standard"}
        ``"exact"``: ``ε = inf_{a>1} aρ + (ln(1/δ) + (a−1) ln(1 − 1/a) − ln a) / (a−1)``
        (Canonne, Kamath & Steinke 2020; clamped at 0, where (0, δ)-DP already
        holds). ``"standard"``: ``ε = ρ + 2 sqrt(ρ ln(1/δ))`` (Bun & Steinke 2016).

    Returns
    -------
    epsilon : float
        At least the conversion's exact value (rigorous rational bounds).

    Examples
    --------
    >>> round(zcdp_to_approx_dp(0.5, 1e-6), 4), round(zcdp_to_approx_dp(0.5, 1e-6, method="standard"), 4)
    (5.2215, 5.7565)
    """
    rho_q = _check_number(rho, "rho")
    delta_q = _check_number(delta, "delta", open_unit=True)
    if method not in CONVERSIONS:
        raise ValueError(f"method must be one of {CONVERSIONS}, got {method!r}")
    out = _epsilon(rho_q, delta_q, method)
    if not math.isfinite(out):
        raise ValueError(f"rho={rho!r} gives an epsilon beyond the range of a double")
    return out


@functools.lru_cache(maxsize=4096)
def _epsilon(rho_q: Fraction, delta_q: Fraction, method: str) -> float:
    log_hi = _ln_bounds(1 / delta_q)[1]
    if method == "standard":
        eps = _standard_upper(rho_q, log_hi)
    else:
        r, L = float(rho_q), float(log_hi)

        def eps_at(log_u: float) -> float:
            return (1.0 + math.exp(log_u)) * r + _g_float(log_u, L)

        # the minimiser sits near a − 1 ≈ sqrt(L/ρ) (exact for the standard bound)
        log_u = _best_log_order(eps_at, 0.5 * (math.log(L) - math.log(r)))
        u = Fraction(math.exp(log_u))
        eps = (1 + u) * rho_q + _g_upper(u, log_hi)
        eps = min(max(eps, Fraction(0)), _standard_upper(rho_q, log_hi))
    try:
        return _float_at_least(eps)
    except OverflowError:
        return math.inf


def _sqrt_upper(q: Fraction) -> Fraction:
    """A rational ``>= sqrt(q)`` within a relative ``2^-_BITS`` (integer square roots: no overflow)."""
    n, d = q.numerator, q.denominator
    k = max(0, _BITS + 2 - (n * d).bit_length() // 2)
    return Fraction(math.isqrt(n * d * 4**k) + 1, d * 2**k)


def _standard_upper(rho: Fraction, log_inv_delta_hi: Fraction) -> Fraction:
    """A rational upper bound on ``ρ + 2 sqrt(ρ L)``."""
    return rho + 2 * _sqrt_upper(rho * log_inv_delta_hi)


def approx_dp_to_zcdp(epsilon, delta, *, method: str = "exact") -> float:
    """The largest ρ whose ρ-zCDP guarantee implies (ε, δ)-DP, certified in exact arithmetic.

    ``"exact"`` (default) inverts the conversion of Canonne, Kamath & Steinke
    (see the module docstring): ``ρ = sup_a (ε − g(a))/a``, found in floating
    point and certified at the order it found, so ``ε(ρ) <= ε`` holds exactly;
    it allows 1.1–3.3× the ρ of the standard bound at the same (ε, δ)
    (ε in [0.1, 10], δ in [1e-12, 1e-3]; docs/estimators.md, *Budgets*).
    ``"standard"`` inverts ``ε = ρ + 2 sqrt(ρ ln(1/δ))``:
    ``ρ = ε² / (sqrt(L + ε) + sqrt(L))²``, then checked as
    ``4ρL <= (ε − ρ)²`` in rationals with an upper bound on ``L = ln(1/δ)``.
    Either result also satisfies ``zcdp_to_approx_dp(ρ, δ, method=method) <= ε``.

    Parameters
    ----------
    epsilon : float
        > 0 (a ``Fraction`` is honoured exactly).
    delta : float
        In (0, 1).
    method : {"exact", "standard"}

    Returns
    -------
    rho : float

    Examples
    --------
    >>> rho = approx_dp_to_zcdp(1.0, 1e-6)
    >>> round(rho, 6), zcdp_to_approx_dp(rho, 1e-6) <= 1.0
    (0.024356, True)
    >>> round(approx_dp_to_zcdp(1.0, 1e-6, method="standard"), 6)
    0.017469
    """
    eps_q = _check_number(epsilon, "epsilon")
    delta_q = _check_number(delta, "delta", open_unit=True)
    if method not in CONVERSIONS:
        raise ValueError(f"method must be one of {CONVERSIONS}, got {method!r}")
    rho = _rho(eps_q, delta_q, method)
    if rho <= 0.0:
        raise ValueError(f"epsilon={epsilon!r} is too small to give a positive rho at delta={delta!r}")
    return rho


@functools.lru_cache(maxsize=4096)
def _rho(eps_q: Fraction, delta_q: Fraction, method: str) -> float:
    log_hi = _ln_bounds(1 / delta_q)[1]
    eps, L = float(eps_q), float(log_hi)
    # the standard bound's inverse, without overflow for huge ε
    try:
        rho_std = (eps / (math.sqrt(L + eps) + math.sqrt(L))) ** 2
    except OverflowError:  # ε within rounding of the largest double, where the square rounds past it: ρ < ε
        rho_std = eps
    if method == "standard":
        rho = rho_std
        while rho > 0.0 and not _standard_holds(Fraction(rho), eps_q, log_hi):
            rho = math.nextafter(rho, 0.0)
    else:
        def neg_rho_at(log_u: float) -> float:
            return -(eps - _g_float(log_u, L)) / (1.0 + math.exp(log_u))

        u = Fraction(math.exp(_best_log_order(neg_rho_at, 0.5 * (math.log(L) - math.log(max(rho_std, 1e-300))))))
        rho_q = (eps_q - _g_upper(u, log_hi)) / (1 + u)  # a ρ with aρ + g(a) <= ε exactly, a = 1 + u
        rho = _float_at_most(rho_q) if rho_q > 0 else 0.0
        # never less than the standard bound gives (the exact conversion is never looser)
        if rho < rho_std:
            rho = _rho(eps_q, delta_q, "standard")
    # Rounding ε(ρ) up may still land a few ulps above ε: step ρ down (by 1, 2, 4… ulps) until it does not.
    step = 1
    while rho > 0.0 and _epsilon(Fraction(rho), delta_q, method) > eps_q:
        rho = max(0.0, rho - step * math.ulp(rho))
        step *= 2
    return rho


def _standard_holds(rho: Fraction, eps: Fraction, log_inv_delta_hi: Fraction) -> bool:
    """``ρ + 2 sqrt(ρ L) <= ε`` in exact arithmetic, for every ``L <= log_inv_delta_hi``."""
    return rho <= eps and 4 * rho * log_inv_delta_hi <= (eps - rho) ** 2

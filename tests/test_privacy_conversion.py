"""(ε, δ) ↔ ρ: the exact conversion, certified in exact arithmetic, against an independent
high-precision evaluation and against OpenDP; odd types and extreme values get clear errors."""

import math
from fractions import Fraction

import numpy as np
import pytest

from paceggm.privacy import accounting, approx_dp_to_zcdp, ledger, zcdp_to_approx_dp
from paceggm.privacy.accounting import CONVERSIONS, _atanh_series, _g_upper, _ln_bounds, _standard_holds

# 60 pairs spread over ε in [1e-3, 50] and δ in [1e-15, 0.3], fixed.
_RNG = np.random.default_rng(20261127)
PAIRS = list(zip(10 ** _RNG.uniform(-3, np.log10(50), 60), 10 ** _RNG.uniform(-15, np.log10(0.3), 60)))


def _mp_exact_epsilon(mpmath, rho, delta):
    """inf over a of the exact conversion, by golden-section search on log(a − 1) at 60 digits."""
    rho, L = mpmath.mpf(rho), mpmath.log(1 / mpmath.mpf(delta))

    def f(t):
        a = 1 + mpmath.e ** t
        return a * rho + (L + (a - 1) * mpmath.log(1 - 1 / a) - mpmath.log(a)) / (a - 1)

    centre = 0.5 * (math.log(float(L)) - math.log(float(rho)))
    lo, hi = mpmath.mpf(centre - 25), mpmath.mpf(centre + 25)
    g = (mpmath.sqrt(5) - 1) / 2
    x1, x2 = hi - g * (hi - lo), lo + g * (hi - lo)
    f1, f2 = f(x1), f(x2)
    for _ in range(200):
        if f1 < f2:
            hi, x2, f2 = x2, x1, f1
            x1 = hi - g * (hi - lo)
            f1 = f(x1)
        else:
            lo, x1, f1 = x1, x2, f2
            x2 = lo + g * (hi - lo)
            f2 = f(x2)
    return min(f1, f2)  # an achieved value: >= the infimum, so a sound upper bound on ε(ρ)


def test_rational_log_bounds_enclose_the_logarithm():
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.prec = 4000
    for x in [Fraction(2), Fraction(1, 3), Fraction(10**6), Fraction(1e-300), 1 + Fraction(1e-200), Fraction(1e300)]:
        lo, hi = _ln_bounds(x)
        exact = mpmath.log(mpmath.mpf(x.numerator) / x.denominator)
        assert mpmath.mpf(lo.numerator) / lo.denominator <= exact <= mpmath.mpf(hi.numerator) / hi.denominator
        assert float(hi - lo) <= 1e-25 * max(1.0, abs(float(lo)))
    for x in (Fraction(0), Fraction(-1, 3)):
        with pytest.raises(ValueError, match="^ln of a non-positive number$"):
            _ln_bounds(x)


def test_the_series_encloses_twice_atanh_before_any_rounding():
    """``_atanh_series(z)`` = partial sum ± a bound on the tail of ``2 atanh(z)``, for ``|z| <= 1/3``: the
    exact value (2000 bits) lies inside, and the series stops once the tail is below ~2⁻¹⁰⁴ of the sum."""
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.prec = 2000
    for z in [Fraction(1, 3), Fraction(-1, 3), Fraction(2, 7), Fraction(-1, 5), Fraction(1, 10**6), Fraction(-3, 2**40)]:
        lo, hi = _atanh_series(z)
        exact = 2 * mpmath.atanh(_mp(mpmath, z))
        assert _mp(mpmath, lo) <= exact <= _mp(mpmath, hi), z
        assert _mp(mpmath, hi - lo) <= mpmath.mpf(2) ** -100 * abs(exact), z


def _mp(mpmath, q):
    return mpmath.mpf(q.numerator) / q.denominator


def test_the_certified_term_bounds_g_from_above_in_high_precision():
    """``_g_upper(u, L)`` >= ``g(1 + u) = (L + u ln(u/(1+u)) − ln(1+u)) / u``, evaluated at 1000 bits, over
    orders from a − 1 = 2⁻⁴⁰ to 10¹²: the bound the certification of ε(ρ) rests on. Each logarithm is
    bounded to ~2⁻⁹⁶ of itself, so the bound is within 2⁻⁹⁰ of the size of the terms it adds."""
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.prec = 1000
    for u in [Fraction(2.0**-40), Fraction(1e-6), Fraction(1, 2), Fraction(3), Fraction(1e6), Fraction(1e12)]:
        for L in [Fraction(1, 3), Fraction(23), _ln_bounds(Fraction(10**6))[1]]:
            m_u, m_L = _mp(mpmath, u), _mp(mpmath, L)
            log_ratio, log_a = mpmath.log(m_u / (1 + m_u)), mpmath.log(1 + m_u)
            exact = (m_L + m_u * log_ratio - log_a) / m_u
            bound = _mp(mpmath, _g_upper(u, L))
            assert exact <= bound, (u, L)
            assert bound - exact <= mpmath.mpf(2) ** -90 * (m_L + m_u * abs(log_ratio) + log_a) / m_u, (u, L)


def test_the_standard_bound_check_is_exact_at_its_boundary():
    """``_standard_holds(ρ, ε, L)`` is ``ρ + 2 sqrt(ρ L) <= ε`` in exact arithmetic: true where the two sides
    are equal (ρ = 1/4, L = 1, ε = 5/4; and ρ = ε with L = 0), false a 2⁻²⁰⁰ further."""
    tiny = Fraction(1, 2**200)
    assert _standard_holds(Fraction(1, 4), Fraction(5, 4), Fraction(1))
    assert not _standard_holds(Fraction(1, 4), Fraction(5, 4) - tiny, Fraction(1))
    assert not _standard_holds(Fraction(1, 4), Fraction(5, 4), Fraction(1) + tiny)
    assert _standard_holds(Fraction(1, 2), Fraction(1, 2), Fraction(0))
    assert not _standard_holds(Fraction(1, 2), Fraction(1, 2), tiny)
    assert not _standard_holds(Fraction(1, 2) + tiny, Fraction(1, 2), Fraction(0))


@pytest.mark.parametrize("at_most, at_least", [
    (accounting._float_at_most, accounting._float_at_least),
    (ledger._float_at_most, None),
])
def test_directed_rounding_gives_the_nearest_float_on_the_safe_side(at_most, at_least):
    """``_float_at_most(q)`` is the largest double <= q, ``_float_at_least(q)`` the smallest >= q: a
    double q comes back unchanged, anything else as the neighbour on the safe side."""
    cases = [Fraction(1, 3), Fraction(2, 3), Fraction(0.1), Fraction(1), Fraction(5e-324), Fraction(1, 10**400),
             Fraction(1e300) + Fraction(1, 7), Fraction(-1, 3), Fraction(7, 2**60) + Fraction(1, 2**200)]
    for q in cases:
        low = at_most(q)
        assert Fraction(low) <= q < Fraction(math.nextafter(low, math.inf)), q
        if at_least is not None:
            high = at_least(q)
            assert Fraction(math.nextafter(high, -math.inf)) < q <= Fraction(high), q
            assert (low == high) == (Fraction(low) == q)


@pytest.mark.parametrize("epsilon, delta", PAIRS[:30])
def test_exact_inverse_never_exceeds_epsilon_in_high_precision(epsilon, delta):
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.dps = 60
    rho = approx_dp_to_zcdp(epsilon, delta)
    exact = _mp_exact_epsilon(mpmath, rho, delta)
    assert exact <= mpmath.mpf(epsilon)
    assert zcdp_to_approx_dp(rho, delta) <= epsilon
    # The forward conversion is above the exact value by no more than the float noise of its objective at
    # the order it found (a few hundred ulps where aρ and g(a) nearly cancel): the order is found to the
    # noise, not to a looser tolerance of the search, which shows as ~1e-12.
    assert zcdp_to_approx_dp(rho, delta) - exact <= 1e-13 * exact
    # and it is the largest such ρ to within 1e-9 (relative)
    assert _mp_exact_epsilon(mpmath, rho * (1 + 1e-9), delta) > mpmath.mpf(epsilon)
    # the standard inverse, checked the same way
    rho_std = approx_dp_to_zcdp(epsilon, delta, method="standard")
    exact_std = mpmath.mpf(rho_std) + 2 * mpmath.sqrt(mpmath.mpf(rho_std) * mpmath.log(1 / mpmath.mpf(delta)))
    assert exact_std <= mpmath.mpf(epsilon)
    assert rho >= rho_std


@pytest.mark.parametrize("rho, delta", [(1e-4, 1e-9), (0.01, 1e-6), (0.5, 1e-6), (3.0, 1e-3), (50.0, 1e-12)])
def test_exact_forward_conversion_is_an_upper_bound_and_tight(rho, delta):
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.dps = 60
    eps = zcdp_to_approx_dp(rho, delta)
    truth = _mp_exact_epsilon(mpmath, rho, delta)
    assert mpmath.mpf(eps) >= truth - mpmath.mpf(10) ** -40  # truth is itself an achieved (upper) value
    assert float(mpmath.mpf(eps) - truth) <= 1e-12 * eps


def _opendp_epsilon(dp, rho, delta):
    meas = dp.m.make_user_measurement(
        dp.atom_domain(T=float, nan=False), dp.absolute_distance(T=float), dp.zero_concentrated_divergence(),
        lambda x: x, lambda d_in: rho)
    return dp.c.make_zCDP_to_approxDP(meas).map(1.0).epsilon(delta)


@pytest.mark.parametrize("epsilon, delta", PAIRS[30:])
def test_agrees_with_opendp(epsilon, delta):
    dp = pytest.importorskip("opendp.prelude")
    dp.enable_features("contrib", "honest-but-curious")
    rho = approx_dp_to_zcdp(epsilon, delta)
    # OpenDP evaluates the same conversion in floating point rounded upward, with its own search for
    # the order a: its ε at our ρ lies within 1e-12 (relative) of ε; the exact value is at most ε
    # (test_exact_inverse_never_exceeds_epsilon_in_high_precision)
    assert _opendp_epsilon(dp, rho, delta) <= epsilon * (1 + 1e-12)
    # our forward conversion and OpenDP's agree, and a larger ρ breaks ε by OpenDP's account too
    assert zcdp_to_approx_dp(rho, delta) == pytest.approx(_opendp_epsilon(dp, rho, delta), rel=1e-11)
    assert _opendp_epsilon(dp, rho * (1 + 1e-9), delta) > epsilon


@pytest.mark.parametrize("epsilon, delta, low, high", [(1.0, 1e-6, 1.3, 1.5), (0.1, 1e-9, 1.35, 1.6), (10.0, 1e-6, 1.1, 1.2)])
def test_gain_over_the_standard_bound(epsilon, delta, low, high):
    gain = approx_dp_to_zcdp(epsilon, delta) / approx_dp_to_zcdp(epsilon, delta, method="standard")
    assert low < gain < high


def test_odd_types_are_honoured_exactly():
    assert approx_dp_to_zcdp(1.0, np.float32(1e-6)) == approx_dp_to_zcdp(1.0, float(np.float32(1e-6)))
    assert approx_dp_to_zcdp(np.float64(1.0), 1e-6) == approx_dp_to_zcdp(1, 1e-6)
    # a Fraction δ is the exact δ: 1/10⁶ is a little above the double 1e-6, so it allows a little more ρ
    assert Fraction(1e-6) < Fraction(1, 10**6)
    assert approx_dp_to_zcdp(1.0, Fraction(1, 10**6)) >= approx_dp_to_zcdp(1.0, 1e-6)
    third = approx_dp_to_zcdp(Fraction(1, 3), 1e-6)
    assert zcdp_to_approx_dp(third, 1e-6) <= Fraction(1, 3)
    assert zcdp_to_approx_dp(np.float32(0.5), np.float32(1e-6)) > 0


def test_extreme_values():
    rho = approx_dp_to_zcdp(1e300, 1e-6)
    assert math.isfinite(rho) and rho < 1e300 and zcdp_to_approx_dp(rho, 1e-6) <= 1e300
    eps = zcdp_to_approx_dp(1e307, 1e-6)
    assert math.isfinite(eps) and eps >= 1e307
    assert zcdp_to_approx_dp(1e-300, 1e-6) == 0.0  # (0, δ)-DP already holds
    with pytest.raises(ValueError, match="beyond the range of a double"):
        zcdp_to_approx_dp(1.7976931348623157e308, 1e-300)
    # ε = the largest double: the standard inverse's square rounds past it (it raised OverflowError)
    for method in CONVERSIONS:
        rho = approx_dp_to_zcdp(1.7976931348623157e308, 1e-6, method=method)
        assert 0 < rho < 1.7976931348623157e308 and zcdp_to_approx_dp(rho, 1e-6, method=method) <= 1.7976931348623157e308


@pytest.mark.parametrize("epsilon, delta, error, match", [
    (True, 1e-6, TypeError, "epsilon must be a real number"),
    ("1", 1e-6, TypeError, "epsilon must be a real number"),
    (1.0, "1e-6", TypeError, "delta must be a real number"),
    (1.0, None, TypeError, "delta must be a real number"),
    (math.inf, 1e-6, ValueError, "epsilon must be finite"),
    (math.nan, 1e-6, ValueError, "epsilon must be finite"),
    (0.0, 1e-6, ValueError, "epsilon must be > 0"),
    (1.0, np.float32(1.0), ValueError, "open interval"),
    (1.0, Fraction(3, 2), ValueError, "open interval"),
    (1.0, Fraction(1, 10**400), ValueError, "below the smallest double"),
    (1e-320, 0.5, None, None),
    # the whole message: what is wrong, with the value or type given
    ("1", 1e-6, TypeError, r"^epsilon must be a real number \(int, float, NumPy scalar or Fraction\), got str$"),
    (1.0, 0.0, ValueError, r"^delta must be a number in the open interval \(0, 1\), got 0\.0$"),
    (Fraction(10**400), 1e-6, ValueError, r"^epsilon=Fraction\(10+, 1\) is beyond the range of a double$"),
    (1.7976931348623157e308, 1e-6, None, None),  # the largest double is a valid (huge) budget
])
def test_bad_inputs_get_clear_errors(epsilon, delta, error, match):
    if error is None:  # a subnormal ε is still a valid, tiny budget; the largest double a huge one
        assert approx_dp_to_zcdp(epsilon, delta) > 0
        return
    with pytest.raises(error, match=match):
        approx_dp_to_zcdp(epsilon, delta)
    with pytest.raises((TypeError, ValueError)):
        zcdp_to_approx_dp(epsilon, delta) if not isinstance(epsilon, str) else zcdp_to_approx_dp(1.0, epsilon)
    with pytest.raises(ValueError, match="method"):
        approx_dp_to_zcdp(1.0, 1e-6, method="rdp")


def test_extreme_budgets_and_bounds_are_refused_before_anything_is_spent():
    from paceggm import PACEGGM
    from paceggm.privacy import ZCDPAccountant

    acc = ZCDPAccountant(1e308)
    X = np.random.default_rng(0).uniform(-1, 1, size=(100, 3))
    for kw in (dict(rho=1e307), dict(rho=1.0, bound=1e150)):
        with pytest.raises(ValueError, match="noise scales a double cannot hold"):
            PACEGGM(**kw, accountant=acc).fit(X)
    assert acc.spent == 0.0


@pytest.mark.parametrize("delta, error, match", [
    ("1e-6", TypeError, r"^delta must be a real number \(int, float, NumPy scalar or Fraction\), got str$"),
    (1.5, ValueError, r"^delta must be a number in the open interval \(0, 1\), got 1\.5$"),
    (math.nan, ValueError, r"^delta must be finite, got nan$"),
])
def test_the_forward_conversion_names_a_bad_delta(delta, error, match):
    with pytest.raises(error, match=match):
        zcdp_to_approx_dp(0.5, delta)


@pytest.mark.parametrize("rho, error, match", [
    ("0.5", TypeError, r"^rho must be a real number \(int, float, NumPy scalar or Fraction\), got str$"),
    (-0.5, ValueError, r"^rho must be > 0, got -0\.5$"),
    (math.inf, ValueError, r"^rho must be finite, got inf$"),
])
def test_the_forward_conversion_names_a_bad_rho(rho, error, match):
    with pytest.raises(error, match=match):
        zcdp_to_approx_dp(rho, 1e-6)


def test_outward_rounding_keeps_the_rationals_short_and_on_the_safe_side():
    """``_round_out`` keeps _BITS significant bits (a power-of-two denominator, a short numerator), down or up."""
    from paceggm.privacy.accounting import _BITS, _round_out

    rng = np.random.default_rng(4)
    values = [Fraction(int(a) * 10**12 + 1, int(b)) * s for a, b, s in zip(rng.integers(1, 10**18, 60),
                                                                         rng.integers(1, 10**18, 60), np.tile([1, -1], 30))]
    for q in [*values, Fraction(1, 3), Fraction(-22, 7), Fraction(10**40, 3), Fraction(1)]:
        lo, hi = _round_out(q, down=True), _round_out(q, down=False)
        assert lo <= q <= hi and hi - lo <= abs(q) * Fraction(2) ** (1 - _BITS)
        for r in (lo, hi):
            den = r.denominator
            assert den & (den - 1) == 0, r  # a power of two
            assert abs(r.numerator).bit_length() <= _BITS + 2 or den == 1, r
    assert _round_out(Fraction(0), down=True) == 0 == _round_out(Fraction(0), down=False)


def test_the_square_root_bound_is_above_and_within_its_stated_precision():
    """``_sqrt_upper(q)`` is at least sqrt(q) and within a relative 2^-_BITS of it, whatever q's size."""
    from paceggm.privacy.accounting import _BITS, _sqrt_upper

    rng = np.random.default_rng(5)
    qs = [Fraction(int(a), int(b)) for a, b in zip(rng.integers(1, 10**18, 80), rng.integers(1, 10**18, 80))]
    qs += [Fraction(2), Fraction(1, 10**300), Fraction(10**300, 7), Fraction(3, 10**40)]
    for q in qs:
        r = _sqrt_upper(q)
        assert r * r >= q, q  # never below the root
        assert (r * (1 - Fraction(1, 2**_BITS))) ** 2 <= q, q  # and within 2^-_BITS of it

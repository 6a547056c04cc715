"""Privacy inputs and accounting as DP users expect them: (ε, δ), accountant, refits, centring, warnings."""

import math
import warnings
from fractions import Fraction

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.model_selection import cross_val_score

from paceggm import PACEGGM, pace_ggm
from paceggm.baselines import SSP, AdaSSP, DiagonalOnly, PACEGGMRegression
from paceggm.exceptions import BudgetExceededError, PrivacyBudgetWarning, PrivacyLeakWarning
from paceggm.privacy import ZCDPAccountant, approx_dp_to_zcdp, zcdp_to_approx_dp

from conftest import ALL, COVARIANCE


def _X(n=500, d=3, seed=0):
    return np.random.default_rng(seed).uniform(-1, 1, size=(n, d))


def _fit(est, X):
    return est.fit(X[:, :-1], X[:, -1]) if isinstance(est, (AdaSSP, PACEGGMRegression)) else est.fit(X)


def _exact_total(est) -> Fraction:
    return sum((Fraction(c.rho) for c in est.ledger_), Fraction(0))


# --- (ε, δ) ↔ ρ -------------------------------------------------------------------------


@pytest.mark.parametrize("epsilon", [1e-6, 0.01, 0.5, 1.0, 3.0, 10.0, 1e3])
@pytest.mark.parametrize("delta", [1e-12, 1e-6, 1e-3, 0.5])
def test_approx_dp_to_zcdp_is_the_exact_inverse_rounded_safe(epsilon, delta):
    rho = approx_dp_to_zcdp(epsilon, delta, method="standard")
    # converting back never promises less than asked, and gives ε back to rounding
    assert zcdp_to_approx_dp(rho, delta, method="standard") <= epsilon
    assert zcdp_to_approx_dp(rho, delta, method="standard") == pytest.approx(epsilon, rel=1e-12)
    # the closed form of the inverse
    log_inv = math.log(1 / delta)
    assert rho == pytest.approx((math.sqrt(log_inv + epsilon) - math.sqrt(log_inv)) ** 2, rel=1e-9)


def test_conversion_round_trip_from_rho():
    eps = zcdp_to_approx_dp(0.5, 1e-6)
    assert round(eps, 4) == 5.2215
    assert approx_dp_to_zcdp(eps, 1e-6) == pytest.approx(0.5, rel=1e-14)
    assert approx_dp_to_zcdp(eps, 1e-6) <= 0.5 * (1 + 1e-14)


@pytest.mark.parametrize("epsilon, delta", [(0.0, 1e-6), (-1.0, 1e-6), (1.0, 0.0), (1.0, 1.0), (1.0, -1e-3)])
def test_conversion_refuses_bad_budgets(epsilon, delta):
    with pytest.raises(ValueError, match="epsilon|delta"):
        approx_dp_to_zcdp(epsilon, delta)


@pytest.mark.parametrize("cls", ALL, ids=lambda c: c.__name__)
def test_every_estimator_takes_epsilon_delta(cls):
    est = _fit(cls(epsilon=2.0, delta=1e-6, random_state=0), _X())
    rho = approx_dp_to_zcdp(2.0, 1e-6)
    assert _exact_total(est) <= Fraction(rho) and est.rho_spent_ == pytest.approx(rho, rel=1e-12)
    assert zcdp_to_approx_dp(est.rho_spent_, 1e-6) <= 2.0


@pytest.mark.parametrize("cls", ALL, ids=lambda c: c.__name__)
def test_budget_must_be_given_exactly_once(cls):
    X = _X()
    with pytest.raises(ValueError, match="no privacy budget"):
        _fit(cls(), X)
    with pytest.raises(ValueError, match="not both"):
        _fit(cls(rho=1.0, epsilon=1.0, delta=1e-6), X)
    with pytest.raises(ValueError, match="epsilon needs delta"):
        _fit(cls(epsilon=1.0), X)
    with pytest.raises(ValueError, match="delta"):
        _fit(cls(epsilon=1.0, delta=2.0), X)


# --- the accountant -----------------------------------------------------------------------


@pytest.mark.parametrize("cls", ALL, ids=lambda c: c.__name__)
def test_shared_accountant_refuses_an_overspend_and_spends_nothing_then(cls):
    X = _X()
    acc = ZCDPAccountant(1.0)
    _fit(cls(rho=0.4, accountant=acc, random_state=0), X)
    _fit(cls(rho=0.4, accountant=acc, random_state=1), X)
    refused = cls(rho=0.4, accountant=acc, random_state=2)
    with pytest.raises(BudgetExceededError, match="exceed"):
        _fit(refused, X)
    assert acc.spent_exact == Fraction(0.4) * 2 and acc.spent_exact <= Fraction(1.0)
    assert not hasattr(refused, "rho_spent_")
    _fit(cls(rho=acc.remaining, accountant=acc, random_state=3), X)  # exactly what is left: accepted
    assert acc.spent_exact <= Fraction(1.0) and acc.remaining < 1e-15


def test_bad_input_with_an_accountant_spends_nothing():
    acc = ZCDPAccountant(1.0)
    X = _X()
    X[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        PACEGGM(rho=0.5, accountant=acc).fit(X)
    with pytest.raises(ValueError, match="alpha"):
        PACEGGM(rho=0.5, alpha=2.0, accountant=acc).fit(_X())
    for cls in ALL:
        with pytest.raises(TypeError, match="random_state"):
            _fit(cls(rho=0.5, accountant=acc, random_state="seed"), _X())
        with pytest.raises(ValueError, match="outside"):
            _fit(cls(rho=0.5, accountant=acc), _X() * 3)
    assert acc.spent == 0.0 and acc.charges == ()


def test_accountant_survives_clone_and_cross_validation():
    acc = ZCDPAccountant(1.0)
    est = SSP(rho=0.25, accountant=acc, random_state=0)
    assert clone(est).accountant is acc  # copying the accountant would double the budget
    X = _X(n=600)
    cross_val_score(est, X, cv=3, error_score="raise")  # three fits: 0.75
    assert acc.spent == 0.75
    with pytest.raises(BudgetExceededError):
        cross_val_score(est, X, cv=2, error_score="raise")  # the second fold cannot be paid for
    assert acc.spent == 1.0


def test_accountant_must_be_an_accountant():
    with pytest.raises(TypeError, match="accountant"):
        PACEGGM(rho=1.0, accountant=1.0).fit(_X())


def test_accountant_from_epsilon_delta():
    acc = ZCDPAccountant.from_approx_dp(1.0, 1e-6)
    assert acc.budget == approx_dp_to_zcdp(1.0, 1e-6)


# --- refitting without an accountant ------------------------------------------------------


@pytest.mark.parametrize("cls", ALL, ids=lambda c: c.__name__)
def test_second_fit_warns_and_rho_spent_counts_both(cls):
    X = _X()
    est = cls(rho=0.3, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyBudgetWarning)
        _fit(est, X)
    first = _exact_total(est)
    assert est.rho_spent_ == pytest.approx(0.3, rel=1e-15) and Fraction(est.rho_spent_) <= first
    with pytest.warns(PrivacyBudgetWarning, match="fitted again"):
        _fit(est, X)
    total = first + _exact_total(est)
    # the exact total of both fits, rounded down to the float below it (as the ledger reports)
    assert Fraction(est.rho_spent_) <= total < Fraction(math.nextafter(est.rho_spent_, math.inf))
    assert est.rho_spent_ == pytest.approx(0.6, rel=1e-15)


def test_refit_with_an_accountant_does_not_warn_the_accountant_counts():
    acc = ZCDPAccountant(1.0)
    est = PACEGGM(rho=0.3, accountant=acc, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyBudgetWarning)
        est.fit(_X())
        est.fit(_X())
    assert acc.spent == float(Fraction(0.3) * 2)


# --- centring -----------------------------------------------------------------------------


def test_assume_centered_default_is_the_second_moment_and_false_estimates_the_covariance():
    # Mean 0.5, variance 1/12: the second moment is 1/3, the covariance 0.083.
    X = np.random.default_rng(5).uniform(0, 1, size=(20000, 2))
    second_moment = PACEGGM(rho=10.0, random_state=0).fit(X)
    np.testing.assert_allclose(np.diag(second_moment.covariance_), 1 / 3, atol=0.01)
    np.testing.assert_array_equal(second_moment.location_, 0.0)
    centred = PACEGGM(rho=10.0, assume_centered=False, random_state=0).fit(X)
    np.testing.assert_allclose(centred.location_, 0.5, atol=0.01)
    np.testing.assert_allclose(np.diag(centred.covariance_), 1 / 12, atol=0.01)
    truth = np.cov(X, rowvar=False, bias=True)
    assert np.abs(centred.covariance_ - truth).max() < 0.01


@pytest.mark.parametrize("cls", COVARIANCE, ids=lambda c: c.__name__)
def test_private_mean_spends_its_stated_share_exactly(cls):
    rho, fraction = 0.7, 0.2
    est = cls(rho=rho, assume_centered=False, mean_fraction=fraction, random_state=0).fit(_X() * 0.5 + 0.4)
    mean_charge = est.ledger_[0]
    assert mean_charge.purpose == "mean (centring)" and mean_charge.rho == fraction * rho
    assert _exact_total(est) <= Fraction(rho)
    assert float(Fraction(rho) - _exact_total(est)) < 1e-15  # the rest went to the covariance
    assert np.all(np.abs(est.location_) <= 1.0)


@pytest.mark.parametrize("bad", [0.0, 1.0, -0.1, 1.5])
def test_mean_fraction_outside_the_unit_interval_is_refused(bad):
    with pytest.raises(ValueError, match="mean_fraction"):
        SSP(rho=1.0, assume_centered=False, mean_fraction=bad).fit(_X())


def test_assume_centered_must_be_a_bool():
    with pytest.raises(TypeError, match="assume_centered"):
        SSP(rho=1.0, assume_centered="no").fit(_X())


# --- the guarantee: waive warns, nothing data-dependent leaves ----------------------------


@pytest.mark.parametrize("cls", ALL, ids=lambda c: c.__name__)
def test_waive_warns_that_the_guarantee_is_void(cls):
    with pytest.warns(PrivacyLeakWarning, match="guarantee does not hold") as record:
        _fit(cls(rho=1.0, bound_check="waive", random_state=0), _X())
    assert sum(issubclass(w.category, PrivacyLeakWarning) for w in record) == 1
    for policy in ("raise", "clip"):
        with warnings.catch_warnings():
            warnings.simplefilter("error", PrivacyLeakWarning)
            _fit(cls(rho=1.0, bound_check=policy, random_state=0), _X())


def test_waive_warns_in_the_function_too():
    with pytest.warns(PrivacyLeakWarning):
        pace_ggm(_X(), rho=1.0, bound_check="waive", random_state=0)


@pytest.mark.parametrize("cls", ALL, ids=lambda c: c.__name__)
def test_messages_carry_no_data_values_or_counts(cls):
    X = _X()
    X[:7, 0] = 7.123456789
    with pytest.raises(ValueError) as err:
        _fit(cls(rho=1.0), X)
    msg = str(err.value)
    assert "outside" in msg and "7.12" not in msg and "7 " not in msg.replace("[-", "")
    X = _X()
    X[:3, 1] = np.nan
    with pytest.raises(ValueError) as err:
        _fit(cls(rho=1.0), X)
    assert "NaN" in str(err.value) and "3" not in str(err.value)


@pytest.mark.parametrize("cls", ALL, ids=lambda c: c.__name__)
def test_no_clipping_counts_are_released(cls):
    X = _X() * 1.5
    est = _fit(cls(rho=1.0, bound_check="clip", random_state=0), X)
    assert not [name for name in vars(est) if "clipped" in name or "outside" in name]


def test_private_mean_noise_has_the_stated_scale():
    # location_ − mean(X) ~ N(0, σ²) per coordinate with σ = (2 sqrt(d) B / n) / sqrt(2 ρ_mean).
    from scipy import stats

    n, d, rho, fraction = 50, 2, 1.0, 0.5
    X = np.random.default_rng(11).uniform(-0.3, 0.3, size=(n, d))
    sigma = (2 * math.sqrt(d) * 1.0 / n) / math.sqrt(2 * fraction * rho)
    z = np.concatenate([
        (DiagonalOnly(rho=rho, assume_centered=False, mean_fraction=fraction, random_state=seed).fit(X).location_
         - X.mean(axis=0)) / sigma
        for seed in range(400)])
    assert stats.kstest(z, "norm").pvalue > 1e-3
    assert 0.9 < z.std() < 1.1

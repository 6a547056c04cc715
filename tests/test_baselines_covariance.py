"""SSP (three versions), DiagonalOnly, GaussCov, SeparateCov, AdaptiveCov."""

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from paceggm.base import PrivateCovarianceEstimator
from paceggm.baselines import (
    SSP,
    AdaptiveCov,
    DiagonalOnly,
    GaussCov,
    SeparateCov,
    SSPProjected,
    SSPTight,
)
from paceggm.baselines.dong_liang_yi import (
    _dyadic_counts,
    _gaussian_norm_bound,
    _wigner_frobenius_bound,
    _wigner_spectral_bound,
)
from paceggm.privacy import Charge

ALL = [SSP, SSPProjected, SSPTight, DiagonalOnly, GaussCov, SeparateCov, AdaptiveCov]
PSD_METHODS = [SSPProjected, DiagonalOnly, GaussCov, SeparateCov, AdaptiveCov]


def _data(n=400, d=4, seed=0, bound=1.0):
    rng = np.random.default_rng(seed)
    # unequal column scales: distinct, well-separated eigenvalues
    X = rng.uniform(-1, 1, size=(n, d)) * np.linspace(1.0, 0.3, d)
    X[:, 1] = 0.5 * X[:, 0] + 0.5 * X[:, 1]
    return bound * X


def _chi2_ok(z, alpha=1e-3):
    """Two-sided χ² test that z is iid N(0, 1)."""
    z = np.ravel(z)
    q = float(np.sum(z**2))
    p = stats.chi2.cdf(q, df=z.size)
    return alpha / 2 < p < 1 - alpha / 2


# --- interface, budget, reproducibility -----------------------------------------------


@pytest.mark.parametrize("cls", ALL)
@pytest.mark.parametrize("rho", [1.0, 0.3, 0.01, 2.7])
def test_charges_add_to_rho_and_never_exceed_it(cls, rho):
    est = cls(rho, random_state=0).fit(_data())
    assert isinstance(est, PrivateCovarianceEstimator)
    assert all(isinstance(c, Charge) for c in est.ledger_)
    total = sum(Fraction(c.rho) for c in est.ledger_)
    assert total <= Fraction(rho)
    # The last charge is ledger.remaining (rounded down); the rest is below one ulp of rho.
    assert Fraction(rho) - total < Fraction(math.ulp(rho))
    assert est.rho_spent_ <= rho and est.rho_spent_ == pytest.approx(rho, rel=1e-15)
    if rho == 1.0:
        assert total == 1 and est.rho_spent_ == 1.0


def test_budget_splits_are_the_published_ones():
    X = _data()
    assert [c.rho for c in SSP(0.5, random_state=0).fit(X).ledger_] == [0.5]
    assert [c.rho for c in DiagonalOnly(1.0, random_state=0).fit(X).ledger_] == [0.25] * 4
    assert [c.rho for c in SeparateCov(1.0, random_state=0).fit(X).ledger_] == [0.5, 0.5]
    ada = AdaptiveCov(1.0, random_state=0).fit(X).ledger_
    assert [c.rho for c in ada] == [0.125, 0.125, 0.75] if ada[-1].purpose.startswith("gauss") else [
        0.125, 0.125, 0.375, 0.375]


@pytest.mark.parametrize("cls", ALL)
def test_identical_random_state_gives_identical_output(cls):
    X = _data()
    a = cls(0.1, random_state=42).fit(X).covariance_
    b = cls(0.1, random_state=42).fit(X).covariance_
    c = cls(0.1, random_state=43).fit(X).covariance_
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    assert np.allclose(a, a.T, atol=1e-12)


@pytest.mark.parametrize("cls", PSD_METHODS)
def test_psd_where_promised(cls):
    X = _data(n=60, d=5)
    for seed in range(5):
        cov = cls(0.01, random_state=seed).fit(X).covariance_
        assert np.linalg.eigvalsh(cov).min() >= -1e-12 * max(1.0, np.abs(cov).max())


def test_ssp_as_released_is_not_psd_at_small_rho():
    cov = SSP(1e-3, random_state=0).fit(_data(n=60, d=5)).covariance_
    assert np.linalg.eigvalsh(cov).min() < 0


@pytest.mark.parametrize("cls", [SSP, SSPProjected, SSPTight, GaussCov, SeparateCov, AdaptiveCov])
def test_huge_rho_recovers_the_covariance(cls):
    X = _data(n=1000, d=4)
    truth = X.T @ X / X.shape[0]
    est = cls(1e12, random_state=0).fit(X)
    np.testing.assert_allclose(est.covariance_, truth, atol=1e-6)


def test_diagonal_only_huge_rho_recovers_the_variances():
    X = _data()
    truth = X.T @ X / X.shape[0]
    cov = DiagonalOnly(1e12, random_state=0).fit(X).covariance_
    np.testing.assert_allclose(np.diag(cov), np.diag(truth), atol=1e-7)
    assert np.count_nonzero(cov - np.diag(np.diag(cov))) == 0


# --- noise scales (χ² tests, fixed seeds) ---------------------------------------------


@pytest.mark.parametrize(
    ("cls", "factor"), [(SSP, math.sqrt(2.0)), (SSPProjected, math.sqrt(2.0)), (SSPTight, 1.0), (GaussCov, math.sqrt(2.0))]
)
def test_full_matrix_noise_scale(cls, factor):
    # Moderate noise, eigenvalues far from the clipping limits [0, dB²]: the
    # projection (SSPProjected) and eigenvalue clipping (GaussCov) are inactive.
    n, d, rho, B = 2000, 4, 2.0, 0.8
    X = _data(n=n, d=d, bound=B)
    truth = X.T @ X / n
    sigma = factor * d * B**2 / n / math.sqrt(2 * rho)
    upper = np.triu_indices(d)
    z = []
    for seed in range(60):
        est = cls(rho, bound=B, random_state=seed).fit(X)
        z.append((est.covariance_ - truth)[upper] / sigma)
        if hasattr(est, "sigma_"):
            assert est.sigma_ == pytest.approx(sigma, rel=1e-12)
    assert _chi2_ok(np.array(z))
    # the test has power: a scale off by 20% either way is rejected
    assert not _chi2_ok(np.array(z) / 1.2) and not _chi2_ok(np.array(z) * 1.2)


def test_diagonal_only_noise_scale():
    n, d, rho = 500, 5, 1.0
    X = _data(n=n, d=d)
    truth = np.diag(X.T @ X / n)
    sigma = (2.0 / n) / math.sqrt(2 * rho / d)
    z = []
    for seed in range(100):
        est = DiagonalOnly(rho, random_state=seed).fit(X)
        np.testing.assert_allclose(est.sigmas_, sigma, rtol=1e-12)
        z.append((np.diag(est.covariance_) - truth) / sigma)
    assert np.min(np.diag(est.covariance_)) > 0  # no clipping at this scale
    assert _chi2_ok(np.array(z))


def test_separatecov_eigenvalue_noise_scale():
    # eigenvalues released with sensitivity sqrt(2) r²/n at ρ/2, r² = d B² in data units
    n, d, rho = 4000, 3, 1.0
    X = np.random.default_rng(5).uniform(-1, 1, size=(n, d)) * np.array([1.0, 0.5, 0.25])
    true_values = np.linalg.eigvalsh(X.T @ X / n)
    sigma = d * math.sqrt(2.0) / n / math.sqrt(2 * rho / 2)
    assert np.diff(true_values).min() > 20 * sigma  # no reordering by the noise
    z = [(np.linalg.eigvalsh(SeparateCov(rho, random_state=s).fit(X).covariance_) - true_values) / sigma
         for s in range(100)]
    assert _chi2_ok(np.array(z))


# --- AdaptiveCov ----------------------------------------------------------------------


def test_adaptivecov_picks_gauss_on_low_dimensional_large_data():
    X = _data(n=5000, d=3)
    for seed in range(5):
        est = AdaptiveCov(1.0, random_state=seed).fit(X)
        assert est.branch_ == "gauss"
        assert est.ledger_[-1].purpose.startswith("gausscov")


def test_adaptivecov_picks_separate_on_high_dimensional_small_data():
    # n small against d: GaussCov's Frobenius bound ω ≈ d dominates SeparateCov's.
    X = np.random.default_rng(0).choice([-1.0, 1.0], size=(200, 100))
    for seed in range(5):
        est = AdaptiveCov(1.0, random_state=seed).fit(X)
        assert est.branch_ == "separate"
        assert [c.purpose.split(":")[0] for c in est.ledger_[-2:]] == ["separatecov"] * 2


def test_adaptivecov_branch_follows_the_reference_bounds():
    n, d, rho, beta = 300, 8, 0.05, 0.1
    X = _data(n=n, d=d)
    for seed in range(6):
        est = AdaptiveCov(rho, failure_prob=beta, random_state=seed).fit(X)
        rho1, beta1 = 0.75 * rho, 0.75 * beta
        sep1 = (2**1.25 * math.sqrt(est.trace_bound_ / n) / rho1**0.25
                * math.sqrt(_wigner_spectral_bound(d, beta1 / 2)) / 6)
        sep2 = math.sqrt(2) * _gaussian_norm_bound(d, beta1 / 2) / math.sqrt(rho1) / n
        gauss = _wigner_frobenius_bound(d, beta1) / math.sqrt(rho1) / n
        k = -est.level_index_
        expected = "gauss" if 2.0**k * sep1 + 4.0**k * sep2 >= 4.0**k * gauss else "separate"
        assert est.branch_ == expected
        assert est.radius_ == pytest.approx(min(2.0 ** (k + 1), 1.0) * math.sqrt(d))
        norms = np.linalg.norm(X, axis=1)
        assert _rows_clipped(X, est) == int(np.count_nonzero(norms > est.radius_ * (1 + 1e-12)))


def _rows_clipped(X, est) -> int:
    """Rows AdaptiveCov shortened: a count the estimator does not release (no budget pays for it)."""
    return int(np.count_nonzero(np.linalg.norm(X, axis=1) > est.radius_))


def test_adaptivecov_clips_a_few_long_rows_that_cost_less_bias_than_noise():
    # 1% of rows at the corner of the cube, the rest tiny, d = 40: clipping the long rows
    # often costs less bias than the noise GaussCov/SeparateCov would add at radius sqrt(d) B.
    rng = np.random.default_rng(3)
    X = rng.uniform(-0.02, 0.02, size=(2000, 40))
    X[:20] = rng.choice([-1.0, 1.0], size=(20, 40))
    fits = [AdaptiveCov(1.0, random_state=seed).fit(X) for seed in range(10)]
    clipped = [e for e in fits if _rows_clipped(X, e) > 0]
    assert len(clipped) >= 3
    for e in clipped:
        assert e.radius_ < math.sqrt(40) and _rows_clipped(X, e) >= 20


def test_adaptivecov_does_not_clip_at_huge_rho():
    # noise-free bounds: the search stops at or before the bin of the longest row
    rng = np.random.default_rng(4)
    X = rng.uniform(-1, 1, size=(1000, 4))
    X *= 0.4 / np.linalg.norm(X, axis=1).max()
    for seed in range(5):
        est = AdaptiveCov(1e10, random_state=seed).fit(X)
        assert _rows_clipped(X, est) == 0 and est.radius_ >= 0.4
        assert est.level_index_ <= 3  # 0.4 / sqrt(4) = 0.2 lies in the bin (1/8, 1/4]


def test_dyadic_counts_match_the_reference_binning():
    norms = np.array([1.0, 0.75, 0.5, 0.3, 0.25, 0.0, 2.0**-40])
    counts = _dyadic_counts(norms, levels=10)
    # bins (2^-l, 2^(1-l)]: 1 and .75 → 1; .5 and .3 → 2; .25 → 3; 0 and 2^-40 → none
    np.testing.assert_array_equal(counts, [0, 2, 2, 1, 0, 0, 0, 0, 0, 0])


# --- bad input ------------------------------------------------------------------------


@pytest.mark.parametrize("cls", ALL)
def test_bad_input_raises_clear_errors(cls):
    X = _data()
    with pytest.raises(ValueError, match="rho"):
        cls(0.0).fit(X)
    with pytest.raises(ValueError, match="rho"):
        cls(-1.0).fit(X)
    with pytest.raises(TypeError, match="rho"):
        cls("1").fit(X)
    with pytest.raises(ValueError, match="bound"):
        cls(1.0, bound=0.0).fit(X)
    bad = X.copy()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        cls(1.0).fit(bad)
    with pytest.raises(ValueError, match="outside"):
        cls(1.0).fit(X * 3)
    with pytest.raises(ValueError, match="2-D"):
        cls(1.0).fit(X[:, 0])
    with pytest.raises(ValueError, match="bound_check"):
        cls(1.0, bound_check="ignore").fit(X)
    with pytest.raises(TypeError, match="random_state"):
        cls(1.0, random_state="seed").fit(X)
    with pytest.raises(ValueError, match="Invalid parameter 'alpha'"):
        cls(1.0).set_params(alpha=0.3)


def test_clip_policy_clips_and_reports_nothing_data_dependent():
    X = _data() * 1.5
    est = SSP(1.0, bound_check="clip", random_state=0).fit(X)
    np.testing.assert_array_equal(est.covariance_, SSP(1.0, random_state=0).fit(np.clip(X, -1, 1)).covariance_)
    assert not [a for a in vars(est) if "clip" in a or "outside" in a]


@pytest.mark.parametrize("beta", [0.0, 1.0, -0.1, 2.0])
def test_adaptivecov_rejects_failure_prob_outside_unit_interval(beta):
    with pytest.raises(ValueError, match="failure_prob"):
        AdaptiveCov(1.0, failure_prob=beta).fit(_data())


def test_get_params_and_repr():
    est = AdaptiveCov(0.5, failure_prob=0.2, random_state=1)
    assert est.get_params() == {"rho": 0.5, "epsilon": None, "delta": None, "accountant": None,
                                "failure_prob": 0.2, "bound": 1.0, "bound_check": "raise",
                                "assume_centered": True, "mean_fraction": 0.1, "noise": "fast", "random_state": 1}
    assert repr(est) == "AdaptiveCov(failure_prob=0.2, random_state=1, rho=0.5)"


@pytest.mark.parametrize("cls", ALL)
@pytest.mark.parametrize(("n", "d"), [(2, 1), (3, 2), (50, 1)])
def test_tiny_shapes(cls, n, d):
    X = np.random.default_rng(n + d).uniform(-1, 1, size=(n, d))
    est = cls(0.5, random_state=0).fit(X)
    assert est.covariance_.shape == (d, d) and np.all(np.isfinite(est.covariance_))

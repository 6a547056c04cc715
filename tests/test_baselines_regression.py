"""AdaSSP and PACE-GGM regression."""

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats
from sklearn.exceptions import DataConversionWarning, NotFittedError

from paceggm.baselines import AdaSSP, PACEGGMRegression
from paceggm.privacy import Charge


def _data(n=2000, d=3, seed=0, noise=0.05):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, d)) * 0.5
    y = np.clip(X @ np.array([0.6, -0.4, 0.3, 0.1, -0.2][:d]) + noise * rng.normal(size=n), -1, 1)
    return X, y


def _chi2_ok(z, alpha=1e-3):
    z = np.ravel(z)
    p = stats.chi2.cdf(float(np.sum(z**2)), df=z.size)
    return alpha / 2 < p < 1 - alpha / 2


def _assert_spends_rho(est, rho):
    assert all(isinstance(c, Charge) for c in est.ledger_)
    total = sum(Fraction(c.rho) for c in est.ledger_)
    assert Fraction(rho) - Fraction(math.ulp(rho)) < total <= Fraction(rho)
    assert est.rho_spent_ <= rho


@pytest.mark.parametrize("rho", [1.0, 0.3, 0.01])
def test_adassp_spends_a_third_on_each_release(rho):
    est = AdaSSP(rho, random_state=0).fit(*_data())
    _assert_spends_rho(est, rho)
    assert [c.purpose for c in est.ledger_] == ["ridge: smallest eigenvalue", "release: X'X/n", "release: X'y/n"]
    assert est.ledger_[0].rho == est.ledger_[1].rho == rho / 3
    if rho == 1.0:
        assert est.rho_spent_ == pytest.approx(1.0, abs=1e-16)


def test_pace_ggm_regression_spends_a_third_on_the_ridge_and_the_rest_on_pace_ggm():
    rho = 0.3
    est = PACEGGMRegression(rho, random_state=0).fit(*_data())
    _assert_spends_rho(est, rho)
    assert est.ledger_[0] == Charge(rho / 3, "ridge: smallest eigenvalue")
    assert all(c.purpose.startswith("pace-ggm: ") for c in est.ledger_[1:])
    assert est.pace_ggm_.rho == pytest.approx(2 * rho / 3, rel=1e-15)
    assert [c.rho for c in est.ledger_[1:]] == [c.rho for c in est.pace_ggm_.ledger_]
    assert est.covariance_.shape == (4, 4)
    # θ is the ridge solution from the blocks of the one covariance estimate
    cov = est.covariance_
    np.testing.assert_allclose(est.coef_, np.linalg.solve(cov[:3, :3] + est.ridge_ * np.eye(3), cov[:3, 3]))


@pytest.mark.parametrize("cls", [AdaSSP, PACEGGMRegression])
def test_huge_rho_recovers_least_squares(cls):
    X, y = _data()
    ols = np.linalg.lstsq(X, y, rcond=None)[0]
    est = cls(1e12, random_state=0).fit(X, y)
    assert est.ridge_ == 0.0
    np.testing.assert_allclose(est.coef_, ols, rtol=1e-4, atol=1e-6)
    assert est.intercept_ == 0.0
    np.testing.assert_allclose(est.predict(X), X @ est.coef_)


def test_ridge_kicks_in_on_an_ill_conditioned_design_and_recovers_ridge_regression():
    # Two almost collinear columns: λ_min ≈ 0, so the private ridge is Wang's noise bound.
    rng = np.random.default_rng(1)
    x = rng.uniform(-0.5, 0.5, size=2000)
    X = np.column_stack([x, x + 1e-4 * rng.normal(size=2000)])
    y = np.clip(X @ np.array([0.5, 0.5]), -1, 1)
    est = AdaSSP(1.0, random_state=0).fit(X, y)
    assert est.ridge_ > 0 and est.lambda_min_ == 0.0
    d, n, rho3 = 2, 2000, 1.0 / 3
    sigma_xx = math.sqrt(2) * d / n / math.sqrt(2 * rho3)
    assert est.ridge_ == pytest.approx(sigma_xx * math.sqrt(d * math.log(2 * d * d / 0.05)), rel=1e-12)
    np.testing.assert_allclose(
        est.coef_, np.linalg.solve(est.noisy_xx_ + est.ridge_ * np.eye(2), est.noisy_xy_), rtol=1e-12
    )


def test_adassp_noise_scales():
    n, d, rho = 2000, 3, 3.0
    X, y = _data(n=n, d=d)
    xx, xy = X.T @ X / n, X.T @ y / n
    lam_min = np.linalg.eigvalsh(xx)[0]
    third = rho / 3
    radius_sq = d * 1.0
    s_min = radius_sq / n / math.sqrt(2 * third)
    s_xx = math.sqrt(2) * radius_sq / n / math.sqrt(2 * third)
    s_xy = 2 * math.sqrt(radius_sq) / n / math.sqrt(2 * third)
    shift = s_min * math.sqrt(2 * math.log(2 / 0.05))
    upper = np.triu_indices(d)
    z_min, z_xx, z_xy = [], [], []
    for seed in range(300):
        est = AdaSSP(rho, random_state=seed).fit(X, y)
        assert est.lambda_min_ > 0  # λ_min ≈ 0.08 ≫ noise: no clipping at 0
        z_min.append((est.lambda_min_ + shift - lam_min) / s_min)
        z_xx.append((est.noisy_xx_ - xx)[upper] / s_xx)
        z_xy.append((est.noisy_xy_ - xy) / s_xy)
    for z in (z_min, z_xx, z_xy):
        assert _chi2_ok(np.array(z))
        assert not _chi2_ok(np.array(z) * 1.25) and not _chi2_ok(np.array(z) / 1.25)


@pytest.mark.parametrize("cls", [AdaSSP, PACEGGMRegression])
def test_identical_random_state_gives_identical_output(cls):
    X, y = _data(n=500)
    a = cls(0.5, random_state=3).fit(X, y).coef_
    b = cls(0.5, random_state=3).fit(X, y).coef_
    c = cls(0.5, random_state=4).fit(X, y).coef_
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


@pytest.mark.parametrize("cls", [AdaSSP, PACEGGMRegression])
def test_bad_input_raises_clear_errors(cls):
    X, y = _data(n=100)
    with pytest.raises(ValueError, match="rho"):
        cls(0.0).fit(X, y)
    with pytest.raises(ValueError, match="1-D"):
        cls(1.0).fit(X, np.column_stack([y, y]))
    with pytest.warns(DataConversionWarning, match="column-vector"):
        cls(1.0, random_state=0).fit(X, y[:, None])
    with pytest.raises(ValueError, match="different numbers of rows"):
        cls(1.0).fit(X, y[:-1])
    bad = y.copy()
    bad[3] = np.nan
    with pytest.raises(ValueError, match="y contains"):
        cls(1.0).fit(X, bad)
    with pytest.raises(TypeError, match="numeric"):
        cls(1.0).fit(X, np.array(["a"] * 100))
    with pytest.raises(ValueError, match="values of y lie outside"):
        cls(1.0).fit(X, 3 * y + 2)
    with pytest.raises(ValueError, match="values of X lie outside"):
        cls(1.0).fit(4 * X, y)
    with pytest.raises(ValueError, match="failure_prob"):
        cls(1.0, failure_prob=1.5).fit(X, y)
    with pytest.raises(NotFittedError, match="not fitted"):
        cls(1.0).predict(X)
    est = cls(1.0, random_state=0).fit(X, y)
    with pytest.raises(ValueError, match="features"):
        est.predict(X[:, :2])
    with pytest.raises(ValueError, match="Invalid parameter 'gamma'"):
        est.set_params(gamma=1.0)


def test_clip_policy_applies_to_y_too():
    X, y = _data(n=200)
    y = y.copy()
    y[:5] = 3.0
    est = AdaSSP(1.0, bound_check="clip", random_state=0).fit(X, y)
    on_clipped = AdaSSP(1.0, random_state=0).fit(X, np.clip(y, -1.0, 1.0))
    np.testing.assert_array_equal(est.coef_, on_clipped.coef_)


def test_pace_ggm_regression_params_pass_through():
    est = PACEGGMRegression(1.0, alpha=0.2, beta=0.4, solver="pgd0", use_components=False, random_state=0)
    est.fit(*_data(n=300))
    inner = est.pace_ggm_
    assert (inner.alpha, inner.beta, inner.solver, inner.use_components) == (0.2, 0.4, "pgd0", False)
    assert "alpha=0.2" in repr(est)


@pytest.mark.parametrize("cls", [AdaSSP, PACEGGMRegression])
@pytest.mark.parametrize(("n", "d"), [(2, 1), (50, 1), (5, 2)])
def test_tiny_shapes(cls, n, d):
    rng = np.random.default_rng(n + d)
    est = cls(0.5, random_state=0).fit(rng.uniform(-1, 1, size=(n, d)), rng.uniform(-1, 1, size=n))
    assert est.coef_.shape == (d,) and np.all(np.isfinite(est.coef_))

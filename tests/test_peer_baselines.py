"""SSP + graphical lasso, SSP + thresholding and the fixed-pattern ablation: known answers and their budgets."""

import math
from fractions import Fraction

import numpy as np
import pytest
from sklearn.covariance import graphical_lasso

from paceggm.baselines import FixedPatternMaxEnt, SSPGraphicalLasso, SSPThreshold, SSPTight
from paceggm.baselines.fixed_pattern import band_pairs
from paceggm.baselines.ssp_threshold import noise_level
from paceggm.privacy import Charge

HUGE = 1e14


def _with_second_moment(sigma, n=500, seed=0):
    """Rows whose second-moment matrix XᵀX/n is exactly ``sigma`` (to rounding), and their bound."""
    q, _ = np.linalg.qr(np.random.default_rng(seed).standard_normal((n, sigma.shape[0])))
    X = math.sqrt(n) * q @ np.linalg.cholesky(sigma).T
    return X, float(np.abs(X).max())


def _ar1(d, phi):
    idx = np.arange(d)
    return phi ** np.abs(idx[:, None] - idx[None, :])


def _banded_precision(d, width):
    """A positive definite precision that is zero beyond ``width`` off the diagonal, and its covariance."""
    theta = np.eye(d) * 2.0
    for offset in range(1, width + 1):
        theta += np.diag(np.full(d - offset, -0.6 / offset), offset) + np.diag(np.full(d - offset, -0.6 / offset), -offset)
    assert np.linalg.eigvalsh(theta).min() > 0
    return np.linalg.inv(theta)


def _data(n=600, d=5, seed=1):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, d))
    X[:, 1] = 0.6 * X[:, 0] + 0.4 * X[:, 1]
    X[:, 3] = 0.5 * X[:, 2] - 0.5 * X[:, 3]
    return X


# --- the noise level -----------------------------------------------------------------------


def test_the_default_penalty_and_threshold_are_the_noise_level_of_sspt_tights_release():
    X = _data()
    n, d = X.shape
    sigma = d / n / math.sqrt(2.0 * 0.5)  # SSPTight: Δ = d B²/n, σ = Δ / sqrt(2ρ)
    level = sigma * math.sqrt(2.0 * math.log(d * (d + 1) / 2))
    for cls, attr in ((SSPGraphicalLasso, "alpha_glasso_"), (SSPThreshold, "threshold_")):
        est = cls(rho=0.5, random_state=0).fit(X)
        assert est.sigma_ == pytest.approx(sigma, rel=1e-12)
        assert getattr(est, attr) == pytest.approx(level, rel=1e-12)
        assert noise_level(est.sigma_, d) == getattr(est, attr)


def test_the_release_is_sspt_tights_bit_for_bit_and_charged_as_it():
    X = _data()
    tight = SSPTight(rho=0.5, random_state=3).fit(X)
    for cls in (SSPGraphicalLasso, SSPThreshold):
        est = cls(rho=0.5, random_state=3).fit(X)
        assert est.ledger_ == tight.ledger_ == (Charge(0.5, "release: distinct entries of the covariance"),)
        assert est.rho_spent_ == 0.5 and est.sigma_ == tight.sigma_


def test_universal_threshold_keeps_pure_noise_out():
    # Hadamard rows: XᵀX/n = I exactly, so every off-diagonal entry of the release is noise alone.
    from scipy.linalg import hadamard

    X = hadamard(32)[:, 1:21].astype(float)
    kept = [SSPThreshold(rho=1.0, random_state=seed).fit(X).n_offdiagonal_ for seed in range(50)]
    # 190 entries, each over σ sqrt(2 ln 210) with probability 2(1 − Φ(3.27)) = 1.08e-3: 0.21 a fit expected.
    assert sum(kept) <= 25  # Poisson(10.3) over the 50 fits: P(> 25) < 1e-4


# --- SSP + graphical lasso -----------------------------------------------------------------


@pytest.mark.filterwarnings("ignore:Objective did not converge")  # the reference solve's first sweeps
@pytest.mark.parametrize("alpha", [0.01, 0.03])
def test_glasso_at_a_huge_budget_is_the_graphical_lasso_of_the_sample_covariance(alpha):
    X = _data()
    est = SSPGraphicalLasso(rho=HUGE, alpha_glasso=alpha, random_state=0).fit(X)
    ref_cov, ref_prec = graphical_lasso(X.T @ X / X.shape[0], alpha, tol=1e-12, enet_tol=1e-12, max_iter=10_000)
    np.testing.assert_allclose(est.covariance_, ref_cov, atol=1e-6)
    np.testing.assert_allclose(est.precision_, ref_prec, atol=1e-4)
    assert np.array_equal(est.precision_ == 0, ref_prec == 0)  # the same graph
    assert est.get_precision() is est.precision_


def test_glasso_with_the_default_penalty_at_a_huge_budget_is_the_sample_covariance():
    X = _data()
    est = SSPGraphicalLasso(rho=HUGE, random_state=0).fit(X)
    assert est.alpha_glasso_ < 1e-7
    np.testing.assert_allclose(est.covariance_, X.T @ X / X.shape[0], atol=1e-6)


def test_glasso_precision_is_exactly_sparse_and_the_covariance_positive_definite():
    X = _data(n=2000)
    est = SSPGraphicalLasso(rho=1.0, random_state=0).fit(X)
    assert np.linalg.eigvalsh(est.covariance_).min() > 0
    off = ~np.eye(5, dtype=bool)
    assert np.any(est.precision_[off] == 0)  # independent pairs: no edge
    assert est.precision_[1, 0] != 0 and est.precision_[3, 2] != 0  # the two dependent pairs: an edge
    np.testing.assert_allclose(est.precision_ @ est.covariance_, np.eye(5), atol=1e-2)


def test_glasso_with_one_feature_is_the_floored_variance():
    X = _data()[:, :1]
    est = SSPGraphicalLasso(rho=HUGE, random_state=0).fit(X)
    assert est.covariance_[0, 0] == pytest.approx(np.mean(X**2), rel=1e-9)


# --- SSP + thresholding --------------------------------------------------------------------


def test_threshold_at_a_huge_budget_keeps_exactly_the_entries_above_it():
    sigma = _ar1(6, 0.5)  # off-diagonal entries 0.5, 0.25, 0.125, 0.0625, 0.03125
    X, bound = _with_second_moment(sigma)
    for t, kept_offsets in ((0.1, {1, 2, 3}), (0.2, {1, 2}), (0.3, {1})):
        est = SSPThreshold(rho=HUGE, threshold=t, bound=bound, random_state=0).fit(X)
        expected = np.where(np.abs(np.subtract.outer(np.arange(6), np.arange(6))) <= max(kept_offsets), sigma, 0.0)
        # the thresholded AR(1) is diagonally dominant here: positive definite, the projection leaves it
        assert np.linalg.eigvalsh(expected).min() > 0
        np.testing.assert_allclose(est.covariance_, expected, atol=1e-8)
        assert est.n_offdiagonal_ == sum(6 - k for k in kept_offsets)


def test_threshold_release_is_positive_semidefinite_at_any_budget():
    X = _data()
    for rho in (1e-4, 1e-2, 1.0):
        est = SSPThreshold(rho=rho, random_state=0).fit(X)
        assert np.linalg.eigvalsh(est.covariance_).min() >= -1e-12


@pytest.mark.parametrize("cls, name", [(SSPGraphicalLasso, "alpha_glasso"), (SSPThreshold, "threshold")])
@pytest.mark.parametrize("bad, error", [(-0.1, ValueError), (np.inf, ValueError), (np.nan, ValueError),
                                        ("0.1", TypeError), (True, TypeError)])
def test_a_bad_level_is_refused_before_any_budget_is_spent(cls, name, bad, error):
    est = cls(rho=1.0, random_state=0, **{name: bad})
    with pytest.raises(error, match=name):
        est.fit(_data())
    assert not hasattr(est, "rho_spent_")


# --- the fixed pattern ---------------------------------------------------------------------


def test_band_pairs():
    assert band_pairs(1, 1) == ()
    assert band_pairs(4, 2) == ((1, 0), (2, 1), (3, 2), (2, 0), (3, 1))


@pytest.mark.parametrize("width, sigma", [(1, _ar1(7, 0.6)), (2, _banded_precision(7, 2))])
def test_fixed_band_at_a_huge_budget_completes_a_banded_precision_population_exactly(width, sigma):
    # The max-entropy completion of a band of Σ is Σ itself when Σ⁻¹ vanishes off that band.
    X, bound = _with_second_moment(sigma)
    est = FixedPatternMaxEnt(rho=HUGE, bandwidth=width, solver="newton", bound=bound, random_state=0).fit(X)
    np.testing.assert_allclose(est.covariance_, sigma, atol=1e-6)
    beyond = np.abs(np.subtract.outer(np.arange(7), np.arange(7))) > width
    assert np.abs(est.precision_[beyond]).max() < 1e-4 * np.abs(est.precision_).max()
    assert np.array_equal(est.pattern_, ~beyond) and est.n_offdiagonal_ == len(band_pairs(7, width))
    assert est.n_rounds_ == 0 and est.converged_


def test_fixed_band_misses_what_lies_off_it():
    # The same band on an AR(1)'s neighbour with a dependence beyond it: the completion cannot see it.
    sigma = _ar1(5, 0.5)
    sigma[4, 0] = sigma[0, 4] = 0.4
    X, bound = _with_second_moment(sigma)
    est = FixedPatternMaxEnt(rho=HUGE, bound=bound, solver="newton", random_state=0).fit(X)
    band = np.abs(np.subtract.outer(np.arange(5), np.arange(5))) <= 1
    np.testing.assert_allclose(est.covariance_[band], sigma[band], atol=1e-6)
    assert abs(est.covariance_[4, 0] - 0.5**4) < 1e-6  # the completion's product, not the truth's 0.4


# The shares alone would overspend at (0.7, 5, 0.1) and fall an ulp short at (0.1, 4, 0.3), and the float
# remainder of unrounded shares falls an ulp short at (0.7, 5, 0.1) and at 1e14: the charges must add to ρ exactly.
@pytest.mark.parametrize("rho, d, alpha", [(0.7, 5, 0.3), (0.7, 5, 0.1), (0.1, 4, 0.3), (HUGE, 7, 0.3)])
def test_fixed_band_spends_rho_with_pace_ggms_split_and_purposes(rho, d, alpha):
    X = _data(d=d)
    est = FixedPatternMaxEnt(rho=rho, alpha=alpha, random_state=0).fit(X)
    charges = est.ledger_
    assert [c.purpose for c in charges] == ["initialise: diagonal"] * d + ["initialise: forced pair"] * (d - 1)
    grain = math.ulp(rho)
    assert all(c.rho == math.floor(alpha * rho / d / grain) * grain for c in charges[:d])
    assert all(c.rho == math.floor((1.0 - alpha) * rho / (d - 1) / grain) * grain for c in charges[d:-1])
    assert abs(charges[0].rho - alpha * rho / d) <= grain and abs(charges[d].rho - (1 - alpha) * rho / (d - 1)) <= grain
    assert sum(Fraction(c.rho) for c in charges) == Fraction(rho) and est.rho_spent_ == rho
    assert [m.entry for m in est.measurements_] == [(j, j) for j in range(d)] + list(band_pairs(d, 1))
    assert [m.rho for m in est.measurements_] == [c.rho for c in charges]


def test_fixed_band_noise_has_pace_ggms_entry_sensitivity():
    X = _data()
    n = X.shape[0]
    est = FixedPatternMaxEnt(rho=0.7, alpha=0.4, random_state=0).fit(X)
    for m in est.measurements_:
        assert m.sigma == pytest.approx((2.0 / n) / math.sqrt(2.0 * m.rho), rel=1e-12)


def test_one_feature_spends_everything_on_the_variance():
    X = _data()[:, :1]
    est = FixedPatternMaxEnt(rho=0.7, random_state=0).fit(X)
    assert est.ledger_ == (Charge(0.7, "initialise: diagonal"),) and est.n_offdiagonal_ == 0


@pytest.mark.parametrize("params, error, match", [
    ({"bandwidth": 0}, ValueError, "bandwidth"), ({"bandwidth": 1.5}, ValueError, "bandwidth"),
    ({"bandwidth": True}, ValueError, "bandwidth"), ({"alpha": 1.0}, ValueError, "alpha"),
    ({"solver": "newtn"}, ValueError, "did you mean 'newton'"), ({"use_components": 1}, TypeError, "use_components"),
    ({"solver_options": {"nope": 1}}, ValueError, "nope"),
])
def test_fixed_band_bad_parameters_are_refused_before_any_budget_is_spent(params, error, match):
    est = FixedPatternMaxEnt(rho=1.0, random_state=0, **params)
    with pytest.raises(error, match=match):
        est.fit(_data())
    assert not hasattr(est, "rho_spent_")

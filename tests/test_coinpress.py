"""CoinPress (Biswas et al. 2020): its budget, its releases' calibration, and a known answer."""

import math
from fractions import Fraction

import numpy as np
import pytest

from paceggm.baselines import CoinPress
from paceggm.baselines.coinpress import clip_rows, step_budgets, whitened_radius
from paceggm.baselines.dong_liang_yi import _gaussian_norm_bound
from paceggm.bench.audit.invocations import recording
from paceggm.privacy import distinct_entries_sensitivity

PURPOSE = "coinpress: whitened clipped second moment"
# A population well inside the declared bound (the loose-bound regime CoinPress is built for):
# standard deviations 0.05 to 0.2 against B = 1, so no coordinate comes near the bound.
_SIGMA = np.array([[0.04, 0.012, 0.0, 0.0],
                   [0.012, 0.02, 0.004, 0.0],
                   [0.0, 0.004, 0.01, -0.002],
                   [0.0, 0.0, -0.002, 0.0025]])


def _gaussian(n=20_000, seed=0):
    X = np.random.default_rng(seed).multivariate_normal(np.zeros(4), _SIGMA, size=n)
    assert np.abs(X).max() < 1.0
    return X


def _with_outliers(n=20_000, seed=1):
    """Small Gaussian rows and 1% of rows at corners of the box: the later steps clip those."""
    rng = np.random.default_rng(seed)
    X = rng.normal(0.0, 0.05, size=(n, 3))
    X[: n // 100] = rng.choice([-1.0, 1.0], size=(n // 100, 3))
    return X


# --- budget ---------------------------------------------------------------------------------


@pytest.mark.parametrize("steps", [1, 2, 3, 5])
@pytest.mark.parametrize("rho", [1.0, 0.3, 0.01, 2.7])
def test_the_steps_spend_exactly_rho_split_as_the_reference_experiments(rho, steps):
    est = CoinPress(rho, steps=steps, random_state=0).fit(_with_outliers())
    assert [c.purpose for c in est.ledger_] == [PURPOSE] * steps
    total = sum(Fraction(c.rho) for c in est.ledger_)
    assert total == Fraction(rho) and est.rho_spent_ == rho
    rhos = [c.rho for c in est.ledger_]
    if steps == 1:
        assert rhos == [rho]
    else:  # ρ/(4(t−1)) each for the first t − 1 steps, 3ρ/4 for the last
        assert rhos[:-1] == pytest.approx([rho / (4 * (steps - 1))] * (steps - 1), rel=1e-15)
        assert rhos[-1] == pytest.approx(0.75 * rho, rel=1e-12)
    assert step_budgets(rho, steps) == rhos[:-1]


def test_centring_on_the_private_mean_spends_its_share_first_and_the_total_is_rho():
    est = CoinPress(1.0, assume_centered=False, random_state=0).fit(_with_outliers())
    assert [c.purpose for c in est.ledger_] == ["mean (centring)"] + [PURPOSE] * 3
    # The base class hands the covariance step what the mean left, rounded down: within an ulp of ρ.
    total = sum(Fraction(c.rho) for c in est.ledger_)
    assert total <= 1 and 1 - total < Fraction(math.ulp(1.0))
    assert np.all(np.linalg.eigvalsh(est.covariance_) >= -1e-12)


# --- each release: the query it measures and its calibration --------------------------------


@pytest.mark.parametrize("noise", ["fast", "exact"])
def test_each_release_is_the_whitened_clipped_second_moment_at_the_sensitivity_of_its_radius(noise):
    X = _with_outliers()
    n, d = X.shape
    with recording() as rec:
        est = CoinPress(1.0, noise=noise, random_state=0).fit(X)
    assert len(rec.invocations) == 3 and len(est.whiteners_) == len(est.radii_) == 3
    gamma = _gaussian_norm_bound(d, 0.1 / n)
    clipped_somewhere = False
    for inv, A, r, sigma in zip(rec.invocations, est.whiteners_, est.radii_, est.sigmas_):
        W = X @ A.T
        clipped_somewhere |= bool(np.linalg.norm(W, axis=1).max() > r)
        Wc = clip_rows(W, r)
        assert np.linalg.norm(Wc, axis=1).max() <= r * (1 + 1e-12)
        np.testing.assert_allclose(inv.value, (Wc.T @ Wc / n)[np.triu_indices(d)], rtol=1e-12, atol=1e-15)
        sensitivity = math.sqrt(2.0) * r**2 / n
        assert inv.kwargs["sensitivity"] == pytest.approx(sensitivity, rel=1e-15)
        assert inv.kwargs["sensitivity"] == distinct_entries_sensitivity(n=n, d=d, bound=r, norm="l2")
        assert inv.kwargs["rho"] == inv.charge.rho and inv.kwargs["noise"] == noise
        assert sigma == pytest.approx(sensitivity / math.sqrt(2.0 * inv.charge.rho), rel=1e-6)
        # The radius is the paper's γ, capped at the longest whitened record of the box.
        assert r == whitened_radius(A, 1.0, gamma) <= gamma
    assert clipped_somewhere  # the data make the clipping matter, so the check above has teeth


def test_the_first_step_starts_from_the_prior_bound_and_clips_at_the_unit_ball():
    # K = d B²: A₀ = I/(sqrt(d) B), under which every record of the box has ‖A₀x‖ ≤ 1 < γ.
    est = CoinPress(1.0, bound=2.0, random_state=0).fit(2.0 * _with_outliers())
    np.testing.assert_array_equal(est.whiteners_[0], np.eye(3) / (math.sqrt(3) * 2.0))
    assert est.radii_[0] == pytest.approx(1.0, rel=1e-15)
    corners = 2.0 * np.array([[1.0, 1.0, 1.0], [1.0, -1.0, 1.0]])
    assert np.linalg.norm(corners @ est.whiteners_[0].T, axis=1).max() == pytest.approx(1.0)


def test_a_radius_never_lets_a_record_of_the_box_escape_unclipped_beyond_it():
    rng = np.random.default_rng(3)
    A = rng.normal(size=(4, 4))
    corners = np.array(np.meshgrid(*[[-1.5, 1.5]] * 4)).reshape(4, -1).T
    longest = np.linalg.norm(corners @ A.T, axis=1).max()
    assert whitened_radius(A, 1.5, np.inf) >= longest * (1 - 1e-12)
    assert whitened_radius(A, 1.5, 0.5) == 0.5


# --- known answer -------------------------------------------------------------------------


def _errors(X, rho, reference, seeds=range(5)):
    return np.mean([np.linalg.norm(CoinPress(rho, random_state=s).fit(X).covariance_ - reference)
                    for s in seeds])


def test_on_gaussian_data_well_inside_the_bound_the_estimate_converges_to_the_truth_as_rho_grows():
    X = _gaussian()
    sample = X.T @ X / X.shape[0]
    sampling_error = np.linalg.norm(sample - _SIGMA)  # ≈ 9e-4: the floor of any estimate
    # Against the sample covariance the privacy error falls like 1/sqrt(ρ) once the whitening has
    # found the scale (seen: 8.4e-4 at ρ = 1, 6.5e-5 at ρ = 100).
    at_1, at_100 = _errors(X, 1.0, sample), _errors(X, 100.0, sample)
    assert at_100 < at_1 / 5
    # Against the population: far above the sampling floor at a small ρ, at it at ρ = 100.
    assert _errors(X, 0.01, _SIGMA) > 10 * sampling_error
    assert _errors(X, 100.0, _SIGMA) < 1.2 * sampling_error
    # At a huge ρ nothing is clipped and the noise vanishes: the sample covariance (seen: 6e-8).
    est = CoinPress(1e8, random_state=0).fit(X)
    np.testing.assert_allclose(est.covariance_, sample, rtol=0, atol=1e-6 * np.abs(sample).max())


def test_the_estimate_is_psd_and_a_seed_makes_it_reproducible():
    X = _with_outliers()
    a = CoinPress(0.5, random_state=7).fit(X)
    b = CoinPress(0.5, random_state=7).fit(X)
    c = CoinPress(0.5, random_state=8).fit(X)
    np.testing.assert_array_equal(a.covariance_, b.covariance_)
    for A, B in zip(a.whiteners_, b.whiteners_):
        np.testing.assert_array_equal(A, B)
    assert not np.array_equal(a.covariance_, c.covariance_)
    assert np.linalg.eigvalsh(a.covariance_).min() >= -1e-12 * np.abs(a.covariance_).max()


# --- parameters ---------------------------------------------------------------------------


@pytest.mark.parametrize("params, match", [
    (dict(steps=0), "steps"), (dict(steps=1.5), "steps"), (dict(steps=True), "steps"),
    (dict(failure_prob=0.0), "failure_prob"), (dict(failure_prob=1.0), "failure_prob"),
])
def test_bad_parameters_are_refused_in_one_line_before_any_budget_is_spent(params, match):
    from paceggm.privacy import ZCDPAccountant

    accountant = ZCDPAccountant(1.0)
    with pytest.raises(ValueError, match=match) as err:
        CoinPress(1.0, accountant=accountant, random_state=0, **params).fit(_with_outliers())
    assert "\n" not in str(err.value)
    assert accountant.spent == 0.0

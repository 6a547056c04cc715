"""Statistical and exactness tests of the mechanisms, sensitivities and conversions."""

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from paceggm.privacy import (
    entry_sensitivity,
    exponential_mechanism,
    exponential_mechanism_probabilities,
    full_sensitivity,
    gaussian_mechanism,
    gaussian_sigma,
    zcdp_to_approx_dp,
)


def test_gaussian_sigma_formula():
    # σ² = Δ²/(2ρ)
    assert gaussian_sigma(rho=0.5, sensitivity=1.0) == 1.0
    assert math.isclose(gaussian_sigma(rho=0.02, sensitivity=0.3) ** 2, 0.09 / 0.04)


def test_gaussian_noise_scale_chi_square():
    rng = np.random.default_rng(12345)
    rho, delta = 0.37, 0.8
    sigma = gaussian_sigma(rho=rho, sensitivity=delta)
    noisy, used = gaussian_mechanism(np.full(20000, 3.0), rho=rho, sensitivity=delta, rng=rng)
    assert used == sigma
    z = noisy - 3.0
    # Σz²/σ² ~ χ²(N) under the claimed scale; two-sided test at level 1e-3.
    stat = float(np.sum(z**2) / sigma**2)
    p = stats.chi2.cdf(stat, df=z.size)
    assert 5e-4 < p < 1 - 5e-4
    # And the mean is unbiased.
    assert abs(z.mean()) < 4 * sigma / math.sqrt(z.size)


def test_gaussian_noise_scale_detects_wrong_sigma():
    # The same test rejects noise 5% too large: it has power.
    rng = np.random.default_rng(1)
    z = rng.normal(0, 1.05, size=20000)
    p = stats.chi2.cdf(float(np.sum(z**2)), df=z.size)
    assert p > 1 - 5e-4


def test_exponential_mechanism_frequencies_chi_square():
    rng = np.random.default_rng(2024)
    scores = np.array([0.0, 0.5, 1.0, 1.5, 3.0])
    rho, delta = 0.1, 1.0
    probs = exponential_mechanism_probabilities(scores, rho=rho, sensitivity=delta)
    eps = math.sqrt(8 * rho)
    expected = np.exp(eps / (2 * delta) * scores)
    np.testing.assert_allclose(probs, expected / expected.sum(), rtol=1e-12)
    draws = 30000
    counts = np.bincount(
        [exponential_mechanism(scores, rho=rho, sensitivity=delta, rng=rng) for _ in range(draws)],
        minlength=scores.size,
    )
    stat, p = stats.chisquare(counts, draws * probs)
    assert p > 1e-3, (counts, draws * probs)


def test_exponential_mechanism_huge_scores_stay_exact():
    rng = np.random.default_rng(0)
    scores = np.array([1e300, -1e300, 1e300 * (1 - 1e-15), 0.0])
    probs = exponential_mechanism_probabilities(scores, rho=1e6, sensitivity=1e-6)
    assert np.all(np.isfinite(probs)) and math.isclose(probs.sum(), 1.0)
    assert probs[1] == 0.0 and probs[3] == 0.0
    picks = {exponential_mechanism(scores, rho=1e6, sensitivity=1e-6, rng=rng) for _ in range(200)}
    assert picks <= {0, 2}


def test_exponential_mechanism_tiny_budget_is_near_uniform():
    probs = exponential_mechanism_probabilities(np.arange(4.0), rho=1e-12, sensitivity=1.0)
    np.testing.assert_allclose(probs, 0.25, atol=1e-5)


@pytest.mark.parametrize("bad", [[], [[1.0]], [np.nan, 1.0], [np.inf]])
def test_exponential_mechanism_rejects_bad_scores(bad):
    with pytest.raises(ValueError):
        exponential_mechanism(np.array(bad), rho=1.0, sensitivity=1.0, rng=np.random.default_rng(0))


@pytest.mark.parametrize("rho", [0.0, -1.0, np.inf, np.nan])
def test_mechanisms_reject_bad_rho(rho):
    with pytest.raises(ValueError):
        gaussian_sigma(rho=rho, sensitivity=1.0)
    with pytest.raises(ValueError):
        exponential_mechanism([1.0, 2.0], rho=rho, sensitivity=1.0, rng=np.random.default_rng(0))


def test_sensitivity_values():
    assert entry_sensitivity(n=50, bound=2.0) == 2 * 4 / 50
    assert entry_sensitivity(n=50, bound=2.0, norm="l2") == 4 / 50
    assert math.isclose(full_sensitivity(n=10, d=3, bound=1.0), math.sqrt(2) * 3 / 10)
    assert math.isclose(full_sensitivity(n=10, d=3, bound=2.0, norm="l2"), math.sqrt(2) * 4 / 10)
    with pytest.raises(ValueError):
        entry_sensitivity(n=10, bound=1.0, norm="l1")
    with pytest.raises(ValueError):
        entry_sensitivity(n=0, bound=1.0)
    with pytest.raises(ValueError):
        full_sensitivity(n=10, d=0, bound=1.0)


@pytest.mark.parametrize("d", [1, 2, 3])
def test_linf_sensitivities_bound_every_replacement_of_cube_corners(d):
    # Brute force: Σ(X) is linear in x xᵀ, so the worst replacement of one record
    # is attained at corners of the cube [-B, B]^d (and 0 for the diagonal).
    B, n = 1.5, 7
    values = [-B, 0.0, B]
    corners = [np.array(c) for c in itertools.product(values, repeat=d)]
    worst_entry = worst_full = 0.0
    for x, x2 in itertools.product(corners, repeat=2):
        diff = (np.outer(x, x) - np.outer(x2, x2)) / n
        worst_entry = max(worst_entry, np.abs(diff).max())
        worst_full = max(worst_full, np.linalg.norm(diff))
    assert worst_entry <= entry_sensitivity(n=n, bound=B) + 1e-15
    assert worst_full <= full_sensitivity(n=n, d=d, bound=B) + 1e-15
    # The entry bound is attained off the diagonal.
    if d >= 2:
        assert math.isclose(worst_entry, entry_sensitivity(n=n, bound=B))


def test_l2_sensitivities_bound_random_replacements():
    rng = np.random.default_rng(3)
    C, n, d = 2.0, 5, 4
    worst_entry = worst_full = 0.0
    for _ in range(5000):
        x, x2 = rng.normal(size=(2, d))
        x *= C / np.linalg.norm(x)
        x2 *= C / np.linalg.norm(x2)
        diff = (np.outer(x, x) - np.outer(x2, x2)) / n
        worst_entry = max(worst_entry, np.abs(diff).max())
        worst_full = max(worst_full, np.linalg.norm(diff))
    assert worst_entry <= entry_sensitivity(n=n, bound=C, norm="l2") + 1e-12
    assert worst_full <= full_sensitivity(n=n, d=d, bound=C, norm="l2") + 1e-12


def test_zcdp_conversion_standard_formula_and_cks_is_tighter():
    rho, delta = 0.5, 1e-6
    std = zcdp_to_approx_dp(rho, delta)
    assert math.isclose(std, rho + 2 * math.sqrt(rho * math.log(1 / delta)))
    for r in (1e-4, 1e-2, 1.0, 10.0):
        for dl in (1e-9, 1e-5, 0.1):
            cks = zcdp_to_approx_dp(r, dl, method="cks")
            assert 0 <= cks <= zcdp_to_approx_dp(r, dl)
    # Smaller δ costs more ε; more ρ costs more ε.
    assert zcdp_to_approx_dp(1.0, 1e-9, method="cks") > zcdp_to_approx_dp(1.0, 1e-3, method="cks")
    assert zcdp_to_approx_dp(2.0, 1e-6, method="cks") > zcdp_to_approx_dp(1.0, 1e-6, method="cks")


def test_cks_conversion_matches_direct_grid_minimum():
    rho, delta = 0.1, 1e-5
    a = np.linspace(1.0001, 500, 2_000_000)
    grid = a * rho + (math.log(1 / delta) + (a - 1) * np.log1p(-1 / a) - np.log(a)) / (a - 1)
    assert math.isclose(zcdp_to_approx_dp(rho, delta, method="cks"), grid.min(), rel_tol=1e-6)


@pytest.mark.parametrize("delta", [0.0, 1.0, -0.1])
def test_conversion_rejects_bad_delta(delta):
    with pytest.raises(ValueError):
        zcdp_to_approx_dp(1.0, delta)

"""Statistical and exactness tests of the mechanisms, sensitivities and conversions."""

import itertools
import math
from fractions import Fraction

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
from paceggm.privacy.selection import PairSampler


def test_gaussian_sigma_formula():
    # σ² = Δ²/(2ρ)
    assert gaussian_sigma(rho=0.5, sensitivity=1.0) == 1.0
    assert math.isclose(gaussian_sigma(rho=0.02, sensitivity=0.3) ** 2, 0.09 / 0.04)


def test_gaussian_release_is_a_float_or_a_float_array_and_bad_sensitivity_is_named():
    """A scalar answer comes back as a Python float, an array of any numbers (ints, Fractions) as a float
    array of its shape; a sensitivity that is not > 0 is refused by name."""
    rng = np.random.default_rng(0)
    noisy, _ = gaussian_mechanism(3.0, rho=0.5, sensitivity=1.0, rng=rng)
    assert type(noisy) is float
    for value in ([1, 2, 3], [Fraction(1, 2), Fraction(3, 2), Fraction(5, 2)]):
        noisy, _ = gaussian_mechanism(value, rho=0.5, sensitivity=1.0, rng=rng)
        assert isinstance(noisy, np.ndarray) and noisy.dtype == np.float64 and noisy.shape == (3,)
    with pytest.raises(ValueError, match=r"^sensitivity must be a finite number > 0, got -1\.0$"):
        gaussian_sigma(rho=0.5, sensitivity=-1.0)


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


def test_zcdp_conversion_standard_formula_and_the_exact_one_is_tighter():
    rho, delta = 0.5, 1e-6
    std = zcdp_to_approx_dp(rho, delta, method="standard")
    assert math.isclose(std, rho + 2 * math.sqrt(rho * math.log(1 / delta)))
    assert std >= rho + 2 * math.sqrt(rho * math.log(1 / delta))  # rounded up
    for r in (1e-4, 1e-2, 1.0, 10.0):
        for dl in (1e-9, 1e-5, 0.1):
            cks = zcdp_to_approx_dp(r, dl, method="exact")
            assert 0 <= cks <= zcdp_to_approx_dp(r, dl, method="standard")
    # Smaller δ costs more ε; more ρ costs more ε.
    assert zcdp_to_approx_dp(1.0, 1e-9, method="exact") > zcdp_to_approx_dp(1.0, 1e-3, method="exact")
    assert zcdp_to_approx_dp(2.0, 1e-6, method="exact") > zcdp_to_approx_dp(1.0, 1e-6, method="exact")


def test_exact_conversion_matches_direct_grid_minimum():
    rho, delta = 0.1, 1e-5
    a = np.linspace(1.0001, 500, 2_000_000)
    grid = a * rho + (math.log(1 / delta) + (a - 1) * np.log1p(-1 / a) - np.log(a)) / (a - 1)
    assert math.isclose(zcdp_to_approx_dp(rho, delta, method="exact"), grid.min(), rel_tol=1e-6)


@pytest.mark.parametrize("delta", [0.0, 1.0, -0.1])
def test_conversion_rejects_bad_delta(delta):
    with pytest.raises(ValueError):
        zcdp_to_approx_dp(1.0, delta)


def _textbook_gumbel_max(logits, rng):
    return int(np.argmax(logits + rng.gumbel(size=logits.shape)))


@pytest.mark.parametrize("kind", ["uniform", "coarse_ties", "all_equal", "huge_spread", "exponential", "one_hot"])
@pytest.mark.parametrize("rho, sensitivity", [(1e-8, 1e-3), (1e-2, 1e-2), (1.0, 1e-3), (1e4, 1e-6)])
def test_pruned_gumbel_max_is_the_textbook_draw(kind, rho, sensitivity):
    # The fast path must return the very index argmax(logits + rng.gumbel(...)) returns
    # and leave the generator where that leaves it: same selections, same later noise.
    from paceggm.privacy.mechanisms import _gumbel_argmax, _logits

    for seed in range(25):
        g = np.random.default_rng([seed, len(kind)])
        m = int(g.integers(1, 3000))
        scores = {
            "uniform": g.random(m),
            "coarse_ties": np.round(g.random(m), 1),
            "all_equal": np.zeros(m),
            "huge_spread": g.standard_normal(m) * 1e6,
            "exponential": g.exponential(size=m),
            "one_hot": np.where(np.arange(m) == m // 2, 1.0, 0.0),
        }[kind]
        logits = _logits(scores, rho, sensitivity)
        r_ref, r_fast = np.random.default_rng(seed), np.random.default_rng(seed)
        assert _gumbel_argmax(logits, r_fast) == _textbook_gumbel_max(logits, r_ref)
        assert r_fast.bit_generator.state == r_ref.bit_generator.state


def test_pruned_gumbel_max_on_a_pace_ggm_sized_candidate_set():
    # 200,000 candidates with logits spread like a PACE-GGM round's (scores up to ~1,
    # eps / (2 delta) ~ 30): the pruning leaves few, and the pick is still the textbook one.
    from paceggm.privacy.mechanisms import _gumbel_argmax

    g = np.random.default_rng(7)
    logits = -30.0 * g.random(200_000) ** 2
    for seed in range(5):
        r_ref, r_fast = np.random.default_rng(seed), np.random.default_rng(seed)
        assert _gumbel_argmax(logits, r_fast) == _textbook_gumbel_max(logits, r_ref)
        assert r_fast.bit_generator.state == r_ref.bit_generator.state


@pytest.mark.parametrize("shift", [-3.0, -1e3, -1e6])
def test_pruned_gumbel_max_far_below_zero_is_the_textbook_draw(shift):
    # Logits need only be <= 0: shifted far below, the pruning's rounding slack must scale with them
    # (the best candidate is the largest Gumbel draw when all are equal, and must survive the cut).
    from paceggm.privacy.mechanisms import _gumbel_argmax

    g = np.random.default_rng(11)
    for logits in (np.full(300, shift), shift + 1e-3 * shift * g.random(300)):
        for seed in range(20):
            r_ref, r_fast = np.random.default_rng(seed), np.random.default_rng(seed)
            assert _gumbel_argmax(logits, r_fast) == _textbook_gumbel_max(logits, r_ref)
            assert r_fast.bit_generator.state == r_ref.bit_generator.state


def _pcg64_about_to_draw_zero() -> np.random.Generator:
    """A PCG64 generator whose next double is exactly 0.0 (probability 2**-53 at random).

    PCG64 steps its 128-bit state ``s ← s·M + inc`` and then outputs ``hi ⊕ lo``
    rotated, so a stepped state with equal halves outputs 0; the state before it
    is found by inverting the step.
    """
    multiplier = 0x2360ED051FC65DA44385DF649FCCF645
    bit_generator = np.random.PCG64(0)
    state = bit_generator.state
    stepped = (12345 << 64) | 12345
    state["state"]["state"] = ((stepped - state["state"]["inc"]) * pow(multiplier, -1, 1 << 128)) % (1 << 128)
    bit_generator.state = state
    return np.random.Generator(bit_generator)


def test_pruned_gumbel_max_replays_numpys_redraw_of_a_zero_uniform():
    # NumPy redraws a uniform that is exactly 0 (its Gumbel would be infinite), which
    # shifts the stream by one: the pick and the stream after it must still be the textbook's.
    from paceggm.privacy.mechanisms import _gumbel_argmax

    assert _pcg64_about_to_draw_zero().random() == 0.0
    logits = -np.random.default_rng(4).random(8)
    r_ref, r_fast = _pcg64_about_to_draw_zero(), _pcg64_about_to_draw_zero()
    assert _gumbel_argmax(logits, r_fast) == _textbook_gumbel_max(logits, r_ref)
    assert r_fast.bit_generator.state == r_ref.bit_generator.state


def test_exponential_mechanism_with_a_legacy_random_state_is_the_textbook_draw():
    # A RandomState has no Generator stream to replay: it gets argmax(logits + gumbel) itself.
    from paceggm.privacy.mechanisms import _logits

    scores = np.random.default_rng(3).random(500)
    r_ref, r_legacy = np.random.RandomState(9), np.random.RandomState(9)
    picks = [exponential_mechanism(scores, rho=1.0, sensitivity=1e-2, rng=r_legacy) for _ in range(20)]
    logits = _logits(scores, 1.0, 1e-2)
    assert picks == [_textbook_gumbel_max(logits, r_ref) for _ in range(20)]


def test_every_sensitivity_formula_with_both_norms():
    from paceggm.privacy import (
        cross_moment_sensitivity,
        eigenvalue_sensitivity,
        spectral_sensitivity,
        trace_sensitivity,
    )

    # ‖x‖² ∈ [0, R²]: R² = d B² (linf) or C² (l2); a bound other than 1 tells B² from 2B.
    assert trace_sensitivity(n=10, d=3, bound=2.0) == 3 * 4.0 / 10
    assert trace_sensitivity(n=10, d=3, bound=3.0, norm="l2") == 9.0 / 10
    assert trace_sensitivity(n=10, d=1, bound=2.0) == 4.0 / 10  # one variable is allowed
    assert spectral_sensitivity(n=10, d=3, bound=3.0, norm="l2") == 9.0 / 10
    assert spectral_sensitivity(n=10, d=3, bound=2.0) == 3 * 4.0 / 10
    assert math.isclose(eigenvalue_sensitivity(n=10, d=3, bound=2.0, norm="l2"), math.sqrt(2) * 4 / 10)
    assert math.isclose(eigenvalue_sensitivity(n=10, d=3, bound=1.0), math.sqrt(2) * 3 / 10)
    # ‖xy − x'y'‖ ≤ 2 C_x C_y, over n
    assert cross_moment_sensitivity(n=4, bound_x=2.0, bound_y=3.0) == 3.0
    with pytest.raises(ValueError, match="d must be >= 1"):
        trace_sensitivity(n=10, d=0, bound=1.0)
    with pytest.raises(ValueError, match="bound_y"):
        cross_moment_sensitivity(n=4, bound_x=1.0, bound_y=0.0)


@pytest.mark.parametrize(("rho", "delta"), [(0.1, 1e-5), (10.0, 0.1)])
def test_cks_conversion_matches_a_grid_minimum_on_either_side_of_a_2(rho, delta):
    """(ρ, δ) = (10, 0.1) puts the minimising a near 1.5: the search must reach below a = 2."""
    a = np.linspace(1.0001, 500, 2_000_000)
    grid = a * rho + (math.log(1 / delta) + (a - 1) * np.log1p(-1 / a) - np.log(a)) / (a - 1)
    assert math.isclose(zcdp_to_approx_dp(rho, delta, method="exact"), grid.min(), rel_tol=1e-6)


def test_conversion_errors_name_the_problem():
    from paceggm.privacy import approx_dp_to_zcdp

    with pytest.raises(ValueError, match="method must be one of"):
        zcdp_to_approx_dp(1.0, 1e-6, method="renyi")
    with pytest.raises(ValueError, match="epsilon"):
        approx_dp_to_zcdp(-1.0, 1e-6)
    # the standard bound's inverse underflows to 0 (the exact conversion still gives a positive rho)
    with pytest.raises(ValueError, match="too small to give a positive rho"):
        approx_dp_to_zcdp(1e-300, 1e-6, method="standard")


@pytest.mark.parametrize("rho", [1e-4, 0.017, 0.5, 3.0, 40.0])
def test_approx_dp_to_zcdp_steps_down_only_while_epsilon_is_exceeded(rho):
    """The standard bound's inverse ρ = ε²/(sqrt(L + ε) + sqrt(L))², L = ln(1/δ), stepped down one
    float at a time only while its ε exceeds the one asked for: never above ε, and never a step
    more than needed."""
    from paceggm.privacy import approx_dp_to_zcdp

    for delta in (1e-9, 1e-6, 1e-2):
        epsilon = zcdp_to_approx_dp(rho, delta, method="standard")
        L = math.log(1.0 / delta)
        closed_form = epsilon**2 / (math.sqrt(L + epsilon) + math.sqrt(L)) ** 2
        got = approx_dp_to_zcdp(epsilon, delta, method="standard")
        assert got <= closed_form and zcdp_to_approx_dp(got, delta, method="standard") <= epsilon
        if got < closed_form:
            assert zcdp_to_approx_dp(math.nextafter(got, math.inf), delta, method="standard") > epsilon


@pytest.mark.parametrize("scores, sensitivity, match", [
    ([], 1.0, r"^scores must be a non-empty 1-D array$"),
    ([[0.0, 1.0]], 1.0, r"^scores must be a non-empty 1-D array$"),
    ([0.0, np.nan], 1.0, r"^scores must be finite$"),
    ([0.0, 1.0], 0.0, r"^sensitivity must be a finite number > 0, got 0\.0$"),
])
def test_the_exponential_mechanism_names_what_is_wrong_with_its_input(scores, sensitivity, match):
    for call in (lambda: exponential_mechanism(scores, rho=1.0, sensitivity=sensitivity, rng=np.random.default_rng(0)),
                 lambda: exponential_mechanism_probabilities(scores, rho=1.0, sensitivity=sensitivity)):
        with pytest.raises(ValueError, match=match):
            call()


def test_hopeless_candidates_get_probability_zero_without_a_warning():
    # ε/(2Δ) times a score gap past the largest double: the logit is -inf, silently (p = 0), not an overflow warning.
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        p = exponential_mechanism_probabilities(np.array([0.0, 1e300]), rho=1e4, sensitivity=1e-300)
    assert p.tolist() == [0.0, 1.0]


# --- the row sampler (paceggm.privacy.selection.PairSampler): its bookkeeping, beside the mechanism it draws
# (its distribution tests, which need many draws, are in test_privacy_selection.py)

def test_one_variable_is_one_pair_and_the_weights_are_built_on_the_first_draw():
    sampler = PairSampler(np.array([0.3]), sensitivity=1.0)
    assert (sampler.d, sampler.n_rebuilds) == (1, 0)
    assert sampler.draw(rho=1.0, rng=np.random.default_rng(0)) == 0 and sampler.n_rebuilds == 1
    assert PairSampler(np.zeros(6), sensitivity=1.0).d == 3


def test_a_score_far_above_the_weights_reference_rebuilds_them_instead_of_overflowing():
    # Weights are exp(a (score - reference)); a rescored entry a * 1,000 above the reference would
    # overflow, so the sampler starts again from the new maximum: that entry is then all but certain.
    scores = np.full(6, -1000.0)
    sampler = PairSampler(scores, sensitivity=1e-3)  # a = sqrt(8) / 2e-3, about 1,414
    rng = np.random.default_rng(3)
    sampler.draw(rho=1.0, rng=rng)
    scores[4] = 0.0
    sampler.rescored(np.array([4]))
    assert [sampler.draw(rho=1.0, rng=rng) for _ in range(20)] == [4] * 20
    assert sampler.n_rebuilds == 2 and np.isfinite(sampler._w).all()


def test_a_uniform_of_zero_never_picks_a_candidate_of_weight_zero():
    from paceggm.privacy.selection import _pick

    rng = _pcg64_about_to_draw_zero()
    assert _pick(np.array([0.0, 0.0, 2.0, 1.0]), rng) == 2


def test_a_rescored_entry_is_updated_in_place_without_a_rebuild():
    scores = np.zeros(6)
    sampler = PairSampler(scores, sensitivity=1.0)  # a = sqrt(8) / 2
    rng = np.random.default_rng(5)
    sampler.draw(rho=1.0, rng=rng)
    scores[4] = 20.0  # weight e^28 against 1: all but certain, and far below the rebuild threshold
    sampler.rescored(np.array([4]))
    assert [sampler.draw(rho=1.0, rng=rng) for _ in range(20)] == [4] * 20
    assert sampler.n_rebuilds == 1

"""``noise="exact"``: exact samplers with the right laws, the same accounting, reproducible or from ``secrets``."""

from __future__ import annotations

import math
import random
import warnings
from fractions import Fraction

import numpy as np
import pytest
from scipy.stats import chisquare, kstest

from paceggm import PACEGGM
from paceggm.baselines import SSP, AdaptiveCov, AdaSSP
from paceggm.privacy import ZCDPAccountant, exact, exponential_mechanism_probabilities, gaussian_mechanism
from paceggm.privacy.mechanisms import exponential_mechanism, gaussian_sigma, sparse_vector

from conftest import ALL, REGRESSION

N_DRAWS = 20_000
P_MIN = 1e-3


def _bits(seed: int) -> exact.RandomBits:
    return exact.RandomBits(np.random.default_rng(seed))


def _chi2_p(draws, pmf: dict[int, float]) -> float:
    """χ² goodness of fit over the support points in ``pmf`` (each expecting >= 5), the rest pooled."""
    draws = np.asarray(draws)
    keys = sorted(pmf)
    observed = [np.count_nonzero(draws == k) for k in keys]
    expected = [pmf[k] * draws.size for k in keys]
    rest_observed, rest_expected = draws.size - sum(observed), draws.size - sum(expected)
    if rest_expected >= 5:
        observed.append(rest_observed)
        expected.append(rest_expected)
    else:  # too little mass outside the listed points for a bin of its own
        observed[-1] += rest_observed
        expected[-1] += rest_expected
    return float(chisquare(observed, expected).pvalue)


def _discrete_gaussian_pmf(sigma2: float, support: int = 60) -> dict[int, float]:
    ys = np.arange(-support, support + 1)
    w = np.exp(-ys.astype(float) ** 2 / (2.0 * sigma2))
    w /= w.sum()
    return {int(y): float(p) for y, p in zip(ys, w) if p * N_DRAWS >= 5}


def test_random_bits_are_the_generators_bytes_read_as_one_little_endian_stream():
    # Draws of many widths, straddling the chunks fetched: nothing skipped, repeated or zeroed at a refill.
    widths = [1, 7, 64, 2000, 5, 3000, 13, 1, 700, 2048, 9, 4096, 3]
    bits = exact.RandomBits(np.random.default_rng(16))
    draws = [bits.bits(k) for k in widths]
    reference = np.random.default_rng(16)
    chunks = -(-sum(widths) // (8 * exact._CHUNK))
    stream = int.from_bytes(b"".join(reference.bytes(exact._CHUNK) for _ in range(chunks)), "little")
    assert stream & 1 == 0  # the first bit is 0 here: a pool that started with a bit set would show
    expected = []
    for k in widths:
        expected.append(stream & ((1 << k) - 1))
        stream >>= k
    assert draws == expected


@pytest.mark.parametrize("x", [Fraction(0), Fraction(1, 3), Fraction(1), Fraction(5, 2), 0.7])
def test_bernoulli_exp_has_probability_exp_minus_x(x):
    bits = _bits(1)
    hits = sum(exact.bernoulli_exp(x, bits) for _ in range(N_DRAWS))
    p = math.exp(-float(x))
    assert abs(hits / N_DRAWS - p) <= 4.5 * math.sqrt(p * (1 - p) / N_DRAWS) + 1e-12


def test_discrete_gaussian_fits_its_pmf_and_the_test_rejects_a_sigma_off_by_ten_percent():
    sigma2 = Fraction(4)
    bits = _bits(2)
    draws = [exact.discrete_gaussian(sigma2, bits) for _ in range(N_DRAWS)]
    assert _chi2_p(draws, _discrete_gaussian_pmf(4.0)) > P_MIN
    # Power: the same test, sampling σ = 2.2 against the pmf of σ = 2, rejects.
    bits = _bits(3)
    wrong = [exact.discrete_gaussian(Fraction(22, 10) ** 2, bits) for _ in range(N_DRAWS)]
    assert _chi2_p(wrong, _discrete_gaussian_pmf(4.0)) < P_MIN


@pytest.mark.parametrize("scale", [Fraction(3, 2), Fraction(1, 2)])  # the second below one grid unit
def test_discrete_laplace_fits_its_pmf(scale):
    bits = _bits(4)
    draws = [exact.discrete_laplace(scale, bits) for _ in range(N_DRAWS)]
    ys = np.arange(-60, 61)
    w = np.exp(-np.abs(ys) / float(scale))
    w /= w.sum()
    assert _chi2_p(draws, {int(y): float(p) for y, p in zip(ys, w) if p * N_DRAWS >= 5}) > P_MIN


@pytest.mark.parametrize("call, message", [
    (lambda b: exact.bernoulli_exp(Fraction(-1, 3), b), "bernoulli_exp needs x >= 0, got -1/3"),
    (lambda b: exact.discrete_laplace(0, b), "discrete_laplace needs scale > 0, got 0"),
    (lambda b: exact.discrete_laplace(Fraction(-1, 2), b), "discrete_laplace needs scale > 0, got -1/2"),
    (lambda b: exact.discrete_gaussian(0, b), "discrete_gaussian needs sigma2 > 0, got 0"),
    (lambda b: exact.exponential_index([1, 2], Fraction(-1, 2), b), "exponential_index needs c >= 0, got -1/2"),
    (lambda b: exact.exponential_index([], 1, b), "exponential_index needs at least one candidate"),
    (lambda b: b.below(0), "below needs n >= 1, got 0"),
    (lambda b: exact.RandomBits(7), "exact noise draws its bits from a numpy Generator or from secrets (None), got 7"),
], ids=["bernoulli_exp", "laplace-zero", "laplace-negative", "gaussian", "exp-c", "exp-empty", "below", "bits"])
def test_the_samplers_refuse_what_they_cannot_draw_in_one_line(call, message):
    with pytest.raises((ValueError, TypeError)) as info:
        call(_bits(0))
    assert str(info.value) == message


@pytest.mark.parametrize("shape, ceil_sqrt_k", [((), 1), ((1,), 1), ((2,), 2), ((4,), 2), ((5,), 3), ((3, 3), 3)])
def test_the_exact_gaussian_sigma_pays_exactly_the_grid_rounding_of_its_coordinates(shape, ceil_sqrt_k):
    # Δ = 1, ρ = 1/2: σ0 = 1, so the grid step is 2^-32 and s = Δ/γ + ⌈sqrt(k)⌉ = 2^32 + ⌈sqrt(k)⌉ grid units,
    # a double exactly; a scalar is one coordinate.
    noisy, sigma = exact.gaussian(np.zeros(shape), rho=0.5, sensitivity=1.0, bits=_bits(0))
    assert sigma == 1.0 + ceil_sqrt_k * 2.0**-32
    assert np.shape(noisy) == shape and isinstance(noisy, float) == (shape == ())  # a scalar as a float


def test_the_exact_gaussian_mechanism_releases_a_matrix_in_its_shape_as_the_fast_one_does():
    value = np.arange(6.0).reshape(2, 3)
    for noise in ("fast", "exact"):
        noisy, sigma = gaussian_mechanism(value, rho=50.0, sensitivity=1.0, rng=np.random.default_rng(0), noise=noise)
        assert noisy.shape == (2, 3) and np.all(np.abs(noisy - value) < 6 * sigma), noise


def test_the_exact_gaussian_reads_the_query_in_doubles():
    # 1e30 in float32 is 2^32 · 1e30 grid steps once on the grid: beyond float32's range, well inside a double's.
    value = np.array([1e30, -2.5], dtype=np.float32)
    noisy, sigma = exact.gaussian(value, rho=0.5, sensitivity=1.0, bits=_bits(0))
    assert noisy.dtype == np.float64 and noisy[0] == float(value[0]) and abs(noisy[1] + 2.5) < 6 * sigma


def test_the_exact_exponential_index_reads_a_list_as_an_array_and_is_uniform_at_c_zero():
    utilities, c = [0, 3, 1, 2], Fraction(1, 2)
    from_list = [exact.exponential_index(utilities, c, bits) for bits in [_bits(10)] for _ in range(300)]
    from_array = [exact.exponential_index(np.array(utilities, dtype=float), c, bits)
                  for bits in [_bits(10)] for _ in range(300)]
    assert from_list == from_array
    bits = _bits(11)
    uniform = [exact.exponential_index(utilities, 0, bits) for _ in range(4000)]
    assert _chi2_p(uniform, dict.fromkeys(range(4), 0.25)) > P_MIN


@pytest.mark.parametrize("mechanism", ["gaussian", "exponential", "sparse_vector"])
def test_exact_mechanisms_refuse_a_bad_budget_or_sensitivity_as_fast_ones_do(mechanism):
    call = {"gaussian": lambda **kw: gaussian_mechanism(1.0, **kw),
            "exponential": lambda **kw: exponential_mechanism(np.array([0.0, 1.0]), **kw),
            "sparse_vector": lambda **kw: sparse_vector(np.array([0.0, 1.0]), threshold=0.5, **kw)}[mechanism]
    for bad in ({"rho": 0.0, "sensitivity": 1.0}, {"rho": 1.0, "sensitivity": 0.0}, {"rho": 1.0, "sensitivity": -1.0}):
        messages = []
        for noise in ("fast", "exact"):
            with pytest.raises(ValueError) as info:
                call(**bad, rng=np.random.default_rng(0), noise=noise)
            messages.append(str(info.value))
        assert messages[0] == messages[1], bad
        assert ("sensitivity" if bad["rho"] else "rho") in messages[1]


def test_discrete_gaussian_below_unit_variance_fits_its_pmf():
    bits = _bits(12)
    draws = [exact.discrete_gaussian(Fraction(1, 2), bits) for _ in range(N_DRAWS)]
    assert _chi2_p(draws, _discrete_gaussian_pmf(0.5)) > P_MIN


def test_the_exact_mechanisms_read_float32_scores_and_queries_in_doubles():
    # 1e30 is beyond float32's range once on the grid (2^32 steps per unit of sensitivity), inside a double's.
    rng = np.random.default_rng(13)
    big = np.array([0.0, 1e30], dtype=np.float32)
    assert exponential_mechanism(big, rho=0.5, sensitivity=1.0, rng=rng, noise="exact") == 1
    assert sparse_vector(big[::-1], threshold=0.0, rho=0.5, sensitivity=1.0, rng=rng, noise="exact") == 0


def test_a_query_too_large_for_the_grid_is_refused_in_one_line():
    with warnings.catch_warnings(), pytest.raises(ValueError) as info:
        warnings.simplefilter("error")  # the refusal, and no overflow warning before it
        gaussian_mechanism(np.array([1e300]), rho=0.5, sensitivity=1e-10, rng=np.random.default_rng(0), noise="exact")
    assert str(info.value) == "a value is too large for the exact noise's grid (it overflows a double once scaled)"


def test_the_exact_gaussian_mechanism_at_its_grid_scale_is_gaussian_with_the_stated_sigma():
    # σ of the mechanism is 2^32 grid steps: the discrete law is the normal one to far below what 20,000 draws see.
    noisy, sigma = gaussian_mechanism(np.zeros(N_DRAWS), rho=0.5, sensitivity=1.0, rng=np.random.default_rng(5),
                                      noise="exact")
    # Inflated by the grid's rounding, γ ⌈sqrt(k)⌉ on Δ: 142 · 2^-32 σ here.
    assert sigma == pytest.approx(gaussian_sigma(rho=0.5, sensitivity=1.0), rel=142 * 2.0**-32 * 1.01)
    assert sigma >= gaussian_sigma(rho=0.5, sensitivity=1.0)  # the grid's rounding is paid for, never taken
    assert kstest(noisy / sigma, "norm").pvalue > P_MIN
    assert kstest(noisy / (1.1 * sigma), "norm").pvalue < P_MIN  # power: σ off by 10% is seen


def test_exact_gaussian_releases_lie_on_a_power_of_two_grid():
    value = np.array([0.1234567, -3.5, 2.0 / 3.0])
    noisy, sigma = gaussian_mechanism(value, rho=1.0, sensitivity=0.01, rng=np.random.default_rng(6), noise="exact")
    step = 2.0 ** (math.frexp(0.01 / math.sqrt(2.0))[1] - 1 - exact.GRID_BITS)
    assert np.all(noisy / step == np.rint(noisy / step))
    assert 2.0**exact.GRID_BITS <= sigma / step < 2.0 ** (exact.GRID_BITS + 1) * (1 + 1e-6)
    # σ pays for the rounding of 3 coordinates: calibrated to Δ + γ ⌈sqrt(3)⌉, not Δ (a 2^-31 difference).
    assert sigma * math.sqrt(2.0) >= (0.01 + 2.0 * step) * (1 - 1e-15)


@pytest.mark.parametrize("seed", range(3))
def test_the_rational_epsilon_never_exceeds_its_square_root(seed):
    for rho in np.random.default_rng(seed).uniform(1e-6, 10.0, size=2000):
        for square in (8 * Fraction(rho), 2 * Fraction(rho)):
            eps = exact._rational_at_most(math.sqrt(float(square)), square)
            assert eps * eps <= square and eps > 0


def test_the_rational_epsilon_is_the_square_root_itself_where_that_is_exact_and_refuses_a_wrong_root():
    for square in (Fraction(4), Fraction(1), Fraction(9, 4), Fraction(1, 4), Fraction(1, 2**40)):
        assert exact._rational_at_most(math.sqrt(float(square)), square) ** 2 == square
    with pytest.raises(ValueError, match=r"^1\.5 is not the square root of 2\.0$"):
        exact._rational_at_most(1.5, Fraction(2))


def test_the_exact_exponential_mechanism_pays_for_the_rounding_of_its_scores(monkeypatch):
    seen = {}

    def record(utilities, c, bits):
        seen["c"] = c
        return 0

    monkeypatch.setattr(exact, "exponential_index", record)
    delta, rho = 0.004, 0.3
    exponential_mechanism(np.array([0.1, 0.2]), rho=rho, sensitivity=delta, rng=np.random.default_rng(0), noise="exact")
    step = Fraction(2) ** (math.frexp(delta)[1] - 1 - exact.GRID_BITS)
    spent = 2 * seen["c"] * (Fraction(delta) / step + 1)  # the ε the rounded scores' sensitivity costs
    assert spent * spent <= 8 * Fraction(rho) and float(spent) == pytest.approx(math.sqrt(8 * rho), rel=1e-15)


SCORES = np.array([0.0, 0.3, 0.6, 1.0, 1.5, 2.0])
EM_RHO = 0.5  # ε = 2: ε/(2Δ) = 1 with Δ = 1


def _em_draws(rho: float, seed: int) -> list[int]:
    bits = _bits(seed)
    return [exponential_mechanism(SCORES, rho=rho, sensitivity=1.0, rng=bits, noise="exact") for _ in range(N_DRAWS)]


def test_exact_exponential_mechanism_fits_its_pmf_and_the_test_rejects_an_epsilon_off_by_ten_percent():
    target = exponential_mechanism_probabilities(SCORES, rho=EM_RHO, sensitivity=1.0)
    pmf = dict(enumerate(target))
    assert _chi2_p(_em_draws(EM_RHO, 7), pmf) > P_MIN
    assert _chi2_p(_em_draws(EM_RHO * 1.1**2, 8), pmf) < P_MIN  # ε · 1.1


def test_exact_sparse_vector_fires_where_the_noise_allows():
    queries = np.array([-50.0, -40.0, 10.0, 60.0])
    rng = np.random.default_rng(9)
    picks = [sparse_vector(queries, threshold=0.0, rho=8.0, sensitivity=1.0, rng=rng, noise="exact")
             for _ in range(200)]
    assert set(picks) <= {2, 3} and picks.count(2) > 150  # ε = 4: noise of scale 1 against gaps of 10s
    far_below = sparse_vector(-1e3 * np.ones(5), threshold=0.0, rho=8.0, sensitivity=1.0, rng=rng, noise="exact")
    assert far_below == 5


def test_exact_sparse_vector_pays_for_the_rounding_of_its_queries_and_fires_on_reaching_the_threshold(monkeypatch):
    scales = []

    def record(scale, bits):
        scales.append(Fraction(scale))
        return 0

    monkeypatch.setattr(exact, "discrete_laplace", record)
    # sqrt(2ρ) = sqrt(2) rounds up in doubles: the sampler's ε must be a rational below it.
    delta, rho = 0.004, 1.0
    assert Fraction(math.sqrt(2 * rho)) ** 2 > 2 * Fraction(rho)
    rng = np.random.default_rng(0)
    assert sparse_vector(np.array([-1.0, -2.0, -3.0]), threshold=0.0, rho=rho, sensitivity=delta, rng=rng,
                         noise="exact") == 3
    step = Fraction(2) ** (math.frexp(delta)[1] - 1 - exact.GRID_BITS)
    shift = math.floor(Fraction(delta) / step) + 1  # a rounded query moves by at most this many grid steps
    eps = 2 * shift / scales[0]  # the ε the threshold's noise scale 2 shift/ε implies
    assert eps * eps <= 2 * Fraction(rho) and float(eps) == pytest.approx(math.sqrt(2 * rho), rel=1e-15)
    assert scales[1:] == [4 * shift / eps] * 3
    # With no noise, a query equal to the threshold reaches it: AboveThreshold fires on >=.
    assert sparse_vector(np.array([-1.0, 0.0, 1.0]), threshold=0.0, rho=rho, sensitivity=delta, rng=rng,
                         noise="exact") == 1


def _X(n=2000, d=5, seed=0):
    return np.random.default_rng(seed).uniform(-1, 1, size=(n, d))


@pytest.mark.parametrize("cls, kw", [(SSP, {}), (PACEGGM, {"max_rounds": 1}), (AdaptiveCov, {})],
                         ids=["SSP", "PACEGGM-T1", "AdaptiveCov"])
def test_exact_fits_charge_exactly_the_ledger_of_fast_ones(cls, kw):
    X = _X()
    fast = cls(rho=0.7, random_state=0, **kw).fit(X)
    exact_fit = cls(rho=0.7, noise="exact", random_state=0, **kw).fit(X)
    assert exact_fit.ledger_ == fast.ledger_
    assert exact_fit.rho_spent_ == fast.rho_spent_
    assert sum(Fraction(c.rho) for c in exact_fit.ledger_) <= Fraction(0.7)


def test_an_exact_pace_ggm_fit_spends_its_budget_and_never_more():
    accountant = ZCDPAccountant(1.0)
    est = PACEGGM(rho=1.0, noise="exact", accountant=accountant, random_state=0).fit(_X())
    assert sum(Fraction(c.rho) for c in est.ledger_) <= 1
    assert est.rho_spent_ == pytest.approx(1.0, abs=1e-12) and accountant.spent == 1.0


def test_exact_ssp_noise_has_the_fast_noise_scale():
    # 10 fits × 210 distinct entries of d = 20: mean (noise/σ)² is within 0.1 of 1 (about 3 standard errors).
    X = _X(n=1000, d=20)
    truth = X.T @ X / X.shape[0]
    upper = np.triu_indices(20)
    for noise in ("fast", "exact"):
        ratios = []
        for seed in range(10):
            est = SSP(rho=1.0, noise=noise, random_state=seed).fit(X)
            ratios.append(((est.covariance_ - truth)[upper] / est.sigma_) ** 2)
        assert abs(np.mean(ratios) - 1.0) < 0.1, noise


def test_exact_pace_ggm_is_as_accurate_as_fast():
    X = _X(n=3000, d=5, seed=1) * np.array([1.0, 1.0, 0.5, 0.5, 0.25])
    truth = X.T @ X / X.shape[0]
    errors = {noise: [np.linalg.norm(PACEGGM(rho=0.5, noise=noise, random_state=s).fit(X).covariance_ - truth)
                      for s in range(12)] for noise in ("fast", "exact")}
    ratio = np.mean(errors["exact"]) / np.mean(errors["fast"])
    assert 0.6 < ratio < 1.6, errors


@pytest.mark.parametrize("cls", ALL, ids=lambda c: c.__name__)
def test_exact_fits_are_reproducible_from_a_seed(cls):
    X = _X(n=600, d=3) * 0.5
    args = (X, X[:, 0]) if cls in REGRESSION else (X,)
    first = cls(rho=1.0, noise="exact", random_state=3).fit(*args)
    again = cls(rho=1.0, noise="exact", random_state=3).fit(*args)
    other = cls(rho=1.0, noise="exact", random_state=4).fit(*args)
    attr = "covariance_" if hasattr(first, "covariance_") else "coef_"
    np.testing.assert_array_equal(getattr(first, attr), getattr(again, attr))
    assert not np.array_equal(getattr(first, attr), getattr(other, attr))


def test_unseeded_exact_noise_draws_every_bit_from_secrets(monkeypatch):
    """With secrets replaced by a seeded byte stream, two unseeded fits are the same release: nothing else drew."""
    source = random.Random()
    calls = []

    def fake_token_bytes(n):
        calls.append(n)
        return source.randbytes(n)

    X = _X(n=600, d=3) * 0.5
    monkeypatch.setattr(exact.secrets, "token_bytes", fake_token_bytes)
    # No numpy Generator may be made either.
    monkeypatch.setattr(np.random, "default_rng", lambda *a, **k: pytest.fail("a Generator was made"))
    for cls in ALL:
        args = (X, X[:, 0]) if cls in REGRESSION else (X,)
        releases = []
        for _ in range(2):
            source.seed(0)
            calls.clear()
            est = cls(rho=1.0, noise="exact").fit(*args)
            assert calls, cls
            releases.append(getattr(est, "covariance_", None) if hasattr(est, "covariance_") else est.coef_)
        np.testing.assert_array_equal(*releases)


def test_seeded_exact_noise_never_reads_secrets(monkeypatch):
    monkeypatch.setattr(exact.secrets, "token_bytes", lambda n: pytest.fail("secrets read"))
    PACEGGM(rho=1.0, noise="exact", random_state=0).fit(_X(n=600, d=3))


@pytest.mark.parametrize("cls", ALL, ids=lambda c: c.__name__)
@pytest.mark.parametrize("bad", ["exakt", "Exact", "", None, 1])
def test_bad_noise_is_refused_in_one_line_before_any_budget_is_spent(cls, bad):
    accountant = ZCDPAccountant(1.0)
    X = _X(n=200, d=3) * 0.5
    with pytest.raises(ValueError, match=r"^noise must be one of \['fast', 'exact'\].*got") as info:
        est = cls(rho=1.0, noise=bad, accountant=accountant)
        est.fit(X, X[:, 0]) if cls in REGRESSION else est.fit(X)
    assert "\n" not in str(info.value)
    assert accountant.spent == 0


def test_exact_noise_refuses_the_rows_sampler():
    with pytest.raises(ValueError, match="noise='exact' needs sampler='gumbel'"):
        PACEGGM(rho=1.0, noise="exact", sampler="rows").fit(_X(n=200, d=3))


def test_every_estimator_defaults_to_fast_noise():
    import inspect

    for cls in ALL:
        assert inspect.signature(cls).parameters["noise"].default == "fast", cls


@pytest.mark.parametrize("cls", [PACEGGM, SSP, AdaptiveCov, AdaSSP], ids=lambda c: c.__name__)
def test_check_estimator_passes_with_exact_noise(cls):
    import warnings

    from sklearn.utils.estimator_checks import check_estimator

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = check_estimator(cls(rho=1e12, bound=1e3, noise="exact", random_state=0), on_fail=None)
    failed = {r["check_name"]: str(r["exception"])[:200] for r in results if r["status"] == "failed"}
    assert not failed


def test_a_broken_exact_control_is_caught_at_small_draws():
    from paceggm.bench.audit import audit_case
    from paceggm.bench.audit.exact_noise_cases import EXACT_NOISE_CASES

    cases = {c.name: c for c in EXACT_NOISE_CASES}
    for name in ("gaussian_exact_half_noise", "exponential_exact_half_sensitivity"):
        assert audit_case(cases[name], 2000, power_reps=0).verdict == "caught", name
    correct = audit_case(cases["gaussian_exact"], 2000, power_reps=0)
    assert correct.verdict == "no violation found" and correct.bound.rho <= cases["gaussian_exact"].rho


"""The exponential mechanism on the sphere (Bingham draws) and the Laplace mechanism: their laws and calibrations."""

from __future__ import annotations

import math
import random
import warnings
from fractions import Fraction

import numpy as np
import pytest
from scipy import integrate
from scipy.stats import chisquare, kstest, laplace

from paceggm.exceptions import PrivacyLeakWarning
from paceggm.privacy import (
    bingham_mechanism,
    eigenvalue_l1_sensitivity,
    exact,
    exponential_mechanism_epsilon,
    laplace_epsilon,
    laplace_mechanism,
    sample_bingham,
    sphere,
)

N_DRAWS = 20_000
P_MIN = 1e-3

# --- the sampler's law: d = 2, the angle -------------------------------------------------------------

# exp(uᵀAu) on the circle, u = (cos θ, sin θ): a density on θ ∈ [0, π) (u and −u are the same axis).
CIRCLES = {
    "tilted": np.array([[2.0, 0.7], [0.7, -1.0]]),
    "flat": np.zeros((2, 2)),
    "concentrated": np.array([[40.0, 5.0], [5.0, 0.0]]),
}


def _angle_density(A):
    def f(theta):
        c, s = np.cos(theta), np.sin(theta)
        return np.exp(A[0, 0] * c * c + 2.0 * A[0, 1] * s * c + A[1, 1] * s * s - np.abs(A).sum())
    return f


def _angle_chi2(U, A, bins=30) -> float:
    """χ² of the axes' angles in [0, π) against the Bingham density of ``A``: equal bins, those expecting < 5
    pooled into one (merged into the largest bin if the pool itself expects < 5)."""
    theta = np.mod(np.arctan2(U[:, 1], U[:, 0]), np.pi)
    f = _angle_density(A)
    edges = np.linspace(0.0, np.pi, bins + 1)
    mass = np.array([integrate.quad(f, lo, hi, epsabs=0, epsrel=1e-12)[0] for lo, hi in zip(edges[:-1], edges[1:])])
    expected = mass / mass.sum() * theta.size
    observed = np.histogram(theta, edges)[0].astype(float)
    keep = expected >= 5
    obs, exp = list(observed[keep]), list(expected[keep])
    if expected[~keep].sum() >= 5:
        obs.append(observed[~keep].sum())
        exp.append(expected[~keep].sum())
    else:
        top = int(np.argmax(exp))
        obs[top] += observed[~keep].sum()
        exp[top] += expected[~keep].sum()
    return float(chisquare(obs, exp).pvalue)


@pytest.mark.parametrize("name", sorted(CIRCLES))
def test_draws_on_the_circle_follow_the_bingham_density(name):
    A = CIRCLES[name]
    U = sample_bingham(A, N_DRAWS, rng=np.random.default_rng(1))
    assert U.shape == (N_DRAWS, 2)
    np.testing.assert_allclose(np.linalg.norm(U, axis=1), 1.0, rtol=0, atol=1e-14)
    assert _angle_chi2(U, A) > P_MIN


def test_the_angle_passes_kolmogorov_smirnov_against_its_exact_cdf():
    A = CIRCLES["tilted"]
    U = sample_bingham(A, 3000, rng=np.random.default_rng(2))
    theta = np.mod(np.arctan2(U[:, 1], U[:, 0]), np.pi)
    f = _angle_density(A)
    total = integrate.quad(f, 0.0, np.pi, epsrel=1e-12)[0]
    grid = np.linspace(0.0, np.pi, 2001)
    cdf = np.concatenate([[0.0], np.cumsum([integrate.quad(f, a, b, epsrel=1e-12)[0]
                                            for a, b in zip(grid[:-1], grid[1:])])]) / total
    assert kstest(theta, lambda t: np.interp(t, grid, cdf)).pvalue > P_MIN


def test_the_test_rejects_the_proposal_law_accepted_without_rejection(monkeypatch):
    # Power: the angular central Gaussian envelope alone (every proposal accepted) is not the target.
    monkeypatch.setattr(sphere, "log_acceptance", lambda s, q, b: np.zeros_like(s))
    A = CIRCLES["tilted"]
    assert _angle_chi2(sample_bingham(A, N_DRAWS, rng=np.random.default_rng(1)), A) < P_MIN


def test_the_test_rejects_a_temperature_off_by_ten_percent():
    A = CIRCLES["tilted"]
    assert _angle_chi2(sample_bingham(1.1 * A, N_DRAWS, rng=np.random.default_rng(3)), A) < P_MIN


# --- d = 3: cells of the hemisphere ---------------------------------------------------------------

A3 = np.array([[1.5, 0.4, -0.3], [0.4, 0.2, 0.5], [-0.3, 0.5, -1.0]])


def _sphere_cells(U, n_z=5, n_phi=8):
    """Cell of each axis in the upper hemisphere: equal bins of z = u₃ ∈ [0, 1] and of the azimuth."""
    U = U * np.where(U[:, 2:3] < 0, -1.0, 1.0)
    z = np.clip(U[:, 2], 0.0, 1.0 - 1e-15)
    phi = np.mod(np.arctan2(U[:, 1], U[:, 0]), 2 * np.pi)
    return np.floor(z * n_z).astype(int) * n_phi + np.floor(phi / (2 * np.pi) * n_phi).astype(int)


def _sphere_cell_masses(A, n_z=5, n_phi=8, grid=600):
    # The area element is dz dφ in (z, φ) (Archimedes): a midpoint rule on a fine grid of both.
    z = (np.arange(grid) + 0.5) / grid
    phi = (np.arange(4 * grid) + 0.5) / (4 * grid) * 2 * np.pi
    Zg, Pg = np.meshgrid(z, phi, indexing="ij")
    r = np.sqrt(1 - Zg**2)
    U = np.stack([r * np.cos(Pg), r * np.sin(Pg), Zg], axis=-1)
    w = np.exp(np.einsum("...i,ij,...j->...", U, A, U))
    cells = (np.floor(Zg * n_z).astype(int) * n_phi + np.floor(Pg / (2 * np.pi) * n_phi).astype(int)).ravel()
    mass = np.bincount(cells, weights=w.ravel(), minlength=n_z * n_phi)
    return mass / mass.sum()


def test_draws_on_the_two_sphere_follow_the_bingham_density():
    U = sample_bingham(A3, N_DRAWS, rng=np.random.default_rng(4))
    observed = np.bincount(_sphere_cells(U), minlength=40)
    expected = _sphere_cell_masses(A3) * N_DRAWS
    assert expected.min() >= 5
    assert chisquare(observed, expected).pvalue > P_MIN
    # Power: a 10% wrong temperature is seen by the same test.
    wrong = np.bincount(_sphere_cells(sample_bingham(1.1 * A3, N_DRAWS, rng=np.random.default_rng(5))), minlength=40)
    assert chisquare(wrong, expected).pvalue < P_MIN


def test_exact_random_bits_draw_the_same_law():
    bits = exact.RandomBits(np.random.default_rng(6))
    U = sample_bingham(A3, 5000, rng=bits)
    observed = np.bincount(_sphere_cells(U), minlength=40)
    assert chisquare(observed, _sphere_cell_masses(A3) * 5000).pvalue > P_MIN


# --- the envelope ---------------------------------------------------------------------------------


@pytest.mark.parametrize("a", [[0.0, 0.0], [0.0, 3.0], [0.0, 0.5, 7.0, 1e9], [0.0] * 4 + [2.0]])
def test_the_envelope_constant_solves_its_equation_in_one_to_q(a):
    a = np.array(a)
    b = sphere.envelope_b(a)
    assert 1.0 <= b <= a.size
    assert np.sum(1.0 / (b + 2.0 * a)) == pytest.approx(1.0, rel=1e-10)


def test_the_uniform_law_has_b_equal_q_and_accepts_every_proposal():
    assert sphere.envelope_b(np.zeros(3)) == 3.0
    assert sphere.log_acceptance(np.zeros(1), 3, 3.0) == pytest.approx(0.0, abs=1e-15)


@pytest.mark.parametrize("q, b", [(2, 1.0), (2, 1.7), (3, 1.2), (5, 4.9), (5, 9.0)])
def test_the_acceptance_probability_never_exceeds_one_and_reaches_it_at_its_peak(q, b):
    s = np.concatenate([np.linspace(0.0, 50.0, 20001), [0.5 * (q - b)] if q >= b else []])
    log_p = sphere.log_acceptance(s, q, b)
    assert log_p.max() <= 1e-12
    if q >= b:  # the bound M* is attained at s = (q − b)/2: the envelope is as tight as it can be
        assert log_p[-1] == pytest.approx(0.0, abs=1e-12)


def test_a_one_dimensional_sphere_is_plus_or_minus_one():
    U = sample_bingham(np.array([[3.0]]), 200, rng=np.random.default_rng(7))
    assert set(np.abs(U).ravel()) == {1.0}


def test_one_draw_is_a_vector_and_a_seed_reproduces_it():
    a = sample_bingham(A3, rng=np.random.default_rng(8))
    b = sample_bingham(A3, rng=np.random.default_rng(8))
    assert a.shape == (3,)
    np.testing.assert_array_equal(a, b)


# --- the mechanism: its calibration, its refusals, exact noise --------------------------------------


def test_the_mechanism_draws_from_exp_of_epsilon_over_two_delta_times_the_score():
    M, rho, delta = np.array([[0.3, 0.1, 0.0], [0.1, 0.2, 0.05], [0.0, 0.05, 0.1]]), 0.7, 0.01
    got = bingham_mechanism(M, rho=rho, sensitivity=delta, rng=np.random.default_rng(9))
    eps = math.sqrt(8.0 * rho)
    assert exponential_mechanism_epsilon(rho) == eps
    want = sample_bingham(eps / (2.0 * delta) * M, rng=np.random.default_rng(9))
    np.testing.assert_array_equal(got, want)


def test_at_a_huge_budget_the_mechanism_returns_the_top_eigenvector():
    M = np.diag([0.5, 0.3, 0.1])
    u = bingham_mechanism(M, rho=1e8, sensitivity=1e-3, rng=np.random.default_rng(10))
    assert abs(u[0]) > 1 - 1e-6


@pytest.mark.parametrize("kw, message", [
    (dict(rho=0.0), "rho"), (dict(rho=-1.0), "rho"), (dict(sensitivity=0.0), "sensitivity"),
    (dict(sensitivity=-1.0), "sensitivity"), (dict(matrix=np.ones((2, 3))), "square"),
    (dict(matrix=np.array([[1.0, 2.0], [0.0, 1.0]])), "symmetric"), (dict(matrix=np.full((2, 2), np.nan)), "finite"),
    (dict(matrix=np.full((2, 2), 1e300), sensitivity=1e-300), "overflows"), (dict(noise="exakt"), "noise"),
    (dict(matrix=np.zeros((0, 0))), "square"),
])
def test_bad_input_is_refused_in_one_line_for_both_noises(kw, message):
    messages = []
    for noise in ("fast", "exact"):
        call = dict(matrix=np.eye(2), rho=1.0, sensitivity=0.1, rng=np.random.default_rng(0), noise=noise) | kw
        with warnings.catch_warnings(), pytest.raises(ValueError) as info:
            warnings.simplefilter("ignore", PrivacyLeakWarning)
            bingham_mechanism(call.pop("matrix"), **call)
        messages.append(str(info.value))
        assert message in messages[-1] and "\n" not in messages[-1]
    assert messages[0] == messages[1]


def test_exact_noise_warns_that_the_sphere_has_no_exact_sampler_and_fast_noise_does_not():
    with pytest.warns(PrivacyLeakWarning, match="no exact sampler"):
        bingham_mechanism(np.eye(2), rho=1.0, sensitivity=0.1, rng=np.random.default_rng(0), noise="exact")
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        bingham_mechanism(np.eye(2), rho=1.0, sensitivity=0.1, rng=np.random.default_rng(0))


@pytest.mark.filterwarnings("ignore::paceggm.exceptions.PrivacyLeakWarning")
def test_exact_noise_draws_its_bits_from_the_generator_or_from_secrets(monkeypatch):
    M = np.diag([0.4, 0.1, 0.2])
    a = bingham_mechanism(M, rho=1.0, sensitivity=0.1, rng=np.random.default_rng(11), noise="exact")
    b = bingham_mechanism(M, rho=1.0, sensitivity=0.1, rng=np.random.default_rng(11), noise="exact")
    np.testing.assert_array_equal(a, b)
    source, calls = random.Random(0), []

    def token_bytes(n):
        calls.append(n)
        return source.randbytes(n)

    monkeypatch.setattr(exact.secrets, "token_bytes", token_bytes)
    bingham_mechanism(M, rho=1.0, sensitivity=0.1, rng=None, noise="exact")
    assert calls


# --- the Laplace mechanism ------------------------------------------------------------------------


def test_laplace_noise_has_scale_sensitivity_over_sqrt_two_rho():
    rho, delta = 0.32, 0.5
    assert laplace_epsilon(rho) == math.sqrt(2 * rho) == 0.8
    noisy, scale = laplace_mechanism(np.zeros(N_DRAWS), rho=rho, sensitivity=delta, rng=np.random.default_rng(12))
    assert scale == delta / 0.8
    assert kstest(noisy / scale, laplace.cdf).pvalue > P_MIN
    assert kstest(noisy / (1.1 * scale), laplace.cdf).pvalue < P_MIN  # power: a scale off by 10% is seen
    one, _ = laplace_mechanism(2.5, rho=rho, sensitivity=delta, rng=np.random.default_rng(12))
    assert type(one) is float


def test_exact_laplace_noise_lies_on_its_grid_pays_its_rounding_and_has_the_laplace_law():
    rho, delta, k = 0.5, 0.25, N_DRAWS
    noisy, scale = laplace_mechanism(np.zeros(k), rho=rho, sensitivity=delta, rng=np.random.default_rng(13),
                                     noise="exact")
    step = 2.0 ** (math.frexp(delta / math.sqrt(2 * rho))[1] - 1 - exact.GRID_BITS)
    assert np.all(noisy / step == np.rint(noisy / step))
    # ℓ1 sensitivity Δ/γ + k in grid units over ε: the scale is (Δ + kγ)/ε, never below Δ/ε.
    assert scale == pytest.approx((delta + k * step) / math.sqrt(2 * rho), rel=1e-12)
    assert scale >= delta / math.sqrt(2 * rho)
    assert kstest(noisy / scale, laplace.cdf).pvalue > P_MIN


def test_exact_laplace_scale_is_the_rational_the_accounting_states(monkeypatch):
    seen = []
    monkeypatch.setattr(exact, "discrete_laplace", lambda scale, bits: seen.append(Fraction(scale)) or 0)
    rho, delta = 1.0, 0.004  # sqrt(2) rounds up in doubles: the sampler's ε is a rational below it
    laplace_mechanism(np.array([0.1, -0.2, 0.3]), rho=rho, sensitivity=delta, rng=np.random.default_rng(0),
                      noise="exact")
    step = Fraction(2) ** (math.frexp(delta / math.sqrt(2 * rho))[1] - 1 - exact.GRID_BITS)
    eps = (Fraction(delta) / step + 3) / seen[0]  # the ε the scale implies for the rounded query's sensitivity
    assert seen == [seen[0]] * 3 and eps * eps <= 2 * Fraction(rho)
    assert float(eps) == pytest.approx(math.sqrt(2 * rho), rel=1e-15)


@pytest.mark.parametrize("bad", [{"rho": 0.0, "sensitivity": 1.0}, {"rho": 1.0, "sensitivity": 0.0},
                                 {"rho": 1.0, "sensitivity": -1.0}])
def test_laplace_refuses_a_bad_budget_or_sensitivity_alike_for_both_noises(bad):
    messages = []
    for noise in ("fast", "exact"):
        with pytest.raises(ValueError) as info:
            laplace_mechanism(1.0, **bad, rng=np.random.default_rng(0), noise=noise)
        messages.append(str(info.value))
    assert messages[0] == messages[1] and ("sensitivity" if bad["rho"] else "rho") in messages[0]
    if bad["rho"]:
        assert messages[0] == f"sensitivity must be a finite number > 0, got {bad['sensitivity']!r}"


# --- the eigenvalues' ℓ1 sensitivity -----------------------------------------------------------------


def test_the_eigenvalues_l1_sensitivity_is_attained_and_never_exceeded():
    n, d = 10, 3
    assert eigenvalue_l1_sensitivity(n=n, d=d, bound=1.0, norm="l2") == 2.0 / n
    assert eigenvalue_l1_sensitivity(n=n, d=d, bound=0.5, norm="linf") == 2.0 * d * 0.25 / n
    assert eigenvalue_l1_sensitivity(n=n, d=d, bound=0.5) == 2.0 * d * 0.25 / n  # the coordinate bound by default
    X = np.zeros((n, d))
    X[:3, 0] = 1.0
    Y = X.copy()
    Y[0] = (0.0, 1.0, 0.0)

    def eig(Z):
        return np.linalg.eigvalsh(Z.T @ Z / n)[::-1]

    assert np.abs(eig(X) - eig(Y)).sum() == pytest.approx(2.0 / n, rel=1e-12)
    rng = np.random.default_rng(14)
    for _ in range(300):
        X = rng.normal(size=(n, d))
        X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
        Y = X.copy()
        Y[rng.integers(n)] = (z := rng.normal(size=d)) / max(1.0, np.linalg.norm(z))
        assert np.abs(eig(X) - eig(Y)).sum() <= 2.0 / n * (1 + 1e-12)


# --- exact messages, the draws' sources, and one draw as the first of a batch ------------------------


@pytest.mark.parametrize("call, message", [
    (lambda: bingham_mechanism(np.ones((2, 3)), rho=1.0, sensitivity=0.1, rng=np.random.default_rng(0)),
     "matrix must be a non-empty square matrix, got shape (2, 3)"),
    (lambda: bingham_mechanism(np.array([[0.0, 1.0], [0.0, 0.0]]), rho=1.0, sensitivity=0.1,
                               rng=np.random.default_rng(0)), "matrix must be symmetric"),
    (lambda: bingham_mechanism(np.full((2, 2), np.inf), rho=1.0, sensitivity=0.1, rng=np.random.default_rng(0)),
     "matrix must be finite"),
    (lambda: bingham_mechanism(np.eye(2), rho=1.0, sensitivity=0.0, rng=np.random.default_rng(0)),
     "sensitivity must be a finite number > 0, got 0.0"),
    (lambda: bingham_mechanism(np.full((2, 2), 1e300), rho=1.0, sensitivity=1e-300, rng=np.random.default_rng(0)),
     "matrix times ε/(2·sensitivity) overflows a double"),
    (lambda: sample_bingham(np.ones(3), rng=np.random.default_rng(0)),
     "A must be a non-empty square matrix, got shape (3,)"),
])
def test_the_refusals_name_what_is_wrong_and_nothing_warns_before_them(call, message):
    with warnings.catch_warnings(), pytest.raises(ValueError) as info:
        warnings.simplefilter("error")  # the refusal, and no overflow warning before it
        call()
    assert str(info.value) == message


def test_the_exact_noise_warning_is_the_whole_sentence_and_points_at_the_caller():
    with pytest.warns(PrivacyLeakWarning) as record:
        bingham_mechanism(np.eye(2), rho=1.0, sensitivity=0.1, rng=np.random.default_rng(0), noise="exact")
    assert str(record[0].message) == (
        "noise='exact': the exponential mechanism on the sphere has no exact sampler; its draw is made in doubles "
        "(from exact random bits), so its guarantee is the doubles' one, open to the floating-point attacks "
        "noise='exact' rules out elsewhere")
    assert record[0].filename != sphere.__file__  # stacklevel=2: the caller's line, not the library's


class _FixedBits(exact.RandomBits):
    """Every draw of k bits is ``value`` (cut to k bits)."""

    def __init__(self, value):
        super().__init__(None)
        self.value = value

    def bits(self, k):
        return self.value & ((1 << k) - 1)


def test_exact_uniforms_lie_strictly_inside_the_unit_interval_at_the_middle_of_their_cells():
    lowest = sphere._Draws(_FixedBits(0)).uniform(3)
    highest = sphere._Draws(_FixedBits((1 << 60) - 1)).uniform(2)
    np.testing.assert_array_equal(lowest, [2.0**-54] * 3)
    np.testing.assert_array_equal(highest, [1.0 - 2.0**-54] * 2)


def test_exact_normals_and_uniforms_have_their_laws():
    draws = sphere._Draws(exact.RandomBits(np.random.default_rng(15)))
    assert kstest(draws.uniform(N_DRAWS), "uniform").pvalue > P_MIN
    normals = draws.normal((N_DRAWS // 4, 4))
    assert normals.shape == (N_DRAWS // 4, 4)
    assert kstest(normals.ravel(), "norm").pvalue > P_MIN


def test_one_draw_is_the_first_of_a_batch_of_one():
    one = sample_bingham(A3, rng=np.random.default_rng(16))
    batch = sample_bingham(A3, 1, rng=np.random.default_rng(16))
    assert batch.shape == (1, 3)
    np.testing.assert_array_equal(one, batch[0])


def test_exact_laplace_keeps_the_shape_of_a_scalar_or_a_matrix_and_pays_one_grid_step_per_coordinate():
    rng = np.random.default_rng(17)
    one, scale = laplace_mechanism(0.0, rho=0.5, sensitivity=1.0, rng=rng, noise="exact")
    assert type(one) is float and scale == 1.0 + 2.0**-32  # ε = 1, γ = 2^-32: (Δ + γ)/ε
    matrix, scale = laplace_mechanism(np.zeros((2, 3)), rho=0.5, sensitivity=1.0, rng=rng, noise="exact")
    assert matrix.shape == (2, 3) and scale == 1.0 + 6 * 2.0**-32
    # ρ = 4.5: ε = 3 exactly; the rational ε is the double itself, the scale (Δ + kγ)/ε.
    _, scale = laplace_mechanism(np.zeros(2), rho=4.5, sensitivity=3.0, rng=rng, noise="exact")
    assert scale == (3.0 + 2 * 2.0**-32) / 3.0


def test_exact_laplace_reads_float32_queries_in_doubles():
    # 1e30 in float32 is 2^32 · 1e30 grid steps once on the grid: beyond float32's range, well inside a double's.
    value = np.array([1e30, -2.5], dtype=np.float32)
    noisy, scale = laplace_mechanism(value, rho=0.5, sensitivity=1.0, rng=np.random.default_rng(18), noise="exact")
    assert noisy.dtype == np.float64 and noisy[0] == float(value[0]) and abs(noisy[1] + 2.5) < 30 * scale


@pytest.mark.parametrize("matrix, symmetric", [
    (np.array([[1.0, 1.0 + 1e-8], [1.0, 1.0]]), False),  # a relative asymmetry of 1e-8
    (np.array([[0.0, 1e-10], [0.0, 0.0]]), False),  # below the default absolute tolerance of allclose
    (np.array([[0.0, 1.5e-12], [0.0, 0.0]]), False),  # 1e-12 of the scale, the scale at least 1
    (np.array([[1e6, 1e-7], [0.0, 1.0]]), True),  # rounding-level asymmetry relative to the largest entry
    (np.array([[2.0, 1.0], [1.0 + 1e-13, 2.0]]), True),
])
def test_a_matrix_is_symmetric_to_1e_12_of_its_largest_entry(matrix, symmetric):
    if symmetric:
        assert bingham_mechanism(matrix, rho=1.0, sensitivity=1.0, rng=np.random.default_rng(0)).shape == (2,)
    else:
        with pytest.raises(ValueError, match="^matrix must be symmetric$"):
            bingham_mechanism(matrix, rho=1.0, sensitivity=1.0, rng=np.random.default_rng(0))

"""Sensitivities and the sparse vector mechanism that the baselines add to paceggm.privacy."""

import itertools
import math

import numpy as np
import pytest
from scipy import integrate

from paceggm.privacy import (
    cross_moment_sensitivity,
    distinct_entries_sensitivity,
    eigenvalue_sensitivity,
    entry_sensitivity,
    full_sensitivity,
    mean_sensitivity,
    sparse_vector,
    spectral_sensitivity,
    trace_sensitivity,
)


def _distinct(x):
    upper = np.triu_indices(x.shape[-1])
    return (x[..., :, None] * x[..., None, :])[..., upper[0], upper[1]]


def _corner_maximum(d):
    """max ‖v(x) − v(x')‖ over x, x' ∈ {−1, 0, 1}^d (the vertices of the convex bound)."""
    corners = np.array(list(itertools.product((-1.0, 0.0, 1.0), repeat=d)))
    v = _distinct(corners)
    sq = (v**2).sum(1)
    gram = v @ v.T
    return math.sqrt(max(0.0, (sq[:, None] + sq[None, :] - 2 * gram).max()))


@pytest.mark.parametrize("d", [1, 2, 3, 4, 5])
def test_distinct_entries_sensitivity_brute_force_over_corners(d):
    bound_ = distinct_entries_sensitivity(n=1, d=d, bound=1.0)
    best = _corner_maximum(d)
    # exact for d = 1 and even d; sqrt(d² − 1) at the corners for odd d ≥ 3
    expected = d if (d == 1 or d % 2 == 0) else math.sqrt(d * d - 1)
    assert best == pytest.approx(expected, abs=1e-12)
    assert best <= bound_ + 1e-12
    if d == 1 or d % 2 == 0:
        assert best == pytest.approx(bound_, abs=1e-12)
    # strictly below the Frobenius sensitivity SSP uses, by sqrt(2)
    assert bound_ == pytest.approx(full_sensitivity(n=1, d=d, bound=1.0) / math.sqrt(2))


@pytest.mark.parametrize("d", [2, 3, 4])
def test_distinct_entries_sensitivity_holds_inside_the_cube(d):
    rng = np.random.default_rng(d)
    B, n = 0.7, 13
    x = rng.uniform(-B, B, size=(20000, d))
    xp = rng.uniform(-B, B, size=(20000, d))
    # push some coordinates to the faces, where maxima live
    for z in (x, xp):
        face = rng.random(z.shape) < 0.5
        z[face] = B * np.sign(z[face])
    diff = np.linalg.norm(_distinct(x) - _distinct(xp), axis=1) / n
    assert diff.max() <= distinct_entries_sensitivity(n=n, d=d, bound=B) * (1 + 1e-12)


def test_distinct_entries_sensitivity_l2_is_attained():
    C, n = 2.0, 5
    x, xp = np.array([C, 0.0, 0.0]), np.array([0.0, C, 0.0])
    attained = np.linalg.norm(_distinct(x) - _distinct(xp)) / n
    assert attained == pytest.approx(distinct_entries_sensitivity(n=n, d=3, bound=C, norm="l2"))
    rng = np.random.default_rng(1)
    z = rng.normal(size=(5000, 3))
    z = C * z / np.linalg.norm(z, axis=1, keepdims=True) * rng.random((5000, 1)) ** 0.1
    zp = np.roll(z, 1, axis=0)
    assert (np.linalg.norm(_distinct(z) - _distinct(zp), axis=1) / n).max() <= attained * (1 + 1e-12)


def test_trace_spectral_eigenvalue_and_cross_sensitivities_hold_on_random_pairs():
    rng = np.random.default_rng(2)
    n, d, B = 7, 4, 0.5
    X = rng.uniform(-B, B, size=(200, n, d))
    X[:, 0] = B * np.sign(rng.normal(size=(200, d)))
    Xp = X.copy()
    Xp[:, 0] = B * np.sign(rng.normal(size=(200, d))) * (rng.random((200, d)) < 0.7)
    S = np.einsum("bij,bik->bjk", X, X) / n
    Sp = np.einsum("bij,bik->bjk", Xp, Xp) / n
    tr = np.abs(np.trace(S, axis1=1, axis2=2) - np.trace(Sp, axis1=1, axis2=2))
    ev, evp = np.linalg.eigvalsh(S), np.linalg.eigvalsh(Sp)
    assert tr.max() <= trace_sensitivity(n=n, d=d, bound=B) + 1e-15
    assert np.abs(ev - evp).max() <= spectral_sensitivity(n=n, d=d, bound=B) + 1e-15
    assert np.linalg.norm(ev - evp, axis=1).max() <= eigenvalue_sensitivity(n=n, d=d, bound=B) + 1e-15
    y, yp = rng.uniform(-1, 1, size=(200, n)), rng.uniform(-1, 1, size=(200, n))
    yp[:, 1:] = y[:, 1:]
    c = np.einsum("bij,bi->bj", X, y) / n
    cp = np.einsum("bij,bi->bj", Xp, yp) / n
    assert np.linalg.norm(c - cp, axis=1).max() <= cross_moment_sensitivity(n=n, bound_x=math.sqrt(d) * B, bound_y=1.0)
    # the trace bound is attained: a row of ±B against a zero row
    assert trace_sensitivity(n=n, d=d, bound=B) == pytest.approx(d * B * B / n)


def _worst_pairs(d, B):
    """Records at which each ℓ∞ bound is attained (``|x_j| <= B``, d even): rows of a Hadamard matrix, scaled."""
    h = np.array([[1.0]])
    while h.shape[0] < d:
        h = np.block([[h, h], [h, -h]])
    return B * h[0, :d], B * h[1, :d]  # orthogonal sign patterns: x·x' = 0


@pytest.mark.parametrize("d", [2, 4])
@pytest.mark.parametrize(("B", "n"), [(0.5, 7), (3.0, 1), (3.0, 40)])
def test_every_sensitivity_is_attained_by_a_pair_of_records(d, B, n):
    """Each formula against the change a worst pair of neighbouring records makes, computed from the
    definitions (not the formulas): the sensitivities are tight, not only upper bounds. B ≠ 1 and
    n ≠ 1 tell B² from 2B or B, and /n from ·n."""
    x, xp = _worst_pairs(d, B)

    def moved(f, a, b):
        return float(np.linalg.norm(np.atleast_1d(f(a) - f(b)))) / n

    outer = lambda z: np.outer(z, z)  # noqa: E731
    # ℓ∞: |x_j| <= B
    assert moved(lambda z: outer(z)[1, 0], x, xp) == pytest.approx(entry_sensitivity(n=n, bound=B), rel=1e-12)
    assert moved(outer, x, xp) == pytest.approx(full_sensitivity(n=n, d=d, bound=B), rel=1e-12)
    assert moved(_distinct, x, xp) == pytest.approx(distinct_entries_sensitivity(n=n, d=d, bound=B), rel=1e-12)
    assert moved(lambda z: z @ z, x, 0 * x) == pytest.approx(trace_sensitivity(n=n, d=d, bound=B), rel=1e-12)
    assert moved(lambda z: z, x, -x) == pytest.approx(mean_sensitivity(n=n, d=d, bound=B), rel=1e-12)
    # ℓ2: ‖x‖₂ <= C, with C = B: the worst pairs are C e₁ against C e₂ (or −C e₁), and (C e₁ ± C e₂)/√2
    C = B
    e1, e2 = C * np.eye(d)[0], C * np.eye(d)[1]
    u, up = (e1 + e2) / math.sqrt(2), (e1 - e2) / math.sqrt(2)
    assert moved(lambda z: outer(z)[1, 0], u, up) == pytest.approx(entry_sensitivity(n=n, bound=C, norm="l2"),
                                                                  rel=1e-12)
    assert moved(outer, e1, e2) == pytest.approx(full_sensitivity(n=n, d=d, bound=C, norm="l2"), rel=1e-12)
    assert moved(_distinct, e1, e2) == pytest.approx(
        distinct_entries_sensitivity(n=n, d=d, bound=C, norm="l2"), rel=1e-12)
    assert moved(lambda z: z @ z, e1, 0 * e1) == pytest.approx(trace_sensitivity(n=n, d=d, bound=C, norm="l2"),
                                                              rel=1e-12)
    assert moved(lambda z: z, e1, -e1) == pytest.approx(mean_sensitivity(n=n, d=d, bound=C, norm="l2"), rel=1e-12)
    # ‖xy − x'y'‖: x' = −x, y' = y, with |y| = 2
    assert moved(lambda z: 2.0 * z, e1, -e1) == pytest.approx(
        cross_moment_sensitivity(n=n, bound_x=C, bound_y=2.0), rel=1e-12)


def test_one_variable_is_allowed_and_none_is_refused_by_name():
    """d = 1 is a valid data set (a single variable), d = 0 is not, and the error says which argument and why."""
    B, n = 3.0, 5
    assert mean_sensitivity(n=n, d=1, bound=B) == pytest.approx(2 * B / n, rel=1e-12)
    assert distinct_entries_sensitivity(n=n, d=1, bound=B) == pytest.approx(B * B / n, rel=1e-12)
    for f in (mean_sensitivity, distinct_entries_sensitivity, full_sensitivity, trace_sensitivity):
        with pytest.raises(ValueError, match=r"^d must be >= 1, got 0$"):
            f(n=n, d=0, bound=B)


def test_sensitivities_reject_bad_input():
    # n is a count: any integer type (NumPy's too), never a float
    assert entry_sensitivity(n=np.int64(4), bound=1.0) == entry_sensitivity(n=4, bound=1.0) == 0.5
    with pytest.raises(TypeError, match=r"^n must be an integer, got float$"):
        entry_sensitivity(n=4.0, bound=1.0)
    with pytest.raises(ValueError, match="norm"):
        distinct_entries_sensitivity(n=3, d=2, bound=1.0, norm="l1")
    with pytest.raises(ValueError, match="d must be"):
        trace_sensitivity(n=3, d=0, bound=1.0)
    with pytest.raises(ValueError, match=r"^bound must be a finite number > 0, got -1\.0$"):
        spectral_sensitivity(n=3, d=2, bound=-1.0)
    with pytest.raises(ValueError, match=r"^n must be >= 1, got 0$"):
        entry_sensitivity(n=0, bound=1.0)
    with pytest.raises(ValueError, match=r"^bound_y must be a finite number > 0, got 0.0$"):
        cross_moment_sensitivity(n=3, bound_x=1.0, bound_y=0.0)


def test_sparse_vector_returns_first_query_clearly_above_threshold():
    rng = np.random.default_rng(0)
    queries = np.array([-1e6, -1e6, 1e6, 1e6])
    assert sparse_vector(queries, threshold=0.0, rho=1.0, sensitivity=1.0, rng=rng) == 2
    assert sparse_vector(-queries[:2], threshold=0.0, rho=1.0, sensitivity=1.0, rng=rng) == 0
    assert sparse_vector([-1e6] * 3, threshold=0.0, rho=1.0, sensitivity=1.0, rng=rng) == 3


def test_sparse_vector_firing_probability_matches_its_laplace_noise():
    # One query q: fires iff q + L₂ ≥ L₁, L₁ ~ Lap(2Δ/ε), L₂ ~ Lap(4Δ/ε), ε = sqrt(2ρ).
    # ε = 2, not 1: a scale of 2Δε or 4Δε (ε multiplied where it divides) then moves the firing
    # probability from 0.72 to 0.62 or 0.58, 7 to 10 of the tolerances below.
    rho, delta, q, trials = 2.0, 2.0, 3.0, 20000
    eps = math.sqrt(2 * rho)
    b1, b2 = 2 * delta / eps, 4 * delta / eps

    def cdf1(t):
        return 0.5 * math.exp(t / b1) if t < 0 else 1.0 - 0.5 * math.exp(-t / b1)

    # P(L₁ ≤ q + L₂) = ∫ f₂(u) F₁(q + u) du
    p_fire = integrate.quad(
        lambda u: math.exp(-abs(u) / b2) / (2 * b2) * cdf1(q + u), -60 * b2, 60 * b2, points=[-q, 0.0], limit=200
    )[0]
    assert 0.5 < p_fire < 0.9
    rng = np.random.default_rng(7)
    fired = sum(sparse_vector([q], threshold=0.0, rho=rho, sensitivity=delta, rng=rng) == 0 for _ in range(trials))
    assert abs(fired / trials - p_fire) < 4 * math.sqrt(p_fire * (1 - p_fire) / trials)


def test_sparse_vector_rejects_bad_input():
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match=r"^queries must be finite$"):
        sparse_vector([0.0, np.nan], threshold=0.0, rho=1.0, sensitivity=1.0, rng=rng)
    with pytest.raises(ValueError, match=r"^queries must be a 1-D array$"):
        sparse_vector([[0.0]], threshold=0.0, rho=1.0, sensitivity=1.0, rng=rng)
    with pytest.raises(ValueError, match=r"^threshold must be finite, got nan$"):
        sparse_vector([0.0], threshold=np.nan, rho=1.0, sensitivity=1.0, rng=rng)
    with pytest.raises(ValueError, match=r"^rho must be"):
        sparse_vector([0.0], threshold=0.0, rho=0.0, sensitivity=1.0, rng=rng)
    with pytest.raises(ValueError, match=r"^sensitivity must be a finite number > 0"):
        sparse_vector([0.0], threshold=0.0, rho=1.0, sensitivity=-1.0, rng=rng)
    # Non-numeric queries: the conversion to float refuses them with a ValueError, not a TypeError from deep inside.
    with pytest.raises(ValueError, match="could not convert"):
        sparse_vector(["high", "low"], threshold=0.0, rho=1.0, sensitivity=1.0, rng=rng)

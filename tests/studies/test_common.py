"""What the studies share (studies/_common.py): errors, KKT residuals and data with known answers."""

from __future__ import annotations

import numpy as np
import pytest

from paceggm.reconstruction import reconstruct
from studies import _common as C


def _path_problem():
    rng = np.random.default_rng(0)
    A = rng.normal(size=(6, 6))
    y = A @ A.T / 6 + np.eye(6)
    lam = np.eye(6) + np.eye(6, k=1) + np.eye(6, k=-1)  # a path: chordal, closed-form completion exists
    return y, lam


def test_kkt_residuals_are_zero_at_the_max_entropy_completion_only():
    y, lam = _path_problem()
    W = reconstruct(y, 1e4 * lam).covariance
    for norm in ("max", "fro"):
        assert C.off_pattern(W, lam > 0, norm=norm) < 1e-6
        assert C.off_pattern(y, lam > 0, norm=norm) > 1e-2  # a completion, but not the max-entropy one
    assert C.stationarity(W, y, lam) < 1e-8 and C.kkt_residual(W, y, lam) < 1e-6
    assert C.kkt_residual(y, y, lam) > 1e-2 and C.stationarity(np.eye(6), y, lam) > 1e-2


def test_stationarity_at_mu_is_the_barrier_solutions():
    y, lam = _path_problem()
    res = reconstruct(y, lam, solver="newton", solver_options={"mu_min": 1e-2, "exact_limit": False})
    assert res.mu > 0  # in the units of (y, lam), as the solver benchmark passes it
    assert C.stationarity(res.covariance, y, lam, mu=res.mu) < 1e-6 < C.stationarity(res.covariance, y, lam)


def test_relative_errors_and_timing():
    b = np.array([[3.0, 4.0]])
    assert C.rel_max(b + [[0.0, 0.4]], b) == pytest.approx(0.1)
    assert C.rel_fro(b + [[0.0, 0.5]], b) == pytest.approx(0.1)
    out, seconds = C.timed(lambda: 7, repeat=3)
    assert out == 7 and seconds >= 0 and C.cholesky_seconds(20, np.random.default_rng(0), repeat=1) > 0


@pytest.mark.parametrize("shape", C.SHAPES)
def test_synthetic_shapes_are_bounded_and_seeded(shape):
    X = C.synthetic(shape, 30, 500, np.random.default_rng(1))
    assert X.shape == (500, 30) and np.abs(X).max() == pytest.approx(1.0)
    np.testing.assert_array_equal(X, C.synthetic(shape, 30, 500, np.random.default_rng(1)))
    with pytest.raises(ValueError, match="unknown shape"):
        C.synthetic("circle", 4, 10, np.random.default_rng(0))


def test_random_pattern_is_symmetric_with_the_asked_pairs():
    pat = C.random_pattern(10, 7, np.random.default_rng(2))
    assert (pat == pat.T).all() and pat.diagonal().all() and np.tril(pat, -1).sum() == 7

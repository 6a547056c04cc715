"""Mahalanobis and Frobenius errors, including a singular truth."""

import numpy as np
import pytest
from scipy.linalg import sqrtm

from paceggm import frobenius_error, mahalanobis_error


def test_matches_direct_formula_for_well_conditioned_truth():
    rng = np.random.default_rng(0)
    A = rng.normal(size=(5, 5))
    truth = A @ A.T + np.eye(5)
    B = rng.normal(size=(5, 5))
    est = B @ B.T
    inv_half = np.linalg.inv(np.real(sqrtm(truth)))
    direct = np.linalg.norm(inv_half @ est @ inv_half - np.eye(5))
    assert np.isclose(mahalanobis_error(est, truth), direct, rtol=1e-10)
    assert np.isclose(frobenius_error(est, truth), np.linalg.norm(est - truth))
    assert mahalanobis_error(truth, truth) < 1e-12


def test_singular_truth_is_measured_in_its_range():
    # Σ has rank 2 in R³; errors in the null direction e3 are invisible to the
    # Mahalanobis error (Frobenius sees them), errors in the range are not.
    truth = np.diag([2.0, 1.0, 0.0])
    assert mahalanobis_error(truth, truth) < 1e-15
    null_err = truth + np.diag([0.0, 0.0, 5.0])
    assert mahalanobis_error(null_err, truth) < 1e-15
    assert frobenius_error(null_err, truth) == 5.0
    range_err = truth + np.diag([2.0, 0.0, 0.0])
    assert np.isclose(mahalanobis_error(range_err, truth), 1.0)


def test_numerically_singular_truth_uses_rcond():
    truth = np.diag([1.0, 1e-14])
    assert np.isfinite(mahalanobis_error(np.eye(2), truth))
    assert np.isclose(mahalanobis_error(np.eye(2), truth), 0.0)
    assert mahalanobis_error(np.eye(2), truth, rcond=1e-16) > 1e6


@pytest.mark.parametrize(
    "est, truth",
    [(np.eye(2), np.eye(3)), (np.ones(3), np.ones(3)), (np.eye(2) * np.nan, np.eye(2)), (np.eye(2), np.zeros((2, 2)))],
)
def test_bad_inputs(est, truth):
    with pytest.raises(ValueError):
        mahalanobis_error(est, truth)

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
    assert np.isclose(mahalanobis_error(cov_true=truth, cov_pred=est), direct, rtol=1e-10)
    assert np.isclose(frobenius_error(cov_true=truth, cov_pred=est), np.linalg.norm(est - truth))
    assert mahalanobis_error(cov_true=truth, cov_pred=truth) < 1e-12


def test_singular_truth_is_measured_in_its_range():
    # Σ has rank 2 in R³; errors in the null direction e3 are invisible to the
    # Mahalanobis error (Frobenius sees them), errors in the range are not.
    truth = np.diag([2.0, 1.0, 0.0])
    assert mahalanobis_error(cov_true=truth, cov_pred=truth) < 1e-15
    null_err = truth + np.diag([0.0, 0.0, 5.0])
    assert mahalanobis_error(cov_true=truth, cov_pred=null_err) < 1e-15
    assert frobenius_error(cov_true=truth, cov_pred=null_err) == 5.0
    range_err = truth + np.diag([2.0, 0.0, 0.0])
    assert np.isclose(mahalanobis_error(cov_true=truth, cov_pred=range_err), 1.0)


def test_numerically_singular_truth_uses_rcond():
    truth = np.diag([1.0, 1e-14])
    assert np.isfinite(mahalanobis_error(cov_true=truth, cov_pred=np.eye(2)))
    assert np.isclose(mahalanobis_error(cov_true=truth, cov_pred=np.eye(2)), 0.0)
    assert mahalanobis_error(cov_true=truth, cov_pred=np.eye(2), rcond=1e-16) > 1e6


@pytest.mark.parametrize(
    "est, truth",
    [(np.eye(2), np.eye(3)), (np.ones(3), np.ones(3)), (np.eye(2) * np.nan, np.eye(2)), (np.eye(2), np.zeros((2, 2)))],
)
def test_bad_inputs(est, truth):
    with pytest.raises(ValueError):
        mahalanobis_error(cov_true=truth, cov_pred=est)


def test_keywords_in_scikit_learn_order_give_the_known_values():
    # The truth first, the estimate second, as y_true and y_pred in scikit-learn.
    assert np.isclose(mahalanobis_error(cov_true=np.eye(3), cov_pred=2 * np.eye(3)), np.sqrt(3))
    assert np.isclose(mahalanobis_error(cov_true=4 * np.eye(3), cov_pred=2 * np.eye(3)), np.sqrt(3) / 2)
    assert frobenius_error(cov_true=np.zeros((2, 2)), cov_pred=np.eye(2)) == np.sqrt(2)
    assert frobenius_error(np.zeros((2, 2)), np.eye(2)) == frobenius_error(np.eye(2), np.zeros((2, 2)))  # symmetric


def test_an_asymmetric_metric_refuses_a_positional_call_and_the_old_names():
    with pytest.raises(TypeError, match=r"by keyword only: mahalanobis_error\(cov_true=\.\.\., cov_pred=\.\.\.\)"):
        mahalanobis_error(np.eye(2), 2 * np.eye(2))
    with pytest.raises(TypeError, match=r"by keyword only"):
        mahalanobis_error(np.eye(2), cov_pred=2 * np.eye(2))
    for metric in (mahalanobis_error, frobenius_error):
        with pytest.raises(TypeError, match=r"takes cov_true= .* and cov_pred=.*got truth=, estimate= "
                                            r"\(truth= is cov_true=, estimate= is cov_pred=\)"):
            metric(estimate=np.eye(2), truth=np.eye(2))


def test_an_indefinite_cov_true_is_refused_as_a_likely_swap():
    estimate = np.diag([1.0, -0.5])  # a noisy release may be indefinite; a covariance never is
    assert np.isclose(mahalanobis_error(cov_true=np.eye(2), cov_pred=estimate), np.sqrt(0 + 1.5**2))
    with pytest.raises(ValueError, match="cov_true has a negative eigenvalue.*was the estimate passed as cov_true"):
        mahalanobis_error(cov_true=estimate, cov_pred=np.eye(2))
    # rounding-level negative eigenvalues of a true covariance (X'X/n is PSD) are not refused
    assert np.isfinite(mahalanobis_error(cov_true=np.diag([1.0, -1e-13]), cov_pred=np.eye(2)))


def test_the_swap_on_min_max_scaled_data_is_now_right_or_refused():
    # The habit metric(y_true, y_pred) on MinMaxScaler'd data: swapped, the error is measured in
    # the geometry of the estimate, whose near-null directions blow it up by orders of magnitude.
    from sklearn.preprocessing import MinMaxScaler

    from paceggm import PACEGGM
    from paceggm.baselines import SSP

    rng = np.random.default_rng(0)
    latent = rng.normal(size=(4000, 3))
    X = MinMaxScaler(feature_range=(-1, 1)).fit_transform(
        np.column_stack([latent, latent @ rng.normal(size=(3, 5)) + 0.01 * rng.normal(size=(4000, 5))]))
    truth = X.T @ X / len(X)
    est = PACEGGM(rho=0.1, random_state=0).fit(X).covariance_
    inv_half = np.linalg.inv(np.real(sqrtm(truth)))
    right = np.linalg.norm(inv_half @ est @ inv_half - np.eye(8))
    assert mahalanobis_error(cov_true=truth, cov_pred=est) == pytest.approx(right, rel=1e-8)
    assert mahalanobis_error(cov_true=est, cov_pred=truth) > 10 * right  # what a silent swap returned
    with pytest.raises(TypeError, match="by keyword only"):
        mahalanobis_error(truth, est)  # the habit: refused, never swapped
    with pytest.raises(TypeError, match="by keyword only"):
        mahalanobis_error(est, truth)
    noisy = SSP(rho=0.01, random_state=0).fit(X).covariance_  # indefinite: a keyword swap is refused too
    assert np.linalg.eigvalsh(noisy).min() < 0
    with pytest.raises(ValueError, match="negative eigenvalue"):
        mahalanobis_error(cov_true=noisy, cov_pred=truth)

"""Mahalanobis and Frobenius errors (including a singular truth), and the task metrics' known answers."""

import numpy as np
import pytest
from scipy.linalg import sqrtm

from paceggm import frobenius_error, mahalanobis_error
from paceggm.metrics import SupportRecovery, subspace_error, subspace_errors, support_recovery


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


# ---- task metrics: the top-k eigenspace (PCA) and the precision's support (graph recovery) ----

def _projector(*columns) -> np.ndarray:
    Q, _ = np.linalg.qr(np.column_stack(columns))
    return Q @ Q.T


def test_subspace_error_of_the_same_and_of_orthogonal_subspaces():
    truth = np.diag([5.0, 4.0, 3.0, 2.0, 1.0])
    for k in (1, 2, 4):
        assert subspace_error(cov_true=truth, cov_pred=truth, k=k) == pytest.approx(0.0, abs=1e-12)
        assert subspace_error(cov_true=truth, cov_pred=3.0 * truth + 7.0 * np.eye(5), k=k) == pytest.approx(0.0, abs=1e-7)
    # the reversed spectrum: the top 2 of the estimate span e4, e5, orthogonal to the truth's e1, e2
    assert subspace_error(cov_true=truth, cov_pred=np.diag([1.0, 2.0, 3.0, 4.0, 5.0]), k=2) == pytest.approx(1.0)


@pytest.mark.parametrize("theta", [0.0, 0.1, np.pi / 6, np.pi / 4, np.pi / 2])
def test_subspace_error_of_a_rotation_by_theta_in_a_plane(theta):
    e = np.eye(4)
    truth = np.diag([4.0, 3.0, 2.0, 1.0])
    rotated = np.cos(theta) * e[:, 0] + np.sin(theta) * e[:, 2]  # e1 turned towards e3
    # k = 1: one principal angle theta; the projection-Frobenius distance is sqrt(2) sin θ, normalised sin θ
    assert subspace_error(cov_true=truth, cov_pred=_projector(rotated), k=1) == pytest.approx(np.sin(theta), abs=1e-10)
    # k = 2 with e2 shared: angles (0, θ), root mean square sin θ / sqrt 2
    pred = 2.0 * _projector(rotated) + _projector(e[:, 1])
    assert subspace_error(cov_true=truth, cov_pred=pred, k=2) == pytest.approx(np.sin(theta) / np.sqrt(2), abs=1e-10)


def test_subspace_error_is_the_rms_sine_of_the_principal_angles():
    from scipy.linalg import subspace_angles

    rng = np.random.default_rng(1)
    A, B = rng.normal(size=(6, 6)), rng.normal(size=(6, 6))
    truth, est = A @ A.T, B @ B.T
    for k in (1, 3, 5):
        U, V = np.linalg.eigh(truth)[1][:, -k:], np.linalg.eigh(est)[1][:, -k:]
        rms = np.sqrt(np.mean(np.sin(subspace_angles(U, V)) ** 2))
        assert subspace_error(cov_true=truth, cov_pred=est, k=k) == pytest.approx(rms, abs=1e-10)
        projectors = np.linalg.norm(U @ U.T - V @ V.T) / np.sqrt(2 * k)
        assert subspace_error(cov_true=truth, cov_pred=est, k=k) == pytest.approx(projectors, abs=1e-10)


def test_subspace_errors_are_subspace_error_at_each_k_and_nan_where_it_refuses():
    rng = np.random.default_rng(2)
    A, B = rng.normal(size=(6, 6)), rng.normal(size=(6, 6))
    truth, est = A @ A.T, B @ B.T
    got = subspace_errors(cov_true=truth, cov_pred=est, ks=(1, 3, 5, 6))
    for k in (1, 3, 5):
        assert got[k] == subspace_error(cov_true=truth, cov_pred=est, k=k)
    assert np.isnan(got[6])  # k = d
    with pytest.raises(TypeError, match="keyword only"):
        subspace_errors(truth, est, ks=(1,))
    with pytest.raises(ValueError, match="k must be"):
        subspace_errors(cov_true=truth, cov_pred=est, ks=(0,))


def test_subspace_error_refuses_a_tie_of_the_truth_at_k_and_a_bad_k():
    spiked = np.diag([3.0, 1.0, 1.0, 1.0])  # one spike over a flat bulk: top-1 unique, top-2 not
    assert subspace_error(cov_true=spiked, cov_pred=spiked, k=1) == 0.0
    with pytest.raises(ValueError, match="no unique top-2 eigenspace: its eigenvalues 2 and 3 tie"):
        subspace_error(cov_true=spiked, cov_pred=np.diag([4.0, 3.0, 2.0, 1.0]), k=2)
    # a tie of the estimate is not refused: eigh's subspace is measured (here one of span{e2, e3, e4})
    assert 0.0 <= subspace_error(cov_true=np.diag([4.0, 3.0, 2.0, 1.0]), cov_pred=spiked, k=2) <= 1.0
    for k in (0, 4, 1.0, True):
        with pytest.raises(ValueError, match=r"k must be an integer with 1 <= k < d = 4"):
            subspace_error(cov_true=spiked, cov_pred=spiked, k=k)
    with pytest.raises(TypeError, match=r"by keyword only: subspace_error\(cov_true=\.\.\., cov_pred=\.\.\.\)"):
        subspace_error(spiked, spiked, k=1)
    with pytest.raises(ValueError, match="shapes differ"):
        subspace_error(cov_true=spiked, cov_pred=np.eye(3), k=1)


# A 4-node graph: edges {0,1}, {1,2}, {2,3} (a chain); partial correlations 0.5, 0.5, 0.25.
CHAIN = np.array([[2.0, -1.0, 0.0, 0.0],
                  [-1.0, 2.0, -1.0, 0.0],
                  [0.0, -1.0, 2.0, -0.5],
                  [0.0, 0.0, -0.5, 2.0]])


def test_support_recovery_of_the_truth_itself_and_of_its_inverse_pair():
    assert support_recovery(precision_true=CHAIN, precision_pred=CHAIN) == (1.0, 1.0, 1.0)
    # the pseudo-inverse of the covariance, with its rounding off the support, is the same graph
    cov = np.linalg.inv(CHAIN)
    assert support_recovery(precision_true=np.linalg.pinv(cov), precision_pred=np.linalg.pinv(cov)) == (1.0, 1.0, 1.0)
    # scale-free: partial correlations, not raw entries
    assert support_recovery(precision_true=CHAIN, precision_pred=1e-6 * CHAIN) == (1.0, 1.0, 1.0)


def test_support_recovery_of_an_empty_prediction_and_of_an_empty_graph():
    got = support_recovery(precision_true=CHAIN, precision_pred=np.diag([1.0, 2.0, 3.0, 4.0]))
    assert got == SupportRecovery(precision=1.0, recall=0.0, f1=0.0) and got.f1 == 0.0
    assert support_recovery(precision_true=np.eye(4), precision_pred=np.eye(4)) == (1.0, 1.0, 1.0)
    # every predicted edge false, nothing to find: precision 0, recall 1 (none missed), F1 0
    assert support_recovery(precision_true=np.eye(4), precision_pred=CHAIN) == (0.0, 1.0, 0.0)


def test_support_recovery_of_a_hand_made_4x4_release():
    # Released partial correlations: {0,1} 0.5 (true, kept), {1,2} 0.05 (true, below 0.1: missed),
    # {2,3} 0.25 (true, kept), {0,3} 0.3 (false edge), {0,2} 0.08 and {1,3} -0.02 (below 0.1: no edge).
    pred = np.array([[1.0, -0.5, 0.08, 0.3],
                     [-0.5, 1.0, -0.05, -0.02],
                     [0.08, -0.05, 1.0, -0.25],
                     [0.3, -0.02, -0.25, 1.0]])
    got = support_recovery(precision_true=CHAIN, precision_pred=pred)
    assert got.precision == pytest.approx(2 / 3) and got.recall == pytest.approx(2 / 3)
    assert got.f1 == pytest.approx(2 / 3)
    # the threshold is a parameter fixed in advance: at 0.04 the weak true edge and {0,2} count (5 predicted,
    # 3 true), at 0.4 only {0,1}
    assert support_recovery(precision_true=CHAIN, precision_pred=pred, threshold=0.04) == pytest.approx((0.6, 1.0, 0.75))
    assert support_recovery(precision_true=CHAIN, precision_pred=pred, threshold=0.4) == pytest.approx((1.0, 1 / 3, 0.5))
    # the diagonal's scale enters: with Ω̂_33 = 100, the entries 0.3 and -0.25 of row 3 are partial
    # correlations 0.03 and 0.025, below 0.1: {0,1} alone is left
    scaled = pred.copy()
    scaled[3, 3] = 100.0
    assert support_recovery(precision_true=CHAIN, precision_pred=scaled) == pytest.approx((1.0, 1 / 3, 0.5))


def test_support_recovery_of_an_indefinite_or_singular_release_and_bad_input():
    # a negative diagonal entry (a noisy release's inverse may have one): its magnitude scales the entries
    pred = np.array([[-1.0, 0.5, 0.0, 0.0], [0.5, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0], [0.0, 0.0, 0.0, 1.0]])
    assert support_recovery(precision_true=CHAIN, precision_pred=pred) == pytest.approx((1.0, 1 / 3, 0.5))
    # a zero diagonal: a non-zero entry beside it is an edge (infinite partial correlation), a zero one is not
    pred = np.array([[0.0, 0.5, 0.0, 0.0], [0.5, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0], [0.0, 0.0, 0.0, 0.0]])
    assert support_recovery(precision_true=CHAIN, precision_pred=pred) == pytest.approx((1.0, 1 / 3, 0.5))
    with pytest.raises(TypeError, match=r"support_recovery\(precision_true=\.\.\., precision_pred=\.\.\.\)"):
        support_recovery(CHAIN, CHAIN)
    with pytest.raises(ValueError, match="shapes differ"):
        support_recovery(precision_true=CHAIN, precision_pred=np.eye(3))
    with pytest.raises(ValueError, match="precision_pred must be finite"):
        support_recovery(precision_true=CHAIN, precision_pred=CHAIN * np.nan)
    for bad in (-0.1, np.inf, np.nan, True, "0.1"):
        with pytest.raises(ValueError, match="threshold must be a finite number >= 0"):
            support_recovery(precision_true=CHAIN, precision_pred=CHAIN, threshold=bad)

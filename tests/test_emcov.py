"""EMCov (Amin et al. 2019): its budget, its releases' calibration, and known answers."""

import math
import warnings
from fractions import Fraction

import numpy as np
import pytest
from scipy.linalg import subspace_angles

from paceggm.baselines import EMCov
from paceggm.baselines.emcov import EIGENVALUES, EIGENVECTOR, release_budgets
from paceggm.bench.audit.invocations import recording
from paceggm.exceptions import PrivacyLeakWarning
from paceggm.privacy import ZCDPAccountant


def _data(n=4000, d=4, seed=0):
    """Correlated rows with distinct eigenvalues, scaled into the box |x_j| <= 1."""
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(d, d)) * np.linspace(1.0, 0.2, d)
    X = rng.normal(size=(n, d)) @ A.T
    return X / np.abs(X).max()


# --- budget ---------------------------------------------------------------------------------


@pytest.mark.parametrize("d", [1, 2, 3, 5, 12])
@pytest.mark.parametrize("rho", [1.0, 0.3, 0.01, 2.7, 1e-7])
def test_the_releases_spend_exactly_rho_half_on_the_eigenvalues_half_on_the_eigenvectors(rho, d):
    est = EMCov(rho, random_state=0).fit(_data(n=300, d=d))
    assert [c.purpose for c in est.ledger_] == [EIGENVALUES] + [EIGENVECTOR] * (d - 1)
    total = sum(Fraction(c.rho) for c in est.ledger_)
    assert total == Fraction(rho) and est.rho_spent_ == rho
    rhos = [c.rho for c in est.ledger_]
    if d == 1:
        assert rhos == [rho]  # no eigenvector is drawn: the one direction is ±1
    else:
        assert rhos[0] == rho / 2
        assert rhos[1:] == pytest.approx([rho / (2 * (d - 1))] * (d - 1), rel=1e-12)
        assert release_budgets(rho, d) == (rho / 2, rhos[1:-1])


def test_centring_on_the_private_mean_spends_its_share_first_and_the_total_is_rho():
    est = EMCov(1.0, assume_centered=False, random_state=0).fit(_data(n=500))
    assert [c.purpose for c in est.ledger_] == ["mean (centring)", EIGENVALUES] + [EIGENVECTOR] * 3
    total = sum(Fraction(c.rho) for c in est.ledger_)
    assert total <= 1 and 1 - total < Fraction(math.ulp(1.0))


def test_an_accountant_is_charged_exactly_rho():
    accountant = ZCDPAccountant(1.0)
    EMCov(0.6, accountant=accountant, random_state=0).fit(_data(n=300))
    assert accountant.spent == 0.6


# --- each release: the query it measures and its calibration --------------------------------


@pytest.mark.parametrize("noise", ["fast", "exact"])
def test_each_release_is_its_query_at_its_sensitivity(noise):
    X = _data(n=500, d=4)
    n, d = X.shape
    Z = X / (math.sqrt(d) * 1.0)
    sigma = Z.T @ Z / n
    with warnings.catch_warnings(), recording() as rec:
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        est = EMCov(1.0, noise=noise, random_state=0).fit(X)
    assert [inv.mechanism for inv in rec.invocations] == ["laplace"] + ["bingham"] * (d - 1)
    values = rec.invocations[0]
    np.testing.assert_allclose(values.value, np.linalg.eigvalsh(sigma)[::-1], rtol=1e-12, atol=1e-15)
    assert values.kwargs["sensitivity"] == 2.0 / n  # ℓ1, rows in the unit ball
    assert values.kwargs["rho"] == values.charge.rho == 0.5 and values.kwargs["noise"] == noise
    U = est.eigenvectors_
    for i, inv in enumerate(rec.invocations[1:]):
        # Step i's matrix is Σ projected on the complement of the vectors drawn before it: its quadratic form
        # on the complement is Σ's, and the basis is orthonormal and orthogonal to them.
        P = _complement(U[:, :i], d)
        C = inv.value
        assert C.shape == (d - i, d - i)
        np.testing.assert_allclose(np.linalg.eigvalsh(C), np.linalg.eigvalsh(P.T @ sigma @ P), atol=1e-14)
        assert inv.kwargs["sensitivity"] == 1.0 / n and inv.kwargs["rho"] == inv.charge.rho
        assert inv.kwargs["noise"] == noise
    # The vectors released are orthonormal: Σ̂ = Σ λ̃_i u_i u_iᵀ with the released eigenvalues.
    np.testing.assert_allclose(U.T @ U, np.eye(d), atol=1e-12)
    np.testing.assert_allclose(est.covariance_, (U * est.eigenvalues_) @ U.T, atol=1e-14)


def _complement(V, d):
    if V.shape[1] == 0:
        return np.eye(d)
    Q = np.linalg.svd(V, full_matrices=True)[0]
    return Q[:, V.shape[1]:]


# --- known answers --------------------------------------------------------------------------


def test_at_a_huge_budget_the_eigenvalues_and_eigenspaces_are_the_sample_covariances():
    X = _data()
    n, d = X.shape
    sample = X.T @ X / n
    values, vectors = np.linalg.eigh(sample)
    top = values.max()
    for seed in range(3):
        est = EMCov(1e16, random_state=seed).fit(X)
        # Drawn top first: the i-th released eigenvalue is the i-th largest (seen: 1.1e-9 of the largest).
        np.testing.assert_allclose(est.eigenvalues_, values[::-1], rtol=0, atol=1e-8 * top)
        # The exponential mechanism's angle falls like ρ^(-1/4) (its ε like sqrt(ρ)): seen 2e-5 to 6e-5 here.
        for k in range(1, d):
            angle = subspace_angles(est.eigenvectors_[:, :k], vectors[:, ::-1][:, :k]).max()
            assert angle < 2e-4, (seed, k, angle)
        np.testing.assert_allclose(est.covariance_, sample, rtol=0, atol=1e-4 * top)


def test_the_error_falls_as_rho_grows():
    X = _data()
    sample = X.T @ X / X.shape[0]

    def error(rho):
        return np.mean([np.linalg.norm(EMCov(rho, random_state=s).fit(X).covariance_ - sample) for s in range(5)])

    at = {rho: error(rho) for rho in (0.01, 1.0, 100.0, 1e6)}
    # Seen: 0.068, 0.021, 0.0068, 0.00068 (the eigenvectors' angle, like ρ^(-1/4), dominates).
    assert at[1e6] < at[100.0] / 5 and at[100.0] < at[1.0] / 2 < at[0.01] / 2


@pytest.mark.parametrize("seed", range(5))
def test_at_a_small_budget_the_estimate_is_psd_and_within_the_bound(seed):
    X = _data(n=200, d=6, seed=seed)
    d, B = X.shape[1], 1.0
    est = EMCov(1e-4, random_state=seed).fit(X)
    values = np.linalg.eigvalsh(est.covariance_)
    assert values.min() >= -1e-12 * d * B**2
    assert values.max() <= d * B**2 * (1 + 1e-12)  # each released eigenvalue in [0, d B²]
    assert np.all((est.eigenvalues_ >= 0) & (est.eigenvalues_ <= d * B**2))
    np.testing.assert_allclose(est.eigenvectors_.T @ est.eigenvectors_, np.eye(d), atol=1e-12)


def test_a_seed_makes_the_fit_reproducible():
    X = _data(n=300)
    a, b, c = (EMCov(0.5, random_state=s).fit(X) for s in (7, 7, 8))
    np.testing.assert_array_equal(a.covariance_, b.covariance_)
    assert not np.array_equal(a.covariance_, c.covariance_)


def test_exact_noise_charges_the_same_ledger_and_warns_about_the_sphere():
    X = _data(n=300)
    fast = EMCov(0.7, random_state=0).fit(X)
    with pytest.warns(PrivacyLeakWarning, match="no exact sampler"):
        exact_fit = EMCov(0.7, noise="exact", random_state=0).fit(X)
    assert exact_fit.ledger_ == fast.ledger_
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        EMCov(0.7, random_state=0).fit(X)

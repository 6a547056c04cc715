"""What every covariance baseline shares: the fit skeleton and two post-processings.

Privacy lives in :mod:`paceggm.privacy`; this module only wires its primitives
into the estimator interface of :class:`paceggm.base.PrivateCovarianceEstimator`.
"""

from __future__ import annotations

import numpy as np

from paceggm._validation import check_random_state, check_rho
from paceggm.base import PrivateCovarianceEstimator
from paceggm.privacy import ZCDPLedger, gaussian_mechanism


def release_symmetric(matrix: np.ndarray, *, rho: float, sensitivity: float, rng: np.random.Generator):
    """Gaussian mechanism on the ``d(d+1)/2`` distinct entries of a symmetric matrix.

    iid noise on the upper triangle (diagonal included), mirrored to the lower
    one. ``sensitivity`` must be the ℓ2 sensitivity of that vector of distinct
    entries (a Frobenius-norm sensitivity of the whole matrix is a valid,
    larger, choice). Returns the noisy symmetric matrix and the noise scale.
    """
    d = matrix.shape[0]
    upper = np.triu_indices(d)
    noisy_entries, sigma = gaussian_mechanism(matrix[upper], rho=rho, sensitivity=sensitivity, rng=rng)
    out = np.empty((d, d))
    out[upper] = noisy_entries
    out[(upper[1], upper[0])] = noisy_entries
    return out, sigma


def clip_eigenvalues(matrix: np.ndarray, lower: float = 0.0, upper: float = np.inf) -> np.ndarray:
    """Symmetric matrix with its eigenvalues clipped to ``[lower, upper]``.

    With ``lower = 0`` and no upper bound this is the Frobenius-norm projection
    onto the PSD cone.
    """
    values, vectors = np.linalg.eigh(0.5 * (matrix + matrix.T))
    out = (vectors * np.clip(values, lower, upper)) @ vectors.T
    return 0.5 * (out + out.T)


class CovarianceBaseline(PrivateCovarianceEstimator):
    """Skeleton of a baseline: validate, open a ledger of ``rho``, estimate, report.

    Subclasses implement ``_estimate(X, ledger, rng) -> covariance``, charging
    ``ledger`` before every release and ending with ``ledger.remaining`` so the
    charges add to exactly ``rho``.

    Parameters
    ----------
    rho : float
        zCDP budget, > 0 (replace-one neighbours).
    bound : float
        Declared coordinate bound ``B``: every ``|x_ij| ≤ B``.
    bound_check : {"raise", "clip", "waive"}
        What to do with values outside ``[-B, B]`` (see
        :func:`paceggm._validation.enforce_bound`).
    random_state : None, int, SeedSequence or numpy.random.Generator
    """

    def __init__(self, rho: float, *, bound: float = 1.0, bound_check: str = "raise", random_state=None) -> None:
        self.rho = rho
        self.bound = bound
        self.bound_check = bound_check
        self.random_state = random_state

    def fit(self, X, y=None):
        """Estimate the covariance ``XᵀX/n`` of ``X`` privately. ``y`` is ignored."""
        check_rho(self.rho)
        X = self._validate_X(X, bound=self.bound, bound_check=self.bound_check)
        rng = check_random_state(self.random_state)
        ledger = ZCDPLedger(self.rho)
        covariance = self._estimate(X, ledger, rng)
        self.covariance_ = covariance
        self.rho_spent_ = ledger.spent
        self.ledger_ = ledger.charges
        return self

    def _estimate(self, X: np.ndarray, ledger: ZCDPLedger, rng: np.random.Generator) -> np.ndarray:
        raise NotImplementedError

"""What every covariance baseline shares: the fit skeleton and two post-processings.

Privacy lives in :mod:`paceggm.privacy`; this module only wires its primitives
into the estimator interface of :class:`paceggm.base.PrivateCovarianceEstimator`.
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction

import numpy as np

from paceggm.base import PrivateCovarianceEstimator
from paceggm.privacy import ZCDPLedger, gaussian_mechanism
from paceggm.privacy.mechanisms import DEFAULT_NOISE


def _upper_triangle(d: int) -> tuple[np.ndarray, np.ndarray]:
    # Audits and private tuning fit small models by the thousand, and at d = 2 building the index
    # arrays costs more than the release itself; wide ones are built afresh (their size would
    # otherwise stay in memory: 16 bytes an entry of the triangle).
    return _small_upper_triangle(d) if d <= 64 else np.triu_indices(d)


@functools.cache
def _small_upper_triangle(d: int) -> tuple[np.ndarray, np.ndarray]:
    rows, cols = np.triu_indices(d)
    rows.flags.writeable = cols.flags.writeable = False
    return rows, cols


def release_symmetric(matrix: np.ndarray, *, rho: float, sensitivity: float, rng: np.random.Generator | None,
                      noise: str = DEFAULT_NOISE):
    """Gaussian mechanism on the ``d(d+1)/2`` distinct entries of a symmetric matrix.

    iid noise on the upper triangle (diagonal included), mirrored to the lower
    one. ``sensitivity`` must be the ℓ2 sensitivity of that vector of distinct
    entries (a Frobenius-norm sensitivity of the whole matrix is a valid,
    larger, choice). ``noise`` as in :func:`paceggm.privacy.gaussian_mechanism`.
    Returns the noisy symmetric matrix and the noise scale.
    """
    d = matrix.shape[0]
    upper = _upper_triangle(d)
    noisy_entries, sigma = gaussian_mechanism(matrix[upper], rho=rho, sensitivity=sensitivity, rng=rng, noise=noise)
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
    """Skeleton of a baseline: a ledger of the covariance step's budget, the release, the report.

    Subclasses implement ``_release(X, *, bound, ledger, rng) -> covariance``,
    charging ``ledger`` (whose ``budget`` is the step's ρ) before every release
    and ending with ``ledger.remaining`` so the charges add to exactly that ρ.
    Checks, accounting and centring are :class:`PrivateCovarianceEstimator`'s.

    Parameters
    ----------
    rho : float or None
        zCDP budget, > 0 (replace-one neighbours); or give ``epsilon`` and ``delta``.
    epsilon, delta : float or None
        An (ε, δ)-DP budget instead (converted exactly, see :class:`paceggm.PACEGGM`).
    accountant : ZCDPAccountant, FileZCDPAccountant or None
        A budget shared across fits, charged before the data are touched.
    bound : float
        Declared coordinate bound ``B``: every ``|x_ij| ≤ B``.
    bound_check : {"raise", "clip", "waive"}
        What to do with values outside ``[-B, B]`` (see
        :func:`paceggm._validation.enforce_bound`; ``"waive"`` warns).
    assume_centered : bool
        ``True`` (default): estimate ``XᵀX/n``; ``False``: centre on a private
        mean bought with ``mean_fraction · rho`` first.
    mean_fraction : float in (0, 1)
    noise : {"fast", "exact"}
        ``"fast"`` (default): Gaussian noise in doubles. ``"exact"``: exact
        discrete noise (:mod:`paceggm.privacy.exact`) at the same cost; with
        ``random_state=None``, the setting for a real release.
    random_state : None, int, SeedSequence, numpy.random.Generator or RandomState
        ``None`` for a real release; a fixed seed makes the noise predictable.
    """

    def __init__(self, rho: float | None = None, *, epsilon: float | None = None, delta: float | None = None,
                 accountant=None, bound: float = 1.0, bound_check: str = "raise", assume_centered: bool = True,
                 mean_fraction: float = 0.1, noise: str = DEFAULT_NOISE, random_state=None) -> None:
        self.rho = rho
        self.epsilon = epsilon
        self.delta = delta
        self.accountant = accountant
        self.bound = bound
        self.bound_check = bound_check
        self.assume_centered = assume_centered
        self.mean_fraction = mean_fraction
        self.noise = noise
        self.random_state = random_state

    def _estimate(self, X, *, rho, bound, rng):
        ledger = ZCDPLedger(rho)
        covariance = self._release(X, bound=bound, ledger=ledger, rng=rng)
        return covariance, ledger.charges

    def _release(self, X: np.ndarray, *, bound: float, ledger: ZCDPLedger, rng: np.random.Generator) -> np.ndarray:
        raise NotImplementedError


def on_ulp_grid(share, rho: float) -> float:
    """``share`` (a float or a Fraction) rounded down to a multiple of ``ulp(ρ)``.

    A release plan whose shares are on this grid has only doubles for partial
    sums (multiples of ``ulp(ρ)`` below ``ρ``), so what is left for its last
    release is exact and the charges add to exactly ``ρ``, not to an ulp below.
    """
    grain = Fraction(math.ulp(rho))
    return float(math.floor(Fraction(share) / grain) * grain)

"""Sufficient-statistic perturbation (SSP): the Gaussian mechanism on ``Σ(X)`` (docs/design.md, *Baselines*).

Three clearly named versions:

* :class:`SSP` — the published baseline: iid noise on the ``d(d+1)/2`` distinct
  entries with the full-matrix (Frobenius) sensitivity ``sqrt(2) d B²/n``, the
  whole budget; released as is (not necessarily PSD);
* :class:`SSPProjected` — the same release projected onto the PSD cone;
* :class:`SSPTight` — calibrated to the exact ℓ2 sensitivity ``d B²/n`` of the
  vector of distinct entries under the ℓ∞ bound (derived in
  :func:`paceggm.privacy.distinct_entries_sensitivity`), the strongest honest
  version of this baseline; released as is.
"""

from __future__ import annotations

import numpy as np

from paceggm.privacy import distinct_entries_sensitivity, full_sensitivity

from ._common import CovarianceBaseline, clip_eigenvalues, release_symmetric


class SSP(CovarianceBaseline):
    """Gaussian mechanism on all distinct entries of ``Σ(X) = XᵀX/n`` (Dwork et al. 2014).

    ``σ = Δ_full / sqrt(2ρ)`` with ``Δ_full = sqrt(2) d B²/n``; the output is the
    noisy symmetric matrix as released.

    Parameters
    ----------
    rho : float
        zCDP budget, all of it spent on the one release.
    bound : float
        Coordinate bound ``B``.
    bound_check : {"raise", "clip", "waive"}
    noise : {"fast", "exact"}
        ``"exact"`` (with ``random_state=None``) for a real release: see
        :class:`~paceggm.baselines._common.CovarianceBaseline`.
    random_state : None, int, SeedSequence, Generator or RandomState

    Attributes
    ----------
    covariance_ : ndarray of shape (d, d)
    sigma_ : float
        Noise standard deviation of every distinct entry.
    location_, precision_, rho_spent_, ledger_
        As :class:`paceggm.PACEGGM`.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.random.default_rng(0).uniform(-1, 1, size=(500, 3))
    >>> # A fixed seed for a reproducible example; a real release needs random_state=None.
    >>> SSP(rho=1.0, random_state=0).fit(X).covariance_.shape
    (3, 3)
    """

    def _sensitivity(self, n: int, d: int, bound: float) -> float:
        return full_sensitivity(n=n, d=d, bound=bound)

    def _postprocess(self, released: np.ndarray) -> np.ndarray:
        return released

    def _release(self, X, *, bound, ledger, rng):
        n, d = X.shape
        rho = ledger.remaining
        ledger.charge(rho, "release: distinct entries of the covariance")
        released, self.sigma_ = release_symmetric(
            X.T @ X / n, rho=rho, sensitivity=self._sensitivity(n, d, bound), rng=rng, noise=self.noise
        )
        return self._postprocess(released)


class SSPProjected(SSP):
    """:class:`SSP` followed by projection onto the PSD cone (negative eigenvalues set to 0).

    Post-processing of the same release, so it costs the same ``rho``.
    """

    def _postprocess(self, released):
        return clip_eigenvalues(released, lower=0.0)


class SSPTight(SSP):
    """:class:`SSP` calibrated to the exact sensitivity of the vector of distinct entries.

    Under ``|x_j| ≤ B`` that vector has ℓ2 sensitivity ``d B²/n`` (exact for
    even ``d`` and ``d = 1``, within a factor ``sqrt(1 − 1/d²)`` of exact for odd
    ``d``), a factor ``sqrt(2)`` below the Frobenius sensitivity :class:`SSP`
    uses; see :func:`paceggm.privacy.distinct_entries_sensitivity` for the
    derivation. Released as is.
    """

    def _sensitivity(self, n, d, bound):
        return distinct_entries_sensitivity(n=n, d=d, bound=bound, norm="linf")

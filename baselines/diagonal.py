"""The diagonal-only baseline: the whole budget on the variances."""

from __future__ import annotations

import numpy as np

from paceggm.privacy import entry_sensitivity, gaussian_mechanism

from ._common import CovarianceBaseline


class DiagonalOnly(CovarianceBaseline):
    """Measure only the ``d`` variances; every off-diagonal entry is 0.

    Each diagonal entry gets ``ρ/d`` (the last one exactly what is left, so the
    charges add to ``ρ``) with the entry sensitivity ``2B²/n`` (docs/design.md, *Privacy model*; the
    one PACE-GGM uses for its diagonal, so the two are comparable); negative
    noisy variances are clipped to 0, so the estimate is PSD.

    Parameters
    ----------
    rho : float
    bound : float
    bound_check : {"raise", "clip", "waive"}
    noise : {"fast", "exact"}
    random_state : None, int, SeedSequence, Generator or RandomState

    Attributes
    ----------
    covariance_ : ndarray of shape (d, d)
        Diagonal.
    sigmas_ : ndarray of shape (d,)
        Noise standard deviation of each variance.
    location_, precision_, rho_spent_, ledger_
        As :class:`paceggm.PACEGGM`.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.random.default_rng(0).uniform(-1, 1, size=(500, 3))
    >>> # A fixed seed for a reproducible example; a real release needs random_state=None.
    >>> est = DiagonalOnly(rho=1.0, random_state=0).fit(X)
    >>> bool(np.all(est.covariance_ == np.diag(np.diag(est.covariance_))))
    True
    """

    def _release(self, X, *, bound, ledger, rng):
        n, d = X.shape
        delta = entry_sensitivity(n=n, bound=bound)
        variances = np.einsum("ij,ij->j", X, X) / n
        noisy, sigmas = np.empty(d), np.empty(d)
        for j in range(d):
            rho_j = ledger.budget / d if j < d - 1 else ledger.remaining
            ledger.charge(rho_j, "release: one variance")
            noisy[j], sigmas[j] = gaussian_mechanism(variances[j], rho=rho_j, sensitivity=delta, rng=rng,
                                                         noise=self.noise)
        self.sigmas_ = sigmas
        return np.diag(np.maximum(noisy, 0.0))

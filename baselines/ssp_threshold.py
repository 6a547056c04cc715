"""SSP followed by thresholding: the noisy covariance made sparse at the noise level, then PSD.

The release is :class:`~paceggm.baselines.SSPTight`'s (one Gaussian mechanism
on the distinct entries of ``XᵀX/n``, the whole budget, the exact ℓ2
sensitivity ``d B²/n`` of that vector under the coordinate bound ``|x_j| ≤ B``);
everything after it is post-processing and costs nothing more.

The threshold is fixed before the data are seen: :func:`noise_level`, the
universal threshold of Donoho & Johnstone (1994) for the ``m = d(d+1)/2``
released entries, a level that no entry of the noise alone exceeds with
probability tending to one. It depends on ``n``, ``d``, ``ρ`` and ``B`` only
(through the noise scale σ), never on the data.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from paceggm.privacy.mechanisms import DEFAULT_NOISE

from ._common import clip_eigenvalues
from .ssp import SSPTight


def noise_level(sigma: float, d: int) -> float:
    """``σ sqrt(2 ln m)`` with ``m = d(d+1)/2``: the universal threshold of ``m`` iid ``N(0, σ²)``.

    The largest of ``m`` iid ``|N(0, σ²)|`` stays below it with probability
    tending to one as ``m`` grows (Donoho & Johnstone 1994), so an entry of
    the release above it is unlikely to be noise alone. 0 at ``d = 1``, where
    there is no off-diagonal entry.

    Examples
    --------
    >>> round(noise_level(1.0, 2), 4)  # sqrt(2 ln 3)
    1.4823
    """
    return sigma * math.sqrt(2.0 * math.log(d * (d + 1) / 2))


def check_level(value, name: str) -> float | None:
    """``None`` (the a-priori rule) or a finite real ``>= 0``; a one-line error otherwise."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be None (the noise-level rule) or a real number >= 0, got "
                        f"{type(value).__name__}")
    if not (math.isfinite(float(value)) and float(value) >= 0.0):
        raise ValueError(f"{name} must be None (the noise-level rule) or a finite number >= 0, got {value!r}")
    return float(value)


class SSPThreshold(SSPTight):
    """SSP, then hard thresholding of the off-diagonal entries at the noise level, then PSD projection.

    Bickel & Levina's (2008) thresholding estimator with the privacy noise as
    the threshold's scale, the estimator Wang & Xu (2021) analyse for private
    sparse covariance: release ``S̃ = XᵀX/n + E`` as :class:`SSPTight` does (E
    symmetric, iid ``N(0, σ²)`` on the distinct entries), set every
    off-diagonal ``S̃_jk`` with ``|S̃_jk| <= t`` to 0, and project the result
    onto the PSD cone (negative eigenvalues set to 0, as
    :class:`~paceggm.baselines.SSPProjected`). The diagonal is kept as
    released.

    Parameters
    ----------
    rho : float
        zCDP budget, all of it on the one release.
    threshold : float >= 0 or None, default=None
        ``t``. ``None``: :func:`noise_level` ``σ sqrt(2 ln(d(d+1)/2))``, fixed a
        priori from ``n``, ``d``, ``ρ`` and ``B``; a number is used as given
        (it must not be chosen by looking at the data).
    bound : float
        Coordinate bound ``B``.
    bound_check : {"raise", "clip", "waive"}
    noise : {"fast", "exact"}
        ``"exact"`` (with ``random_state=None``) for a real release.
    random_state : None, int, SeedSequence, Generator or RandomState

    Attributes
    ----------
    covariance_ : ndarray of shape (d, d)
        PSD.
    sigma_ : float
        Noise standard deviation of every released entry.
    threshold_ : float
        The threshold applied.
    n_offdiagonal_ : int
        Distinct off-diagonal entries kept (above the threshold).
    location_, precision_, rho_spent_, ledger_
        As :class:`paceggm.PACEGGM`.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.random.default_rng(0).uniform(-1, 1, size=(500, 4))
    >>> # A fixed seed for a reproducible example; a real release needs random_state=None.
    >>> est = SSPThreshold(rho=1.0, random_state=0).fit(X)
    >>> bool(np.linalg.eigvalsh(est.covariance_).min() >= -1e-12)
    True
    """

    def __init__(self, rho=None, *, threshold=None, epsilon=None, delta=None, accountant=None, bound=1.0,
                 bound_check="raise", assume_centered=True, mean_fraction=0.1, noise=DEFAULT_NOISE,
                 random_state=None) -> None:
        super().__init__(rho, epsilon=epsilon, delta=delta, accountant=accountant, bound=bound,
                         bound_check=bound_check, assume_centered=assume_centered, mean_fraction=mean_fraction,
                         noise=noise, random_state=random_state)
        self.threshold = threshold

    def _check_params(self) -> None:
        check_level(self.threshold, "threshold")

    def _postprocess(self, released):
        d = released.shape[0]
        given = check_level(self.threshold, "threshold")
        t = noise_level(self.sigma_, d) if given is None else given
        kept = np.abs(released) > t
        np.fill_diagonal(kept, True)
        self.threshold_ = t
        self.n_offdiagonal_ = int(np.count_nonzero(np.tril(kept, -1)))
        return clip_eigenvalues(np.where(kept, released, 0.0), lower=0.0)

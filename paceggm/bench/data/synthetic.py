"""Synthetic data with a known population covariance and a bound that truly holds."""

from __future__ import annotations

import numpy as np

from paceggm._validation import check_random_state

from .dataset import Dataset

_SQRT3 = np.sqrt(3.0)  # Uniform(-sqrt3, sqrt3) has variance 1


def make_synthetic(*, n: int, d: int, correlation: float = 0.5, bound: float = 1.0,
                   random_state=None) -> Dataset:
    """Bounded data ``x = A u`` with a known covariance ``A Aᵀ``.

    ``u`` has iid Uniform(-√3, √3) coordinates (mean 0, variance 1), and ``A`` is the Cholesky
    factor of the AR(1) correlation ``correlation^|j-k|`` scaled so that ``√3 max_j ‖A_j‖₁ =
    bound``. Hence every ``|x_j| <= bound`` surely (not just with high probability), the
    population mean is 0 and the population covariance is exactly ``A Aᵀ`` (``Dataset.covariance``);
    its inverse is tridiagonal, i.e. a chain Gaussian graphical model's pattern.

    Parameters
    ----------
    n, d : int
        Rows (>= 2) and columns (>= 1).
    correlation : float in (-1, 1), default=0.5
        AR(1) coefficient between neighbouring columns.
    bound : float > 0, default=1.0
    random_state : None, int, SeedSequence, Generator or RandomState

    Returns
    -------
    Dataset
        ``name="synthetic"``, ``preprocessing="none"``, ``covariance`` set.

    Examples
    --------
    >>> ds = make_synthetic(n=1000, d=5, random_state=0)
    >>> bool(ds.max_abs <= ds.bound)
    True
    """
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 2:
        raise ValueError(f"n must be an integer >= 2, got {n!r}")
    if isinstance(d, bool) or not isinstance(d, (int, np.integer)) or d < 1:
        raise ValueError(f"d must be an integer >= 1, got {d!r}")
    if not -1.0 < float(correlation) < 1.0:
        raise ValueError(f"correlation must lie in (-1, 1), got {correlation!r}")
    if not float(bound) > 0.0 or not np.isfinite(bound):
        raise ValueError(f"bound must be a finite number > 0, got {bound!r}")
    rng = check_random_state(random_state)
    idx = np.arange(d)
    corr = float(correlation) ** np.abs(idx[:, None] - idx[None, :])
    A = np.linalg.cholesky(corr)
    A *= float(bound) / (_SQRT3 * np.abs(A).sum(axis=1).max())
    U = rng.uniform(-_SQRT3, _SQRT3, size=(int(n), int(d)))
    X = U @ A.T
    X.setflags(write=False)
    cov = A @ A.T
    cov.setflags(write=False)
    return Dataset(
        name="synthetic", X=X, columns=tuple(f"x{j}" for j in range(d)), target=None,
        preprocessing="none", bound=float(bound), max_abs=float(np.abs(X).max()), covariance=cov,
        source=f"synthetic:AR1({correlation})",
    )

"""Error metrics of a covariance estimate against the non-private ``Σ = XᵀX/n``."""

from __future__ import annotations

import numpy as np


def _square(a, name: str) -> np.ndarray:
    a = np.asarray(a, dtype=float)
    if a.ndim != 2 or a.shape[0] != a.shape[1]:
        raise ValueError(f"{name} must be a square matrix, got shape {a.shape}")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name} must be finite")
    return a


def frobenius_error(estimate, truth) -> float:
    """``‖Σ̂ − Σ‖_F``.

    Examples
    --------
    >>> frobenius_error([[1.0, 0.0], [0.0, 1.0]], [[1.0, 0.0], [0.0, 0.0]])
    1.0
    """
    est, tru = _square(estimate, "estimate"), _square(truth, "truth")
    if est.shape != tru.shape:
        raise ValueError(f"shapes differ: {est.shape} vs {tru.shape}")
    return float(np.linalg.norm(est - tru))


def mahalanobis_error(estimate, truth, *, rcond: float = 1e-10) -> float:
    """``‖Σ^{-1/2} Σ̂ Σ^{-1/2} − I‖_F`` with ``Σ`` the true covariance.

    ``Σ^{-1/2}`` comes from the eigendecomposition of the symmetrised ``Σ``.
    A singular or numerically singular ``Σ`` (eigenvalues ``≤ rcond · ν_max``)
    has no inverse square root: those directions are dropped, i.e. the error is
    measured in the range of ``Σ`` as ``‖Σ^{+1/2} Σ̂ Σ^{+1/2} − Π‖_F`` with ``Π``
    the projector on that range. The Mahalanobis geometry is undefined off the
    range; errors there still show in the Frobenius error. For a well-conditioned
    ``Σ`` this is exactly the formula above.

    Parameters
    ----------
    estimate, truth : array_like of shape (d, d)
    rcond : float
        Relative eigenvalue threshold below which a direction counts as null.

    Returns
    -------
    float

    Examples
    --------
    >>> import numpy as np
    >>> bool(np.isclose(mahalanobis_error(2 * np.eye(3), np.eye(3)), np.sqrt(3)))
    True
    """
    est, tru = _square(estimate, "estimate"), _square(truth, "truth")
    if est.shape != tru.shape:
        raise ValueError(f"shapes differ: {est.shape} vs {tru.shape}")
    vals, vecs = np.linalg.eigh(0.5 * (tru + tru.T))
    top = vals.max() if vals.size else 0.0
    if top <= 0:
        raise ValueError("the true covariance is zero or negative definite; Mahalanobis error undefined")
    keep = vals > rcond * top
    V = vecs[:, keep] / np.sqrt(vals[keep])
    # In the eigenbasis of Σ restricted to its range: V^T Σ̂ V − I.
    M = V.T @ (0.5 * (est + est.T)) @ V
    return float(np.linalg.norm(M - np.eye(M.shape[0])))

"""Error metrics of a covariance estimate against the non-private ``Σ = XᵀX/n``.

Every metric takes the true covariance first and the estimate second, named
``cov_true`` and ``cov_pred``, as scikit-learn's metrics take ``y_true`` and
``y_pred``. A metric whose value changes when the two are swapped
(:func:`mahalanobis_error`) takes them by keyword only: conventions differ on
the order, and a swapped call returns a number orders of magnitude off (the
geometry of a noisy estimate instead of the truth's), so a positional call is
refused rather than guessed. A symmetric
metric (:func:`frobenius_error`) takes them positionally too.
"""

from __future__ import annotations

import functools

import numpy as np

# A true covariance is positive semidefinite: its eigenvalues are >= 0 up to the rounding of
# XᵀX/n and of eigh (about d·eps·λ_max, 2e-12 for d = 10,000). A matrix with an eigenvalue below
# -PSD_TOL·λ_max is not one: most likely the estimate was passed as cov_true.
PSD_TOL = 1e-8

_RENAMED = {"truth": "cov_true", "estimate": "cov_pred"}


def _truth_first(*, symmetric: bool):
    """Refuse ``truth=``/``estimate=`` naming ``cov_true=``/``cov_pred=``; unless ``symmetric``, refuse positional matrices."""
    def decorate(func):
        @functools.wraps(func)
        def metric(*args, **kwargs):
            old = [k for k in _RENAMED if k in kwargs]
            if old:
                raise TypeError(
                    f"{func.__name__}() takes cov_true= (the true covariance) and cov_pred= (the estimate), "
                    f"in scikit-learn's order; got {', '.join(f'{k}=' for k in old)} "
                    f"({', '.join(f'{k}= is {_RENAMED[k]}=' for k in old)})"
                )
            if args and not symmetric:
                raise TypeError(
                    f"{func.__name__}() takes its matrices by keyword only: {func.__name__}(cov_true=..., "
                    "cov_pred=...); the two are not interchangeable and a positional call does not say which is which"
                )
            return func(*args, **kwargs)
        return metric
    return decorate


def _square(a, name: str) -> np.ndarray:
    a = np.asarray(a, dtype=float)
    if a.ndim != 2 or a.shape[0] != a.shape[1]:
        raise ValueError(f"{name} must be a square matrix, got shape {a.shape}")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name} must be finite")
    return a


def _pair(cov_true, cov_pred) -> tuple[np.ndarray, np.ndarray]:
    tru, est = _square(cov_true, "cov_true"), _square(cov_pred, "cov_pred")
    if est.shape != tru.shape:
        raise ValueError(f"shapes differ: cov_true {tru.shape} vs cov_pred {est.shape}")
    return tru, est


@_truth_first(symmetric=True)
def frobenius_error(cov_true, cov_pred) -> float:
    """``‖Σ̂ − Σ‖_F``.

    Parameters
    ----------
    cov_true : array_like of shape (d, d)
        The true covariance ``Σ``.
    cov_pred : array_like of shape (d, d)
        The estimate ``Σ̂``.

    Returns
    -------
    float

    Notes
    -----
    Symmetric in its arguments, so it takes them positionally too (in
    scikit-learn's order, the truth first).

    Examples
    --------
    >>> frobenius_error(cov_true=[[1.0, 0.0], [0.0, 0.0]], cov_pred=[[1.0, 0.0], [0.0, 1.0]])
    1.0
    """
    tru, est = _pair(cov_true, cov_pred)
    return float(np.linalg.norm(est - tru))


@_truth_first(symmetric=False)
def mahalanobis_error(*, cov_true, cov_pred, rcond: float = 1e-10) -> float:
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
    cov_true : array_like of shape (d, d), keyword only
        The true covariance ``Σ``: positive semidefinite (an eigenvalue below
        ``-PSD_TOL · ν_max`` is refused: that is an estimate, not a covariance).
    cov_pred : array_like of shape (d, d), keyword only
        The estimate ``Σ̂`` (may be indefinite).
    rcond : float
        Relative eigenvalue threshold below which a direction counts as null.

    Returns
    -------
    float

    Notes
    -----
    Not symmetric: swapping the two measures the truth in the geometry of the
    estimate, whose near-null directions (a noisy release has them) blow the
    value up by orders of magnitude. The matrices are therefore taken by
    keyword only; a positional call or the names ``estimate=``/``truth=`` get a
    ``TypeError``.

    Examples
    --------
    >>> import numpy as np
    >>> bool(np.isclose(mahalanobis_error(cov_true=np.eye(3), cov_pred=2 * np.eye(3)), np.sqrt(3)))
    True
    """
    tru, est = _pair(cov_true, cov_pred)
    vals, vecs = np.linalg.eigh(0.5 * (tru + tru.T))
    top = vals.max() if vals.size else 0.0
    if top <= 0:
        raise ValueError("cov_true is zero or negative definite; Mahalanobis error undefined")
    if vals.min() < -PSD_TOL * top:
        raise ValueError(
            "cov_true has a negative eigenvalue: it is not a covariance (was the estimate passed as cov_true? "
            "call mahalanobis_error(cov_true=truth, cov_pred=estimate))"
        )
    keep = vals > rcond * top
    V = vecs[:, keep] / np.sqrt(vals[keep])
    # In the eigenbasis of Σ restricted to its range: V^T Σ̂ V − I.
    M = V.T @ (0.5 * (est + est.T)) @ V
    return float(np.linalg.norm(M - np.eye(M.shape[0])))

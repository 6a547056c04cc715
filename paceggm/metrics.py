"""Error metrics of a covariance estimate against a true covariance, and the tasks it is released for.

The truth is the non-private ``Σ = XᵀX/n`` of the data, or a population's
covariance where one is known. :func:`mahalanobis_error` and
:func:`frobenius_error` measure the matrix; :func:`subspace_error` (PCA: the
top-``k`` eigenspace) and :func:`support_recovery` (graph recovery: the
support of the precision) measure what the release is used for.

Every metric takes the true covariance first and the estimate second, named
``cov_true`` and ``cov_pred``, as scikit-learn's metrics take ``y_true`` and
``y_pred``. A metric whose value changes when the two are swapped
(:func:`mahalanobis_error`) takes them by keyword only: conventions differ on
the order, and a swapped call returns a number orders of magnitude off (the
geometry of a noisy estimate instead of the truth's), so a positional call is
refused rather than guessed; so is a task metric's (:func:`support_recovery`
takes ``precision_true`` and ``precision_pred``). A symmetric metric
(:func:`frobenius_error`) takes them positionally too.
"""

from __future__ import annotations

import functools
import inspect
from typing import NamedTuple

import numpy as np

# A true covariance is positive semidefinite: its eigenvalues are >= 0 up to the rounding of
# XᵀX/n and of eigh (about d·eps·λ_max, 2e-12 for d = 10,000). A matrix with an eigenvalue below
# -PSD_TOL·λ_max is not one: most likely the estimate was passed as cov_true.
PSD_TOL = 1e-8

_RENAMED = {"truth": "cov_true", "estimate": "cov_pred"}


def _truth_first(*, symmetric: bool):
    """Refuse ``truth=``/``estimate=`` naming ``cov_true=``/``cov_pred=``; unless ``symmetric``, refuse positional matrices."""
    def decorate(func):
        names = [p.name for p in inspect.signature(func).parameters.values()][:2]

        @functools.wraps(func)
        def metric(*args, **kwargs):
            old = [k for k in _RENAMED if k in kwargs]
            if old and "cov_true" in names:
                raise TypeError(
                    f"{func.__name__}() takes cov_true= (the true covariance) and cov_pred= (the estimate), "
                    f"in scikit-learn's order; got {', '.join(f'{k}=' for k in old)} "
                    f"({', '.join(f'{k}= is {_RENAMED[k]}=' for k in old)})"
                )
            if args and not symmetric:
                first, second = names
                raise TypeError(
                    f"{func.__name__}() takes its matrices by keyword only: {func.__name__}({first}=..., "
                    f"{second}=...); the two are not interchangeable and a positional call does not say which is which"
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


# Two eigenvalues of a true covariance closer than GAP_TOL·λ_max are a tie: its top-k eigenspace is not
# unique there, and which basis eigh returns is rounding, not the covariance.
GAP_TOL = 1e-8


def unique_top_eigenspace(cov, k: int) -> bool:
    """Whether the symmetrised ``cov`` has a unique top-``k`` eigenspace: a gap above ``GAP_TOL · max|λ|`` at ``k``.

    ``k`` must satisfy ``1 <= k < d``; :func:`subspace_error` refuses a truth without one.

    Examples
    --------
    >>> unique_top_eigenspace(np.diag([3.0, 1.0, 1.0]), 1), unique_top_eigenspace(np.diag([3.0, 1.0, 1.0]), 2)
    (True, False)
    """
    cov = np.asarray(cov, dtype=float)
    return _has_gap(np.linalg.eigvalsh(0.5 * (cov + cov.T)), k)


def _has_gap(vals: np.ndarray, k: int) -> bool:
    """``vals`` ascending: the k-th and (k+1)-th largest differ by more than GAP_TOL · max|λ|."""
    return bool(vals[-k] - vals[-k - 1] > GAP_TOL * np.abs(vals).max())


def _top_eigenspace(cov: np.ndarray, k: int, *, name: str, unique: bool) -> np.ndarray:
    """Orthonormal basis (d, k) of the eigenvectors of the ``k`` largest eigenvalues of the symmetrised ``cov``."""
    vals, vecs = np.linalg.eigh(0.5 * (cov + cov.T))  # ascending
    if unique and not _has_gap(vals, k):
        raise ValueError(
            f"{name} has no unique top-{k} eigenspace: its eigenvalues {k} and {k + 1} tie "
            f"({vals[-k]:.6g} and {vals[-k - 1]:.6g}); choose a k at a gap of its spectrum"
        )
    return vecs[:, -k:]


@_truth_first(symmetric=False)
def subspace_error(*, cov_true, cov_pred, k: int) -> float:
    """Distance between the top-``k`` eigenspaces: ``‖P − P̂‖_F / √(2k)``, in ``[0, 1]``.

    ``P`` and ``P̂`` are the orthogonal projectors on the eigenvectors of the
    ``k`` largest eigenvalues of ``Σ`` (the truth) and of ``Σ̂`` (the estimate),
    both symmetrised. The value is the root mean square of the sines of the
    ``k`` principal angles ``θ_i`` between the two subspaces,
    ``√(Σ_i sin²θ_i / k)``: 0 for the same subspace, 1 for orthogonal ones
    (the scale of PCA's projection error, independent of ``d`` and of the
    covariance's units).

    Parameters
    ----------
    cov_true : array_like of shape (d, d), keyword only
        The true covariance ``Σ``. Its ``k``-th and ``(k+1)``-th largest
        eigenvalues must differ by more than ``GAP_TOL · max|λ|``: otherwise its
        top-``k`` eigenspace is not unique and the distance is refused.
    cov_pred : array_like of shape (d, d), keyword only
        The estimate ``Σ̂`` (may be indefinite: its ``k`` largest eigenvalues,
        signed, are taken). If it has a tie at ``k`` (a release seldom does),
        the subspace is the one ``numpy.linalg.eigh`` returns.
    k : int
        Dimension of the subspaces, ``1 <= k < d`` (at ``k = d`` both are the
        whole space).

    Returns
    -------
    float

    Notes
    -----
    The primary of the two usual distances: the largest principal angle's
    sine, ``‖P − P̂‖₂``, bounds this one from above and weighs a single
    lost direction as much as ``k`` lost ones; the root mean square counts
    each direction once, as the share of the true subspace a projection on
    ``P̂`` misses (``1 − ‖P P̂‖_F² / k`` is its square). Not symmetric in its
    arguments (only the truth's tie is refused), so the matrices are taken by
    keyword only.

    Examples
    --------
    >>> import numpy as np
    >>> theta = 0.3
    >>> pred = np.array([[np.cos(theta) ** 2, np.cos(theta) * np.sin(theta)],
    ...                  [np.cos(theta) * np.sin(theta), np.sin(theta) ** 2]])
    >>> bool(np.isclose(subspace_error(cov_true=np.diag([2.0, 1.0]), cov_pred=pred, k=1), np.sin(theta)))
    True
    """
    tru, est = _pair(cov_true, cov_pred)
    d = tru.shape[0]
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 1 <= k < d:
        raise ValueError(f"k must be an integer with 1 <= k < d = {d}, got {k!r}")
    U = _top_eigenspace(tru, int(k), name="cov_true", unique=True)
    V = _top_eigenspace(est, int(k), name="cov_pred", unique=False)
    return _rms_sine(U, V)


def _rms_sine(U: np.ndarray, V: np.ndarray) -> float:
    """``‖P − P̂‖_F / √(2k)`` of the projectors on the orthonormal columns of ``U`` and ``V`` (both d × k)."""
    # ‖P − P̂‖_F² = 2k − 2‖UᵀV‖_F², without forming the d × d projectors
    k = U.shape[1]
    overlap = float(np.linalg.norm(U.T @ V) ** 2)
    return float(np.sqrt(max(0.0, 1.0 - overlap / k)))


@_truth_first(symmetric=False)
def subspace_errors(*, cov_true, cov_pred, ks) -> dict[int, float]:
    """:func:`subspace_error` at every ``k`` of ``ks``, each matrix decomposed once, for a table.

    Where ``cov_true`` has no unique top-``k`` eigenspace, or ``k >= d``, the
    value is NaN (a table's empty cell) instead of an error.

    Examples
    --------
    >>> import numpy as np
    >>> subspace_errors(cov_true=np.diag([3.0, 1.0, 1.0]), cov_pred=np.diag([3.0, 1.0, 1.0]), ks=(1, 2, 3))
    {1: 0.0, 2: nan, 3: nan}
    """
    tru, est = _pair(cov_true, cov_pred)
    d = tru.shape[0]
    vals, U = np.linalg.eigh(0.5 * (tru + tru.T))  # ascending
    _, V = np.linalg.eigh(0.5 * (est + est.T))
    out = {}
    for k in ks:
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
            raise ValueError(f"every k must be an integer >= 1, got {k!r}")
        k = int(k)
        out[k] = _rms_sine(U[:, -k:], V[:, -k:]) if k < d and _has_gap(vals, k) else float("nan")
    return out


class SupportRecovery(NamedTuple):
    """What :func:`support_recovery` returns."""

    precision: float  #: share of the predicted edges that are true edges
    recall: float  #: share of the true edges that are predicted
    f1: float  #: harmonic mean of the two


#: Partial correlations at most this large (in absolute value) are a true precision's zeros: its rounding.
SUPPORT_TOL = 1e-8
#: Default threshold on a released precision's partial correlations (fixed in advance, never tuned on data).
SUPPORT_THRESHOLD = 0.1


def _partial_correlations(omega: np.ndarray) -> np.ndarray:
    """``|Ω_ij| / √(|Ω_ii Ω_jj|)``; a zero diagonal makes a non-zero entry infinite and a zero one 0."""
    omega = 0.5 * (omega + omega.T)
    scale = np.sqrt(np.abs(np.outer(np.diag(omega), np.diag(omega))))
    mag = np.abs(omega)
    out = np.where(mag > 0, np.inf, 0.0)
    np.divide(mag, scale, out=out, where=scale > 0)
    return out


def support_edges(precision, threshold: float = SUPPORT_TOL) -> np.ndarray:
    """The graph of a precision matrix: its pairs ``i < j`` whose ``|Ω_ij| / √|Ω_ii Ω_jj|`` exceeds ``threshold``.

    Returns a boolean array over the ``d(d − 1)/2`` pairs of ``numpy.triu_indices(d, 1)``.

    Examples
    --------
    >>> support_edges(np.array([[2.0, -1.0, 0.0], [-1.0, 2.0, -1.0], [0.0, -1.0, 2.0]])).tolist()
    [True, False, True]
    """
    omega = np.asarray(precision, dtype=float)
    return _partial_correlations(omega)[np.triu_indices(omega.shape[0], 1)] > threshold


def _fraction(num: int, den: int) -> float:
    return 1.0 if den == 0 else num / den


@_truth_first(symmetric=False)
def support_recovery(*, precision_true, precision_pred, threshold: float = SUPPORT_THRESHOLD) -> SupportRecovery:
    """Precision, recall and F1 of the off-diagonal support of a precision matrix (graph recovery).

    An edge ``{i, j}`` (``i ≠ j``) is in the true graph when the true partial
    correlation ``|Ω_ij| / √(Ω_ii Ω_jj)`` exceeds ``SUPPORT_TOL`` (the true
    precision's zeros up to rounding), and in the predicted one when the
    released precision's exceeds ``threshold``. A dense release (every
    entry non-zero) is thereby thresholded, by one rule for every method: the
    threshold is a fixed number chosen in advance, not tuned on any data
    (tuning it on the private data would spend budget that nobody accounts
    for). Exact zeros of a sparse release (PACE-GGM's unmeasured pairs) are
    below every threshold.

    Parameters
    ----------
    precision_true : array_like of shape (d, d), keyword only
        The true precision ``Ω`` (its zeros are the missing edges).
    precision_pred : array_like of shape (d, d), keyword only
        The released precision ``Ω̂`` (e.g. the pseudo-inverse of a released
        covariance). A noisy release may give it a negative diagonal entry:
        its absolute value scales the partial correlations.
    threshold : float >= 0, default=SUPPORT_THRESHOLD (0.1)
        Smallest absolute partial correlation of ``Ω̂`` counted as an edge
        (strictly above it).

    Returns
    -------
    SupportRecovery
        ``(precision, recall, f1)``. Conventions for empty sets: with no
        predicted edge the precision is 1 (no false edge was claimed); with no
        true edge the recall is 1 (none was missed); F1 is their harmonic mean,
        0 when both are 0. Hence an empty prediction of a non-empty graph scores
        ``(1, 0, 0)`` and two empty graphs ``(1, 1, 1)``.

    Notes
    -----
    Takes precision matrices, not covariances: a graph's edges are the
    non-zero entries of the precision, and a covariance's zeros are another
    graph (marginal, not conditional, independence). Keyword only, as the
    truth and the release are treated differently.

    Examples
    --------
    >>> import numpy as np
    >>> chain = np.array([[2.0, -1.0, 0.0], [-1.0, 2.0, -1.0], [0.0, -1.0, 2.0]])
    >>> support_recovery(precision_true=chain, precision_pred=np.eye(3))
    SupportRecovery(precision=1.0, recall=0.0, f1=0.0)
    """
    tru = _square(precision_true, "precision_true")
    est = _square(precision_pred, "precision_pred")
    if est.shape != tru.shape:
        raise ValueError(f"shapes differ: precision_true {tru.shape} vs precision_pred {est.shape}")
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float, np.integer, np.floating)) \
            or not 0.0 <= float(threshold) < np.inf:
        raise ValueError(f"threshold must be a finite number >= 0, got {threshold!r}")
    true_edges = support_edges(tru)
    pred_edges = support_edges(est, float(threshold))
    hits = int(np.sum(true_edges & pred_edges))
    precision = _fraction(hits, int(pred_edges.sum()))
    recall = _fraction(hits, int(true_edges.sum()))
    f1 = 0.0 if precision + recall == 0 else 2 * precision * recall / (precision + recall)
    return SupportRecovery(float(precision), float(recall), float(f1))

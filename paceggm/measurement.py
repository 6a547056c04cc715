"""Noisy measurements of covariance entries, kept apart from any estimate.

A :class:`Measurement` is the released output of one Gaussian-mechanism call;
:class:`MeasuredEntries` folds a sequence of them into the precision-weighted
means ``y`` and precisions ``λ`` the reconstruction needs. Because estimates are
pure post-processing of measurements, a reconstruction can be rerun on the same
measurements (with another solver, say) without spending any budget.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, slots=True)
class Measurement:
    """One noisy entry of ``Σ(X)``: ``value = Σ_jk(X) + N(0, sigma²)``.

    Attributes
    ----------
    entry : tuple of int
        ``(j, k)`` with ``j >= k`` (lower triangle).
    value : float
        The released noisy value.
    sigma : float
        Standard deviation of the added noise.
    rho : float
        zCDP budget spent on this release.
    """

    entry: tuple[int, int]
    value: float
    sigma: float
    rho: float


def inverse_variance_merge(y: float, lam: float, z: float, sigma: float) -> tuple[float, float]:
    """Merge a new measurement ``z`` (std ``sigma``) into the mean ``y`` of precision ``lam``.

    Returns ``((λy + z/σ²) / (λ + 1/σ²), λ + 1/σ²)``; with ``lam == 0`` this is ``(z, 1/σ²)``.
    """
    prec = 1.0 / sigma**2
    new_lam = lam + prec
    return (lam * y + prec * z) / new_lam, new_lam


class MeasuredEntries:
    """Precision-weighted means ``y`` and precisions ``λ`` of the measured entries.

    Both are stored as symmetric ``d × d`` arrays; ``λ_jk == 0`` means "never
    measured".

    Parameters
    ----------
    d : int
        Dimension.
    """

    def __init__(self, d: int) -> None:
        if d < 1:
            raise ValueError(f"d must be >= 1, got {d}")
        self.d = d
        self.y = np.zeros((d, d))
        self.lam = np.zeros((d, d))

    def add(self, m: Measurement) -> None:
        j, k = m.entry
        if not (0 <= k <= j < self.d):
            raise ValueError(f"entry {m.entry} is not a lower-triangle index for d={self.d}")
        y, lam = inverse_variance_merge(self.y[j, k], self.lam[j, k], m.value, m.sigma)
        self.y[j, k] = self.y[k, j] = y
        self.lam[j, k] = self.lam[k, j] = lam

    @classmethod
    def from_measurements(cls, d: int, measurements: Iterable[Measurement]) -> MeasuredEntries:
        state = cls(d)
        for m in measurements:
            state.add(m)
        return state

    @property
    def pattern(self) -> np.ndarray:
        """Boolean ``d × d`` mask of measured entries (symmetric)."""
        return self.lam > 0

    def n_offdiagonal(self) -> int:
        """Number of distinct measured off-diagonal entries."""
        return int(np.count_nonzero(np.tril(self.pattern, -1)))

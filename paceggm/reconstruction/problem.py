"""The weighted-measurement problem every max-entropy solver works on.

``L(W) = Σ_{(j,k)∈S} λ_jk (W_jk − y_jk)²`` over lower-triangle pairs ``j ≥ k``
(each off-diagonal pair counted once), barrier problems
``min_{W ≻ 0} L(W) − μ log det W`` and their limit ``μ → 0``.

Solvers see the problem in normalised units: ``y`` divided by ``s = mean |y_jj|``
and ``λ`` by ``λ̄`` (the geometric mean of the measured precisions). Then
``L(sW') = s²λ̄ · L'(W')`` and ``log det(sW') = d log s + log det W'``, so the
barrier problem at ``μ`` is the normalised one at ``μ' = μ / (s²λ̄)``: μ values
are dimensionless fractions of the natural unit ``s²λ̄``, so one schedule
suits every data set.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Problem:
    """Measurements on one block, in normalised units.

    Attributes
    ----------
    y, lam : ndarray of shape (d, d)
        Symmetric; ``lam == 0`` off the pattern. Already divided by
        ``scale`` and ``lam_unit``.
    rows, cols : ndarray of int
        Lower-triangle pattern ``S`` (``rows >= cols``), diagonal included.
    scale : float
        ``s``: multiply a normalised ``W'`` by it to get back to data units.
    lam_unit : float
        ``λ̄``.
    """

    y: np.ndarray
    lam: np.ndarray
    rows: np.ndarray
    cols: np.ndarray
    scale: float
    lam_unit: float

    @property
    def d(self) -> int:
        return self.y.shape[0]

    @property
    def mu_unit(self) -> float:
        """``s²λ̄``: the absolute μ that one normalised unit of μ stands for."""
        return self.scale**2 * self.lam_unit

    @property
    def weights(self) -> np.ndarray:
        return self.lam[self.rows, self.cols]

    @property
    def targets(self) -> np.ndarray:
        return self.y[self.rows, self.cols]

    def loss(self, W: np.ndarray) -> float:
        """``L'(W)`` for a normalised ``W``."""
        r = W[self.rows, self.cols] - self.targets
        return float(np.sum(self.weights * r * r))


def measured_pattern(lam: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(rows, cols)`` of the measured lower-triangle pairs (``λ > 0``, ``rows >= cols``), row by row."""
    return np.nonzero(np.tril(lam > 0))


def natural_units(y: np.ndarray, lam: np.ndarray, *, pattern=None) -> tuple[float, float]:
    """``(s, λ̄)``: mean |y_jj| and the geometric mean of the measured λ.

    ``pattern``, if given, is :func:`measured_pattern` of ``lam``, already known.
    """
    diag = np.abs(np.diag(y))
    s = float(diag.mean())
    if not np.isfinite(s) or s <= 0.0:
        s = 1.0
    rows, cols = measured_pattern(lam) if pattern is None else pattern
    measured = lam[rows, cols]
    lam_bar = float(np.exp(np.mean(np.log(measured)))) if measured.size else 1.0
    return s, lam_bar


def make_problem(y: np.ndarray, lam: np.ndarray, *, scale: float, lam_unit: float, pattern=None) -> Problem:
    """Normalise ``(y, λ)`` by the given units and list the pattern (``pattern``: :func:`measured_pattern`, if known)."""
    rows, cols = measured_pattern(lam) if pattern is None else pattern
    return Problem(
        y=y / scale,
        lam=lam / lam_unit,
        rows=rows,
        cols=cols,
        scale=scale,
        lam_unit=lam_unit,
    )


def mu_schedule(mu0: float, mu_min: float, factor: float) -> list[float]:
    """Barrier parameters ``μ_0, c μ_0, c² μ_0, …`` ending exactly at ``μ_min``."""
    if not (0 < mu_min <= mu0) or not (0 < factor < 1):
        raise ValueError("need 0 < mu_min <= mu0 and 0 < mu_factor < 1")
    mus = [mu0]
    while mus[-1] * factor > mu_min * (1 + 1e-12):
        mus.append(mus[-1] * factor)
    if mus[-1] != mu_min:
        mus.append(mu_min)
    return mus


def diagonal_barrier_solution(p: Problem, mu: float) -> np.ndarray:
    """``w_j = argmin λ_jj (w − y_jj)² − μ log w`` for each diagonal entry alone.

    ``w = (y + sqrt(y² + 2μ/λ)) / 2``, written without cancellation for ``y < 0``
    (zero and negative measured diagonals give a small positive ``w``). Both
    barrier solvers start their continuation from it.
    """
    y = np.diag(p.y)
    a = 2.0 * mu / np.diag(p.lam)
    root = np.sqrt(y * y + a)
    return np.where(y >= 0, 0.5 * (y + root), 0.5 * a / (root - y))

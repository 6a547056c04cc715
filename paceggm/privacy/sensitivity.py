"""Sensitivities of the second-moment matrix ``Σ(X) = XᵀX/n`` (SPEC §2).

Neighbouring data sets have the same size ``n`` and differ in one record
(replace-one). Two norms bound a record ``x``:

``"linf"``
    ``|x_j| ≤ B`` for every coordinate (the bound PACE-GGM uses).
``"l2"``
    ``‖x‖₂ ≤ C``.
"""

from __future__ import annotations

import math

from paceggm._validation import check_positive

NORMS = ("linf", "l2")


def _check(n: int, bound: float, norm: str) -> None:
    if norm not in NORMS:
        raise ValueError(f"norm must be one of {NORMS}, got {norm!r}")
    if not isinstance(n, (int,)) and not (hasattr(n, "__index__")):
        raise TypeError(f"n must be an integer, got {type(n).__name__}")
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    check_positive(bound, "bound")


def entry_sensitivity(*, n: int, bound: float, norm: str = "linf") -> float:
    """Sensitivity of one entry of ``Σ(X)``, diagonal or not.

    Under ``|x_j| ≤ B`` a product ``x_j x_k`` lies in ``[-B², B²]``, so
    replacing one record moves the entry by at most ``2B²/n`` (the same bound
    is used for the diagonal, as the publication does). Under ``‖x‖₂ ≤ C``,
    ``|x_j x_k| ≤ C²/2``, giving ``C²/n``.

    Examples
    --------
    >>> entry_sensitivity(n=100, bound=1.0)
    0.02
    """
    _check(n, bound, norm)
    if norm == "linf":
        return 2.0 * bound**2 / n
    return bound**2 / n


def full_sensitivity(*, n: int, d: int, bound: float, norm: str = "linf") -> float:
    """Frobenius-norm sensitivity of the whole matrix ``Σ(X)``.

    ``‖xxᵀ − x'x'ᵀ‖_F ≤ sqrt(‖x‖⁴ + ‖x'‖⁴)`` because ``⟨xxᵀ, x'x'ᵀ⟩ ≥ 0``; with
    ``‖x‖₂² ≤ C²`` that is ``sqrt(2) C²/n``, and ``‖x‖₂² ≤ d B²`` under the ℓ∞ bound
    gives ``sqrt(2) d B²/n``.
    """
    _check(n, bound, norm)
    if d < 1:
        raise ValueError(f"d must be >= 1, got {d}")
    radius_sq = d * bound**2 if norm == "linf" else bound**2
    return math.sqrt(2.0) * radius_sq / n

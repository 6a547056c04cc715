"""Sensitivities of the second-moment matrix ``Σ(X) = XᵀX/n`` (docs/design.md, *Privacy model*).

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


def distinct_entries_sensitivity(*, n: int, d: int, bound: float, norm: str = "linf") -> float:
    """ℓ2 sensitivity of the vector of the ``d(d+1)/2`` distinct entries of ``Σ(X)``.

    Mechanisms that add iid noise to the upper triangle (diagonal included) and
    mirror it release this vector, not the full matrix, so this is the exact
    calibration for them; :func:`full_sensitivity` (Frobenius norm) counts every
    off-diagonal entry twice and is larger.

    Derivation. Write ``u = xxᵀ − x'x'ᵀ`` for the replaced record and ``v`` for its
    distinct entries. Off-diagonal entries appear twice in ``‖u‖_F²`` and once in
    ``‖v‖²``, so ``2‖v‖² = ‖u‖_F² + Σ_j u_jj²``. With ``a_j = x_j²``, ``b_j = x'_j²``,

        2‖v‖² = (Σa)² + (Σb)² − 2(x·x')² + Σ_j (a_j − b_j)²
              ≤ (Σa)² + (Σb)² + Σ_j (a_j − b_j)² =: g(a, b).

    ``"linf"`` (``|x_j| ≤ B``): ``g`` is convex on the box ``a, b ∈ [0, B²]^d``,
    so its maximum sits at a vertex ``a, b ∈ {0, B²}^d``. With ``p, q`` the numbers
    of ``B²`` entries in ``a, b`` and ``o`` the overlap, ``g/B⁴ = p² + q² + p + q − 2o``
    with ``o ≥ max(0, p + q − d)``. If ``p + q ≤ d`` this is ``≤ (p+q)² + (p+q) ≤
    d² + d ≤ 2d²``; otherwise it is ``≤ (p² − p) + (q² − q) + 2d ≤ 2d²``. Hence
    ``‖v‖ ≤ d B²``, i.e. ``Δ = d B² / n``. The bound is attained (so it is the
    exact sensitivity) when ``d = 1`` (``x = B``, ``x' = 0``) and for every even
    ``d`` (``|x_j| = |x'_j| = B`` with orthogonal sign patterns, which kills the
    dropped term ``(x·x')²``). For odd ``d ≥ 3`` orthogonal sign vectors do not
    exist and the corner maximum is ``sqrt(d² − 1) B²``, so ``d B²/n`` is then
    conservative by a factor ``≤ sqrt(1 − 1/d²)`` (≤ 6% at d = 3).
    Compare ``sqrt(2) d B²/n`` for the full matrix.

    ``"l2"`` (``‖x‖₂ ≤ C``): ``Σa, Σb ≤ C²`` and ``Σ(a−b)² ≤ Σa² + Σb² ≤ 2C⁴``, so
    ``‖v‖ ≤ sqrt(2) C²``, attained by ``x = C e₁``, ``x' = C e₂``: ``Δ = sqrt(2) C²/n``,
    the same as the full matrix.

    Examples
    --------
    >>> distinct_entries_sensitivity(n=10, d=4, bound=1.0)
    0.4
    """
    _check(n, bound, norm)
    if d < 1:
        raise ValueError(f"d must be >= 1, got {d}")
    if norm == "linf":
        return d * bound**2 / n
    return math.sqrt(2.0) * bound**2 / n


def trace_sensitivity(*, n: int, d: int, bound: float, norm: str = "linf") -> float:
    """Sensitivity of ``tr Σ(X) = Σ_i ‖x_i‖² / n``.

    ``‖x‖²`` lies in ``[0, R²]`` with ``R² = d B²`` (``"linf"``) or ``C²``
    (``"l2"``), so replacing one record moves the trace by at most ``R²/n``.

    Examples
    --------
    >>> trace_sensitivity(n=10, d=3, bound=1.0, norm="l2")
    0.1
    """
    _check(n, bound, norm)
    if d < 1:
        raise ValueError(f"d must be >= 1, got {d}")
    radius_sq = d * bound**2 if norm == "linf" else bound**2
    return radius_sq / n


def eigenvalue_sensitivity(*, n: int, d: int, bound: float, norm: str = "linf") -> float:
    """ℓ2 sensitivity of the sorted eigenvalue vector of ``Σ(X)``.

    By the Hoffman–Wielandt inequality, ``‖λ(A) − λ(A')‖₂ ≤ ‖A − A'‖_F`` for
    symmetric ``A, A'`` with eigenvalues sorted the same way, so this is
    :func:`full_sensitivity`.
    """
    return full_sensitivity(n=n, d=d, bound=bound, norm=norm)


def eigenvalue_l1_sensitivity(*, n: int, d: int, bound: float, norm: str = "linf") -> float:
    """ℓ1 sensitivity of the sorted eigenvalue vector of ``Σ(X)``: ``2R²/n``.

    Replacing ``x`` by ``x'`` removes ``xxᵀ/n`` and adds ``x'x'ᵀ/n``. A rank-one
    PSD change moves every sorted eigenvalue the same way (Weyl), so the ℓ1
    move of each half is the trace's, ``‖x‖²/n ≤ R²/n``, with ``R² = d B²``
    (``"linf"``) or ``C²`` (``"l2"``); the two halves add to at most ``2R²/n``.
    Attained: ``m ≥ 2`` rows ``R e₁`` (the rest 0), one of them made ``R e₂``, moves
    the top eigenvalue down and the second up by ``R²/n`` each.

    Examples
    --------
    >>> eigenvalue_l1_sensitivity(n=10, d=3, bound=1.0, norm="l2")
    0.2
    """
    return 2.0 * trace_sensitivity(n=n, d=d, bound=bound, norm=norm)


def spectral_sensitivity(*, n: int, d: int, bound: float, norm: str = "linf") -> float:
    """Sensitivity of any single eigenvalue of ``Σ(X)`` (e.g. the smallest).

    By Weyl's inequality ``|λ_i(A) − λ_i(A')| ≤ ‖A − A'‖₂``. The change is
    ``(xxᵀ − x'x'ᵀ)/n`` and ``−x'x'ᵀ ⪯ xxᵀ − x'x'ᵀ ⪯ xxᵀ``, so its eigenvalues lie
    in ``[−‖x'‖²/n, ‖x‖²/n]``: spectral norm at most ``R²/n`` with ``R² = d B²``
    (``"linf"``) or ``C²`` (``"l2"``), the same as :func:`trace_sensitivity`.
    """
    return trace_sensitivity(n=n, d=d, bound=bound, norm=norm)


def cross_moment_sensitivity(*, n: int, bound_x: float, bound_y: float) -> float:
    """ℓ2 sensitivity of ``Xᵀy / n`` for rows with ``‖x‖₂ ≤ bound_x``, ``|y| ≤ bound_y``.

    Replace-one: ``‖xy − x'y'‖₂ ≤ ‖x‖|y| + ‖x'‖|y'| ≤ 2 bound_x bound_y``, attained
    by ``x' = −x``, ``y' = y``; divided by ``n``.

    Examples
    --------
    >>> cross_moment_sensitivity(n=4, bound_x=1.0, bound_y=1.0)
    0.5
    """
    _check(n, bound_x, "l2")
    check_positive(bound_y, "bound_y")
    return 2.0 * bound_x * bound_y / n


def mean_sensitivity(*, n: int, d: int, bound: float, norm: str = "linf") -> float:
    """ℓ2 sensitivity of the mean ``Σ_i x_i / n``.

    Replace-one moves the mean by ``(x − x')/n``: each coordinate by at most
    ``2B/n`` under ``|x_j| ≤ B`` (ℓ2: ``2 sqrt(d) B/n``), and by ``2C/n`` under
    ``‖x‖₂ ≤ C``; both attained by ``x' = −x`` at the bound.

    Examples
    --------
    >>> mean_sensitivity(n=10, d=4, bound=1.0)
    0.4
    """
    _check(n, bound, norm)
    if d < 1:
        raise ValueError(f"d must be >= 1, got {d}")
    radius = math.sqrt(d) * bound if norm == "linf" else bound
    return 2.0 * radius / n

"""Exact samplers for ``noise="exact"``: no floating-point number ever touches the noise.

The textbook samplers (``rng.normal``, ``rng.laplace``, Gumbel-max in doubles)
leak through their floating-point outputs: the set of doubles a noisy value can
take depends on the true value (Mironov 2012), and precision-based attacks
recover secrets from Gaussian samplers the same way. Here every draw is an
integer made from uniform random integers with exact integer and rational
arithmetic (Python ints and :class:`fractions.Fraction`), after Canonne, Kamath
& Steinke, *The Discrete Gaussian for Differential Privacy* (2020; CKS below):

* :func:`bernoulli_exp` — Bernoulli(exp(−x)) for rational ``x ≥ 0`` (CKS Alg. 1);
* :func:`discrete_laplace` — ``P(y) ∝ exp(−|y|/scale)`` on ℤ (CKS Alg. 2);
* :func:`discrete_gaussian` — ``P(y) ∝ exp(−y²/(2σ²))`` on ℤ (CKS Alg. 3);
* :func:`exponential_index` — ``P(i) ∝ exp(−c (u_max − u_i))`` for integer
  utilities: a uniform candidate, accepted with probability
  ``exp(−c (u_max − u_i))``; the accepted index has exactly that law.

The mechanisms on real-valued queries round the query to a grid first and add
integer noise in grid units; the grid is a power of two, so every grid point
``k γ`` is the exact double ``k · 2^e`` (as long as ``|k| < 2^53``; beyond, the
final product is rounded, which is post-processing of the exact integer).

Accounting (each is charged exactly the ρ the caller states):

* Gaussian mechanism (:func:`gaussian`): a query ``f`` with ℓ2 sensitivity
  ``Δ`` over ``k`` coordinates, rounded to the nearest multiple of
  ``γ = 2^e ≤ σ₀ 2^-GRID_BITS`` (``σ₀ = Δ/sqrt(2ρ)``), moves by at most
  ``Δ + γ sqrt(k)`` between neighbours (each coordinate's rounding error lies
  in ``[−γ/2, γ/2]``, so two of them differ by at most ``γ``). In grid units
  the rounded query is integer-valued with ℓ2 sensitivity at most
  ``Δ_γ = Δ/γ + ⌈sqrt(k)⌉``; adding iid discrete Gaussians ``N_ℤ(0, s²)`` with
  ``s² = Δ_γ² / (2ρ)`` (an exact rational) is ``Δ_γ²/(2s²) = ρ``-zCDP (CKS,
  Thm. 14, the multivariate discrete Gaussian: integer-valued queries with
  ``Σ_j (q_j(x) − q_j(x'))² / s² ≤ ε²`` give ``ε²/2``-zCDP; Thm. 4 for one
  coordinate). The reported σ is ``γ s``, ``1 + O(2^-GRID_BITS sqrt(k/ρ))``
  times the ``σ₀`` of the doubles.
* Exponential mechanism (:func:`exponential`): scores of sensitivity ``Δ``
  rounded to ``γ = 2^e ≤ Δ 2^-GRID_BITS`` have sensitivity ``Δ/γ + 1`` in grid
  units; sampling ``∝ exp(c u_i)`` with a rational ``c ≤ ε / (2 (Δ/γ + 1))``
  and ``ε ≤ sqrt(8ρ)`` is ε-DP with bounded range ε, hence ``ε²/8 ≤ ρ``-zCDP
  (Cesar & Rogers 2021), as the doubles' version.
* Laplace mechanism (:func:`laplace`): a query with ℓ1 sensitivity ``Δ`` over
  ``k`` coordinates, rounded to ``γ = 2^e ≤ (Δ/ε) 2^-GRID_BITS``, moves by at
  most ``Δ_γ = Δ/γ + k`` in grid units (ℓ1); iid discrete Laplace noise of
  scale ``Δ_γ/ε_q`` with a rational ``ε_q ≤ sqrt(2ρ)`` is ``ε_q``-DP, hence
  ``ε_q²/2 ≤ ρ``-zCDP (Bun & Steinke 2016, Prop. 1.4), as the doubles' version.
* Sparse vector (:func:`above_threshold`): queries of sensitivity ``Δ``
  rounded to ``γ`` move by at most the integer ``⌊Δ/γ⌋ + 1`` in grid units;
  AboveThreshold with discrete Laplace noise of scales ``2Δ_γ/ε`` and
  ``4Δ_γ/ε`` (``ε ≤ sqrt(2ρ)`` rational) is ε-DP by the textbook proof
  (Dwork & Roth 2014, Thm. 3.23): it shifts the threshold's noise by ``Δ_γ``
  and the firing query's by ``2Δ_γ``, integers, so the shift is a bijection
  of ℤ with the same density ratios as the continuous Laplace.

What is not covered. The query itself is evaluated in floating point
(``XᵀX/n`` and the like); its rounding errors are far below ``γ`` but are not
part of the sensitivity above. The samplers loop a random number of times: the
discrete Gaussian's and the discrete Laplace's loops do not depend on the data,
but the exponential mechanism's rejection loop runs ``m w_max / Σ w`` proposals
on average, a function of the scores, so its running time leaks (a timing
channel): keep the fit's timing out of what is released.

Random bits come from a NumPy ``Generator`` when one is given (reproducible
experiments) and otherwise from :mod:`secrets` (the operating system's
cryptographic source: a real release).
"""

from __future__ import annotations

import math
import secrets
from fractions import Fraction

import numpy as np

#: Grid step relative to the noise (Gaussian) or the sensitivity (scores): ``γ ≤ scale · 2^-GRID_BITS``.
GRID_BITS = 32

# Random bytes fetched at a time: a few hundred draws' worth.
_CHUNK = 256


class RandomBits:
    """Uniform random integers from ``rng`` (a NumPy Generator), or from :mod:`secrets` when ``rng`` is None.

    Bits are fetched in chunks (``Generator.bytes`` or ``secrets.token_bytes``)
    and consumed from a Python integer, so a draw costs a shift and a mask, and
    the same Generator state gives the same draws.
    """

    __slots__ = ("_rng", "_pool", "_n")

    def __init__(self, rng: np.random.Generator | None = None) -> None:
        if rng is not None and not isinstance(rng, np.random.Generator):
            raise TypeError(f"exact noise draws its bits from a numpy Generator or from secrets (None), got {rng!r}")
        self._rng = rng
        self._pool = 0
        self._n = 0

    @classmethod
    def of(cls, rng) -> RandomBits:
        """``rng`` itself if it is already a :class:`RandomBits`, else one drawing from it."""
        return rng if isinstance(rng, cls) else cls(rng)

    def bits(self, k: int) -> int:
        """A uniform integer in ``[0, 2^k)``."""
        while self._n < k:
            chunk = self._rng.bytes(_CHUNK) if self._rng is not None else secrets.token_bytes(_CHUNK)
            self._pool |= int.from_bytes(chunk, "little") << self._n
            self._n += 8 * _CHUNK
        out = self._pool & ((1 << k) - 1)
        self._pool >>= k
        self._n -= k
        return out

    def below(self, n: int) -> int:
        """A uniform integer in ``[0, n)`` (rejection: never a modulo bias)."""
        if n <= 0:
            raise ValueError(f"below needs n >= 1, got {n}")
        k = (n - 1).bit_length()
        while True:
            r = self.bits(k)
            if r < n:
                return r


def _bernoulli(num: int, den: int, bits: RandomBits) -> bool:
    """Bernoulli(num/den), ``0 <= num <= den``."""
    return bits.below(den) < num


def _bernoulli_exp_unit(num: int, den: int, bits: RandomBits) -> bool:
    """Bernoulli(exp(−num/den)) for ``0 <= num/den <= 1`` (CKS Alg. 1)."""
    k = 1
    while _bernoulli(num, den * k, bits):
        k += 1
    return k % 2 == 1


def bernoulli_exp(x, bits: RandomBits) -> bool:
    """Bernoulli(exp(−x)) for a rational ``x >= 0``, exactly (CKS Alg. 1).

    Parameters
    ----------
    x : int, Fraction or float
        Converted to a :class:`~fractions.Fraction` (a float's exact value).
    bits : RandomBits

    Returns
    -------
    bool
    """
    x = Fraction(x)
    if x < 0:
        raise ValueError(f"bernoulli_exp needs x >= 0, got {x}")
    return _bernoulli_exp(x.numerator, x.denominator, bits)


def _bernoulli_exp(num: int, den: int, bits: RandomBits) -> bool:
    whole, rest = divmod(num, den)
    for _ in range(whole):  # exp(−x) = exp(−1)^⌊x⌋ · exp(−(x − ⌊x⌋)); stops at the first failure
        if not _bernoulli_exp_unit(1, 1, bits):
            return False
    return _bernoulli_exp_unit(rest, den, bits)


def discrete_laplace(scale, bits: RandomBits) -> int:
    """An integer ``y`` with ``P(y) ∝ exp(−|y|/scale)`` (CKS Alg. 2), for a rational ``scale > 0``."""
    scale = Fraction(scale)
    if scale <= 0:
        raise ValueError(f"discrete_laplace needs scale > 0, got {scale}")
    return _discrete_laplace(scale.denominator, scale.numerator, bits)


def _discrete_laplace(s: int, t: int, bits: RandomBits) -> int:
    """``P(y) ∝ exp(−|y| s/t)`` for positive integers ``s``, ``t``."""
    while True:
        u = bits.below(t)
        if not _bernoulli_exp_unit(u, t, bits):
            continue
        v = 0
        while _bernoulli_exp_unit(1, 1, bits):
            v += 1
        y = (u + t * v) // s
        negative = bits.bits(1) == 1
        if negative and y == 0:
            continue
        return -y if negative else y


def discrete_gaussian(sigma2, bits: RandomBits) -> int:
    """An integer ``y`` with ``P(y) ∝ exp(−y²/(2 sigma2))`` (CKS Alg. 3), for a rational ``sigma2 > 0``."""
    sigma2 = Fraction(sigma2)
    if sigma2 <= 0:
        raise ValueError(f"discrete_gaussian needs sigma2 > 0, got {sigma2}")
    t = math.isqrt(sigma2.numerator // sigma2.denominator) + 1  # ⌊σ⌋ + 1
    # Acceptance exp(−(|y| − σ²/t)² / (2σ²)) with σ² = p/q: ((|y| t q − p)²) / (2 p q t²).
    p, q = sigma2.numerator, sigma2.denominator
    den = 2 * p * q * t * t
    while True:
        y = _discrete_laplace(1, t, bits)
        if _bernoulli_exp((abs(y) * t * q - p) ** 2, den, bits):
            return y


def exponential_index(utilities, c, bits: RandomBits) -> int:
    """An index ``i`` with probability ``∝ exp(c · utilities[i])``, exactly, for integers and rational ``c >= 0``.

    Rejection from the uniform proposal: candidate ``i`` is accepted with
    probability ``exp(−c (u_max − u_i)) ≤ 1``, so the accepted index has
    probability ``∝ exp(c u_i)``. ``utilities`` may be a sequence of ints or an
    array of integer-valued doubles (each read when proposed).
    """
    c = Fraction(c)
    if c < 0:
        raise ValueError(f"exponential_index needs c >= 0, got {c}")
    m = len(utilities)
    if m == 0:
        raise ValueError("exponential_index needs at least one candidate")
    top = int(utilities.max()) if isinstance(utilities, np.ndarray) else max(utilities)
    num, den = c.numerator, c.denominator
    while True:
        i = bits.below(m)
        if _bernoulli_exp(num * (top - int(utilities[i])), den, bits):
            return i


# --- the mechanisms on a grid ------------------------------------------------------------------


def _grid_exponent(scale: float) -> int:
    """``e`` with ``2^e <= scale · 2^-GRID_BITS``: the grid step ``2^e`` for a positive finite ``scale``."""
    mantissa, exponent = math.frexp(scale)  # scale = mantissa · 2^exponent, mantissa in [0.5, 1)
    return exponent - 1 - GRID_BITS


def _on_grid(values: np.ndarray, e: int) -> np.ndarray:
    """``values / 2^e`` rounded to the nearest integer, as integer-valued doubles (exact: a power-of-two scaling)."""
    with np.errstate(over="ignore"):  # an overflow is refused just below, in one line
        scaled = np.ldexp(values, -e)
    if not np.all(np.isfinite(scaled)):
        raise ValueError("a value is too large for the exact noise's grid (it overflows a double once scaled)")
    return np.rint(scaled)


def _rational_at_most(value: float, square_at_most: Fraction) -> Fraction:
    """``value`` (a correctly rounded square root) as a rational whose square is at most ``square_at_most``."""
    out = Fraction(value)
    if out * out > square_at_most:  # rounded up by at most half an ulp: one step down is below
        out = Fraction(math.nextafter(value, 0.0))
    if out * out > square_at_most:
        raise ValueError(f"{value!r} is not the square root of {float(square_at_most)!r}")
    return out


def gaussian(value, *, rho: float, sensitivity: float, bits: RandomBits):
    """The Gaussian mechanism with discrete Gaussian noise on a power-of-two grid, at zCDP cost exactly ``rho``.

    Parameters
    ----------
    value : float or ndarray
        The exact query answer (``k`` coordinates).
    rho : float
        zCDP budget, > 0.
    sensitivity : float
        ℓ2 sensitivity ``Δ`` of the whole vector, > 0.
    bits : RandomBits

    Returns
    -------
    noisy : float or ndarray
        ``γ (round(value/γ) + Y)``, ``Y`` iid ``N_ℤ(0, s²)``; same shape as ``value``.
    sigma : float
        The noise scale ``γ s`` in the units of ``value``.
    """
    value = np.asarray(value, dtype=float)
    k = max(value.size, 1)
    rho_q, delta_q = Fraction(rho), Fraction(sensitivity)
    e = _grid_exponent(sensitivity / math.sqrt(2.0 * rho))
    gamma = Fraction(2) ** e
    # Rounding to the grid adds at most γ to each coordinate's move, γ sqrt(k) to the vector's.
    delta_grid = delta_q / gamma + (math.isqrt(k - 1) + 1)
    sigma2 = delta_grid * delta_grid / (2 * rho_q)
    centre = _on_grid(value, e)
    noise = np.array([discrete_gaussian(sigma2, bits) for _ in range(value.size)], dtype=float).reshape(value.shape)
    noisy = np.ldexp(centre + noise, e)
    sigma = math.ldexp(math.sqrt(sigma2), e)
    return (float(noisy) if noisy.ndim == 0 else noisy), sigma


def laplace(value, *, epsilon: float, rho: float, sensitivity: float, bits: RandomBits):
    """The Laplace mechanism with discrete Laplace noise on a power-of-two grid, exactly ``epsilon``-DP.

    ``sensitivity`` is the ℓ1 sensitivity ``Δ`` of the whole vector (``k``
    coordinates). The query is rounded to ``γ = 2^e ≤ (Δ/ε) 2^-GRID_BITS``; each
    coordinate's rounding moves it by at most ``γ`` more, so in grid units the
    rounded query has ℓ1 sensitivity at most ``Δ_γ = Δ/γ + k``. Adding iid
    discrete Laplace noise of scale ``t = Δ_γ/ε_q`` changes the probability of
    any output by a factor at most ``exp(Σ_j |shift_j|/t) ≤ exp(ε_q)``, with
    ``ε_q ≤ sqrt(2 rho)`` a rational: ``ε_q``-DP, hence ``ε_q²/2 ≤ rho``-zCDP.
    ``epsilon`` is the double ``sqrt(2 rho)``.

    Returns
    -------
    noisy : float or ndarray
        ``γ (round(value/γ) + Y)``, ``Y`` iid discrete Laplace of scale ``t``.
    scale : float
        The noise scale ``γ t`` in the units of ``value``.
    """
    value = np.asarray(value, dtype=float)
    k = max(value.size, 1)
    eps_q = _rational_at_most(epsilon, 2 * Fraction(rho))
    e = _grid_exponent(sensitivity / epsilon)
    gamma = Fraction(2) ** e
    scale = (Fraction(sensitivity) / gamma + k) / eps_q
    centre = _on_grid(value, e)
    noise = np.array([discrete_laplace(scale, bits) for _ in range(value.size)], dtype=float).reshape(value.shape)
    noisy = np.ldexp(centre + noise, e)
    return (float(noisy) if noisy.ndim == 0 else noisy), math.ldexp(float(scale), e)


def exponential(scores: np.ndarray, *, epsilon: float, rho: float, sensitivity: float, bits: RandomBits) -> int:
    """The exponential mechanism on scores rounded to a power-of-two grid, exactly ``epsilon``-DP.

    ``epsilon`` is the double ``sqrt(8 rho)``; the sampler uses a rational at
    most ``sqrt(8 rho)`` (below ``epsilon`` by an ulp at most).
    """
    eps_q = _rational_at_most(epsilon, 8 * Fraction(rho))
    e = _grid_exponent(sensitivity)
    utilities = _on_grid(scores, e)
    c = eps_q / (2 * (Fraction(sensitivity) / Fraction(2) ** e + 1))
    return exponential_index(utilities, c, bits)


def above_threshold(queries: np.ndarray, *, threshold: float, epsilon: float, rho: float, sensitivity: float,
                    bits: RandomBits) -> int:
    """AboveThreshold with discrete Laplace noise on a power-of-two grid, exactly ``epsilon``-DP.

    ``epsilon`` is the double ``sqrt(2 rho)``; the sampler uses a rational at most ``sqrt(2 rho)``.
    Returns the first index whose noisy query reaches the noisy threshold, or ``len(queries)``.
    """
    eps_q = _rational_at_most(epsilon, 2 * Fraction(rho))
    e = _grid_exponent(sensitivity)
    shift = math.floor(Fraction(sensitivity) / Fraction(2) ** e) + 1  # an integer bound on a query's move
    grid = _on_grid(np.append(queries, threshold), e)
    noisy_threshold = int(grid[-1]) + discrete_laplace(2 * shift / eps_q, bits)
    query_scale = 4 * shift / eps_q
    for i in range(queries.size):
        if int(grid[i]) + discrete_laplace(query_scale, bits) >= noisy_threshold:
            return i
    return int(queries.size)

"""The exponential mechanism on the unit sphere: a Bingham draw whose mode is a matrix's top eigenvector.

For a symmetric matrix ``M`` (a data set's second moment, or its projection),
:func:`bingham_mechanism` releases a unit vector ``u`` with density

    p(u) ∝ exp(ε/(2Δ) · uᵀMu)

with respect to the uniform measure on the sphere ``S^{q−1}``: the exponential
mechanism (McSherry & Talwar 2007) with the score ``uᵀMu``, whose sensitivity
``Δ`` bounds ``|uᵀ(M − M')u|`` for every unit ``u`` and neighbouring ``M, M'``.
It is the mechanism Amin, Dick, Kulesza, Muñoz Medina & Vassilvitskii (2019)
draw each eigenvector with, and a Bingham distribution.

Accounting. Every score moves by at most ``Δ``, so the log-ratio of the two
densities, ``ε/(2Δ) · uᵀ(M − M')u`` plus a constant, lies in an interval of
width at most ``ε``: the mechanism is ε-DP with ε-bounded range, hence
``ε²/8``-zCDP (Cesar & Rogers 2021), the accounting of the discrete
exponential mechanism (:func:`paceggm.privacy.exponential_mechanism_epsilon`:
``ε = sqrt(8ρ)``).

Sampling (:func:`sample_bingham`) is exact in distribution: the rejection
sampler of Kent, Ganeiber & Mardia (2018), *A new unified approach for the
simulation of a wide class of directional distributions* (J. Comput. Graph.
Statist. 27(2), Section 4), with an angular central Gaussian envelope. For the
target ``f(x) ∝ exp(−xᵀAx)``, ``A = c(λ_max(M) I − M)`` positive semidefinite
with smallest eigenvalue 0, and any ``b ∈ [1, q]``, ``Ω = I + 2A/b``:

* a proposal ``x = y/‖y‖``, ``y ~ N(0, Ω⁻¹)``, has the angular central Gaussian
  density ``g(x) ∝ (xᵀΩx)^{−q/2}`` on the sphere;
* with ``s = xᵀAx ≥ 0``, ``xᵀΩx = 1 + 2s/b`` and ``exp(−s) (1 + 2s/b)^{q/2}`` is at
  most ``M* = exp(−(q − b)/2) (q/b)^{q/2}`` (its maximum, at ``s = (q − b)/2``), so
  ``f/g`` is bounded by ``M*`` times the ratio of the normalising constants;
* the proposal is accepted with probability ``exp(−s)(xᵀΩx)^{q/2}/M* ≤ 1``, and
  an accepted ``x`` has exactly the density ``f``.

``b`` solves ``Σ_i 1/(b + 2a_i) = 1`` (``a_i`` the eigenvalues of ``A``), the
choice that minimises the expected number of proposals; any ``b`` in ``[1, q]``
gives the same law, so the root's precision affects the speed only.

``noise="exact"``. No exact sampler on the sphere is known: the proposal is a
Gaussian vector in doubles and the output is a vector of doubles, so the
floating-point attacks that ``noise="exact"`` rules out elsewhere
(:mod:`paceggm.privacy.exact`) are not ruled out here. With ``noise="exact"``
the draw takes its random bits from :class:`paceggm.privacy.exact.RandomBits`
(from :mod:`secrets` when ``rng`` is None) and warns
(:class:`~paceggm.exceptions.PrivacyLeakWarning`) that its guarantee is the
doubles' one. The rejection loop's running time depends on ``M`` (a timing
channel, as the exact exponential mechanism's).
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from paceggm._validation import check_positive
from paceggm.exceptions import PrivacyLeakWarning
from paceggm.privacy import exact, mechanisms

__all__ = ["bingham_mechanism", "envelope_b", "log_acceptance", "sample_bingham"]

# Proposals drawn at a time per draw still wanted: the envelope accepts about half of them or more.
_BATCH = 4


def envelope_b(a: np.ndarray) -> float:
    """``b ∈ [1, q]`` with ``Σ_i 1/(b + 2a_i) = 1``, for ``a_i ≥ 0`` with ``min a_i = 0`` (Kent et al. 2018).

    The sum decreases in ``b``, is at least 1 at ``b = 1`` (the ``a_i = 0``
    term alone is 1) and at most 1 at ``b = q``, so the root lies in
    ``[1, q]``; all ``a_i = 0`` (the uniform law) gives ``b = q``.
    """
    from scipy.optimize import brentq  # here: scipy.optimize is slow to import and only this root needs it

    a = np.asarray(a, dtype=float)
    q = a.size

    def excess(b: float) -> float:
        return float(np.sum(1.0 / (b + 2.0 * a))) - 1.0

    if excess(float(q)) >= 0.0:
        return float(q)
    if excess(1.0) <= 0.0:
        return 1.0
    return float(brentq(excess, 1.0, float(q), xtol=1e-12, rtol=1e-12))


def log_acceptance(s: np.ndarray, q: int, b: float) -> np.ndarray:
    """Log of the probability of accepting a proposal ``x`` with ``s = xᵀAx``: ``−s + (q/2) log(xᵀΩx) − log M*``.

    On the sphere ``xᵀΩx = ‖x‖² + 2s/b = 1 + 2s/b``; ``M* = exp(−(q − b)/2) (q/b)^{q/2}``
    bounds ``exp(−s)(1 + 2s/b)^{q/2}`` for every ``s > −b/2``, so the result is ``≤ 0``
    (up to rounding) for every ``b > 0``.
    """
    return -s + 0.5 * q * np.log1p(2.0 * s / b) + 0.5 * (q - b) - 0.5 * q * math.log(q / b)


class _Draws:
    """Standard normals and uniforms in (0, 1) from a NumPy Generator or from exact random bits."""

    __slots__ = ("_rng", "_bits")

    def __init__(self, rng) -> None:
        self._bits = rng if isinstance(rng, exact.RandomBits) else None
        self._rng = None if self._bits is not None else rng

    def uniform(self, size: int) -> np.ndarray:
        if self._bits is None:
            return self._rng.random(size)
        # 53 random bits, the middle of their cell: never 0 or 1.
        return (np.array([self._bits.bits(53) for _ in range(size)], dtype=float) + 0.5) * 2.0**-53

    def normal(self, shape: tuple[int, int]) -> np.ndarray:
        if self._bits is None:
            return self._rng.standard_normal(shape)
        count = shape[0] * shape[1]
        u1, u2 = self.uniform(count), self.uniform(count)  # Box–Muller
        return (np.sqrt(-2.0 * np.log(u1)) * np.cos(2.0 * math.pi * u2)).reshape(shape)


def sample_bingham(A, size: int | None = None, *, rng) -> np.ndarray:
    """Unit vectors with density ``∝ exp(uᵀAu)`` on the sphere, exactly (see the module docstring).

    Parameters
    ----------
    A : array_like of shape (q, q)
        Symmetric, finite.
    size : int or None
        Number of independent draws; None for one.
    rng : numpy.random.Generator or paceggm.privacy.exact.RandomBits
        Where the randomness comes from.

    Returns
    -------
    u : ndarray of shape (q,) or (size, q)
        Unit vectors (up to rounding).
    """
    A = _check_symmetric(A, "A")
    q = A.shape[0]
    values, vectors = np.linalg.eigh(0.5 * (A + A.T))
    a = values.max() - values  # exp(uᵀAu) ∝ exp(−xᵀ diag(a) x) in A's eigenvectors' coordinates
    b = envelope_b(a)
    scale = 1.0 / np.sqrt(1.0 + 2.0 * a / b)  # y = Ω^{−1/2} g has covariance Ω⁻¹
    draws = _Draws(rng)
    wanted = 1 if size is None else int(size)
    kept: list[np.ndarray] = []
    left = wanted
    while left > 0:
        y = draws.normal((_BATCH * left, q)) * scale
        x = y / np.linalg.norm(y, axis=1, keepdims=True)
        accepted = x[np.log(draws.uniform(x.shape[0])) < log_acceptance((x * x) @ a, q, b)]
        kept.append(accepted[:left])
        left -= kept[-1].shape[0]
    out = np.concatenate(kept) @ vectors.T
    return out[0] if size is None else out


def _check_symmetric(M, name: str) -> np.ndarray:
    M = np.asarray(M, dtype=float)
    if M.ndim != 2 or M.shape[0] != M.shape[1] or M.shape[0] == 0:
        raise ValueError(f"{name} must be a non-empty square matrix, got shape {M.shape}")
    if not np.all(np.isfinite(M)):
        raise ValueError(f"{name} must be finite")
    if not np.allclose(M, M.T, rtol=1e-12, atol=1e-12 * max(1.0, float(np.abs(M).max()))):
        raise ValueError(f"{name} must be symmetric")
    return M


def bingham_mechanism(matrix, *, rho: float, sensitivity: float, rng, noise: str = mechanisms.DEFAULT_NOISE):
    """A unit vector with density ``∝ exp(ε/(2Δ) · uᵀ M u)`` on the sphere, at zCDP cost ``rho``.

    The exponential mechanism with the score ``uᵀMu`` of sensitivity ``Δ``,
    ``ε = sqrt(8ρ)`` (ε-DP with bounded range, hence ``rho``-zCDP; see the module
    docstring), drawn by the exact rejection sampler :func:`sample_bingham`.

    Parameters
    ----------
    matrix : array_like of shape (q, q)
        The symmetric matrix ``M`` (the query: its top eigenvectors are likeliest).
    rho : float
        zCDP budget, > 0.
    sensitivity : float
        ``Δ``: ``|uᵀ(M − M')u| ≤ Δ`` for every unit ``u`` and neighbouring ``M, M'``.
    rng : numpy.random.Generator or None
        None only with ``noise="exact"`` (bits from :mod:`secrets`).
    noise : {"fast", "exact"}
        ``"exact"``: the draw's random bits from :class:`paceggm.privacy.exact.RandomBits`,
        the draw itself in doubles (no exact sampler on the sphere is known): warns
        :class:`~paceggm.exceptions.PrivacyLeakWarning`.

    Returns
    -------
    u : ndarray of shape (q,)
        A unit vector; ``u`` and ``−u`` are equally likely.

    Examples
    --------
    >>> u = bingham_mechanism(np.diag([1.0, 0.0]), rho=1e6, sensitivity=1e-3, rng=np.random.default_rng(0))
    >>> bool(abs(u[0]) > 0.999)
    True
    """
    exact_noise = mechanisms.check_noise(noise) == "exact"
    # Through the module, so an audit's mutation of the ε of the exponential mechanism reaches this one too.
    eps = mechanisms.exponential_mechanism_epsilon(rho)
    check_positive(sensitivity, "sensitivity")
    M = _check_symmetric(matrix, "matrix")
    if exact_noise:
        warnings.warn("noise='exact': the exponential mechanism on the sphere has no exact sampler; its draw is "
                      "made in doubles (from exact random bits), so its guarantee is the doubles' one, open to "
                      "the floating-point attacks noise='exact' rules out elsewhere", PrivacyLeakWarning, stacklevel=2)
        source = exact.RandomBits.of(rng)
    else:
        source = rng
    with np.errstate(over="ignore"):
        A = (eps / (2.0 * sensitivity)) * M
    if not np.all(np.isfinite(A)):
        raise ValueError("matrix times ε/(2·sensitivity) overflows a double")
    return sample_bingham(A, rng=source)

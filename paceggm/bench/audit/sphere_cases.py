"""Audit cases for the exponential mechanism on the sphere (EMCov's eigenvectors), and a broken control.

The mechanism (:func:`paceggm.privacy.bingham_mechanism`) releases a direction,
which the invocation audit does not redraw; here it runs as EMCov's first
eigenvector draw does, on ``Σ(Z) = ZᵀZ/n`` of ``Z = X/(sqrt(d) B)`` with the
score's sensitivity ``Δ = 1/n``, on two neighbours that move every score as far
as ``Δ`` allows in both directions: ``D``, ``n = 100`` rows ``(1, ±1)`` half each
(``Σ(Z) = I/2``: every direction equally likely), and ``D'``, one ``(1, −1)`` made
``(1, 1)``, which adds ``(z'z'ᵀ − zzᵀ)/n`` and so ``sin(2θ)/n`` to the score of
``u = (cos θ, sin θ)``: on ``D'`` the law of ``2θ`` is von Mises with concentration
``ε/2`` about ``π/2``. The statistic is ``sin 2θ = 2u₁u₂``. The claim is pure
``ε = sqrt(8ρ)``-DP (ρ = 1/2, ε = 2); the largest log-ratio of the two densities
here is ``ε/2 + ln I₀(ε/2) = 1.24`` (the mechanism's bound ε is attained only by
neighbours whose score on ``D`` already concentrates the law). The control is told
half the sensitivity: its true ε is twice the claim, and its log-ratio here
``ε + ln I₀(ε) = 2.82`` exceeds the claimed 2, at ``sin 2θ`` near −1.
"""

from __future__ import annotations

import math

from paceggm.privacy import bingham_mechanism, exponential_mechanism_epsilon

from .cases import AuditCase, _balanced_signs

_N, _RHO = 100, 0.5
# A draw costs about a millisecond (its seed, the rejection sampler in Python): 20,000 a side, as the exact
# samplers' cases run fewer draws than the doubles'. The control is caught from 3,000 (ε ≥ 2.3 > 2).
_DRAWS = 20_000
_NEIGHBOURS = (f"n={_N}, d=2, B=1: rows (1, ±1) half each (Σ(Z) = I/2) vs one (1, -1) made (1, 1) "
               "(every score moves by up to Δ = 1/n, both ways)")
_STATISTIC = "sin 2θ = 2u₁u₂ of the released direction"


def _second_moment(X):
    Z = X / math.sqrt(X.shape[1])  # Z = X/(sqrt(d) B), B = 1: EMCov's rows
    return Z.T @ Z / Z.shape[0]


def _sphere(X, rng) -> float:
    u = bingham_mechanism(_second_moment(X), rho=_RHO, sensitivity=1.0 / _N, rng=rng)
    return float(2.0 * u[0] * u[1])


def _sphere_half_sensitivity(X, rng) -> float:
    # The bug: the score's sensitivity halved (ε/Δ where ε/(2Δ) is due; true ε doubles).
    u = bingham_mechanism(_second_moment(X), rho=_RHO, sensitivity=0.5 / _N, rng=rng)
    return float(2.0 * u[0] * u[1])


_INPUTS = (_balanced_signs(_N, 0), _balanced_signs(_N, 1))
_EPSILON = exponential_mechanism_epsilon(_RHO)

SPHERE_CASES: tuple[AuditCase, ...] = (
    AuditCase("sphere", "exponential mechanism on the sphere (EMCov's eigenvector draw)", _NEIGHBOURS, _STATISTIC,
              _RHO, _EPSILON, False, _sphere, _INPUTS, draws=_DRAWS),
    AuditCase("sphere_half_sensitivity", "BROKEN: exponential mechanism on the sphere with half the sensitivity",
              _NEIGHBOURS, _STATISTIC, _RHO, _EPSILON, True, _sphere_half_sensitivity, _INPUTS, draws=_DRAWS),
)

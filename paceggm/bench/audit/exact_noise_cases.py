"""Audit cases for ``noise="exact"``: the exact Gaussian and exponential mechanisms, and a broken control each.

The same mechanisms, neighbours and statistics as the doubles' ``gaussian`` and
``exponential`` cases of :mod:`.cases`, drawn by :mod:`paceggm.privacy.exact`
(bits from each draw's seeded Generator). The broken controls miscalibrate by a
factor 2 through the public interface: the Gaussian run at four times the
claimed ρ (σ halved), the exponential mechanism told half the sensitivity
(ε doubled). The exact samplers cost tens of microseconds a draw in Python,
so these cases run fewer draws than the doubles' (about a second per
10,000 draws of one data set).
"""

from __future__ import annotations

from paceggm.privacy import exponential_mechanism, exponential_mechanism_epsilon, gaussian_mechanism

from .cases import (
    _DELTA,
    _EM_NEIGHBOURS,
    _EM_RHO,
    _ENTRY_NEIGHBOURS,
    _GAUSS_RHO,
    _N_ENTRY,
    _SCORES,
    _SCORES_PRIME,
    AuditCase,
    _entry,
    _one_record_apart,
)

_DRAWS = 30_000


def _exact_gaussian(X, rng) -> float:
    return gaussian_mechanism(_entry(X), rho=_GAUSS_RHO, sensitivity=_DELTA, rng=rng, noise="exact")[0]


def _exact_gaussian_half_noise(X, rng) -> float:
    # The bug: calibrated to 4ρ while ρ is claimed (σ halved).
    return gaussian_mechanism(_entry(X), rho=4.0 * _GAUSS_RHO, sensitivity=_DELTA, rng=rng, noise="exact")[0]


def _exact_exponential(scores, rng) -> float:
    return float(exponential_mechanism(scores, rho=_EM_RHO, sensitivity=_DELTA, rng=rng, noise="exact"))


def _exact_exponential_half_sensitivity(scores, rng) -> float:
    # The bug: the scores' sensitivity halved (true ε doubles).
    return float(exponential_mechanism(scores, rho=_EM_RHO, sensitivity=_DELTA / 2.0, rng=rng, noise="exact"))


_ENTRY_INPUTS = _one_record_apart((1.0, -1.0), (1.0, 1.0), _N_ENTRY)
_EM_EPSILON = exponential_mechanism_epsilon(_EM_RHO)

EXACT_NOISE_CASES: tuple[AuditCase, ...] = (
    AuditCase("gaussian_exact", "Gaussian mechanism, exact discrete noise", _ENTRY_NEIGHBOURS, "released value",
              _GAUSS_RHO, None, False, _exact_gaussian, _ENTRY_INPUTS, draws=_DRAWS),
    AuditCase("exponential_exact", "exponential mechanism, exact sampler", _EM_NEIGHBOURS, "selected index",
              _EM_RHO, _EM_EPSILON, False, _exact_exponential, (_SCORES, _SCORES_PRIME), draws=_DRAWS),
    AuditCase("gaussian_exact_half_noise", "BROKEN: exact Gaussian mechanism with half the noise",
              _ENTRY_NEIGHBOURS, "released value", _GAUSS_RHO, None, True, _exact_gaussian_half_noise,
              _ENTRY_INPUTS, draws=_DRAWS),
    AuditCase("exponential_exact_half_sensitivity", "BROKEN: exact exponential mechanism with half the sensitivity",
              _EM_NEIGHBOURS, "selected index", _EM_RHO, _EM_EPSILON, True, _exact_exponential_half_sensitivity,
              (_SCORES, _SCORES_PRIME), draws=_DRAWS),
)

"""The coordinate bound's rounding allowance, audited on a fit whose data reach it.

Under ``bound_check="raise"`` a value within ``BOUND_ULPS`` units in the last
place of the bound counts as inside it and is clipped to it before any
mechanism sees it (:func:`paceggm._validation.enforce_bound`), so the
sensitivities, which assume ``|x_ij| <= B``, hold. The correct case replaces a
row ``(1, -1)`` by ``(1, 1)`` overshooting the bound by that allowance: the fit
must read as private as on data inside the bound.

A four-ulp overshoot left unclipped moves a release by far too little for any
sampled test to see, so the broken control widens the allowance until the
breach shows: values up to ``2B`` admitted, and left unclipped. The replaced
row is then ``(2, 2)``, which moves the released entry 2.5 times as far as the
noise was calibrated for. (A four-ulp breach is the mutation run's to catch,
``paceggm._validation.x_enforce_bound__*``.)
"""

from __future__ import annotations

import numpy as np

import paceggm.base as _base
from paceggm._validation import BOUND_ULPS
from paceggm.baselines import SSPTight

from .cases import _BOUND, AuditCase, _balanced_signs, _mutated

__all__ = ["BOUND_CASES"]

_N, _RHO, _DRAWS = 100, 1.0, 5000
_OVERSHOOT = 1.0 + BOUND_ULPS * np.finfo(float).eps


def _released_entry(X, rng) -> float:
    return float(SSPTight(rho=_RHO, bound=_BOUND, random_state=rng).fit(X).covariance_[1, 0])


def _one_row_made(row) -> tuple[np.ndarray, np.ndarray]:
    """``D``: rows ``(1, ±1)`` half each; ``D'``: one ``(1, -1)`` replaced by ``row``."""
    D = _balanced_signs(_N, 0)
    D_prime = D.copy()
    D_prime[_N // 2] = row
    return D, D_prime


def _admits_up_to_twice_the_bound_unclipped(enforce_bound):
    # The bug: an allowance of a factor 2 instead of a few ulps, and what it admits passed on as it is.
    def mutant(X, bound, policy, **kw):
        if policy == "raise" and np.abs(X).max() <= 2.0 * bound:
            return X
        return enforce_bound(X, bound, policy, **kw)

    return mutant


def _broken_released_entry(X, rng) -> float:
    with _mutated(_base, "enforce_bound", _admits_up_to_twice_the_bound_unclipped):
        return _released_entry(X, rng)


_NEIGHBOURS = f"n={_N}, d=2, B=1: rows (1, ±1) half each vs one (1, -1) made "
_STATISTIC = "released covariance[1, 0]"

BOUND_CASES: tuple[AuditCase, ...] = (
    AuditCase("bound_rounding", f"SSPTight fit on data overshooting the bound by its {BOUND_ULPS}-ulp allowance "
              "(clipped)", _NEIGHBOURS + f"({_OVERSHOOT!r}, {_OVERSHOOT!r})", _STATISTIC, _RHO, None, False,
              _released_entry, _one_row_made((_OVERSHOOT, _OVERSHOOT)), draws=_DRAWS),
    AuditCase("bound_rounding_wide_unclipped", "BROKEN: SSPTight fit, the bound's allowance widened to 2B and "
              "what it admits left unclipped", _NEIGHBOURS + "(2, 2)", _STATISTIC, _RHO, None, True,
              _broken_released_entry, _one_row_made((2.0, 2.0)), draws=_DRAWS),
)

"""The private parameter search (:class:`paceggm.PrivateGridSearch`), audited on the choice it releases.

A whole search runs per draw: the random split, two candidate fits on the
training part, the selection on the hold-out part and the refit. The
statistic is the chosen index, which depends on the data only through the
candidate fits and the selection, so it costs ``(1 − f)ρ`` (the refit's ``fρ``
is spent on a release the statistic does not read). The candidates' scores
are made fixed functions of the hold-out part — ``+m`` for one candidate and
``−m`` for the other, ``m`` the mean of the first column clipped to
``[-1, 1]`` (sensitivity ``2/n_h``) — so that one replaced hold-out row moves
them apart by twice the declared sensitivity: the selection's worst case.

The broken control runs the selection at the search's whole ``ρ`` instead of
``(1 − f)ρ``: with ``f = 0.5`` the whole search then costs ``1.5ρ`` (the
hold-out part pays ``ρ``, then the refit ``0.5ρ``) while reporting ``ρ``, and
the chosen index costs ``ρ``, twice its claim.
"""

from __future__ import annotations

import numpy as np

import paceggm.selection as _selection
from paceggm import PrivateGridSearch
from paceggm.baselines import SSP

from .cases import AuditCase, _mutated

__all__ = ["SEARCH_CASES"]

# One replaced row lands in the hold-out part with probability n_h/n = 99/101: the audit sees the
# selection's worst case on almost every draw (on the others, D and D' give the same choice).
_N, _N_HOLD = 101, 99
_RHO, _REFIT_FRACTION = 1.0, 0.5
_CLAIM = (1.0 - _REFIT_FRACTION) * _RHO
_SENSITIVITY = 2.0 / _N_HOLD


def _signed_mean(est, X_hold, y_hold) -> float:
    """``+m`` for the candidate with bound 1, ``−m`` for the other: ``m`` moves by at most ``2/n_h`` a row."""
    m = float(np.mean(np.clip(X_hold[:, 0], -1.0, 1.0)))
    return m if est.bound == 1.0 else -m


def _chosen_index(X, rng) -> float:
    search = PrivateGridSearch(SSP(), {"bound": [1.0, 2.0]}, rho=_RHO, refit_fraction=_REFIT_FRACTION,
                               holdout=_N_HOLD / _N, scoring=_signed_mean, score_sensitivity=_SENSITIVITY,
                               random_state=rng)
    return float(search.fit(X).best_index_)


def _selection_at_whole_rho(exponential_mechanism):
    # The bug: the selection is charged (1 − f)ρ but run at ρ.
    return lambda scores, *, rho, sensitivity, rng, **kw: exponential_mechanism(scores, rho=_RHO, sensitivity=sensitivity,
                                                                               rng=rng, **kw)


def _broken_chosen_index(X, rng) -> float:
    with _mutated(_selection, "exponential_mechanism", _selection_at_whole_rho):
        return _chosen_index(X, rng)


def _inputs():
    """First column: on ``D`` two rows at 1 (m = 2/n_h), on ``D'`` one of them at -1 (m = 0), the rest 0.

    On ``D`` the search's selection picks candidate 1 with probability σ(−2) ≈ 0.12 (σ(−2√2) ≈ 0.06
    broken), on ``D'`` with 1/2: the event the bound reads.
    """
    D = np.zeros((_N, 1))
    D[:2] = 1.0
    D_prime = D.copy()
    D_prime[0] = -1.0
    return D, D_prime


_NEIGHBOURS = (f"n={_N}, d=1, B=1, {_N_HOLD} hold-out rows: two rows 1, the rest 0 vs one of the two made -1 "
               "(scores ±m, m the hold-out mean, move apart by 2Δ)")
_MECHANISM = f"PrivateGridSearch (ρ={_RHO:g}, f={_REFIT_FRACTION:g}): 2 SSP candidates, selection on the hold-out"

SEARCH_CASES: tuple[AuditCase, ...] = (
    AuditCase("private_grid_search", _MECHANISM, _NEIGHBOURS, "chosen index", _CLAIM, None, False,
              _chosen_index, _inputs(), draws=5000),
    AuditCase("private_grid_search_selection_at_rho", f"BROKEN: {_MECHANISM}, selection run at ρ, not (1 − f)ρ",
              _NEIGHBOURS, "chosen index", _CLAIM, None, True, _broken_chosen_index, _inputs(), draws=5000),
)

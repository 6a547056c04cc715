"""The audit's PrivateGridSearch cases: worst-case neighbours, registered, and a broken control that shows."""

from __future__ import annotations

import numpy as np

from paceggm.bench.audit import CASES, audit_case
from paceggm.bench.audit import search_cases as sc

# Draws per data set: a whole search per draw (a few ms), so a few hundred; the full audit runs case.draws.
DRAWS = 300


def test_the_cases_are_registered_and_their_neighbours_differ_in_one_row():
    assert {c.name for c in sc.SEARCH_CASES} <= {c.name for c in CASES}
    for case in sc.SEARCH_CASES:
        D, D_prime = case.inputs
        assert D.shape == D_prime.shape == (sc._N, 1) and np.abs(D).max() <= 1.0 and np.abs(D_prime).max() <= 1.0
        assert np.count_nonzero(np.any(D != D_prime, axis=1)) == 1
        assert case.rho == 0.5  # the chosen index: the selection's (1 - f)ρ, not the search's ρ


def test_the_scores_move_apart_by_twice_the_declared_sensitivity():
    D, D_prime = sc.SEARCH_CASES[0].inputs
    hold = slice(0, sc._N_HOLD)  # a hold-out part holding the replaced row
    for bound in (1.0, 2.0):
        candidate = sc.SSP(bound=bound)
        moved = sc._signed_mean(candidate, D[hold], None) - sc._signed_mean(candidate, D_prime[hold], None)
        assert abs(moved) == sc._SENSITIVITY  # each score by the full sensitivity, in opposite directions
    assert sc._signed_mean(sc.SSP(bound=1.0), D[hold], None) == -sc._signed_mean(sc.SSP(bound=2.0), D[hold], None)


def test_the_correct_search_shows_no_violation_and_the_selection_at_rho_a_larger_loss():
    correct, broken = (audit_case(case, DRAWS, power_reps=0) for case in sc.SEARCH_CASES)
    assert not correct.exceeded and correct.bound.rho > 0
    assert broken.bound.rho > correct.bound.rho

"""The opt-in counters of a reconstruction's work (paceggm.reconstruction.counters)."""

from __future__ import annotations

import numpy as np
import pytest

from paceggm import pace_ggm
from paceggm.reconstruction import counters
from paceggm.reconstruction.counters import PIECES, Counters


def _lowrank(d: int, n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3)) @ rng.normal(size=(3, d)) + rng.normal(size=(n, d))
    return X / np.abs(X).max(axis=0)


def test_a_fit_is_counted_only_while_counters_are_active():
    X = _lowrank(40, 2000, 0)
    solves = []
    with Counters(on_solve=lambda p, init, sol, decs: solves.append((p.d, sol.mu, list(decs)))) as c:
        assert counters.active() is c
        res = pace_ggm(X, rho=10.0, random_state=1, solver="newton_pcg")
    assert counters.active() is None
    assert c.calls["reconstruction updates"] == res.n_rounds > 0
    assert c.calls["solver"] == len(solves) == len(c.decrements) > 0
    assert [s[2] for s in solves] == c.decrements  # (CG directions, and their decrements: blocks of 500+ entries)
    assert c.calls["inverses of P"] > 0 and c.calls["factorisations of P"] > 0
    assert set(c.calls) <= set(PIECES) and set(c.seconds) == set(c.calls)
    assert all(s >= 0 for s in c.seconds.values())
    # Outside the block nothing is counted, and the answer does not depend on being counted.
    again = pace_ggm(X, rho=10.0, random_state=1, solver="newton_pcg")
    assert c.calls["reconstruction updates"] == res.n_rounds
    np.testing.assert_array_equal(again.covariance, res.covariance)


def test_counters_are_left_inactive_when_the_fit_fails():
    with pytest.raises(ValueError), Counters():
        pace_ggm(np.full((10, 3), np.nan), rho=1.0)
    assert counters.active() is None


def test_nested_counters_count_apart_and_one_cannot_be_entered_twice():
    X = _lowrank(12, 500, 2)
    with Counters() as outer:
        with Counters() as inner:
            pace_ggm(X, rho=1.0, random_state=0, solver="newton_pcg")
        assert counters.active() is outer
        with pytest.raises(RuntimeError, match="already active"), inner, inner:
            pass
    assert inner.calls["reconstruction updates"] > 0 and not outer.calls


def test_an_unknown_piece_is_refused():
    with pytest.raises(ValueError, match="unknown piece"):
        counters.counted("everything")
    with pytest.raises(ValueError, match="unknown piece"):
        counters.piece("everything")


def test_a_counted_round_still_warns_at_its_caller():
    """The round update is counted as a context, not through a wrapper: its warning names the estimator."""
    from paceggm.exceptions import ConvergenceWarning

    X = _lowrank(8, 500, 3)
    with Counters() as c, pytest.warns(ConvergenceWarning) as caught:
        pace_ggm(X, rho=10.0, random_state=0, solver="pgd0", solver_options={"maxiter": 2})
    assert c.calls["reconstruction updates"] > 0
    assert {w.filename for w in caught} == {__import__("paceggm.estimator").estimator.__file__}

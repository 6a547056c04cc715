"""Forced pairs: entries fixed in advance, measured right after the diagonal with budget the ledger charges.

The option exists to test a cause (is the regression gap y's unmeasured row?); it must spend exactly its
share, measure the pairs first and in order, change nothing when absent, and refuse bad pairs before any
budget is spent.
"""

from __future__ import annotations

import math
import time

import numpy as np
import pytest

from paceggm import PACEGGM, pace_ggm
from paceggm.baselines import PACEGGMRegression
from paceggm.privacy import ZCDPAccountant, entry_sensitivity
from paceggm.reconstruction import SOLVERS, SolverSpec

from conftest import bounded_gaussian


def _same_fit(a, b):
    np.testing.assert_array_equal(a.covariance_, b.covariance_)
    assert a.ledger_ == b.ledger_ and a.measurements_ == b.measurements_


def test_the_fit_reports_the_solver_time_of_the_forced_pairs_and_of_the_rounds(small_data):
    """``solve_time`` adds up every solve: each forced pair's (here a solver that sleeps 20 ms a call, so
    three forced solves take at least 60 ms) and each round's, and nothing else (at most the fit's wall time)."""
    nap = 0.02
    auto = SOLVERS["auto"]

    def slow(p, *, init=None, **options):
        time.sleep(nap)
        return auto.solve(p, init=init, **options)

    SOLVERS["slow_auto"] = SolverSpec(slow, max_entropy=True, warm_start=True)
    try:
        start = time.perf_counter()
        res = pace_ggm(small_data, rho=1.0, solver="slow_auto", max_rounds=1,
                       forced_pairs=[(1, 0), (2, 1), (3, 2)], random_state=0)
        wall = time.perf_counter() - start
    finally:
        del SOLVERS["slow_auto"]
    forced = res.solve_time - sum(r.solve_time for r in res.history)
    assert 3 * nap <= forced and res.solve_time <= wall


def test_without_forced_pairs_the_fit_is_the_published_one_bit_for_bit(small_data):
    plain = PACEGGM(1.0, random_state=3).fit(small_data)
    for none in (None, [], ()):
        _same_fit(PACEGGM(1.0, forced_pairs=none, random_state=3).fit(small_data), plain)
    _same_fit(PACEGGM(1.0, forced_fraction=0.6, random_state=3).fit(small_data), plain)  # ignored without pairs


@pytest.mark.parametrize("sampler", ["gumbel", "rows"])
def test_forced_pairs_are_measured_first_in_order_and_charged_exactly(small_data, sampler):
    n, d = small_data.shape
    rho, alpha, frac = 2.0, 0.3, 0.4
    pairs = [(0, 4), (3, 1), (2, 0)]  # either orientation: stored as (j, k), j > k
    res = pace_ggm(small_data, rho=rho, alpha=alpha, forced_pairs=pairs, forced_fraction=frac, sampler=sampler,
                   random_state=7)
    ms = res.measurements
    assert [m.entry for m in ms[:d]] == [(j, j) for j in range(d)]
    assert [m.entry for m in ms[d:d + 3]] == [(4, 0), (3, 1), (2, 0)]
    delta = entry_sensitivity(n=n, bound=1.0)
    for m in ms[d:d + 3]:
        assert m.rho == frac * rho / 3
        assert m.sigma == pytest.approx(delta / math.sqrt(2 * m.rho), rel=1e-15)
    forced = [c for c in res.charges if c.purpose == "initialise: forced pair"]
    assert [c.rho for c in forced] == [m.rho for m in ms[d:d + 3]]
    # every release is charged once, in the order it is made, and the whole budget is spent, never more
    released = [c for c in res.charges if c.purpose != "select"]
    assert [c.rho for c in released] == [m.rho for m in ms]
    assert math.fsum(c.rho for c in res.charges) == pytest.approx(rho, rel=1e-12)
    assert res.rho_spent <= rho
    # the rounds start after them, from what is left: (1 − α − fraction) ρ over T rounds
    first = res.history[0]
    T = d * (d - 1)
    assert first.rho_select + first.rho_measure == pytest.approx((1 - alpha - frac) * rho / T, rel=1e-12)
    assert all(res.pattern[j, k] for j, k in [(4, 0), (3, 1), (2, 0)])


def test_the_estimator_reports_them_and_an_accountant_is_charged_rho(small_data):
    acc = ZCDPAccountant(1.0)
    est = PACEGGM(1.0, accountant=acc, forced_pairs=[(1, 0)], forced_fraction=0.5, random_state=0).fit(small_data)
    assert est.measurements_[small_data.shape[1]].entry == (1, 0)
    assert acc.spent == pytest.approx(1.0) and est.rho_spent_ <= 1.0
    assert math.fsum(c.rho for c in est.ledger_) == pytest.approx(est.rho_spent_, rel=1e-12)


@pytest.mark.parametrize("pairs, match", [
    ([(0, 0)], "diagonal"), ([(0, 5)], "outside"), ([(-1, 2)], "outside"), ([(1, 0), (0, 1)], "repeats"),
    ([(1.0, 0)], "integer"), ([(1, 0, 2)], "pairs"), ([3], "pairs"),
])
def test_bad_pairs_are_refused_before_any_budget_is_spent(small_data, pairs, match):
    acc = ZCDPAccountant(1.0)
    with pytest.raises(ValueError, match=match):
        PACEGGM(1.0, accountant=acc, forced_pairs=pairs, random_state=0).fit(small_data)
    assert acc.spent == 0.0
    with pytest.raises(ValueError, match=match):
        pace_ggm(small_data, rho=1.0, forced_pairs=pairs)


@pytest.mark.parametrize("fraction, alpha", [(0.0, 0.3), (1.0, 0.3), (0.7, 0.3), (0.5, 0.6)])
def test_a_share_that_leaves_the_rounds_nothing_is_refused(small_data, fraction, alpha):
    acc = ZCDPAccountant(1.0)
    with pytest.raises(ValueError, match="forced_fraction"):
        PACEGGM(1.0, accountant=acc, alpha=alpha, forced_pairs=[(1, 0)], forced_fraction=fraction).fit(small_data)
    assert acc.spent == 0.0
    with pytest.raises(TypeError, match="forced_pairs"):
        PACEGGM(1.0, forced_pairs="10").fit(small_data)


def _regression_data(seed=0, n=3000, d=6):
    Z = bounded_gaussian(n, d + 1, seed)
    return Z[:, :d], Z[:, d]


def test_regression_measures_y_row_first_with_adassp_share():
    X, y = _regression_data()
    n, d = X.shape
    rho = 0.9
    reg = PACEGGMRegression(rho, measure_target_first=True, random_state=1).fit(X, y)
    ms = reg.pace_ggm_.measurements_
    assert [m.entry for m in ms[d + 1:2 * d + 1]] == [(d, j) for j in range(d)]
    inner = rho - rho / 3  # what PACE-GGM gets after the ridge
    assert all(m.rho == pytest.approx(0.5 * inner / d, rel=1e-12) for m in ms[d + 1:2 * d + 1])
    assert math.fsum(m.rho for m in ms[d + 1:2 * d + 1]) == pytest.approx(rho / 3, rel=1e-12)  # AdaSSP's Xᵀy share
    assert reg.pace_ggm_.pattern_[d, :d].all()
    # the regression's ledger: the ridge, then every charge of PACE-GGM once; all of ρ, never more
    assert reg.ledger_[0].purpose.startswith("ridge")
    assert [c.rho for c in reg.ledger_[1:]] == [c.rho for c in reg.pace_ggm_.ledger_]
    assert sum(c.purpose == "pace-ggm: initialise: forced pair" for c in reg.ledger_) == d
    assert math.fsum(c.rho for c in reg.ledger_) == pytest.approx(rho, rel=1e-12) and reg.rho_spent_ <= rho


def test_regression_default_is_unchanged_and_the_option_is_checked():
    X, y = _regression_data(1)
    a = PACEGGMRegression(0.5, random_state=2).fit(X, y)
    b = PACEGGMRegression(0.5, measure_target_first=False, target_fraction=0.9, random_state=2).fit(X, y)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    assert a.ledger_ == b.ledger_
    with pytest.raises(TypeError, match="measure_target_first"):
        PACEGGMRegression(0.5, measure_target_first="yes").fit(X, y)
    acc = ZCDPAccountant(1.0)
    with pytest.raises(ValueError, match="forced_fraction"):
        PACEGGMRegression(1.0, accountant=acc, measure_target_first=True, target_fraction=0.8).fit(X, y)
    assert acc.spent == 0.0


def test_measuring_y_row_first_recovers_a_strong_coefficient():
    # y = x0: with its row measured, θ̂ puts its weight on x0 (a known answer, not only a count)
    rng = np.random.default_rng(5)
    X = rng.uniform(-0.5, 0.5, size=(20000, 4))
    y = X[:, 0].copy()
    reg = PACEGGMRegression(5.0, measure_target_first=True, random_state=3).fit(X, y)
    assert reg.coef_[0] > 0.8 and np.all(np.abs(reg.coef_[1:]) < 0.2)

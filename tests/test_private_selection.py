"""PrivateGridSearch: the search costs the stated ρ, its score sensitivity holds, it finds a clearly better setting.

The accounting is read off what each step receives (a recording estimator, a spy on the
exponential mechanism and on the scores): the split is a partition, each candidate fit, the
selection and the refit get their share, and every accountant given is charged the whole ρ once.
These run under mutation testing: keep them small.
"""

import gc
import math
import pickle
import re
import warnings
from fractions import Fraction
from types import SimpleNamespace

import numpy as np
import pytest

from paceggm import PACEGGM, PrivateGridSearch, selection
from paceggm.baselines import SSP, AdaSSP
from paceggm.exceptions import AccountantUnavailableError, BudgetExceededError, PrivacyBudgetWarning
from paceggm.privacy import (
    Charge,
    FileZCDPAccountant,
    ZCDPAccountant,
    ZCDPLedger,
    approx_dp_to_zcdp,
    exponential_mechanism,
    full_sensitivity,
)
from paceggm.selection import frobenius_scores

from conftest import bounded_gaussian


def _correlated(n=20000, d=4, seed=0):
    # every pair strongly correlated: measuring more entries is clearly better
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, 1))
    X = 0.9 * z + 0.3 * rng.normal(size=(n, d))
    return np.clip(X / 4.0, -1, 1)


def test_search_spends_exactly_its_budget_and_charges_the_accountant_up_front():
    acc = ZCDPAccountant(1.0)
    search = PrivateGridSearch(PACEGGM(), {"alpha": [0.1, 0.3], "beta": [0.1, 0.5]}, rho=0.75, accountant=acc,
                               random_state=0).fit(bounded_gaussian(3000, 4, seed=1))
    assert acc.spent == 0.75 and [c.purpose for c in acc.charges] == ["PrivateGridSearch.fit"]
    total = sum((Fraction(c.rho) for c in search.ledger_), Fraction(0))
    assert total <= Fraction(0.75) and float(Fraction(0.75) - total) < 1e-15
    assert search.candidate_rho_ == 0.75 * 0.5 / 4  # exact here; rounded down in general
    assert search.best_estimator_.rho_spent_ <= 0.75 * 0.5 and search.best_params_ in search.candidates_
    # nothing scored on the hold-out part is kept
    assert not [k for k in vars(search) if "score" in k and k.endswith("_")]
    with pytest.raises(BudgetExceededError):
        PrivateGridSearch(PACEGGM(), {"alpha": [0.1]}, rho=0.5, accountant=acc).fit(bounded_gaussian(500, 3, 0))
    assert acc.spent == 0.75


def test_epsilon_delta_budget_and_no_refit():
    search = PrivateGridSearch(SSP(), {"bound": [1.0, 2.0]}, epsilon=1.0, delta=1e-6, refit_fraction=0.0,
                               random_state=0).fit(bounded_gaussian(2000, 3, seed=2))
    assert search.rho_spent_ == approx_dp_to_zcdp(1.0, 1e-6)
    assert search.best_estimator_.rho_spent_ == search.candidate_rho_  # the chosen candidate fit itself


def test_finds_the_clearly_better_setting():
    X = _correlated()
    picks = [PrivateGridSearch(PACEGGM(), {"max_rounds": [1, None]}, rho=20.0, random_state=seed).fit(X).best_params_
             for seed in range(6)]
    assert all(p["max_rounds"] is None for p in picks)


def test_frobenius_score_sensitivity_holds_for_worst_case_rows():
    rng = np.random.default_rng(3)
    X = rng.uniform(-1, 1, size=(200, 5))
    fits = [SSP(rho=rho, random_state=0).fit(X) for rho in (0.01, 1.0, 100.0)]
    hold = rng.uniform(-1, 1, size=(50, 5))
    base, sens = frobenius_scores(fits, hold, bound=1.0)
    assert sens == full_sensitivity(n=50, d=5, bound=1.0)
    worst = 0.0
    for _ in range(300):
        other = hold.copy()
        other[rng.integers(50)] = rng.choice([-1.0, 1.0], size=5) * rng.uniform(0.9, 3.0, size=5)  # clipped to ±1
        worst = max(worst, np.abs(frobenius_scores(fits, other, bound=1.0)[0] - base).max())
    assert 0.3 * sens < worst <= sens


def test_callable_scoring_for_a_regressor():
    rng = np.random.default_rng(4)
    X = rng.uniform(-1, 1, size=(4000, 3)) * 0.5
    y = np.clip(X @ np.array([0.5, -0.3, 0.2]), -1, 1)

    def neg_mae(est, X_h, y_h):  # |y − ŷ| clipped to [0, 2]: changes by at most 2/n_h per replaced row
        return -np.mean(np.minimum(np.abs(y_h - est.predict(X_h)), 2.0))

    search = PrivateGridSearch(AdaSSP(), {"failure_prob": [0.05, 0.2]}, rho=2.0, scoring=neg_mae,
                               score_sensitivity=2.0 / 2000, random_state=0).fit(X, y)
    assert search.best_params_["failure_prob"] in (0.05, 0.2) and search.rho_spent_ <= 2.0


def _zero(est, X_hold, y_hold):
    return 0.0


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(param_grid={"rho": [1.0]}), ValueError, "may not set"),
    (dict(param_grid={"random_state": [0]}), ValueError, "may not set"),
    (dict(param_grid={"noise": ["fast", "exact"]}), ValueError, re.escape("may not set ['noise']")),
    (dict(estimator=PACEGGM(noise="exactly")), ValueError, "^noise must be one of"),
    (dict(param_grid={"alpha": [0.3, 2.0]}), ValueError, "alpha"),
    (dict(param_grid={}), None, None),
    (dict(param_grid=[]), ValueError, "^param_grid has no candidate$"),
    (dict(refit_fraction=1.0), ValueError, "refit_fraction must be in"),
    (dict(refit_fraction=False), ValueError, "refit_fraction must be in"),
    (dict(refit_fraction="0.5"), ValueError, "refit_fraction must be in"),
    (dict(holdout=0.0), ValueError, "holdout must be in"),
    (dict(holdout=1.0), ValueError, "holdout must be in"),
    (dict(holdout="0.5"), ValueError, "holdout must be in"),
    (dict(holdout=0.0005), ValueError, "leaves 0 hold-out and 500 training rows of 500: both parts need rows"),
    (dict(holdout=0.998), ValueError, "leaves 499 hold-out and 1 training rows of 500: both parts need rows"),
    (dict(scoring="r2"), ValueError, "scoring"),
    (dict(scoring=_zero), ValueError,
     re.escape("a callable scoring needs score_sensitivity (its change when one hold-out row is replaced)")),
    (dict(scoring=_zero, score_sensitivity=0.0), ValueError, "score_sensitivity must be a finite number > 0, got 0.0"),
    (dict(scoring=_zero, score_sensitivity=-1.0), ValueError, "score_sensitivity must be a finite number > 0"),
    (dict(scoring=_zero, score_sensitivity=math.inf), ValueError, "score_sensitivity must be a finite number > 0"),
    (dict(estimator=AdaSSP()), ValueError,
     re.escape("scoring='frobenius' scores covariance estimators; for AdaSSP pass scoring=callable")),
    (dict(estimator=object()), TypeError, "private estimator, got object"),
    (dict(estimator=PrivateGridSearch(SSP(), {}), scoring=_zero, score_sensitivity=1.0), TypeError,
     "^PrivateGridSearch declares no data bound: the search checks the data against each candidate's bound "
     "before anything is spent$"),
    # d·B² overflows at d = 3 (not at d = 1): refused by the search, not by a candidate after paying
    (dict(estimator=SSP(), param_grid={"bound": [1.0, 3.2e153]}), ValueError, "too large"),
])
def test_bad_settings_are_refused_before_anything_is_spent(kwargs, error, match):
    acc, inner = ZCDPAccountant(1.0), ZCDPAccountant(1.0)
    params = dict(estimator=PACEGGM(accountant=inner), param_grid={"alpha": [0.3]}, rho=0.5, accountant=acc)
    params.update(kwargs)
    if error is None:  # an empty grid dict is one candidate: the estimator as given
        PrivateGridSearch(**params, random_state=0).fit(bounded_gaussian(500, 3, 0))
        assert acc.spent == inner.spent == 0.5
        return
    with pytest.raises(error, match=match):
        PrivateGridSearch(**params).fit(bounded_gaussian(500, 3, 0))
    assert acc.spent == inner.spent == 0.0


def test_data_outside_a_candidates_bound_is_refused_before_paying():
    acc = ZCDPAccountant(1.0)
    with pytest.raises(ValueError, match="outside"):
        PrivateGridSearch(SSP(), {"bound": [1.0, 3.0]}, rho=0.5, accountant=acc).fit(bounded_gaussian(500, 3, 0) * 2)
    assert acc.spent == 0.0


# --- the search's accounting, read off what each step receives ----------------------------------

class _Recorder(SSP):
    """SSP that records each fit's rows and budget (class-level: the search fits clones of it)."""

    fits: list = []

    def fit(self, X, y=None):
        _Recorder.fits.append((self, np.array(X), self.rho))
        return super().fit(X, y)


@pytest.fixture
def recorded(monkeypatch):
    """The fits of ``_Recorder`` clones and the calls of the selection, in order."""
    monkeypatch.setattr(_Recorder, "fits", [])
    picks = []

    def spy(scores, *, rho, sensitivity, rng, noise):
        best = exponential_mechanism(scores, rho=rho, sensitivity=sensitivity, rng=rng, noise=noise)
        picks.append(dict(scores=np.array(scores), rho=rho, sensitivity=sensitivity, best=best, rng=rng, noise=noise))
        return best

    monkeypatch.setattr(selection, "exponential_mechanism", spy)
    return _Recorder.fits, picks


def _rows(n=60, d=3, seed=0):
    """Rows told apart by their first value."""
    X = np.random.default_rng(seed).uniform(-1, 1, size=(n, d))
    X[:, 0] = np.linspace(-0.99, 0.99, n)
    return X


def _ids(X):
    return X[:, 0].tolist()


@pytest.mark.parametrize("scoring", ["frobenius", "callable"])
def test_the_candidates_and_the_scoring_see_disjoint_parts_that_cover_every_row(monkeypatch, recorded, scoring):
    fits, _ = recorded
    X, holds = _rows(n=61), []
    if scoring == "frobenius":
        def spy_scores(fitted, X_hold, *, bound):
            holds.append(np.array(X_hold))
            return frobenius_scores(fitted, X_hold, bound=bound)

        monkeypatch.setattr(selection, "frobenius_scores", spy_scores)
        kw = {}
    else:
        def neg_trace(est, X_hold, y_hold):
            holds.append(np.array(X_hold))
            return -float(np.trace(est.covariance_))

        kw = dict(scoring=neg_trace, score_sensitivity=1.0)
    PrivateGridSearch(_Recorder(), {"bound": [1.0, 2.0]}, rho=1.0, holdout=0.3, random_state=0, **kw).fit(X)
    (_, train, _), (_, train_2, _), (_, refit, _) = fits
    hold = holds[0]
    assert all(np.array_equal(h, hold) for h in holds) and np.array_equal(train_2, train)
    assert len(hold) == round(0.3 * 61) and len(train) == 61 - len(hold)  # a row in both parts would show here
    assert sorted(_ids(train) + _ids(hold)) == _ids(X)  # disjoint, and together every row once
    assert np.array_equal(refit, X)  # the refit: every row


@pytest.mark.parametrize("rho, f, m", [(0.3, 0.25, 3), (1.0, 0.5, 2), (0.3, 0.0, 7)])
def test_each_step_gets_its_share_and_the_shares_add_up_to_rho_exactly(recorded, rho, f, m):
    # (0.3, 0.25, 3) and (0.3, 0.0, 7): (1 - f)ρ/m rounded to nearest is above its exact value
    fits, picks = recorded
    X = _rows()
    search = PrivateGridSearch(_Recorder(), {"bound": [1.0 + k / 4 for k in range(m)]}, rho=rho, refit_fraction=f,
                               random_state=0).fit(X)
    stage = Fraction((1.0 - f) * rho)
    candidates, refits = fits[:m], fits[m:]
    each = candidates[0][2]
    assert all(r == each for _, _, r in candidates) and each == search.candidate_rho_
    # the largest float whose m-fold sum stays within the stage
    assert m * Fraction(each) <= stage < m * Fraction(math.nextafter(each, math.inf))
    assert all(est.rho_spent_ <= each for est, _, _ in candidates)
    assert [p["rho"] for p in picks] == [float(stage)]  # the selection at (1 - f)ρ, not ρ
    assert search.best_index_ == picks[0]["best"] and search.best_params_ == search.candidates_[picks[0]["best"]]
    purpose = f"{m} candidate fits (training part) ∥ selection (hold-out part)"
    if f == 0:
        assert not refits and search.best_estimator_ is candidates[picks[0]["best"]][0]
        assert search.ledger_ == (Charge(float(stage), purpose),)
    else:
        ((final, _, refit_rho),) = refits
        assert final is search.best_estimator_ and final.bound == search.best_params_["bound"]
        assert stage + Fraction(refit_rho) <= Fraction(rho) < stage + Fraction(math.nextafter(refit_rho, math.inf))
        assert search.ledger_ == (Charge(float(stage), purpose),
                                  Charge(refit_rho, "refit of the chosen setting (all rows)"))
    total = sum((Fraction(c.rho) for c in search.ledger_), Fraction(0))
    assert Fraction(search.rho_spent_) == total <= Fraction(rho)


def test_the_selection_scores_the_candidates_at_the_hold_out_sensitivity(monkeypatch, recorded):
    fits, picks = recorded
    holds = []

    def spy_scores(fitted, X_hold, *, bound):
        holds.append((np.array(X_hold), bound))
        return frobenius_scores(fitted, X_hold, bound=bound)

    monkeypatch.setattr(selection, "frobenius_scores", spy_scores)
    X = _rows(n=50)
    PrivateGridSearch(_Recorder(), {"bound": [2.0, 1.0, 1.5]}, rho=1.0, holdout=0.4, random_state=0).fit(X)
    ((X_hold, bound),) = holds
    assert bound == 2.0  # the largest bound: every candidate's scores are clipped to a bound it declared
    scores, sensitivity = frobenius_scores([est for est, _, _ in fits[:3]], X_hold, bound=2.0)
    assert np.array_equal(picks[0]["scores"], scores) and picks[0]["sensitivity"] == sensitivity
    assert sensitivity == full_sensitivity(n=20, d=3, bound=2.0)

    def neg_trace(est, X_h, y_h):
        return -float(np.trace(est.covariance_))

    picks.clear()
    PrivateGridSearch(SSP(), {"bound": [1.0, 2.0]}, rho=1.0, scoring=neg_trace, score_sensitivity=0.25,
                      random_state=0).fit(X)
    assert picks[0]["sensitivity"] == 0.25


def test_every_accountant_is_charged_the_whole_search_once():
    X, grid = _rows(), {"bound": [1.0, 2.0]}
    outer, inner = ZCDPAccountant(1.0), ZCDPAccountant(1.0)
    PrivateGridSearch(SSP(accountant=inner), grid, rho=0.6, accountant=outer, random_state=0).fit(X)
    assert outer.charges == inner.charges == (Charge(0.6, "PrivateGridSearch.fit"),)
    # a budget of 1 shared by the search and one more fit: the fit is refused, not spent
    with pytest.raises(BudgetExceededError):
        SSP(rho=0.6, accountant=inner, random_state=0).fit(X)
    assert inner.spent == 0.6
    alone = ZCDPAccountant(1.0)  # the tuned estimator's accountant alone, refitted: charged each time, no warning
    search = PrivateGridSearch(SSP(accountant=alone), grid, rho=0.25, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        search.fit(X)
        search.fit(X)
    assert alone.charges == (Charge(0.25, "PrivateGridSearch.fit"),) * 2 and search.rho_spent_ == 0.5


def test_one_budget_given_twice_is_charged_once(tmp_path):
    X, grid = _rows(), {"bound": [1.0, 2.0]}
    acc = ZCDPAccountant(1.0)
    PrivateGridSearch(SSP(accountant=acc), grid, rho=0.6, accountant=acc, random_state=0).fit(X)
    assert acc.charges == (Charge(0.6, "PrivateGridSearch.fit"),)
    path = tmp_path / "budget.jsonl"
    inner, outer = FileZCDPAccountant.create(path, 1.0), FileZCDPAccountant(tmp_path / "." / "budget.jsonl")  # one ledger
    PrivateGridSearch(SSP(accountant=inner), grid, rho=0.6, accountant=outer, random_state=0).fit(X)
    assert outer.charges == (Charge(0.6, "PrivateGridSearch.fit"),)
    other = FileZCDPAccountant.create(tmp_path / "other.jsonl", 1.0)
    PrivateGridSearch(SSP(accountant=other), grid, rho=0.3, accountant=outer, random_state=0).fit(X)
    assert other.spent == 0.3 and outer.spent == 0.8999999999999999  # 0.6 + 0.3, rounded down


def _detached():
    data = pickle.dumps(ZCDPAccountant(1.0))
    gc.collect()  # the original is gone: the copy cannot reach its budget
    return pickle.loads(data)


@pytest.mark.parametrize("inner_kind, error", [
    ("short", BudgetExceededError), ("short_file", BudgetExceededError), ("detached", AccountantUnavailableError),
    ("ledger", TypeError),
])
def test_a_refusal_by_either_accountant_charges_neither(tmp_path, inner_kind, error):
    X, grid = _rows(), {"bound": [1.0, 2.0]}
    outer = ZCDPAccountant(1.0)
    inner = {"short": lambda: ZCDPAccountant(0.5), "short_file": lambda: FileZCDPAccountant.create(tmp_path / "b.jsonl", 0.5),
             "detached": _detached, "ledger": lambda: ZCDPLedger(1.0)}[inner_kind]()
    with pytest.raises(error, match="nothing|ledger"):
        PrivateGridSearch(SSP(accountant=inner), grid, rho=0.6, accountant=outer, random_state=0).fit(X)
    assert outer.spent == 0.0 and inner.spent == 0.0
    short = r"charging rho=0\.6 for 'PrivateGridSearch\.fit' would exceed the budget 0\.5 of .* by 0\.1; nothing was charged"
    with pytest.raises(BudgetExceededError, match=short):  # the outer one short: neither either
        PrivateGridSearch(SSP(accountant=outer), grid, rho=0.6, accountant=ZCDPAccountant(0.5)).fit(X)
    assert outer.spent == 0.0


def test_a_budget_is_refused_only_when_it_cannot_pay():
    X, grid = _rows(), {"bound": [1.0, 2.0]}
    acc, outer = ZCDPAccountant(1.0), ZCDPAccountant(1.0)
    acc.charge(0.25, "earlier")
    with pytest.raises(BudgetExceededError):
        PrivateGridSearch(SSP(accountant=acc), grid, rho=0.8, accountant=outer).fit(X)
    PrivateGridSearch(SSP(accountant=acc), grid, rho=0.75, accountant=outer, random_state=0).fit(X)  # exactly all
    assert acc.spent == 1.0 and outer.spent == 0.75


def test_a_refit_without_an_accountant_warns_and_counts_both_fits():
    search = PrivateGridSearch(SSP(), {"bound": [1.0, 2.0]}, rho=0.25, random_state=0).fit(_rows())
    with pytest.warns(PrivacyBudgetWarning, match="fitted again without an accountant: this fit spends rho=0.25 more"):
        search.fit(_rows())
    assert search.rho_spent_ == 0.5


@pytest.mark.parametrize("f", [0.0, 0.5])
def test_a_seed_fixes_the_search_and_every_fit_draws_its_own_noise(recorded, f):
    fits, _ = recorded
    X = _rows()
    runs = [PrivateGridSearch(_Recorder(), {"bound": [1.0, 1.5, 2.0]}, rho=1.0, refit_fraction=f, random_state=3).fit(X)
            for _ in range(2)]
    assert runs[0].best_index_ == runs[1].best_index_ and runs[0].n_features_in_ == 3
    assert np.array_equal(runs[0].best_estimator_.covariance_, runs[1].best_estimator_.covariance_)
    # distinct seeds from 63 bits (above 2^32 for this random_state; in a small range two fits would
    # share their noise often, and it would cancel in the difference of their releases)
    seeds = [est.random_state for est, _, _ in fits[:len(fits) // 2]]
    assert len(set(seeds)) == len(seeds) and min(seeds) >= 2**32


def test_exact_noise_follows_the_tuned_estimator_and_unseeded_draws_from_secrets(recorded, monkeypatch):
    fits, picks = recorded
    X = _rows()
    # seeded: the selection draws exactly from the search's Generator, each fit from its own seed
    search = PrivateGridSearch(_Recorder(noise="exact"), {"bound": [1.0, 1.5]}, rho=1.0, random_state=3).fit(X)
    assert picks[0]["noise"] == "exact" and isinstance(picks[0]["rng"], np.random.Generator)
    assert all(isinstance(est.random_state, (int, np.integer)) and est.noise == "exact" for est, _, _ in fits)
    assert search.best_estimator_.noise == "exact" and search.rho_spent_ == 1.0
    # unseeded: a real release; no Generator reaches the selection or any fit's noise
    fits.clear(), picks.clear()
    PrivateGridSearch(_Recorder(noise="exact"), {"bound": [1.0, 1.5]}, rho=1.0).fit(X)
    assert picks[0]["noise"] == "exact" and picks[0]["rng"] is None
    assert len(fits) == 3 and all(est.random_state is None for est, _, _ in fits)
    # fast noise stays as it was: a Generator for the selection, a seed for each fit
    fits.clear(), picks.clear()
    PrivateGridSearch(_Recorder(), {"bound": [1.0, 1.5]}, rho=1.0).fit(X)
    assert picks[0]["noise"] == "fast" and isinstance(picks[0]["rng"], np.random.Generator)
    assert all(isinstance(est.random_state, (int, np.integer)) for est, _, _ in fits)


def test_the_smallest_parts_are_accepted():
    X = _rows(n=5)
    for holdout in (0.2, 0.6):  # one hold-out row; two training rows
        search = PrivateGridSearch(SSP(), {"bound": [1.0, 2.0]}, rho=1.0, holdout=holdout, random_state=0).fit(X)
        assert search.best_index_ in (0, 1)


def test_the_tuned_estimators_own_budget_and_a_clipping_bound_check_are_respected(recorded):
    fits, _ = recorded
    X = _rows() * 2.0  # outside a bound of 1: clipped by the candidates, as they declare
    PrivateGridSearch(_Recorder(epsilon=1.0, delta=1e-6, bound_check="clip"), {"bound": [1.0, 1.5]}, rho=0.5,
                      random_state=0).fit(X)
    assert [r for _, _, r in fits] == [0.125, 0.125, 0.25]


def test_a_score_that_is_not_finite_is_refused():
    with pytest.raises(ValueError, match="^a candidate's score is not finite: the scoring must return finite numbers$"):
        PrivateGridSearch(SSP(), {"bound": [1.0, 2.0]}, rho=1.0, scoring=lambda e, X, y: math.nan,
                          score_sensitivity=1.0, random_state=0).fit(_rows())


def test_the_frobenius_score_adds_the_mean_back():
    rng = np.random.default_rng(0)
    X_hold = rng.uniform(-1, 1, size=(30, 3))
    fitted = SimpleNamespace(covariance_=np.eye(3) * 0.2, location_=np.array([0.5, -0.25, 0.1]))
    scores, _ = frobenius_scores([fitted], X_hold, bound=1.0)
    second_moment = fitted.covariance_ + np.outer(fitted.location_, fitted.location_)
    assert scores[0] == pytest.approx(-np.linalg.norm(second_moment - X_hold.T @ X_hold / 30), rel=1e-12)

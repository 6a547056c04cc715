"""PrivateGridSearch: the search costs the stated ρ, its score sensitivity holds, it finds a clearly better setting."""

from fractions import Fraction

import numpy as np
import pytest

from paceggm import PACEGGM, PrivateGridSearch
from paceggm.baselines import SSP, AdaSSP
from paceggm.exceptions import BudgetExceededError
from paceggm.privacy import ZCDPAccountant, approx_dp_to_zcdp, full_sensitivity
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


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(param_grid={"rho": [1.0]}), ValueError, "may not set"),
    (dict(param_grid={"random_state": [0]}), ValueError, "may not set"),
    (dict(param_grid={"alpha": [0.3, 2.0]}), ValueError, "alpha"),
    (dict(param_grid={}), None, None),
    (dict(refit_fraction=1.0), ValueError, "refit_fraction"),
    (dict(holdout=0.0), ValueError, "holdout"),
    (dict(scoring="r2"), ValueError, "scoring"),
    (dict(scoring=lambda e, X, y: 0.0), ValueError, "score_sensitivity"),
    (dict(estimator=AdaSSP()), ValueError, "frobenius"),
    (dict(estimator=object()), TypeError, "private estimator"),
])
def test_bad_settings_are_refused_before_anything_is_spent(kwargs, error, match):
    acc = ZCDPAccountant(1.0)
    params = dict(estimator=PACEGGM(), param_grid={"alpha": [0.3]}, rho=0.5, accountant=acc)
    params.update(kwargs)
    if error is None:  # an empty grid dict is one candidate: the estimator as given
        PrivateGridSearch(**params, random_state=0).fit(bounded_gaussian(500, 3, 0))
        assert acc.spent == 0.5
        return
    with pytest.raises(error, match=match):
        PrivateGridSearch(**params).fit(bounded_gaussian(500, 3, 0))
    assert acc.spent == 0.0


def test_data_outside_a_candidates_bound_is_refused_before_paying():
    acc = ZCDPAccountant(1.0)
    with pytest.raises(ValueError, match="outside"):
        PrivateGridSearch(SSP(), {"bound": [1.0, 3.0]}, rho=0.5, accountant=acc).fit(bounded_gaussian(500, 3, 0) * 2)
    assert acc.spent == 0.0

"""PACE-GGM's parameters have one home (paceggm.settings): the function, the estimators and the registry read it,
and a fit checks the solver name once."""

import dataclasses
import inspect
import sys

import numpy as np
import pytest
from sklearn.base import clone

import paceggm.reconstruction
from paceggm import PACEGGM, pace_ggm, reconstruct
from paceggm.baselines import PACEGGMRegression
from paceggm.settings import DEFAULTS, PACEGGMSettings

X = np.random.default_rng(0).uniform(-1, 1, size=(300, 5))


def _defaults(fn, names):
    params = inspect.signature(fn).parameters
    return {n: params[n].default for n in names if n in params}


def test_the_function_and_the_estimators_take_every_setting_with_its_default():
    every = DEFAULTS.params()
    assert _defaults(pace_ggm, every) == every
    assert _defaults(PACEGGM, every) == every
    # The regression declares the tuned settings and the noise (its forced pairs are its own target row).
    mine = _defaults(PACEGGMRegression, every)
    assert set(mine) == {*PACEGGMSettings.tuned(), "solver_options", "noise"}
    assert mine == {n: every[n] for n in mine}
    assert _defaults(PACEGGMRegression, ["target_fraction"]) == {"target_fraction": DEFAULTS.forced_fraction}


def test_the_registry_offers_the_tuned_settings_and_pins_the_published_solver():
    from paceggm.bench.methods import METHODS

    for key in ("paceggm", "paceggm_regression"):
        assert set(METHODS[key].params) == set(PACEGGMSettings.tuned()), key
        assert METHODS[key].params["solver"] == "newton"
    assert PACEGGMSettings.tuned() == ("alpha", "beta", "max_rounds", "anneal_factor", "solver", "use_components")


@pytest.mark.parametrize("bad, err, match", [
    ({"alpha": 1.0}, ValueError, "alpha must lie in the open interval"),
    ({"beta": 0}, ValueError, "beta must lie in the open interval"),
    ({"max_rounds": True}, ValueError, "max_rounds must be a positive integer"),
    ({"solver": "ipn"}, ValueError, r"unknown solver 'ipn' \(did you mean 'ipm'\?\); choose one of"),
    ({"solver": "newton", "solver_options": {"mu": 1}}, ValueError, "solver 'newton' has no option"),
    ({"solver_options": [1]}, TypeError, "solver_options must be a dict"),
    ({"use_components": 1}, TypeError, "use_components must be a bool"),
    ({"sampler": "row"}, ValueError, r"unknown sampler 'row' \(did you mean 'rows'\?\)"),
    ({"noise": "exact", "sampler": "rows"}, ValueError, "noise='exact' needs sampler='gumbel'"),
])
def test_a_bad_setting_is_refused_in_one_line_by_the_settings_the_function_and_the_estimator(bad, err, match):
    with pytest.raises(err, match=match):
        PACEGGMSettings(**bad)
    with pytest.raises(err, match=match):
        pace_ggm(X, rho=1.0, **bad)
    with pytest.raises(err, match=match):
        PACEGGM(1.0, **bad).fit(X)


def test_settings_are_frozen_and_the_estimator_keeps_scikit_learn_s_parameters():
    with pytest.raises(dataclasses.FrozenInstanceError):
        DEFAULTS.alpha = 0.1
    est = PACEGGM(1.0, alpha=0.1, solver="ipm")
    assert vars(est) == est.get_params(deep=False)  # __init__ stores its parameters and nothing else
    copy = clone(est).set_params(beta=0.2)
    assert (copy.alpha, copy.beta, copy.solver) == (0.1, 0.2, "ipm")
    assert PACEGGMSettings.of(copy) == PACEGGMSettings(alpha=0.1, beta=0.2, solver="ipm")


def _count_solver_checks(monkeypatch) -> list:
    """Every call of check_solver, under whichever module's name it is called."""
    original, calls = paceggm.reconstruction.check_solver, []

    def counted(*args, **kwargs):
        calls.append(args[0] if args else kwargs.get("solver"))
        return original(*args, **kwargs)

    for module in list(sys.modules.values()):
        if getattr(module, "check_solver", None) is original:
            monkeypatch.setattr(module, "check_solver", counted)
    return calls


@pytest.mark.parametrize("options", [None, {"tol": 1e-9}])
def test_a_fit_checks_the_solver_name_once(monkeypatch, options):
    calls = _count_solver_checks(monkeypatch)
    pace_ggm(X, rho=1.0, solver="newton", solver_options=options, random_state=0)
    assert calls == ["newton"]
    calls.clear()
    PACEGGM(1.0, solver="newton", solver_options=options, random_state=0).fit(X)
    assert calls == ["newton"]
    calls.clear()
    reconstruct(np.eye(3), np.eye(3), solver="newton", solver_options=options)
    assert calls == ["newton"]
    calls.clear()
    # The regression checks its settings before it spends anything, and its inner PACEGGM fit once more.
    PACEGGMRegression(1.0, solver="newton", solver_options=options, random_state=0).fit(X[:, 1:], X[:, 0])
    assert calls == ["newton", "newton"]


def test_the_signatures_take_their_defaults_from_the_settings_object_not_from_a_copy():
    assert inspect.signature(PACEGGM).parameters["solver"].default is DEFAULTS.solver
    assert inspect.signature(pace_ggm).parameters["alpha"].default is DEFAULTS.alpha

"""Solvers report iterations and convergence; a cap hit warns and is recorded."""

import warnings

import numpy as np
import pytest

from paceggm import PACEGGM, reconstruct
from paceggm.exceptions import ConvergenceWarning

from conftest import bounded_gaussian


def _measurements(d=6, seed=0):
    X = bounded_gaussian(2000, d, seed=seed)
    y = X.T @ X / X.shape[0] + np.random.default_rng(seed).normal(scale=0.05, size=(d, d))
    y = 0.5 * (y + y.T)
    # The diagonal and a path j—j+1 measured: the rest must be completed.
    lam = 1e4 * (np.eye(d) + np.eye(d, k=1) + np.eye(d, k=-1))
    return y, lam


@pytest.mark.parametrize("solver, options", [("ipm", {"maxiter": 2, "stage_maxiter": 2}),
                                             ("pgd0", {"maxiter": 2}), ("pgd1", {"maxiter": 2})])
def test_a_cap_hit_warns_and_is_recorded(solver, options):
    y, lam = _measurements()
    with pytest.warns(ConvergenceWarning, match="stopped before converging"):
        rec = reconstruct(y, lam, solver=solver, solver_options=options)
    assert not rec.converged and rec.n_iter >= 1
    assert not any(b["converged"] for b in rec.blocks.values())


@pytest.mark.parametrize("solver", ["newton", "ipm", "pgd0"])
def test_default_caps_converge_silently(solver):
    y, lam = _measurements()
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        rec = reconstruct(y, lam, solver=solver)
    assert rec.converged and rec.n_iter > 0


def test_estimator_records_convergence_per_round():
    X = bounded_gaussian(2000, 5, seed=1)
    with pytest.warns(ConvergenceWarning):
        capped = PACEGGM(rho=1.0, solver="ipm", solver_options={"maxiter": 2, "stage_maxiter": 2},
                         max_rounds=4, random_state=0).fit(X)
    assert capped.converged_ is False and not capped.result_.converged
    assert not any(r.converged for r in capped.history_)
    assert capped.n_iter_ == sum(r.n_iter for r in capped.history_) > 0
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        fine = PACEGGM(rho=1.0, max_rounds=4, random_state=0).fit(X)
    assert fine.converged_ is True and all(r.converged for r in fine.history_)
    assert fine.n_iter_ == sum(r.n_iter for r in fine.history_) > 0



def test_newton_flag_follows_where_its_continuation_stopped():
    # Far from completable measurements and a μ_min below what the continuation reaches:
    # the answer then comes from an earlier stage, which must be flagged and warned about.
    from paceggm.reconstruction.newton import solve_newton
    from paceggm.reconstruction.problem import make_problem, natural_units

    d = 6
    X = bounded_gaussian(2000, d, seed=0)
    y = X.T @ X / X.shape[0] + np.random.default_rng(0).normal(scale=0.3, size=(d, d))
    y = 0.5 * (y + y.T)
    lam = np.full((d, d), 1e4)
    options = {"mu_min": 1e-20, "exact_limit": False}
    scale, lam_unit = natural_units(y, lam)
    sol = solve_newton(make_problem(y, lam, scale=scale, lam_unit=lam_unit), **options)
    assert sol.converged == (sol.mu <= options["mu_min"])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rec = reconstruct(y, lam, solver="newton", solver_options=options)
    assert rec.converged == sol.converged
    assert any(issubclass(w.category, ConvergenceWarning) for w in caught) == (not rec.converged)

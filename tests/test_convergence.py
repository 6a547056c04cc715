"""Solvers report iterations and convergence; a cap hit warns and is recorded."""

import warnings

import numpy as np
import pytest

from paceggm import PACEGGM, reconstruct
from paceggm.exceptions import ConvergenceWarning
from paceggm.reconstruction import solver_defaults

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


def test_ipm_tight_preset_is_the_default_and_options_set_the_stopping_rule():
    from paceggm.reconstruction.ipm import PRESETS, solve_ipm
    from paceggm.reconstruction.problem import make_problem, natural_units

    y, lam = _measurements(d=8)
    scale, lam_unit = natural_units(y, lam)
    p = make_problem(y, lam, scale=scale, lam_unit=lam_unit)
    default, tight = solve_ipm(p), solve_ipm(p, preset="tight")
    assert np.array_equal(default.W, tight.W) and default.n_iter == tight.n_iter
    # The preset replaces the individual stopping options.
    assert np.array_equal(solve_ipm(p, preset="tight", maxiter=3).W, tight.W)
    coarse = solve_ipm(p, stage_ftol=1e-6, final_ftol=1e-8, stage_gtol=1e-1, final_gtol=1e-2)
    assert 0 < coarse.n_iter < tight.n_iter
    assert np.linalg.norm(coarse.W - tight.W) > np.linalg.norm(tight.W) * 1e-9  # a different stopping point
    with pytest.raises(ValueError, match="unknown IPM preset 'fast'.*tight"):
        solve_ipm(p, preset="fast")
    assert set(PRESETS["tight"]) <= set(solver_defaults()["ipm"])  # recorded in a run's fingerprint


def test_reconstruction_counts_capped_solves_and_the_longest():
    y, lam = _measurements()
    lam[2, 3] = lam[3, 2] = 0.0  # two components of 3 indices each
    with pytest.warns(ConvergenceWarning):
        rec = reconstruct(y, lam, solver="pgd0", solver_options={"maxiter": 2})
    assert rec.n_solved == 2 and rec.n_capped == 2 and rec.max_iter == 2
    fine = reconstruct(y, lam, solver="newton")
    assert fine.n_capped == 0 and 0 < fine.max_iter <= fine.n_iter


def test_estimator_summarises_solves_over_rounds():
    X = bounded_gaussian(2000, 5, seed=1)
    with pytest.warns(ConvergenceWarning):
        capped = PACEGGM(rho=1.0, solver="ipm", solver_options={"maxiter": 2, "stage_maxiter": 2},
                         max_rounds=4, random_state=0).fit(X)
    hist = capped.history_
    assert capped.n_solves_ == sum(r.n_solved for r in hist) >= len(hist)
    assert capped.n_capped_ == capped.n_solves_  # every solve hit the cap
    assert capped.max_iter_ == max(r.max_iter for r in hist) > 0
    fine = PACEGGM(rho=1.0, max_rounds=4, random_state=0).fit(X)
    assert fine.n_capped_ == 0 and fine.n_solves_ > 0


def test_pgd_tight_preset_is_the_committed_setting_and_replaces_tol_and_maxiter():
    from paceggm.reconstruction.pgd import DEFAULTS, PRESETS, solve_pgd
    from paceggm.reconstruction.problem import make_problem, natural_units

    y, lam = _measurements(d=8)
    lam = lam * np.random.default_rng(1).uniform(0.5, 2.0, size=lam.shape)  # unequal weights: a real gradient
    lam = 0.5 * (lam + lam.T)
    scale, lam_unit = natural_units(y, lam)
    p = make_problem(y, lam, scale=scale, lam_unit=lam_unit)
    for init in (0.0, 1.0):
        # The settings every committed PGD result was computed with, spelled out.
        before = solve_pgd(p, init_value=init, tol=3e-6, maxiter=20000)
        tight = solve_pgd(p, init_value=init, preset="tight")
        assert np.array_equal(tight.W, before.W) and tight.n_iter == before.n_iter
        assert np.array_equal(solve_pgd(p, init_value=init, preset="tight", tol=0.5, maxiter=1).W, tight.W)
        default = solve_pgd(p, init_value=init)
        assert default.converged and 0 < default.n_iter < tight.n_iter  # the same path, stopped earlier
    assert DEFAULTS["tol"] > PRESETS["tight"]["tol"]
    with pytest.raises(ValueError, match="unknown PGD preset 'fast'.*tight"):
        solve_pgd(p, preset="fast")
    for solver in ("pgd0", "pgd1"):
        assert "preset" in solver_defaults()[solver]  # accepted by check_solver_options, recorded in a run
        rec = reconstruct(y, lam, solver=solver, solver_options={"preset": "tight"})
        assert rec.converged


@pytest.mark.parametrize("solver", ["pgd0", "pgd1"])
def test_pgd_default_returns_a_fully_measured_psd_matrix(solver):
    # Every entry measured and y PSD: y is the unique minimiser of the loss, whatever the start.
    rng = np.random.default_rng(3)
    A = rng.normal(size=(10, 10))
    y = A @ A.T / 10 + 0.1 * np.eye(10)
    lam = rng.uniform(1e3, 1e4, size=(10, 10))
    lam = 0.5 * (lam + lam.T)
    rec = reconstruct(y, lam, solver=solver)
    assert rec.converged
    np.testing.assert_allclose(rec.covariance, y, rtol=0, atol=1e-6 * np.abs(y).max())

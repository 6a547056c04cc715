"""Solvers report iterations and convergence; a cap hit warns and is recorded."""

import warnings

import numpy as np
import pytest

from paceggm import reconstruct
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


@pytest.mark.parametrize("solver, options", [("newton", None), ("ipm", {"preset": "tight"}), ("pgd0", None)])
def test_default_caps_converge_silently(solver, options):
    y, lam = _measurements()
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        rec = reconstruct(y, lam, solver=solver, solver_options=options)
    assert rec.converged and rec.n_iter > 0


def test_ipm_default_budget_is_its_stopping_rule_and_says_so():
    # The default IPM stops every stage at its 300-iteration budget (the ill-conditioned
    # small-μ stages never meet gtol): reported as capped, with the warning.
    y, lam = _measurements()
    with pytest.warns(ConvergenceWarning, match="stopped before converging"):
        rec = reconstruct(y, lam, solver="ipm")
    exact = reconstruct(y, lam, solver="newton").covariance
    assert not rec.converged
    assert np.linalg.norm(rec.covariance - exact) <= 1e-3 * np.linalg.norm(exact)


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
        assert "preset" in solver_defaults()[solver]  # accepted by check_solver, recorded in a run
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


def _ipm_problem(y, lam):
    from paceggm.reconstruction.problem import make_problem, natural_units

    scale, lam_unit = natural_units(y, lam)
    return make_problem(y, lam, scale=scale, lam_unit=lam_unit)


def test_ipm_warm_start_continues_from_the_previous_rounds_factors():
    from paceggm.reconstruction.ipm import IPMState, solve_ipm
    from paceggm.reconstruction.newton import solve_newton

    y, lam = _measurements(d=8)
    before = _ipm_problem(y, lam)
    first = solve_ipm(before)
    assert isinstance(first.state, IPMState) and first.state.scale == before.scale
    lam2 = lam.copy()
    lam2[0, 5] = lam2[5, 0] = 1e4  # one more measured entry, as in a PACE-GGM round
    after = _ipm_problem(y, lam2)
    everything = np.arange(8)
    warm = solve_ipm(after, init=[(everything, first.state)])
    cold = solve_ipm(after)
    exact = solve_newton(after).W
    # Warm: the three stages 1e-3, 1e-4, 1e-5 of at most 300 iterations, from a nearby start,
    # end as close to the exact completion as the five stages of the cold continuation.
    assert warm.n_iter <= 3 * 300 < cold.n_iter
    err = {k: np.linalg.norm(s.W - exact) / np.linalg.norm(exact) for k, s in (("warm", warm), ("cold", cold))}
    assert err["warm"] <= min(1e-2, 2.0 * err["cold"]), err
    # Without warm_start the factors are ignored: the cold continuation, bit for bit.
    ignored = solve_ipm(after, init=[(everything, first.state)], warm_start=False)
    assert np.array_equal(ignored.W, cold.W)
    # Factors of an earlier block in other units are converted (W scales as s, L as √s).
    from paceggm.reconstruction.ipm import _assemble_warm_start

    rescaled = IPMState(first.state.L * np.sqrt(2.0), first.state.scale / 2.0)
    L0 = _assemble_warm_start(after, [(everything, first.state)], 1e-5)
    assert np.allclose(_assemble_warm_start(after, [(everything, rescaled)], 1e-5), L0, rtol=1e-14, atol=0)
    assert np.allclose(after.scale * L0 @ L0.T, before.scale * first.W, rtol=1e-12, atol=1e-15)


def test_ipm_warm_start_that_runs_onto_the_bound_falls_back_to_the_cold_continuation(monkeypatch):
    from paceggm.reconstruction import ipm

    y, lam = _measurements(d=6)
    p = _ipm_problem(y, lam)
    previous = ipm.solve_ipm(p)
    cold = ipm.solve_ipm(p)
    real = ipm._continuation
    calls = []

    def collapse_first(objective, v, mus, **kw):
        calls.append(mus)
        out, nit, capped = real(objective, v, mus, **kw)
        if len(calls) == 1:  # the warm attempt: a diagonal entry ends on its bound
            out = out.copy()
            out[objective.diag_pos[2]] = ipm._DIAG_FLOOR
        return out, nit, capped

    monkeypatch.setattr(ipm, "_continuation", collapse_first)
    sol = ipm.solve_ipm(p, init=[(np.arange(6), previous.state)])
    assert [m[0] for m in calls] == [1e-3, 1e-1]  # warm from 1e-3, then cold from μ_0
    assert np.array_equal(sol.W, cold.W) and sol.n_iter > cold.n_iter


def test_a_fits_warning_names_the_solver_the_estimator_was_given():
    """The round loop hands its reconstruction the solver by name: a cap hit names it, not a default."""
    from paceggm import PACEGGM

    X = bounded_gaussian(2000, 12, seed=0)  # d = 12: blocks that a closed form does not complete
    with pytest.warns(ConvergenceWarning, match="solver 'pgd0' stopped before converging"):
        est = PACEGGM(10.0, solver="pgd0", solver_options={"maxiter": 1}, random_state=0).fit(X)
    assert not est.converged_

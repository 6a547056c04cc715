"""The dense Newton solver on an array backend: the reference's iterations and answers, on any backend."""

from __future__ import annotations

import numpy as np
import pytest

from paceggm import pace_ggm
from paceggm.reconstruction import reconstruct
from paceggm.reconstruction.backend import get_backend


def _data(d: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(4000, 3)) @ rng.normal(size=(3, d)) + rng.normal(size=(4000, d))
    return X / np.abs(X).max(axis=0)


@pytest.mark.parametrize("d, rho, seed", [(12, 1.0, 0), (20, 10.0, 1)])
def test_numpy_backend_fit_is_the_reference_fit(d, rho, seed):
    X = _data(d, seed)
    ref = pace_ggm(X, rho=rho, solver="newton", random_state=seed)
    xp = pace_ggm(X, rho=rho, solver="newton_xp", solver_options={"backend": "numpy"}, random_state=seed)
    assert [r.entry for r in xp.history] == [r.entry for r in ref.history]
    assert [r.n_iter for r in xp.history] == [r.n_iter for r in ref.history]  # the same iterations
    assert np.max(np.abs(xp.covariance - ref.covariance)) <= 1e-10 * np.max(np.abs(ref.covariance))
    assert xp.mu == ref.mu


def test_auto_sends_large_blocks_to_the_backend_and_agrees():
    X = _data(16, 2)
    cpu = pace_ggm(X, rho=10.0, random_state=2)  # the default: auto, CPU only
    dev = pace_ggm(X, rho=10.0, solver_options={"backend": "numpy", "backend_min_d": 6}, random_state=2)
    xp = pace_ggm(X, rho=10.0, solver="newton_xp", random_state=2)
    assert cpu.solver == "auto"
    assert [r.entry for r in dev.history] == [r.entry for r in cpu.history]
    assert np.max(np.abs(dev.covariance - cpu.covariance)) <= 3.5e-9 * np.max(np.abs(cpu.covariance))
    # blocks below backend_min_d take the CPU path: not every round is the pure backend's
    assert [r.n_iter for r in dev.history] != [r.n_iter for r in xp.history]


def test_non_completable_measurements_stop_at_mu_min_like_the_reference():
    y = np.array([[1.0, 0.99, 0.0], [0.99, 1.0, 0.99], [0.0, 0.99, 1.0]])
    y[0, 0] = 0.5  # |y_01| > sqrt(y_00 y_11): no positive-definite completion
    lam = np.where(y != 0, 1.0, 0.0)
    ref = reconstruct(y, lam, solver="newton")
    xp = reconstruct(y, lam, solver="newton_xp")
    assert xp.mu == ref.mu > 0
    np.testing.assert_allclose(xp.covariance, ref.covariance, rtol=1e-7)


def test_backend_names_are_checked():
    with pytest.raises(ValueError, match="unknown backend"):
        get_backend("gpu")
    with pytest.raises(ValueError, match="no option"):
        reconstruct(np.eye(2), np.eye(2), solver="newton", solver_options={"backend": "numpy"})


def test_torch_cpu_backend_runs_the_same_code_path():
    pytest.importorskip("torch")
    X = _data(12, 0)
    ref = pace_ggm(X, rho=1.0, solver="newton", random_state=0)
    xp = pace_ggm(X, rho=1.0, solver="newton_xp", solver_options={"backend": "torch:cpu"}, random_state=0)
    assert [r.entry for r in xp.history] == [r.entry for r in ref.history]
    assert np.max(np.abs(xp.covariance - ref.covariance)) <= 3.5e-9 * np.max(np.abs(ref.covariance))


def test_numpy_namespace_runs_newtons_stages_to_the_closed_form_completion():
    """On a chordal pattern the max-entropy completion is known in closed form; the backend path reaches it
    through :mod:`.newton`'s own stages (their events counted), cold, warm, and after a warm start that fails."""
    from paceggm.reconstruction.counters import Counters
    from paceggm.reconstruction.newton import NewtonState
    from paceggm.reconstruction.newton_xp import solve_newton_xp
    from paceggm.reconstruction.problem import make_problem

    d = 30
    rng = np.random.default_rng(0)
    A = rng.normal(size=(d, 3 * d))
    S = A @ A.T / (3 * d)
    band = np.abs(np.subtract.outer(np.arange(d), np.arange(d))) <= 1  # tridiagonal: chordal
    p = make_problem(np.where(band, S, 0.0), band.astype(float), scale=1.0, lam_unit=1.0)
    # The completion's precision: the inverses of the cliques {i, i+1} less those of the separators {i}.
    P = np.zeros((d, d))
    for i in range(d - 1):
        P[i:i + 2, i:i + 2] += np.linalg.inv(S[i:i + 2, i:i + 2])
    P[np.arange(1, d - 1), np.arange(1, d - 1)] -= 1.0 / S[np.arange(1, d - 1), np.arange(1, d - 1)]

    def close(sol) -> bool:
        return sol.mu == 0.0 and np.max(np.abs(sol.state.precision - P)) <= 1e-9 * np.max(np.abs(P))

    warm = [(np.arange(d), NewtonState(P, 1.0, 0.0))]
    far = [(np.arange(d), NewtonState(1e8 * np.eye(d), 1.0, 0.0))]  # positive definite, far from the centre
    for init, cold_starts, cold_restarts in [(None, 1, 0), (warm, 0, 0), (far, 0, 1)]:
        with Counters() as c:
            sol = solve_newton_xp(p, init=init)
        assert close(sol)
        assert np.allclose(sol.W[band], S[band], rtol=0, atol=1e-12)
        assert c.events["Newton systems"] == sol.n_iter
        assert c.events["cold starts"] == cold_starts and c.events["cold restarts"] == cold_restarts

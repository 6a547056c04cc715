"""PGD's step in preallocated buffers takes the plain expressions' iterates, bit for bit.

:func:`plain_solve_pgd` is the step written as plain NumPy expressions, each
result a new array: the form the solver had before its buffers, and the one its
committed results come from. The solver must reproduce it exactly (not within a
tolerance): the published ``solver`` table holds PGD's outputs, and a changed last
bit can change which entry a later round selects.
"""

import numpy as np
import pytest
from scipy.linalg import lapack

from paceggm.reconstruction.pgd import solve_pgd
from paceggm.reconstruction.problem import make_problem, natural_units


def plain_project_psd(W):
    vals, vecs, info = lapack.dsyevd(W, compute_v=1, lower=1)
    assert info == 0
    vals = np.maximum(vals, 0.0)
    out = (vecs * vals) @ vecs.T
    return 0.5 * (out + out.T)


def plain_solve_pgd(p, *, init_value, tol, maxiter, accelerated):
    d = p.d
    diag = np.eye(d, dtype=bool)
    gw = np.where(diag, 2.0 * p.lam, p.lam)
    lip = float(gw.max())
    W = plain_project_psd(np.where(p.lam > 0, p.y, init_value / p.scale))
    Z, t = W, 1.0
    n_iter, converged = 0, False
    for n_iter in range(1, maxiter + 1):  # noqa: B007
        W_new = plain_project_psd(Z - gw * (Z - p.y) / lip)
        step = np.linalg.norm(W_new - W)
        if accelerated:
            t_new = 0.5 * (1.0 + np.sqrt(1.0 + 4.0 * t * t))
            Z = W_new + ((t - 1.0) / t_new) * (W_new - W)
            t = t_new
        else:
            Z = W_new
        W = W_new
        if step <= tol * max(1.0, np.linalg.norm(W)):
            converged = True
            break
    return W, n_iter, converged


def noisy_block(d, n_off, seed):
    """Noisy measurements of a random covariance: its diagonal and ``n_off`` random off-diagonal pairs."""
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((d, 2 * d))
    sigma = A @ A.T / (2 * d)
    lam = np.zeros((d, d))
    lam[np.diag_indices(d)] = rng.uniform(5.0, 50.0, d)
    low = np.column_stack(np.tril_indices(d, -1))
    for j, k in low[rng.choice(len(low), n_off, replace=False)]:
        lam[j, k] = lam[k, j] = rng.uniform(5.0, 50.0)
    noise = np.where(lam > 0, rng.standard_normal((d, d)) / np.sqrt(np.where(lam > 0, lam, 1.0)), 0.0)
    noise = np.tril(noise) + np.tril(noise, -1).T
    y = np.where(lam > 0, sigma + noise, 0.0)
    scale, lam_unit = natural_units(y, lam)
    return make_problem(y, lam, scale=scale, lam_unit=lam_unit)


BLOCKS = [(2, 1, 0), (7, 6, 1), (16, 30, 2), (33, 120, 3)]


@pytest.mark.parametrize("accelerated", [True, False])
@pytest.mark.parametrize("init_value", [0.0, 1.0])
@pytest.mark.parametrize("block", BLOCKS, ids=[f"d{b[0]}" for b in BLOCKS])
def test_iterates_equal_the_plain_steps_bit_for_bit(block, init_value, accelerated):
    p = noisy_block(*block)
    # Every early iterate (through maxiter), then the whole solve, at both stopping settings.
    for maxiter, tol in [(0, 1e-5), (1, 1e-5), (2, 1e-5), (3, 1e-5), (17, 1e-5), (3000, 1e-5), (3000, 3e-6)]:
        W, n_iter, converged = plain_solve_pgd(p, init_value=init_value, tol=tol, maxiter=maxiter,
                                               accelerated=accelerated)
        got = solve_pgd(p, init_value=init_value, tol=tol, maxiter=maxiter, accelerated=accelerated)
        assert np.array_equal(got.W, W), (maxiter, tol, np.abs(got.W - W).max())
        assert (got.n_iter, got.converged) == (n_iter, converged)
        # The memory order the callers' own BLAS calls on W saw before.
        assert got.W.flags.c_contiguous


def test_the_solves_reach_a_stop_and_are_not_trivial():
    """The comparison above covers converged solves whose iterates move (not only a projected start)."""
    p = noisy_block(33, 120, 3)
    for init_value in (0.0, 1.0):
        res = solve_pgd(p, init_value=init_value, maxiter=3000)
        assert res.converged and res.n_iter > 20

"""IPM-Cholesky's objective in preallocated buffers gives the plain expressions' values, bit for bit.

:func:`plain_evaluation` is the scaled barrier ``φ_μ/μ`` and its gradient written as plain
NumPy/SciPy expressions (fancy indexing, ``csr_matrix @ ndarray``, ``np.sum``): the form the
committed results were computed with. L-BFGS-B's iterates depend on every bit of what it is given.
"""

import numpy as np
import pytest
from test_pgd_fused import noisy_block

from paceggm.reconstruction.ipm import _ScaledBarrier, solve_ipm


def plain_evaluation(objective, v, mu):
    d = objective.d
    L = np.zeros((d, d))
    L[objective.tril] = v
    r = np.einsum("ij,ij->i", L[objective.rows], L[objective.cols]) - objective.t
    G = objective.G.copy()
    G.data = (objective.grad_weight * r)[objective.which]
    gv = 2.0 * (G @ L).ravel()[objective.flat_tril]
    ldiag = v[objective.diag_pos]
    f = float(np.sum(objective.w * r * r)) - 2.0 * mu * float(np.sum(np.log(ldiag)))
    gv[objective.diag_pos] -= 2.0 * mu / ldiag
    return f / mu, gv / mu


BLOCKS = [(1, 0, 0), (2, 1, 0), (7, 6, 1), (16, 30, 2), (33, 120, 3)]


@pytest.mark.parametrize("block", BLOCKS, ids=[f"d{b[0]}" for b in BLOCKS])
def test_evaluations_equal_the_plain_expressions_bit_for_bit(block):
    p = noisy_block(*block)
    objective = _ScaledBarrier(p)
    rng = np.random.default_rng(block[2])
    for mu in (1e-1, 1e-3, 1e-5, 1e-8):
        for _ in range(3):  # the buffers are reused from one evaluation to the next
            v = rng.standard_normal(objective.tril[0].size)
            v[objective.diag_pos] = np.abs(v[objective.diag_pos]) + 0.1
            f, g = objective(v, mu)
            f_plain, g_plain = plain_evaluation(objective, v, mu)
            assert f == f_plain and np.array_equal(g, g_plain)


def test_a_solve_with_the_plain_evaluation_takes_the_same_path(monkeypatch):
    p = noisy_block(16, 30, 2)
    got = solve_ipm(p)
    monkeypatch.setattr(_ScaledBarrier, "__call__", plain_evaluation)
    plain = solve_ipm(p)
    assert got.n_iter == plain.n_iter > 50 and np.array_equal(got.W, plain.W)

"""Projected gradient descent on ``L(W)`` over the PSD cone: a published comparison solver.

No entropy term: PGD finds *a* minimiser of the weighted loss, not the
maximum-entropy one, and which one depends on where the unmeasured entries
start (all at 0 or all at 1, the two published variants). The step is
``1/Lip`` with ``Lip = max(2 max λ_jj, max λ_jk)``, the Lipschitz constant of
``∇L`` in the Frobenius geometry; the projection clips eigenvalues at 0.

Iterations use Nesterov/FISTA momentum by default (``accelerated=False`` gives
the plain method): both converge to a minimiser, the accelerated one in far fewer
eigendecompositions, which is what makes the solver comparison affordable.

The iteration stops when a step moves ``W`` by less than ``tol = 1e-5`` of its
norm. The limit of the iteration is the minimiser PGD reports, and stopping
earlier on the same path only truncates it. ``preset="tight"`` (``tol = 3e-6``)
stops about as close to that limit as IPM-Cholesky gets to the exact completion;
the default stops within about 1e-2 of it in fewer iterations. Coarser stops are
not safe: PACE-GGM chooses each round's entry from the current estimate, and a
truncated estimate can change the choices (the measurements: docs/stopping-rules.md,
``make bench-stopping``).

With the component decomposition on, entries across components are fixed at 0;
with it off and unmeasured entries started at 1 they are free to stay non-zero,
so for ``init_value=1`` the two settings generally return *different* minimisers.
With ``init_value=0`` they agree (a block-diagonal iterate stays block-diagonal).
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import lapack

from paceggm.reconstruction.problem import Problem
from paceggm.reconstruction.result import BlockSolution


def _sqnorm(a: np.ndarray) -> float:
    """``np.linalg.norm(a) ** 2`` for a symmetric ``a``, bit for bit, without its checks and copies.

    Its reduction is one BLAS dot over the elements in memory order; for a
    symmetric matrix the row and the column order give the same sequence.
    """
    flat = a.reshape(-1, order="A")
    return flat.dot(flat)


class _Fista:
    """Preallocated buffers for PGD's steps, whose results are the plain expressions' bit for bit.

    Each product and sum is the one the plain expressions evaluate (the
    reference step in tests/test_pgd_fused.py), in the same order and with the
    same BLAS call, written into a buffer instead of a new array. The iterates are
    kept in Fortran order: LAPACK then gets the matrix to decompose without a
    copy, in place, and its eigenvectors overwrite it; the elementwise steps
    read and write contiguous arrays.
    """

    def __init__(self, d: int):
        self.a = np.empty((d, d), order="F")  # the matrix to project, then its eigenvectors
        self.scaled = np.empty((d, d), order="F")  # eigenvectors times clipped eigenvalues
        self.product = np.empty((d, d))

    def project(self, out: np.ndarray) -> np.ndarray:
        """``out`` = the PSD projection of the matrix in ``self.a`` (which it overwrites)."""
        # LAPACK's divide-and-conquer driver, the one np.linalg.eigh calls, called
        # directly: numpy's wrapper cost a few per cent of an iteration. The solves
        # match the np.linalg.eigh version bit for bit on most blocks, not all
        # (twelfth digit; docs/solvers.md).
        vals, vecs, info = lapack.dsyevd(self.a, compute_v=1, lower=1, overwrite_a=1)
        if info != 0:
            raise np.linalg.LinAlgError(f"eigendecomposition did not converge (LAPACK dsyevd info={info})")
        np.maximum(vals, 0.0, out=vals)
        np.multiply(vecs, vals, out=self.scaled)
        np.matmul(self.scaled, vecs.T, out=self.product)  # the same gemm as ``scaled @ vecs.T``
        # Symmetric to the last bit (each sum's two terms commute): the rest relies on it.
        np.add(self.product, self.product.T, out=out)
        return np.multiply(0.5, out, out=out)

    def gradient_step(self, Z: np.ndarray, y: np.ndarray, gw: np.ndarray, lip: float) -> None:
        """``self.a`` = ``Z - gw * (Z - y) / lip``."""
        a = self.a
        np.subtract(Z, y, out=a)
        np.multiply(gw, a, out=a)
        np.divide(a, lip, out=a)
        np.subtract(Z, a, out=a)


def _project_psd(W: np.ndarray) -> np.ndarray:
    """The PSD projection of a symmetric ``W``, in a new array."""
    work = _Fista(W.shape[0])
    np.copyto(work.a, W)
    return np.ascontiguousarray(work.project(np.empty(W.shape, order="F")))


#: Named stopping settings (``preset=``). ``"tight"`` is the setting of runs 1-3's
#: ``solver`` results (a step below 3e-6 of ``‖W‖_F``, at most 20,000 iterations);
#: the default stops earlier on the same path.
PRESETS = {
    "tight": dict(tol=3e-6, maxiter=20000),
}
DEFAULTS = dict(tol=1e-5, maxiter=20000)


def solve_pgd(
    p: Problem,
    *,
    init=None,
    init_value: float = 0.0,
    tol: float = DEFAULTS["tol"],
    maxiter: int = DEFAULTS["maxiter"],
    accelerated: bool = True,
    preset: str | None = None,
) -> BlockSolution:
    """Solve one block by projected gradient; see the module docstring.

    ``tol`` stops the iteration when a step moves ``W`` by less than ``tol`` of
    its Frobenius norm, ``maxiter`` caps it. ``preset`` names a row of
    :data:`PRESETS` whose values replace both (``"tight"``: the committed
    results' setting).
    """
    if preset is not None:
        if preset not in PRESETS:
            raise ValueError(f"unknown PGD preset {preset!r}; choose one of {sorted(PRESETS)}")
        tol, maxiter = PRESETS[preset]["tol"], PRESETS[preset]["maxiter"]
    d = p.d
    measured = p.lam > 0
    diag = np.eye(d, dtype=bool)
    # Gradient weights: ∂L/∂W_jj = 2λ(W−y); each off-diagonal pair is counted once
    # in L but appears twice in the symmetric matrix, so it gets λ(W−y) per copy.
    gw = np.where(diag, 2.0 * p.lam, p.lam)
    lip = float(gw.max())
    work = _Fista(d)
    y, gw = np.asfortranarray(p.y), np.asfortranarray(gw)
    np.copyto(work.a, np.where(measured, p.y, init_value / p.scale))
    W = work.project(np.empty((d, d), order="F"))
    W_new, diff = np.empty((d, d), order="F"), np.empty((d, d), order="F")
    # Z is W until the first momentum step (and always, for the plain method).
    Z, t = (W.copy(order="F") if accelerated else W), 1.0
    n_iter = 0
    converged = False
    for n_iter in range(1, maxiter + 1):  # noqa: B007 (the count is returned)
        work.gradient_step(Z, y, gw, lip)
        work.project(W_new)
        np.subtract(W_new, W, out=diff)
        step = np.sqrt(_sqnorm(diff))
        if accelerated:
            t_new = 0.5 * (1.0 + np.sqrt(1.0 + 4.0 * t * t))
            np.multiply((t - 1.0) / t_new, diff, out=Z)
            np.add(W_new, Z, out=Z)
            t = t_new
        W, W_new = W_new, W
        if not accelerated:
            Z = W
        if step <= tol * max(1.0, np.sqrt(_sqnorm(W))):
            converged = True
            break
    W = np.ascontiguousarray(W)  # the memory order the callers' BLAS calls saw before
    return BlockSolution(W=W, state=None, mu=None, n_iter=n_iter, converged=converged)

"""The Newton solver of :mod:`.newton` with its dense kernels on a :mod:`.backend` (a GPU when there is one).

The stages, stopping rules and warm starts are those of
:func:`.newton.solve_newton` (see its module docstring); each iteration's dense
work — the Cholesky factor of ``P``, ``W = P⁻¹``, the ``|S| × |S|`` Hessian
gathered from ``W`` and its factorisation, the Newton step — runs on the
backend, and only ``|S|``-vectors, scalars and the answer cross back to the
host. On one core a round of a large block is a few seconds of ``d³`` and
``|S|³`` work; a GPU does it in milliseconds (a dense Newton step at d = 1,000:
a few ms on an H100 against 0.4 s on one core).

With the ``"numpy"`` backend the same code runs on the CPU: that is how it is
tested without an accelerator. Its answers agree with :mod:`.newton`'s to the
exact solvers' tolerance (tested): the same iterations with other roundings
(the inverse from triangular solves instead of LAPACK's ``dpotri``, the
Hessian unscaled by its own Cholesky, not the reference's arithmetic order).
"""

from __future__ import annotations

import numpy as np

from paceggm.reconstruction.backend import get_backend
from paceggm.reconstruction.newton import (
    _BACKOFF,
    _FLOOR,
    _FULL_STEP,
    _WARM_ITER,
    DEFAULTS,
    NewtonState,
    _assemble_warm_start,
)
from paceggm.reconstruction.problem import Problem, diagonal_barrier_solution, mu_schedule
from paceggm.reconstruction.result import BlockSolution


class _DevicePattern:
    """The pattern's fixed data on the backend."""

    def __init__(self, p: Problem, be) -> None:
        self.be, self.d = be, p.d
        diag = p.rows == p.cols
        m = np.where(diag, 1.0, 2.0)
        lam = p.weights
        self.r, self.c = be.index(p.rows), be.index(p.cols)
        self.rows, self.cols = p.rows, p.cols
        self.m, self.q, self.y = be.asarray(m), be.asarray(np.where(diag, 0.5 / lam, 2.0 / lam)), be.asarray(p.targets)
        self.my = self.m * self.y
        self.sqrt_half_m = be.asarray(np.sqrt(0.5) * m)

    def matrix(self, x):
        P = self.be.zeros((self.d, self.d))
        P[self.r, self.c] = x
        P[self.c, self.r] = x
        return P

    def factor(self, x):
        return self.be.cholesky(self.matrix(x)) if self.be.all_finite(x) else None

    def value(self, x, L, mu: float) -> float:
        be = self.be
        logdet = 2.0 * be.xp.sum(be.xp.log(be.xp.diagonal(L)))
        return be.scalar(-logdet + be.xp.sum(self.my * x) + 0.5 * mu * be.xp.sum(self.q * x * x))

    def direction(self, x, W, mu: float):
        """``(Δ, δ)``: the Newton step and decrement at ``x``, or ``(None, nan)``."""
        be, r, c = self.be, self.r, self.c
        g = self.m * (self.y - W[r, c]) + mu * self.q * x
        Wr, Wc = W[r], W[c]
        H = Wr[:, r] * Wc[:, c] + Wr[:, c] * Wc[:, r]
        # Weights m_i m_j / 2 and the Jacobi scaling as one rank-one scaling.
        h2 = 0.5 * self.m * self.m * be.xp.diagonal(H) + mu * self.q
        if not (be.all_finite(h2) and be.scalar(be.xp.min(h2)) > 0):
            return None, np.nan
        h = be.xp.sqrt(h2)
        u = self.sqrt_half_m / h
        H = H * u[:, None] * u[None, :]
        n = H.shape[0]
        H[be.index(np.arange(n)), be.index(np.arange(n))] += mu * self.q / h2
        if not be.all_finite(H):
            return None, np.nan
        L = be.cholesky(H)
        if L is None:
            return None, np.nan
        step = -be.cho_solve(L, g / h) / h
        dec2 = -be.scalar(be.xp.sum(g * step))
        if not np.isfinite(dec2) or dec2 < 0:
            return None, np.nan
        return step, float(np.sqrt(dec2))


def _stage(pat: _DevicePattern, x, L, mu: float, *, tol: float, max_newton: int, exact_stage: bool = False,
           W=None):
    """:func:`.newton._stage` (without its early stops) on the backend: ``(x, L, W, converged, n_iter)``."""
    be = pat.be
    if L is None:
        L = pat.factor(x)
        if L is None:
            return x, None, W, False, 0
    if W is None:
        W = be.cho_inverse(L)
    f = pat.value(x, L, mu)
    prev = np.inf
    for it in range(1, max_newton + 1):
        step, dec = pat.direction(x, W, mu)
        if step is None:
            return x, L, W, False, it
        if dec <= tol or (dec <= _FLOOR and dec >= prev):
            L_new = pat.factor(x + step)
            if L_new is not None:
                x, L = x + step, L_new
                W = be.cho_inverse(L)
            return x, L, W, True, it
        if exact_stage and (dec >= _FULL_STEP or (prev < _FULL_STEP and dec > 0.5 * prev)):
            return x, L, W, False, it
        prev = dec
        if dec < _FULL_STEP:
            t = 1.0
            L_new = pat.factor(x + step)
            while L_new is None and t > 1e-12:
                t *= 0.5
                L_new = pat.factor(x + t * step)
            if L_new is None:
                return x, L, W, False, it
            x, L = x + t * step, L_new
            f = pat.value(x, L, mu)
        else:
            t = 1.0
            while True:
                x_new = x + t * step
                L_new = pat.factor(x_new)
                if L_new is not None:
                    f_new = pat.value(x_new, L_new, mu)
                    if f_new <= f - 0.25 * t * dec * dec:
                        break
                t *= 0.5
                if t < 1e-12:
                    return x, L, W, False, it
            x, L, f = x_new, L_new, f_new
        W = be.cho_inverse(L)
    return x, L, W, False, max_newton


def solve_newton_xp(
    p: Problem,
    *,
    init=None,
    mu0: float = DEFAULTS["mu0"],
    mu_min: float = DEFAULTS["mu_min"],
    mu_factor: float = DEFAULTS["mu_factor"],
    tol: float = DEFAULTS["tol"],
    max_newton: int = DEFAULTS["max_newton"],
    exact_limit: bool = DEFAULTS["exact_limit"],
    backend: str = "numpy",
) -> BlockSolution:
    """Solve one block as :func:`.newton.solve_newton` does, the dense kernels on ``backend``.

    Parameters
    ----------
    p, init, mu0, mu_min, mu_factor, tol, max_newton, exact_limit
        As for :func:`~paceggm.reconstruction.newton.solve_newton`.
    backend : str
        A name of :data:`paceggm.reconstruction.backend.BACKENDS`: ``"numpy"``
        (CPU), ``"torch"`` (the GPU if torch sees one), ``"torch:cuda"``,
        ``"cupy"``.

    Returns
    -------
    BlockSolution
        ``W`` and the state's precision as NumPy arrays (a :class:`NewtonState`,
        so any Newton solver can warm-start from it).
    """
    be = get_backend(backend)
    pat = _DevicePattern(p, be)
    mus = mu_schedule(mu0, mu_min, mu_factor)
    n_iter = 0
    best = None
    P0, _ = _assemble_warm_start(p, init, mus[-1])
    if P0 is not None:
        x = be.asarray(P0[p.rows, p.cols])
        x, L, W, ok, k = _stage(pat, x, None, mus[-1], tol=tol, max_newton=min(max_newton, _WARM_ITER))
        n_iter += k
        if ok:
            best = (x, L, W, mus[-1])
    for backoff in _BACKOFF:
        if best is not None:
            break
        lead = mu_schedule(mu0 * backoff, mu0, mu_factor)[:-1] if backoff > 1 else []
        schedule = [m for m in lead if m > mu0 * (1 + 1e-12)] + mus
        x = be.asarray((1.0 / diagonal_barrier_solution(p, schedule[0]))[p.rows] * (p.rows == p.cols))
        L, W = pat.factor(x), None
        for mu in schedule:
            x_new, L_new, W_new, ok, k = _stage(pat, x, L, mu, tol=tol, max_newton=max_newton, W=W)
            n_iter += k
            if not ok:
                break
            x, L, W = x_new, L_new, W_new
            if mu <= mu0:
                best = (x, L, W, mu)
    if best is None:
        raise RuntimeError(f"Newton ({be.name}) failed at the first barrier stage (mu={mu0:g}, also when starting "
                           f"the path at {mu0 * _BACKOFF[-1]:g}); the block's measurements are not usable")
    x, L, W, mu = best
    if exact_limit:
        x0, L0, W0, ok, k = _stage(pat, x, L, 0.0, tol=tol, max_newton=max_newton, exact_stage=True, W=W)
        n_iter += k
        if ok:
            x, W, mu = x0, W0, 0.0
    x_host = be.to_numpy(x)
    P = np.zeros((p.d, p.d))
    P[p.rows, p.cols] = x_host
    P[p.cols, p.rows] = x_host
    return BlockSolution(W=be.to_numpy(W), state=NewtonState(P, p.scale, mu), mu=mu, n_iter=n_iter,
                         converged=mu <= mu_min)

"""The Newton solver of :mod:`.newton` with its dense kernels on a :mod:`.backend` (a GPU when there is one).

The stages, stopping rules and warm starts are :mod:`.newton`'s own: the solve
is :func:`.newton._solve` with :class:`_XPKernels` for its dense kernels and
:func:`_direction` for its Newton steps, the path of :func:`.newton.solve_newton`.
Each iteration's dense work — the Cholesky factor of ``P``, ``W = P⁻¹``, the
``|S| × |S|`` Hessian gathered from ``W`` and its factorisation, the Newton
step — runs on the backend, and only ``|S|``-vectors, scalars and the answer
cross back to the host. On one core a round of a large block is a few seconds
of ``d³`` and ``|S|³`` work; a GPU does it in milliseconds (a dense Newton step
at d = 1,000: a few ms on an H100 against 0.4 s on one core).

With the ``"numpy"`` backend the same code runs on the CPU: that is how it is
tested without an accelerator. Its answers agree with :mod:`.newton`'s to the
exact solvers' tolerance (tested): the same iterations with other roundings
(the inverse from triangular solves instead of LAPACK's ``dpotri``, the
Hessian unscaled by its own Cholesky, not the reference's arithmetic order).
Far from completable, where ``P`` grows like ``1/μ``, those roundings can move
a stage's iteration count, and ``W`` by as much as the barrier's stationarity
floor (1.5e-8 relative, measured over 40 such rounds at d = 12).
"""

from __future__ import annotations

import numpy as np

from paceggm.reconstruction.backend import Backend, get_backend
from paceggm.reconstruction.newton import DEFAULTS, NewtonState, _solve
from paceggm.reconstruction.problem import Problem
from paceggm.reconstruction.result import BlockSolution


class _DevicePattern:
    """The pattern's fixed data on the backend (what :class:`.newton._Pattern` holds on the host)."""

    def __init__(self, p: Problem, be: Backend) -> None:
        self.be, self.d = be, p.d
        diag = p.rows == p.cols
        m = np.where(diag, 1.0, 2.0)
        lam = p.weights
        self.r, self.c = be.index(p.rows), be.index(p.cols)
        self.rows, self.cols = p.rows, p.cols
        self.m, self.q, self.y = be.asarray(m), be.asarray(np.where(diag, 0.5 / lam, 2.0 / lam)), be.asarray(p.targets)
        self.my = self.m * self.y
        self.sqrt_half_m = be.asarray(np.sqrt(0.5) * m)

    def entries(self, P: np.ndarray):
        """The pattern's entries of a host matrix ``P``, on the backend."""
        return self.be.asarray(P[self.rows, self.cols])

    def matrix(self, x):
        P = self.be.zeros((self.d, self.d))
        P[self.r, self.c] = x
        P[self.c, self.r] = x
        return P

    def factor(self, x):
        return self.be.cholesky(self.matrix(x)) if self.be.all_finite(x) else None

    def value(self, x, L, mu: float, logdet: float | None = None) -> float:
        """``F_μ`` at ``x``, from the factor ``L`` of ``P(x)`` or, when ``L`` is None, from its known ``logdet``."""
        xp = self.be.xp
        logdet = 2.0 * xp.sum(xp.log(xp.diagonal(L))) if L is not None else logdet
        return self.be.scalar(-logdet + xp.sum(self.my * x) + 0.5 * mu * xp.sum(self.q * x * x))


class _XPKernels:
    """:class:`.newton._DenseKernels` on a backend: the kernels :func:`.newton._stage` runs on, arrays on the device.

    A factor ``L`` is the backend's lower Cholesky factor of ``P(x)`` and ``W``
    its inverse from that factor (:meth:`.backend.Backend.cho_inverse`).
    """

    def __init__(self, be: Backend) -> None:
        self.be = be

    def pattern(self, p: Problem) -> _DevicePattern:
        return _DevicePattern(p, self.be)

    @staticmethod
    def factor(pat: _DevicePattern, x):
        return pat.factor(x)

    @staticmethod
    def start(pat: _DevicePattern, P0: np.ndarray):
        return pat.factor(pat.entries(P0))

    def inverse(self, L):
        return self.be.cho_inverse(L)

    @staticmethod
    def value(pat: _DevicePattern, x, L, mu: float, logdet: float | None = None) -> float:
        return pat.value(x, L, mu, logdet)

    @staticmethod
    def on_pattern(pat: _DevicePattern, W):
        return W[pat.r, pat.c]


def _direction(pat: _DevicePattern, x, W, mu: float):
    """``(Δ, δ)``: the Newton step and decrement at ``x``, or ``(None, nan)`` (:func:`.newton._newton_direction`'s)."""
    be, r, c = pat.be, pat.r, pat.c
    g = pat.m * (pat.y - W[r, c]) + mu * pat.q * x
    Wr, Wc = W[r], W[c]
    H = Wr[:, r] * Wc[:, c] + Wr[:, c] * Wc[:, r]
    # Weights m_i m_j / 2 and the Jacobi scaling as one rank-one scaling.
    h2 = 0.5 * pat.m * pat.m * be.xp.diagonal(H) + mu * pat.q
    if not (be.all_finite(h2) and be.scalar(be.xp.min(h2)) > 0):
        return None, np.nan
    h = be.xp.sqrt(h2)
    u = pat.sqrt_half_m / h
    H = H * u[:, None] * u[None, :]
    n = H.shape[0]
    H[be.index(np.arange(n)), be.index(np.arange(n))] += mu * pat.q / h2
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
    _, x, _, W, mu, n_iter = _solve(p, init, mu0=mu0, mu_min=mu_min, mu_factor=mu_factor, tol=tol,
                                    max_newton=max_newton, exact_limit=exact_limit, warm_direction=_direction,
                                    cold_direction=_direction, kernels=_XPKernels(be))
    x_host = be.to_numpy(x)
    P = np.zeros((p.d, p.d))
    P[p.rows, p.cols] = x_host
    P[p.cols, p.rows] = x_host
    return BlockSolution(W=be.to_numpy(W), state=NewtonState(P, p.scale, mu), mu=mu, n_iter=n_iter,
                         converged=mu <= mu_min)

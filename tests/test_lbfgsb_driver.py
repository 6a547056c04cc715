"""The direct L-BFGS-B driver returns exactly what ``scipy.optimize.minimize`` returns."""

import numpy as np
import pytest
from scipy.optimize import minimize

from paceggm.reconstruction import _lbfgsb
from paceggm.reconstruction._lbfgsb import minimize_lbfgsb


def _problem(n=60, seed=0):
    """A smooth, badly scaled objective whose minimiser has active lower bounds."""
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((n, n)) / np.sqrt(n)
    H = A @ A.T + np.diag(np.exp(rng.uniform(-4, 2, n)))
    b = rng.standard_normal(n) * 3

    def fun(x):
        r = H @ x - b
        return float(0.5 * x @ H @ x - b @ x + 0.1 * np.sum(np.log1p(x * x))), r + 0.2 * x / (1 + x * x)

    lower = np.full(n, -np.inf)
    lower[::3] = 0.0  # a third of the variables bounded below, several of them active
    return fun, rng.standard_normal(n), lower


def _scipy(fun, x0, lower, **opts):
    bounds = [(None if not np.isfinite(lo) else lo, None) for lo in lower]
    return minimize(fun, x0, jac=True, method="L-BFGS-B", bounds=bounds, options=opts)


@pytest.mark.parametrize("maxiter", [7, 40, 5000])
@pytest.mark.parametrize("maxcor", [3, 5, 20])
def test_iterates_are_bit_identical_to_minimize(maxiter, maxcor):
    fun, x0, lower = _problem()
    opts = dict(maxcor=maxcor, ftol=1e-12, gtol=1e-8, maxiter=maxiter, maxfun=2 * maxiter)
    ref = _scipy(fun, x0, lower, **opts)
    x, nit = minimize_lbfgsb(fun, x0, lower=lower, **opts)
    assert nit == ref.nit
    assert np.array_equal(x, ref.x)
    active = np.isfinite(lower) & (x == 0.0)
    if maxiter == 5000:
        assert active.any()  # the bounds matter in this problem
        assert ref.success


def test_the_start_is_clipped_into_the_bounds_as_minimize_does():
    fun, x0, lower = _problem(n=12, seed=3)
    x0[np.isfinite(lower)] = -5.0
    opts = dict(maxcor=5, ftol=1e-12, gtol=1e-8, maxiter=200, maxfun=400)
    x, nit = minimize_lbfgsb(fun, x0, lower=lower, **opts)
    ref = _scipy(fun, x0, lower, **opts)
    assert nit == ref.nit and np.array_equal(x, ref.x)
    assert np.all(x[np.isfinite(lower)] >= 0.0)


def test_fallback_through_minimize_gives_the_same_answer(monkeypatch):
    fun, x0, lower = _problem(n=30, seed=1)
    opts = dict(maxcor=5, ftol=1e-12, gtol=1e-8, maxiter=300, maxfun=600)
    fast = minimize_lbfgsb(fun, x0, lower=lower, **opts)
    monkeypatch.setattr(_lbfgsb, "DIRECT", False)
    slow = minimize_lbfgsb(fun, x0, lower=lower, **opts)
    assert fast[1] == slow[1] and np.array_equal(fast[0], slow[0])


def test_the_direct_driver_is_in_use_on_supported_scipy():
    import scipy

    major, minor = (int(p) for p in scipy.__version__.split(".")[:2])
    assert _lbfgsb.DIRECT == ((major, minor) >= (1, 15))

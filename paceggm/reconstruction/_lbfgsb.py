"""SciPy's L-BFGS-B routine driven without ``scipy.optimize.minimize``'s wrapper.

IPM-Cholesky runs tens of thousands of L-BFGS-B iterations per block on the large
blocks of a PACE-GGM run, at ``n = d(d+1)/2 ≈ 5,000`` variables. Per iteration,
``minimize`` adds Python work around the compiled routine (a ``ScalarFunction``
that copies and compares ``x``, a result object, a float64 copy of the gradient,
and at every call a Python loop over all ``n`` bounds), a large share of each
iteration (measured in docs/solvers.md).
This driver runs the same routine (``scipy.optimize._lbfgsb.setulb``) with the
same reverse-communication loop, stopping rules and workspace, so it returns
bit-identical iterates (tested against ``minimize``); it only leaves the
bookkeeping out.

``setulb`` is private to SciPy and its signature changed when SciPy 1.15 moved
L-BFGS-B from Fortran to C. The driver is used only with the signature it was
written for (SciPy ≥ 1.15); otherwise :func:`minimize_lbfgsb` calls ``minimize``,
which gives the same answer more slowly.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import scipy
from scipy.optimize import minimize

try:  # private API: see the module docstring
    from scipy.optimize._lbfgsb import setulb as _setulb
except ImportError:  # pragma: no cover - depends on the SciPy build
    _setulb = None

_VERSION = tuple(int(p) for p in scipy.__version__.split(".")[:2])
#: Whether the direct driver is used (else ``scipy.optimize.minimize``).
DIRECT = _setulb is not None and _VERSION >= (1, 15)

# setulb's task codes (scipy/optimize/__lbfgsb.h): what the routine asks for next.
_FG, _NEW_X, _STOP = 3, 1, 5
_STOP_MAXITER, _STOP_MAXFUN = 504, 502


def minimize_lbfgsb(
    fun: Callable[[np.ndarray], tuple[float, np.ndarray]],
    x0: np.ndarray,
    *,
    lower: np.ndarray,
    maxcor: int,
    ftol: float,
    gtol: float,
    maxiter: int,
    maxfun: int,
    maxls: int = 20,
) -> tuple[np.ndarray, int]:
    """Minimise ``fun`` (returning value and gradient) subject to ``x ≥ lower``.

    ``lower`` holds ``-inf`` for free variables. Options mean what they mean for
    ``minimize(method="L-BFGS-B")``. Returns the final ``x`` and the number of
    iterations.
    """
    x0 = np.asarray(x0, dtype=np.float64).ravel()
    lower = np.asarray(lower, dtype=np.float64)
    if not DIRECT:
        bounds = [(None if not np.isfinite(lo) else float(lo), None) for lo in lower]
        res = minimize(fun, x0, jac=True, method="L-BFGS-B", bounds=bounds,
                       options=dict(maxcor=maxcor, ftol=ftol, gtol=gtol, maxiter=maxiter, maxfun=maxfun,
                                    maxls=maxls))
        return res.x, int(res.nit)
    n, m = x0.size, maxcor
    bounded = np.isfinite(lower)
    nbd = bounded.astype(np.int32)  # 0: free, 1: lower bound only
    low = np.where(bounded, lower, 0.0)
    upp = np.zeros(n)
    x = np.maximum(x0, lower)  # minimize clips x0 into the bounds
    f, g = 0.0, np.zeros(n)
    wa = np.zeros(2 * m * n + 5 * n + 11 * m * m + 8 * m)
    iwa = np.zeros(3 * n, dtype=np.int32)
    task = np.zeros(2, dtype=np.int32)
    ln_task = np.zeros(2, dtype=np.int32)
    lsave = np.zeros(4, dtype=np.int32)
    isave = np.zeros(44, dtype=np.int32)
    dsave = np.zeros(29)
    factr = ftol / np.finfo(float).eps
    nit = nfev = 0
    while True:
        _setulb(m, x, low, upp, nbd, f, g, factr, gtol, wa, iwa, task, lsave, isave, dsave, maxls, ln_task)
        if task[0] == _FG:
            # minimize caches its last evaluation and does not count a request at the
            # same x again; re-evaluating returns the same values (so the same iterates)
            # and is cheaper than comparing x at every request. Only ``maxfun`` could
            # tell the difference.
            f, g = fun(x)
            g = np.asarray(g, dtype=np.float64)
            nfev += 1
        elif task[0] == _NEW_X:
            nit += 1
            if nit >= maxiter:
                task[:] = (_STOP, _STOP_MAXITER)
            elif nfev > maxfun:
                task[:] = (_STOP, _STOP_MAXFUN)
        else:
            return x, nit

"""Solving one block of the measured pattern, and what is kept of it between rounds."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from paceggm.reconstruction.problem import make_problem, measured_pattern, natural_units


def solve_block(y_b: np.ndarray, lam_b: np.ndarray, *, solve: Callable, init, options: dict,
                copy: bool = True) -> dict:
    """Solve the block with measurements ``(y_b, λ_b)`` in its natural units.

    Returns the block record :func:`paceggm.reconstruction.reconstruct` keeps:
    the block's measurements (to recognise it unchanged later; copies unless
    ``copy=False``, for a caller that hands them over), ``W`` in data units, the
    solver's warm-start ``state``, the absolute ``mu``, ``n_iter`` and
    ``converged``.
    """
    pattern = measured_pattern(lam_b)
    scale, lam_unit = natural_units(y_b, lam_b, pattern=pattern)
    prob = make_problem(y_b, lam_b, scale=scale, lam_unit=lam_unit, pattern=pattern)
    sol = solve(prob, init=init, **options)
    return {
        "y": y_b.copy() if copy else y_b,
        "lam": lam_b.copy() if copy else lam_b,
        "W": sol.W * scale,
        "state": sol.state,
        "mu": None if sol.mu is None else sol.mu * prob.mu_unit,
        "n_iter": sol.n_iter,
        "converged": sol.converged,
    }


def unchanged(block: dict | None, y_b: np.ndarray, lam_b: np.ndarray) -> bool:
    """Whether ``block`` was solved from exactly these measurements."""
    return block is not None and np.array_equal(block["y"], y_b) and np.array_equal(block["lam"], lam_b)

"""Solving one block of the measured pattern, and what is kept of it between rounds."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from paceggm.reconstruction.problem import make_problem, natural_units


def solve_block(y_b: np.ndarray, lam_b: np.ndarray, *, solve: Callable, init, options: dict) -> dict:
    """Solve the block with measurements ``(y_b, λ_b)`` in its natural units.

    Returns the block record :func:`paceggm.reconstruction.reconstruct` keeps:
    the block's measurements (to recognise it unchanged later), ``W`` in data
    units, the solver's warm-start ``state``, the absolute ``mu``, ``n_iter`` and
    ``converged``.
    """
    scale, lam_unit = natural_units(y_b, lam_b)
    prob = make_problem(y_b, lam_b, scale=scale, lam_unit=lam_unit)
    sol = solve(prob, init=init, **options)
    return {
        "y": y_b.copy(),
        "lam": lam_b.copy(),
        "W": sol.W * scale,
        "state": sol.state,
        "mu": None if sol.mu is None else sol.mu * prob.mu_unit,
        "n_iter": sol.n_iter,
        "converged": sol.converged,
    }


def unchanged(block: dict | None, y_b: np.ndarray, lam_b: np.ndarray) -> bool:
    """Whether ``block`` was solved from exactly these measurements."""
    return block is not None and np.array_equal(block["y"], y_b) and np.array_equal(block["lam"], lam_b)

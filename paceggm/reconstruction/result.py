"""What a reconstruction returns."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass(frozen=True)
class BlockSolution:
    """One solved block in normalised units.

    ``W`` is the estimate; ``state`` whatever the solver can warm-start from
    (its iterate); ``mu`` the final barrier parameter in normalised units
    (0 when the μ → 0 limit was reached exactly, None for solvers without a
    barrier); ``n_iter`` the iterations spent; ``converged`` False when the
    solver stopped at an iteration cap (or, for continuation solvers, before
    its last stage) rather than at its tolerance.
    """

    W: np.ndarray
    state: Any = None
    mu: float | None = None
    n_iter: int = 0
    converged: bool = True


@dataclass(frozen=True)
class Reconstruction:
    """A reconstructed covariance and how it was obtained.

    Attributes
    ----------
    covariance : ndarray of shape (d, d)
    solver : str
    components : list of ndarray
        The blocks solved separately (one block with all indices when the
        decomposition is off).
    solve_time : float
        Seconds spent in the solver for this call.
    mu : float or None
        Largest final barrier parameter over the blocks, in absolute units
        (``μ' · s²λ̄``); None for solvers without a barrier.
    n_solved : int
        Blocks actually solved (others were reused unchanged from ``previous``).
    n_iter : int
        Solver iterations of the blocks solved in this call.
    converged : bool
        Whether every block converged (reused blocks count as they did when solved).
    n_capped : int
        Blocks solved in this call that stopped before converging (see
        :class:`BlockSolution`).
    max_iter : int
        Most iterations one block solved in this call took (0 if none was solved).
    """

    covariance: np.ndarray
    solver: str
    components: list
    solve_time: float
    mu: float | None
    n_solved: int
    blocks: dict = field(default_factory=dict, repr=False)
    n_iter: int = 0
    converged: bool = True
    n_capped: int = 0
    max_iter: int = 0

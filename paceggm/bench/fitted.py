"""What a cell reads of a fitted estimator: the declared interface between harness and methods.

Every registered method's fitted instance satisfies :class:`FittedCovariance`
or :class:`FittedRegression` (by its task); one whose registry entry says
``measures="pattern"`` also satisfies :class:`ReportsPattern` — itself, or
through the attribute its entry names as ``inner``. :func:`read_fit` checks
this and returns a :class:`FitRecord`; a method that does not keep its side
fails its cells with a message naming the missing attribute, rather than
having a column silently left empty.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

from paceggm.bench.methods import MethodSpec

__all__ = ["FitRecord", "FittedCovariance", "FittedRegression", "ReportsPattern", "read_fit"]


@runtime_checkable
class FittedCovariance(Protocol):
    """A fitted covariance estimator: its release and the budget it spent."""

    covariance_: np.ndarray
    rho_spent_: float


@runtime_checkable
class FittedRegression(Protocol):
    """A fitted private linear regression."""

    rho_spent_: float

    def predict(self, X): ...


@runtime_checkable
class ReportsPattern(Protocol):
    """A PACE-GGM fit: which entries it measured, in how many rounds, the solver's time and convergence."""

    pattern_: np.ndarray  # (d, d) bool, symmetric
    n_rounds_: int
    solve_time_: float
    converged_: bool  # the solver converged in every round (no iteration cap hit)
    n_solves_: int  # block solves over all rounds
    n_capped_: int  # of those, the ones an iteration cap ended
    max_iter_: int  # most iterations of one solve


@dataclass(frozen=True)
class FitRecord:
    """The columns of a results row that come from the fitted estimator."""

    rho_spent: float
    n_measured_diag: int | None = None
    n_measured_offdiag: int | None = None
    n_rounds: int | None = None
    solve_time: float = math.nan
    converged: bool | None = None  # unknown for methods without an iterative solver
    n_solves: int | None = None
    n_capped_solves: int | None = None
    max_solve_iter: int | None = None


def read_fit(est, spec: MethodSpec, d: int) -> FitRecord:
    """The :class:`FitRecord` of ``est``, a fitted instance of ``spec``'s class on ``d`` features.

    Raises
    ------
    TypeError
        ``est`` lacks an attribute its task or its registry entry promises.
    """
    promised = FittedCovariance if spec.task == "covariance" else FittedRegression
    if not isinstance(est, promised):
        raise TypeError(f"method {spec.key!r}: a fitted {type(est).__name__} is not a {promised.__name__} "
                        f"(needs {', '.join(_members(promised))})")
    spent = float(est.rho_spent_)
    if spec.measures == "all":
        return FitRecord(spent, d, d * (d - 1) // 2)
    if spec.measures == "diagonal":
        return FitRecord(spent, d, 0)
    if spec.measures == "none":
        return FitRecord(spent)
    fit = getattr(est, spec.inner) if spec.inner else est
    if not isinstance(fit, ReportsPattern):
        raise TypeError(f"method {spec.key!r} declares measures='pattern', but its fitted "
                        f"{type(fit).__name__} lacks {', '.join(_members(ReportsPattern))}")
    pattern = np.asarray(fit.pattern_, dtype=bool)
    return FitRecord(spent, int(np.count_nonzero(np.diag(pattern))), int(np.count_nonzero(np.tril(pattern, -1))),
                     int(fit.n_rounds_), float(fit.solve_time_), bool(fit.converged_), int(fit.n_solves_),
                     int(fit.n_capped_), int(fit.max_iter_))


def _members(proto) -> list[str]:
    return sorted(n for n in (*getattr(proto, "__annotations__", {}), *vars(proto))
                  if not n.startswith("_"))

"""A zCDP budget ledger that records every charge and never overspends."""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

from paceggm._validation import check_rho
from paceggm.exceptions import BudgetExceededError

__all__ = ["BudgetExceededError", "Charge", "ZCDPLedger"]


@dataclass(frozen=True, slots=True)
class Charge:
    """One entry of the ledger: a zCDP cost and what it paid for."""

    rho: float
    purpose: str


def _float_at_most(value: Fraction) -> float:
    """The largest float that is ``<= value`` (exact rounding toward −∞)."""
    out = float(value)
    if Fraction(out) > value:
        out = math.nextafter(out, -math.inf)
    return out


class ZCDPLedger:
    """Budget accountant for adaptive composition under ρ-zCDP (budgets add).

    The running total is kept as an exact rational, so the guarantee
    ``sum(charges) <= budget`` holds exactly, not merely up to rounding, and
    :attr:`remaining` is rounded *down* so that spending it can never exceed the
    budget; a last charge of :attr:`remaining` leaves less than one ulp of the
    budget unspent (the exact rest is generally not a float).

    Parameters
    ----------
    budget : float
        Total ρ available, > 0.

    Examples
    --------
    >>> ledger = ZCDPLedger(1.0)
    >>> ledger.charge(0.3, "diagonal")
    >>> ledger.charge(ledger.remaining, "rest")
    >>> ledger.spent <= 1.0 and 1.0 - ledger.spent < 1e-15
    True
    """

    def __init__(self, budget: float) -> None:
        check_rho(budget, name="budget")
        self.budget = float(budget)
        self._budget = Fraction(self.budget)
        self._spent = Fraction(0)
        self._charges: list[Charge] = []

    def charge(self, rho: float, purpose: str) -> None:
        """Record a charge of ``rho`` for ``purpose``.

        Raises
        ------
        BudgetExceededError
            If the charge would take the exact total above the budget; nothing
            is recorded then.
        ValueError
            If ``rho`` is not a finite positive number.
        """
        check_rho(rho)
        new_total = self._spent + Fraction(float(rho))
        if new_total > self._budget:
            over = float(new_total - self._budget)
            raise BudgetExceededError(
                f"charging rho={rho!r} for {purpose!r} would exceed the budget "
                f"{self.budget!r} by {over:.3g} (already spent {float(self._spent)!r})"
            )
        self._spent = new_total
        self._charges.append(Charge(float(rho), purpose))

    @property
    def spent(self) -> float:
        """Total charged so far (rounded down to a float, so ``spent <= budget``)."""
        return _float_at_most(self._spent)

    @property
    def spent_exact(self) -> Fraction:
        """Total charged so far as an exact rational."""
        return self._spent

    @property
    def remaining(self) -> float:
        """Budget left, rounded down: charging it never exceeds the budget."""
        return _float_at_most(self._budget - self._spent)

    @property
    def charges(self) -> tuple[Charge, ...]:
        return tuple(self._charges)

    def by_purpose(self) -> dict[str, float]:
        """Total charged per purpose (exact sums, rounded down)."""
        totals: dict[str, Fraction] = {}
        for c in self._charges:
            totals[c.purpose] = totals.get(c.purpose, Fraction(0)) + Fraction(c.rho)
        return {k: _float_at_most(v) for k, v in totals.items()}

    def __repr__(self) -> str:
        return f"ZCDPLedger(budget={self.budget!r}, spent={self.spent!r}, charges={len(self._charges)})"

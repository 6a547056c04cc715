"""The zCDP ledger: exact sums, refusal to overspend, purposes."""

from fractions import Fraction

import numpy as np
import pytest

from paceggm.privacy import BudgetExceededError, ZCDPLedger


def test_charges_are_recorded_with_purpose():
    ledger = ZCDPLedger(1.0)
    ledger.charge(0.25, "a")
    ledger.charge(0.5, "b")
    ledger.charge(0.125, "a")
    assert [c.purpose for c in ledger.charges] == ["a", "b", "a"]
    assert ledger.by_purpose() == {"a": 0.375, "b": 0.5}
    assert ledger.spent == 0.875 and ledger.remaining == 0.125


def test_overspending_is_refused_and_nothing_recorded():
    ledger = ZCDPLedger(0.3)
    ledger.charge(0.2, "x")
    with pytest.raises(BudgetExceededError) as err:
        ledger.charge(0.2, "y")
    # what asked, the budget, the exact overshoot and what was spent
    assert str(err.value) == "charging rho=0.2 for 'y' would exceed the budget 0.3 by 0.1 (already spent 0.2)"
    assert len(ledger.charges) == 1 and ledger.spent == 0.2


def test_float_rounding_cannot_overspend():
    # In exact arithmetic the floats 0.1 + 0.2 exceed the float 0.3 by 2.8e-17:
    # a float-summing ledger would accept this charge and overspend.
    assert Fraction(0.1) + Fraction(0.2) > Fraction(0.3)
    ledger = ZCDPLedger(0.3)
    ledger.charge(0.1, "a")
    with pytest.raises(BudgetExceededError):
        ledger.charge(0.2, "b")
    ledger.charge(ledger.remaining, "b")
    assert ledger.spent_exact <= Fraction(0.3)
    assert ledger.spent <= 0.3


def test_remaining_is_rounded_down_and_spendable():
    rng = np.random.default_rng(0)
    for _ in range(2000):
        budget = float(10 ** rng.uniform(-6, 2))
        ledger = ZCDPLedger(budget)
        for _ in range(rng.integers(1, 30)):
            step = ledger.remaining * rng.uniform(0.01, 0.5)
            if step <= 0:
                break
            ledger.charge(step, "step")
        ledger.charge(ledger.remaining, "rest")
        assert ledger.spent_exact <= Fraction(budget)
        # What is left is below one ulp of the budget.
        assert float(Fraction(budget) - ledger.spent_exact) <= np.spacing(budget)


@pytest.mark.parametrize("bad", [0.0, -0.1, float("nan"), float("inf")])
def test_bad_charges_and_budgets(bad):
    # each refusal names what was wrong, word for word
    with pytest.raises(ValueError) as err:
        ZCDPLedger(bad)
    assert str(err.value) == f"budget must be a finite number > 0, got {bad!r}"
    with pytest.raises(ValueError) as err:
        ZCDPLedger(1.0).charge(bad, "x")
    assert str(err.value) == f"rho must be a finite number > 0, got {bad!r}"

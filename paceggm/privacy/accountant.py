"""A budget that several fits share: the accountant an estimator charges before it runs."""

from __future__ import annotations

from paceggm.privacy.accounting import approx_dp_to_zcdp
from paceggm.privacy.ledger import ZCDPLedger


class ZCDPAccountant(ZCDPLedger):
    """A ρ-zCDP budget shared by several fits; refuses any fit that would overspend it.

    Pass it as ``accountant=`` to any estimator of the project: each ``fit``
    charges its whole budget here *before* it touches the data, and a fit the
    remaining budget cannot pay for raises :class:`BudgetExceededError` with
    nothing spent and nothing computed. The running total is exact (see
    :class:`ZCDPLedger`), so ``spent <= budget`` always holds.

    An accountant stands for one real budget, so copying it would double that
    budget: :func:`copy.copy`, :func:`copy.deepcopy` — and therefore
    :func:`sklearn.base.clone`, ``GridSearchCV`` and ``cross_val_score`` —
    return the same object, and every clone charges the one shared budget.

    Parameters
    ----------
    budget : float
        Total ρ, > 0.

    Examples
    --------
    >>> import numpy as np
    >>> from paceggm import PACEGGM
    >>> from paceggm.exceptions import BudgetExceededError
    >>> X = np.random.default_rng(0).uniform(-1, 1, size=(500, 3))
    >>> acc = ZCDPAccountant(1.0)
    >>> _ = PACEGGM(rho=0.6, accountant=acc).fit(X)
    >>> try:
    ...     PACEGGM(rho=0.6, accountant=acc).fit(X)
    ... except BudgetExceededError:
    ...     print("refused; spent", acc.spent)
    refused; spent 0.6
    """

    @classmethod
    def from_approx_dp(cls, epsilon: float, delta: float) -> ZCDPAccountant:
        """An accountant holding the ρ that implies ``(epsilon, delta)``-DP (:func:`approx_dp_to_zcdp`)."""
        return cls(approx_dp_to_zcdp(epsilon, delta))

    def __copy__(self) -> ZCDPAccountant:
        return self

    def __deepcopy__(self, memo) -> ZCDPAccountant:
        return self

    def __repr__(self) -> str:
        return f"ZCDPAccountant(budget={self.budget!r}, spent={self.spent!r}, charges={len(self.charges)})"

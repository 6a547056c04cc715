"""Warnings and errors of the project, so users can filter or escalate them by class.

``ConvergenceWarning`` is scikit-learn's, re-exported: a capped solver is the
same event for a user whatever library raised it.
"""

from __future__ import annotations

from sklearn.exceptions import ConvergenceWarning

__all__ = [
    "AccountantUnavailableError", "BudgetExceededError", "ConvergenceWarning", "LedgerFileError",
    "PrivacyBudgetWarning", "PrivacyLeakWarning",
]


class BudgetExceededError(RuntimeError):
    """A charge would take the total spent above the budget; nothing was spent."""


class AccountantUnavailableError(RuntimeError):
    """The accountant cannot be charged here without starting a fresh budget; nothing was spent.

    Raised when a fit would charge a :class:`~paceggm.privacy.ZCDPAccountant`
    from a copy of it made by pickling (a joblib/loky or dask worker, a saved
    estimator loaded elsewhere) or from a forked process: the copy's budget is
    not the original's. Run the fits in the accountant's process (``n_jobs=1``
    or joblib's threading backend), or share one budget between processes with
    :class:`~paceggm.privacy.FileZCDPAccountant`.
    """


class LedgerFileError(AccountantUnavailableError):
    """A file ledger is gone, replaced, edited or damaged; nothing was spent.

    Raised by :class:`~paceggm.privacy.FileZCDPAccountant` when the file at its
    path is not the ledger the handle opened — deleted or moved, created anew,
    replaced by another file or by a copy, its header (identity, budget,
    format) changed or charges removed — or cannot be read as a ledger at all.
    Charging it, or reading it as an empty ledger, would start a fresh budget.
    """


class PrivacyLeakWarning(UserWarning):
    """The stated privacy guarantee is void or weaker than the budget says.

    Raised, for example, when ``bound_check="waive"`` lets data outside the
    declared bound reach a mechanism calibrated to that bound. Turn it into an
    error with ``warnings.simplefilter("error", PrivacyLeakWarning)``.
    """


class PrivacyBudgetWarning(UserWarning):
    """Budget is being spent in a way the estimator cannot account for on its own.

    Raised when an estimator without an accountant is fitted again: the second
    fit spends its budget again, and only the caller knows whether the two fits
    saw the same people.
    """

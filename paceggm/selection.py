"""Choosing an estimator's parameters under privacy, with the whole cost stated up front.

:class:`PrivateGridSearch` is the private counterpart of ``GridSearchCV`` for
the project's estimators (docs/estimators.md, *Budgets*). With ``m`` candidates, a total
budget ``ρ`` and ``refit_fraction = f``:

1. the rows are split at random — independently of their values — into a
   training part and a hold-out part (``holdout`` of the rows);
2. each candidate is fitted on the training part at ``(1 − f)ρ / m``
   (sequential composition: ``(1 − f)ρ`` on that part);
3. each candidate's estimate is scored on the hold-out part by
   ``−‖Σ̂ + μ̂μ̂ᵀ − X_hᵀX_h / n_h‖_F`` (its distance to the hold-out second
   moment, data clipped to ``[-B, B]``), whose sensitivity to one hold-out
   row is ``sqrt(2) d B² / n_h`` (the candidates do not depend on the hold-out
   rows); the exponential mechanism picks one at ``(1 − f)ρ``;
4. the chosen parameters are refitted on all rows at ``fρ`` (or, with
   ``f = 0``, the chosen candidate fit is returned).

Steps 2 and 3 touch disjoint rows, so under replace-one neighbours they cost
``max((1 − f)ρ, (1 − f)ρ) = (1 − f)ρ`` together (parallel composition), and
the whole search is ``ρ``-zCDP: the candidate fits, the choice and the final
fit are all covered; only the chosen index and the paid-for fits leave it
(no hold-out score is kept).

Every accountant the search is given — its own ``accountant`` and the tuned
estimator's — is charged ``ρ`` once (one accountant given twice, or two
handles on one ledger file, once), after every check and before anything is
computed; the candidates and the refit run without one.
"""

from __future__ import annotations

import math
import os
from fractions import Fraction

import numpy as np
from sklearn.base import clone
from sklearn.model_selection import ParameterGrid

from paceggm._validation import check_bound, check_data, check_random_state, enforce_bound
from paceggm.base import PrivateCovarianceEstimator, PrivateEstimator
from paceggm.exceptions import BudgetExceededError
from paceggm.privacy import Charge, FileZCDPAccountant, exponential_mechanism, full_sensitivity
from paceggm.privacy.accountant import check_accountant
from paceggm.privacy.ledger import _float_at_most
from paceggm.privacy.mechanisms import check_noise

__all__ = ["PrivateGridSearch"]

_BUDGET_PARAMS = ("rho", "epsilon", "delta", "accountant", "noise", "random_state")


class PrivateGridSearch(PrivateEstimator):
    """Private choice among parameter settings of a private estimator, at a total budget ``rho``.

    Parameters
    ----------
    estimator : PrivateEstimator
        The estimator to tune (one of the project's: it declares a data
        ``bound`` and a ``bound_check``, which the search applies before
        anything is spent). Its own ``rho``/``epsilon``/``delta`` are ignored
        (the search sets each fit's budget); its ``accountant``, if set, is
        charged the search's whole ``rho``, as ``accountant`` is.
    param_grid : dict or list of dicts
        As for :class:`sklearn.model_selection.GridSearchCV`; may not name the
        budget parameters or ``random_state``.
    rho : float or None
        Total zCDP budget of the whole search (or give ``epsilon`` and ``delta``).
    epsilon, delta : float or None
    accountant : ZCDPAccountant, FileZCDPAccountant or None
        Charged the whole ``rho`` once, after every check and before anything is
        computed, as is ``estimator.accountant`` (once in all when both are one
        budget). Each must be able to pay, or the search is refused
        (``BudgetExceededError``, ``AccountantUnavailableError``) with nothing
        charged to either.
    refit_fraction : float in [0, 1), default=0.5
        Share of ``rho`` for refitting the chosen setting on all rows.
    holdout : float in (0, 1), default=0.5
        Share of the rows that score the candidates.
    scoring : "frobenius" or callable, default="frobenius"
        ``"frobenius"`` (covariance estimators) is the negative Frobenius
        distance above. A callable ``scoring(estimator, X_holdout, y_holdout)``
        needs ``score_sensitivity``: a bound on how much its value can change
        when one hold-out row is replaced (for fixed ``estimator``).
    score_sensitivity : float or None
        Required with a callable ``scoring``.
    random_state : None, int, SeedSequence, Generator or RandomState
        The split, the candidates' noise and the selection. ``None`` for a real release.

    Notes
    -----
    The search draws as the tuned estimator does: with ``estimator.noise="exact"``
    the selection uses the exact exponential mechanism too, and with
    ``random_state=None`` the candidates, the selection and the refit draw every
    noise bit from :mod:`secrets` (docs/estimators.md, *Exact noise*); only the split, which
    does not depend on the data, comes from a NumPy Generator.

    Attributes
    ----------
    best_index_ : int
        Index of the chosen setting in ``candidates_``.
    best_params_ : dict
    best_estimator_ : PrivateEstimator
        Fitted on all rows at ``refit_fraction · rho`` (or the chosen candidate
        fit on the training part when ``refit_fraction == 0``).
    candidates_ : list of dict
    candidate_rho_ : float
        Budget of each candidate fit.
    rho_spent_ : float
        The search's zCDP cost (at most ``rho``), by the composition above.
    ledger_ : tuple of Charge

    Examples
    --------
    >>> import numpy as np
    >>> from paceggm import PACEGGM
    >>> X = np.random.default_rng(0).uniform(-1, 1, size=(4000, 4))
    >>> search = PrivateGridSearch(PACEGGM(), {"alpha": [0.1, 0.3], "beta": [0.3, 0.5]}, rho=1.0,
    ...                            random_state=0).fit(X)
    >>> sorted(search.best_params_), search.rho_spent_ <= 1.0
    (['alpha', 'beta'], True)
    """

    def __init__(self, estimator, param_grid, *, rho: float | None = None, epsilon: float | None = None,
                 delta: float | None = None, accountant=None, refit_fraction: float = 0.5, holdout: float = 0.5,
                 scoring="frobenius", score_sensitivity: float | None = None, random_state=None) -> None:
        self.estimator = estimator
        self.param_grid = param_grid
        self.rho = rho
        self.epsilon = epsilon
        self.delta = delta
        self.accountant = accountant
        self.refit_fraction = refit_fraction
        self.holdout = holdout
        self.scoring = scoring
        self.score_sensitivity = score_sensitivity
        self.random_state = random_state

    def _candidates(self) -> list[dict]:
        if not isinstance(self.estimator, PrivateEstimator):
            raise TypeError(f"estimator must be a paceggm private estimator, got {type(self.estimator).__name__}")
        if not hasattr(self.estimator, "bound"):
            raise TypeError(f"{type(self.estimator).__name__} declares no data bound: the search checks the data "
                            "against each candidate's bound before anything is spent")
        candidates = list(ParameterGrid(self.param_grid))
        if not candidates:
            raise ValueError("param_grid has no candidate")
        self._accountants()  # an accountant of the wrong type is refused with the rest
        named = sorted({k for c in candidates for k in c} & set(_BUDGET_PARAMS))
        if named:
            raise ValueError(f"param_grid may not set {named}: the search sets each fit's budget and randomness")
        return candidates

    def _settings(self, n: int):
        """Everything the fit needs, validated before any budget is spent."""
        rho = self._budget()
        candidates = self._candidates()
        f, h = self.refit_fraction, self.holdout
        if isinstance(f, bool) or not isinstance(f, (int, float)) or not 0.0 <= f < 1.0:
            raise ValueError(f"refit_fraction must be in [0, 1), got {f!r}")
        if isinstance(h, bool) or not isinstance(h, (int, float)) or not 0.0 < h < 1.0:
            raise ValueError(f"holdout must be in (0, 1), got {h!r}")
        n_hold = int(round(h * n))
        if n_hold < 1 or n - n_hold < 2:
            raise ValueError(f"holdout={h!r} leaves {n_hold} hold-out and {n - n_hold} training rows of {n}: "
                             "both parts need rows")
        if callable(self.scoring):
            if self.score_sensitivity is None:
                raise ValueError("a callable scoring needs score_sensitivity (its change when one hold-out row "
                                 "is replaced)")
            sensitivity = float(self.score_sensitivity)
            if not (math.isfinite(sensitivity) and sensitivity > 0):
                raise ValueError(f"score_sensitivity must be a finite number > 0, got {self.score_sensitivity!r}")
        elif self.scoring == "frobenius":
            if not isinstance(self.estimator, PrivateCovarianceEstimator):
                raise ValueError("scoring='frobenius' scores covariance estimators; for "
                                 f"{type(self.estimator).__name__} pass scoring=callable and score_sensitivity")
            sensitivity = None  # needs d and the bound: set in fit
        else:
            raise ValueError(f"scoring must be 'frobenius' or a callable, got {self.scoring!r}")
        stage = (1.0 - f) * rho
        each = _float_at_most(Fraction(stage) / len(candidates))  # m charges of it never exceed the stage
        fits = []
        for params in candidates:  # every candidate's own checks, before anything is paid
            est = clone(self.estimator).set_params(**params, rho=each, epsilon=None, delta=None, accountant=None)
            est._budget()
            est._check_params()
            fits.append(est)
        return rho, candidates, fits, stage, each, n_hold, sensitivity

    def fit(self, X, y=None):
        """Fit every candidate, choose one privately, refit it.

        Parameters
        ----------
        X : array_like of shape (n_samples, n_features)
        y : array_like of shape (n_samples,) or None
            For estimators that take one.

        Returns
        -------
        self
        """
        arr = check_data(X)
        n, d = arr.shape
        rho, candidates, fits, stage, each, n_hold, sensitivity = self._settings(n)
        bound = float(max(est.bound for est in fits))
        check_bound(bound, d=d)
        for est in fits:  # data a candidate would refuse are refused before anything is paid
            if est.bound_check == "raise":
                # and values within rounding of its bound are clipped here, so a callable scoring
                # never sees a hold-out row beyond the bound its sensitivity assumes
                arr = enforce_bound(arr, float(est.bound), "raise")
        noise = check_noise(self.estimator.noise)
        rng = check_random_state(self.random_state)
        # Exact noise, unseeded, is a real release: every fit's and the selection's bits come from secrets.
        from_secrets = noise == "exact" and self.random_state is None
        self._pay(rho)

        order = rng.permutation(n)  # independent of the data: each row lands in one part
        hold, train = np.sort(order[:n_hold]), np.sort(order[n_hold:])
        y_arr = None if y is None else np.asarray(y)
        for est in fits:
            est.set_params(random_state=None if from_secrets else rng.integers(2**63))
            est.fit(arr[train], None if y_arr is None else y_arr[train])
        X_hold = arr[hold]
        if callable(self.scoring):
            y_hold = None if y_arr is None else y_arr[hold]
            scores = np.array([float(self.scoring(est, X_hold, y_hold)) for est in fits])
        else:
            scores, sensitivity = frobenius_scores(fits, X_hold, bound=bound)
        if not np.all(np.isfinite(scores)):
            raise ValueError("a candidate's score is not finite: the scoring must return finite numbers")
        best = exponential_mechanism(scores, rho=stage, sensitivity=sensitivity, rng=None if from_secrets else rng,
                                     noise=noise)

        charges = [Charge(stage, f"{len(fits)} candidate fits (training part) ∥ selection (hold-out part)")]
        if self.refit_fraction > 0:
            refit_rho = _float_at_most(Fraction(rho) - Fraction(stage))
            final = clone(self.estimator).set_params(**candidates[best], rho=refit_rho, epsilon=None, delta=None,
                                                     accountant=None,
                                                     random_state=None if from_secrets else rng.integers(2**63))
            final.fit(arr, y_arr)
            charges.append(Charge(refit_rho, "refit of the chosen setting (all rows)"))
        else:
            final = fits[best]
        self._record_spent(charges, rho)
        self.candidates_ = candidates
        self.candidate_rho_ = each
        self.best_index_ = int(best)
        self.best_params_ = dict(candidates[best])
        self.best_estimator_ = final
        self.n_features_in_ = d
        return self

    def _accountants(self) -> list:
        """The distinct budgets to charge: ``accountant`` and ``estimator.accountant``, each checked."""
        found = []
        for accountant in (check_accountant(self.accountant), check_accountant(self.estimator.accountant)):
            if accountant is not None and not any(_same_budget(accountant, other) for other in found):
                found.append(accountant)
        return found

    def _pay(self, rho: float) -> None:
        """Charge every accountant ``rho`` once, after checking that each can pay (else charge none)."""
        accountants = self._accountants()
        if not accountants:
            return super()._pay(rho)  # no budget to charge: a refit warns
        purpose = f"{type(self).__name__}.fit"
        for accountant in accountants:
            _refuse_unless_payable(accountant, rho, purpose)
        # A fit elsewhere can still spend a shared budget between the check and its charge; then a
        # charge made here stays made (the search is refused, over-counted, never under-counted).
        for accountant in accountants:
            accountant.charge(rho, purpose)


def _same_budget(a, b) -> bool:
    """Whether two accountants are one budget: the same object, or two handles on one ledger file.

    Files are compared by resolved path, without touching them: two names of one file (hard
    links) count as two budgets, which charges it twice (over-counted, never under-counted).
    """
    if a is b:
        return True
    return (isinstance(a, FileZCDPAccountant) and isinstance(b, FileZCDPAccountant)
            and os.path.realpath(a.path) == os.path.realpath(b.path))


def _refuse_unless_payable(accountant, rho: float, purpose: str) -> None:
    """Raise what ``accountant.charge(rho, purpose)`` would raise, charging nothing."""
    if getattr(accountant, "detached", False):
        accountant.charge(rho, purpose)  # a detached copy refuses every charge and records none
    spent = accountant.spent_exact
    if spent + Fraction(rho) > Fraction(accountant.budget):
        raise BudgetExceededError(
            f"charging rho={rho!r} for {purpose!r} would exceed the budget {accountant.budget!r} of {accountant!r} "
            f"by {float(spent + Fraction(rho) - Fraction(accountant.budget)):.3g}; nothing was charged"
        )


def frobenius_scores(fits, X_hold: np.ndarray, *, bound: float) -> tuple[np.ndarray, float]:
    """``−‖Σ̂ + μ̂μ̂ᵀ − X_hᵀX_h/n_h‖_F`` per fitted covariance estimator, and its sensitivity to one row of ``X_h``.

    The rows are clipped to ``[-bound, bound]`` first (part of the score, so its
    sensitivity ``sqrt(2) d B² / n_h`` holds whatever the data): replacing a
    row moves ``X_hᵀX_h/n_h`` by at most that in Frobenius norm
    (:func:`~paceggm.privacy.full_sensitivity`), and each score by no more
    (triangle inequality), the estimates being fixed.
    """
    n_hold, d = X_hold.shape
    X_hold = enforce_bound(X_hold, bound, "clip")
    moment = X_hold.T @ X_hold / n_hold
    scores = np.array([-np.linalg.norm(est.covariance_ + np.outer(est.location_, est.location_) - moment)
                       for est in fits])
    return scores, full_sensitivity(n=n_hold, d=d, bound=bound)

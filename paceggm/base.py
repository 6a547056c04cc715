"""What every private estimator of the project shares: budget, accounting, data checks.

The estimators are scikit-learn estimators (``clone``, ``Pipeline``,
``GridSearchCV`` work; ``check_estimator`` passes up to the checks listed in
:meth:`PrivateEstimator._xfail_checks`). On top of scikit-learn's contract:

* a budget is ``rho`` (ρ-zCDP) or ``epsilon`` and ``delta`` ((ε, δ)-DP,
  converted exactly by :func:`paceggm.privacy.approx_dp_to_zcdp`);
* an optional ``accountant`` (:class:`paceggm.privacy.ZCDPAccountant`, or
  :class:`paceggm.privacy.FileZCDPAccountant` across processes) shared by
  several fits is charged before the data are touched, and refuses a fit it
  cannot pay for — or one run on a copy of it that cannot reach the budget;
* scikit-learn model selection fitting an estimator without an accountant
  warns (:class:`PrivacyBudgetWarning`);
* refitting without an accountant warns (:class:`PrivacyBudgetWarning`) and
  ``rho_spent_`` keeps the total over every fit of the object, so it never
  under-reports;
* nothing data-dependent is kept unless a mechanism paid for it.

:class:`PrivateCovarianceEstimator` adds the covariance surface of
:class:`sklearn.covariance.EmpiricalCovariance`: ``location_``,
``covariance_``, ``precision_``, ``score``, ``mahalanobis``, ``error_norm``.
"""

from __future__ import annotations

import sys
import warnings
from fractions import Fraction

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.covariance import empirical_covariance, log_likelihood
from sklearn.utils.validation import check_is_fitted, validate_data

from paceggm._validation import (
    check_bound,
    check_data,
    check_open_fraction,
    check_rho,
    enforce_bound,
)
from paceggm.exceptions import BudgetExceededError, PrivacyBudgetWarning
from paceggm.privacy import ZCDPLedger, approx_dp_to_zcdp, gaussian_mechanism, mean_sensitivity
from paceggm.privacy.accountant import check_accountant
from paceggm.privacy.ledger import _float_at_most
from paceggm.privacy.mechanisms import DEFAULT_NOISE, noise_source

# Eigenvalue floor of the scored covariance, relative to the largest eigenvalue (see ``score``).
SCORE_FLOOR = 1e-6


class PrivateEstimator(BaseEstimator):
    """Base class: the privacy budget, its accounting across fits, and input checks.

    Subclasses store ``rho``, ``epsilon``, ``delta``, ``accountant``,
    ``noise`` and ``random_state`` as parameters and call :meth:`_budget`
    (after validating everything else), :meth:`_noise_rng`, :meth:`_pay`
    (right before the first mechanism) and :meth:`_record_spent`.

    ``noise`` is ``"fast"`` (doubles from a NumPy Generator, the default) or
    ``"exact"`` (exact integer noise, :mod:`paceggm.privacy.exact`; with
    ``random_state=None`` its bits come from :mod:`secrets`: a real release);
    every mechanism of the fit gets ``noise=self.noise`` and the ``rng`` of
    :meth:`_noise_rng`. Both cost exactly the same ρ.
    """

    # An estimator without the parameter draws fast noise; every estimator of the library declares it.
    noise = DEFAULT_NOISE

    def _noise_rng(self):
        """The ``rng`` the fit's mechanisms draw from (None: :mod:`secrets`); refuses a bad ``noise`` in one line."""
        return noise_source(self.random_state, self.noise)

    def _budget(self) -> float:
        """The ρ of one fit, from ``rho`` or from ``(epsilon, delta)``."""
        rho, epsilon, delta = self.rho, self.epsilon, self.delta
        if rho is not None:
            if epsilon is not None or delta is not None:
                raise ValueError("give the budget either as rho (zCDP) or as epsilon and delta, not both")
            return check_rho(rho)
        if epsilon is None:
            raise ValueError(
                f"{type(self).__name__} has no privacy budget: pass rho=... (zCDP) or epsilon=... and delta=..."
            )
        if delta is None:
            raise ValueError("epsilon needs delta: pass delta in (0, 1), e.g. delta=1e-6, or give rho instead")
        return approx_dp_to_zcdp(epsilon, delta)

    def _pay(self, rho: float) -> None:
        """Charge the accountant (or warn on a refit without one) before any mechanism runs."""
        accountant = check_accountant(self.accountant)
        if accountant is not None:
            accountant.charge(rho, f"{type(self).__name__}.fit")
        elif getattr(self, "_rho_spent_total", None) is not None:
            warnings.warn(
                f"{type(self).__name__} is fitted again without an accountant: this fit spends rho={rho!r} more. "
                "rho_spent_ reports the total over all fits of this object; pass accountant= to account across "
                "fits (and across clones) explicitly",
                PrivacyBudgetWarning, stacklevel=3,
            )

    def __sklearn_clone__(self):
        # GridSearchCV, cross_val_score and the other model-selection tools clone the
        # estimator once per fit, in the calling process: the one place that sees a search.
        if self.accountant is None:
            caller = _model_selection_caller()
            if caller is not None:
                warnings.warn(
                    f"{type(self).__name__} is fitted by scikit-learn's {caller} without an accountant: every fold "
                    "and candidate spends the estimator's budget again and nothing adds them up, and the scores "
                    "and choice made from held-out data are not private. Pass accountant=ZCDPAccountant(total) "
                    "(FileZCDPAccountant.create(path, total) with n_jobs > 1) to bound the total, or choose parameters "
                    "privately with paceggm.PrivateGridSearch",
                    PrivacyBudgetWarning, stacklevel=3,
                )
        return super().__sklearn_clone__()

    def _record_spent(self, charges, rho: float) -> None:
        """Set ``ledger_`` and the running total ``rho_spent_`` (exact sums, rounded down like the ledger)."""
        spent = sum((Fraction(c.rho) for c in charges), Fraction(0))
        if spent > Fraction(rho):  # the ledgers make this impossible; checked so it can never pass silently
            raise BudgetExceededError(f"a fit spent {float(spent)!r} of a budget of {rho!r}")
        total = getattr(self, "_rho_spent_total", Fraction(0)) + spent
        self._rho_spent_total = total
        self.ledger_ = tuple(charges)
        self.rho_spent_ = _float_at_most(total)

    def _check_fit_data(self, X, *, bound: float, bound_check: str, name: str = "X") -> np.ndarray:
        """``X`` as a checked float array within the bound; sets ``n_features_in_`` (and feature names)."""
        arr = check_data(X, name=name)
        check_bound(bound, d=arr.shape[1])
        # Feature names (of a DataFrame) and n_features_in_, as scikit-learn records them. For a
        # NumPy array that is the width and no names: set here, without scikit-learn's dataframe
        # detection, which costs more than a small release itself (audits run such fits by the 10,000).
        if type(X) is np.ndarray:
            self.n_features_in_ = arr.shape[1]
            if hasattr(self, "feature_names_in_"):
                del self.feature_names_in_
        else:
            validate_data(self, X, skip_check_array=True, reset=True)
        return enforce_bound(arr, float(bound), bound_check, name=name, stacklevel=4)

    def _check_new_data(self, X) -> np.ndarray:
        """Data given to a fitted estimator (scoring, prediction): no bound, same features."""
        check_is_fitted(self)
        arr = check_data(X, min_samples=1)
        validate_data(self, X, skip_check_array=True, reset=False)
        return arr

    @classmethod
    def _xfail_checks(cls) -> dict[str, str]:
        """``check_estimator`` checks a private estimator fails by nature, with the reason.

        Pass as ``check_estimator(est, expected_failed_checks=type(est)._xfail_checks())``.
        """
        return {}

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # Refitting spends budget again and draws fresh noise unless random_state is fixed.
        tags.non_deterministic = self.random_state is None
        return tags


class PrivateCovarianceEstimator(PrivateEstimator):
    """Covariance estimators: ``fit(X)`` → ``location_``, ``covariance_``, ``precision_``.

    Subclasses implement ``_estimate(X, *, rho, bound, rng) -> (covariance, charges)``
    on data that passed the checks, spending at most ``rho``; this class does
    the checks, the accounting, and the optional private centring.

    Centring. With ``assume_centered=True`` (the default) the estimate is of
    the second-moment matrix ``XᵀX/n`` and ``location_`` is 0: the covariance
    of data whose mean is 0, which is how the project's preprocessing prepares
    every data set (and what the published experiments estimated). With
    ``assume_centered=False`` a fraction ``mean_fraction`` of ``rho`` releases
    the mean (Gaussian mechanism, ℓ2 sensitivity ``2 sqrt(d) B/n``), clipped to
    ``[-B, B]``; the data are centred on it, so they lie in ``[-2B, 2B]``, and
    the rest of ``rho`` estimates their covariance with bound ``2B``.
    """

    def fit(self, X, y=None):
        """Estimate the covariance of ``X`` privately.

        Parameters
        ----------
        X : array_like of shape (n_samples, n_features)
            Every value in ``[-bound, bound]`` (see ``bound_check``).
        y : None
            Ignored.

        Returns
        -------
        self
        """
        rho = self._budget()
        self._check_params()
        X = self._check_fit_data(X, bound=self.bound, bound_check=self.bound_check)
        if not isinstance(self.assume_centered, (bool, np.bool_)):
            raise TypeError(f"assume_centered must be a bool, got {self.assume_centered!r}")
        mean_fraction = None if self.assume_centered else check_open_fraction(self.mean_fraction, "mean_fraction")
        rng = self._noise_rng()
        self._check_scales(*X.shape, rho=rho, bound=float(self.bound) * (1.0 if self.assume_centered else 2.0))
        self._pay(rho)  # the last step before the first mechanism: bad input above spends nothing
        bound = float(self.bound)
        ledger = ZCDPLedger(rho)
        if self.assume_centered:
            location = np.zeros(X.shape[1])
        else:
            location = _private_mean(X, rho=mean_fraction * rho, bound=bound, ledger=ledger, rng=rng, noise=self.noise)
            X = X - location
            bound = 2.0 * bound
        # The covariance step gets what is left (all of rho when nothing was spent on the mean).
        rest = rho if self.assume_centered else ledger.remaining
        covariance, charges = self._estimate(X, rho=rest, bound=bound, rng=rng)
        self._record_spent((*ledger.charges, *charges), rho)
        self.location_ = location
        self.covariance_ = covariance
        return self

    @property
    def precision_(self) -> np.ndarray:
        """The pseudo-inverse of ``covariance_``, computed on first use and kept until the next fit.

        On first use, not in ``fit``: a d × d pseudo-inverse costs as much as a small fit, and the
        harness's metrics and the privacy audit never read it.
        """
        covariance = self.covariance_  # before fit: AttributeError, as for any fitted attribute
        cached = self.__dict__.get("_precision")
        if cached is None or cached[0] is not covariance:
            cached = self._precision = (covariance, np.linalg.pinv(covariance, hermitian=True))
        return cached[1]

    def _check_params(self) -> None:
        """Validate the estimator's own parameters (before any budget is spent)."""

    def _check_scales(self, n: int, d: int, *, rho: float, bound: float) -> None:
        """Refuse budgets and bounds whose noise scales overflow (before any budget is spent)."""

    def _estimate(self, X, *, rho: float, bound: float, rng: np.random.Generator):
        raise NotImplementedError

    def get_precision(self) -> np.ndarray:
        """The pseudo-inverse of ``covariance_`` (as :class:`~sklearn.covariance.EmpiricalCovariance`)."""
        check_is_fitted(self)
        return self.precision_

    def score(self, X_test, y=None) -> float:
        """Mean Gaussian log-likelihood of ``X_test`` under ``N(location_, Σ₊)``: finite for every release.

        ``Σ₊`` is ``covariance_`` with its eigenvalues raised to at least
        ``SCORE_FLOOR · λ_max`` (``λ_max`` its largest eigenvalue, or ``bound²``
        if none is positive): the nearest positive definite matrix in that
        sense. A positive definite release whose eigenvalues all lie above the
        floor scores exactly as :meth:`sklearn.covariance.EmpiricalCovariance.score`;
        an indefinite one (a noisy release may be) is penalised through the
        directions it claims have almost no variance, instead of scoring
        ``-inf`` — so model selection can rank it.

        Parameters
        ----------
        X_test : array_like of shape (n_samples, n_features)
        y : None
            Ignored.

        Returns
        -------
        float
        """
        X_test = self._check_new_data(X_test)
        w, V = np.linalg.eigh(self.covariance_)
        top = w.max()
        floor = SCORE_FLOOR * (top if top > 0.0 else float(self.bound) ** 2)
        w = np.maximum(w, floor)
        precision = (V / w) @ V.T
        test_cov = empirical_covariance(X_test - self.location_, assume_centered=True)
        return float(log_likelihood(test_cov, precision))

    def mahalanobis(self, X) -> np.ndarray:
        """Squared Mahalanobis distances of the rows of ``X`` to ``location_`` under ``precision_``.

        Parameters
        ----------
        X : array_like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        X = self._check_new_data(X) - self.location_
        return np.einsum("ij,jk,ik->i", X, self.precision_, X)

    def error_norm(self, comp_cov, norm: str = "frobenius", scaling: bool = True, squared: bool = True) -> float:
        """Error between ``comp_cov`` and ``covariance_``, as :meth:`sklearn.covariance.EmpiricalCovariance.error_norm`.

        Parameters
        ----------
        comp_cov : array_like of shape (n_features, n_features)
        norm : {"frobenius", "spectral"}
        scaling : bool
            Divide the squared norm by ``n_features``.
        squared : bool
            Return the squared norm.

        Returns
        -------
        float
        """
        check_is_fitted(self)
        error = np.asarray(comp_cov, dtype=float) - self.covariance_
        if norm == "frobenius":
            squared_norm = float(np.sum(error**2))
        elif norm == "spectral":
            squared_norm = float(np.linalg.norm(error, 2) ** 2)
        else:
            raise ValueError(f"norm must be 'frobenius' or 'spectral', got {norm!r}")
        if scaling:
            squared_norm /= error.shape[0]
        return squared_norm if squared else float(np.sqrt(squared_norm))


def _model_selection_caller() -> str | None:
    """The outermost scikit-learn model-selection call on the stack (``GridSearchCV.fit``, ``cross_val_score``…)."""
    found = None
    frame = sys._getframe(2)
    while frame is not None:
        code = frame.f_code
        if frame.f_globals.get("__name__", "").startswith("sklearn.model_selection") and not code.co_name.startswith("<"):
            owner = frame.f_locals.get("self")
            found = code.co_name if owner is None else f"{type(owner).__name__}.{code.co_name}"
        frame = frame.f_back
    return found


def _private_mean(X: np.ndarray, *, rho: float, bound: float, ledger: ZCDPLedger, rng: np.random.Generator | None,
                  noise: str = DEFAULT_NOISE):
    """The mean of ``X`` released by the Gaussian mechanism at cost ``rho``, clipped to ``[-bound, bound]``."""
    n, d = X.shape
    ledger.charge(rho, "mean (centring)")
    noisy, _ = gaussian_mechanism(X.mean(axis=0), rho=rho, sensitivity=mean_sensitivity(n=n, d=d, bound=bound), rng=rng,
                                  noise=noise)
    # Clipping is post-processing; it keeps |x − m̃| ≤ 2B for the covariance step.
    return np.clip(np.atleast_1d(noisy), -bound, bound)

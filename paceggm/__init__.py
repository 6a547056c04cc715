"""paceggm: private adaptive covariance estimation via Gaussian graphical models.

The public API:

* :class:`PACEGGM` and :func:`pace_ggm` — the estimator (docs/design.md, *Algorithm*);
* :class:`PrivateGridSearch` — private choice of an estimator's parameters at a stated total budget
  (docs/estimators.md, *Budgets*);
* :func:`reconstruct` — maximum-entropy reconstruction from noisy entries
  (docs/design.md, *Reconstruction and its solvers*);
* :mod:`paceggm.privacy` — mechanisms, sensitivities, the zCDP ledger, the shared
  accountant and the (ε, δ) conversions (docs/design.md, *Privacy model*);
* :mod:`paceggm.exceptions` — ``PrivacyLeakWarning``, ``PrivacyBudgetWarning``,
  ``BudgetExceededError``, ``ConvergenceWarning``;
* :func:`mahalanobis_error`, :func:`frobenius_error` — metrics (docs/design.md, *Data and metrics*).

The benchmark harness lives in :mod:`paceggm.bench`; nothing here imports it.
"""

from paceggm.base import PrivateCovarianceEstimator, PrivateEstimator
from paceggm.estimator import PACEGGM, PACEGGMResult, RoundRecord, pace_ggm
from paceggm.measurement import MeasuredEntries, Measurement
from paceggm.metrics import frobenius_error, mahalanobis_error
from paceggm.reconstruction import SOLVERS, Reconstruction, reconstruct
from paceggm.selection import PrivateGridSearch
from paceggm.settings import PACEGGMSettings

__version__ = "0.1.0"

__all__ = [
    "PACEGGM",
    "PACEGGMResult",
    "PACEGGMSettings",
    "SOLVERS",
    "MeasuredEntries",
    "Measurement",
    "PrivateCovarianceEstimator",
    "PrivateEstimator",
    "PrivateGridSearch",
    "Reconstruction",
    "RoundRecord",
    "frobenius_error",
    "mahalanobis_error",
    "pace_ggm",
    "reconstruct",
]

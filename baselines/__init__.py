"""The publication's comparison methods (docs/design.md, *Baselines*), on :mod:`paceggm`'s privacy primitives.

Covariance estimators share :class:`paceggm.base.PrivateCovarianceEstimator`'s
interface (``fit(X)`` → ``covariance_``, ``rho_spent_``, ``ledger_``):

* :class:`SSP`, :class:`SSPProjected`, :class:`SSPTight` — Gaussian mechanism on Σ(X);
* :class:`DiagonalOnly` — the variances only;
* :class:`GaussCov`, :class:`SeparateCov`, :class:`AdaptiveCov` — Dong, Liang & Yi (2022);
* :class:`CoinPress` — Biswas, Dong, Kamath & Ullman (2020);
* :class:`EMCov` — Amin, Dick, Kulesza, Muñoz Medina & Vassilvitskii (2019);
* :class:`SSPGraphicalLasso`, :class:`SSPThreshold` — SSP, then the graphical lasso or thresholding at the
  noise level;
* :class:`FixedPatternMaxEnt` — a fixed band measured and completed as PACE-GGM completes its entries.

Regression estimators (``fit(X, y)``, ``coef_``, ``intercept_``, ``predict``):

* :class:`AdaSSP` — Wang (2018) in ρ-zCDP;
* :class:`PACEGGMRegression` — least squares from PACE-GGM's covariance of ``[X, y]``.
"""

from .coinpress import CoinPress
from .diagonal import DiagonalOnly
from .dong_liang_yi import AdaptiveCov, GaussCov, SeparateCov
from .emcov import EMCov
from .fixed_pattern import FixedPatternMaxEnt
from .regression import AdaSSP, PACEGGMRegression
from .ssp import SSP, SSPProjected, SSPTight
from .ssp_glasso import SSPGraphicalLasso
from .ssp_threshold import SSPThreshold

__all__ = [
    "AdaSSP",
    "AdaptiveCov",
    "CoinPress",
    "DiagonalOnly",
    "EMCov",
    "FixedPatternMaxEnt",
    "GaussCov",
    "PACEGGMRegression",
    "SSP",
    "SSPGraphicalLasso",
    "SSPProjected",
    "SSPThreshold",
    "SSPTight",
    "SeparateCov",
]

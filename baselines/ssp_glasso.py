"""SSP followed by the graphical lasso: perturb the covariance, then regularise its inverse.

The perturb-then-regularise estimators of private precision estimation
(Wang, Huai & Xu 2018, *Differentially private sparse inverse covariance
estimation*, their covariance-perturbation method with the Gaussian mechanism;
Su, Guo & Zhang 2019, *Differentially private precision matrix estimation*,
arXiv:1909.02750, its graphical lasso): release the sample covariance with
Gaussian noise, then solve the graphical lasso (Friedman, Hastie & Tibshirani
2008) on the release. The release is :class:`~paceggm.baselines.SSPTight`'s
(the whole budget, the exact ℓ2 sensitivity ``d B²/n`` of the distinct entries
under the coordinate bound ``|x_j| ≤ B``, derived in
:func:`paceggm.privacy.distinct_entries_sensitivity`); the rest is
post-processing and costs nothing more.

The penalty λ is fixed a priori, never tuned on the data: by default the noise
level :func:`~paceggm.baselines.ssp_threshold.noise_level`, above which no
entry of the noise alone is likely to lie. In the analyses of these estimators
λ must dominate the entrywise error ``‖S̃ − Σ‖_max`` of the matrix the lasso
is given, and the privacy noise's share of that error is this level.
"""

from __future__ import annotations

import warnings

import numpy as np
from sklearn.covariance import graphical_lasso
from sklearn.exceptions import ConvergenceWarning

from paceggm.base import SCORE_FLOOR
from paceggm.privacy.mechanisms import DEFAULT_NOISE

from ._common import clip_eigenvalues
from .ssp import SSPTight
from .ssp_threshold import check_level, noise_level

# scikit-learn's defaults (1e-4 on the duality gap) leave the covariance 1e-5 off the optimum when the
# penalty is small; 1e-8 puts it within 1e-8 at the cost of a few sweeps more.
GLASSO_TOL, GLASSO_MAX_ITER = 1e-8, 1000


class SSPGraphicalLasso(SSPTight):
    """SSP, then the graphical lasso with a penalty fixed from the noise scale.

    Release ``S̃ = XᵀX/n + E`` as :class:`SSPTight` does (E symmetric, iid
    ``N(0, σ²)`` on the distinct entries); raise its eigenvalues to at least
    ``1e-6 · max(λ_max(S̃), σ)`` (:data:`paceggm.base.SCORE_FLOOR`: the graphical
    lasso needs a positive definite input, and a noisy release need not be
    one); then solve ``max_Θ log det Θ − tr(S̃₊ Θ) − λ Σ_{j≠k} |Θ_jk|``
    (scikit-learn's :func:`~sklearn.covariance.graphical_lasso`, coordinate
    descent to a duality gap of ``1e-8``; the diagonal is not penalised). ``covariance_`` is the solution's
    ``W = Θ⁻¹`` and ``precision_`` its sparse ``Θ``. With one feature there is
    nothing to penalise: the floored variance is returned.

    Parameters
    ----------
    rho : float
        zCDP budget, all of it on the one release.
    alpha_glasso : float >= 0 or None, default=None
        λ. ``None``: the noise level ``σ sqrt(2 ln(d(d+1)/2))``
        (:func:`~paceggm.baselines.ssp_threshold.noise_level`), fixed a priori
        from ``n``, ``d``, ``ρ`` and ``B``; a number is used as given (it must
        not be chosen by looking at the data). ``0`` inverts the floored release.
    bound : float
        Coordinate bound ``B``.
    bound_check : {"raise", "clip", "waive"}
    noise : {"fast", "exact"}
        ``"exact"`` (with ``random_state=None``) for a real release.
    random_state : None, int, SeedSequence, Generator or RandomState

    Attributes
    ----------
    covariance_ : ndarray of shape (d, d)
        The graphical lasso's covariance ``W``, positive definite.
    precision_ : ndarray of shape (d, d)
        Its precision ``Θ``, with exact zeros off the selected graph.
    sigma_ : float
        Noise standard deviation of every released entry.
    alpha_glasso_ : float
        The penalty λ used.
    location_, rho_spent_, ledger_
        As :class:`paceggm.PACEGGM`.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.random.default_rng(0).uniform(-1, 1, size=(2000, 4))
    >>> # A fixed seed for a reproducible example; a real release needs random_state=None.
    >>> est = SSPGraphicalLasso(rho=1.0, random_state=0).fit(X)
    >>> bool(np.linalg.eigvalsh(est.covariance_).min() > 0)
    True
    """

    def __init__(self, rho=None, *, alpha_glasso=None, epsilon=None, delta=None, accountant=None, bound=1.0,
                 bound_check="raise", assume_centered=True, mean_fraction=0.1, noise=DEFAULT_NOISE,
                 random_state=None) -> None:
        super().__init__(rho, epsilon=epsilon, delta=delta, accountant=accountant, bound=bound,
                         bound_check=bound_check, assume_centered=assume_centered, mean_fraction=mean_fraction,
                         noise=noise, random_state=random_state)
        self.alpha_glasso = alpha_glasso

    def _check_params(self) -> None:
        check_level(self.alpha_glasso, "alpha_glasso")

    def _postprocess(self, released):
        d = released.shape[0]
        given = check_level(self.alpha_glasso, "alpha_glasso")
        alpha = noise_level(self.sigma_, d) if given is None else given
        self.alpha_glasso_ = alpha
        floor = SCORE_FLOOR * max(float(np.linalg.eigvalsh(released)[-1]), self.sigma_)
        start = clip_eigenvalues(released, lower=floor)
        if d == 1:
            covariance, precision = start, 1.0 / start
        else:
            with warnings.catch_warnings():
                # The inner lasso's own warnings in the first sweeps; the outer loop warns if it stops unconverged.
                warnings.filterwarnings("ignore", message="Objective did not converge", category=ConvergenceWarning)
                covariance, precision = graphical_lasso(start, alpha, tol=GLASSO_TOL, enet_tol=GLASSO_TOL,
                                                        max_iter=GLASSO_MAX_ITER)
            covariance = 0.5 * (covariance + covariance.T)
        # The lasso's own Θ (exactly sparse) is what precision_ returns for this covariance_.
        self._precision = (covariance, 0.5 * (precision + precision.T))
        return covariance

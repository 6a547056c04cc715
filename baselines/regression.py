"""Private linear regression: AdaSSP and PACE-GGM regression (docs/design.md, *Baselines*).

Both estimate ``θ = (Σ̂_xx + λ I)⁻¹ Σ̂_xy`` from private second moments of
``[X, y]`` and a private ridge ``λ``; they differ in how the moments are released.
They fit a model through the origin: ``intercept_`` is always 0, because the
privacy analysis covers ``XᵀX`` and ``Xᵀy`` only and privately centring the data
would need budget of its own. The project's preprocessing centres every column
(docs/design.md, *Data and metrics*), which is where the intercept goes; centre test data the same way.

Units: everything is normalised by ``n`` (``Σ_xx = XᵀX/n``, ``Σ_xy = Xᵀy/n``, the
ridge ``λ/n``), which leaves ``θ`` unchanged and lets the sensitivities come from
:mod:`paceggm.privacy` as they are.

AdaSSP in ρ-zCDP with replace-one neighbours
--------------------------------------------
Wang (2018, Alg. 2) is stated for (ε, δ)-DP, add/remove neighbours and bounds
``‖x‖₂ ≤ 𝒳``, ``|y| ≤ 𝒴``; it spends a third of the budget on each of three
Gaussian releases. Under the coordinate bound ``|x_j|, |y| ≤ B`` we take
``𝒳 = sqrt(d) B``, ``𝒴 = B`` and spend ``ρ/3`` zCDP on each release, noise
``σ = Δ/sqrt(2ρ/3)`` with the replace-one sensitivities (all divided by ``n``):

* ``λ_min(Σ_xx)``: Weyl, ``Δ = 𝒳²/n`` (same as add/remove, since
  ``−x'x'ᵀ ⪯ xxᵀ − x'x'ᵀ ⪯ xxᵀ``) — :func:`paceggm.privacy.spectral_sensitivity`;
* the distinct entries of ``Σ_xx``: ``Δ = sqrt(2) 𝒳²/n`` (add/remove: ``𝒳²/n``) —
  :func:`paceggm.privacy.distinct_entries_sensitivity` with ``norm="l2"``;
* ``Σ_xy``: ``Δ = 2 𝒳 𝒴/n`` (add/remove: ``𝒳 𝒴/n``) —
  :func:`paceggm.privacy.cross_moment_sensitivity`.

Wang's thresholds are noise scale × a tail factor in ``log(6/δ)``; with no δ in
zCDP we use Gaussian tail bounds at a failure probability ``p`` (Wang's ``ρ``,
default 0.05): ``λ̃_min = max(λ_min + σ_λ Z − σ_λ sqrt(2 ln(2/p)), 0)`` is below
``λ_min`` w.p. ``≥ 1 − p/2``, and the ridge is
``λ = max(0, σ_xx sqrt(d ln(2d²/p)) − λ̃_min)``, Wang's bound on the spectral norm
of the noise added to ``Σ_xx``. The composition of the three releases is ρ-zCDP.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
from sklearn.base import RegressorMixin
from sklearn.exceptions import DataConversionWarning

from paceggm._validation import check_bound, check_data, check_open_fraction, enforce_bound
from paceggm.base import PrivateEstimator
from paceggm.estimator import PACEGGM, _check_forced_fraction
from paceggm.exceptions import PrivacyLeakWarning
from paceggm.privacy import (
    ZCDPLedger,
    cross_moment_sensitivity,
    distinct_entries_sensitivity,
    gaussian_mechanism,
    gaussian_sigma,
    spectral_sensitivity,
)
from paceggm.privacy.mechanisms import DEFAULT_NOISE
from paceggm.settings import DEFAULTS, PACEGGMSettings

from ._common import release_symmetric


def private_ridge(sigma_xx: np.ndarray, *, n: int, bound: float, rho: float, failure_prob: float,
                  ledger: ZCDPLedger, rng: np.random.Generator | None,
                  noise: str = DEFAULT_NOISE) -> tuple[float, float]:
    """AdaSSP's data-adaptive ridge (in units of ``Σ_xx``), charging ``rho`` to ``ledger``.

    Spends ``rho`` on ``λ_min(Σ_xx)``; the ridge is calibrated to the noise AdaSSP
    adds to ``Σ_xx`` when that release also gets ``rho`` (one third each). Returns
    ``(ridge, λ̃_min)``.
    """
    d = sigma_xx.shape[0]
    radius = math.sqrt(d) * bound
    ledger.charge(rho, "ridge: smallest eigenvalue")
    noisy_min, sigma_min = gaussian_mechanism(
        float(np.linalg.eigvalsh(sigma_xx)[0]), rho=rho, rng=rng, noise=noise,
        sensitivity=spectral_sensitivity(n=n, d=d, bound=radius, norm="l2"),
    )
    lam_min = max(noisy_min - sigma_min * math.sqrt(2.0 * math.log(2.0 / failure_prob)), 0.0)
    sigma_xx_noise = gaussian_sigma(rho=rho, sensitivity=distinct_entries_sensitivity(n=n, d=d, bound=radius, norm="l2"))
    ridge = max(0.0, sigma_xx_noise * math.sqrt(d * math.log(2.0 * d * d / failure_prob)) - lam_min)
    return ridge, lam_min


def _solve_ridge(sigma_xx: np.ndarray, sigma_xy: np.ndarray, ridge: float) -> np.ndarray:
    a = sigma_xx + ridge * np.eye(sigma_xx.shape[0])
    try:
        return np.linalg.solve(a, sigma_xy)
    except np.linalg.LinAlgError:  # exactly singular: the minimum-norm solution
        return np.linalg.lstsq(a, sigma_xy, rcond=None)[0]


def _as_column(y):
    """``y`` of shape (n,) — or (n, 1), with scikit-learn's warning — as a column, keeping a mask if any."""
    y = y if isinstance(y, np.ma.MaskedArray) or hasattr(y, "iloc") else np.asarray(y)
    if y.ndim == 2 and y.shape[1] == 1:
        warnings.warn("A column-vector y was passed when a 1d array was expected; it is used as an array "
                      "of shape (n_samples,)", DataConversionWarning, stacklevel=3)
    elif y.ndim != 1:
        raise ValueError(f"y must be 1-D of length n_samples, got shape {y.shape}")
    if hasattr(y, "iloc"):  # a pandas Series, or a one-column DataFrame
        return y.to_frame() if y.ndim == 1 else y
    return y.reshape(-1, 1)


class _PrivateLinearRegression(RegressorMixin, PrivateEstimator):
    """Shared ``fit(X, y)`` checks, accounting and ``predict``; ``score`` is R² (``RegressorMixin``)."""

    def _check_params(self) -> None:
        check_open_fraction(self.failure_prob, "failure_prob")

    @classmethod
    def _xfail_checks(cls) -> dict[str, str]:
        return {
            "check_regressors_train": (
                "accuracy on a few dozen rows: at a private budget the noise, calibrated to a bound that "
                "covers the check's data, swamps the signal (the check passes at a very large rho)"
            ),
        }

    def fit(self, X, y):
        """Fit ``θ`` privately.

        Parameters
        ----------
        X : array_like of shape (n_samples, n_features)
            Every value in ``[-bound, bound]``.
        y : array_like of shape (n_samples,)
            Every value in ``[-bound, bound]`` too.

        Returns
        -------
        self
        """
        rho = self._budget()
        self._check_params()
        if y is None:
            raise ValueError(f"{type(self).__name__} requires y to be passed, but the target y is None")
        X = self._check_fit_data(X, bound=self.bound, bound_check=self.bound_check)
        y_col = check_data(_as_column(y), name="y")
        if y_col.shape[0] != X.shape[0]:
            raise ValueError(f"X and y have different numbers of rows: {X.shape[0]} vs {y_col.shape[0]}")
        if self.bound_check != "waive":  # waived once for X already (one warning)
            y_col = enforce_bound(y_col, float(self.bound), self.bound_check, name="y")
        Z = np.column_stack([X, y_col])
        rng = self._noise_rng()
        self._pay(rho)
        ledger = ZCDPLedger(rho)
        self.coef_ = np.asarray(self._fit(Z, ledger, rng), dtype=float)
        self.intercept_ = 0.0
        self._record_spent(ledger.charges, rho)
        return self

    def predict(self, X) -> np.ndarray:
        """``X θ`` (no intercept; see the module docstring).

        Parameters
        ----------
        X : array_like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        X = self._check_new_data(X)
        return X @ self.coef_ + self.intercept_


class AdaSSP(_PrivateLinearRegression):
    """AdaSSP (Wang 2018) translated to ρ-zCDP with replace-one neighbours.

    ``ρ/3`` for the private ridge (via ``λ_min``), ``ρ/3`` for ``XᵀX/n``, the rest
    for ``Xᵀy/n``; ``θ = (Σ̂_xx + λ I)⁻¹ Σ̂_xy``. The derivation of every
    sensitivity and threshold is in the module docstring.

    Parameters
    ----------
    rho : float or None
        zCDP budget; or give ``epsilon`` and ``delta`` (converted exactly).
    epsilon, delta : float or None
    accountant : ZCDPAccountant, FileZCDPAccountant or None
        A budget shared across fits, charged before the data are touched.
    bound : float
        ``B``: every ``|x_j| ≤ B`` and ``|y| ≤ B``.
    failure_prob : float
        Failure probability ``p`` of the ridge's tail bounds (Wang's ``ρ``).
    bound_check : {"raise", "clip", "waive"}
    noise : {"fast", "exact"}
        ``"exact"`` (with ``random_state=None``) for a real release: exact discrete noise
        (:mod:`paceggm.privacy.exact`) at the same cost.
    random_state : None, int, SeedSequence, Generator or RandomState
        ``None`` for a real release; a fixed seed makes the noise predictable.

    Attributes
    ----------
    coef_ : ndarray of shape (d,)
    intercept_ : float
        Always 0.0.
    ridge_ : float
        The private ridge, in units of ``XᵀX/n``.
    lambda_min_ : float
        The private lower bound ``λ̃_min`` on the smallest eigenvalue of ``XᵀX/n``.
    noisy_xx_ : ndarray of shape (d, d)
        The released ``XᵀX/n``.
    noisy_xy_ : ndarray of shape (d,)
        The released ``Xᵀy/n``.
    rho_spent_ : float
        Spent by all fits of this object so far.
    ledger_ : tuple of Charge
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-1, 1, size=(5000, 3)) / 2
    >>> y = X @ np.array([0.5, -0.3, 0.2])
    >>> # A fixed seed for a reproducible example; a real release needs random_state=None.
    >>> est = AdaSSP(rho=10.0, random_state=0).fit(X, y)
    >>> est.coef_.round(1), est.rho_spent_
    (array([ 0.5, -0.3,  0.2]), 10.0)
    """

    def __init__(self, rho: float | None = None, *, epsilon: float | None = None, delta: float | None = None,
                 accountant=None, bound: float = 1.0, failure_prob: float = 0.05,
                 bound_check: str = "raise", noise: str = DEFAULT_NOISE, random_state=None) -> None:
        self.rho = rho
        self.epsilon = epsilon
        self.delta = delta
        self.accountant = accountant
        self.bound = bound
        self.failure_prob = failure_prob
        self.bound_check = bound_check
        self.noise = noise
        self.random_state = random_state

    def _fit(self, Z, ledger, rng):
        n, d = Z.shape[0], Z.shape[1] - 1
        X, y = Z[:, :d], Z[:, d]
        sigma_xx, sigma_xy = X.T @ X / n, X.T @ y / n
        third = ledger.budget / 3
        self.ridge_, self.lambda_min_ = private_ridge(
            sigma_xx, n=n, bound=self.bound, rho=third, failure_prob=self.failure_prob, ledger=ledger, rng=rng,
            noise=self.noise,
        )
        radius = math.sqrt(d) * self.bound
        ledger.charge(third, "release: X'X/n")
        noisy_xx, _ = release_symmetric(
            sigma_xx, rho=third, rng=rng, noise=self.noise,
            sensitivity=distinct_entries_sensitivity(n=n, d=d, bound=radius, norm="l2"),
        )
        rest = ledger.remaining
        ledger.charge(rest, "release: X'y/n")
        noisy_xy, _ = gaussian_mechanism(
            sigma_xy, rho=rest, rng=rng, noise=self.noise,
            sensitivity=cross_moment_sensitivity(n=n, bound_x=radius, bound_y=self.bound),
        )
        self.noisy_xx_, self.noisy_xy_ = noisy_xx, np.atleast_1d(noisy_xy)
        return _solve_ridge(self.noisy_xx_, self.noisy_xy_, self.ridge_)


class PACEGGMRegression(_PrivateLinearRegression):
    """Linear regression from PACE-GGM's covariance of ``[X, y]`` (the publication's regression experiment).

    Same budget split as :class:`AdaSSP`: ``ρ/3`` for AdaSSP's private ridge
    (:func:`private_ridge`), the remaining ``2ρ/3`` for PACE-GGM on the
    ``(d+1)``-column data ``[X, y]`` (whose every coordinate is bounded by ``B``);
    then ``θ = (Σ̂_xx + λ I)⁻¹ Σ̂_xy`` from the blocks of that one estimate.

    ``measure_target_first=True`` (not the published method) measures y's ``d`` cross-covariances
    ``Σ_xy`` right after the diagonal, before PACE-GGM's adaptive rounds, with
    ``target_fraction`` of PACE-GGM's budget (by default half of its ``2ρ/3``: ``ρ/3``, what AdaSSP
    spends on ``Xᵀy``, which at equal entry sensitivities gives each entry AdaSSP's noise). The
    pairs depend on the shape alone, never on the data, so the fit stays ``ρ``-zCDP (see
    ``forced_pairs`` of :func:`paceggm.pace_ggm`).

    Parameters
    ----------
    rho : float or None
    epsilon, delta : float or None
    accountant : ZCDPAccountant, FileZCDPAccountant or None
        As in :class:`AdaSSP`.
    bound : float
        ``B`` for every column of ``[X, y]``.
    alpha, beta, max_rounds, anneal_factor, solver, use_components, solver_options
        PACE-GGM's parameters (:class:`paceggm.settings.PACEGGMSettings`), passed to :class:`paceggm.PACEGGM`.
    failure_prob : float
        As in :class:`AdaSSP`.
    bound_check : {"raise", "clip", "waive"}
    measure_target_first : bool, default=False
        Measure every ``(y, x_j)`` entry before the adaptive rounds (see above).
    target_fraction : float in (0, 1), default=0.5
        Their share of PACE-GGM's budget (``alpha + target_fraction < 1``); ignored unless
        ``measure_target_first``.
    noise : {"fast", "exact"}
        As in :class:`AdaSSP` (also passed to :class:`paceggm.PACEGGM`).
    random_state : None, int, SeedSequence, Generator or RandomState

    Attributes
    ----------
    coef_, intercept_ (0.0), ridge_, lambda_min_, rho_spent_, ledger_, n_features_in_
        As in :class:`AdaSSP`.
    covariance_ : ndarray of shape (d + 1, d + 1)
        PACE-GGM's estimate of the second moments of ``[X, y]``.
    pace_ggm_ : PACEGGM
        The fitted covariance estimator.
    """

    def __init__(self, rho: float | None = None, *, epsilon: float | None = None, delta: float | None = None,
                 accountant=None, bound: float = 1.0, alpha: float = DEFAULTS.alpha, beta: float = DEFAULTS.beta,
                 max_rounds: int | str | None = DEFAULTS.max_rounds, anneal_factor: float | None = DEFAULTS.anneal_factor,
                 solver: str = DEFAULTS.solver,
                 use_components: bool = DEFAULTS.use_components, solver_options: dict | None = DEFAULTS.solver_options,
                 failure_prob: float = 0.05, bound_check: str = "raise", measure_target_first: bool = False,
                 target_fraction: float = DEFAULTS.forced_fraction, noise: str = DEFAULTS.noise,
                 random_state=None) -> None:
        self.rho = rho
        self.epsilon = epsilon
        self.delta = delta
        self.accountant = accountant
        self.bound = bound
        self.alpha = alpha
        self.beta = beta
        self.max_rounds = max_rounds
        self.anneal_factor = anneal_factor
        self.solver = solver
        self.use_components = use_components
        self.solver_options = solver_options
        self.failure_prob = failure_prob
        self.bound_check = bound_check
        self.measure_target_first = measure_target_first
        self.target_fraction = target_fraction
        self.noise = noise
        self.random_state = random_state

    def _check_params(self) -> None:
        super()._check_params()
        check_bound(self.bound)
        self._settings = PACEGGMSettings.of(self)  # the PACE-GGM parameters it declares; the others' defaults
        if not isinstance(self.measure_target_first, (bool, np.bool_)):
            raise TypeError(f"measure_target_first must be a bool, got {self.measure_target_first!r}")
        if self.measure_target_first:
            _check_forced_fraction(self.target_fraction, self.alpha)

    def _fit(self, Z, ledger, rng):
        n, d = Z.shape[0], Z.shape[1] - 1
        X = Z[:, :d]
        self.ridge_, self.lambda_min_ = private_ridge(
            X.T @ X / n, n=n, bound=self.bound, rho=ledger.budget / 3, failure_prob=self.failure_prob,
            ledger=ledger, rng=rng, noise=self.noise,
        )
        # Z already passed (or, waived, skipped) the bound check: PACE-GGM must not clip
        # it again, nor warn a second time about a waiver this fit has warned about.
        waived = self.bound_check == "waive"
        # y is column d of Z: its row's pairs follow from the shape alone (data-independent)
        forced = dict(forced_pairs=[(d, j) for j in range(d)], forced_fraction=self.target_fraction) \
            if self.measure_target_first else {}
        with warnings.catch_warnings():
            if waived:
                warnings.simplefilter("ignore", PrivacyLeakWarning)
            est = PACEGGM(ledger.remaining, bound=self.bound, bound_check="waive" if waived else "raise",
                          random_state=rng, **{**self._settings.params(), **forced}).fit(Z)
        for c in est.ledger_:
            ledger.charge(c.rho, f"pace-ggm: {c.purpose}")
        self.pace_ggm_ = est
        self.covariance_ = est.covariance_
        return _solve_ridge(est.covariance_[:d, :d], est.covariance_[:d, d], self.ridge_)

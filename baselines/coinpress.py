"""CoinPress covariance estimation (Biswas, Dong, Kamath & Ullman, NeurIPS 2020).

"CoinPress: Practical Private Mean and Covariance Estimation", Section 4:
Algorithm 3 (MVCStep, one private improvement of the covariance bound) run
``t`` times by Algorithm 4 (MVC). It is meant for Gaussian data whose scale is
known only loosely: each step whitens the rows by the current bound, clips them
to the radius a whitened Gaussian row stays within, measures their second
moment with the Gaussian mechanism and tightens the bound with what it saw.
Re-implemented on :mod:`paceggm.privacy` in numpy, after the paper and the
authors' reference code (GitHub ``twistedcubic/coin-press``, ``algos.py``:
``cov_est_step``, ``cov_est``); where they differ we say which we follow.

Units. The paper assumes a prior ``Σ ⪯ K I``. The project declares a coordinate
bound ``|x_j| ≤ B``, which gives ``‖x‖₂² ≤ d B²`` and so ``Σ(X) = XᵀX/n ⪯ d B² I``
(every Rayleigh quotient of a row's ``xxᵀ`` is at most ``‖x‖²``): ``K = d B²``, the
a-priori bound the first whitener ``A₀ = I/(sqrt(d) B)`` starts from. Zero-mean
data are assumed, as in the paper; ``assume_centered=False`` centres on the base
class's private mean first. Sensitivities are replace-one (docs/design.md, *Privacy
model*) and come from :func:`paceggm.privacy.distinct_entries_sensitivity` with
``norm="l2"``: rows clipped to ``‖w‖ ≤ r`` move the vector of distinct entries of
``WᵀW/n`` by at most ``sqrt(2) r²/n`` (attained by ``w = r e₁``, ``w' = r e₂``).
"""

from __future__ import annotations

import math
import numbers
from fractions import Fraction

import numpy as np

from paceggm._validation import check_open_fraction
from paceggm.privacy import ZCDPLedger, distinct_entries_sensitivity
from paceggm.privacy.mechanisms import DEFAULT_NOISE

from ._common import CovarianceBaseline, clip_eigenvalues, on_ulp_grid, release_symmetric
from .dong_liang_yi import _gaussian_norm_bound, _wigner_spectral_bound

# Share of rho of the last step; the t - 1 steps before it share the rest equally (the
# reference experiments' split: [ρ] for t = 1, [ρ/4, 3ρ/4], [ρ/8, ρ/8, 3ρ/4], ...).
_LAST_SHARE = Fraction(3, 4)


def step_budgets(rho: float, steps: int) -> list[float]:
    """The ρ of each of the first ``steps − 1`` releases; the last one gets what the ledger has left.

    Each is ``ρ/(4(t−1))`` rounded down to a multiple of ``ulp(ρ)``, so that what is
    left, ``ρ`` minus them, is a multiple of ``ulp(ρ)`` below ``ρ``: a double, and the
    charges add to exactly ``ρ``.
    """
    if steps == 1:
        return []
    return [on_ulp_grid(Fraction(rho) * (1 - _LAST_SHARE) / (steps - 1), rho)] * (steps - 1)


def clip_rows(W: np.ndarray, radius: float) -> np.ndarray:
    """Each row of ``W`` projected onto the ℓ2 ball of ``radius`` (Algorithm 3, line 4)."""
    norms = np.linalg.norm(W, axis=1)
    return W * np.minimum(1.0, radius / np.maximum(norms, np.finfo(float).tiny))[:, None]


def whitened_radius(whitener: np.ndarray, bound: float, gamma: float) -> float:
    """The clipping radius of a step: the paper's ``γ``, capped at the longest whitened record.

    A record in ``[-B, B]^d`` has ``‖A x‖ ≤ B min(sqrt(d) ‖A‖₂, Σ_j ‖A e_j‖)``;
    clipping at that cap changes no row, so the cap keeps the paper's guarantee
    and only spares noise where ``γ`` exceeds every possible row (always at the
    first step: ``A₀ = I/(sqrt(d) B)`` makes every row shorter than 1 < γ).
    Data-independent: ``A`` is built from earlier releases only.
    """
    d = whitener.shape[1]
    longest = bound * min(math.sqrt(d) * float(np.linalg.norm(whitener, 2)),
                          float(np.linalg.norm(whitener, axis=0).sum()))
    return min(gamma, longest)


class CoinPress(CovarianceBaseline):
    """CoinPress covariance estimation (Biswas et al. 2020, Algorithms 3 and 4), in ρ-zCDP.

    Start from ``A₀ = I/sqrt(K)`` with the prior ``K = d B²`` (see the module
    docstring). Step ``i = 1 … t`` (Algorithm 3, MVCStep, with ``A = A_{i−1}``):

    1. whiten: ``w = A x`` for every row (line 1);
    2. clip each ``w`` to the ℓ2 ball of radius ``r_i = min(γ, cap)``, with
       ``γ = sqrt(d + 2 sqrt(d log(n/β)) + 2 log(n/β))`` (line 2: a row of
       ``N(0, M)``, ``M ⪯ I``, is inside it with probability ``≥ 1 − β/n``) and
       ``cap`` the longest whitened record the bound allows
       (:func:`whitened_radius`);
    3. release ``Ẑ = WᵀW/n + Y`` (lines 5–7): iid ``N(0, σ_i²)`` on the distinct
       entries, ``σ_i = sqrt(2) r_i² / (n sqrt(2ρ_i))``, mirrored;
    4. update the bound (lines 8–9): ``U = Ẑ₊ + (ν_i + η) I``, with ``Ẑ₊`` the PSD
       projection of ``Ẑ`` (as the reference code; it only raises the bound),
       ``ν_i = σ_i · ν(d, β)`` the operator-norm bound of the noise ``Y`` with
       probability ``≥ 1 − β`` (Bandeira & van Handel's bound, the paper's
       ``ν``), and ``η = 2δ + δ²``, ``δ = sqrt(d/n) + sqrt(2 log(2/β)/n)``, the
       sampling error of a Gaussian second moment relative to ``‖M‖ ≤ 1``;
       then ``A_i = U^{−1/2} A_{i−1}``, so that ``A_i Σ A_iᵀ ⪯ I`` whenever the
       step's bounds hold (Algorithm 4's loop).

    The last step's ``Ẑ₊`` is mapped back (Algorithm 4, output):
    ``Σ̂ = A_{t−1}^{−1} Ẑ₊ A_{t−1}^{−T}``. PSD. (The reference code updates
    ``A ← U^{−1/2} A`` too, but whitens rows as ``X A``: the two conventions
    agree for ``t ≤ 2`` only; we follow the paper's ``w = A x`` throughout.)

    Budget. ``ρ`` for ``t = 1``; otherwise ``ρ/(4(t−1))`` for each of the first
    ``t − 1`` steps and the rest (``3ρ/4``) for the last, the split of the
    reference experiments (:func:`step_budgets`; the charges add to exactly
    ``ρ``). Each release is charged before it is made, with purpose ``"coinpress:
    whitened clipped second moment"``; ``whiteners_`` and ``radii_`` record the
    ``A_{i−1}`` and ``r_i`` each release used (post-processing of the earlier
    releases), from which its query is recomputed.

    Parameters
    ----------
    rho : float
    steps : int
        ``t``, the number of steps, >= 1; the paper recommends 2 to 4 and its
        experiments run up to 5. Default 3.
    failure_prob : float
        ``β`` in (0, 1) of the bounds ``γ``, ``ν`` and ``η`` (fixed a priori; the
        reference code's 0.1). It affects accuracy only, never privacy.
    bound : float
        Coordinate bound ``B``.
    bound_check : {"raise", "clip", "waive"}
    noise : {"fast", "exact"}
        ``"exact"`` (with ``random_state=None``) for a real release: exact discrete noise
        (:mod:`paceggm.privacy.exact`) at the same cost.
    random_state : None, int, SeedSequence, Generator or RandomState

    Attributes
    ----------
    covariance_, location_, precision_, rho_spent_, ledger_
        As :class:`paceggm.PACEGGM`.
    whiteners_ : tuple of ndarray of shape (d, d)
        ``A_{i−1}``, the whitener of step ``i`` (``w = A x``), one per step.
    radii_ : tuple of float
        ``r_i``, the clipping radius of step ``i`` (whitened units).
    sigmas_ : tuple of float
        ``σ_i``, the noise scale of step ``i``'s release.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.random.default_rng(0).uniform(-1, 1, size=(2000, 4))
    >>> # A fixed seed for a reproducible example; a real release needs random_state=None.
    >>> est = CoinPress(rho=1.0, random_state=0).fit(X)
    >>> len(est.whiteners_), est.rho_spent_ == 1.0
    (3, True)
    """

    def __init__(
        self, rho: float | None = None, *, epsilon: float | None = None, delta: float | None = None,
        accountant=None, steps: int = 3, failure_prob: float = 0.1, bound: float = 1.0,
        bound_check: str = "raise", assume_centered: bool = True, mean_fraction: float = 0.1,
        noise: str = DEFAULT_NOISE, random_state=None,
    ) -> None:
        super().__init__(rho, epsilon=epsilon, delta=delta, accountant=accountant, bound=bound,
                         bound_check=bound_check, assume_centered=assume_centered,
                         mean_fraction=mean_fraction, noise=noise, random_state=random_state)
        self.steps = steps
        self.failure_prob = failure_prob

    def _check_params(self) -> None:
        steps = self.steps
        if isinstance(steps, (bool, np.bool_)) or not isinstance(steps, numbers.Integral) or steps < 1:
            raise ValueError(f"steps must be an integer >= 1, got {steps!r}")
        check_open_fraction(self.failure_prob, "failure_prob")

    def _release(self, X, *, bound, ledger: ZCDPLedger, rng):
        n, d = X.shape
        steps, beta = int(self.steps), float(self.failure_prob)
        gamma = _gaussian_norm_bound(d, beta / n)
        delta = math.sqrt(d / n) + math.sqrt(2.0 * math.log(2.0 / beta) / n)
        eta = 2.0 * delta + delta**2
        nu = _wigner_spectral_bound(d, beta)
        A = np.eye(d) / (math.sqrt(d) * bound)  # A₀ = K^{-1/2} I with K = d B²
        A_inv = np.eye(d) * (math.sqrt(d) * bound)
        budgets = step_budgets(ledger.budget, steps)
        whiteners, radii, sigmas = [], [], []
        for i in range(steps):
            rho_i = budgets[i] if i < steps - 1 else ledger.remaining  # exactly what is left
            radius = whitened_radius(A, bound, gamma)
            W = clip_rows(X @ A.T, radius)
            ledger.charge(rho_i, "coinpress: whitened clipped second moment")
            noisy, sigma = release_symmetric(
                W.T @ W / n, rho=rho_i, rng=rng, noise=self.noise,
                sensitivity=distinct_entries_sensitivity(n=n, d=d, bound=radius, norm="l2"),
            )
            whiteners.append(A.copy())
            radii.append(radius)
            sigmas.append(float(sigma))
            Z = clip_eigenvalues(noisy, lower=0.0)
            if i == steps - 1:
                break
            values, vectors = np.linalg.eigh(Z + (sigma * nu + eta) * np.eye(d))
            A = (vectors / np.sqrt(values)) @ vectors.T @ A  # U^{-1/2} A
            A_inv = A_inv @ (vectors * np.sqrt(values)) @ vectors.T  # (U^{-1/2} A)^{-1} = A^{-1} U^{1/2}
        self.whiteners_, self.radii_, self.sigmas_ = tuple(whiteners), tuple(radii), tuple(sigmas)
        out = A_inv @ Z @ A_inv.T
        return 0.5 * (out + out.T)

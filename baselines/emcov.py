"""EMCov (Amin, Dick, Kulesza, Muñoz Medina & Vassilvitskii, NeurIPS 2019), in ρ-zCDP.

"Differentially Private Covariance Estimation", Algorithm 1 (iterative
eigenvector sampling): noisy eigenvalues by the Laplace mechanism, then the
eigenvectors one at a time, each drawn by the exponential mechanism on the unit
sphere from the second moment projected onto the complement of the vectors
already drawn. That law is a Bingham distribution, sampled exactly by rejection
with Kent, Ganeiber & Mardia's (2018) envelope (:func:`paceggm.privacy.bingham_mechanism`),
the sampler diffprivlib's ``Bingham`` mechanism and Dong, Liang & Yi's
``find_bingham`` implement. Re-implemented on
:mod:`paceggm.privacy` in numpy, after the paper and two public
re-implementations (diffprivlib's ``covariance_eig``; Dong, Liang & Yi's
reference code, GitHub ``hkustDB/PrivateCovariance``, ``exponential/algos.py``).

Units. The paper assumes rows with ``‖x‖₂ ≤ 1``. The project's bound is
coordinate-wise (``|x_j| ≤ B``), which implies ``‖x‖₂ ≤ sqrt(d) B``; the estimator
runs on ``Z = X/(sqrt(d) B)`` (``r = 1``) and scales its estimate back by
``d B²``, as :mod:`baselines.dong_liang_yi` documents. Sensitivities are
replace-one and come from :mod:`paceggm.privacy` with ``norm="l2"``, ``r = 1``:

* the sorted eigenvalues of ``Σ(Z) = ZᵀZ/n`` move by at most ``2/n`` in ℓ1
  (:func:`~paceggm.privacy.eigenvalue_l1_sensitivity`; the paper's ``2`` for the
  unnormalised ``ZᵀZ``);
* the score ``uᵀ P Σ(Z) Pᵀ u`` of a unit ``u`` (``P`` with orthonormal rows) moves by
  ``((Pᵀu·z')² − (Pᵀu·z)²)/n``, at most ``1/n`` either way
  (:func:`~paceggm.privacy.spectral_sensitivity`). The paper samples
  ``∝ exp(ε_i/4 · uᵀC_iu)`` with ``C_i`` unnormalised, i.e. a sensitivity of 2 where the
  score moves by at most 1: we use the exponential mechanism's own calibration
  ``exp(ε_i/(2Δ) · score)`` with ``Δ = 1/n``, which is ε_i-DP with range ε_i (every
  score moves within ``[−Δ, Δ]``).

Privacy in ρ-zCDP. The paper composes pure ε-DP steps; here each step is charged
its zCDP cost: the Laplace release at ``ε₀ = sqrt(2ρ₀)`` is ``ρ₀``-zCDP (ε-DP ⇒
ε²/2-zCDP), each eigenvector at ``ε_i = sqrt(8ρ_i)`` is ``ρ_i``-zCDP (bounded range,
ε²/8), and the costs add.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
from scipy.linalg import null_space

from paceggm.privacy import (
    ZCDPLedger,
    bingham_mechanism,
    eigenvalue_l1_sensitivity,
    laplace_mechanism,
    spectral_sensitivity,
)

from ._common import on_ulp_grid
from .dong_liang_yi import _UnitBallBaseline

EIGENVALUES, EIGENVECTOR = "emcov: eigenvalues", "emcov: eigenvector"


def release_budgets(rho: float, d: int) -> tuple[float, list[float]]:
    """The ρ of the eigenvalues and of the first ``d − 2`` eigenvectors; the last drawn one gets what is left.

    Half of ρ for the eigenvalues (``ρ/2``, exact in binary) and the other half
    spread evenly over the ``d − 1`` eigenvectors that are drawn (the ``d``-th is
    the one direction left, free): ``ρ/(2(d − 1))`` each, rounded down to a
    multiple of ``ulp(ρ)`` (:func:`~baselines._common.on_ulp_grid`), so that the
    last one's share, what the ledger has left, makes the charges add to
    exactly ρ. With ``d = 1`` the eigenvalue takes all of ρ.
    """
    if d == 1:
        return rho, []
    return rho / 2.0, [on_ulp_grid(Fraction(rho) / (2 * (d - 1)), rho)] * (d - 2)


class EMCov(_UnitBallBaseline):
    """EMCov (Amin et al. 2019, Algorithm 1): Laplace eigenvalues, eigenvectors by the exponential mechanism.

    On ``Z = X/(sqrt(d) B)`` (see the module docstring), with ``Σ = ZᵀZ/n``:

    1. (line 1) release the eigenvalues ``λ₁ ≥ … ≥ λ_d`` of ``Σ`` with iid Laplace
       noise of scale ``(2/n)/ε₀``, ``ε₀ = sqrt(2ρ₀)``, and clip them to ``[0, 1]``
       (no eigenvalue of ``Σ`` leaves it; Dong, Liang & Yi's re-implementation
       clips the same way), which makes the estimate PSD;
    2. (lines 2–6) for ``i = 1, …, d − 1``: with ``P_i`` an orthonormal basis
       (``d × (d − i + 1)``) of the complement of ``u₁, …, u_{i−1}`` (``P₁ = I``),
       draw ``v`` on the unit sphere of ``R^{d−i+1}`` with density
       ``∝ exp(ε_i/(2Δ) · vᵀ P_iᵀ Σ P_i v)``, ``Δ = 1/n``, ``ε_i = sqrt(8ρ_i)``
       (:func:`paceggm.privacy.bingham_mechanism`), and set ``u_i = P_i v``;
       the last vector ``u_d`` spans what is left (the paper's last draw is on a
       sphere of one dimension, ``±1``: it costs nothing and is not drawn);
    3. (line 7) output ``Σ̂ = d B² · Σ_i λ̃_i u_i u_iᵀ``: the ``i``-th noisy eigenvalue
       goes with the ``i``-th vector drawn, as in the paper. PSD.

    Budget. ``ρ/2`` for the eigenvalues, ``ρ/(2(d − 1))`` for each eigenvector
    (:func:`release_budgets`; the charges add to exactly ``ρ``): the half-and-half
    split of Dong, Liang & Yi's re-implementation (``ε₀ = ε/2``, the rest spread evenly
    over the eigenvectors), made on ρ, where composition adds. Each release is
    charged before it is made, with purposes ``"emcov: eigenvalues"`` and
    ``"emcov: eigenvector"``; every projected matrix is built from the released
    vectors only.

    Parameters
    ----------
    rho : float
    bound : float
        Coordinate bound ``B``.
    bound_check : {"raise", "clip", "waive"}
    noise : {"fast", "exact"}
        ``"exact"``: discrete Laplace noise for the eigenvalues at the same cost;
        the eigenvectors' draws have no exact sampler and are made in doubles
        from exact random bits (:mod:`paceggm.privacy.sphere`, which warns
        :class:`~paceggm.exceptions.PrivacyLeakWarning`).
    random_state : None, int, SeedSequence, Generator or RandomState

    Attributes
    ----------
    covariance_, location_, precision_, rho_spent_, ledger_
        As :class:`paceggm.PACEGGM`.
    eigenvalues_ : ndarray of shape (d,)
        The released eigenvalues after clipping, in the units of ``X`` (``d B² λ̃_i``).
    eigenvectors_ : ndarray of shape (d, d)
        Column ``i`` is ``u_i``, in the order drawn.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.random.default_rng(0).uniform(-1, 1, size=(2000, 4))
    >>> # A fixed seed for a reproducible example; a real release needs random_state=None.
    >>> est = EMCov(rho=1.0, random_state=0).fit(X)
    >>> [c.purpose for c in est.ledger_][:2], est.rho_spent_ == 1.0
    (['emcov: eigenvalues', 'emcov: eigenvector'], True)
    """

    def _estimate_unit(self, Z, ledger: ZCDPLedger, rng, *, scale):
        n, d = Z.shape
        sigma = Z.T @ Z / n
        rho_values, shares = release_budgets(ledger.budget, d)
        ledger.charge(rho_values, EIGENVALUES)
        noisy, _ = laplace_mechanism(np.linalg.eigvalsh(sigma)[::-1], rho=rho_values, rng=rng, noise=self.noise,
                                     sensitivity=eigenvalue_l1_sensitivity(n=n, d=d, bound=1.0, norm="l2"))
        values = np.clip(noisy, 0.0, 1.0)
        score_sensitivity = spectral_sensitivity(n=n, d=d, bound=1.0, norm="l2")
        vectors = np.empty((d, d))
        basis = np.eye(d)
        for i in range(d - 1):
            rho_i = shares[i] if i < d - 2 else ledger.remaining  # exactly what is left
            ledger.charge(rho_i, EIGENVECTOR)
            v = bingham_mechanism(basis.T @ sigma @ basis, rho=rho_i, sensitivity=score_sensitivity, rng=rng,
                                  noise=self.noise)
            vectors[:, i] = basis @ v
            basis = null_space(vectors[:, : i + 1].T)
        vectors[:, d - 1] = basis[:, 0]
        self.eigenvalues_ = scale**2 * values
        self.eigenvectors_ = vectors
        out = (vectors * values) @ vectors.T
        return 0.5 * (out + out.T)

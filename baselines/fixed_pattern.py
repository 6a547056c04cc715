"""A fixed, data-independent pattern measured and completed as PACE-GGM completes its own.

The ablation that isolates what PACE-GGM's *adaptive* selection buys: the same
measurements (Gaussian mechanism on single entries of ``XᵀX/n``, entry
sensitivity ``2B²/n`` under the coordinate bound ``|x_j| ≤ B``, as
:func:`paceggm.privacy.entry_sensitivity` gives and PACE-GGM uses), the same
split of the budget between the diagonal and the rest, and the same
maximum-entropy reconstruction (:func:`paceggm.reconstruction.reconstruct`),
but the off-diagonal entries are a band ``0 < j − k ≤ w`` fixed before the data
are seen, instead of the entries the exponential mechanism picks round by
round. PACE-GGM itself cannot be run so (it always spends some budget on at
least one adaptive round), so the estimator composes the library's
measurement and reconstruction modules; its releases are charged with
PACE-GGM's purposes (``"initialise: diagonal"`` and ``"initialise: forced pair"``:
the band is a set of forced pairs with nothing after them).
"""

from __future__ import annotations

import numbers

from paceggm.measurement import MeasuredEntries, Measurement
from paceggm.privacy import entry_sensitivity, gaussian_mechanism
from paceggm.privacy.mechanisms import DEFAULT_NOISE
from paceggm.reconstruction import reconstruct
from paceggm.settings import DEFAULTS, PACEGGMSettings

from ._common import CovarianceBaseline, on_ulp_grid


def band_pairs(d: int, bandwidth: int) -> tuple[tuple[int, int], ...]:
    """The off-diagonal pairs ``(j, k)`` with ``0 < j − k <= bandwidth``, by diagonal, then by row.

    Examples
    --------
    >>> band_pairs(4, 1)
    ((1, 0), (2, 1), (3, 2))
    >>> band_pairs(3, 5)
    ((1, 0), (2, 1), (2, 0))
    """
    return tuple((k + offset, k) for offset in range(1, min(bandwidth, d - 1) + 1) for k in range(d - offset))


class FixedPatternMaxEnt(CovarianceBaseline):
    """Measure the diagonal and a fixed band, then complete them by maximum entropy (PACE-GGM's ablation).

    1. Each of the ``d`` variances gets ``α ρ / d`` (PACE-GGM's diagonal share).
    2. Each of the ``|P|`` pairs of the band ``P = {(j, k): 0 < j − k <= w}``
       gets ``(1 − α) ρ / |P|``, what PACE-GGM's rounds would spend between them.
       Both shares are rounded down to a multiple of ``ulp(ρ)`` and the last
       release gets exactly what is left, so the charges add to exactly ``ρ``.
       With no pair (``d = 1``) the variances share all of ``ρ``.
    3. Every release is the Gaussian mechanism with PACE-GGM's entry
       sensitivity ``2B²/n``; the estimate is the maximum-entropy completion of
       the noisy entries (the precision is zero off the band where the
       completion is non-singular), by the solver PACE-GGM would use.

    A band of width ``w`` is a chordal pattern, so its completion has a closed
    form; for a population whose precision is itself banded (an AR(1) covariance
    for ``w = 1``) the completion of the true band is the true covariance.

    Parameters
    ----------
    rho : float
        zCDP budget.
    bandwidth : int >= 1, default=1
        ``w``: ``1`` measures the tridiagonal band.
    alpha : float in (0, 1), default=0.3
        Share of ``rho`` for the diagonal, PACE-GGM's ``alpha``.
    solver : str, default="auto"
        Reconstruction solver, a key of :data:`paceggm.SOLVERS` (PACE-GGM's default).
    use_components : bool, default=True
    solver_options : dict or None, default=None
        As :class:`paceggm.PACEGGM`.
    bound : float
        Coordinate bound ``B``.
    bound_check : {"raise", "clip", "waive"}
    noise : {"fast", "exact"}
        ``"exact"`` (with ``random_state=None``) for a real release.
    random_state : None, int, SeedSequence, Generator or RandomState

    Attributes
    ----------
    covariance_ : ndarray of shape (d, d)
    pattern_ : ndarray of bool, shape (d, d)
        The measured entries: the diagonal and the band.
    n_offdiagonal_ : int
        ``|P|``.
    measurements_ : tuple of Measurement
        The noisy releases, in order (reconstruct again from them at no cost).
    n_rounds_ : int
        0: no adaptive round.
    solve_time_, n_iter_, converged_, n_solves_, n_capped_, max_iter_
        The reconstruction's, as :class:`paceggm.PACEGGM` reports them.
    location_, precision_, rho_spent_, ledger_
        As :class:`paceggm.PACEGGM`.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.random.default_rng(0).uniform(-1, 1, size=(1000, 4))
    >>> # A fixed seed for a reproducible example; a real release needs random_state=None.
    >>> est = FixedPatternMaxEnt(rho=1.0, random_state=0).fit(X)
    >>> est.n_offdiagonal_, est.rho_spent_
    (3, 1.0)
    """

    def __init__(self, rho=None, *, bandwidth=1, alpha=DEFAULTS.alpha, solver=DEFAULTS.solver,
                 use_components=DEFAULTS.use_components, solver_options=DEFAULTS.solver_options, epsilon=None,
                 delta=None, accountant=None, bound=1.0, bound_check="raise", assume_centered=True,
                 mean_fraction=0.1, noise=DEFAULT_NOISE, random_state=None) -> None:
        super().__init__(rho, epsilon=epsilon, delta=delta, accountant=accountant, bound=bound,
                         bound_check=bound_check, assume_centered=assume_centered, mean_fraction=mean_fraction,
                         noise=noise, random_state=random_state)
        self.bandwidth = bandwidth
        self.alpha = alpha
        self.solver = solver
        self.use_components = use_components
        self.solver_options = solver_options

    def _check_params(self) -> None:
        w = self.bandwidth
        if isinstance(w, bool) or not isinstance(w, numbers.Integral) or w < 1:
            raise ValueError(f"bandwidth must be an integer >= 1, got {w!r}")
        # the parameters it shares with PACE-GGM follow PACE-GGM's rules, written in its settings alone
        PACEGGMSettings(alpha=self.alpha, solver=self.solver, use_components=self.use_components,
                        solver_options=self.solver_options)

    def _release(self, X, *, bound, ledger, rng):
        n, d = X.shape
        pairs = band_pairs(d, int(self.bandwidth))
        delta = entry_sensitivity(n=n, bound=bound)
        # Σ(X) is the only access to the data; everything after is mechanisms on it.
        sigma_x = X.T @ X / n
        rho = ledger.budget
        diagonal_share = on_ulp_grid(float(self.alpha) * rho / d if pairs else rho / d, rho)
        plan = [((j, j), diagonal_share, "initialise: diagonal") for j in range(d)]
        pair_share = on_ulp_grid((1.0 - float(self.alpha)) * rho / len(pairs), rho) if pairs else 0.0
        plan += [(pair, pair_share, "initialise: forced pair") for pair in pairs]
        state = MeasuredEntries(d)
        measurements = []
        for i, ((j, k), share, purpose) in enumerate(plan):
            share = ledger.remaining if i == len(plan) - 1 else share
            ledger.charge(share, purpose)  # charge before releasing
            z, sigma = gaussian_mechanism(sigma_x[j, k], rho=share, sensitivity=delta, rng=rng, noise=self.noise)
            m = Measurement(entry=(j, k), value=z, sigma=sigma, rho=share)
            measurements.append(m)
            state.add(m)
        rec = reconstruct(state.y, state.lam, solver=self.solver, use_components=bool(self.use_components),
                          solver_options=self.solver_options)
        self.measurements_ = tuple(measurements)
        self.pattern_ = state.pattern
        self.n_offdiagonal_ = state.n_offdiagonal()
        self.n_rounds_ = 0
        self.solve_time_ = rec.solve_time
        self.n_iter_ = rec.n_iter
        self.converged_ = rec.converged
        self.n_solves_ = rec.n_solved
        self.n_capped_ = rec.n_capped
        self.max_iter_ = rec.max_iter
        return rec.covariance

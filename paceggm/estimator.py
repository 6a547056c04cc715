"""PACE-GGM: select – measure – reconstruct (docs/design.md, *Algorithm*)."""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import numpy as np

from paceggm._validation import check_bound, check_data, check_open_fraction, check_rho, enforce_bound
from paceggm.base import PrivateCovarianceEstimator
from paceggm.measurement import MeasuredEntries, Measurement
from paceggm.privacy import (
    Charge,
    ZCDPLedger,
    entry_sensitivity,
    exponential_mechanism,
    gaussian_mechanism,
)
from paceggm.privacy.mechanisms import DEFAULT_NOISE, noise_source
from paceggm.privacy.selection import PairSampler
from paceggm.reconstruction import SOLVERS
from paceggm.reconstruction.incremental import IncrementalReconstruction
from paceggm.settings import DEFAULTS, PACEGGMSettings


@dataclass(frozen=True, slots=True)
class RoundRecord:
    """What happened in one adaptive round.

    Attributes
    ----------
    round : int
        1-based round number.
    entry : tuple of int
        The selected ``(j, k)``, ``j >= k``.
    sigma : float
        Noise std of the measurement ``σ_t``.
    rho_select, rho_measure : float
        Budgets spent on selection and measurement this round.
    change : float
        ``|Σ̂⁽ᵗ⁾_jk − Σ̂⁽ᵗ⁻¹⁾_jk|`` at the measured entry.
    annealed : bool
        Whether the change was ``<= sqrt(2/π) σ_t`` and the budgets were raised.
    final : bool
        Whether this round spent what was left.
    solve_time : float
        Seconds in the reconstruction solver this round.
    n_iter : int
        Solver iterations this round (over the blocks solved).
    converged : bool
        Whether every block solved this round converged (no iteration cap hit).
    n_solved : int
        Blocks solved this round (the others were reused unchanged).
    n_capped : int
        Blocks solved this round that stopped at an iteration cap.
    max_iter : int
        Most iterations one block took this round.
    """

    round: int
    entry: tuple[int, int]
    sigma: float
    rho_select: float
    rho_measure: float
    change: float
    annealed: bool
    final: bool
    solve_time: float
    n_iter: int = 0
    converged: bool = True
    n_solved: int = 0
    n_capped: int = 0
    max_iter: int = 0


@dataclass(frozen=True)
class PACEGGMResult:
    """Everything a PACE-GGM run releases and reports.

    ``covariance`` is the estimate; ``measurements`` the noisy releases it was
    post-processed from (reconstruct again from them at no privacy cost with
    :meth:`paceggm.MeasuredEntries.from_measurements`); ``charges`` the ledger.
    """

    covariance: np.ndarray
    measurements: tuple[Measurement, ...]
    history: tuple[RoundRecord, ...]
    charges: tuple[Charge, ...]
    rho: float
    rho_spent: float
    n_rounds: int
    pattern: np.ndarray
    n_offdiagonal: int
    solve_time: float
    solver: str
    mu: float | None

    @property
    def n_annealed(self) -> int:
        return sum(r.annealed for r in self.history)

    @property
    def n_iter(self) -> int:
        """Solver iterations over all rounds."""
        return sum(r.n_iter for r in self.history)

    @property
    def converged(self) -> bool:
        """Whether the solver converged in every round (no iteration cap hit)."""
        return all(r.converged for r in self.history)

    @property
    def n_solves(self) -> int:
        """Block solves over all rounds."""
        return sum(r.n_solved for r in self.history)

    @property
    def n_capped(self) -> int:
        """Block solves, over all rounds, that stopped at an iteration cap."""
        return sum(r.n_capped for r in self.history)

    @property
    def max_iter(self) -> int:
        """Most iterations one block solve took, over all rounds."""
        return max((r.max_iter for r in self.history), default=0)


def _forced(forced_pairs, d: int) -> tuple[tuple[int, int], ...]:
    """``forced_pairs`` as distinct off-diagonal ``(j, k)``, ``j > k``, in the order given (checked against ``d``)."""
    if forced_pairs is None:
        return ()
    if isinstance(forced_pairs, (str, bytes)) or not hasattr(forced_pairs, "__iter__"):
        raise TypeError(f"forced_pairs must be a sequence of (j, k) index pairs, got {type(forced_pairs).__name__}")
    out: list[tuple[int, int]] = []
    for pair in forced_pairs:
        pair = tuple(pair) if hasattr(pair, "__iter__") and not isinstance(pair, (str, bytes)) else (pair,)
        if len(pair) != 2 or not all(isinstance(i, numbers.Integral) and not isinstance(i, bool) for i in pair):
            raise ValueError(f"forced_pairs must hold pairs of integer indices, got {pair!r}")
        j, k = max(int(pair[0]), int(pair[1])), min(int(pair[0]), int(pair[1]))
        if k < 0 or j >= d:
            raise ValueError(f"forced pair {pair!r} is outside 0..{d - 1}")
        if j == k:
            raise ValueError(f"forced pair {pair!r} is on the diagonal, which PACE-GGM measures anyway")
        if (j, k) in out:
            raise ValueError(f"forced pair {pair!r} repeats")
        out.append((j, k))
    return tuple(out)


def _check_forced_fraction(forced_fraction, alpha) -> None:
    check_open_fraction(forced_fraction, "forced_fraction")
    if not float(alpha) + float(forced_fraction) < 1.0:
        raise ValueError(f"alpha + forced_fraction must be < 1 (the rounds need budget), got "
                         f"{alpha!r} + {forced_fraction!r}")


class _GumbelSelection:
    """Gumbel-max over every candidate, every round (NumPy's ``Generator.gumbel`` stream, to the pick);
    with ``noise="exact"``, the exact sampler over every candidate."""

    def __init__(self, scores: np.ndarray, sensitivity: float, noise: str = DEFAULT_NOISE) -> None:
        self.scores, self.sensitivity, self.noise = scores, sensitivity, noise

    def rescored(self, positions: np.ndarray) -> None:
        pass

    def draw(self, *, rho: float, rng) -> int:
        return exponential_mechanism(self.scores, rho=rho, sensitivity=self.sensitivity, rng=rng, noise=self.noise)


def _selection(sampler: str, scores: np.ndarray, sensitivity: float, noise: str = DEFAULT_NOISE):
    if sampler == "rows":
        return PairSampler(scores, sensitivity=sensitivity)
    return _GumbelSelection(scores, sensitivity, noise)


class _ComponentPairs:
    """Where a component's pairs ``j >= k`` sit: in the packed candidate vector and in the flat ``d × d`` estimate.

    Every round rescores the component that changed, usually the same one as the
    round before (late in a fit, a component of hundreds of variables): the
    positions are kept for the last component asked for.
    """

    def __init__(self, d: int) -> None:
        self.d = d
        self._members: np.ndarray | None = None
        self._positions: tuple[np.ndarray, np.ndarray] = (np.empty(0, np.intp), np.empty(0, np.intp))

    def of(self, members: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if members is not self._members:
            p, q = np.tril_indices(members.size)
            rows, cols = members[p], members[q]
            self._positions = (rows * (rows + 1) // 2 + cols, rows * self.d + cols)
            self._members = members
        return self._positions


def pace_ggm(
    X,
    *,
    rho: float,
    bound: float = 1.0,
    alpha: float = DEFAULTS.alpha,
    beta: float = DEFAULTS.beta,
    max_rounds: int | str | None = DEFAULTS.max_rounds,
    anneal_factor: float | None = DEFAULTS.anneal_factor,
    solver: str = DEFAULTS.solver,
    use_components: bool = DEFAULTS.use_components,
    solver_options: dict | None = DEFAULTS.solver_options,
    bound_check: str = "raise",
    sampler: str = DEFAULTS.sampler,
    forced_pairs=DEFAULTS.forced_pairs,
    forced_fraction: float = DEFAULTS.forced_fraction,
    noise: str = DEFAULTS.noise,
    random_state=None,
) -> PACEGGMResult:
    """Run PACE-GGM on ``X`` and return the result record.

    Parameters
    ----------
    X : array_like of shape (n, d)
        Records in rows, every coordinate in ``[-bound, bound]``.
    rho : float
        Total zCDP budget, > 0. The run spends exactly this (never more).
    bound : float
        Coordinate bound ``B``; entry sensitivity ``2B²/n``.
    alpha, beta, max_rounds, anneal_factor, solver, use_components, solver_options, sampler, forced_pairs,
    forced_fraction, noise
        PACE-GGM's parameters: their meaning, defaults and rules are those of
        :class:`paceggm.settings.PACEGGMSettings` (``forced_pairs`` must not be
        chosen from the data; ``noise="exact"`` with ``random_state=None`` for a
        real release).
    bound_check : {"raise", "clip", "waive"}
        What to do with values outside ``[-bound, bound]``: refuse them, clip
        them, or use the data unchecked — the last warns
        (:class:`~paceggm.exceptions.PrivacyLeakWarning`): the guarantee then
        holds only if the data respect the bound; it exists to reproduce
        published settings.
    random_state : None, int, SeedSequence, Generator or RandomState
        Source of the noise. A fixed seed makes a run reproducible — and its
        noise predictable to anyone who knows the seed: a real release needs
        ``None`` (fresh entropy from the operating system).

    Returns
    -------
    PACEGGMResult

    Examples
    --------
    >>> import numpy as np
    >>> X = np.random.default_rng(0).uniform(-1, 1, size=(500, 3))
    >>> # A fixed seed for a reproducible example; a real release needs random_state=None.
    >>> res = pace_ggm(X, rho=1.0, random_state=0)
    >>> res.covariance.shape, res.rho_spent <= 1.0
    ((3, 3), True)
    """
    rho = check_rho(rho)
    check_bound(bound)
    settings = PACEGGMSettings.of(locals())
    X = check_data(X)
    check_bound(bound, d=X.shape[1])
    forced = _check_fit(settings, *X.shape, rho=rho, bound=float(bound))
    X = enforce_bound(X, float(bound), bound_check)
    return _fit_checked(X, settings, rho=rho, bound=float(bound), rng=noise_source(random_state, settings.noise),
                        forced=forced)


def _check_fit(settings: PACEGGMSettings, n: int, d: int, *, rho: float, bound: float) -> tuple[tuple[int, int], ...]:
    """What ``settings`` can only be checked against with the data's shape; the forced pairs, parsed."""
    forced = _forced(settings.forced_pairs, d)
    if forced:
        _check_forced_fraction(settings.forced_fraction, settings.alpha)
    _check_noise_scales(n, d, rho=rho, bound=bound, alpha=settings.alpha, beta=settings.beta,
                        max_rounds=settings.rounds(d), n_forced=len(forced), forced_fraction=settings.forced_fraction)
    return forced


# Every measurement's budget lies between ρ (all of it) and the smallest share the schedule gives
# one; the last round's may be smaller than a round's by this factor at most in practice, and the
# check keeps that much room so that a fit it lets through never meets an infinite precision.
_SCALE_ROOM = 1e12


def _check_noise_scales(n: int, d: int, *, rho: float, bound: float, alpha, beta, max_rounds,
                        n_forced: int = 0, forced_fraction: float = 0.0) -> None:
    """Refuse (before any budget is spent) budgets whose noise precisions 1/σ² a double cannot hold.

    ``max_rounds`` is ``T`` resolved for ``d`` (:meth:`PACEGGMSettings.rounds`).
    """
    delta = entry_sensitivity(n=n, bound=bound)
    T = max_rounds
    rounds = 1.0 - float(alpha) - (float(forced_fraction) if n_forced else 0.0)
    shares = [float(alpha) / d, rounds * min(float(beta), 1.0 - float(beta)) / T]
    if n_forced:
        shares.append(float(forced_fraction) / n_forced)
    smallest = rho * min(shares)
    with np.errstate(over="ignore", divide="ignore", under="ignore"):
        sigmas = np.array([delta / math.sqrt(2.0 * rho), delta / math.sqrt(2.0 * max(smallest, 1e-320))])
        precisions = np.array([_SCALE_ROOM, 1.0 / _SCALE_ROOM]) / sigmas**2
    if not (np.all(np.isfinite(precisions)) and np.all(precisions > 0.0) and np.all(np.isfinite(sigmas**2))):
        raise ValueError(
            f"rho={rho!r} with bound={bound!r} and n={n} gives noise scales a double cannot hold (entry "
            f"sensitivity {delta:.3g}; σ from {sigmas[0]:.3g} to {sigmas[1]:.3g}): rescale the data to a bound "
            "near 1, or give a less extreme budget"
        )


def _fit_checked(X: np.ndarray, settings: PACEGGMSettings, *, rho: float, bound: float,
                 rng: np.random.Generator | None, forced: tuple[tuple[int, int], ...] = ()) -> PACEGGMResult:
    """PACE-GGM on data and parameters that passed every check (``forced``: the parsed forced pairs)."""
    n, d = X.shape
    # Σ(X) is the only access to the data; everything after is mechanisms on it.
    sigma_x = X.T @ X / n
    return _run(sigma_x, n, settings, rho=float(rho), bound=float(bound), rng=rng, forced_pairs=forced)


def _run(
    sigma_x: np.ndarray,
    n: int,
    settings: PACEGGMSettings,
    *,
    rho: float,
    bound: float,
    rng: np.random.Generator | None,
    forced_pairs: tuple[tuple[int, int], ...] = (),
) -> PACEGGMResult:
    alpha, beta, anneal_factor = float(settings.alpha), float(settings.beta), settings.annealing()
    solver, sampler, noise = settings.solver, settings.sampler, settings.noise
    forced_fraction = float(settings.forced_fraction)
    d = sigma_x.shape[0]
    delta = entry_sensitivity(n=n, bound=bound)
    ledger = ZCDPLedger(rho)
    state = MeasuredEntries(d)
    measurements: list[Measurement] = []

    def measure(j: int, k: int, budget: float, purpose: str) -> Measurement:
        ledger.charge(budget, purpose)  # charge before releasing
        z, sigma = gaussian_mechanism(sigma_x[j, k], rho=budget, sensitivity=delta, rng=rng, noise=noise)
        m = Measurement(entry=(j, k), value=z, sigma=sigma, rho=budget)
        measurements.append(m)
        state.add(m)
        return m

    rho_diag_each = alpha * rho / d
    for j in range(d):
        measure(j, j, rho_diag_each, "initialise: diagonal")
    # Reads state.y and state.lam as measure() updates them.
    recon = IncrementalReconstruction(state.y, state.lam, solver=solver,
                                      use_components=bool(settings.use_components),
                                      solver_options=settings.solver_options, spec=SOLVERS[solver])
    estimate = recon.covariance
    forced_solve_time = 0.0
    if forced_pairs:
        # Fixed before the data are seen (the caller's promise): plain releases, like the diagonal's.
        rho_forced_each = forced_fraction * rho / len(forced_pairs)
        for j, k in forced_pairs:
            measure(j, k, rho_forced_each, "initialise: forced pair")
            recon.update(j, k)
            forced_solve_time += recon.solve_time

    T = settings.rounds(d)
    rho_round = ledger.remaining / T
    rho_sel, rho_meas = beta * rho_round, (1.0 - beta) * rho_round
    # The final-round rule also applies before round 1: with T = 1 the first
    # round must spend exactly what is left (β·r + (1−β)·r can exceed r by an ulp).
    final = ledger.remaining < 2.0 * (rho_sel + rho_meas)
    if final:
        rho_sel = beta * ledger.remaining
    cand_rows, cand_cols = np.tril_indices(d)
    # Candidate (j, k), j >= k, sits at j(j+1)/2 + k; only the scores of the block
    # that changed are recomputed each round.
    sigma_lower = sigma_x[cand_rows, cand_cols]
    scores = np.abs(sigma_lower - estimate[cand_rows, cand_cols])
    selection = _selection(sampler, scores, delta, noise)
    component_pairs = _ComponentPairs(d)
    history: list[RoundRecord] = []
    solve_time = forced_solve_time
    t = 0
    while True:
        t += 1
        ledger.charge(rho_sel, "select")
        choice = selection.draw(rho=rho_sel, rng=rng)
        j, k = int(cand_rows[choice]), int(cand_cols[choice])
        if final:
            # Spend exactly what is left (rounded down, so never more).
            rho_meas = ledger.remaining
        m = measure(j, k, rho_meas, "measure")
        before = estimate[j, k]
        recon.update(j, k)
        solve_time += recon.solve_time
        change = float(abs(estimate[j, k] - before))
        packed, flat = component_pairs.of(recon.component(j))
        scores[packed] = np.abs(sigma_lower[packed] - estimate.take(flat))
        selection.rescored(packed)
        annealed = bool((not final) and change <= anneal_factor * m.sigma)
        history.append(RoundRecord(t, (j, k), m.sigma, rho_sel, m.rho, change, annealed, final, recon.solve_time,
                                   recon.n_iter, recon.converged, n_solved=recon.n_solved,
                                   n_capped=recon.n_capped, max_iter=recon.n_iter))
        if final:
            break
        if annealed:
            rho_sel, rho_meas = 2.0 * rho_sel, 4.0 * rho_meas
        # A non-final round spends at most half of what was left, so left > 0 here.
        left = ledger.remaining
        if left < 2.0 * (rho_sel + rho_meas):
            rho_sel, rho_meas = beta * left, (1.0 - beta) * left
            final = True

    final_rec = recon.result()
    return PACEGGMResult(
        covariance=final_rec.covariance,
        measurements=tuple(measurements),
        history=tuple(history),
        charges=ledger.charges,
        rho=rho,
        rho_spent=ledger.spent,
        n_rounds=t,
        pattern=state.pattern,
        n_offdiagonal=state.n_offdiagonal(),
        solve_time=solve_time,
        solver=solver,
        mu=final_rec.mu,
    )


class PACEGGM(PrivateCovarianceEstimator):
    """Private adaptive covariance estimation via Gaussian graphical models.

    Measures the diagonal, then repeatedly selects the entry of ``Σ(X)`` the
    current estimate gets most wrong (exponential mechanism), measures it
    (Gaussian mechanism) and reconstructs the maximum-entropy covariance
    consistent with all measurements. ``rho``-zCDP under replace-one neighbours
    for data with every ``|x_ij| <= bound``.

    Parameters
    ----------
    rho : float or None, default=None
        Total zCDP budget of one fit. Give either ``rho`` or ``epsilon`` and ``delta``.
    epsilon, delta : float or None, default=None
        An (ε, δ)-DP budget instead, converted to the largest ρ whose
        guarantee implies it by the exact conversion of Canonne, Kamath &
        Steinke (:func:`paceggm.privacy.approx_dp_to_zcdp`; ``ε(ρ) <= ε``
        holds in exact arithmetic).
    accountant : ZCDPAccountant, FileZCDPAccountant or None, default=None
        A budget shared with other fits (:class:`paceggm.privacy.ZCDPAccountant`
        in one process, :class:`~paceggm.privacy.FileZCDPAccountant` across processes):
        charged before the data are touched; a fit it cannot pay for raises
        :class:`~paceggm.exceptions.BudgetExceededError` and spends nothing.
        Without one, a second ``fit`` of the same object warns
        (:class:`~paceggm.exceptions.PrivacyBudgetWarning`).
    bound : float, default=1.0
    bound_check : {"raise", "clip", "waive"}, default="raise"
        See :func:`pace_ggm`.
    alpha, beta, max_rounds, anneal_factor, solver, use_components, solver_options, sampler, forced_pairs,
    forced_fraction, noise
        PACE-GGM's parameters, with the meaning, defaults and rules of
        :class:`paceggm.settings.PACEGGMSettings` (``forced_pairs`` must not be
        chosen from the data; ``noise="exact"`` with ``random_state=None`` for a
        real release). ``fit`` checks them once, before any budget is spent.
    assume_centered : bool, default=True
        ``True`` estimates ``XᵀX/n`` (the covariance of centred data, as the
        project's preprocessing produces; ``location_`` is 0). ``False``
        spends ``mean_fraction · rho`` on a private mean and estimates the
        covariance around it with the rest (bound ``2·bound``).
    mean_fraction : float in (0, 1), default=0.1
        Share of the budget for the mean when ``assume_centered=False``.
    random_state : None, int, SeedSequence, Generator or RandomState, default=None
        ``None`` for a real release; a fixed seed makes the noise reproducible
        (for experiments and tests) and therefore predictable. With
        ``noise="exact"`` and ``None`` the bits come from :mod:`secrets`.

    Attributes
    ----------
    covariance_ : ndarray of shape (d, d)
    location_ : ndarray of shape (d,)
        Zero, or the private mean (``assume_centered=False``).
    precision_ : ndarray of shape (d, d)
        Pseudo-inverse of ``covariance_`` (zero off the measured pattern when
        the completion is non-singular).
    n_features_in_ : int
    rho_spent_ : float
        zCDP budget spent by all fits of this object so far (one fit: at most ``rho``).
    ledger_ : tuple of Charge
        This fit's charges.
    n_rounds_ : int
    pattern_ : ndarray of bool, shape (d, d)
        Measured entries.
    n_offdiagonal_ : int
        Distinct measured off-diagonal entries.
    measurements_ : tuple of Measurement
    history_ : tuple of RoundRecord
        Per round, including the solver's iterations and convergence.
    solve_time_ : float
        Seconds spent in the reconstruction solver.
    n_iter_ : int
        Solver iterations over all rounds.
    converged_ : bool
        Whether the solver converged in every round; when not, a
        :class:`~paceggm.exceptions.ConvergenceWarning` was raised.
    result_ : PACEGGMResult

    Examples
    --------
    >>> import numpy as np
    >>> X = np.random.default_rng(0).uniform(-1, 1, size=(1000, 4))
    >>> # A fixed seed for a reproducible example; a real release needs random_state=None.
    >>> est = PACEGGM(rho=1.0, random_state=0).fit(X)
    >>> est.covariance_.shape, est.rho_spent_ <= 1.0
    ((4, 4), True)

    An (ε, δ) budget:

    >>> est = PACEGGM(epsilon=1.0, delta=1e-6, random_state=0).fit(X)
    >>> round(est.rho_spent_, 6)
    0.024356
    """

    def __init__(
        self,
        rho: float | None = None,
        *,
        epsilon: float | None = None,
        delta: float | None = None,
        accountant=None,
        bound: float = 1.0,
        alpha: float = DEFAULTS.alpha,
        beta: float = DEFAULTS.beta,
        max_rounds: int | str | None = DEFAULTS.max_rounds,
    anneal_factor: float | None = DEFAULTS.anneal_factor,
        solver: str = DEFAULTS.solver,
        use_components: bool = DEFAULTS.use_components,
        solver_options: dict | None = DEFAULTS.solver_options,
        bound_check: str = "raise",
        sampler: str = DEFAULTS.sampler,
        forced_pairs=DEFAULTS.forced_pairs,
        forced_fraction: float = DEFAULTS.forced_fraction,
        assume_centered: bool = True,
        mean_fraction: float = 0.1,
        noise: str = DEFAULTS.noise,
        random_state=None,
    ) -> None:
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
        self.bound_check = bound_check
        self.sampler = sampler
        self.forced_pairs = forced_pairs
        self.forced_fraction = forced_fraction
        self.assume_centered = assume_centered
        self.mean_fraction = mean_fraction
        self.noise = noise
        self.random_state = random_state

    def _check_params(self) -> None:
        check_bound(self.bound)
        # The fit's one check of PACE-GGM's parameters; the fit runs on what it returns.
        self._settings = PACEGGMSettings.of(self)

    def _check_scales(self, n: int, d: int, *, rho: float, bound: float) -> None:
        # The forced pairs need d: checked here, before any budget is spent.
        self._forced = _check_fit(self._settings, n, d, rho=rho, bound=bound)

    def _estimate(self, X, *, rho, bound, rng):
        res = _fit_checked(X, self._settings, rho=rho, bound=bound, rng=rng, forced=self._forced)
        self.result_ = res
        self.n_rounds_ = res.n_rounds
        self.pattern_ = res.pattern
        self.n_offdiagonal_ = res.n_offdiagonal
        self.measurements_ = res.measurements
        self.history_ = res.history
        self.solve_time_ = res.solve_time
        self.n_iter_ = res.n_iter
        self.converged_ = res.converged
        self.n_solves_ = res.n_solves
        self.n_capped_ = res.n_capped
        self.max_iter_ = res.max_iter
        return res.covariance, res.charges

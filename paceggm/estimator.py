"""PACE-GGM: select – measure – reconstruct (docs/design.md, *Algorithm*)."""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import numpy as np

from paceggm._validation import (
    check_bound,
    check_choice,
    check_data,
    check_open_fraction,
    check_rho,
    enforce_bound,
)
from paceggm.base import PrivateCovarianceEstimator
from paceggm.measurement import MeasuredEntries, Measurement
from paceggm.privacy import (
    Charge,
    ZCDPLedger,
    entry_sensitivity,
    exponential_mechanism,
    gaussian_mechanism,
)
from paceggm.privacy.mechanisms import DEFAULT_NOISE, check_noise, noise_source
from paceggm.privacy.selection import PairSampler
from paceggm.reconstruction import DEFAULT_SOLVER, SOLVERS, check_solver_options
from paceggm.reconstruction.incremental import IncrementalReconstruction

_ANNEAL_FACTOR = math.sqrt(2.0 / math.pi)  # E|N(0, σ²)| = sqrt(2/π) σ

#: How the exponential mechanism draws a round's pair (the same distribution; see ``sampler`` of :func:`pace_ggm`).
SAMPLERS = ("gumbel", "rows")
DEFAULT_SAMPLER = "gumbel"


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


def _check_params(*, bound, alpha, beta, max_rounds, solver, use_components, solver_options,
                  sampler=DEFAULT_SAMPLER, noise=DEFAULT_NOISE) -> None:
    """PACE-GGM's own parameters (the budget is checked where it is resolved)."""
    check_bound(bound)
    check_open_fraction(alpha, "alpha")
    check_open_fraction(beta, "beta")
    if max_rounds is not None:
        if isinstance(max_rounds, bool) or not isinstance(max_rounds, numbers.Integral) or max_rounds < 1:
            raise ValueError(f"max_rounds must be a positive integer or None, got {max_rounds!r}")
    check_choice(solver, SOLVERS, "solver")
    if not isinstance(use_components, (bool, np.bool_)):
        raise TypeError(f"use_components must be a bool, got {use_components!r}")
    check_solver_options(solver, solver_options)
    if not isinstance(sampler, str) or sampler not in SAMPLERS:
        raise ValueError(f"unknown sampler {sampler!r}; choose one of {list(SAMPLERS)}")
    if check_noise(noise) == "exact" and sampler == "rows":
        raise ValueError("noise='exact' needs sampler='gumbel' (its selection is drawn exactly); "
                         "sampler='rows' draws from weights in doubles")


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
    alpha: float = 0.3,
    beta: float = 0.5,
    max_rounds: int | None = None,
    solver: str = DEFAULT_SOLVER,
    use_components: bool = True,
    solver_options: dict | None = None,
    bound_check: str = "raise",
    sampler: str = DEFAULT_SAMPLER,
    forced_pairs=None,
    forced_fraction: float = 0.5,
    noise: str = DEFAULT_NOISE,
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
    alpha : float in (0, 1)
        Fraction of ``rho`` for the initial diagonal measurements.
    beta : float in (0, 1)
        Fraction of each round's budget for selection.
    max_rounds : int, optional
        ``T``; the initial round budget is ``(ρ − αρ)/T``. Default ``d(d−1)``
        (at least 1). Annealing usually ends the run in fewer rounds.
    solver : str
        Reconstruction solver, a key of :data:`paceggm.SOLVERS`: ``"auto"``
        (the default: per block the exact Newton path measured fastest,
        ``"newton_pcg"`` on the CPU, ``"newton_xp"`` on a GPU given
        ``solver_options={"backend": "torch"}``), ``"newton"`` (the exact
        reference, which the published recipes pin), ``"ipm"`` (IPM-Cholesky, the published
        reference), ``"pgd0"``/``"pgd1"`` (no entropy term).
    use_components : bool
        Decompose the reconstruction over connected components.
    solver_options : dict, optional
        Passed to the solver.
    bound_check : {"raise", "clip", "waive"}
        What to do with values outside ``[-bound, bound]``: refuse them, clip
        them, or use the data unchecked — the last warns
        (:class:`~paceggm.exceptions.PrivacyLeakWarning`): the guarantee then
        holds only if the data respect the bound; it exists to reproduce
        published settings.
    sampler : {"gumbel", "rows"}
        How the exponential mechanism draws each round's pair; both have
        exactly its distribution and cost. ``"gumbel"`` (the default) is
        Gumbel-max over all ``d(d+1)/2`` candidates, pick for pick NumPy's
        ``Generator.gumbel`` stream (the published experiments' draws), and
        costs ``O(d²)`` a round. ``"rows"``
        (:class:`paceggm.privacy.selection.PairSampler`) keeps the weights and
        their row sums up to date where scores changed and draws a row, then a
        column: ``O(d)`` a round plus the rescored pairs, and other picks for
        the same seed.
    forced_pairs : sequence of (int, int), optional
        Off-diagonal entries measured right after the diagonal, in this order, before the adaptive
        rounds: ``forced_fraction · rho`` split equally among them, each a Gaussian-mechanism
        release charged to the ledger like every other. The guarantee is unchanged (still
        ``rho``-zCDP) only because the pairs are fixed in advance: they must be chosen without
        looking at the data (e.g. "the target's row", from the shape alone). ``None`` or empty:
        none (the published algorithm, bit for bit).
    forced_fraction : float in (0, 1)
        Share of ``rho`` for ``forced_pairs`` (ignored without them); ``alpha + forced_fraction < 1``.
        The rounds then start from ``(1 − alpha − forced_fraction) rho``.
    noise : {"fast", "exact"}
        How the noise is drawn, at the same cost ``rho``. ``"fast"`` (the default,
        the published experiments' draws): doubles from a NumPy Generator.
        ``"exact"``: discrete Gaussian measurements on a fine power-of-two grid
        and an exact selection sampler, in exact integer arithmetic
        (:mod:`paceggm.privacy.exact`), immune to the floating-point attacks
        on textbook samplers; slower, and needs ``sampler="gumbel"``. With
        ``random_state=None`` its bits come from :mod:`secrets`: the setting
        for a real release.
    random_state : None, int, SeedSequence or Generator
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
    _check_params(
        bound=bound, alpha=alpha, beta=beta, max_rounds=max_rounds, solver=solver,
        use_components=use_components, solver_options=solver_options, sampler=sampler, noise=noise,
    )
    X = check_data(X)
    check_bound(bound, d=X.shape[1])
    forced = _forced(forced_pairs, X.shape[1])
    if forced:
        _check_forced_fraction(forced_fraction, alpha)
    _check_noise_scales(*X.shape, rho=rho, bound=float(bound), alpha=alpha, beta=beta, max_rounds=max_rounds,
                        n_forced=len(forced), forced_fraction=forced_fraction)
    X = enforce_bound(X, float(bound), bound_check)
    return _fit_checked(
        X, rho=rho, bound=float(bound), alpha=alpha, beta=beta, max_rounds=max_rounds, solver=solver,
        use_components=use_components, solver_options=solver_options, rng=noise_source(random_state, noise),
        sampler=sampler, forced_pairs=forced, forced_fraction=forced_fraction, noise=noise,
    )


# Every measurement's budget lies between ρ (all of it) and the smallest share the schedule gives
# one; the last round's may be smaller than a round's by this factor at most in practice, and the
# check keeps that much room so that a fit it lets through never meets an infinite precision.
_SCALE_ROOM = 1e12


def _check_noise_scales(n: int, d: int, *, rho: float, bound: float, alpha, beta, max_rounds,
                        n_forced: int = 0, forced_fraction: float = 0.0) -> None:
    """Refuse (before any budget is spent) budgets whose noise precisions 1/σ² a double cannot hold."""
    delta = entry_sensitivity(n=n, bound=bound)
    T = max_rounds if max_rounds is not None else max(1, d * (d - 1))
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


def _fit_checked(X: np.ndarray, *, rho: float, bound: float, alpha, beta, max_rounds, solver, use_components,
                 solver_options, rng: np.random.Generator | None, sampler: str = DEFAULT_SAMPLER,
                 forced_pairs=(), forced_fraction: float = 0.5, noise: str = DEFAULT_NOISE) -> PACEGGMResult:
    """PACE-GGM on data and parameters that passed every check."""
    n, d = X.shape
    # Σ(X) is the only access to the data; everything after is mechanisms on it.
    sigma_x = X.T @ X / n
    return _run(
        sigma_x, n, rho=float(rho), bound=float(bound), alpha=float(alpha), beta=float(beta),
        max_rounds=max_rounds, solver=solver, use_components=bool(use_components),
        solver_options=solver_options, rng=rng, sampler=sampler,
        forced_pairs=_forced(forced_pairs, d), forced_fraction=float(forced_fraction), noise=noise,
    )


def _run(
    sigma_x: np.ndarray,
    n: int,
    *,
    rho: float,
    bound: float,
    alpha: float,
    beta: float,
    max_rounds: int | None,
    solver: str,
    use_components: bool,
    solver_options: dict | None,
    rng: np.random.Generator | None,
    sampler: str = DEFAULT_SAMPLER,
    forced_pairs: tuple[tuple[int, int], ...] = (),
    forced_fraction: float = 0.5,
    noise: str = DEFAULT_NOISE,
) -> PACEGGMResult:
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
    recon = IncrementalReconstruction(state.y, state.lam, solver=solver, use_components=use_components,
                                      solver_options=solver_options)
    estimate = recon.covariance
    forced_solve_time = 0.0
    if forced_pairs:
        # Fixed before the data are seen (the caller's promise): plain releases, like the diagonal's.
        rho_forced_each = forced_fraction * rho / len(forced_pairs)
        for j, k in forced_pairs:
            measure(j, k, rho_forced_each, "initialise: forced pair")
            recon.update(j, k)
            forced_solve_time += recon.solve_time

    T = max_rounds if max_rounds is not None else max(1, d * (d - 1))
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
        annealed = bool((not final) and change <= _ANNEAL_FACTOR * m.sigma)
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
    alpha : float, default=0.3
    beta : float, default=0.5
    max_rounds : int or None, default=None
    solver : str, default="auto"
    use_components : bool, default=True
    solver_options : dict or None, default=None
    bound_check : {"raise", "clip", "waive"}, default="raise"
    sampler : {"gumbel", "rows"}, default="gumbel"
    forced_pairs : sequence of (int, int) or None, default=None
    forced_fraction : float, default=0.5
    noise : {"fast", "exact"}, default="fast"
        See :func:`pace_ggm` for these (``forced_pairs`` must not be chosen from the data;
        ``noise="exact"`` with ``random_state=None`` for a real release).
    assume_centered : bool, default=True
        ``True`` estimates ``XᵀX/n`` (the covariance of centred data, as the
        project's preprocessing produces; ``location_`` is 0). ``False``
        spends ``mean_fraction · rho`` on a private mean and estimates the
        covariance around it with the rest (bound ``2·bound``).
    mean_fraction : float in (0, 1), default=0.1
        Share of the budget for the mean when ``assume_centered=False``.
    random_state : None, int, SeedSequence or Generator, default=None
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
        alpha: float = 0.3,
        beta: float = 0.5,
        max_rounds: int | None = None,
        solver: str = DEFAULT_SOLVER,
        use_components: bool = True,
        solver_options: dict | None = None,
        bound_check: str = "raise",
        sampler: str = DEFAULT_SAMPLER,
        forced_pairs=None,
        forced_fraction: float = 0.5,
        assume_centered: bool = True,
        mean_fraction: float = 0.1,
        noise: str = DEFAULT_NOISE,
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
        _check_params(
            bound=self.bound, alpha=self.alpha, beta=self.beta, max_rounds=self.max_rounds,
            solver=self.solver, use_components=self.use_components, solver_options=self.solver_options,
            sampler=self.sampler, noise=self.noise,
        )

    def _check_scales(self, n: int, d: int, *, rho: float, bound: float) -> None:
        forced = _forced(self.forced_pairs, d)  # the pairs need d: checked here, before any budget is spent
        if forced:
            _check_forced_fraction(self.forced_fraction, self.alpha)
        _check_noise_scales(n, d, rho=rho, bound=bound, alpha=self.alpha, beta=self.beta, max_rounds=self.max_rounds,
                            n_forced=len(forced), forced_fraction=self.forced_fraction)

    def _estimate(self, X, *, rho, bound, rng):
        res = _fit_checked(
            X, rho=rho, bound=bound, alpha=self.alpha, beta=self.beta, max_rounds=self.max_rounds,
            solver=self.solver, use_components=self.use_components, solver_options=self.solver_options, rng=rng,
            sampler=self.sampler, forced_pairs=self.forced_pairs, forced_fraction=self.forced_fraction,
            noise=self.noise,
        )
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

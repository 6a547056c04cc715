"""PACE-GGM's own parameters: declared, defaulted, documented and checked here alone.

:func:`paceggm.pace_ggm`, :class:`paceggm.PACEGGM`, the regression built on it
(:class:`paceggm.baselines.PACEGGMRegression`) and the harness's method
registry read their PACE-GGM parameters, defaults and rules from
:class:`PACEGGMSettings`; the estimators keep scikit-learn's convention
(``__init__`` stores keyword parameters, whose defaults are this class's) and
turn them into settings once per fit, before any budget is spent.

The budget (``rho`` or ``epsilon``/``delta``), the coordinate ``bound``, its
``bound_check`` and ``random_state`` are every private estimator's
(:mod:`paceggm.base`), not PACE-GGM's, and are not settings.
"""

from __future__ import annotations

import math
import numbers
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, fields

import numpy as np

from paceggm._validation import check_choice, check_open_fraction
from paceggm.privacy.mechanisms import DEFAULT_NOISE, check_noise
from paceggm.reconstruction import DEFAULT_SOLVER, check_solver

__all__ = ["ANNEAL_FACTOR", "DEFAULT_SAMPLER", "PACEGGMSettings", "SAMPLERS"]

#: How the exponential mechanism draws a round's pair (the same distribution; see :class:`PACEGGMSettings`).
SAMPLERS = ("gumbel", "rows")
DEFAULT_SAMPLER = "gumbel"

# Marks the parameters an experiment tunes (the publication's α, β, T, solver and
# decomposition): the method registry's config group offers exactly these.
_TUNED = {"tuned": True}


@dataclass(frozen=True)
class PACEGGMSettings:
    """PACE-GGM's parameters, checked once: constructing a settings object is the check.

    Parameters
    ----------
    alpha : float in (0, 1), default=0.3
        Fraction of ``rho`` for the initial diagonal measurements.
    beta : float in (0, 1), default=0.5
        Fraction of each round's budget for selection.
    max_rounds : int, str or None, default=None
        ``T``; the initial round budget is ``(ρ − αρ)/T``. ``None``: ``d(d−1)``
        (at least 1). A string ``"d(d-1)/k"`` (``k`` a positive integer) or
        ``"d(d-1)"`` states ``T`` as a fraction of ``d(d−1)`` before the data's
        ``d`` is known: ``⌊d(d−1)/k⌋``, at least 1 (:meth:`rounds`). Annealing
        usually ends the run in fewer rounds.
    anneal_factor : float or None, default=None
        A round anneals (the next rounds' ``ρ_sel`` doubles, ``ρ_meas``
        quadruples) when the reconstruction moved the entry it measured by at
        most ``anneal_factor · σ``, ``σ`` that measurement's noise. ``None``:
        ``sqrt(2/π)``, the mean of ``|N(0, σ²)|`` over ``σ`` (:data:`ANNEAL_FACTOR`).
    solver : str, default="auto"
        Reconstruction solver, a key of :data:`paceggm.SOLVERS`: ``"auto"``
        (per block the exact Newton path measured fastest, ``"newton_pcg"`` on
        the CPU, ``"newton_xp"`` on a GPU given ``solver_options={"backend":
        "torch"}``), ``"newton"`` (the exact reference, which the published
        recipes pin), ``"ipm"`` (IPM-Cholesky, the published reference),
        ``"pgd0"``/``"pgd1"`` (no entropy term).
    use_components : bool, default=True
        Decompose the reconstruction over connected components.
    solver_options : dict or None, default=None
        Keyword options passed to the solver (only those it takes).
    sampler : {"gumbel", "rows"}, default="gumbel"
        How the exponential mechanism draws each round's pair; both have
        exactly its distribution and cost. ``"gumbel"`` is Gumbel-max over all
        ``d(d+1)/2`` candidates, pick for pick NumPy's ``Generator.gumbel``
        stream (the published experiments' draws), and costs ``O(d²)`` a round.
        ``"rows"`` (:class:`paceggm.privacy.selection.PairSampler`) keeps the
        weights and their row sums up to date where scores changed and draws a
        row, then a column: ``O(d)`` a round plus the rescored pairs, and other
        picks for the same seed.
    forced_pairs : sequence of (int, int) or None, default=None
        Off-diagonal entries measured right after the diagonal, in this order,
        before the adaptive rounds: ``forced_fraction · rho`` split equally
        among them, each a Gaussian-mechanism release charged to the ledger
        like every other. The guarantee is unchanged (still ``rho``-zCDP) only
        because the pairs are fixed in advance: they must be chosen without
        looking at the data (e.g. "the target's row", from the shape alone).
        ``None`` or empty: none (the published algorithm, bit for bit). Checked
        against the data's dimension when a fit sees it.
    forced_fraction : float in (0, 1), default=0.5
        Share of ``rho`` for ``forced_pairs`` (ignored without them);
        ``alpha + forced_fraction < 1``. The rounds then start from
        ``(1 − alpha − forced_fraction) rho``.
    noise : {"fast", "exact"}, default="fast"
        How the noise is drawn, at the same cost ``rho``. ``"fast"``: doubles
        from a NumPy Generator (the published experiments' draws). ``"exact"``:
        discrete Gaussian measurements on a fine power-of-two grid and an exact
        selection sampler, in exact integer arithmetic
        (:mod:`paceggm.privacy.exact`), immune to the floating-point attacks on
        textbook samplers; slower, and needs ``sampler="gumbel"``. With
        ``random_state=None`` its bits come from :mod:`secrets`: the setting
        for a real release.

    Raises
    ------
    ValueError, TypeError
        One line naming the parameter and what is valid (an unknown solver or
        sampler with the nearest name).

    Examples
    --------
    >>> PACEGGMSettings(alpha=0.1).alpha
    0.1
    >>> PACEGGMSettings(solver="ipn")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: unknown solver 'ipn' (did you mean 'ipm'?); choose one of [...]
    """

    alpha: float = field(default=0.3, metadata=_TUNED)
    beta: float = field(default=0.5, metadata=_TUNED)
    max_rounds: int | str | None = field(default=None, metadata=_TUNED)
    anneal_factor: float | None = field(default=None, metadata=_TUNED)
    solver: str = field(default=DEFAULT_SOLVER, metadata=_TUNED)
    use_components: bool = field(default=True, metadata=_TUNED)
    solver_options: dict | None = None
    sampler: str = DEFAULT_SAMPLER
    forced_pairs: object = None
    forced_fraction: float = 0.5
    noise: str = DEFAULT_NOISE

    def __post_init__(self) -> None:
        check_open_fraction(self.alpha, "alpha")
        check_open_fraction(self.beta, "beta")
        _round_divisor(self.max_rounds)
        if self.anneal_factor is not None and (isinstance(self.anneal_factor, bool)
                                               or not isinstance(self.anneal_factor, numbers.Real)
                                               or not 0.0 < float(self.anneal_factor) < math.inf):
            raise ValueError(f"anneal_factor must be a positive finite number or None, got {self.anneal_factor!r}")
        check_solver(self.solver, self.solver_options)
        if not isinstance(self.use_components, (bool, np.bool_)):
            raise TypeError(f"use_components must be a bool, got {self.use_components!r}")
        check_choice(self.sampler, SAMPLERS, "sampler")
        if check_noise(self.noise) == "exact" and self.sampler == "rows":
            raise ValueError("noise='exact' needs sampler='gumbel' (its selection is drawn exactly); "
                             "sampler='rows' draws from weights in doubles")

    @classmethod
    def names(cls) -> tuple[str, ...]:
        """Every parameter's name, in declaration order."""
        return tuple(f.name for f in fields(cls))

    @classmethod
    def tuned(cls) -> tuple[str, ...]:
        """The parameters an experiment tunes (α, β, T, the annealing factor, solver, decomposition)."""
        return tuple(f.name for f in fields(cls) if f.metadata.get("tuned"))

    @classmethod
    def of(cls, source) -> PACEGGMSettings:
        """The settings held by ``source``: a mapping or an object with these names (an estimator).

        A name ``source`` lacks takes its default.
        """
        get = source.get if isinstance(source, Mapping) else (lambda name, default: getattr(source, name, default))
        return cls(**{f.name: get(f.name, f.default) for f in fields(cls)})

    def params(self) -> dict:
        """The settings as keyword arguments (of :func:`paceggm.pace_ggm` or :class:`paceggm.PACEGGM`)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def rounds(self, d: int) -> int:
        """``T`` for data of dimension ``d``: ``max_rounds`` resolved (see above).

        >>> PACEGGMSettings().rounds(6), PACEGGMSettings(max_rounds="d(d-1)/4").rounds(6)
        (30, 7)
        """
        divisor = _round_divisor(self.max_rounds)
        return int(self.max_rounds) if divisor is None else max(1, d * (d - 1) // divisor)

    def annealing(self) -> float:
        """The annealing threshold's factor: ``anneal_factor``, or :data:`ANNEAL_FACTOR` when it is None."""
        return ANNEAL_FACTOR if self.anneal_factor is None else float(self.anneal_factor)


#: The default annealing threshold over σ: E|N(0, σ²)| = sqrt(2/π) σ.
ANNEAL_FACTOR = math.sqrt(2.0 / math.pi)

_ROUND_CAP = re.compile(r"d\(d-1\)(?:/([1-9][0-9]*))?")


def _round_divisor(max_rounds) -> int | None:
    """``k`` of a ``max_rounds`` stated as ``"d(d-1)/k"`` (1 for ``None`` and ``"d(d-1)"``); None for an int.

    This is the one check of ``max_rounds``.
    """
    if max_rounds is None:
        return 1
    if isinstance(max_rounds, str):
        found = _ROUND_CAP.fullmatch(max_rounds.replace(" ", ""))
        if found is not None:
            return int(found.group(1) or 1)
    elif not isinstance(max_rounds, bool) and isinstance(max_rounds, numbers.Integral) and max_rounds >= 1:
        return None
    raise ValueError(f"max_rounds must be a positive integer, 'd(d-1)/k' (k a positive integer), 'd(d-1)' or None, "
                     f"got {max_rounds!r}")


#: The defaults, for the estimators' signatures.
DEFAULTS = PACEGGMSettings()

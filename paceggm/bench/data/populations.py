"""Gaussian populations with a known covariance: spiked, banded, sparse precision, block.

Each population is ``N(0, Σ)`` in dimension ``d`` with ``Σ = sd² C``, where ``C``
is one of four shapes scaled so that its largest diagonal entry is 1 (every
coordinate's standard deviation is at most ``sd``), and its precision
``Ω = Σ⁻¹`` is known in closed form, its zeros exact:

``spiked``
    ``C ∝ I + V diag(s) Vᵀ``: five (at most ``d − 1``) spikes ``s = 16, 8, 4, 2, 1`` along
    Haar-random orthonormal ``V`` over a flat bulk. Dense precision
    (Woodbury: ``I − V diag(s/(1+s)) Vᵀ``); the bulk's eigenvalues tie, so the
    top-``k`` eigenspace is defined for ``k`` up to the number of spikes.
``banded``
    ``C_ij = φ^|i−j|`` with ``φ = 0.6`` (AR(1), Toeplitz); tridiagonal precision.
``sparse``
    A random sparse precision: an Erdős–Rényi graph of mean degree 2, edge
    weights ``±U(0.5, 1)``, the diagonal raised until the smallest eigenvalue
    is 0.5; ``C ∝ Ω⁻¹``. Its partial correlations are about 0.15 to 0.4.
``block``
    Block-diagonal equicorrelation: ``min(5, d)`` blocks of near-equal size with
    correlations from 0.7 down to 0.3; block-diagonal precision.

The structure (``V``, the graph) is drawn from the seed, the shape and ``d``
alone, so populations that differ only in ``n`` or ``sd`` share their ``Σ`` up to
the factor ``sd²``, and their rows up to that factor (paired draws).

The bound. Rows are Gaussian, so no bound holds surely: each value is clipped at
``±bound`` (the harness's declared ``B = 1``). The truth reported is the
*unclipped* ``Σ``. With ``sd = bound / z`` a value is clipped with probability
``2Φ(−z)``, and each entry of the clipped distribution's covariance lies
within ``Population.clip_bias · sd²`` of ``Σ``'s (a Cauchy–Schwarz bound):
``z = 6`` (:data:`TIGHT_Z`, ``sd = B/6``) gives ``2·10⁻⁹`` and ``2·10⁻⁵``, far below any private
estimate's error at these ``n``, and ``z = 20`` (:data:`LOOSE_Z`, the *loose-bound* arm: the
data's scale is well inside the declared bound, the regime CoinPress was
designed for) gives ``10⁻⁸⁸`` and ``10⁻⁴⁴``. The exact covariance of the clipped distribution
is not used: it has no closed form.

The catalogue. Importing this module registers the data sets
``pop_<shape>_d<d>_n<n>`` (``sd = B/6``) and ``pop_<shape>_d<d>_n<n>_loose``
(``sd = B/20``) for every shape, ``d ∈ {10, 30}`` and ``n ∈ {1000, 10000}``
(:data:`CATALOGUE`): a recipe names it among its plugins
(``plugins: [paceggm.bench.data.populations]``), as ``conf/experiment/populations.yaml`` does,
and :func:`register_population` adds others. The harness measures a cell on a
population against its ``Σ`` and ``Ω`` too (:func:`population_of`), when the
recipe's preprocessing is ``none``: ``paper`` and ``strict`` rescale each column by
its sample range, after which the population's covariance is no longer known.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

__all__ = ["CATALOGUE", "LOOSE_Z", "SHAPES", "TIGHT_Z", "Population", "make_population", "population_of",
           "register_population"]

SHAPES = ("spiked", "banded", "sparse", "block")
#: ``bound / sd`` of the catalogue's populations: clipped with probability 2Φ(−6) ≈ 2e-9 per value.
TIGHT_Z = 6.0
#: ``bound / sd`` of the loose-bound arm: the data's scale is a twentieth of the declared bound.
LOOSE_Z = 20.0

_SPIKES = (16.0, 8.0, 4.0, 2.0, 1.0)
_AR1 = 0.6
_DEGREE = 2.0
_WEIGHTS = (0.5, 1.0)
_MIN_EIGENVALUE = 0.5
_BLOCKS = 5
_BLOCK_CORRELATIONS = (0.7, 0.3)


@dataclass(frozen=True, eq=False)
class Population:
    """A Gaussian population ``N(0, Σ)``, its precision, and how its ``n`` rows are drawn and clipped.

    Attributes
    ----------
    shape : {"spiked", "banded", "sparse", "block"}
    d, n : int
        Dimension and number of rows drawn by :meth:`sample`.
    sd : float
        Largest standard deviation of a coordinate (``Σ``'s largest diagonal entry is ``sd²``).
    bound : float
        Every drawn value is clipped to ``[-bound, bound]``.
    seed : int
    covariance : ndarray of shape (d, d)
        ``Σ`` of the unclipped distribution (read-only).
    precision : ndarray of shape (d, d)
        ``Ω = Σ⁻¹`` from its closed form, zero exactly off the graph (read-only).
    """

    shape: str
    d: int
    n: int
    sd: float
    bound: float
    seed: int
    covariance: np.ndarray
    precision: np.ndarray

    @property
    def clip_probability(self) -> float:
        """Largest probability of a value being clipped, ``2Φ(−z)`` with ``z = bound / sd``."""
        return math.erfc(self.bound / self.sd / math.sqrt(2.0))

    @property
    def clip_bias(self) -> float:
        """Bound on how far clipping moves an entry of ``Σ``, relative to ``sd²``: ``2√δ``.

        ``δ = E[(X − clip(X))²] / sd² = 2[(1 + z²)Φ(−z) − zφ(z)]`` for ``X ~ N(0, sd²)``,
        ``z = bound / sd``; by Cauchy–Schwarz on ``xy − clip(x)clip(y)``, every entry
        of the clipped distribution's covariance lies within ``2√δ · sd²`` of ``Σ``'s.
        """
        z = self.bound / self.sd
        tail = 0.5 * math.erfc(z / math.sqrt(2.0))
        density = math.exp(-0.5 * z * z) / math.sqrt(2.0 * math.pi)
        return 2.0 * math.sqrt(max(0.0, 2.0 * ((1.0 + z * z) * tail - z * density)))

    def sample(self) -> np.ndarray:
        """The population's ``n`` rows: ``Z Lᵀ`` with ``L Lᵀ = Σ`` and ``Z`` seeded standard normal, clipped."""
        rng = np.random.default_rng([self.seed, SHAPES.index(self.shape), self.d, self.n, 1])
        L = np.linalg.cholesky(self.covariance)
        X = rng.standard_normal((self.n, self.d)) @ L.T
        return np.clip(X, -self.bound, self.bound)


def _spiked(d: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    s = np.array(_SPIKES[: min(len(_SPIKES), d - 1)])
    V, _ = np.linalg.qr(rng.standard_normal((d, s.size)))
    cov = np.eye(d) + (V * s) @ V.T
    return cov, np.eye(d) - (V * (s / (1.0 + s))) @ V.T


def _banded(d: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    idx = np.arange(d)
    cov = _AR1 ** np.abs(idx[:, None] - idx[None, :])
    inner = np.full(d, 1.0 + _AR1**2)
    inner[[0, -1]] = 1.0
    prec = (np.diag(inner) - _AR1 * (np.eye(d, k=1) + np.eye(d, k=-1))) / (1.0 - _AR1**2)
    return cov, prec


def _sparse(d: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    p = min(1.0, _DEGREE / max(d - 1, 1))
    upper = np.triu(rng.uniform(size=(d, d)) < p, k=1)
    weights = rng.uniform(*_WEIGHTS, size=(d, d)) * rng.choice([-1.0, 1.0], size=(d, d))
    A = np.where(upper, weights, 0.0)
    A = A + A.T
    prec = A + (_MIN_EIGENVALUE - np.linalg.eigvalsh(A).min()) * np.eye(d)
    return np.linalg.inv(prec), prec


def _block(d: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    groups = np.array_split(np.arange(d), min(_BLOCKS, d))
    correlations = np.linspace(*_BLOCK_CORRELATIONS, len(groups)) if len(groups) > 1 else [_BLOCK_CORRELATIONS[0]]
    cov, prec = np.zeros((d, d)), np.zeros((d, d))
    for idx, r in zip(groups, correlations):
        b = idx.size
        cov[np.ix_(idx, idx)] = (1.0 - r) * np.eye(b) + r
        # the inverse of (1 − r) I + r J (Sherman–Morrison)
        prec[np.ix_(idx, idx)] = (np.eye(b) - r / (1.0 + (b - 1) * r)) / (1.0 - r)
    return cov, prec


_BUILD = {"spiked": _spiked, "banded": _banded, "sparse": _sparse, "block": _block}


def _readonly(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(0.5 * (a + a.T))
    a.setflags(write=False)
    return a


def make_population(shape: str, *, d: int, n: int, sd: float | None = None, bound: float = 1.0,
                    seed: int = 0) -> Population:
    """A population of one of the four shapes, its ``Σ`` and ``Ω``, and its ``n`` seeded rows.

    Parameters
    ----------
    shape : {"spiked", "banded", "sparse", "block"}
    d : int >= 2
    n : int >= 2
    sd : float, optional
        Largest standard deviation of a coordinate; default ``bound / TIGHT_Z``.
    bound : float > 0, default=1.0
        Values are clipped to ``[-bound, bound]``.
    seed : int >= 0, default=0
        Seeds the structure (with ``shape`` and ``d``) and the rows (with ``n`` too).

    Returns
    -------
    Population

    Examples
    --------
    >>> pop = make_population("banded", d=4, n=100)
    >>> bool(np.allclose(pop.covariance @ pop.precision, np.eye(4))), float(pop.covariance[0, 1] * 36)
    (True, 0.6)
    >>> bool(np.abs(pop.sample()).max() <= 1.0)
    True
    """
    if shape not in SHAPES:
        raise ValueError(f"shape must be one of {', '.join(SHAPES)}, got {shape!r}")
    for name, value in (("d", d), ("n", n)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 2:
            raise ValueError(f"{name} must be an integer >= 2, got {value!r}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be an integer >= 0, got {seed!r}")
    if not (isinstance(bound, (int, float)) and not isinstance(bound, bool) and 0.0 < bound < np.inf):
        raise ValueError(f"bound must be a finite number > 0, got {bound!r}")
    sd = bound / TIGHT_Z if sd is None else sd
    if not (isinstance(sd, (int, float)) and not isinstance(sd, bool) and 0.0 < sd < np.inf):
        raise ValueError(f"sd must be a finite number > 0, got {sd!r}")
    d, n, seed = int(d), int(n), int(seed)
    cov, prec = _BUILD[shape](d, np.random.default_rng([seed, SHAPES.index(shape), d, 0]))
    # Σ = sd² C with max diag C = 1: scaling Σ by c scales Ω by 1/c and keeps its zeros exact
    factor = float(sd) ** 2 / np.diag(cov).max()
    return Population(shape=shape, d=d, n=n, sd=float(sd), bound=float(bound), seed=seed,
                      covariance=_readonly(factor * cov), precision=_readonly(prec / factor))


# name -> population, for the data sets registered here (population_of checks they are still the registry's)
_POPULATIONS: dict[str, Population] = {}
_DRAWS: dict[str, object] = {}


def register_population(name: str, population: Population, **entry) -> None:
    """Register ``population`` as the data set ``name``: its table is :meth:`Population.sample`'s ``x0, …``.

    ``entry`` holds further fields of the registry entry (:func:`paceggm.bench.data.registry.register`);
    the ``note`` says what the population is.
    """
    from .registry import register

    if not isinstance(population, Population):
        raise TypeError(f"population must be a Population (make_population), got {type(population).__name__}")

    def draw():
        return population.sample()

    note = (f"Gaussian population, {population.shape} covariance, d={population.d}, n={population.n}, "
            f"sd={population.sd:g}, clipped at ±{population.bound:g}, seed {population.seed} "
            "(paceggm.bench.data.populations)")
    register(name, draw, note=entry.pop("note", note), **entry)
    _POPULATIONS[name] = population
    _DRAWS[name] = draw


def population_of(name: str) -> Population | None:
    """The population registered as the data set ``name``, or None (not one, or replaced since)."""
    from .registry import _FRAMES

    population = _POPULATIONS.get(name)
    # a later register(name, …) of another table replaces the data set: its truth is no longer this one
    if population is None or _FRAMES.get(name) is not _DRAWS[name]:
        return None
    return population


def _catalogue() -> dict[str, Population]:
    out = {}
    for shape, d, n, (arm, z) in itertools.product(SHAPES, (10, 30), (1000, 10000), (("", TIGHT_Z), ("_loose", LOOSE_Z))):
        out[f"pop_{shape}_d{d}_n{n}{arm}"] = make_population(shape, d=d, n=n, sd=1.0 / z)
    return out


#: The registered populations: name -> :class:`Population` (shapes × d ∈ {10, 30} × n ∈ {1000, 10000} × two arms).
CATALOGUE = _catalogue()
for _name, _population in CATALOGUE.items():
    register_population(_name, _population)

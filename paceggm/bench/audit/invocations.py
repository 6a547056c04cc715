"""Auditing every mechanism invocation of a fit, each on its query moved by its true sensitivity.

A whole-fit audit reads one statistic of the final release, so it sees a fit's
budget only through that release. Here a fit runs once on a data set ``D``
under :func:`recording`, which wraps every mechanism at every call site of the
library and the baselines (the Gaussian, Laplace and exponential mechanisms, the
exponential mechanism on the sphere, PACE-GGM's row sampler, the sparse vector) and the ledger's ``charge``, and keeps, per
invocation, what it was called with (the released query's value, ρ, the
sensitivity the code claims, extra keywords such as ``noise``) and the charge
the estimator recorded for it (the last one before it). Then, per invocation:

1. The audit computes the query itself from ``D`` (:func:`resolve`: which
   query each ledger purpose pays for, e.g. "measure" is entry ``(j, k)`` of
   ``XᵀX/n``) and checks it equals the value the code released.
2. Its true sensitivity comes from the neighbour definition alone, never from
   :mod:`paceggm.privacy.sensitivity`: every replace-one neighbour ``D'`` of
   ``D`` with a record from the grid ``{-B, 0, B}^p`` is tried and the largest
   move of the query is kept (:func:`largest_move`). The move is attained by a
   real neighbour, so auditing with it is sound.
3. The mechanism is run again, as the code called it (call-site mutants
   included), ``draws`` times on the query value and on the value moved by that
   sensitivity. An invocation whose charge is small is audited as ``k``
   independent copies (composition: a lower bound ``L`` on the k-fold loss
   means one copy loses at least ``L/k``), so that every invocation is tested
   at a loss near 1, where the threshold test is sharp.
4. :func:`~.bounds.threshold_audit` gives a lower bound on ρ; it is compared
   with the invocation's charge at confidence ``1 − 0.05/K`` (Bonferroni over
   the fit's ``K`` sampled invocations), and the charges of the fit must add to
   at most its ρ with every invocation paid for.

The exponential mechanism's law is read from the code itself (the logits it
computes for these scores, or the weights of the row sampler), and its scores
are moved one up by its sensitivity and all others down, the worst case of its
guarantee: the count of that candidate over the ``k`` picks is the statistic.
Each score's move is attained by some neighbour, all of them at once need not
be: this audits the mechanism's claim for scores that each move within their
sensitivity, which is the claim the code relies on.
The Laplace mechanism's releases are drawn again as the Gaussian's are, read by
their log-likelihood ratio between the query and the moved query (the noise's
projection on the move, which is that ratio for Gaussian noise, sees only part
of a Laplace release's loss). The sparse vector's invocations, and the exponential
mechanism's on the sphere (EMCov's eigenvectors), are recorded and must be paid
for, but are not resampled (the first's queries are AdaptiveCov's own clipping
counts; the second's release is a direction, audited on its own by
:mod:`.sphere_cases`).
"""

from __future__ import annotations

import contextlib
import itertools
import math
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

import paceggm.privacy.mechanisms as _mechanisms
from paceggm.privacy.ledger import ZCDPLedger
from paceggm.privacy.selection import PairSampler

from ..seeds import derive_seed
from .bounds import AuditBound, threshold_audit

__all__ = ["Invocation", "InvocationAudit", "InvocationCase", "audit_invocation", "largest_move",
           "recording", "resolve", "run_fit"]

# Mechanisms by the name every call site imports them under.
_MECHANISMS = {"gaussian_mechanism": "gaussian", "laplace_mechanism": "laplace", "exponential_mechanism": "exponential",
               "sparse_vector": "sparse_vector", "bingham_mechanism": "bingham"}
# The k-fold copies of an invocation are audited at about this total claimed ρ (where the
# threshold test recovers 60-70% of a Gaussian's loss at 10^5 draws), at most MAX_COPIES of them.
TARGET_RHO = 1.0
MAX_COPIES = 400
# Draws of the mechanism per chunk (copies × draws × entries), to bound memory.
_CHUNK = 2_000_000


@dataclass
class Invocation:
    """One call of a mechanism during a fit."""

    index: int
    mechanism: str  # "gaussian", "laplace", "exponential", "pair_sampler", "sparse_vector" or "bingham"
    call: Callable  # what the call site called (a mutant, if one was installed there)
    value: np.ndarray  # the query: released value or scores
    kwargs: dict  # everything else it was called with, the generator excepted
    output: object
    charge: object = None  # the ledger Charge recorded for it, None if none was
    sensitivity: float | None = None  # the row sampler's (an attribute, not an argument)


@dataclass
class _Recorder:
    events: list = field(default_factory=list)
    invocations: list = field(default_factory=list)
    charges: list = field(default_factory=list)

    def charged(self, charge) -> None:
        self.charges.append(charge)
        self.events.append(charge)

    def invoked(self, mechanism, call, value, kwargs, output, sensitivity=None) -> None:
        # The charge recorded last and not yet matched pays for this release.
        pending = self.events[-1] if self.events and not isinstance(self.events[-1], Invocation) else None
        inv = Invocation(len(self.invocations), mechanism, call, np.array(value, dtype=float, copy=True),
                         {k: v for k, v in kwargs.items() if k != "rng"}, output, pending, sensitivity)
        self.invocations.append(inv)
        self.events.append(inv)


def _call_sites():
    """Every loaded module of the library, the baselines and a registered method's own module (a plugin's)
    that holds a mechanism (the audit's own excepted)."""
    from ..methods import METHODS

    own = {spec.target.partition(":")[0] for spec in METHODS.values()}
    for name, module in list(sys.modules.items()):
        if module is None or not (name.startswith("paceggm") or name in own) or name.startswith("paceggm.bench.audit"):
            continue
        for attr in _MECHANISMS:
            if callable(getattr(module, attr, None)):
                yield module, attr


@contextlib.contextmanager
def recording():
    """Record every mechanism invocation and ledger charge made inside the block (yields the recorder)."""
    rec = _Recorder()
    patched = []

    def wrap(mechanism, fn):
        def recorded(*args, **kwargs):
            out = fn(*args, **kwargs)
            # The query comes first, by position (every call site) or by its name.
            value = args[0] if args else next(kwargs[k] for k in ("value", "scores", "queries") if k in kwargs)
            rest = {k: v for k, v in kwargs.items() if k not in ("value", "scores", "queries")}
            rec.invoked(mechanism, fn, value, rest, out)
            return out

        recorded.__wrapped__ = fn
        return recorded

    originals = {}
    for module, attr in _call_sites():
        fn = getattr(module, attr)
        originals.setdefault((id(module), attr), (module, attr, fn))
    for module, attr, fn in originals.values():
        setattr(module, attr, wrap(_MECHANISMS[attr], fn))
        patched.append((module, attr, fn))

    draw, charge = PairSampler.draw, ZCDPLedger.charge

    def sampler_draw(self, *, rho, rng, **kwargs):
        out = draw(self, rho=rho, rng=rng, **kwargs)
        rec.invoked("pair_sampler", draw, self.scores, {"rho": rho, **kwargs}, out, sensitivity=self.sensitivity)
        return out

    def ledger_charge(self, *args, **kwargs):
        charge(self, *args, **kwargs)
        rec.charged(self.charges[-1])

    PairSampler.draw, ZCDPLedger.charge = sampler_draw, ledger_charge
    try:
        yield rec
    finally:
        PairSampler.draw, ZCDPLedger.charge = draw, charge
        for module, attr, fn in reversed(patched):
            setattr(module, attr, fn)


# --- the queries, computed by the audit from the data ------------------------------------------


def _second_moment(X):
    return X.T @ X / X.shape[0]


def _unit_rows(X, bound: float, radius: float = 1.0):
    """Dong, Liang & Yi's rows: ``X / (sqrt(d) B)``, then clipped to ℓ2 norm ``radius``."""
    return _clipped(X / (math.sqrt(X.shape[1]) * bound), radius)


def _clipped(W, radius: float):
    """Rows of ``W`` scaled onto the ℓ2 ball of ``radius`` (those inside it unchanged)."""
    norms = np.linalg.norm(W, axis=1)
    return W * np.minimum(1.0, radius / np.maximum(norms, 1e-300))[:, None]


@dataclass(frozen=True)
class Query:
    """What an invocation releases, as a function of the data set, and whether it is a score vector."""

    key: str
    fn: Callable
    scores: bool = False


def _measured_entries(fitted):
    """PACE-GGM's measurements in release order (of a fit, of an estimator, or of a regression's inner fit)."""
    for attr in ("measurements", "measurements_"):
        if hasattr(fitted, attr):
            return getattr(fitted, attr)
    return fitted.pace_ggm_.measurements_


def resolve(inv: Invocation, fitted, bound: float, count: int, data_view: Callable | None = None) -> Query | None:
    """The query ``inv`` releases, from the purpose of its charge (``None``: not resampled).

    ``count`` is how many invocations with the same purpose came before it;
    ``data_view(X, fitted)`` maps the data set to the matrix whose second
    moments PACE-GGM measured (default: ``X`` itself; ``X − location_`` for a
    fit that centred on its private mean).
    """
    purpose = inv.charge.purpose if inv.charge is not None else ""

    def view(X):
        return X if data_view is None else data_view(X, fitted)

    if purpose in ("initialise: diagonal", "initialise: forced pair", "measure"):
        j, k = next(m.entry for m in _measured_entries(fitted) if m.value == float(np.asarray(inv.output[0])))
        return Query(f"entry{j},{k}", lambda X: _second_moment(view(X))[j, k])
    if purpose == "select":
        return Query("candidates", lambda X: _second_moment(view(X))[np.tril_indices(view(X).shape[1])], scores=True)
    if purpose == "mean (centring)":
        return Query("mean", lambda X: X.mean(axis=0))
    if purpose == "release: distinct entries of the covariance":
        return Query("triu", lambda X: _second_moment(X)[np.triu_indices(X.shape[1])])
    if purpose == "release: one variance":
        return Query(f"variance{count}", lambda X: _second_moment(X)[count, count])
    if purpose in ("gausscov: distinct entries of the covariance", "separatecov: distinct entries for the eigenvectors"):
        radius = getattr(fitted, "radius_", None)
        r = 1.0 if radius is None else radius / (math.sqrt(fitted.n_features_in_) * bound)
        return Query(f"unit-triu{r!r}", lambda X: _second_moment(_unit_rows(X, bound, r))[np.triu_indices(X.shape[1])])
    if purpose in ("separatecov: eigenvalues", "emcov: eigenvalues"):
        radius = getattr(fitted, "radius_", None)
        r = 1.0 if radius is None else radius / (math.sqrt(fitted.n_features_in_) * bound)
        return Query(f"unit-eig{r!r}", lambda X: np.linalg.eigvalsh(_second_moment(_unit_rows(X, bound, r)))[::-1])
    if purpose == "coinpress: whitened clipped second moment":
        # Step `count`'s whitener and radius come from the earlier releases only (recorded on the fit).
        A, radius = fitted.whiteners_[count], fitted.radii_[count]
        return Query(f"coinpress{count}", lambda X: _second_moment(_clipped(view(X) @ A.T, radius))[
            np.triu_indices(X.shape[1])])
    if purpose == "adaptivecov: trace":
        return Query("unit-trace", lambda X: np.trace(_second_moment(_unit_rows(X, bound))))
    if purpose == "ridge: smallest eigenvalue":
        return Query("xx-min-eig", lambda X: np.linalg.eigvalsh(_second_moment(X[:, :-1]))[0])
    if purpose == "release: X'X/n":
        return Query("xx-triu", lambda X: _second_moment(X[:, :-1])[np.triu_indices(X.shape[1] - 1)])
    if purpose == "release: X'y/n":
        return Query("xy", lambda X: X[:, :-1].T @ X[:, -1] / X.shape[0])
    if inv.mechanism in ("sparse_vector", "bingham"):
        return None
    raise ValueError(f"the audit does not know the query of invocation {inv.index} ({inv.mechanism}, "
                     f"charge {purpose!r}): add it to paceggm.bench.audit.invocations.resolve")


def largest_move(query: Query, D: np.ndarray, bound: float):
    """The largest move of ``query`` over replace-one neighbours of ``D`` with a record from ``{-B, 0, B}^p``.

    Returns ``(move, per_entry)``: the move vector of largest ℓ2 norm (for a
    Gaussian release), and the largest absolute move of each entry on its own
    (for the scores of the exponential mechanism). Both are attained by real
    neighbours of ``D``.
    """
    base = np.atleast_1d(np.asarray(query.fn(D), dtype=float))
    rows = np.unique(D, axis=0)
    grid = np.array(list(itertools.product((-bound, 0.0, bound), repeat=D.shape[1])))
    best, best_norm, per_entry = np.zeros_like(base), -1.0, np.zeros_like(base)
    for row in rows:
        i = int(np.flatnonzero(np.all(D == row, axis=1))[0])
        X = D.copy()
        for record in grid:
            X[i] = record
            move = np.atleast_1d(np.asarray(query.fn(X), dtype=float)) - base
            norm = float(np.linalg.norm(move))
            if norm > best_norm:
                best, best_norm = move, norm
            per_entry = np.maximum(per_entry, np.abs(move))
    return best, per_entry


# --- drawing the mechanism again ---------------------------------------------------------------


def _copies(charge_rho: float) -> int:
    return int(min(MAX_COPIES, max(1, math.ceil(TARGET_RHO / charge_rho))))


def _released(inv: Invocation, value: np.ndarray, copies: int, draws: int, rng):
    """The draws' releases of ``value``, ``copies`` a draw, in chunks: ``(slice of the draws, releases)``."""
    size = inv.value.size
    per_chunk = max(1, _CHUNK // (copies * size))
    for start in range(0, draws, per_chunk):
        m = min(per_chunk, draws - start)
        tiled = np.broadcast_to(value.reshape(-1), (m, copies, size)).copy()
        noisy, _ = inv.call(tiled, rng=rng, **inv.kwargs)
        yield slice(start, start + m), np.asarray(noisy)


def _gaussian_statistic(inv: Invocation, value: np.ndarray, direction: np.ndarray, copies: int, draws: int, rng):
    """Per draw, the sum over ``copies`` releases of the noise's projection on ``direction``."""
    base = inv.value.reshape(-1)
    out = np.empty(draws)
    for part, noisy in _released(inv, value, copies, draws, rng):
        out[part] = ((noisy - base) @ direction).sum(axis=1)
    return out


def _laplace_statistic(inv: Invocation, value: np.ndarray, move: np.ndarray, copies: int, draws: int, rng):
    """Per draw, the sum over ``copies`` releases of ``Σ_j |y_j − v_j| − |y_j − v'_j|``, ``v`` the query on ``D`` and
    ``v' = v + move``: the log-likelihood ratio of Laplace noise (times its scale), the most powerful statistic."""
    base = inv.value.reshape(-1)
    moved = base + move.reshape(-1)
    out = np.empty(draws)
    for part, noisy in _released(inv, value, copies, draws, rng):
        out[part] = (np.abs(noisy - base) - np.abs(noisy - moved)).sum(axis=(1, 2))
    return out


@contextlib.contextmanager
def _patched(module, name, replacement):
    original = getattr(module, name)
    setattr(module, name, replacement)
    try:
        yield
    finally:
        setattr(module, name, original)


def _selection_law(inv: Invocation, scores: np.ndarray) -> np.ndarray:
    """The probabilities with which the code, called as in ``inv``, picks each candidate for ``scores``."""
    scores = np.array(scores, dtype=float)
    if inv.mechanism == "pair_sampler":
        sampler = PairSampler(scores, sensitivity=inv.sensitivity)
        inv.call(sampler, rng=np.random.default_rng(0), **inv.kwargs)
        # The weights it draws from (its two-stage draw is their softmax: tested in its own tests).
        weights = np.asarray(sampler._w, dtype=float)
        return weights / weights.sum()
    if inv.kwargs.get("noise", "fast") != "fast":
        raise ValueError("the invocation audit reads the exponential mechanism's logits: noise='fast' only")
    seen = []

    def capture(logits, rng):
        seen.append(np.asarray(logits, dtype=float))
        return 0

    with _patched(_mechanisms, "_gumbel_argmax", capture):
        inv.call(scores, rng=np.random.default_rng(0), **inv.kwargs)
    if not seen:
        raise RuntimeError("the exponential mechanism did not compute its logits where the audit reads them")
    weights = np.exp(seen[-1] - seen[-1].max())
    return weights / weights.sum()


def _counts(law: np.ndarray, candidate: int, copies: int, draws: int, rng) -> np.ndarray:
    """Per draw, how many of ``copies`` independent picks from ``law`` are ``candidate``.

    That count is exactly Binomial(copies, law[candidate]), drawn as such: the
    same statistic as ``copies`` picks, without drawing the other candidates.
    """
    return rng.binomial(copies, float(law[candidate]), size=draws).astype(float)


# --- one invocation's verdict ------------------------------------------------------------------


@dataclass(frozen=True)
class InvocationAudit:
    """One invocation: its charge, the audit's shift, the draws and the bound on one copy's loss."""

    index: int
    mechanism: str
    purpose: str
    charge: float
    shift: float  # ℓ2 norm of the move (Gaussian) or the largest score's move (exponential)
    copies: int
    bound: AuditBound
    samples: tuple = field(repr=False, compare=False, default=())

    @property
    def rho_lower(self) -> float:
        """Lower bound on one copy's ρ."""
        return self.bound.rho / self.copies

    @property
    def ratio(self) -> float:
        return self.rho_lower / self.charge

    def exceeds(self, bound: AuditBound | None = None) -> bool:
        return (self.bound if bound is None else bound).rho > self.copies * self.charge


def audit_invocation(inv: Invocation, query: Query, D: np.ndarray, bound: float, *, draws: int, seed_key: tuple,
                     confidence: float, moves: dict | None = None) -> InvocationAudit:
    """Draw ``inv``'s mechanism on its query and on the query moved by its true sensitivity; bound the loss.

    ``moves`` caches :func:`largest_move` by query across the invocations of one fit.
    """
    copies = _copies(inv.charge.rho)
    rngs = [np.random.default_rng(derive_seed("audit-invocation", *seed_key, inv.index, side)) for side in (0, 1)]
    moves = {} if moves is None else moves
    if query.key not in moves:
        moves[query.key] = largest_move(query, D, bound)
    move, per_entry = moves[query.key]
    if query.scores:
        law = _selection_law(inv, inv.value)
        best = (-1.0, 0, law)
        for c in range(inv.value.size):  # the candidate whose count tells the two apart best
            moved = inv.value - per_entry
            moved[c] = inv.value[c] + per_entry[c]
            law_c = _selection_law(inv, moved)
            gap = (math.asin(math.sqrt(law_c[c])) - math.asin(math.sqrt(law[c]))) ** 2
            if gap > best[0]:
                best = (gap, c, law_c)
        _, c, moved_law = best
        samples = (_counts(law, c, copies, draws, rngs[0]), _counts(moved_law, c, copies, draws, rngs[1]))
        shift = float(per_entry.max())
    else:
        computed = np.asarray(query.fn(D), dtype=float)
        if not np.allclose(computed.reshape(-1), inv.value.reshape(-1), rtol=1e-9, atol=1e-12):
            raise RuntimeError(f"invocation {inv.index} ({inv.charge.purpose!r}) released {inv.value!r}, but the "
                               f"audit's query {query.key} is {computed!r} on these data")
        shift = float(np.linalg.norm(move))
        direction = move.reshape(-1) / shift if shift > 0 else np.eye(inv.value.size)[0]
        if inv.mechanism == "laplace":
            samples = tuple(_laplace_statistic(inv, inv.value + side * move.reshape(inv.value.shape), move, copies,
                                               draws, rngs[side]) for side in (0, 1))
        else:
            samples = tuple(_gaussian_statistic(inv, inv.value + side * move.reshape(inv.value.shape), direction,
                                                copies, draws, rngs[side]) for side in (0, 1))
    return InvocationAudit(inv.index, inv.mechanism, inv.charge.purpose, float(inv.charge.rho), shift, copies,
                           threshold_audit(*samples, metric="rho", confidence=confidence), samples)


# --- a fit's invocations -----------------------------------------------------------------------


@dataclass(frozen=True)
class InvocationCase:
    """A whole fit whose every mechanism invocation is audited on its own (see the module docstring).

    Attributes
    ----------
    name, mechanism, neighbours, statistic : str
        As :class:`~.cases.AuditCase`.
    rho : float
        The fit's budget: its charges must add to at most this.
    broken : bool
        A control whose noise is calibrated to twice its claim: some invocation must be caught.
    fit : callable
        ``fit(D, rng) -> fitted`` (an estimator, or :func:`paceggm.pace_ggm`'s result).
    inputs : tuple
        ``(D, D')``: the fit runs on ``D``; ``D'`` is one of the neighbours the audit moves queries to.
    bound : float
        ``B``: the records of the neighbour grid are in ``{-B, 0, B}^p``.
    draws : int
        Draws per data set per invocation.
    mutation : callable or None
        A context manager factory active during the fit and the draws (the broken calibration).
    data_view : callable or None
        ``data_view(X, fitted)``, see :func:`resolve`.
    """

    name: str
    mechanism: str
    neighbours: str
    statistic: str
    rho: float
    broken: bool
    fit: Callable
    inputs: tuple
    bound: float = 1.0
    draws: int = 100_000
    mutation: Callable | None = None
    data_view: Callable | None = None
    epsilon: None = None

    @property
    def metric(self) -> str:
        return "rho"


@dataclass(frozen=True)
class FitAudit:
    """Every sampled invocation of one fit, and the fit's charges."""

    audits: tuple
    n_invocations: int
    unpaid: tuple  # indices of invocations with no charge of their own
    charges_sum: Fraction
    rho: float
    confidence: float

    @property
    def over_budget(self) -> bool:
        return self.charges_sum > Fraction(self.rho) or bool(self.unpaid)

    def flagged(self, bounds=None) -> list:
        bounds = bounds or [a.bound for a in self.audits]
        return [a for a, b in zip(self.audits, bounds) if a.exceeds(b)]

    @property
    def exceeded(self) -> bool:
        return self.over_budget or bool(self.flagged())

    @property
    def worst(self) -> InvocationAudit | None:
        """The sampled invocation whose bound comes closest to (or goes furthest above) its charge."""
        return max(self.audits, key=lambda a: a.ratio) if self.audits else None


def run_fit(case: InvocationCase, n_draws: int | None = None, *, base_seed: int = 0,
            confidence: float = 0.95) -> FitAudit:
    """Fit ``case`` on ``D`` recording its invocations, then audit each one."""
    draws = case.draws if n_draws is None else int(n_draws)
    mutation = case.mutation() if case.mutation is not None else contextlib.nullcontext()
    D = case.inputs[0]
    with mutation:
        with recording() as rec:
            fitted = case.fit(D.copy(), np.random.default_rng(derive_seed("audit-fit", int(base_seed), case.name)))
        paid = [inv for inv in rec.invocations if inv.charge is not None]
        unpaid = tuple(inv.index for inv in rec.invocations if inv.charge is None)
        seen: dict[str, int] = {}
        queries = []
        for inv in paid:
            purpose = inv.charge.purpose
            queries.append((inv, resolve(inv, fitted, case.bound, seen.get(purpose, 0), case.data_view)))
            seen[purpose] = seen.get(purpose, 0) + 1
        sampled = [(inv, q) for inv, q in queries if q is not None]
        level = 1.0 - (1.0 - confidence) / max(1, len(sampled))
        moves: dict = {}
        audits = tuple(audit_invocation(inv, q, D, case.bound, draws=draws, confidence=level, moves=moves,
                                        seed_key=(int(base_seed), case.name)) for inv, q in sampled)
    charges_sum = sum((Fraction(inv.charge.rho) for inv in paid), Fraction(0))
    return FitAudit(audits, len(rec.invocations), unpaid, charges_sum, case.rho, level)

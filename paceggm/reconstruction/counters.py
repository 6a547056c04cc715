"""Opt-in counters of a reconstruction's work: where its time goes, measured from outside.

Nothing is counted unless a :class:`Counters` is active::

    with Counters() as c:
        pace_ggm(X, rho=10.0, solver="newton_pcg")
    c.calls["reconstruction updates"], c.seconds["Hessian products"]

While one is active, each counted piece of the reconstruction adds its calls and
the CPU seconds of the calling thread (``time.thread_time``: exact even while an
interval timer runs, and blind to other threads' work) under its name; the
Newton decrements of each ``newton_pcg`` solve are collected, and ``on_solve``,
if given, is called after every such solve with the problem, its warm start, the
solution and the solve's decrements. Inactive, a counted piece costs one context
lookup. The pieces (:data:`PIECES`) do not call one another, except the whole
``solver`` and ``reconstruction updates`` around them. The events (:data:`EVENTS`)
are counted apart, in ``events``, without seconds: what the Newton solvers did, not how long it took.
"""

from __future__ import annotations

import collections
import functools
import time
from collections.abc import Callable
from contextvars import ContextVar

__all__ = ["Counters", "EVENTS", "PIECES", "active", "counted", "event", "piece"]

#: The names the library counts under.
PIECES = (
    "reconstruction updates",  # one PACE-GGM round's update of the estimate (solver and bookkeeping)
    "solver",  # one newton_pcg block solve
    "factorisations of P",
    "inverses of P",
    "Hessian products",
    "preconditioner solves",
    "Hessian factorisations",
    "Hessian factorisations, single",
    "local start",
    "symbolic analyses",  # newton_chordal: a new chordal embedding of the pattern
    "fill-reducing orderings",  # newton_chordal: a fresh ordering for a new embedding
    "projected inverses",  # newton_chordal: W on the embedding
)

#: The events the library counts (in ``Counters.events``, no seconds): Newton systems solved by the stages of
#: :mod:`.newton` and the solvers built on them; block solves started cold (no warm start);
#: warm starts re-centred at a larger μ after their μ_min stage stalled; and the cold
#: continuation taken after a warm start failed, re-centring included.
EVENTS = (
    "Newton systems",
    "cold starts",
    "warm re-centrings",
    "cold restarts",
)

_ACTIVE: ContextVar[Counters | None] = ContextVar("paceggm_counters", default=None)


class Counters:
    """Calls and thread CPU seconds per piece, counts of events, and the Newton decrements of each solve.

    Parameters
    ----------
    on_solve : callable, optional
        ``on_solve(problem, init, solution, decrements)`` after every ``newton_pcg``
        block solve made while active.
    """

    def __init__(self, on_solve: Callable | None = None):
        self.on_solve = on_solve
        self.seconds: collections.Counter = collections.Counter()
        self.calls: collections.Counter = collections.Counter()
        self.events: collections.Counter = collections.Counter()
        self.decrements: list[list[float]] = []  # one list per newton_pcg solve
        self._token = None

    def __enter__(self) -> Counters:
        if self._token is not None:
            raise RuntimeError("these counters are already active")
        self._token = _ACTIVE.set(self)
        return self

    def __exit__(self, *exc) -> None:
        _ACTIVE.reset(self._token)
        self._token = None


def active() -> Counters | None:
    """The counters active in this context, if any."""
    return _ACTIVE.get()


class piece:
    """``with piece(name):`` counts the block as one call of ``name`` (a context, not a call: warnings
    raised inside keep their ``stacklevel``)."""

    __slots__ = ("name", "_counters", "_t0")

    def __init__(self, name: str):
        _check(name)
        self.name = name

    def __enter__(self) -> None:
        self._counters = _ACTIVE.get()
        if self._counters is not None:
            self._t0 = time.thread_time()

    def __exit__(self, *exc) -> None:
        c = self._counters
        if c is not None:
            c.seconds[self.name] += time.thread_time() - self._t0
            c.calls[self.name] += 1


def event(name: str) -> None:
    """Count one ``name`` (one of :data:`EVENTS`) while counters are active."""
    c = _ACTIVE.get()
    if c is not None:
        if name not in EVENTS:
            raise ValueError(f"unknown event {name!r}; the library counts {EVENTS}")
        c.events[name] += 1


def _check(name: str) -> None:
    if name not in PIECES:
        raise ValueError(f"unknown piece {name!r}; the library counts {PIECES}")


def counted(piece: str):
    """Count the decorated function's calls and thread CPU seconds under ``piece`` while counters are active.

    The wrapper is one more frame: a function that warns with a ``stacklevel`` uses :class:`piece` instead.
    """
    _check(piece)

    def wrap(fn):
        @functools.wraps(fn)
        def inner(*args, **kwargs):
            c = _ACTIVE.get()
            if c is None:
                return fn(*args, **kwargs)
            t = time.thread_time()
            try:
                return fn(*args, **kwargs)
            finally:
                c.seconds[piece] += time.thread_time() - t
                c.calls[piece] += 1

        return inner

    return wrap


def note_decrement(dec: float) -> None:
    """Record a Newton decrement of the solve in progress (if counters are active)."""
    c = _ACTIVE.get()
    if c is not None and c.decrements:
        c.decrements[-1].append(dec)


def counted_solve(fn):
    """A block solver counted as ``solver``, its decrements kept per solve and ``on_solve`` told of each."""
    timed = counted("solver")(fn)

    @functools.wraps(fn)
    def inner(p, *args, init=None, **kwargs):
        c = _ACTIVE.get()
        if c is None:
            return fn(p, *args, init=init, **kwargs)
        c.decrements.append([])
        sol = timed(p, *args, init=init, **kwargs)
        if c.on_solve is not None:
            c.on_solve(p, init, sol, c.decrements[-1])
        return sol

    return inner

"""The exponential mechanism over PACE-GGM's candidate pairs, drawn from weights kept up to date.

PACE-GGM selects among the ``N = d(d+1)/2`` pairs ``(j, k)``, ``j >= k``, each
round, and between two rounds only the scores of one component's pairs change.
:func:`~paceggm.privacy.exponential_mechanism` (Gumbel-max) draws a uniform for
every candidate, every round: ``O(N) = O(d²)`` whatever changed.
:class:`PairSampler` keeps the weights ``w = exp(a (s − s_ref))``, ``a = ε/(2Δ)``,
and their sums per row ``j`` of the packed lower triangle, and draws a row with
probability ``∝`` its sum, then a column of that row ``∝`` its weight: the pair
``(j, k)`` with probability ``w_jk / Σ w``, the exponential mechanism's
softmax (to the rounding of the weights and their sums). A round then costs
``O(d)`` (two cumulative sums of at most ``d`` terms and two uniforms) plus the
rescored pairs' exponentials and the sums of the rows holding them.

All weights are recomputed (``O(N)``) only when ``a`` changes (a round whose
selection budget differs from the last: PACE-GGM doubles it when it anneals,
a few dozen times a fit) or when the scores have moved so far from ``s_ref``
that the weights would overflow or all fall below ``2^-600``. Row sums are
always recomputed from their weights, never updated by differences, so no
cancellation accumulates across rounds.

The draw stream is not the Gumbel-max one: the same distribution, different
picks for the same seed.
"""

from __future__ import annotations

import numpy as np

from paceggm._validation import check_positive
from paceggm.privacy.mechanisms import exponential_mechanism_epsilon

# a · (s − s_ref) above which an exponential would come close to overflowing
# (exp overflows at 709.8): the weights are rebuilt around the new largest score.
_HIGHEST = 600.0
# A largest weight below exp(-this) is rebuilt, so the sums never underflow.
_LOWEST = 400.0


class PairSampler:
    """The exponential mechanism on the packed lower-triangle scores of a ``d × d`` matrix.

    Parameters
    ----------
    scores : ndarray of shape (d (d + 1) / 2,)
        Score of pair ``(j, k)``, ``j >= k``, at ``j (j + 1) / 2 + k``. Held
        by reference: the caller changes entries in place and then calls
        :meth:`rescored` with their positions.
    sensitivity : float
        Sensitivity ``Δ`` of every score.

    Examples
    --------
    >>> import numpy as np
    >>> scores = np.array([0.0, 1.0, 0.0])  # (0, 0), (1, 0), (1, 1)
    >>> sampler = PairSampler(scores, sensitivity=1.0)
    >>> sampler.draw(rho=1e6, rng=np.random.default_rng(0))
    1
    """

    def __init__(self, scores: np.ndarray, *, sensitivity: float) -> None:
        if not (isinstance(scores, np.ndarray) and scores.ndim == 1 and scores.dtype == float):
            raise TypeError("scores must be a 1-D float array (held by reference and updated in place)")
        d = int(round((np.sqrt(8.0 * scores.size + 1.0) - 1.0) / 2.0))
        if d < 1 or d * (d + 1) // 2 != scores.size:
            raise ValueError(f"scores must hold d(d+1)/2 pairs for some d >= 1, got {scores.size}")
        if not np.all(np.isfinite(scores)):
            raise ValueError("scores must be finite")
        check_positive(sensitivity, "sensitivity")
        self.scores = scores
        self.d = d
        self.sensitivity = float(sensitivity)
        j = np.arange(d)
        self._starts = j * (j + 1) // 2  # row j holds positions starts[j] .. starts[j] + j
        self._a: float | None = None
        self._ref = 0.0
        self._w = np.empty(0)
        self._row = np.empty(0)
        self._stale = True
        #: Times every weight was recomputed (a changed, or the scores moved out of range).
        self.n_rebuilds = 0

    def rescored(self, positions: np.ndarray) -> None:
        """The scores at ``positions`` (sorted, distinct) changed: update their weights and their rows' sums."""
        if self._stale or positions.size == 0:
            return
        new = self.scores[positions]
        if not np.all(np.isfinite(new)):
            raise ValueError("scores must be finite")
        if self._a * (float(new.max()) - self._ref) > _HIGHEST:
            self._stale = True
            return
        with np.errstate(under="ignore", over="ignore"):
            self._w[positions] = np.exp(self._a * (new - self._ref))
        # Row of position p: the largest j with starts[j] <= p.
        rows = np.unique(np.searchsorted(self._starts, positions, side="right") - 1)
        self._row[rows] = self._row_sums(rows)

    def _row_sums(self, rows: np.ndarray) -> np.ndarray:
        """Sums of the weights of ``rows`` (sorted, distinct), each over its whole row."""
        lengths = rows + 1
        offsets = np.zeros(rows.size, dtype=np.intp)
        np.cumsum(lengths[:-1], out=offsets[1:])
        # The touched rows' weights gathered end to end (O(their length), not of the
        # gaps between them), then summed row by row.
        gather = np.arange(int(offsets[-1] + lengths[-1])) + np.repeat(self._starts[rows] - offsets, lengths)
        return np.add.reduceat(self._w[gather], offsets)

    def _rebuild(self, a: float) -> None:
        self._a = a
        self._ref = float(self.scores.max())
        with np.errstate(under="ignore", over="ignore"):
            self._w = np.exp(a * (self.scores - self._ref))
        self._row = np.add.reduceat(self._w, self._starts)
        self._stale = False
        self.n_rebuilds += 1

    def draw(self, *, rho: float, rng: np.random.Generator) -> int:
        """A pair's packed position, with probability ``∝ exp(ε/(2Δ) · score)``, ``ε = sqrt(8 rho)``: cost ``rho``-zCDP."""
        a = exponential_mechanism_epsilon(rho) / (2.0 * self.sensitivity)
        if self._stale or a != self._a or not float(self._row.max()) >= np.exp(-_LOWEST):
            self._rebuild(a)
        j = _pick(self._row, rng)
        start = int(self._starts[j])
        return start + _pick(self._w[start:start + j + 1], rng)


def _pick(weights: np.ndarray, rng: np.random.Generator) -> int:
    """An index ``i`` with probability ``weights[i] / Σ weights`` (one uniform); never one of weight 0."""
    c = np.cumsum(weights)
    i = int(np.searchsorted(c, rng.random() * c[-1], side="right"))
    # u < c[-1] unless the product rounded up to it: the last index of positive weight.
    return i if i < c.size else int(np.flatnonzero(weights)[-1])

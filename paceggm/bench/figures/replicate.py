"""What an exact replicate of a published table would score: the yardstick for its distance figures.

A count such as "43 of 84 cells within 10 % of the published value" means nothing until it is
set beside what a replicate *without any systematic difference* would score, given that both
sides' numbers are means over a few noisy trials. An **exact replicate** here is a run whose
true cell means equal the publication's, so that every difference between the two tables is
trial noise: ours with our standard error over trials, the publication's with the standard
error it prints, or, where it prints none, a standard error assumed equal to ours (the tables
say which).

Numeric tables (Tables 3 and 4) — **closed form**. Cell ``i`` has published value ``p_i``,
standard errors ``s_o`` (ours) and ``s_p`` (the publication's), ``σ_i = √(s_o² + s_p²)``.
Under the replicate, ours − published ~ N(0, σ_i²), so each count is a sum of independent
Bernoulli cells:

* within a band b (10 %, 25 %): ``P(|ours − p_i| ≤ b p_i) = 2Φ(b p_i / σ_i) − 1``;
  within 2×: ``Φ(p_i / σ_i) − Φ(−p_i / (2 σ_i))``;
* beyond k standard errors of the difference, ``|ours − p_i| > k σ̂_i`` with both sides'
  estimated errors: ``2 t_ν(−k)``, Student's t with ν the degrees of freedom of σ̂_i: our
  n − 1 where the publication's error is assumed equal to ours (one estimate, used twice),
  Welch–Satterthwaite's where it prints one (taken as estimated from as many trials as ours).

The count's distribution is then the Poisson-binomial of those probabilities, computed
exactly by convolution; the replicate's expected count is its mean and its 95 % range the
2.5 % and 97.5 % quantiles. A cell with σ_i = 0 (every trial equal on both sides) is scored as
an exact replicate scores it: within every band, beyond no bound.

Winner tables (Tables 5 and 6, the best (α, β) pair per cell) — **whole-trial bootstrap**. The
nine pairs of a trial share one noise seed, so their errors are correlated (about 0.5–0.6 on the
committed run) and a difference between two pairs is far less noisy than two independent means
would make it. Each draw resamples whole trials (one row of all nine pairs' errors, with
replacement; every pair's deviations from its mean widened by √(n/(n−1)) so that a resampled
mean has the observed variance) once for our side and once for the publication's (5 trials,
as ours), picks each side's winner, and scores the table as the comparison does: exact
matches, α and β matches, cells where the publication's winner is within one of our standard
errors of ours, and the median cost of the publication's winner. The truth is the pool's pair
means, spread by the noise of their own mean: with the 5 committed trials alone that is one
5-trial noise, and two replicates agree too often (21.0 and 16.4 exact matches expected of
Tables 5 and 6, where disjoint 5-trial blocks of 25 trials agree in 17.2 and 9.7). Where the
best-pairs study's fresh trials are in the results (``investigations/best_pairs_trials.csv``,
20 more trials of every pair), the pool is all 25 trials and each side draws 5 of them, which
leaves a fifth of that spread (18.2 and 10.7).

Numeric tables' "beyond k SE" takes the degrees of freedom from what was estimated: where the
publication prints no standard error and ours stands in for it, the difference's SE is √2 times
ours and has ours' n − 1 degrees of freedom (9 for a 10-trial mean), not Welch's 2(n − 1).

Everything is deterministic on any machine: the closed forms use elementwise arithmetic only,
and the simulations draw from a fixed-seed PCG64 stream with no linear algebra in their path
(no BLAS), so its integer counts do not depend on the CPU or BLAS kernel.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from .tables import fmt_sig

__all__ = ["Expected", "ReplicateCheck", "consistency_line", "equal_pairs_spread", "numeric_replicate",
           "poisson_binomial", "resampled_means", "trial_pool", "winner_replicate", "DRAWS", "K_SE"]

#: "Beyond k standard errors" of a difference, with both sides' errors.
K_SE = 3.0
#: Draws of the winner tables' simulation: the expected counts to about ±0.02.
DRAWS = 10_000
_LEVEL = 0.95


@dataclass(frozen=True)
class Expected:
    """One count of a comparison table beside an exact replicate's distribution of it.

    ``worse_tail`` is the replicate's probability of a count at least as far from the
    published table as the observed one (fewer cells within a band, more beyond k SE).
    The count is *consistent* with an exact replicate unless it lies beyond the 95 % range
    on the side away from the publication: a count closer to the publication than the range
    says the two tables agree (the winner tables' replicate, whose pairs are spread by one
    extra trial noise, errs on that side), not that they differ.
    """

    name: str
    observed: float
    mean: float
    low: float
    high: float
    worse_tail: float
    cells: int
    high_is_worse: bool = False

    @property
    def consistent(self) -> bool:
        return self.observed <= self.high if self.high_is_worse else self.observed >= self.low

    def brief(self) -> str:
        """``replicate 64.1 (95 %: 58–70)``."""
        return f"replicate {fmt_sig(self.mean, 3)} (95 %: {_num(self.low)}–{_num(self.high)})"


def _num(x: float) -> str:
    return f"{int(x)}" if float(x).is_integer() else fmt_sig(x, 3)


def keyed_rng(seed_key: str) -> np.random.Generator:
    """The generator of a simulation named ``seed_key``: the same draws in every process and run."""
    return np.random.Generator(np.random.PCG64(zlib.crc32(seed_key.encode())))


def poisson_binomial(p) -> np.ndarray:
    """The exact distribution of a sum of independent Bernoulli(p_i): ``pmf[k] = P(sum = k)``.

    Examples
    --------
    >>> poisson_binomial([0.5, 0.5]).round(3).tolist()
    [0.25, 0.5, 0.25]
    """
    p = np.asarray(p, dtype=float)
    if np.any(~np.isfinite(p)) or np.any((p < 0) | (p > 1)):
        raise ValueError("probabilities must be finite and in [0, 1]")
    pmf = np.zeros(len(p) + 1)
    pmf[0] = 1.0
    for i, q in enumerate(p):  # add one cell at a time; elementwise only, the same bits everywhere
        pmf[1:i + 2] = pmf[1:i + 2] * (1 - q) + pmf[:i + 1] * q
        pmf[0] *= 1 - q
    return pmf


def flipped_trial_counts(blocks: list[np.ndarray], count, *, seed_key: str, draws: int = 2000) -> np.ndarray:
    """A statistic's law under "the two methods are exchangeable", flipping whole trials.

    ``blocks`` holds one (trials × cells) array of paired differences per group of cells that
    share their trials' data (a data set's splits, shared by every ρ and both methods); NaN
    where a trial is missing. Each draw flips the sign of every trial of a group at once, in all
    of the group's cells, so the correlation that shared data puts between cells is kept;
    ``count(blocks)`` is evaluated on each draw. Returns the ``draws`` values.
    """
    rng = keyed_rng(seed_key)
    out = np.empty(draws)
    for i in range(draws):
        out[i] = count([b * rng.choice((-1.0, 1.0), size=(b.shape[0], 1)) for b in blocks])
    return out


def _quantiles(pmf: np.ndarray) -> tuple[int, int]:
    cdf = np.cumsum(pmf)
    a = (1 - _LEVEL) / 2
    return int(np.searchsorted(cdf, a - 1e-12)), int(np.searchsorted(cdf, 1 - a - 1e-12))


def _from_pmf(name: str, observed: int, pmf: np.ndarray, *, high_is_worse: bool) -> Expected:
    low, high = _quantiles(pmf)
    k = np.arange(len(pmf))
    tail = float(pmf[k >= observed].sum() if high_is_worse else pmf[k <= observed].sum())
    return Expected(name, observed, float((k * pmf).sum()), low, high, min(tail, 1.0), len(pmf) - 1, high_is_worse)


def _welch_df(s_o, s_p, df_o, df_p):
    num = (s_o ** 2 + s_p ** 2) ** 2
    den = np.where(df_o > 0, s_o ** 4 / np.maximum(df_o, 1), 0) + np.where(df_p > 0, s_p ** 4 / np.maximum(df_p, 1), 0)
    return np.where(den > 0, num / np.where(den > 0, den, 1), np.inf)


def numeric_replicate(data: pd.DataFrame, bands=(0.10, 0.25), k: float = K_SE) -> dict[str, Expected]:
    """The replicate's distribution of each count of a numeric comparison, from its ``data``.

    ``data`` has one row per compared cell with ``published``, ``ours``, ``sigma`` (the
    difference's standard error, both sides), ``df`` (its degrees of freedom) and the
    observed ``ratio`` and ``z`` (difference in ``sigma``). Cells without a finite ``sigma``
    are left out (they are counted in neither column).
    """
    d = data[np.isfinite(data["ours"]) & np.isfinite(data["sigma"])]
    pub, sig, df = (d[c].to_numpy(dtype=float) for c in ("published", "sigma", "df"))
    ratio, z = d["ratio"].to_numpy(dtype=float), d["z"].to_numpy(dtype=float)
    exact = sig == 0
    safe = np.where(exact, 1.0, sig)
    out = {}
    for b in bands:
        p = np.where(exact, 1.0, 2 * stats.norm.cdf(b * np.abs(pub) / safe) - 1)
        obs = int(np.sum(np.abs(ratio - 1) <= b + 1e-12))
        out[f"within_{round(100 * b)}"] = _from_pmf(f"within {round(100 * b)} %", obs, poisson_binomial(p),
                                                  high_is_worse=False)
    p2 = np.where(exact, 1.0, stats.norm.cdf(np.abs(pub) / safe) - stats.norm.cdf(-np.abs(pub) / (2 * safe)))
    out["within_2x"] = _from_pmf("within 2×", int(np.sum((ratio >= 0.5) & (ratio <= 2.0))), poisson_binomial(p2),
                                 high_is_worse=False)
    pk = np.where(exact, 0.0, 2 * stats.t.sf(k, np.where(np.isfinite(df), df, 1e6)))
    out["beyond_se"] = _from_pmf(f"beyond {k:g} SE", int(np.sum(np.abs(z) > k)), poisson_binomial(pk),
                                 high_is_worse=True)
    return out


def difference_errors(sem, n_ok, published_se) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The difference's standard error and degrees of freedom, and whether the publication's was assumed.

    The publication's standard error is its printed one, taken as estimated from as many trials
    as ours (it prints no trial count): Welch–Satterthwaite's degrees of freedom. Where it prints
    none, ours stands in for it: the difference's error is then √2 × ours, one estimate with
    ours' n − 1 degrees of freedom.

    Examples
    --------
    >>> difference_errors([1.0], [10], [float("nan")])[1].tolist()  # assumed: 9, not Welch's 18
    [9.0]
    >>> difference_errors([1.0], [10], [1.0])[1].tolist()  # printed: two estimates
    [18.0]
    """
    sem, n_ok, pse = (np.asarray(x, dtype=float) for x in (sem, n_ok, published_se))
    assumed = ~np.isfinite(pse)
    s_p = np.where(assumed, sem, pse)
    sigma = np.hypot(sem, s_p)
    df_side = np.where(n_ok > 1, n_ok - 1, 0)
    df = np.where(assumed, np.where(df_side > 0, df_side, np.inf), _welch_df(sem, s_p, df_side, df_side))
    return sigma, df, assumed


def trial_pool(trials) -> np.ndarray:
    """Whole trials to resample: ``trials`` (trials × pairs, one noise seed per row) without incomplete
    rows, each column's deviations from its mean widened by √(n/(n−1)).

    A mean of n rows drawn with replacement from the pool then has the variance s²/n of an
    n-trial mean (s² the columns' unbiased variance), and the rows keep the pairs'
    trial-to-trial correlation, which independent draws per pair would lose.

    Examples
    --------
    >>> trial_pool([[1.0, 2.0], [3.0, 4.0], [np.nan, 1.0]]).tolist()  # the incomplete row goes
    [[0.5857864376269049, 1.5857864376269049], [3.414213562373095, 4.414213562373095]]
    """
    x = np.asarray(trials, dtype=float)
    x = x[np.all(np.isfinite(x), axis=1)]
    n = len(x)
    if n < 2:
        return x
    centre = x.mean(axis=0)
    return centre + np.sqrt(n / (n - 1)) * (x - centre)


def resampled_means(pool: np.ndarray, rng: np.random.Generator, draws: int, size: int | None = None) -> np.ndarray:
    """Means over ``size`` (default: the pool's size) whole trials drawn with replacement: ``(draws, pairs)``."""
    size = len(pool) if size is None else size
    return pool[rng.integers(0, len(pool), (draws, size))].mean(axis=1)


def winner_replicate(cells: list[tuple[np.ndarray, np.ndarray, np.ndarray]], *, seed_key: str,
                     draws: int = DRAWS, trials: int | None = None) -> dict[str, np.ndarray]:
    """Replicate counts of a best-pair comparison by a whole-trial bootstrap.

    ``cells`` holds, per compared cell, the pairs' ``alpha`` and ``beta`` and our per-trial
    errors (trials × pairs, a row per trial: one noise seed for all pairs). Each draw
    resamples ``trials`` whole trials (default: as many as the cell has) for our side and as
    many for the publication's. Returns, per count, the ``draws`` simulated values
    (``exact``, ``alpha``, ``beta``, ``within_1se``, ``median_cost``).
    """
    rng = keyed_rng(seed_key)
    counts = {k: np.zeros(draws) for k in ("exact", "alpha", "beta", "within_1se")}
    costs = []
    rows = np.arange(draws)
    for alpha, beta, errors in cells:
        pool = trial_pool(errors)
        if len(pool) == 0:
            continue
        n = trials or len(pool)
        idx = rng.integers(0, len(pool), (draws, n))
        ours = pool[idx].mean(axis=1)
        sem = pool[idx].std(axis=1, ddof=1) / np.sqrt(n) if n > 1 else np.zeros_like(ours)
        theirs = resampled_means(pool, rng, draws, n)
        a, b = np.argmin(ours, axis=1), np.argmin(theirs, axis=1)
        counts["exact"] += a == b
        counts["alpha"] += alpha[a] == alpha[b]
        counts["beta"] += beta[a] == beta[b]
        best, at_pub = ours[rows, a], ours[rows, b]
        counts["within_1se"] += at_pub - best <= sem[rows, b]
        costs.append(np.where(best > 0, at_pub / np.where(best > 0, best, 1), np.nan))
    out = {k: v for k, v in counts.items()}
    out["median_cost"] = np.nanmedian(np.stack(costs, axis=1), axis=1) if costs else np.zeros(draws)
    return out


def equal_pairs_spread(cells: list[np.ndarray], *, seed_key: str, draws: int = 2000) -> np.ndarray:
    """Median over cells of worst ÷ best pair mean when every pair of a cell has the same true mean.

    ``cells`` holds each cell's per-trial errors (trials × pairs, one noise seed per row). Each
    pair's trials are divided by its mean (every pair's mean 1, its relative noise and its
    trial-to-trial correlation with the others kept), whole trials are resampled
    (:func:`trial_pool`), and the resampled pair means' worst ÷ best is taken per cell. Returns
    the ``draws`` simulated medians.
    """
    rng = keyed_rng(seed_key)
    spreads = []
    for trials in cells:
        x = np.asarray(trials, dtype=float)
        x = x[:, np.any(np.isfinite(x), axis=0)]  # a pair with no trial is no pair
        pool = trial_pool(x / np.nanmean(x, axis=0))
        if len(pool) == 0:
            continue
        m = resampled_means(pool, rng, draws)
        spreads.append(m.max(axis=1) / m.min(axis=1))
    return np.median(np.stack(spreads, axis=1), axis=1) if spreads else np.ones(draws)


def from_draws(name: str, observed: float, draws: np.ndarray, *, high_is_worse: bool, cells: int) -> Expected:
    """An :class:`Expected` from simulated values (quantiles by the inverted CDF: whole counts stay whole)."""
    a = (1 - _LEVEL) / 2
    low, high = np.quantile(draws, [a, 1 - a], method="inverted_cdf")
    tail = float(np.mean(draws >= observed) if high_is_worse else np.mean(draws <= observed))
    return Expected(name, float(observed), float(np.mean(draws)), float(low), float(high), tail, cells, high_is_worse)


@dataclass(frozen=True)
class ReplicateCheck:
    """One published table's counts beside an exact replicate's."""

    table: str
    counts: tuple[Expected, ...]
    note: str = ""  # how the publication's uncertainty was taken

    @property
    def consistent(self) -> bool:
        return all(e.consistent for e in self.counts)


def _tail(p: float) -> str:
    return "< 1e-4" if p < 1e-4 else fmt_sig(p, 2)


def consistency_line(check: ReplicateCheck) -> str:
    """One line: consistent with an exact replicate or not, and by how much.

    Examples
    --------
    >>> e = Expected("within 10 %", 43, 64.1, 58, 70, 1e-9, 84)
    >>> consistency_line(ReplicateCheck("Table 3", (e,)))[:60]
    'Table 3: **not consistent** with an exact replicate — within'
    """
    if not check.counts:
        return f"{check.table}: no cell to compare."
    outside = [e for e in check.counts if not e.consistent]
    parts = [f"{e.name} {_num(e.observed)}{'' if e.name == 'median cost' else f' of {e.cells}'} against {e.brief()}"
             + (f", P(as far or further) {_tail(e.worse_tail)}" if not e.consistent else "") for e in check.counts]
    if outside:
        head = f"{check.table}: **not consistent** with an exact replicate — "
    else:
        head = f"{check.table}: consistent with an exact replicate (no count beyond its 95 % range away from the publication) — "
    return head + "; ".join(parts) + "."

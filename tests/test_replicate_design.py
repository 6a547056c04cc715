"""The replicates follow the run's design: a trial's (α, β) pairs share one seed, so their errors are
correlated, and a replicate that draws them independently misjudges how often two runs agree.

Synthetic runs with a known per-trial correlation between pairs: the replicate computed from one
run (whole trials resampled) must reproduce what the generating model says, and the earlier
independent-noise formula must not."""

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from paceggm.bench.figures import published as P
from paceggm.bench.figures import replicate as R

N, PAIRS, CORR, SD, GAP = 5, 9, 0.9, 1.0, 0.6
ALPHA, BETA = np.repeat([0.1, 0.3, 0.5], 3).astype(float), np.tile([0.1, 0.3, 0.5], 3).astype(float)
#: True pair means: one best pair, eight 0.4 SD behind it (resolved when pairs are paired, not otherwise).
TRUE = 10.0 + np.r_[0.0, np.full(PAIRS - 1, GAP)]


def _trials(rng, cells, *, n=N, corr=CORR, true=TRUE):
    """(cells, n, pairs) errors: a shared trial effect (weight corr) plus each pair's own noise."""
    common = rng.standard_normal((cells, n, 1))
    own = rng.standard_normal((cells, n, len(true)))
    return true + SD * (np.sqrt(corr) * common + np.sqrt(1 - corr) * own)


def _independent_replicate(x, rng, draws):
    """The earlier formula: each pair redrawn around its mean with its own SE, independently of the others."""
    mean, sem = x.mean(axis=0), x.std(axis=0, ddof=1) / np.sqrt(len(x))
    a = np.argmin(mean + sem * rng.standard_normal((draws, PAIRS)), axis=1)
    b = np.argmin(mean + sem * rng.standard_normal((draws, PAIRS)), axis=1)
    return float(np.mean(a == b))


@pytest.fixture(scope="module")
def run():
    return _trials(np.random.default_rng(20261128), 60)


def test_two_independent_paired_runs_agree_as_the_model_says_and_the_replicate_follows(run):
    # the model's truth: two independent 5-trial runs, winner by mean, 20,000 times
    truth = np.mean(np.argmin(_trials(np.random.default_rng(1), 20_000).mean(axis=1), axis=1)
                    == np.argmin(_trials(np.random.default_rng(2), 20_000).mean(axis=1), axis=1))
    assert truth > 0.95  # paired, the best pair is resolved (unpaired, the same gaps give 0.26)

    draws = R.winner_replicate([(ALPHA, BETA, x) for x in run], seed_key="design", draws=1000)
    resampled = draws["exact"].mean() / len(run)
    independent = np.mean([_independent_replicate(x, np.random.default_rng(i), 1000) for i, x in enumerate(run)])
    # whole trials resampled: within 0.2 of the truth (plugging the observed means in as the truth
    # spreads the pairs by one trial noise: the best pair's nearest rival looks nearer, 0.84-0.87 over
    # five such runs); drawn independently, the pairs' differences are three times too noisy and the
    # agreement falls to 0.31-0.33, as if the pairs shared no seed
    assert abs(resampled - truth) < 0.2, (resampled, truth)
    assert independent < truth - 0.5, (independent, truth)


def test_the_replicate_of_uncorrelated_pairs_is_the_independent_one():
    x = _trials(np.random.default_rng(7), 60, corr=0.0, true=10.0 + np.r_[0.0, np.full(PAIRS - 1, 1.0)])
    resampled = R.winner_replicate([(ALPHA, BETA, t) for t in x], seed_key="design", draws=1000)["exact"].mean()
    independent = sum(_independent_replicate(t, np.random.default_rng(i), 1000) for i, t in enumerate(x))
    assert resampled == pytest.approx(independent, abs=0.1 * len(x))


def test_nine_equal_correlated_pairs_spread_as_the_model_says():
    equal = np.full(PAIRS, 10.0)
    x = _trials(np.random.default_rng(3), 40, true=equal, corr=CORR)
    null = R.equal_pairs_spread(list(x), seed_key="design", draws=400)
    # the model's truth: the median over 40 cells of worst ÷ best of nine equal paired means
    sim = _trials(np.random.default_rng(4), 40 * 400, true=equal).mean(axis=1)
    truth = np.median((sim.max(axis=1) / sim.min(axis=1)).reshape(400, 40), axis=1).mean()
    # the earlier formula: each pair redrawn alone around the cell's centre with its own SE
    sem = x.std(axis=1, ddof=1) / np.sqrt(N)
    z = np.random.default_rng(5).standard_normal((400, *sem.shape))
    old = np.exp(sem / 10.0 * z)
    independent = np.median(old.max(axis=2) / old.min(axis=2), axis=1).mean()
    spread = lambda v: v - 1.0  # noqa: E731  (the spread's excess over no spread at all)
    assert spread(null.mean()) == pytest.approx(spread(truth), rel=0.25)
    assert spread(independent) > 2.5 * spread(truth)


def test_beyond_3_se_has_the_degrees_of_freedom_of_the_one_estimate_it_uses():
    """Ours a 10-trial mean with its SE estimated; the publication's an exact replicate's 10-trial mean
    with no printed SE. |z| > 3 happens as Student's t with 9 degrees of freedom says, not 18."""
    rng = np.random.default_rng(11)
    tables, n, cells = 60, 10, 200
    hits, expected = 0, None
    for _ in range(tables):
        mu = rng.uniform(5, 200, cells)
        trials = mu[:, None] * (1 + 0.2 * rng.standard_normal((cells, n)))
        ours = pd.DataFrame({"mean": trials.mean(axis=1), "sem": trials.std(axis=1, ddof=1) / np.sqrt(n),
                             "count": n}, index=pd.MultiIndex.from_arrays([[f"x{i}" for i in range(cells)],
                                                                          [1.0] * cells], names=["dataset", "rho"]))
        pub = mu * (1 + 0.2 * rng.standard_normal(cells) / np.sqrt(n))
        published = pd.DataFrame(dict(dataset=[f"x{i}" for i in range(cells)], rho=1.0, value=pub))
        _, dist = P.compare_numeric(ours, published, value="value", name="t", what="test", preprocessing="paper")
        hits += dist.beyond_3se
        expected = {e.name: e for e in dist.replicate.counts}["beyond 3 SE"].mean
    assert expected == pytest.approx(cells * 2 * stats.t.sf(3, n - 1), rel=1e-9)
    # 12,000 cells: 179 expected at 9 degrees of freedom, 92 at Welch's 18
    assert hits == pytest.approx(tables * expected, rel=0.25)
    assert hits > 1.5 * tables * cells * 2 * stats.t.sf(3, 2 * (n - 1))

"""The row-weight sampler: exactly the exponential mechanism's distribution, kept up to date in place."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from scipy import stats

from paceggm import PACEGGM, pace_ggm
from paceggm.bench.audit import audit_case
from paceggm.bench.audit import cases as audit_cases
from paceggm.privacy import exponential_mechanism_probabilities
from paceggm.privacy.selection import PairSampler

DRAWS = 20_000


def _frequencies(sampler: PairSampler, rho: float, seed: int, draws: int = DRAWS) -> np.ndarray:
    rng = np.random.default_rng(seed)
    picks = [sampler.draw(rho=rho, rng=rng) for _ in range(draws)]
    return np.bincount(picks, minlength=sampler.scores.size)


def _chi_square_p(counts: np.ndarray, probs: np.ndarray) -> float:
    """Pearson's χ² p-value; candidates of probability 0 must never be drawn."""
    assert np.all(counts[probs == 0] == 0)
    live = probs > 0
    return float(stats.chisquare(counts[live], counts.sum() * probs[live]).pvalue)


@pytest.mark.parametrize("d, rho, seed", [(4, 0.05, 0), (6, 0.2, 1), (5, 2.0, 2)])
def test_draws_follow_the_exact_softmax(d, rho, seed):
    scores = np.random.default_rng(100 + seed).uniform(0.0, 1.0, d * (d + 1) // 2)
    probs = exponential_mechanism_probabilities(scores, rho=rho, sensitivity=0.25)
    p = _chi_square_p(_frequencies(PairSampler(scores, sensitivity=0.25), rho, seed), probs)
    assert p > 1e-3, p


def test_draws_follow_the_softmax_after_rescoring_and_a_new_budget():
    # The state a fit leaves: scores changed in place (one component's pairs), the
    # budget doubled (annealing), scores shrinking far below the weights' reference.
    d = 5
    rng = np.random.default_rng(7)
    scores = rng.uniform(0.0, 1.0, d * (d + 1) // 2)
    sampler = PairSampler(scores, sensitivity=0.1)
    changed = np.array([0, 3, 5, 10, 12, 14])  # the pairs of the component {0, 2, 4}
    sampler.rescored(changed)  # before the first draw: nothing kept yet, the draw reads the scores
    sampler.draw(rho=0.01, rng=rng)
    scores[changed] = rng.uniform(0.0, 3.0, changed.size)
    sampler.rescored(changed)
    probs = exponential_mechanism_probabilities(scores, rho=0.01, sensitivity=0.1)
    assert _chi_square_p(_frequencies(sampler, 0.01, 11), probs) > 1e-3
    # after the rescore, the kept weights are the ones a fresh build makes
    fresh = PairSampler(scores.copy(), sensitivity=0.1)
    fresh.draw(rho=0.01, rng=np.random.default_rng(0))
    np.testing.assert_allclose(sampler._w / sampler._w.sum(), fresh._w / fresh._w.sum(), rtol=1e-13)
    np.testing.assert_allclose(sampler._row, np.add.reduceat(sampler._w, sampler._starts), rtol=1e-15)
    rebuilds = sampler.n_rebuilds
    scores[7] += 2.0  # one pair rescored alone
    sampler.rescored(np.array([7]))
    fresh = PairSampler(scores.copy(), sensitivity=0.1)
    fresh.draw(rho=0.01, rng=np.random.default_rng(0))
    np.testing.assert_allclose(sampler._w / sampler._w.sum(), fresh._w / fresh._w.sum(), rtol=1e-13)
    assert sampler.n_rebuilds == rebuilds
    probs = exponential_mechanism_probabilities(scores, rho=0.04, sensitivity=0.1)
    assert _chi_square_p(_frequencies(sampler, 0.04, 12), probs) > 1e-3
    assert sampler.n_rebuilds == rebuilds + 1  # a new budget rebuilds once, not every draw


def test_the_test_has_power_against_a_wrong_temperature():
    # The same χ² test rejects the draws of the mechanism at 1.2 times its ε.
    d = 5
    scores = np.random.default_rng(3).uniform(0.0, 1.0, d * (d + 1) // 2)
    counts = _frequencies(PairSampler(scores, sensitivity=0.1), 0.05 * 1.44, 4)
    probs = exponential_mechanism_probabilities(scores, rho=0.05, sensitivity=0.1)
    assert _chi_square_p(counts, probs) < 1e-6


def test_huge_and_moving_scores_stay_finite_and_exact():
    # Scores that would overflow exp, then a rescore far above the reference, then all far below it.
    scores = np.array([1e300, -1e300, 1e300 * (1 - 1e-15), 0.0, 5.0, 1.0])
    sampler = PairSampler(scores, sensitivity=1e-6)
    rng = np.random.default_rng(0)
    assert {sampler.draw(rho=1e6, rng=rng) for _ in range(200)} <= {0, 2}
    scores[:] = [0.0, 0.0, 0.0, 0.0, 1e3, 0.0]
    sampler.rescored(np.arange(6))
    assert {sampler.draw(rho=1.0, rng=rng) for _ in range(50)} == {4}
    scores[:] = -1e3 + np.array([0.0, 4e-5, 0.0, 1e-5, 0.0, 0.0])
    sampler.rescored(np.arange(6))
    probs = exponential_mechanism_probabilities(scores, rho=1e-3, sensitivity=1e-6)
    assert _chi_square_p(_frequencies(sampler, 1e-3, 5, 20_000), probs) > 1e-3


def test_zero_weight_candidates_are_never_drawn():
    scores = np.zeros(10)
    scores[[3, 7]] = 1.0
    sampler = PairSampler(scores, sensitivity=1e-9)  # every other weight underflows to 0
    rng = np.random.default_rng(1)
    assert {sampler.draw(rho=1.0, rng=rng) for _ in range(400)} == {3, 7}


_NOT_A_FLOAT_ARRAY = r"^scores must be a 1-D float array \(held by reference and updated in place\)$"


@pytest.mark.parametrize("bad, error, match", [
    (np.zeros(4), ValueError, r"^scores must hold d\(d\+1\)/2 pairs for some d >= 1, got 4$"),
    (np.array([0.0, np.nan, 1.0]), ValueError, r"^scores must be finite$"),
    (np.zeros(3, dtype=np.float32), TypeError, _NOT_A_FLOAT_ARRAY),
    ([0.0, 1.0, 2.0], TypeError, _NOT_A_FLOAT_ARRAY),
])
def test_bad_scores_are_refused(bad, error, match):
    with pytest.raises(error, match=match):
        PairSampler(bad, sensitivity=1.0)


def test_bad_sensitivity_and_budget_are_refused():
    with pytest.raises(ValueError, match=r"^sensitivity must be a finite number > 0, got 0\.0$"):
        PairSampler(np.zeros(3), sensitivity=0.0)
    with pytest.raises(ValueError):
        PairSampler(np.zeros(3), sensitivity=1.0).draw(rho=0.0, rng=np.random.default_rng(0))
    scores = np.zeros(3)
    sampler = PairSampler(scores, sensitivity=1.0)
    sampler.draw(rho=1.0, rng=np.random.default_rng(0))
    scores[1] = np.inf  # a rescore is checked as the constructor checks
    with pytest.raises(ValueError, match=r"^scores must be finite$"):
        sampler.rescored(np.array([1]))


def test_the_estimator_selects_with_either_sampler_and_spends_the_same():
    X = np.random.default_rng(0).uniform(-1, 1, size=(2000, 8))
    gumbel = pace_ggm(X, rho=1.0, random_state=0)
    rows = pace_ggm(X, rho=1.0, random_state=0, sampler="rows")
    assert rows.rho_spent <= 1.0 and gumbel.rho_spent <= 1.0
    # the default is the published draw stream: unchanged by the option's existence
    again = pace_ggm(X, rho=1.0, random_state=0, sampler="gumbel")
    assert [r.entry for r in gumbel.history] == [r.entry for r in again.history]
    np.testing.assert_array_equal(gumbel.covariance, again.covariance)
    assert [r.entry for r in rows.history] != [r.entry for r in gumbel.history]
    est = PACEGGM(rho=1.0, sampler="rows", random_state=0).fit(X)
    np.testing.assert_array_equal(est.covariance_, rows.covariance)
    with pytest.raises(ValueError, match="sampler"):
        pace_ggm(X, rho=1.0, sampler="uniform")


@pytest.mark.slow
def test_first_round_selection_matches_the_mechanism_over_fits():
    # The first selected pair of whole fits, over many seeds, against the exact softmax of
    # each fit's first-round scores (the estimate is then its noisy measured diagonal).
    n, d, rho, fits = 200, 3, 2.0, 500
    X = np.random.default_rng(5).uniform(-1, 1, size=(n, d))
    X[:, 1] = 0.7 * X[:, 0] + 0.3 * X[:, 1]
    sigma = X.T @ X / n
    r, c = np.tril_indices(d)
    counts, probs = np.zeros(r.size), np.zeros(r.size)
    for seed in range(fits):
        # Selected and measured before any reconstruction, so the cheapest solver gives the same draws
        # (tested for the audit's fits: test_the_audited_statistics_do_not_depend_on_the_solver).
        res = pace_ggm(X, rho=rho, max_rounds=1, sampler="rows", random_state=seed, solver=audit_cases._AUDIT_SOLVER)
        j, k = res.history[0].entry
        counts[j * (j + 1) // 2 + k] += 1
        est = np.diag(np.maximum([m.value for m in res.measurements[:d]], 0.0))
        probs += exponential_mechanism_probabilities(np.abs(sigma[r, c] - est[r, c]),
                                                     rho=res.history[0].rho_select, sensitivity=2.0 / n)
    assert _chi_square_p(counts, probs / fits) > 1e-3


def test_audit_still_catches_the_broken_control_and_passes_the_sampler():
    # The audit's exponential cases, with the row-weight sampler in place of Gumbel-max.
    def rows_mechanism(sensitivity):
        def run(scores, rng):
            # The audit's 20 scores and one hopeless candidate: the 21 pairs of d = 6.
            padded = np.r_[scores, -1e6]
            return float(PairSampler(padded, sensitivity=sensitivity).draw(rho=audit_cases._EM_RHO, rng=rng))
        return run

    base = next(c for c in audit_cases.CASES if c.name == "exponential")
    broken = next(c for c in audit_cases.CASES if c.name == "exponential_half_sensitivity")
    ok = audit_case(dataclasses.replace(base, name="exponential_rows",
                                        run=rows_mechanism(audit_cases._DELTA)), 3000)
    caught = audit_case(dataclasses.replace(broken, name="exponential_rows_half_sensitivity",
                                            run=rows_mechanism(audit_cases._DELTA / 2.0)), 3000)
    assert ok.ok and ok.bound.rho <= base.rho and ok.bound.rho > 0
    assert caught.verdict == "caught"

"""Re-centring a stalled warm round (newton._recentre, newton_pcg's kept centred points): the
reference's answer without the cold continuation."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from paceggm.reconstruction import newton, newton_pcg
from paceggm.reconstruction.counters import EVENTS, Counters
from paceggm.reconstruction.newton import _Pattern, solve_newton
from paceggm.reconstruction.newton_pcg import _KEPT_LEVELS, _known_inverse, _local_start, solve_newton_pcg
from paceggm.reconstruction.problem import make_problem, mu_schedule

MU_MIN = newton.DEFAULTS["mu_min"]
# Where the measurements are not completable, P at μ_min has a condition number near 1e8 and the
# answer is defined only to about 1e-8 in floating point: two Newton paths that both end at the
# floor of the barrier's stationarity (|m(y − W) + μ q x| ≈ 1e-8 here, for the reference too)
# differ by up to 1.3e-8 relative in W on these rounds.
W_TOL = 5e-8


def _close(a, b) -> bool:
    return np.abs(a.W - b.W).max() <= W_TOL * np.abs(b.W).max()


def _stationarity(p, sol) -> float:
    """max |m(y − W) + μ q x| over the pattern, relative to max |W| there."""
    pat = _Pattern(p)
    W = np.linalg.inv(sol.state.precision)
    grad = pat.m * (pat.y - W[pat.r, pat.c]) + sol.mu * pat.q * pat.entries(sol.state.precision)
    return np.abs(grad).max() / np.abs(W[pat.r, pat.c]).max()
LEVELS = mu_schedule(newton.DEFAULTS["mu0"], MU_MIN, newton.DEFAULTS["mu_factor"])[-1 - _KEPT_LEVELS:-1]


@pytest.fixture(autouse=True)
def _cg_at_every_size(monkeypatch):
    """The rounds' blocks are small; make them take the path of large blocks all the same."""
    monkeypatch.setattr(newton_pcg, "_CG_MIN_ENTRIES", 0)


def _rounds(n_rounds: int, d: int = 12, seed: int = 0):
    """PACE-GGM-like rounds on measurements far from completable: one more entry a round.

    Returns the problems, each round's warm start (``init``) and answer, solved by newton_pcg.
    Correlations plus large noise (no positive-definite completion once enough entries are in):
    the μ_min answers grow like ``1/μ`` and some rounds' new entries change the directions
    that witness it, where a warm μ_min stage stalls.
    """
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(d, 2 * d))
    y = A @ A.T / (2 * d)
    s = np.sqrt(np.diag(y))
    y = y / np.outer(s, s) + 0.6 * np.triu(rng.normal(size=(d, d)), 1)
    y = np.triu(y) + np.triu(y, 1).T
    order = rng.permutation([(j, k) for j in range(d) for k in range(j)])
    pattern = np.eye(d, dtype=bool)
    problems, inits, answers = [], [], []
    state = None
    for j, k in order[:n_rounds]:
        pattern[j, k] = pattern[k, j] = True
        p = make_problem(np.where(pattern, y, 0.0), pattern.astype(float), scale=1.0, lam_unit=1.0)
        init = None if state is None else [(np.arange(d), state)]
        sol = solve_newton_pcg(p, init=init)
        problems.append(p)
        inits.append(init)
        answers.append(sol)
        state = sol.state
    return problems, inits, answers


# Round 32 of _rounds(): its warm μ_min stage stalls (without the kept points it ends in the cold
# continuation), and the point kept at μ_min·10 by round 31's cold continuation re-centres it.
STALLED = 32


def test_a_stalled_round_is_re_centred_warm_to_the_reference_answer(stalled_round):
    p, init = stalled_round
    with Counters() as c:
        got = solve_newton_pcg(p, init=init)
    assert c.events["warm re-centrings"] == 1
    assert c.events["cold restarts"] == 0 and c.events["cold starts"] == 0
    ref = solve_newton(p)  # the cold continuation from the diagonal
    assert got.mu == ref.mu == MU_MIN  # not completable: the answer at μ_min
    assert _close(got, ref) and _stationarity(p, got) <= 1e-7
    # The same round without the kept points: the warm stage stalls and the cold continuation
    # follows (so the round above did stall, and was re-centred).
    ix, state = init[0]
    with Counters() as c:
        cold = solve_newton_pcg(p, init=[(ix, replace(state, path=()))])
    assert c.events["warm re-centrings"] == 1 and c.events["cold restarts"] == 1
    assert _close(cold, ref)


def test_a_solve_keeps_its_centred_points_above_mu_min(stalled_round):
    """After a re-centring, the levels it passed through are this solve's (μ_min·10 at least; a
    level above it keeps the inherited point); each such point is the answer at its level: the
    barrier's stationarity holds there."""
    p, init = stalled_round
    inherited = {mu: point for mu, point, _ in init[0][1].path}
    got = solve_newton_pcg(p, init=init)
    kept = {mu: (point, scale) for mu, point, scale in got.state.path}
    assert set(kept) == set(LEVELS)
    own = {mu: v for mu, v in kept.items() if v[0] is not inherited.get(mu)}
    assert min(LEVELS) in own
    pat = _Pattern(p)
    for mu, (point, scale) in own.items():
        # Kept as its entries on the pattern (O(|S|) memory), not as a dense d × d matrix.
        assert scale == p.scale and point.d == p.d and point.x.shape == pat.r.shape
        P = point.matrix()
        x = pat.entries(P)
        assert np.array_equal(x, point.x)
        W = np.linalg.inv(P)
        grad = pat.m * (pat.y - W[pat.r, pat.c]) + mu * pat.q * x
        assert np.abs(grad).max() <= 1e-6 * np.abs(W).max(), mu


def test_every_round_keeps_the_reference_answer_and_counts_its_events():
    """All rounds of the stalling sequence: each answer the cold reference's (to W_TOL); the
    events are the library's names; re-centrings spare cold restarts on most stalled rounds."""
    problems, inits, answers = _rounds(40)
    for p, sol in zip(problems, answers):
        ref = solve_newton(p)
        assert sol.mu == ref.mu
        assert _close(sol, ref) and _stationarity(p, sol) <= 1e-7
    with Counters() as c:
        for p, init in zip(problems[1:], inits[1:]):
            solve_newton_pcg(p, init=init)
    assert set(c.events) <= set(EVENTS)
    assert c.events["Newton systems"] > 0 and c.events["warm re-centrings"] > 0


@pytest.mark.parametrize("seed", [0, 1])
def test_local_start_at_positive_mu_is_the_neighbourhood_optimum(seed):
    """At μ > 0 the local start minimises F_μ on the new entry's neighbourhood: there the
    gradient m(y − W) + μ q x vanishes, and W is P⁻¹."""
    rng = np.random.default_rng(seed)
    d, mu = 30, 1e-3
    A = rng.normal(size=(d, 2 * d))
    sigma = A @ A.T / (2 * d) + 0.1 * np.eye(d)
    pattern = np.eye(d, dtype=bool) | (rng.random((d, d)) < 0.15)
    pattern = pattern | pattern.T
    first = solve_newton_pcg(make_problem(np.where(pattern, sigma, 0.0), pattern.astype(float), scale=1.0,
                                          lam_unit=1.0), mu_min=mu, exact_limit=False)
    j, k = np.argwhere(~pattern)[0]
    pattern[j, k] = pattern[k, j] = True
    p = make_problem(np.where(pattern, sigma, 0.0), pattern.astype(float), scale=1.0, lam_unit=1.0)
    init = [(np.arange(d), first.state)]
    pat = _Pattern(p)
    P0, _ = newton._assemble_warm_start(p, init, mu)
    W0 = _known_inverse(init, P0, p.scale)
    P, W, _ = _local_start(pat, P0, W0, None, mu)
    x = pat.entries(P)
    assert np.abs(W - np.linalg.inv(P)).max() <= 1e-10 * np.abs(W).max()
    near = np.isin(pat.r, [j, k]) | np.isin(pat.c, [j, k])
    grad = pat.m * (pat.y - W[pat.r, pat.c]) + mu * pat.q * x
    assert np.abs(grad[near]).max() <= 1e-8 * np.abs(W).max()
    assert np.abs(grad[~near]).max() > 1e-6 * np.abs(W).max()  # the rest is left to Newton
    # Without the μ term the neighbourhood is not at its optimum for F_μ.
    P_zero, W_zero, _ = _local_start(pat, P0, W0, None, 0.0)
    grad0 = pat.m * (pat.y - W_zero[pat.r, pat.c]) + mu * pat.q * pat.entries(P_zero)
    assert np.abs(grad0[near]).max() > 1e-6 * np.abs(W).max()

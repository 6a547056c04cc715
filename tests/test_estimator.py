"""PACE-GGM end to end: budget accounting, statistics, reproducibility, bad input."""

import dataclasses
import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from paceggm import PACEGGM, MeasuredEntries, pace_ggm, reconstruct
from paceggm.exceptions import ConvergenceWarning, PrivacyLeakWarning
from paceggm.privacy import ZCDPLedger, gaussian_sigma
from paceggm.reconstruction import SOLVERS, BlockSolution, SolverSpec

from conftest import bounded_gaussian


def _jitter_solve(p, *, init=None):
    """Post-processing with a data-dependent random move, to drive annealing both ways."""
    seed = int.from_bytes(np.ascontiguousarray(p.y).tobytes()[-8:], "little") % (2**32)
    rng = np.random.default_rng(seed)
    W = np.diag(np.maximum(np.diag(p.y), 0.0)) + np.where(p.lam > 0, p.y, 0.0) * (1 - np.eye(p.d))
    E = rng.normal(scale=rng.choice([1e-6, 1.0]), size=W.shape)
    return BlockSolution(W=W + (E + E.T) / 2)


@pytest.fixture
def jitter_solver():
    SOLVERS["jitter"] = SolverSpec(_jitter_solve, max_entropy=False)
    yield "jitter"
    del SOLVERS["jitter"]


def check_budget_path(res, *, rho, alpha, beta, d, T):
    spent = sum(Fraction(c.rho) for c in res.charges)
    # Exact: never above ρ; and everything is spent up to rounding of the last charge.
    assert spent <= Fraction(rho)
    assert float(Fraction(rho) - spent) <= 4 * np.spacing(rho)
    assert res.rho_spent <= rho
    diag = [c for c in res.charges if c.purpose.startswith("initialise")]
    assert len(diag) == d and all(c.rho == alpha * rho / d for c in diag)
    rounds = res.charges[d:]
    assert len(rounds) == 2 * res.n_rounds == 2 * len(res.history)
    for r, sel, meas in zip(res.history, rounds[0::2], rounds[1::2]):
        assert sel.purpose == "select" and meas.purpose == "measure"
        assert sel.rho == r.rho_select and meas.rho == r.rho_measure
    # Round budgets follow the schedule: start at β, (1−β) of (ρ−αρ)/T; ×2/×4
    # after annealing; the last round (and only it) is final.
    assert [r.final for r in res.history] == [False] * (res.n_rounds - 1) + [True]
    first = res.history[0]
    if not first.final:
        rho_round = float(Fraction(rho) - sum(Fraction(c.rho) for c in diag)) / T
        assert math.isclose(first.rho_select, beta * rho_round, rel_tol=1e-12)
    # Annealing fires exactly when the change is within the measurement's expected absolute
    # noise, E|N(0, σ²)| = sqrt(2/π) σ (computed here, not read from the estimator).
    for r in res.history:
        assert r.annealed == ((not r.final) and r.change <= math.sqrt(2.0 / math.pi) * r.sigma), r
    for prev, cur in zip(res.history, res.history[1:]):
        if cur.final:
            continue
        factor = (2.0, 4.0) if prev.annealed else (1.0, 1.0)
        assert cur.rho_select == prev.rho_select * factor[0]
        assert cur.rho_measure == prev.rho_measure * factor[1]
    return _check_final_round_rule(res, rho=rho, beta=beta, T=T, n_init=d)


def _check_final_round_rule(res, *, rho, beta, T, n_init):
    """The schedule turns final exactly when what is left (the ledger's remainder, rounded down) is below
    two rounds at the coming budgets, before round 1 as after each round; the final round selects with β
    of what is left and measures with all the rest. Returns how many decisions fell exactly on the
    boundary ``left == 2 (ρ_sel + ρ_meas)`` (not final: a strict comparison)."""
    ledger = ZCDPLedger(rho)
    for c in res.charges[:n_init]:
        ledger.charge(c.rho, c.purpose)
    share = ledger.remaining / T
    sel, meas = beta * share, (1.0 - beta) * share
    final = ledger.remaining < 2.0 * (sel + meas)
    on_boundary = int(ledger.remaining == 2.0 * (sel + meas))
    rounds = res.charges[n_init:]
    for r, c_sel, c_meas in zip(res.history, rounds[0::2], rounds[1::2]):
        assert r.final == final, r
        if final:
            assert c_sel.rho == beta * ledger.remaining
        ledger.charge(c_sel.rho, c_sel.purpose)
        if final:
            assert c_meas.rho == ledger.remaining
        ledger.charge(c_meas.rho, c_meas.purpose)
        if final:
            break
        if r.annealed:
            sel, meas = 2.0 * sel, 4.0 * meas
        on_boundary += ledger.remaining == 2.0 * (sel + meas)
        final = ledger.remaining < 2.0 * (sel + meas)
    assert final and res.n_rounds == len(res.history)
    return on_boundary


def test_ledger_exact_over_thousands_of_random_paths(jitter_solver):
    rng = np.random.default_rng(20261125)
    annealed_any = 0
    near = {"below": 0, "above": 0}  # rounds whose change is within 2x of the annealing threshold
    # 500 paths: 369 anneal and 182 / 238 rounds fall within 2x below / above the threshold (each
    # one a check that the threshold is not off by 2x); a doubled or halved threshold fails at once.
    for i in range(500):
        d = int(rng.integers(1, 6))
        n = int(rng.integers(2, 200))
        X = rng.uniform(-1, 1, size=(n, d))
        rho = float(10 ** rng.uniform(-5, 3))
        alpha, beta = rng.uniform(0.01, 0.99, size=2)
        max_rounds = None if rng.random() < 0.7 else int(rng.integers(1, 40))
        res = pace_ggm(
            X, rho=rho, alpha=float(alpha), beta=float(beta), max_rounds=max_rounds,
            solver=jitter_solver, use_components=bool(rng.random() < 0.5), random_state=i,
        )
        T = max_rounds if max_rounds is not None else max(1, d * (d - 1))
        check_budget_path(res, rho=rho, alpha=float(alpha), beta=float(beta), d=d, T=T)
        annealed_any += res.n_annealed > 0
        for r in res.history[:-1]:
            ratio = r.change / (math.sqrt(2.0 / math.pi) * r.sigma)
            near["below"] += 0.5 < ratio <= 1.0
            near["above"] += 1.0 < ratio <= 2.0
    # The sample really exercised annealing (and every path ends in a final round), with
    # rounds on both sides of the threshold close enough that a threshold off by 2x shows.
    assert annealed_any > 300
    assert near["below"] >= 20 and near["above"] >= 20, near


def _never_settling_solver():
    """A post-processing that moves every entry by 10³ (natural units) more at each update than at the
    last: far more than any σ, so no round anneals and the schedule is the plain one."""
    calls = itertools.count(1)

    def solve(p, *, init=None):
        return BlockSolution(W=np.where(p.lam > 0, p.y, 0.0) + 1e3 * next(calls))

    return SolverSpec(solve, max_entropy=False)


@pytest.mark.parametrize("T", [2, 4, 8])
def test_without_annealing_max_rounds_is_the_number_of_rounds(T):
    """β = 1/2, ρ and the shares powers of two: after T − 2 plain rounds what is left is exactly two rounds'
    budget, ``left == 2 (ρ_sel + ρ_meas)`` (before round 1 when T = 2), and the rule says not final yet,
    so T rounds are made, not T − 1."""
    SOLVERS["never_settles"] = _never_settling_solver()
    try:
        X = np.random.default_rng(5).uniform(-1, 1, size=(50, 2))
        res = pace_ggm(X, rho=1.0, alpha=0.5, beta=0.5, max_rounds=T, solver="never_settles",
                       use_components=False, random_state=0)
    finally:
        del SOLVERS["never_settles"]
    assert not any(r.annealed for r in res.history)
    assert res.n_rounds == T
    assert check_budget_path(res, rho=1.0, alpha=0.5, beta=0.5, d=2, T=T) == 1


def test_the_history_records_each_round_as_it_happened(small_data):
    d = small_data.shape[1]
    res = pace_ggm(small_data, rho=0.5, max_rounds=6, random_state=3)
    rounds = res.measurements[d:]
    assert res.rho == 0.5 and res.n_rounds == len(res.history) == len(rounds)
    assert [r.round for r in res.history] == list(range(1, res.n_rounds + 1))
    assert [r.entry for r in res.history] == [m.entry for m in rounds]
    assert [(r.sigma, r.rho_measure) for r in res.history] == [(m.sigma, m.rho) for m in rounds]
    for r in res.history:
        assert isinstance(r.solve_time, float) and r.solve_time >= 0.0
        assert type(r.n_iter) is int and type(r.max_iter) is int and type(r.converged) is bool
        assert r.n_solved in (0, 1) and 0 <= r.n_capped <= r.n_solved and r.max_iter == r.n_iter
    # the fit's solver time is the rounds' (no forced pairs here), added up as they ran
    assert res.solve_time == pytest.approx(sum(r.solve_time for r in res.history), rel=1e-12, abs=0.0)
    assert res.solve_time > max(r.solve_time for r in res.history)


def test_estimator_records_convergence_per_round():
    X = bounded_gaussian(2000, 5, seed=1)
    with pytest.warns(ConvergenceWarning):
        capped = PACEGGM(rho=1.0, solver="ipm", solver_options={"maxiter": 2, "stage_maxiter": 2},
                         max_rounds=4, random_state=0).fit(X)
    assert capped.converged_ is False and not capped.result_.converged
    assert not any(r.converged for r in capped.history_)


def test_estimator_summarises_solves_over_rounds():
    X = bounded_gaussian(2000, 5, seed=1)
    with pytest.warns(ConvergenceWarning):
        capped = PACEGGM(rho=1.0, solver="ipm", solver_options={"maxiter": 2, "stage_maxiter": 2},
                         max_rounds=4, random_state=0).fit(X)
    hist = capped.history_
    assert capped.n_solves_ == sum(r.n_solved for r in hist) >= len(hist)
    assert capped.n_capped_ == capped.n_solves_  # every solve hit the cap
    assert capped.max_iter_ == max(r.max_iter for r in hist) > 0
    fine = PACEGGM(rho=1.0, max_rounds=4, random_state=0).fit(X)
    assert fine.n_capped_ == 0 and fine.n_solves_ > 0


@pytest.mark.parametrize("seed", range(6))
def test_ledger_exact_with_real_solver(seed):
    rng = np.random.default_rng(seed)
    d = int(rng.integers(2, 5))
    X = bounded_gaussian(300, d, seed)
    rho = float(10 ** rng.uniform(-3, 2))
    res = pace_ggm(X, rho=rho, solver="ipm", random_state=seed)
    check_budget_path(res, rho=rho, alpha=0.3, beta=0.5, d=d, T=d * (d - 1))


def test_measurement_noise_scale_chi_square(jitter_solver):
    # Residuals of the released diagonal measurements, standardised by the σ the
    # mechanism reports, must be N(0, 1); σ itself must be Δ/sqrt(2ρ_diag/d).
    # 4,500 residuals: 30 diagonal measurements from each of 150 fits (the sample of 1,500 fits of
    # d = 3, in a tenth of the fits).
    d = 30
    X = bounded_gaussian(400, d, seed=9)
    truth = X.T @ X / len(X)
    rho, alpha = 0.05, 0.3
    sigma = gaussian_sigma(rho=alpha * rho / d, sensitivity=2.0 / len(X))
    z = []
    for seed in range(150):
        res = pace_ggm(X, rho=rho, alpha=alpha, max_rounds=1, solver=jitter_solver, random_state=seed)
        for m in res.measurements[:d]:
            assert m.sigma == sigma
            z.append((m.value - truth[m.entry]) / m.sigma)
    z = np.array(z)
    p = stats.chi2.cdf(float(np.sum(z**2)), df=z.size)
    assert 5e-4 < p < 1 - 5e-4
    assert stats.kstest(z, "norm").pvalue > 1e-3


def test_mechanisms_run_at_exactly_the_budget_the_ledger_charges(monkeypatch):
    """Each release uses the budget its ledger entry charges: the selection's logits are
    ``sqrt(8ρ)/(2Δ)·(score − max score)`` and the measurement's noise scale ``Δ/sqrt(2ρ)`` for
    the ρ of its charge, with Δ = 2B²/n (the formulas written out here, not read from the library)."""
    import paceggm.estimator as estimator_module
    from paceggm.privacy import mechanisms

    calls = []
    real_select, real_argmax, real_normal = (estimator_module.exponential_mechanism, mechanisms._gumbel_argmax,
                                             np.random.Generator.normal)

    def select(scores, **kw):
        calls.append(["select", np.array(scores, dtype=float)])
        return real_select(scores, **kw)

    def argmax(logits, rng):
        calls[-1].append(np.array(logits, dtype=float))
        return real_argmax(logits, rng)

    class Recording(np.random.Generator):
        def normal(self, loc=0.0, scale=1.0, size=None):
            calls.append(["measure", float(scale)])
            return real_normal(self, loc, scale, size)

    monkeypatch.setattr(estimator_module, "exponential_mechanism", select)
    monkeypatch.setattr(mechanisms, "_gumbel_argmax", argmax)
    for seed, (n, d, bound, rho) in enumerate([(300, 4, 1.0, 0.5), (1000, 6, 2.0, 5.0), (50, 3, 1.0, 0.01)]):
        X = bounded_gaussian(n, d, seed) * bound
        calls.clear()
        res = pace_ggm(X, rho=rho, bound=bound, random_state=Recording(np.random.PCG64(seed)))
        delta = 2.0 * bound**2 / n
        assert [c.purpose for c in res.charges] == [
            "initialise: diagonal" if i < d else ("select" if (i - d) % 2 == 0 else "measure")
            for i in range(len(res.charges))]
        assert [c[0] for c in calls] == ["measure" if c.purpose != "select" else "select" for c in res.charges]
        for charge, call, m in zip(res.charges, calls, _by_charge(res)):
            if call[0] == "select":
                _, scores, logits = call
                expected = math.sqrt(8.0 * charge.rho) / (2.0 * delta) * (scores - scores.max())
                np.testing.assert_allclose(logits, expected, rtol=1e-12, atol=0)
            else:
                sigma = delta / math.sqrt(2.0 * charge.rho)
                assert call[1] == pytest.approx(sigma, rel=1e-14)
                assert m.rho == charge.rho and m.sigma == pytest.approx(sigma, rel=1e-14)


def _by_charge(res):
    """The measurement each charge paid for (``None`` for a selection), in ledger order."""
    measurements = iter(res.measurements)
    return [None if c.purpose == "select" else next(measurements) for c in res.charges]


def test_measurement_noise_matches_the_charged_budget_in_every_round(jitter_solver):
    """The released values' noise, standardised by the σ of the ledger's charge, is N(0, 1) over
    the diagonal and the adaptive rounds alike (a mechanism run at another budget than charged
    moves the variance by that ratio)."""
    X = bounded_gaussian(400, 4, seed=2)
    truth = X.T @ X / len(X)
    delta = 2.0 / len(X)
    z = []
    for seed in range(300):
        res = pace_ggm(X, rho=0.05, max_rounds=6, solver=jitter_solver, random_state=seed)
        for charge, m in zip(res.charges, _by_charge(res)):
            if m is not None:
                z.append((m.value - truth[m.entry]) / (delta / math.sqrt(2.0 * charge.rho)))
    z = np.array(z)
    assert z.size > 1500
    p = stats.chi2.cdf(float(np.sum(z**2)), df=z.size)
    assert 5e-4 < p < 1 - 5e-4
    assert stats.kstest(z, "norm").pvalue > 1e-3


def test_huge_rho_recovers_empirical_covariance():
    X = bounded_gaussian(1000, 4, seed=11)
    truth = X.T @ X / len(X)
    res = pace_ggm(X, rho=1e12, solver="ipm", random_state=0)
    assert res.n_offdiagonal == 6
    np.testing.assert_allclose(res.covariance, truth, rtol=0, atol=1e-3 * np.abs(truth).max())


def test_same_random_state_same_output_and_different_states_differ(small_data):
    a = pace_ggm(small_data, rho=0.5, random_state=7)
    b = pace_ggm(small_data, rho=0.5, random_state=7)
    c = pace_ggm(small_data, rho=0.5, random_state=8)
    assert np.array_equal(a.covariance, b.covariance)
    assert a.measurements == b.measurements
    # Everything but the wall-clock solver time is identical.
    strip = lambda h: [dataclasses.replace(r, solve_time=0.0) for r in h]  # noqa: E731
    assert strip(a.history) == strip(b.history)
    assert not np.array_equal(a.covariance, c.covariance)


def test_estimate_is_post_processing_of_measurements(small_data):
    res = pace_ggm(small_data, rho=1.0, random_state=3)
    state = MeasuredEntries.from_measurements(small_data.shape[1], res.measurements)
    again = reconstruct(state.y, state.lam, solver=res.solver)
    # The default solver (Newton) warm-starts across rounds: a cold re-solve gives
    # the same completion to its convergence tolerance, not bit for bit.
    np.testing.assert_allclose(again.covariance, res.covariance, rtol=1e-10,
                               atol=1e-14 * np.abs(res.covariance).max())
    assert np.array_equal(state.pattern, res.pattern)


def test_estimator_attributes_and_params(small_data):
    est = PACEGGM(rho=0.3, alpha=0.2, random_state=0)
    assert est.get_params()["alpha"] == 0.2
    assert repr(est) == "PACEGGM(alpha=0.2, random_state=0, rho=0.3)"  # scikit-learn's repr: non-defaults
    est.fit(small_data)
    d = small_data.shape[1]
    assert est.covariance_.shape == (d, d)
    assert np.allclose(est.covariance_, est.covariance_.T)
    assert np.linalg.eigvalsh(est.covariance_).min() >= -1e-10
    assert est.rho_spent_ <= 0.3 and math.isclose(est.rho_spent_, 0.3, rel_tol=1e-12)
    assert est.n_rounds_ == len(est.history_) >= 1
    assert est.pattern_.shape == (d, d) and est.pattern_.diagonal().all()
    assert est.n_offdiagonal_ == int(np.tril(est.pattern_, -1).sum())
    assert len(est.ledger_) == d + 2 * est.n_rounds_
    assert est.solve_time_ >= 0
    with pytest.raises(ValueError, match="Invalid parameter 'gamma'"):
        est.set_params(gamma=1)


def test_single_column():
    X = np.random.default_rng(0).uniform(-1, 1, size=(50, 1))
    res = pace_ggm(X, rho=1.0, random_state=0)
    assert res.covariance.shape == (1, 1) and res.rho_spent <= 1.0


def test_bound_policies():
    X = np.array([[0.5, 2.0], [-0.5, -1.0], [0.1, 0.3]])
    with pytest.raises(ValueError, match="outside"):
        PACEGGM(rho=1.0).fit(X)
    clipped = PACEGGM(rho=1.0, bound_check="clip", random_state=0).fit(X)
    on_clipped_data = PACEGGM(rho=1.0, random_state=0).fit(np.clip(X, -1.0, 1.0))
    np.testing.assert_array_equal(clipped.covariance_, on_clipped_data.covariance_)
    with pytest.warns(PrivacyLeakWarning, match="waive"):
        PACEGGM(rho=1.0, bound_check="waive", random_state=0).fit(X)
    with pytest.raises(ValueError, match="bound_check"):
        PACEGGM(rho=1.0, bound_check="ignore").fit(X)
    assert PACEGGM(rho=1.0, bound=2.0, random_state=0).fit(X).rho_spent_ <= 1.0


GOOD = np.random.default_rng(0).uniform(-1, 1, size=(20, 3))


@pytest.mark.parametrize(
    "X, params, err, match",
    [
        (np.where(np.eye(20, 3) > 0, np.nan, GOOD), {}, ValueError, "NaN"),
        (np.where(np.eye(20, 3) > 0, np.inf, GOOD), {}, ValueError, "infinite"),
        (GOOD[:, 0], {}, ValueError, "2-D"),
        (np.empty((0, 3)), {}, ValueError, "empty"),
        (GOOD[:1], {}, ValueError, "at least 2 samples"),
        (np.array([["a", "b"], ["c", "d"]]), {}, TypeError, "numeric"),
        (GOOD, {"rho": 0.0}, ValueError, "rho"),
        (GOOD, {"rho": -1.0}, ValueError, "rho"),
        (GOOD, {"rho": float("nan")}, ValueError, "rho"),
        (GOOD, {"alpha": 0.0}, ValueError, "alpha"),
        (GOOD, {"alpha": 1.0}, ValueError, "alpha"),
        (GOOD, {"beta": 1.5}, ValueError, "beta"),
        (GOOD, {"beta": -0.1}, ValueError, "beta"),
        (GOOD, {"bound": 0.0}, ValueError, "bound"),
        (GOOD, {"bound": -1.0}, ValueError, "bound"),
        (GOOD, {"solver": "magic"}, ValueError, "unknown solver"),
        (GOOD, {"max_rounds": 0}, ValueError, "max_rounds"),
        (GOOD, {"random_state": "seed"}, TypeError, "random_state"),
    ],
)
def test_bad_input_raises_clear_error(X, params, err, match):
    kwargs = {"rho": 1.0, **params}
    with pytest.raises(err, match=match):
        pace_ggm(X, **kwargs)


def test_the_fit_s_reconstruction_options_reach_the_solver(monkeypatch):
    """use_components and solver_options are the reconstruction's, not dropped on the way."""
    import paceggm.estimator as estimator

    X = bounded_gaussian(500, 4, seed=3)
    # A continuation stopped at mu_min shows in the answer's mu (0.0, the exact limit, by default).
    assert pace_ggm(X, rho=2.0, solver="newton", random_state=0).mu == 0.0
    stopped = pace_ggm(X, rho=2.0, solver="newton", solver_options={"mu_min": 1e-3, "exact_limit": False},
                       random_state=0)
    assert stopped.mu > 0.0  # left above the limit (mu is reported on the data's scale)
    built = []

    class Recorder(estimator.IncrementalReconstruction):
        def __init__(self, *args, **kw):
            built.append(kw)
            super().__init__(*args, **kw)

    monkeypatch.setattr(estimator, "IncrementalReconstruction", Recorder)
    for use_components in (True, False):
        pace_ggm(X, rho=2.0, solver="newton", use_components=use_components, solver_options={"tol": 1e-10},
                 random_state=0)
    assert [(kw["use_components"], kw["solver_options"]) for kw in built] == [(True, {"tol": 1e-10}),
                                                                              (False, {"tol": 1e-10})]

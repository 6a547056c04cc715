"""The empirical privacy audit: sound bounds, and a test with the power to catch a broken mechanism."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from scipy.stats import binom, norm

from paceggm.bench.audit import (
    CASES,
    audit_case,
    audit_table,
    clopper_pearson,
    draw,
    epsilon_lower_bound,
    rho_lower_bound,
    threshold_audit,
)
from paceggm.bench.audit import __main__ as cli
from paceggm.bench.audit import cases as cases_module

# Draws per data set in the small audit: seconds, not minutes (a PACE-GGM fit costs ~1-3 ms). The
# round-loop mutants are caught with room at 800 draws (the selection's at 1500); the baselines whose correct release uses
# half its claim (SSP, GaussCov: a sqrt(2)-conservative sensitivity at d = 2) need more.
SMALL = {"pace_ggm": 300, "baseline_ssp_noise_sigma_half": 12_000, "baseline_gausscov_noise_sigma_half": 8000}
SMALL.update({c.name: 1500 if "select" in c.name else 800 for c in CASES if c.name.startswith("pace_ggm_") and c.broken})
SMALL_DEFAULT = 3000
# A correct mechanism has only to show no violation with some power (a lower bound above 0): fewer draws do.
# At these counts every correct case's bound is above 0, and so is it on 200 of 200 bootstrap resamples.
SMALL_CORRECT = 900


def test_clopper_pearson_known_values_and_symmetry():
    assert clopper_pearson(0, 10, level=0.95, side="upper") == pytest.approx(1 - 0.05 ** 0.1)
    assert clopper_pearson(10, 10, level=0.95, side="lower") == pytest.approx(0.05 ** 0.1)
    assert clopper_pearson(0, 10, level=0.95, side="lower") == 0.0
    assert clopper_pearson(10, 10, level=0.95, side="upper") == 1.0
    k = np.arange(0, 31)
    np.testing.assert_allclose(clopper_pearson(k, 30, level=0.9, side="lower"),
                               1 - clopper_pearson(30 - k, 30, level=0.9, side="upper"), atol=1e-12)
    # the defining property: at the bound, observing k or more (fewer) has probability 1 − level
    up = clopper_pearson(3, 40, level=0.95, side="upper")
    assert binom.cdf(3, 40, up) == pytest.approx(0.05, rel=1e-6)


def test_clopper_pearson_covers_at_least_its_level():
    rng = np.random.default_rng(0)
    p, n = 0.07, 200
    k = rng.binomial(n, p, size=4000)
    assert np.mean(clopper_pearson(k, n, level=0.95, side="upper") >= p) >= 0.95
    assert np.mean(clopper_pearson(k, n, level=0.95, side="lower") <= p) >= 0.95


@pytest.mark.parametrize("bad", [dict(level=1.0, side="upper"), dict(level=0.9, side="middle")])
def test_clopper_pearson_refuses_bad_arguments(bad):
    with pytest.raises(ValueError):
        clopper_pearson(1, 10, **bad)
    with pytest.raises(ValueError, match="0 <= k <= n"):
        clopper_pearson(11, 10, level=0.9, side="upper")


@pytest.mark.parametrize("mu", [0.5, 1.0, 2.0])
def test_rho_bound_of_the_exact_gaussian_tradeoff_never_exceeds_the_truth_and_is_tight(mu):
    # Gaussian mechanism with shift μ = Δ/σ is exactly μ²/2-zCDP; events {s > t}.
    t = np.linspace(-6.0, 30.0, 3601)
    bounds = rho_lower_bound(norm.sf(t - mu), norm.sf(t))
    assert np.all(bounds <= mu**2 / 2 * (1 + 1e-9))
    assert bounds.max() >= 0.9 * mu**2 / 2
    # pure DP: the Gaussian mechanism is not ε-DP for any ε, and the ε bound grows without limit
    assert epsilon_lower_bound(norm.sf(t - mu), norm.sf(t)).max() > 10 * mu


def test_epsilon_bound_of_the_exact_exponential_mechanism_never_exceeds_epsilon():
    eps, m = 1.0, 20
    p = math.exp(eps) / (math.exp(eps) + m - 1)  # candidate 0 up by Δ, the rest down by Δ
    assert epsilon_lower_bound(p, 1 / m) <= eps
    assert rho_lower_bound(p, 1 / m) <= eps**2 / 8
    assert rho_lower_bound(0.1, 0.2) == 0.0 and epsilon_lower_bound(0.1, 0.2) == 0.0


def test_threshold_audit_bound_holds_with_its_confidence():
    # ρ = 0.5; 40 independent audits at 95%: violations ~ Binomial(40, ≤ 0.05), P(> 6) < 0.3%.
    rng = np.random.default_rng(1)
    rhos = [threshold_audit(rng.normal(0, 1, 2000), rng.normal(1, 1, 2000)).rho for _ in range(40)]
    assert sum(r > 0.5 for r in rhos) <= 6
    assert np.median(rhos) > 0.1  # and it has power


def test_threshold_audit_finds_events_in_either_direction_and_on_either_side():
    rng = np.random.default_rng(2)
    a, b = rng.normal(0, 1, 4000), rng.normal(-3, 1, 4000)
    res = threshold_audit(a, b)
    assert res.rho > 1.0
    assert (res.event.startswith("s <=") and res.likelier_on == "D'") or \
           (res.event.startswith("s >") and res.likelier_on == "D")
    assert res.n_p == res.n_q == 2000


@pytest.mark.parametrize("kw, match", [
    (dict(metric="delta"), "metric"), (dict(calibration=1.0), "calibration"),
])
def test_threshold_audit_refuses_bad_arguments(kw, match):
    with pytest.raises(ValueError, match=match):
        threshold_audit(np.zeros(10), np.ones(10), **kw)
    with pytest.raises(ValueError, match="finite"):
        threshold_audit([0.0, 1.0, np.nan, 2.0], np.ones(10))


def test_draws_are_seeded_per_draw():
    case = next(c for c in CASES if c.name == "gaussian")
    np.testing.assert_array_equal(draw(case, 0, 10), draw(case, 0, 20)[:10])
    assert not np.array_equal(draw(case, 0, 10), draw(case, 0, 10, base_seed=1))
    assert not np.array_equal(draw(case, 0, 10), draw(case, 1, 10))


def test_mutations_are_undone_and_change_only_their_call_site():
    from paceggm import pace_ggm

    X = cases_module._measure_inputs()[0]
    before = pace_ggm(X, random_state=0, **cases_module._MEASURE_KW).measurements
    mutant = cases_module._mutant(cases_module._released_offdiagonal, "measure_sensitivity_half")
    mutant(X, np.random.default_rng(0))
    after = pace_ggm(X, random_state=0, **cases_module._MEASURE_KW).measurements
    assert [m.sigma for m in before] == [m.sigma for m in after]
    with cases_module._mutated(*cases_module.MUTATIONS["measure_sensitivity_half"]):
        halved = pace_ggm(X, random_state=0, **cases_module._MEASURE_KW).measurements
    assert [m.sigma for m in halved] == [m.sigma / 2 for m in before]


def test_bootstrap_power_is_a_share():
    case = next(c for c in CASES if c.name == "gaussian_half_noise")
    row = audit_case(case, 1500, power_reps=50)  # a share of 50 resamples: the tables' 200 would add seconds
    assert 0.5 < row.power <= 1.0


def test_neighbours_differ_in_exactly_one_record():
    for case in CASES:
        D, D_prime = case.inputs
        if case.name.startswith("exponential"):  # score vectors: each score moves by at most Δ = 2B²/n
            delta = 2.0 * cases_module._BOUND**2 / cases_module._N_ENTRY  # the entry sensitivity, written out
            assert np.max(np.abs(D - D_prime)) <= delta + 1e-15
            continue
        assert D.shape == D_prime.shape and np.abs(D).max() <= 1.0 and np.abs(D_prime).max() <= 1.0
        assert np.count_nonzero(np.any(D != D_prime, axis=1)) == 1, case.name


BROKEN = {"gaussian_half_noise", "exponential_half_sensitivity", "pace_ggm_measure_sensitivity_half",
          "pace_ggm_noise_sigma_half", "pace_ggm_select_sensitivity_half", "pace_ggm_select_epsilon_double",
          "baseline_ssp_noise_sigma_half", "baseline_ssptight_noise_sigma_half", "baseline_gausscov_noise_sigma_half"}
CORRECT = {"gaussian", "exponential", "pace_ggm", "adaptivecov_threshold", "pace_ggm_measure", "pace_ggm_select",
           "baseline_ssp", "baseline_ssptight", "baseline_gausscov"}


def test_the_small_audit_covers_every_mechanism_and_broken_control():
    # every factor-2 mutation of the round loop's calibrations, and of the audited baselines' noise
    assert {c.name for c in CASES if c.broken} == BROKEN
    assert {c.name for c in CASES if not c.broken} == CORRECT


# One test per case (not one fixture for all), so that parallel workers share the audit's draws.
@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_small_audit_finds_no_violation_and_catches_every_broken_control(case):
    draws = SMALL.get(case.name, SMALL_DEFAULT if case.broken else SMALL_CORRECT)
    row = audit_case(case, draws, power_reps=0)  # the power is tested above
    assert row.ok, (case.name, row.bound)
    if case.broken:
        assert row.verdict == "caught"
    else:
        assert row.bound.rho <= case.rho
        assert row.bound.rho > 0  # the test has power: the mechanism is told apart from its neighbour


@pytest.mark.parametrize("kw", ["_MEASURE_KW", "_SELECT_KW"])
def test_the_audited_statistics_do_not_depend_on_the_solver(kw):
    """The measurement and selection cases run a cheap solver: their draws are those of the default one."""
    from paceggm import pace_ggm

    fit_kw = {k: v for k, v in getattr(cases_module, kw).items() if k != "solver"}
    inputs = cases_module._measure_inputs() if kw == "_MEASURE_KW" else cases_module._select_inputs()
    for X in inputs:
        for seed in range(25):
            fast = pace_ggm(X, random_state=seed, solver=cases_module._AUDIT_SOLVER, **fit_kw)
            default = pace_ggm(X, random_state=seed, **fit_kw)
            assert fast.measurements == default.measurements
            assert [r.entry for r in fast.history] == [r.entry for r in default.history]


def test_audit_table_has_a_row_per_case():
    rows = [audit_case(c, 40, power_reps=0) for c in CASES]  # the table's shape, not the verdicts
    table = audit_table(rows)
    assert list(table.data["case"]) == [c.name for c in CASES]
    assert list(table.data["ok"]) == [r.ok for r in rows]
    assert set(table.text["result"]) <= {"no violation found", "caught", "VIOLATION", "NOT CAUGHT"}


def test_cli_writes_tables_and_fails_on_a_violation(tmp_path, monkeypatch):
    out = tmp_path / "tables"
    # The verdicts, not the bootstrap power (test_bootstrap_power_is_a_share): 20 resamples, not 200.
    assert cli.main(["--draws", "1500", "--cases", "gaussian,gaussian_half_noise", "--power-reps", "20",
                     "--out", str(out)]) == 0
    md = (out / "audit.md").read_text()
    assert "caught" in md and "no violation found" in md and (out / "audit.tex").is_file()
    assert "share of 20 audits on resamples" in md
    # The half-noise mechanism presented as correct: the audit must report it and exit non-zero.
    disguised = tuple(dataclasses.replace(c, broken=False) if c.name == "gaussian_half_noise" else c for c in CASES)
    monkeypatch.setattr(cli, "CASES", disguised)
    assert cli.main(["--draws", "1500", "--cases", "gaussian_half_noise", "--power-reps", "0",
                     "--out", str(out)]) == 1
    md = (out / "audit.md").read_text()
    assert "VIOLATION" in md and "| not estimated |" in md
    with pytest.raises(SystemExit):
        cli.main(["--cases", "nonsense"])
    with pytest.raises(SystemExit):
        cli.main(["--power-reps", "-1"])


def test_cli_fails_when_the_library_itself_is_mutated(tmp_path, monkeypatch):
    # The mutation made in paceggm/estimator.py itself (not a broken control): the correct case
    # that concentrates the budget on the measurement now shows a loss above the claim.
    import paceggm.estimator

    halved = cases_module._halve_sensitivity(paceggm.estimator.gaussian_mechanism)
    monkeypatch.setattr(paceggm.estimator, "gaussian_mechanism", halved)
    assert cli.main(["--draws", "800", "--cases", "pace_ggm_measure", "--power-reps", "0",
                     "--out", str(tmp_path)]) == 1
    assert "VIOLATION" in (tmp_path / "audit.md").read_text()

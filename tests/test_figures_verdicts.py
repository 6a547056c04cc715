"""Verdicts on C1–C13 from synthetic results whose verdict is known by construction."""

import numpy as np
import pytest

from paceggm.bench.figures import verdicts as V
from paceggm.bench.figures.results import validate_results
from paceggm.bench.figures.synthetic import synthetic_results

SMALL = dict(fail_rate=0.0, missing_rate=0.0, trials=3)


def _table(experiment, **kwargs):
    return validate_results(synthetic_results(experiment, **{**SMALL, **kwargs}))


def _set(df, column, value_of):
    """``df`` with ``column`` replaced by ``value_of(row)`` row by row."""
    return df.assign(**{column: [value_of(r) for r in df.itertuples()]})


def test_every_claim_is_judged_once_and_missing_recipes_are_not_testable():
    found = V.verdicts({})
    assert [v.claim for v in found] == [f"C{i}" for i in range(1, 14)]
    assert {v.verdict for v in found} == {V.UNTESTABLE}
    assert all("no " in v.evidence for v in found)
    table = V.verdict_table(found)
    assert "not testable here 13" in table.caption and list(table.text.index) == [v.claim for v in found]


@pytest.mark.parametrize("pace, verdict", [(0.1, V.SUPPORTED), (10.0, V.CONTRADICTED)])
def test_c1_counts_the_cells_paceggm_wins_against_every_method(pace, verdict):
    main = _table("main", datasets=("adult", "ibm"), rhos=(0.01, 1.0))
    for m in V.ERRORS:
        main = _set(main, m, lambda r, m=m: pace if r.method == "paceggm" else 1.0 + 0.01 * r.trial)
    assert V.c1({"main": main}).verdict == verdict


@pytest.mark.parametrize("diag, verdict", [(10.0, V.SUPPORTED), (0.01, V.CONTRADICTED)])
def test_c6_diagonal_beating_paceggm_on_dense_data_contradicts(diag, verdict):
    main = _table("main", datasets=("life_expectancy", "communities_crime"), rhos=(1e-4, 1.0))
    main = _set(main, "mahalanobis", lambda r: diag if r.method == "diagonal" else 1.0)
    v = V.c6({"main": main})
    assert v.verdict == verdict
    assert ("communities_crime" in v.evidence) == (verdict == V.CONTRADICTED)


def test_c3_a_drop_in_the_measured_count_is_found():
    meas = _table("measurements", datasets=("adult", "ibm"))
    rising = _set(meas, "n_measured_offdiag", lambda r: int(round(2 + np.log10(r.rho) + 4)))
    assert V.c3({"measurements": rising}).verdict == V.SUPPORTED
    falling = _set(rising, "n_measured_offdiag",
                   lambda r: 1 if (r.dataset == "ibm" and r.rho == 10.0) else r.n_measured_offdiag)
    v = V.c3({"measurements": falling})
    assert v.verdict == V.PARTLY and "ibm 2→10" in v.evidence


@pytest.mark.parametrize("slower_off, same_error, verdict", [(True, True, V.SUPPORTED), (False, True, V.CONTRADICTED),
                                                             (True, False, V.CONTRADICTED)])
def test_c12_components_need_identical_errors_and_less_time(slower_off, same_error, verdict):
    comp = _table("components", rhos=(0.01, 1.0))
    comp = _set(comp, "solve_time", lambda r: 1.0 if r.p_use_components == slower_off else 2.0)
    if not same_error:
        comp = _set(comp, "frobenius", lambda r: 1.0 if r.p_use_components else 1.1)
    else:
        comp = _set(comp, "frobenius", lambda r: 1.0)
    comp = _set(comp, "mahalanobis", lambda r: 1.0)
    assert V.c12({"components": comp}).verdict == verdict


def test_c9_and_c8_read_the_winning_pairs():
    hp = _table("hyperparameters", rhos=(1e-3, 0.1, 1.0))
    hp = hp[hp["method"] == "paceggm"]

    def err(r):  # (0.5, 0.5) wins at small rho, (0.3, 0.5) from 0.1 on
        best = (0.5, 0.5) if r.rho <= 1e-3 else (0.3, 0.5)
        return 1.0 if (r.p_alpha, r.p_beta) == best else 2.0
    for m in V.ERRORS:
        hp = _set(hp, m, err)
    tables = {"hyperparameters": hp}
    assert V.c8(tables).verdict == V.SUPPORTED
    assert V.c9(tables).verdict == V.SUPPORTED
    assert V.c10(tables).verdict == V.CONTRADICTED  # worst/best = 2 everywhere


def test_parts_about_online_only_data_sets_are_named_not_testable():
    meas = _table("measurements", datasets=("adult", "ibm", "communities_crime", "madeline"), rhos=(0.1, 10.0))
    v = V.c4({"measurements": meas})
    assert v.verdict != V.UNTESTABLE and "madeline" in v.untestable
    assert "madeline" in V.verdict_table([v]).text.loc["C4", "not testable here"]


@pytest.mark.parametrize("ipm_factor, verdict", [(1.2, V.SUPPORTED), (3.0, V.PARTLY)])
def test_c11_judges_ipm_stability_against_the_exact_solver(ipm_factor, verdict):
    solver = _table("solver", rhos=(0.01, 1.0))
    solver = _set(solver, "converged", lambda r: False)  # IPM's default budget caps every solve
    # (a) PGD-0 = IPM; (b) PGD-1 worse and slower, more so with d; (c) IPM ÷ Newton = ipm_factor.
    for m in ("mahalanobis", "frobenius"):
        solver = _set(solver, m, lambda r: {"ipm": ipm_factor, "pgd0": ipm_factor,
                                            "pgd1": ipm_factor * (1.0 + 0.01 * r.d)}.get(r.p_solver, 1.0))
    # (d) IPM faster than PGD-0
    solver = _set(solver, "solve_time", lambda r: {"pgd1": 2.0, "ipm": 0.5}.get(r.p_solver, 1.0))
    v = V.c11({"solver": solver})
    assert v.verdict == verdict
    assert ("worst " + V.fmt_sig(ipm_factor)) in v.evidence and "IPM converged in 0 of" in v.evidence
    # Without Newton rows, convergence decides (c): never converged, so partly whatever the errors.
    no_newton = V.c11({"solver": solver[solver["p_solver"] != "newton"]})
    assert "worst" not in no_newton.evidence and no_newton.verdict == V.PARTLY

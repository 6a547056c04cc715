"""The claims tables (winners, gain over SSP) on results whose answers are known."""

import numpy as np
import pandas as pd
import pytest

from paceggm.bench.figures.claims import gain_table, paired_ratio_table, ratio_table, spearman, winners_table
from paceggm.bench.figures.results import RESULT_COLUMNS

DIMS = {"a": 5, "b": 20, "c": 80}


def _results(errors: dict, trials=3, failed=()) -> pd.DataFrame:
    """Rows with ``mahalanobis`` = errors[(dataset, method, rho)] · (1 + small trial noise)."""
    rows = []
    for (ds, method, rho), value in errors.items():
        for t in range(trials):
            ok = (ds, method, rho, t) not in failed
            row = dict.fromkeys(RESULT_COLUMNS)
            row.update(dataset=ds, d=DIMS[ds], n=100, method=method, variant=method, rho=rho, trial=t,
                       preprocessing="paper", status="ok" if ok else "failed",
                       mahalanobis=value * (1 + 0.01 * (t - 1)) if ok else np.nan,
                       frobenius=value if ok else np.nan)
            rows.append(row)
    return pd.DataFrame(rows, columns=list(RESULT_COLUMNS))


def test_winner_is_the_smallest_mean_and_the_ratio_is_to_the_runner_up():
    errors = {("a", "paceggm", 0.1): 1.0, ("a", "ssp", 0.1): 4.0, ("a", "adaptivecov", 0.1): 2.0,
              ("b", "paceggm", 0.1): 3.0, ("b", "ssp", 0.1): 1.5, ("b", "adaptivecov", 0.1): 6.0}
    t = winners_table(_results(errors), "mahalanobis")
    data = t.data.set_index("dataset")
    assert data.loc["a", "winner"] == "paceggm" and data.loc["a", "runner_up"] == "adaptivecov"
    assert data.loc["a", "ratio"] == pytest.approx(0.5)
    assert data.loc["b", "winner"] == "ssp" and data.loc["b", "ratio"] == pytest.approx(0.5)
    assert t.text.loc["a (d=5)", "ρ=0.1"].endswith("(0.50)")


def test_failed_trials_are_left_out_and_cells_without_results_stay_empty():
    errors = {("a", "paceggm", 1.0): 1.0, ("a", "ssp", 1.0): 2.0, ("b", "paceggm", 1.0): 1.0}
    failed = {("a", "ssp", 1.0, t) for t in range(3)} | {("b", "paceggm", 1.0, 0)}
    w = winners_table(_results(errors, failed=failed), "mahalanobis")
    assert w.data.set_index("dataset").loc["a", "n_methods"] == 1
    g = gain_table(_results(errors, failed=failed), "mahalanobis")
    assert g.data.empty and (g.text == "—").all().all()


def test_gain_is_the_reference_error_over_the_methods_and_its_trend_with_d():
    # gain 2, 4, 8 as d grows at rho=0.1; 3, 3, 3 at rho=1
    errors = {}
    for ds, gain in zip("abc", (2.0, 4.0, 8.0)):
        errors[(ds, "paceggm", 0.1)], errors[(ds, "ssp", 0.1)] = 1.0, gain
        errors[(ds, "paceggm", 1.0)], errors[(ds, "ssp", 1.0)] = 1.0, 3.0
    t = gain_table(_results(errors, trials=1), "frobenius")
    got = t.data.set_index(["dataset", "rho"])["gain"]
    assert got[("c", 0.1)] == pytest.approx(8.0) and got[("b", 1.0)] == pytest.approx(3.0)
    assert t.text.loc["median", "ρ=0.1"] == "4.00"
    assert t.text.loc["Spearman(d, gain)", "ρ=0.1"] == "+1.00"
    assert t.text.loc["Spearman(d, gain)", "ρ=1"] == "—"  # constant gain: no rank correlation
    assert list(t.text.index[:3]) == ["a (d=5)", "b (d=20)", "c (d=80)"]


def test_spearman_matches_known_values():
    assert spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    assert spearman([1, 2, 3, 4, 5], [2, 1, 4, 3, 5]) == pytest.approx(0.8)
    assert np.isnan(spearman([1, 2], [1, 2]))


def _solver_results(values: dict) -> pd.DataFrame:
    """values[(dataset, solver, rho)] = (mahalanobis per trial, solve_time per trial)."""
    rows = []
    for (ds, solver, rho), (errs, times) in values.items():
        for t, (e, s) in enumerate(zip(errs, times)):
            row = dict.fromkeys(RESULT_COLUMNS)
            row.update(dataset=ds, d=DIMS[ds], n=100, method="paceggm", variant=f"paceggm[solver={solver}]",
                       solver=solver, rho=rho, trial=t, preprocessing="paper", status="ok",
                       mahalanobis=e, frobenius=e, solve_time=s)
            rows.append(row)
    return pd.DataFrame(rows, columns=list(RESULT_COLUMNS))


def test_ratio_to_the_reference_solver_is_the_median_over_data_sets():
    values = {("a", "newton", 1.0): ([1.0, 1.0], [0.1, 0.1]), ("a", "ipm", 1.0): ([1.0, 1.2], [1.0, 3.0]),
              ("b", "newton", 1.0): ([2.0, 2.0], [0.2, 0.2]), ("b", "ipm", 1.0): ([3.0, 3.0], [2.0, 2.0]),
              ("c", "newton", 1.0): ([1.0, 1.0], [1.0, 1.0]), ("c", "ipm", 1.0): ([5.0, 5.0], [4.0, 4.0])}
    t = ratio_table(_solver_results(values), ["mahalanobis", "solve_time"],
                    reference="paceggm[solver=newton]", name="r")
    got = t.data.set_index(["metric", "dataset"])["ratio"]
    assert got[("mahalanobis", "a")] == pytest.approx(1.1) and got[("solve_time", "a")] == pytest.approx(20.0)
    assert got[("mahalanobis", "b")] == pytest.approx(1.5) and got[("mahalanobis", "c")] == pytest.approx(5.0)
    ipm_row = [i for i in t.text.index if i.startswith("mahalanobis")]
    assert len(ipm_row) == 1 and t.text.loc[ipm_row[0], "ρ=1"] == "1.50"  # median of 1.1, 1.5, 5
    time_row = [i for i in t.text.index if i.startswith("solve_time")][0]
    assert t.text.loc[time_row, "ρ=1"] == "10.0"  # median of 20, 10, 4


def test_paired_ratio_pairs_trials_of_the_same_seed():
    values = {("a", "newton", 1.0): ([1.0, 2.0, 4.0], [1.0, 1.0, 1.0]),
              ("a", "pgd0", 1.0): ([2.0, 2.0, 2.0], [1.0, 1.0, 1.0])}
    t = paired_ratio_table(_solver_results(values), ["mahalanobis"],
                           reference="paceggm[solver=newton]", name="p")
    row = t.data.iloc[0]
    assert row["pairs"] == 3 and row["median"] == pytest.approx(1.0)
    assert row["min"] == pytest.approx(0.5) and row["max"] == pytest.approx(2.0)

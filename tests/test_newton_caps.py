"""The exact solver's trials that an iteration cap ended, counted per recipe (printed by ``make verify``)."""

import glob
from pathlib import Path

import pandas as pd

from paceggm.bench.summary import capped_exact_line, capped_exact_trials

ROOT = Path(__file__).resolve().parent.parent


def test_capped_trials_are_counted_per_recipe_among_the_exact_solver_s_ok_rows():
    df = pd.DataFrame({
        "experiment": ["a", "a", "a", "b", "b", "b"],
        "p_solver": ["newton", "newton", "ipm", "newton", "newton", "newton"],
        "status": ["ok", "ok", "ok", "ok", "failed", "ok"],
        "converged": pd.array([False, True, False, True, False, pd.NA], dtype="boolean"),
        "n_capped_solves": pd.array([1, 0, 3, 2, 1, pd.NA], dtype="Int64"),
    })
    counts = capped_exact_trials(df)
    assert counts.to_dict("index") == {"a": {"capped": 1, "trials": 2}, "b": {"capped": 1, "trials": 1}}
    assert capped_exact_line(df).endswith("2 of 3 (a 1 of 2; b 1 of 1)")
    assert capped_exact_line(df.drop(columns="converged")) == ""  # counts not recorded: nothing said


def test_the_committed_results_count_17_capped_newton_trials():
    table = pd.concat([pd.read_parquet(f) for f in sorted(glob.glob(str(ROOT / "figures/results/*/results.parquet")))],
                      ignore_index=True)
    counts = capped_exact_trials(table)
    assert int(counts["capped"].sum()) == 17 and int(counts["trials"].sum()) == 6545
    assert counts.loc["hyperparameters", "capped"] == 6 and counts.loc["regression", "capped"] == 0

"""Results say whether each cell's privacy guarantee holds and whether its solver converged."""

from pathlib import Path

import pandas as pd

from paceggm.bench.cells import expand
from paceggm.bench.collect import collect
from paceggm.bench.config import compose_config, to_plain
from paceggm.bench.figures.artifacts import ARTIFACTS
from paceggm.bench.figures.build import build_all, guarantee_note
from paceggm.bench.figures.config import FiguresConfig
from paceggm.bench.figures.report import write_report
from paceggm.bench.figures.results import validate_results
from paceggm.bench.runner import run_sweep, store_for

REPO = Path(__file__).resolve().parents[1]
BASE = ["experiment=demo", "method=[paceggm,ssp]", "datasets=[syn1]", "rho=[1.0]", "trials=1",
        "loader=bench_loaders:small_loader", "progress=false", "backend.n_jobs=1"]


def _sweep(tmp_path, *overrides):
    cfg = to_plain(compose_config([*BASE, f"runs_dir={tmp_path}", *overrides]))
    run_sweep(cfg)
    return collect(store_for(cfg), expected=expand(cfg))[0]


def test_new_rows_record_the_guarantee_and_convergence(tmp_path):
    paper = _sweep(tmp_path / "paper", "preprocessing=paper")
    strict = _sweep(tmp_path / "strict", "preprocessing=strict", "bound_check=clip")
    assert (paper["status"] == "ok").all() and (strict["status"] == "ok").all()
    assert paper["guarantee_holds"].eq(False).all()  # the published setting waives the bound
    assert strict["guarantee_holds"].eq(True).all()
    pace = paper[paper["method"] == "paceggm"]
    assert pace["converged"].eq(True).all()
    assert paper.loc[paper["method"] == "ssp", "converged"].isna().all()  # no solver
    assert (pace["n_solves"] >= pace["n_rounds"]).all() and pace["n_capped_solves"].eq(0).all()
    assert (pace["max_solve_iter"] > 0).all()
    assert paper.loc[paper["method"] == "ssp", ["n_solves", "n_capped_solves", "max_solve_iter"]].isna().all().all()
    capped = _sweep(tmp_path / "capped", "preprocessing=paper", "method=[paceggm]",
                    "+method.paceggm.params.solver_options={maxiter:2}", "method.paceggm.params.solver=pgd0")
    assert capped["converged"].eq(False).all()
    assert ((capped["n_capped_solves"] > 0) & (capped["n_capped_solves"] <= capped["n_solves"])).all()
    assert capped["max_solve_iter"].eq(2).all()


def test_old_tables_get_the_guarantee_from_their_preprocessing():
    for experiment, holds in (("main", False), ("main_strict", True)):
        raw = pd.read_parquet(REPO / "figures" / "results" / experiment / "results.parquet")
        # a table written before these columns existed
        raw = raw.drop(columns=["guarantee_holds", "converged", "n_solves", "n_capped_solves", "max_solve_iter"],
                       errors="ignore")
        df = validate_results(raw)
        assert df["guarantee_holds"].eq(holds).all() and df["converged"].isna().all()
        assert df[["n_solves", "n_capped_solves", "max_solve_iter"]].isna().all().all()


def test_figures_of_the_published_setting_say_the_guarantee_does_not_hold(tmp_path):
    runs = tmp_path / "runs"
    for experiment in ("main", "main_strict"):
        (runs / experiment).mkdir(parents=True)
        # The committed rows of two data sets: the guarantee is a property of each row, and drawing
        # every data set's panels would only make the test slower.
        rows = pd.read_parquet(REPO / "figures" / "results" / experiment / "results.parquet")
        rows[rows["dataset"].isin(["adult", "ibm"])].to_parquet(runs / experiment / "results.parquet")
    # The artifacts that carry the guarantee line it checks; the rest of the build is other tests' business.
    shown = {"main_comparison", "main_comparison_strict", "claims", "claims_strict"}
    log = build_all(runs, tmp_path / "out", FiguresConfig(formats=("png",)),
                    artifacts=[spec for spec in ARTIFACTS if spec.name in shown])
    write_report(log)
    tmp_path = tmp_path / "out"
    by_name = {a.name: a for a in log.artifacts}
    assert "does not hold" in by_name["main_comparison"].guarantee
    assert "holds in every cell" in by_name["main_comparison_strict"].guarantee
    assert "does not hold" in (tmp_path / "tables" / "winners_mahalanobis.tex").read_text().splitlines()[0]
    assert "holds in every" in (tmp_path / "tables" / "winners_mahalanobis_strict.tex").read_text().splitlines()[0]
    assert "does not hold" in (tmp_path / "REPORT.md").read_text()


def test_guarantee_note_counts_mixed_tables():
    rows = pd.DataFrame({"guarantee_holds": pd.array([True, False, True], dtype="boolean")})
    assert guarantee_note(rows) == "Privacy: the guarantee does not hold in 1 of the 3 trials shown (bound check waived)."
    assert guarantee_note(rows.iloc[:0]) == ""


def test_rows_from_before_the_column_are_derived_and_recorded_values_kept():
    from paceggm.bench.figures.results import _with_guarantee_columns

    df = pd.DataFrame({"preprocessing": ["paper", "strict", "strict", "paper"],
                       "guarantee_holds": [None, None, False, True]})  # a store resumed across the change
    assert _with_guarantee_columns(df)["guarantee_holds"].tolist() == [False, True, False, True]

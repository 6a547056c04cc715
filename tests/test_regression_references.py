"""The regression figure's reference lines: predicting 0 and non-private least squares on the harness's splits."""

import pandas as pd

from paceggm.bench import regression_references as refs
from paceggm.bench.figures.__main__ import main as figures_cli
from paceggm.bench.figures.synthetic import write_synthetic_store

from bench_loaders import small_loader


def test_references_use_the_harness_splits_and_least_squares_is_the_best_linear_fit():
    got = refs.reference_mses(["bc"], [0, 1], loader=small_loader)
    assert list(got.columns) == list(refs.COLUMNS) and len(got) == 2
    # least squares on the training rows beats predicting 0 on held-out rows of this data
    assert (got["ols"] < got["null"]).all()


def test_the_regression_figure_draws_the_references_when_they_are_there(tmp_path):
    runs, out = tmp_path / "runs", tmp_path / "figures"
    write_synthetic_store(runs, experiments=["regression"], datasets=("pol", "ibm"), rhos=(0.1, 1.0), trials=2)
    assert figures_cli(["--runs", str(runs), "--out", str(out), "--formats", "png"]) == 0
    without = (out / "REPORT.md").read_text(encoding="utf-8")
    assert "no reference lines" in without
    pd.DataFrame(dict(dataset=["pol", "ibm"], preprocessing="paper", trial=0, n_test=10, null=[0.7, 0.23],
                      ols=[0.37, 0.02])).to_csv(runs / "regression" / "references.csv", index=False)
    png = (out / "regression.png").read_bytes()
    assert figures_cli(["--runs", str(runs), "--out", str(out), "--formats", "png"]) == 0
    assert "predicting 0 and of non-private least squares" in (out / "REPORT.md").read_text(encoding="utf-8")
    assert (out / "regression.png").read_bytes() != png

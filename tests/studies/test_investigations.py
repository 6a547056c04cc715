"""The investigations module (REPRODUCTION.md §2, §8): its tables' shape, and ratios that are the MSEs' own ratios."""

import numpy as np
import pandas as pd
import pytest

from paceggm.baselines import AdaSSP, PACEGGMRegression
from paceggm.bench.execute import _split
from paceggm.bench.seeds import data_seed, method_seed, seed_sequence
from studies import investigations as inv

from bench_loaders import small_loader

# the small data exceed the declared bound as paper data do; the harness waives it knowingly
pytestmark = pytest.mark.filterwarnings("ignore:bound_check='waive'")
RHOS = (0.1, 1.0)
TRIALS = 2


@pytest.fixture(scope="module")
def gap():
    return inv.regression_gap(["bc"], RHOS, TRIALS, loader=small_loader)


def test_regression_gap_rows_and_columns(gap):
    assert len(gap) == len(RHOS) * TRIALS
    assert list(gap.columns[:4]) == ["dataset", "rho", "trial", "null"]
    assert set(inv.REGRESSION_VARIANTS) <= set(gap.columns)
    assert np.all(np.isfinite(gap[list(inv.REGRESSION_VARIANTS)].to_numpy()))
    d = small_loader("bc", preprocessing="paper").X.shape[1] - 1
    assert gap["y_row_measured"].between(0, d).all()
    assert gap["y_row_measured_full_rho"].between(0, d).all()


def test_ratio_is_pace_mse_over_adassp_mse_refitted_independently(gap):
    # refit both methods as the harness's regression cells do, so a wrong seed, split or
    # ratio orientation in the module shows up as a mismatch
    ds = small_loader("bc", preprocessing="paper")
    X, y = ds.features_and_target()
    mse = {"paceggm": {}, "adassp": {}}
    for rho in RHOS:
        for t in range(TRIALS):
            train, test = _split(len(y), 0.2, data_seed(0, "bc", t))
            seed = method_seed(0, "bc", t, "paceggm_regression", rho)
            for key, cls in (("paceggm", PACEGGMRegression), ("adassp", AdaSSP)):
                est = cls(rho, bound_check="waive", random_state=seed_sequence(seed)).fit(X[train], y[train])
                mse[key][rho, t] = float(np.mean((est.predict(X[test]) - y[test]) ** 2))
    ratios = inv.regression_gap_ratios(gap)
    assert list(ratios.index.names) == ["dataset", "rho"]
    assert len(ratios) == len(RHOS)
    for rho in RHOS:
        expected = (np.mean([mse["paceggm"][rho, t] for t in range(TRIALS)])
                    / np.mean([mse["adassp"][rho, t] for t in range(TRIALS)]))
        assert ratios.loc[("bc", rho), "paceggm"] == pytest.approx(expected, rel=1e-12)
        assert ratios.loc[("bc", rho), "adassp"] == pytest.approx(1.0)


def test_summary_counts_the_cells_below_adassp():
    ratios = pd.DataFrame({"adassp": 1.0, "adassp_p0.5": [0.9, 0.95, 1.1], "paceggm": [1.2, 0.8, 1.0],
                           "paceggm_full_rho_no_ridge": [2.0, 3.0, 0.5], "null": [1.5, 1.4, 1.3]})
    summary = inv.regression_gap_summary(ratios)
    assert summary.loc["adassp_p0.5", "better"] == 2
    assert summary.loc["paceggm", "better"] == 1
    assert summary.loc["paceggm_full_rho_no_ridge", "median"] == 2.0
    assert summary.loc["null", "max"] == 1.5
    assert "adassp" not in summary.index


def test_cli_prints_both_tables(capsys):
    assert inv.main(["regression-gap", "--datasets", "bc", "--rhos", "1", "--trials", "1",
                     "--loader", "bench_loaders:small_loader"]) == 0
    out = capsys.readouterr().out
    assert "paceggm_full_rho_no_ridge" in out and "median" in out


def test_the_regression_gap_uses_the_reference_lines_splits():
    """The same split as the regression figure's references (the harness's data_seed): the same null MSE."""
    from paceggm.bench import regression_references as refs

    got = refs.reference_mses(["bc"], [0, 1], loader=small_loader)
    same = inv.regression_gap(["bc"], [1.0], 2, loader=small_loader)
    assert np.allclose(got["null"], same["null"], rtol=1e-12)

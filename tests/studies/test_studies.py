"""The studies (studies/): each is one command on a tiny grid of the test loader's data, and its arithmetic."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from studies import forced_target, scale_sweep

LOADER = "loader=bench_loaders:small_loader"


def test_scale_sweep_runs_its_grid_and_sets_it_beside_a_published_table(tmp_path, capsys):
    published = tmp_path / "t3.csv"
    pd.DataFrame({"dataset": ["syn1", "syn1"], "d_printed": [6, 6], "rho": [0.1, 1.0], "diagonal": [6, 6],
                  "offdiagonal_mean": [2.0, 5.0]}).to_csv(published, index=False)
    args = ["--scales", "0.5,1,2", "--datasets", "syn1", "--rhos", "0.1,1", "--trials", "3",
            "--runs-dir", str(tmp_path / "runs"), "--out-dir", str(tmp_path / "out"), "--published", str(published),
            "--committed", "", "--set", LOADER]
    assert scale_sweep.main(args) == 0
    out = pd.read_csv(tmp_path / "out" / "scale_sweep.csv")
    assert len(out) == 6 and set(out["scale"]) == {0.5, 1.0, 2.0} and (out["trials"] == 3).all()
    # the signal grows with the scale at a fixed noise: PACE-GGM measures at least as much, on average
    by_scale = out.groupby("scale")["mean"].sum()
    assert by_scale[2.0] >= by_scale[0.5]
    text = (tmp_path / "out" / "scale_sweep.md").read_text()
    assert "## syn1" in text and "## Fit over the ρ's" in text
    # a rerun finds every cell stored and computes nothing
    assert scale_sweep.main(args) == 0
    assert pd.read_csv(tmp_path / "out" / "scale_sweep.csv").equals(out)


def test_scale_sweep_refuses_to_write_a_reduced_grid_over_the_committed_study(tmp_path):
    with pytest.raises(SystemExit) as exc:
        scale_sweep.main(["--trials", "2", "--runs-dir", str(tmp_path)])
    assert exc.value.code == 2


def _stats(means, sds, published, scales=(0.5, 1.0, 2.0), trials=10):
    rows = []
    for s, m, sd in zip(scales, means, sds):
        rows.append(dict(dataset="a", rho=1.0, scale=s, mean=m, sd=sd, trials=trials, published=published))
    df = pd.DataFrame(rows)
    df["sem"] = df["sd"] / np.sqrt(df["trials"])
    df["published_se"] = df["sd"] / np.sqrt(10)
    df["sigma"] = np.hypot(df["sem"], df["published_se"])
    df["z"] = (df["mean"] - df["published"]) / df["sigma"]
    return df


def test_matching_scale_interpolates_in_log_scale_and_brackets_by_the_error():
    # counts 10, 20, 40 at scales 0.5, 1, 2: the published 20 is matched at 1 exactly, 30 at √2
    stats = _stats([10.0, 20.0, 40.0], [1.0, 1.0, 1.0], 30.0)
    m = scale_sweep.matching_scale(stats).iloc[0]
    assert m["scale_match"] == pytest.approx(np.sqrt(2.0))
    # within 2 SE where |20 + 20 log2(s) − 30| <= 2·√(0.1 + 0.1): log2(s) in 0.5 ∓ 0.0447, no grid point inside
    half = 2 * np.sqrt(0.2) / 20
    assert m["range_low"] == pytest.approx(2 ** (0.5 - half), rel=1e-3)
    assert m["range_high"] == pytest.approx(2 ** (0.5 + half), rel=1e-3)
    assert np.isnan(scale_sweep.matching_scale(_stats([10.0, 20.0, 40.0], [1.0, 1.0, 1.0], 50.0)).iloc[0]["range_low"])
    m = scale_sweep.matching_scale(_stats([10.0, 20.0, 40.0], [1.0, 1.0, 1.0], 20.0)).iloc[0]
    assert m["scale_match"] == pytest.approx(1.0) and 0.5 < m["range_low"] < 1.0 < m["range_high"] < 2.0
    m = scale_sweep.matching_scale(_stats([10.0, 20.0, 40.0], [1.0, 1.0, 1.0], 5.0)).iloc[0]
    assert np.isnan(m["scale_match"]) and m["below_grid"] and not m["above_grid"]


def test_fit_by_scale_is_a_chi_square_over_the_cells():
    stats = pd.concat([_stats([10.0, 20.0, 40.0], [3.0, 3.0, 3.0], 20.0),
                       _stats([10.0, 20.0, 40.0], [3.0, 3.0, 3.0], 20.0).assign(rho=2.0)])
    fits = scale_sweep.fit_by_scale(stats).set_index(["dataset", "scale"])
    assert fits.loc[("a", 1.0), "chi2"] == 0.0 and fits.loc[("a", 1.0), "p"] == 1.0
    z = 10.0 / np.hypot(3 / np.sqrt(10), 3 / np.sqrt(10))
    assert fits.loc[("a", 0.5), "chi2"] == pytest.approx(2 * z ** 2)
    assert fits.loc[("all", 0.5), "cells"] == 2 and fits.loc[("a", 2.0), "within_2se"] == 0


def test_forced_target_runs_the_three_methods_on_the_same_splits(tmp_path):
    args = ["--datasets", "syn1", "--rhos", "1", "--trials", "3", "--runs-dir", str(tmp_path / "runs"),
            "--out-dir", str(tmp_path / "out"), "--committed", "", "--set", LOADER]
    assert forced_target.main(args) == 0
    cells = pd.read_csv(tmp_path / "out" / "forced_target.csv")
    assert len(cells) == 1 and cells["trials"].iloc[0] == 3
    for col in ("adassp_mean", "paceggm_regression_mean", "paceggm_yfirst_mean", "null_mean",
                "paceggm_yfirst_vs_adassp_z", "paceggm_yfirst_vs_paceggm_regression_z"):
        assert np.isfinite(cells[col].iloc[0]), col
    assert "y's row first" in (tmp_path / "out" / "forced_target.md").read_text()


def test_paired_differences_and_tally():
    rows = []
    for t, (a, p, f) in enumerate([(1.0, 2.0, 1.1), (1.2, 2.1, 1.2), (0.8, 1.9, 0.9)]):
        for variant, mse in (("adassp", a), ("paceggm_regression", p), ("paceggm_yfirst", f)):
            rows.append(dict(dataset="a", rho=1.0, trial=t, variant=variant, mse=mse, status="ok"))
    cells = forced_target.paired(pd.DataFrame(rows))
    c = cells.iloc[0]
    diff = np.array([1.0, 0.9, 1.1])  # as run − AdaSSP
    assert c["paceggm_regression_vs_adassp_z"] == pytest.approx(diff.mean() / (diff.std(ddof=1) / np.sqrt(3)))
    assert c["paceggm_yfirst_vs_paceggm_regression_ratio"] == pytest.approx(3.2 / 6.0)
    t = forced_target.tally(cells)
    assert t.loc["PACE-GGM as run vs AdaSSP", "higher (z > 2)"] == 1
    assert t.loc["PACE-GGM, y's row first vs PACE-GGM as run", "lower (z < −2)"] == 1


def _pairs_rows(errors):
    """Rows of one (data set, ρ) cell: ``errors[(α, β)]`` is the list of per-trial errors."""
    rows = []
    for (a, b), errs in errors.items():
        for t, e in enumerate(errs):
            rows.append(dict(dataset="adult", rho=1.0, method="paceggm", status="ok", trial=t, p_alpha=a, p_beta=b,
                             frobenius=e, mahalanobis=e))
    return pd.DataFrame(rows)


def test_best_pairs_picks_on_the_committed_trials_and_judges_on_the_fresh_ones():
    from studies import best_pairs

    pub = pd.DataFrame({"dataset": ["adult"], "rho": [1.0], "best_alpha": [0.3], "best_beta": [0.5]})
    base = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    # committed: (0.1, 0.5) looks best; fresh: the published pair is worse by 0.1 in every trial
    committed = _pairs_rows({(0.1, 0.5): base, (0.3, 0.5): base + 0.05})
    fresh = _pairs_rows({(0.1, 0.5): base, (0.3, 0.5): base + 0.1}).assign(trial=lambda r: r["trial"] + 5)
    d = best_pairs.decide(committed, fresh, pub, "frobenius").iloc[0]
    assert (d["ours"], d["published"], d["status"]) == ("(0.1, 0.5)", "(0.3, 0.5)", "published pair loses")
    assert (d["picked_on"], d["judged_on"]) == (5, 5)
    # the fresh trials alone decide: there the published pair is better, whatever the committed said
    better = _pairs_rows({(0.1, 0.5): base + 0.1, (0.3, 0.5): base}).assign(trial=lambda r: r["trial"] + 5)
    d = best_pairs.decide(committed, better, pub, "frobenius").iloc[0]
    assert d["status"] == "published pair wins" and d["winner_on_fresh"] == "(0.3, 0.5)"
    # equal means on the committed trials: the tie goes to the smaller α, which is the published pair here
    tie = _pairs_rows({(0.3, 0.5): base, (0.1, 0.5): base})
    d = best_pairs.decide(tie, fresh, pub.assign(best_alpha=0.1), "mahalanobis").iloc[0]
    assert d["status"] == "same pair" and d["ours"] == "(0.1, 0.5)"
    with pytest.raises(SystemExit):
        best_pairs.check_seeds(committed.assign(seed=1), fresh.assign(seed=1))


def test_best_pairs_false_positives_held_out_and_on_the_same_trials():
    """Nine truly equal pairs (a shared trial effect, each pair's own noise): picking on 5 trials and
    judging on 20 others calls "ours better" at about the one-sided 2 SE rate; picking and testing
    on the same trials, with looks at 5, 15 and 25, calls it far more often."""
    from studies import best_pairs

    rng = np.random.default_rng(0)
    runs = {i: pd.DataFrame(1 + 0.3 * rng.standard_normal((25, 1)) + 0.1 * rng.standard_normal((25, 9)))
            for i in range(40)}
    pools = best_pairs.null_pools(runs)  # each pair divided by its mean: equal in truth
    assert all(np.allclose(p.mean(axis=0), 1.0) for p in pools)
    fp = best_pairs.false_positives(pools, [4] * 40, fresh=20, seed_key="t", draws=300)
    held, same = fp["held_out"].mean() / 40, fp["same_trials"].mean() / 40
    assert held < 0.06  # one-sided 2 SE with 19 df is 3 %; the winner is another pair in 8 of 9 cells
    assert same > 3 * held and same > 0.15


def test_best_pairs_disjoint_blocks_count_agreement():
    from studies import best_pairs

    pairs = pd.MultiIndex.from_tuples([(0.1, 0.5), (0.3, 0.5)], names=["p_alpha", "p_beta"])
    clear = pd.DataFrame(np.tile([1.0, 2.0], (15, 1)), columns=pairs)
    flip = clear.copy()
    flip.iloc[5:10] = [2.0, 1.0]  # the middle block's winner differs
    agree, block_pairs = best_pairs.block_agreement({("a", 1.0): clear, ("b", 1.0): flip})
    assert block_pairs == 3 and agree == pytest.approx(1.0 + 1 / 3)


def test_best_pairs_fresh_trials_continue_the_numbering(tmp_path):
    from studies import best_pairs

    cfgs = best_pairs.fresh_configs(["adult"], 5, 8, runs_dir=tmp_path, jobs=1)
    assert len(cfgs) == 1 and cfgs[0]["trials"] == [5, 6, 7] and len(cfgs[0]["rho"]) == 7
    assert list(cfgs[0]["method"]) == ["paceggm"] and cfgs[0]["method"]["paceggm"]["grid"]["alpha"] == [0.1, 0.3, 0.5]


def test_the_joint_scale_fit_finds_a_planted_factor_and_counts_its_parameters():
    """Two data sets whose published counts are ours at 2ρ and at 0.5ρ: one common factor does not fit,
    one per data set does and is needed; the fitted factors are the planted ones."""
    rhos = np.exp(np.linspace(np.log(1e-3), np.log(100.0), 41))
    rows = []
    for name in ("a", "b"):
        for r in rhos:
            for t in range(10):
                rows.append(dict(dataset=name, rho=r, status="ok", n_measured_offdiag=20 * r ** 0.3 + (t - 4.5) / 3))
    rows = pd.DataFrame(rows)
    grid = (0.1, 1.0, 10.0)
    pub = pd.DataFrame([dict(dataset=n, rho=r, offdiagonal_mean=20 * (r * f) ** 0.3)
                        for n, f in (("a", 2.0), ("b", 0.5)) for r in grid])
    fit = scale_sweep.joint_fit(rows, pub, f_range=(0.25, 4.0), points=801)
    t = fit["table"].set_index("fitted factors")
    assert list(t["df"]) == [6, 5, 4] and (t["cells"] == 6).all()
    per = fit["per_dataset"].set_index("dataset")
    assert per.loc["a", "f"] == pytest.approx(2.0, rel=0.01) and per.loc["b", "f"] == pytest.approx(0.5, rel=0.01)
    assert t.loc[2, "chi2"] == pytest.approx(0.0, abs=0.05) and t.loc[1, "p"] < 0.05
    assert fit["lr"]["df"].tolist() == [1, 1] and fit["lr"]["p"].iloc[1] < 0.05
    assert fit["verdict"].startswith("a factor per data set")
    # a cell whose ρ·f leaves the curve is left out, and named
    edge = scale_sweep.joint_fit(rows, pd.concat([pub, pub.iloc[:1].assign(rho=100.0)]), f_range=(0.25, 4.0))
    assert edge["left_out"] == [("a", 100.0)]

"""Tables of the figures stage: the numbers (mean ± SE, d + off-diagonal, best (α, β), wins),
their shape, and the Markdown / LaTeX writers."""

import numpy as np
import pandas as pd
import pytest

from paceggm.bench.figures import tables
from paceggm.bench.figures.results import ResultsError, cell_problems, validate_results
from paceggm.bench.figures.synthetic import synthetic_results
from paceggm.bench.methods import method_defaults
from paceggm.bench.summary import trial_stats


def _rows(records):
    """A contract-shaped table from a few hand-written rows (other columns defaulted)."""
    base = synthetic_results("main", datasets=("adult",), rhos=(1.0,), trials=1,
                             fail_rate=0.0, missing_rate=0.0).iloc[[0]]
    out = []
    for i, rec in enumerate(records):
        r = base.iloc[0].to_dict()
        r.update({"cell_key": f"k{i}", "status": "ok", "error": ""})
        r.update(rec)
        out.append(r)
    return validate_results(pd.DataFrame(out))


def test_summarize_uses_ok_trials_only_with_sample_sd():
    df = _rows([{"trial": 0, "wall_time": 1.0}, {"trial": 1, "wall_time": 2.0},
                {"trial": 2, "wall_time": 3.0},
                {"trial": 3, "wall_time": 100.0, "status": "failed", "error": "RuntimeError: x"}])
    s = trial_stats(df, "wall_time").iloc[0]
    assert s["count"] == 3 and s["mean"] == pytest.approx(2.0)
    assert s["sd"] == pytest.approx(1.0) and s["sem"] == pytest.approx(1 / np.sqrt(3))
    assert (s["min"], s["max"]) == (1.0, 3.0)


def test_runtime_table_mean_pm_standard_error():
    df = _rows([{"trial": t, "wall_time": w, "variant": "paceggm", "method": "paceggm", "rho": rho}
                for rho, ws in ((0.1, (1.0, 2.0, 3.0)), (1.0, (4.0,)))
                for t, w in enumerate(ws)])
    t = tables.runtime_table(df)
    assert list(t.text.columns) == ["ρ=0.1", "ρ=1"]
    assert list(t.text.index) == ["adult (d=6)"]
    assert t.text.loc["adult (d=6)", "ρ=0.1"] == "2.00 ± 0.58"
    assert t.text.loc["adult (d=6)", "ρ=1"] == "4.00 ± n/a"  # one trial: no standard error


def test_runtime_table_one_row_per_data_set_and_method_when_several():
    df = synthetic_results("main", datasets=("adult", "ibm"), rhos=(0.1, 1.0), trials=2,
                           fail_rate=0.0, missing_rate=0.0)
    t = tables.runtime_table(validate_results(df))
    assert len(t.text) == 2 * 4
    assert t.text.index[0] == "adult (d=6), PACE-GGM"
    assert t.text.index[-1] == "ibm (d=23), Diagonal only"


def test_measurements_table_d_plus_mean_offdiagonal_and_gaps():
    df = _rows([{"trial": 0, "rho": 0.1, "n_measured_offdiag": 2.0, "n_measured_diag": 6.0},
                {"trial": 1, "rho": 0.1, "n_measured_offdiag": 3.0, "n_measured_diag": 6.0},
                {"trial": 2, "rho": 0.1, "n_measured_offdiag": 99.0, "n_measured_diag": 6.0,
                 "status": "failed", "error": "ValueError: boom"},
                {"trial": 0, "rho": 1.0, "n_measured_offdiag": 7.0, "n_measured_diag": 6.0,
                 "status": "failed", "error": "ValueError: boom"}])
    t = tables.measurements_table(df)
    assert t.text.loc["adult (d=6)", "ρ=0.1"] == "6 + 2.5"
    assert t.text.loc["adult (d=6)", "ρ=1"] == tables.MISSING


def _hp(rows):
    recs = []
    for ds, d, rho, a, b, err in rows:
        variant = "paceggm" if (a, b) == (0.3, 0.5) else f"paceggm[alpha={a},beta={b}]"
        recs.append({"dataset": ds, "d": d, "rho": rho, "p_alpha": a, "p_beta": b, "trial": 0,
                     "method": "paceggm", "variant": variant, "mahalanobis": err, "frobenius": 10 - err})
    return _rows(recs)


def test_best_hyperparameters_and_win_counts():
    df = _hp([("adult", 6, 0.1, 0.1, 0.5, 1.0), ("adult", 6, 0.1, 0.3, 0.5, 2.0),
              ("adult", 6, 1.0, 0.1, 0.5, 3.0), ("adult", 6, 1.0, 0.3, 0.5, 0.5),
              ("ibm", 23, 0.1, 0.1, 0.5, 4.0), ("ibm", 23, 0.1, 0.3, 0.5, 4.0),  # tie → smaller α
              ("ibm", 23, 1.0, 0.3, 0.5, 1.0)])  # (0.1, 0.5) absent → marked *
    best, wins = tables.best_hyperparameters(df)
    maha = best[0].text
    assert list(maha.index) == ["adult (d=6)", "ibm (d=23)"]
    assert maha.loc["adult (d=6)", "ρ=0.1"] == "(0.1, 0.5)"
    assert maha.loc["adult (d=6)", "ρ=1"] == "(0.3, 0.5)"
    assert maha.loc["ibm (d=23)", "ρ=0.1"] == "(0.1, 0.5)"
    assert maha.loc["ibm (d=23)", "ρ=1"] == "(0.3, 0.5)*"
    assert wins.data.set_index(["alpha", "beta"])["mahalanobis"].to_dict() == {(0.1, 0.5): 2, (0.3, 0.5): 2}
    # frobenius = 10 - err flips the adult winners; the ibm tie and single-pair cell stay
    frob = best[1].text
    assert frob.loc["adult (d=6)", "ρ=0.1"] == "(0.3, 0.5)"
    assert frob.loc["adult (d=6)", "ρ=1"] == "(0.1, 0.5)"
    assert frob.loc["ibm (d=23)", "ρ=0.1"] == "(0.1, 0.5)"
    assert wins.data.set_index(["alpha", "beta"])["frobenius"].to_dict() == {(0.1, 0.5): 2, (0.3, 0.5): 2}
    assert wins.data["mahalanobis"].sum() == 4  # one win per (data set, ρ)


def test_best_hyperparameters_refuses_rows_without_alpha_beta():
    df = _hp([("adult", 6, 0.1, 0.1, 0.5, 1.0)])
    df.loc[0, "p_alpha"] = np.nan
    with pytest.raises(ValueError, match="without alpha/beta"):
        tables.best_hyperparameters(df)


def test_tables_from_synthetic_have_a_row_per_data_set_and_a_column_per_rho():
    df = validate_results(synthetic_results("hyperparameters", rhos=(0.01, 0.1, 1.0), trials=2))
    pace = df[df["method"] == "paceggm"]
    best, wins = tables.best_hyperparameters(pace)
    for t in best:
        assert t.text.shape == (5, 3)
        assert t.text.index[0].startswith("adult") and t.text.index[-1].startswith("spambase")
    assert wins.text.shape == (9, 2)
    n_cells = pace.groupby(["dataset", "rho"]).ngroups
    assert (wins.data[["mahalanobis", "frobenius"]].sum() == n_cells).all()


def test_markdown_and_booktabs_writers(tmp_path):
    text = pd.DataFrame({"ρ=0.1": ["1.00 ± 0.10", "—"]}, index=["breast_cancer (d=32)", "a|b"])
    text.index.name = "data set"
    t = tables.Table("demo", "Caption with 50% & α", text, pd.DataFrame())
    md = tables.to_markdown(t).splitlines()
    assert md[0] == "| data set | ρ=0.1 |" and md[1] == "|---|---:|"
    assert md[3] == "| a\\|b | — |"
    tex = tables.to_latex(t)
    assert "\\toprule" in tex and "\\midrule" in tex and "\\bottomrule" in tex
    assert "breast\\_cancer (d=32) & 1.00 $\\pm$ 0.10 \\\\" in tex
    assert "% Caption with 50\\% \\& $\\alpha$" not in tex  # caption is a comment, kept verbatim
    assert tex.startswith("% Caption with 50% & α")
    assert tables.tex_escape("a\\b_{c}") == "a\\textbackslash{}b\\_\\{c\\}"
    files = tables.write_table(t, tmp_path)
    assert [f.name for f in files] == ["demo.md", "demo.tex"] and all(f.stat().st_size for f in files)


def test_cell_problems_classifies_missing_failed_partial_and_unrun_trials():
    df = _rows([{"rho": 0.1, "trial": 0}, {"rho": 0.1, "trial": 1},
                {"rho": 1.0, "trial": 0, "status": "failed",
                 "error": "Traceback (most recent call last):\n  File x\nFloatingPointError: overflow"},
                {"rho": 2.0, "trial": 0}, {"rho": 2.0, "trial": 1, "status": "failed",
                                           "error": "LinAlgError: singular"},
                {"rho": 5.0, "trial": 1}])
    probs = cell_problems(df, datasets=["adult"], variants=["paceggm"], rhos=[0.1, 1.0, 2.0, 5.0, 10.0],
                          metric="mahalanobis")
    by_rho = {p.rho: p for p in probs}
    assert set(by_rho) == {1.0, 2.0, 5.0, 10.0}
    assert by_rho[1.0].kind == "failed" and "FloatingPointError: overflow" in by_rho[1.0].detail
    assert by_rho[2.0].kind == "partial" and "1 of 2 trials ok" in by_rho[2.0].detail
    assert by_rho[5.0].kind == "partial" and "not run: trial 0" in by_rho[5.0].detail
    assert by_rho[10.0].kind == "missing"


def test_validate_results_names_the_problem():
    df = synthetic_results("main", datasets=("adult",), rhos=(1.0,), trials=1)
    with pytest.raises(ResultsError, match="missing columns \\['mse'\\]"):
        validate_results(df.drop(columns="mse"), source="x.parquet")
    with pytest.raises(ResultsError, match="unknown status"):
        validate_results(df.assign(status="done"))
    with pytest.raises(ResultsError, match="rho must be > 0"):
        validate_results(df.assign(rho=0.0))
    with pytest.raises(ResultsError, match="not numeric"):
        validate_results(df.assign(frobenius="big"))
    # the harness's label is kept, never parsed: the variant is named from the method and p_* columns
    relabelled = validate_results(df.assign(variant="ssp[oops"))
    assert set(relabelled["variant_raw"]) == {"ssp[oops"} and set(relabelled["variant"]) == set(df["method"])


def test_validate_results_drops_duplicate_cells_keeping_an_ok_row():
    df = synthetic_results("main", datasets=("adult",), rhos=(1.0,), trials=1, fail_rate=0.0)
    dup = df.iloc[[0]].assign(status="failed", mahalanobis=np.nan, error="E: x")
    out = validate_results(pd.concat([dup, df], ignore_index=True))
    assert len(out) == len(df)
    assert (out["status"] == "ok").all()


def test_paceggm_variants_are_relabelled_by_what_they_compute():
    # the harness labels by recipe entry + grid; the figures need one name per computation
    quick = validate_results(synthetic_results("quick", rhos=(1.0,), trials=1, fail_rate=0.0,
                                               missing_rate=0.0))
    pairs = dict(zip(quick["variant_raw"], quick["variant"]))
    defaults = method_defaults("paceggm")
    # The recipes' solver is the plain "paceggm"; the others are named.
    assert pairs[f"paceggm[solver={defaults['solver']}]"] == "paceggm"
    assert pairs["paceggm[solver=pgd0]"] == "paceggm[solver=pgd0]"
    assert pairs["paceggm[solver=ipm]"] == ("paceggm" if defaults["solver"] == "ipm" else "paceggm[solver=ipm]")
    assert pairs["paceggm_nocc"] == "paceggm[use_components=False]"
    assert pairs["paceggm_ab"] == "paceggm[alpha=0.1,beta=0.3]"
    assert pairs["ssp"] == "ssp" and pairs["paceggm_regression"] == "paceggm_regression"
    hp = validate_results(synthetic_results("hyperparameters", datasets=("adult",), rhos=(1.0,), trials=1,
                                            fail_rate=0.0, missing_rate=0.0))
    assert set(hp["variant"]) == {"ssp", "paceggm"} | {f"paceggm[alpha={a:g},beta={b:g}]"
                                                       for a in (0.1, 0.3, 0.5) for b in (0.1, 0.3, 0.5)
                                                       if (a, b) != (0.3, 0.5)}


def test_relabelling_never_merges_two_different_computations():
    # two entries whose difference the columns cannot show (e.g. max_rounds fixed in the recipe)
    df = _rows([{"variant": "paceggm", "method": "paceggm", "trial": 0, "mahalanobis": 1.0},
                {"variant": "paceggm_short", "method": "paceggm", "trial": 0, "mahalanobis": 2.0},
                {"variant": "paceggm[max_rounds=5]", "method": "paceggm", "trial": 0}])
    assert list(df["variant"]) == ["paceggm", "paceggm_short", "paceggm[max_rounds=5]"]


def test_failure_reason_keeps_the_message_and_the_exception_raised():
    from paceggm.bench.figures.results import _first_line
    harness = ("data set 'adult' could not be loaded:\nTraceback (most recent call last):\n"
               '  File "runner.py", line 200, in run_sweep\n    loaded = loader(ds)\n'
               "ModuleNotFoundError: No module named 'paceggm.bench.data'\n")
    assert _first_line(harness) == ("data set 'adult' could not be loaded: "
                                    "ModuleNotFoundError: No module named 'paceggm.bench.data'")
    schema = "LinAlgError: singular\nTraceback (most recent call last):\n  File x\nLinAlgError: singular\n"
    assert _first_line(schema) == "LinAlgError: singular"
    assert _first_line("ValueError: bad\n") == "ValueError: bad"
    assert _first_line("") == ""
    assert len(_first_line("E: " + "x" * 500)) == 200


def test_committed_results_are_in_the_current_layout():
    from pathlib import Path

    for path in sorted(Path(__file__).resolve().parents[1].glob("figures/results/*/results.parquet")):
        df = pd.read_parquet(path)
        # parameters as p_* columns built from params, not the earlier per-method columns (no reader is kept for those)
        assert "params" in df.columns and "p_solver" in df.columns, path
        assert not {"solver", "use_components", "alpha", "beta"} & set(df.columns), path

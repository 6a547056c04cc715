"""End to end: every figure, table and the report build from small synthetic results stores
(dedicated experiments, or ``quick`` alone), gaps stay gaps, and problems are reported."""

import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from paceggm.bench.figures import FiguresConfig, build_all, plots, style
from paceggm.bench.figures.__main__ import main as cli
from paceggm.bench.figures.artifacts import ARTIFACTS as EVERY_ARTIFACT
from paceggm.bench.figures.artifacts import OUR_ARTIFACTS, SWEEPS, Grid
from paceggm.bench.figures.report import write_report
from paceggm.bench.figures.results import datasets_by_d, validate_results
from paceggm.bench.figures.synthetic import synthetic_results, write_synthetic_store
from paceggm.bench.methods import METHODS, MethodSpec, MethodStyle

# the publication's artifacts (a sweep's own are test_figures_sweep.py's, ours test_figures_peers.py's), the
# figures drawn from rows, and the artifacts that read no `quick`: from the table of artifacts
ARTIFACTS = [s for s in EVERY_ARTIFACT if s.sources != SWEEPS and s.name not in OUR_ARTIFACTS]
FIGURES = [s.name for s in ARTIFACTS if isinstance(s.draw, Grid)]
CLAIMS = [f"{kind}_{m}" for m in ("mahalanobis", "frobenius")
          for kind in ("winners", "winners_all", "gain_over_ssp")]
TABLES = ["measurements", "runtime", "hyperparameters_best_mahalanobis",
          "hyperparameters_best_frobenius", "hyperparameters_wins", "solver_ratios", "solver_paired_ratios",
          *CLAIMS, *(f"{c}_strict" for c in CLAIMS)]
SMALL = dict(datasets=("adult", "ibm"), rhos=(0.01, 0.1, 1.0), trials=2)


# ``quick`` runs the paper preprocessing only: the strict comparison needs ``main_strict``; the
# publication's runtime and (α, β) tables compare with their own recipes only.
NOT_FROM_QUICK = (*(s.name for s in ARTIFACTS if s.rows is not None and "quick" not in s.sources),
                  *(f"{c}_strict" for c in CLAIMS), "published_runtime_scatter")


FROM_QUICK = dict(figures=[f for f in FIGURES if f not in NOT_FROM_QUICK],
                  tables_=[t for t in TABLES if t not in NOT_FROM_QUICK])


def expected_files(out, formats=("pdf", "png"), figures=FIGURES, tables_=TABLES):
    return ([out / f"{f}.{fmt}" for f in figures for fmt in formats]
            + [out / "tables" / f"{t}.{ext}" for t in tables_ for ext in ("md", "tex")]
            + [out / "REPORT.md"])


def _only(*names):
    """The artifacts a test reads (a whole build draws every figure, which is most of a test's time)."""
    return [spec for spec in ARTIFACTS if spec.name in names]


def _check_files(paths):
    for p in paths:
        assert p.is_file() and p.stat().st_size > 0, p
        if p.suffix == ".pdf":
            assert p.read_bytes()[:5] == b"%PDF-"
        if p.suffix == ".png":
            assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# Parallel runs (make test: pytest-xdist, --dist loadgroup) keep the tests of the fixture `dedicated` on
# one worker, so that it is computed once (session scope: xdist may interleave other modules on that
# worker, which would tear a module fixture down and build it again); the others spread.
on_dedicated = pytest.mark.xdist_group("figures_dedicated")


@pytest.fixture(scope="session")
def dedicated(tmp_path_factory):
    root = tmp_path_factory.mktemp("dedicated")
    write_synthetic_store(root / "runs", **SMALL)
    out = root / "figures"
    # PNG only: the PDF writer is exercised by the command-line test below.
    log = build_all(root / "runs", out, FiguresConfig(main_datasets=("ibm", "adult", "spambase"), formats=("png",)))
    return log, write_report(log)


@pytest.mark.slow
@on_dedicated
def test_every_artifact_builds_from_the_dedicated_experiments(dedicated):
    log, report = dedicated
    _check_files(expected_files(log.out, formats=("png",)))
    sources = {a.name: a.source for a in log.artifacts}
    assert [a.name for a in log.artifacts] == [s.name for s in ARTIFACTS]  # in the table's order
    assert sources == {"main_comparison": "main", "main_comparison_all": "main",
                       "main_comparison_strict": "main_strict", "solver_ipm_vs_pgd": "solver",
                       "solver_ratios": "solver",
                       "claims": "main", "claims_strict": "main_strict",
                       "components": "components", "hyperparameters": "hyperparameters",
                       "regression": "regression", "measurements": "measurements", "runtime": "runtime",
                       "hyperparameters_tables": "hyperparameters", "datasets": None,
                       "published_measurements": "measurements", "published_measurements_strict": "main_strict",
                       "published_runtime": "runtime", "published_best": "hyperparameters",
                       "published_distances": "measurements, main_strict, runtime, hyperparameters",
                       "published_measurements_scatter": "measurements, main_strict",
                       "published_runtime_scatter": "runtime",
                       "claims_verdicts": "components, hyperparameters, main, main_strict, measurements, "
                                          "regression, runtime, solver"}
    text = report.read_text(encoding="utf-8")
    for f in FIGURES:
        assert f"]({f}.png)" in text
    for t in TABLES:
        assert f"(tables/{t}.md)" in text
    # the data-set table is the data stage's: absent here, so listed as not built
    assert "## Not built" in text and "datasets.md not found" in text


@on_dedicated
def test_the_comparisons_with_the_publication_are_drawn_at_print_resolution(dedicated):
    log, _ = dedicated
    for name in ("published_measurements_paper", "published_measurements_strict", "published_runtime_paper_newton",
                 "published_best_frobenius", "published_best_mahalanobis", "published_distances",
                 "claims_verdicts"):
        assert (log.out / "tables" / f"{name}.md").is_file(), name
    distances = (log.out / "tables" / "published_distances.md").read_text(encoding="utf-8")
    assert "published_measurements_strict" in distances and "published_best_mahalanobis" in distances
    for name in ("published_measurements_scatter", "published_runtime_scatter"):
        png = (log.out / f"{name}.png").read_bytes()
        width = int.from_bytes(png[16:20], "big")
        # 200 dpi, not matplotlib's 100: 0.7 of the full text width (7 in) is 980 px (the main figure's
        # width in inches, which follows its panels, is test_column_width_wraps_panels_and_keeps_the_print_size's)
        assert width >= 980, (name, width)


@on_dedicated
def test_strict_comparison_shows_the_strict_rows_and_paper_figures_the_paper_rows(dedicated):
    log, _ = dedicated
    prep = {a.name: a.preprocessing for a in log.artifacts if a.kind == "figure"}
    assert prep["main_comparison_strict"] == "strict"
    assert prep["main_comparison"] == prep["main_comparison_all"] == "paper"


@on_dedicated
def test_configured_main_data_sets_are_ordered_by_d_and_absent_ones_reported(dedicated):
    log, report = dedicated
    main = next(a for a in log.artifacts if a.name == "main_comparison")
    assert main.absent == ["spambase"]
    assert not any(p.dataset == "spambase" for p in main.problems)
    assert "Configured data sets without any result in `main` (not drawn): spambase." in \
        report.read_text(encoding="utf-8")
    df = validate_results(synthetic_results("main", **SMALL))
    assert datasets_by_d(df, only=("ibm", "adult", "spambase")) == ["adult", "ibm"]


def test_no_results_skips_everything_with_reasons(tmp_path):
    log = build_all(tmp_path / "runs", tmp_path / "figures")
    report = write_report(log).read_text(encoding="utf-8")
    assert log.files == []
    assert all(a.skipped for a in log.artifacts)
    assert "No results table was found" in report
    assert "no results table for main, quick" in report


def test_unreadable_table_is_reported_and_the_rest_still_builds(tmp_path, capsys):
    runs = tmp_path / "runs"
    write_synthetic_store(runs, experiments=["regression"], **SMALL)
    (runs / "main").mkdir()
    (runs / "main" / "results.parquet").write_bytes(b"not a parquet file")
    bad = synthetic_results("solver", **SMALL).drop(columns=["solve_time"])
    (runs / "solver").mkdir()
    bad.to_parquet(runs / "solver" / "results.parquet")
    out = tmp_path / "figures"
    assert cli(["--runs", str(runs), "--out", str(out), "--formats", "png"]) == 1
    err = capsys.readouterr().err
    assert "main" in err and "unreadable parquet" in err
    assert "missing columns ['solve_time']" in err
    assert (out / "regression.png").is_file()
    report = (out / "REPORT.md").read_text(encoding="utf-8")
    assert "## Unreadable results tables" in report


def _panel_line(fig, dataset_title, label):
    for ax in fig.axes:
        if ax.get_title().startswith(dataset_title):
            for line in ax.get_lines():
                if line.get_label() != "_nolegend_" and line.get_color() == style.variant_style(label).color:
                    return line
    raise AssertionError(f"no line for {label} on {dataset_title}")


def test_missing_and_failed_cells_are_gaps_not_interpolated(tmp_path):
    df = synthetic_results("main", datasets=("adult",), rhos=(0.01, 0.1, 1.0, 10.0), trials=3,
                           fail_rate=0.0, missing_rate=0.0)
    pace = df["variant"] == "paceggm"
    df = df[~(pace & (df["rho"] == 0.1))].copy()  # missing cell
    failed = pace & (df["rho"] == 1.0)
    df.loc[failed, ["status", "error", "mahalanobis", "frobenius"]] = ["failed", "RuntimeError: x", np.nan, np.nan]
    runs = tmp_path / "runs"
    (runs / "main").mkdir(parents=True)
    df.to_parquet(runs / "main" / "results.parquet")
    log = build_all(runs, tmp_path / "figures", FiguresConfig(main_datasets=("adult",), formats=("png",)),
                    artifacts=_only("main_comparison"))
    main = next(a for a in log.artifacts if a.name == "main_comparison")
    assert {(p.rho, p.kind) for p in main.problems if p.variant == "paceggm"} == {(0.1, "missing"), (1.0, "failed")}
    report = write_report(log).read_text(encoding="utf-8")
    assert "| adult | PACE-GGM | 1 | failed | 0 of 3 trials ok; failed: trials 0–2 (RuntimeError: x) |" in report
    assert "| adult | PACE-GGM | 0.1 | missing | no result row |" in report
    assert "`main` (45 trials: 42 ok, 3 failed)" in report  # 4 methods × 4 ρ × 3 trials − 3 dropped

    v = validate_results(df)
    fig = plots.metric_grid(v, datasets=["adult"], variants=["paceggm", "ssp"], metrics=["frobenius"],
                            rhos=[0.01, 0.1, 1.0, 10.0], dims={"adult": 6})
    y = np.asarray(_panel_line(fig, "adult", "paceggm").get_ydata(), dtype=float)
    expected = v[(v["variant"] == "paceggm") & (v["rho"] == 0.01)]["frobenius"].mean()
    assert y[0] == pytest.approx(expected)
    assert np.isnan(y[1]) and np.isnan(y[2]) and np.isfinite(y[3])
    assert np.isfinite(np.asarray(_panel_line(fig, "adult", "ssp").get_ydata(), dtype=float)).all()


def test_a_registered_method_shows_up_in_figures_and_tables(tmp_path, monkeypatch):
    monkeypatch.setitem(METHODS, "newcov", MethodSpec("newcov", "paceggm.baselines:SSP", measures="all",
                                                      style=MethodStyle("NewCov", "#117733", "*", "-", 15)))
    df = synthetic_results("main", datasets=("adult",), rhos=(0.1, 1.0), trials=2, fail_rate=0.0,
                           missing_rate=0.0)
    extra = df[df["method"] == "ssp"].assign(method="newcov", variant="newcov",
                                             cell_key=lambda x: x["cell_key"] + "n")
    runs = tmp_path / "runs"
    for exp in ("main", "runtime"):
        (runs / exp).mkdir(parents=True)
        pd.concat([df, extra]).assign(experiment=exp).to_parquet(runs / exp / "results.parquet")
    log = build_all(runs, tmp_path / "figures",
                    FiguresConfig(main_datasets=("adult",), main_methods=("paceggm", "newcov"),
                                  formats=("png",)), artifacts=_only("main_comparison", "runtime"))
    runtime = (tmp_path / "figures" / "tables" / "runtime.md").read_text(encoding="utf-8")
    assert "adult (d=6), NewCov" in runtime
    fig = plots.metric_grid(validate_results(pd.concat([df, extra])), datasets=["adult"],
                            variants=["paceggm", "newcov"], metrics=["mahalanobis"], rhos=[0.1, 1.0],
                            dims={"adult": 6})
    assert [t.get_text() for t in fig.legends[0].get_texts()] == ["PACE-GGM", "NewCov"]
    main = next(a for a in log.artifacts if a.name == "main_comparison")
    assert main.problems == [] and main.source == "main"


def _one_panel(spread, **kw):
    df = validate_results(synthetic_results("main", datasets=("adult",), rhos=(0.1, 1.0), trials=3,
                                            fail_rate=0.0, missing_rate=0.0))
    return df, plots.metric_grid(df, datasets=["adult"], variants=["ssp"], metrics=["frobenius"],
                                 rhos=[0.1, 1.0], dims={"adult": 6}, spread=spread, **kw)


@pytest.mark.parametrize("spread,lo,hi", [("minmax", "min", "max"), ("sd", "-sd", "+sd"),
                                          ("sem", "-sem", "+sem")])
def test_band_is_the_configured_spread_over_trials(spread, lo, hi):
    df, fig = _one_panel(spread)
    ax = fig.axes[0]
    (band,) = ax.collections
    ys = np.concatenate([p.vertices[:, 1] for p in band.get_paths()])
    g = df[df["variant"] == "ssp"].groupby("rho")["frobenius"]
    sd = g.std(ddof=1)
    want = {"min": g.min(), "max": g.max(), "-sd": g.mean() - sd, "+sd": g.mean() + sd,
            "-sem": g.mean() - sd / np.sqrt(3), "+sem": g.mean() + sd / np.sqrt(3)}
    for key in (lo, hi):
        for v in want[key]:
            v = v if v > 0 else None  # a non-positive lower edge is clipped on the log axis
            if v is not None:
                assert np.isclose(ys, v, rtol=1e-12).any(), (key, v)


def test_no_band_and_errorbars_for_regression():
    _, fig = _one_panel("none")
    assert len(fig.axes[0].collections) == 0
    df = validate_results(synthetic_results("regression", datasets=("pol",), rhos=(0.1, 1.0), trials=3,
                                            fail_rate=0.0, missing_rate=0.0))
    fig = plots.metric_grid(df, datasets=["pol"], variants=["adassp", "paceggm_regression"], metrics=["mse"],
                            rhos=[0.1, 1.0], dims={"pol": 27}, errorbars=True)
    assert len(fig.axes[0].containers) == 2  # one ErrorbarContainer per method
    assert fig.axes[0].get_yscale() == "log" and fig.axes[0].get_xscale() == "log"


@pytest.mark.parametrize("spread", ["minmax", "sd", "none"])
def test_error_bars_follow_the_spread_too(spread):
    df = validate_results(synthetic_results("regression", datasets=("pol",), rhos=(0.1, 1.0), trials=3,
                                            fail_rate=0.0, missing_rate=0.0))
    fig = plots.metric_grid(df, datasets=["pol"], variants=["adassp"], metrics=["mse"], rhos=[0.1, 1.0],
                            dims={"pol": 27}, errorbars=True, spread=spread)
    (bars,) = fig.axes[0].containers
    ends = np.sort(np.concatenate([seg[:, 1] for col in bars.lines[2] for seg in col.get_segments()] or [[]]))
    g = df[df["variant"] == "adassp"].groupby("rho")["mse"]
    want = {"minmax": [g.min(), g.max()], "sd": [g.mean() - g.std(ddof=1), g.mean() + g.std(ddof=1)],
            "none": []}[spread]
    assert np.allclose(ends, np.sort(np.concatenate([w.to_numpy() for w in want])) if want else [], rtol=1e-12)


def test_a_spread_asked_for_reaches_the_figures_that_have_their_own(tmp_path):
    runs = tmp_path / "runs"
    (runs / "quick").mkdir(parents=True)
    shutil.copy(HARNESS_QUICK, runs / "quick" / "results.parquet")
    own = [a for a in EVERY_ARTIFACT if a.name in ("hyperparameters", "regression")]

    def captions(config):
        log = build_all(runs, tmp_path / (config.spread or "own"), config, experiments=["quick"], artifacts=own)
        return {a.name: a.description for a in log.artifacts}

    default = captions(FiguresConfig(formats=("png",)))
    assert "line: mean over trials (ten overlapping bands" in default["hyperparameters"]
    assert "bars: ±1 standard error" in default["regression"]
    asked = captions(FiguresConfig(formats=("png",), spread="sd"))
    assert "band: ±1 standard deviation" in asked["hyperparameters"]
    assert "bars: ±1 standard deviation" in asked["regression"]


def test_column_width_wraps_panels_and_keeps_the_print_size():
    df = validate_results(synthetic_results("main", datasets=("adult", "ibm", "spambase", "pol"),
                                            rhos=(0.1, 1.0), trials=2))
    fig = plots.metric_grid(df, datasets=["adult", "pol", "ibm", "spambase"], variants=["paceggm"],
                            metrics=["mahalanobis", "frobenius"], rhos=[0.1, 1.0],
                            dims={}, width=3.3)
    assert fig.get_size_inches()[0] == pytest.approx(3.3)
    visible = [ax for ax in fig.axes if ax.axison]
    # at most 3 one-inch columns; 4 data sets balance into 2 blocks of 2 columns × 2 metrics
    assert len(visible) == len(fig.axes) == 2 * 2 * 2
    assert [ax.get_title() for ax in fig.axes if ax.get_title()] == ["adult", "pol", "ibm", "spambase"]
    # the main figure's data sets fill the full text width (1,400 px at the style's 200 dpi)
    main = list(FiguresConfig().main_datasets)
    df = validate_results(synthetic_results("main", datasets=main, rhos=(0.1, 1.0), trials=2))
    fig = plots.metric_grid(df, datasets=main, variants=["paceggm"], metrics=["mahalanobis", "frobenius"],
                            rhos=[0.1, 1.0], dims={}, width=FiguresConfig().width)
    assert fig.get_size_inches()[0] == pytest.approx(7.0) and style.RC["savefig.dpi"] * 7.0 >= 1400
    with pytest.raises(ValueError, match="width"):
        FiguresConfig(width=0.5)


def test_other_preprocessings_are_named_in_the_report(tmp_path):
    runs = tmp_path / "runs"
    (runs / "main").mkdir(parents=True)
    both = pd.concat([synthetic_results("main", preprocessing=p, datasets=("adult",), rhos=(1.0,), trials=1)
                      for p in ("paper", "strict")])
    both.to_parquet(runs / "main" / "results.parquet")
    log = build_all(runs, tmp_path / "figures", FiguresConfig(main_datasets=("adult",), formats=("png",)),
                    artifacts=_only("main_comparison"))
    text = write_report(log).read_text(encoding="utf-8")
    assert "preprocessing: paper (also present, not shown: strict; use --preprocessing)" in text
    log = build_all(runs, tmp_path / "strict", FiguresConfig(main_datasets=("adult",), formats=("png",),
                                                            preprocessing="strict"),
                    artifacts=_only("main_comparison"))
    assert next(a for a in log.artifacts if a.name == "main_comparison").preprocessing == "strict"


def test_zero_values_stay_visible():
    # a solver time of 0 (no solver call) must not silently vanish from a log axis
    df = synthetic_results("solver", datasets=("adult",), rhos=(0.1, 1.0), trials=2, fail_rate=0.0,
                           missing_rate=0.0)
    df.loc[df["rho"] == 0.1, "solve_time"] = 0.0
    v = validate_results(df)
    fig = plots.metric_grid(v, datasets=["adult"], variants=["paceggm"], metrics=["solve_time"],
                            rhos=[0.1, 1.0], dims={"adult": 6}, compared=("solver",))
    ax = fig.axes[0]
    assert ax.get_yscale() == "symlog"
    assert np.asarray(ax.get_lines()[0].get_ydata(), dtype=float)[0] == 0.0
    with pytest.raises(ValueError, match="at least one data set"):
        plots.metric_grid(v, datasets=[], variants=["paceggm"], metrics=["solve_time"], rhos=[0.1], dims={})


# Output of the harness's own `quick` recipe (harness commit b937baf on top of main 9009259:
# real data, real baselines; the 8 `newton` cells failed because that solver was not merged yet).
HARNESS_QUICK = Path(__file__).parent / "data" / "harness_quick_results.parquet"


@pytest.mark.slow
def test_everything_builds_from_the_harness_quick_output_alone_by_the_command_line(tmp_path, capsys):
    runs = tmp_path / "runs"
    (runs / "quick").mkdir(parents=True)
    shutil.copy(HARNESS_QUICK, runs / "quick" / "results.parquet")
    out = tmp_path / "figures"
    (out / "tables").mkdir(parents=True)
    (out / "tables" / "datasets.md").write_text("| key | n | d |\n|---|---:|---:|\n| adult | 48842 | 6 |\n")
    # PDF only: the PNG writer is exercised by the dedicated build (drawing is most of this test's time)
    assert cli(["--runs", str(runs), "--out", str(out), "--spread", "sd", "--formats", "pdf"]) == 0
    _check_files(expected_files(out, formats=("pdf",), **FROM_QUICK))
    assert not list(out.glob("*.png"))
    # "built   NAME from SOURCE[, gaps]: files"
    built = {name: src.rstrip(",:") for name, _, src in (ln.split()[1:4] for ln in capsys.readouterr().out.splitlines()
                                                        if ln.startswith("built "))}
    assert built["main_comparison"] == "quick"
    # every artifact the quick recipe can feed is drawn from it alone
    assert {src for name, src in built.items() if name not in ("datasets", *NOT_FROM_QUICK)} == {"quick"}
    raw = pd.read_parquet(HARNESS_QUICK)
    report = (out / "REPORT.md").read_text(encoding="utf-8")
    assert "| adult | 48842 | 6 |" in report
    assert report.count("## Not built") == 1 and "no results table for main_strict" in report
    assert "band: ±1 standard deviation" in report
    ok = int((raw["status"] == "ok").sum())
    assert f"`quick` ({len(raw)} trials: {ok} ok, {len(raw) - ok} failed)" in report
    for _, row in raw[raw["status"] == "failed"].drop_duplicates("dataset").iterrows():
        assert f"| {row['dataset']} | PACE-GGM (Newton) |" in report
    # the measured-entries table is the default PACE-GGM's, whatever the recipe called it
    default = raw[(raw["method"] == "paceggm") & (raw["p_solver"] == "ipm")
                  & raw["p_use_components"].eq(True).fillna(False)
                  & (raw["p_alpha"] == 0.3) & (raw["p_beta"] == 0.5) & (raw["status"] == "ok")]
    adult = default[(default["dataset"] == "adult") & (default["rho"] == 1.0)]
    assert len(adult) == 2
    lines = (out / "tables" / "measurements.md").read_text(encoding="utf-8").splitlines()
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    cells = [c.strip() for c in next(ln for ln in lines if ln.startswith("| adult")).strip("|").split("|")]
    assert cells[header.index("ρ=1")] == f"6 + {adult['n_measured_offdiag'].mean():.1f}"


@on_dedicated
def test_solver_ratio_tables_are_filled_with_newton_as_the_reference(dedicated):
    # Results are read with default parameters dropped from the labels (Newton is the
    # default solver): the tables must still find the Newton rows to divide by.
    log, _ = dedicated
    ratios = (log.out / "tables" / "solver_ratios.md").read_text(encoding="utf-8")
    ipm_rows = [line for line in ratios.splitlines() if line.startswith("| mahalanobis, PACE-GGM (IPM)")]
    assert len(ipm_rows) == 1
    cells = [c.strip() for c in ipm_rows[0].strip("|").split("|")[1:]]
    assert cells and all(c != "—" for c in cells), ipm_rows[0]
    paired = (log.out / "tables" / "solver_paired_ratios.md").read_text(encoding="utf-8")
    pgd = [line for line in paired.splitlines() if line.startswith("| frobenius, PACE-GGM (PGD init 0)")]
    assert len(pgd) == 1 and int(pgd[0].strip("|").split("|")[1]) > 0, pgd


def test_runtime_table_and_components_figure_carry_ipm_beside_newton(tmp_path):
    write_synthetic_store(tmp_path / "runs", experiments=("runtime", "components"), datasets=("communities_crime",))
    log = build_all(tmp_path / "runs", tmp_path / "out", FiguresConfig(formats=("png",)),
                    artifacts=_only("runtime", "components"))
    runtime = (tmp_path / "out" / "tables" / "runtime.md").read_text(encoding="utf-8")
    assert "| communities_crime (d=102), PACE-GGM |" in runtime
    assert "| communities_crime (d=102), PACE-GGM (IPM) |" in runtime
    components = next(a for a in log.artifacts if a.name == "components")
    assert "PACE-GGM (IPM)" in components.description and "PACE-GGM (IPM, components off)" in components.description

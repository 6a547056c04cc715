"""A sweep under a name of its own gets the figures and tables its grid supports, and a report that opens with
its grid; the publication's artifacts are left to the publication's recipes, said in one line."""

import contextlib
import io

import pandas as pd
import pytest

from paceggm.bench.figures import FiguresConfig, build_all
from paceggm.bench.figures.__main__ import main as cli
from paceggm.bench.figures.artifacts import ARTIFACTS, SWEEPS, Grid, Spec
from paceggm.bench.figures.results import validate_results
from paceggm.bench.figures.sweep import describe, every_row, swept
from paceggm.bench.figures.synthetic import synthetic_results

SMALL = dict(datasets=("adult",), rhos=(0.1, 1.0), trials=2, fail_rate=0.0, missing_rate=0.0)


def _ablation() -> pd.DataFrame:
    """One user sweep: PACE-GGM over (α, β), and over solver × components, beside SSP."""
    parts = [synthetic_results("hyperparameters", **SMALL), synthetic_results("components", **SMALL)]
    return pd.concat(parts, ignore_index=True).assign(experiment="ablation")


def _store(runs, name, table):
    (runs / name).mkdir(parents=True)
    table.to_parquet(runs / name / "results.parquet", index=False)


def _sweep_specs(*names):
    return [s for s in ARTIFACTS if s.sources == SWEEPS and s.name in names]


@pytest.fixture(scope="module")
def ablation(tmp_path_factory):
    root = tmp_path_factory.mktemp("ablation")
    _store(root / "runs", "ablation", _ablation())
    out = root / "figures"
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        status = cli(["--runs", str(root / "runs"), "--out", str(out), "--formats", "png",
                      "--experiments", "ablation"])
    return root, out, printed.getvalue(), status


def test_the_grid_is_read_from_the_rows():
    found = swept(validate_results(_ablation()))
    assert found == {"paceggm": {"alpha": [0.1, 0.3, 0.5], "beta": [0.1, 0.3, 0.5], "solver": ["ipm", "newton"],
                                 "use_components": [False, True]}}


def test_the_grid_says_why_trials_failed():
    table = synthetic_results("solver", **SMALL)
    failed = table.index[:3]
    table.loc[failed, "status"] = "failed"
    table.loc[failed, "error"] = "LinAlgError: not positive definite\nTraceback (most recent call last):\n"
    lines = describe(validate_results(table))
    assert "- failed trials: 3 × LinAlgError: not positive definite" in lines
    assert f"({len(table)} trials: {len(table) - 3} ok, 3 failed)" in "\n".join(lines)


def test_a_named_sweep_gets_each_metric_the_time_the_entries_and_a_figure_per_swept_parameter(ablation):
    _, out, printed, status = ablation
    assert status == 0
    folder = out / "ablation"
    for stem in ("errors", "time", "measured", "parameter_paceggm_alpha_x_beta", "parameter_paceggm_solver",
                 "parameter_paceggm_use_components", "grid_paceggm_alpha_x_beta",
                 "grid_paceggm_solver_x_use_components"):
        png = folder / f"{stem}.png"
        assert png.is_file() and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", stem
    for table in ("mahalanobis", "frobenius", "wall_time", "solve_time", "n_measured_offdiag"):
        assert (folder / "tables" / f"{table}.md").is_file(), table
    # (α, β) against solver is no whole grid in these rows: no heat map of it
    assert not list(folder.glob("grid_paceggm_alpha*solver*"))
    # the publication's artifacts: not built, said once
    assert not (out / "tables").exists() and not (out / "main_comparison.png").exists()
    said = [line for line in printed.splitlines() if "publication" in line]
    assert len(said) == 1 and said[0].startswith("not built: ") and "only from the publication's recipes" in said[0]
    assert not [line for line in printed.splitlines() if line.startswith("skipped")]


def test_the_report_opens_with_the_sweeps_grid_and_results(ablation):
    _, out, _, _ = ablation
    report = (out / "REPORT.md").read_text(encoding="utf-8")
    sections = [line for line in report.splitlines() if line.startswith("## ")]
    assert sections[:2] == ["## Experiment `ablation`", "## ablation: Results"]
    grid = report.split("## Experiment `ablation`")[1].split("\n## ")[0]
    for words in ("data sets: adult (n=", "ρ: 0.1, 1", "trials per cell: 2", "SSP",
                  "alpha ∈ {0.1, 0.3, 0.5}", "solver ∈ {ipm, newton}", "use_components ∈ {False, True}"):
        assert words in grid, words
    assert "| adult (d=" in report.split("## ablation: Results")[1].split("\n## ")[0]
    assert "not testable" not in report.lower() and "C1–C13" in report.split("## The publication's")[1]
    assert "](ablation/grid_paceggm_alpha_x_beta.png)" in report


def test_the_spread_option_sets_the_band_and_the_caption_says_which(tmp_path, ablation):
    _, out, _, _ = ablation
    report = (out / "REPORT.md").read_text(encoding="utf-8")  # the default: min–max
    assert report.count("band: min–max over trials") >= 5 and "second line: min–max over trials" in report
    runs = tmp_path / "runs"
    _store(runs, "ablation", synthetic_results("components", **SMALL).assign(experiment="ablation"))
    log = build_all(runs, tmp_path / "figures", FiguresConfig(formats=("png",), spread="sem"),
                    artifacts=_sweep_specs("measured", "grid"))
    words = {a.name: a.description for a in log.artifacts}
    assert "band: ±1 standard error" in words["ablation/measured"]
    assert "second line: ±1 standard error" in words["ablation/grid_paceggm_solver_x_use_components"]


def test_a_method_run_only_as_variants_is_drawn_by_them_and_named_as_drawn(tmp_path):
    table = synthetic_results("hyperparameters", **SMALL).assign(experiment="demo")
    plain = (table["method"] == "paceggm") & (table["p_alpha"] == 0.3) & (table["p_beta"] == 0.5)
    _store(tmp_path / "runs", "demo", table[~plain])
    config = FiguresConfig(formats=("png",), main_datasets=("adult",), main_methods=("paceggm", "ssp"))
    log = build_all(tmp_path / "runs", tmp_path / "figures", config,
                    artifacts=[s for s in ARTIFACTS if s.name == "main_comparison"])
    (main,) = log.artifacts
    assert main.skipped is None and not main.problems  # no "missing (no result row)" for PACE-GGM
    assert "PACE-GGM (α=0.1, β=0.1)" in main.description and "PACE-GGM, SSP" not in main.description
    assert (tmp_path / "figures" / "main_comparison.png").is_file()


def test_a_registered_sweep_figure_is_drawn_for_every_sweep(tmp_path):
    toy = Spec("toy_time", "figure", "Toy time", "Time per trial.", SWEEPS, every_row, ("wall_time",), Grid())
    for name in ("one", "two"):
        _store(tmp_path / "runs", name, synthetic_results("components", **SMALL).assign(experiment=name))
    log = build_all(tmp_path / "runs", tmp_path / "figures", FiguresConfig(formats=("png",)), artifacts=[toy])
    assert [a.name for a in log.artifacts] == ["one/toy_time", "two/toy_time"]
    assert all((tmp_path / "figures" / n / "toy_time.png").is_file() for n in ("one", "two"))

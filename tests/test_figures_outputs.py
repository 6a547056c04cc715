"""Figures are written only where asked: missing inputs never erase earlier output, and
reduced recipes draw into their own folder, never over the committed figures."""

from __future__ import annotations

import functools
import os
import re
import subprocess
from pathlib import Path

import pytest

from paceggm.bench.figures import __main__ as figures_main
from paceggm.bench.figures import build_all
from paceggm.bench.figures.__main__ import main as cli
from paceggm.bench.figures.artifacts import ARTIFACTS
from paceggm.bench.figures.synthetic import write_synthetic_store

REPO = Path(__file__).resolve().parents[1]
SMALL = dict(datasets=("adult",), rhos=(0.1, 1.0), trials=2)  # one data set: fewer panels to draw


@pytest.fixture
def few_artifacts(monkeypatch):
    """Two figures and a table stand for the whole table of artifacts: the rules tested here are the same
    for each, and drawing every figure would be most of these tests' time."""
    keep = [spec for spec in ARTIFACTS if spec.name in ("main_comparison", "regression", "measurements")]
    monkeypatch.setattr(figures_main, "build_all", functools.partial(build_all, artifacts=keep))


def _snapshot(folder: Path) -> dict[Path, tuple[int, bytes]]:
    return {p: (p.stat().st_mtime_ns, p.read_bytes()) for p in folder.rglob("*") if p.is_file()}


def test_missing_inputs_never_erase_earlier_output(tmp_path, capsys, few_artifacts):
    # One build, then two that lack inputs: none at all, then one experiment's table.
    runs, out = tmp_path / "runs", tmp_path / "figures"
    write_synthetic_store(runs, experiments=["main", "regression"], **SMALL)
    assert cli(["--runs", str(runs), "--out", str(out), "--formats", "png"]) == 0
    before = _snapshot(out)
    assert (out / "REPORT.md") in before and (out / "main_comparison.png") in before
    capsys.readouterr()

    # No results at all: every file, the report included, is left as it was.
    assert cli(["--runs", str(tmp_path / "empty"), "--out", str(out), "--formats", "png"]) == 0
    printed = capsys.readouterr().out
    assert "nothing drawn" in printed and "left as it was" in printed
    # the artifacts whose recipes were not read at all: one line naming them, not one line each
    (absent,) = [line for line in printed.splitlines() if line.startswith("skipped (no results table")]
    assert "main_comparison, " in absent and "skipped main_comparison" not in printed
    assert _snapshot(out) == before

    # One table gone: its artifact keeps its files and its section of the report, marked as not rebuilt.
    regression_png = (out / "regression.png").read_bytes()
    section = (out / "REPORT.md").read_text(encoding="utf-8").split("## Linear regression")[1].split("\n## ")[0]
    (runs / "regression" / "results.parquet").unlink()
    assert cli(["--runs", str(runs), "--out", str(out), "--formats", "png"]) == 0
    report = (out / "REPORT.md").read_text(encoding="utf-8")
    assert (out / "regression.png").read_bytes() == regression_png
    assert "## Linear regression" + section in report
    assert "Not rebuilt by the last run of the figures stage: no results table for regression" in report
    assert "**Linear regression**" not in report  # not listed as "not built" as well


def test_the_default_output_is_beside_the_runs_and_experiments_can_be_chosen(tmp_path, monkeypatch, few_artifacts):
    runs = tmp_path / "runs"
    write_synthetic_store(runs, experiments=["main", "quick"], **SMALL)
    monkeypatch.chdir(tmp_path)
    assert cli(["--runs", "runs", "--formats", "png", "--experiments", "quick"]) == 0
    report = (runs / "figures" / "REPORT.md").read_text(encoding="utf-8")
    assert "(source: `quick`" in report and "(source: `main`" not in report
    assert not (tmp_path / "figures").exists()


def _make_dry_run(*args) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAKE")}
    proc = subprocess.run(["make", "-n", "-s", *args], cwd=REPO, capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def _figure_outputs(commands: str) -> list[str]:
    return re.findall(r"paceggm\.bench\.figures .*?--out (\S+)", commands)


@pytest.mark.parametrize("target", ["reproduce-quick", "demo"])
def test_reduced_recipes_never_draw_into_the_committed_figures(target):
    outs = _figure_outputs(_make_dry_run(target))
    assert outs and all(o.startswith("runs/") for o in outs), outs


def test_make_figures_redraws_the_committed_tables_or_draws_beside_other_runs():
    assert _figure_outputs(_make_dry_run("figures")) == ["figures"]
    assert "--runs figures/results" in _make_dry_run("figures")
    assert _figure_outputs(_make_dry_run("figures", "RUNS=runs")) == ["runs/figures"]


def test_make_results_publishes_through_the_complete_grid_check():
    commands = _make_dry_run("results")
    assert "collect --publish figures/results" in commands and "cp " not in commands


def test_make_reproduce_publishes_complete_grids_then_draws_the_committed_tables():
    commands = _make_dry_run("reproduce")  # a dry run: no recursive make executes the sweep
    assert "collect --publish figures/results" in commands
    assert _figure_outputs(commands) == ["figures"] and "--runs figures/results" in commands
    # the published PGD cells are set beside the tight reference after every reproduction, never after a demo
    assert commands.index("stopping_rule_pgd --reproduction-only") > commands.index("paceggm.bench.figures")
    assert "--reproduction-only" not in _make_dry_run("demo") + _make_dry_run("reproduce-quick")

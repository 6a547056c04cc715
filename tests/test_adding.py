"""docs/extending.md's "Adding a data set" and "Adding a figure", followed step by step on a tiny grid, end to end
(the third, "Adding a method", is ``test_bench_methods.py::test_adding_a_method_is_one_registry_entry_plus_its_class``)."""

from __future__ import annotations

import shutil

import numpy as np
import pandas as pd
import pytest

from paceggm.bench.cells import expand
from paceggm.bench.collect import collect
from paceggm.bench.config import compose_config, find_conf_dir, to_plain
from paceggm.bench.figures import FiguresConfig, artifacts, build_all
from paceggm.bench.figures.artifacts import Grid, Spec, covariance_rows
from paceggm.bench.figures.report import write_report
from paceggm.bench.runner import run_sweep, store_for

TINY = ["experiment=demo", "rho=[0.1,1.0]", "trials=2", "preprocessing=strict", "progress=false",
        "backend.n_jobs=1", "method=[paceggm,ssp,diagonal]"]

TOY_DATASET = """\
name: toy
raw:
  files: [toy.csv]
  format: csv
  sep: ","
  header: true
  encoding: utf-8
columns:
  keep: numeric
note: Four correlated columns written by the test.
"""


def _toy_csv(path):
    rng = np.random.default_rng(0)
    z = rng.normal(size=(400, 2))
    X = np.column_stack([z[:, 0], z[:, 0] + 0.5 * z[:, 1], z[:, 1], rng.normal(size=400)])
    pd.DataFrame(X, columns=["a", "b", "c", "d"]).to_csv(path, index=False)


@pytest.mark.slow
def test_adding_a_data_set_is_one_registry_file_plus_its_raw_file(tmp_path, monkeypatch):
    # step 1: conf/dataset/toy.yaml (here in a copy of conf/, chosen by PACEGGM_CONF_DIR)
    conf = tmp_path / "conf"
    shutil.copytree(find_conf_dir(), conf)
    (conf / "dataset" / "toy.yaml").write_text(TOY_DATASET, encoding="utf-8")
    # step 2: its raw file in the data directory
    raw = tmp_path / "raw"
    raw.mkdir()
    _toy_csv(raw / "toy.csv")
    monkeypatch.setenv("PACEGGM_CONF_DIR", str(conf))
    monkeypatch.setenv("PACEGGM_DATA_DIR", str(raw))
    runs = tmp_path / "runs"
    cfg = to_plain(compose_config([*TINY, "datasets=[toy]", f"runs_dir={runs}"]))
    summary = run_sweep(cfg)
    assert summary.n_failed == 0, summary.format()
    collect(store_for(cfg), expected=expand(cfg))  # runs/demo/results.parquet, as `paceggm-bench run` writes it
    table = pd.read_parquet(runs / "demo" / "results.parquet")
    assert set(table["dataset"]) == {"toy"} and (table["status"] == "ok").all()
    assert (table["d"] == 4).all() and len(table) == 3 * 2 * 2
    # the figure of every method, drawn alone: that the new data set reaches the figures is what is tested
    log = build_all(runs, tmp_path / "figures", FiguresConfig(formats=("png",), main_datasets=("toy",)),
                    artifacts=[spec for spec in artifacts.ARTIFACTS if spec.name == "main_comparison_all"])
    (main,) = log.artifacts
    assert main.source == "demo" and not main.problems
    assert (tmp_path / "figures" / "main_comparison_all.png").stat().st_size > 0


TOY_FIGURE = Spec("time_per_trial", "figure", "Time per trial",
                  "Whole-fit time per trial vs ρ of every covariance method run with its defaults.",
                  ("demo",), covariance_rows, ("wall_time",), Grid(spread="sem"))


@pytest.mark.slow
def test_adding_a_figure_is_one_entry_in_the_table_of_artifacts(tmp_path, monkeypatch):
    runs = tmp_path / "runs"
    cfg = to_plain(compose_config([*TINY, "datasets=[syn1]", "loader=bench_loaders:small_loader",
                                   f"runs_dir={runs}"]))
    assert run_sweep(cfg).n_failed == 0
    collect(store_for(cfg), expected=expand(cfg))
    # the one step: an entry in ARTIFACTS (its default sources join FiguresConfig's)
    monkeypatch.setattr(artifacts, "ARTIFACTS", [*artifacts.ARTIFACTS, TOY_FIGURE])
    assert artifacts.default_sources()["time_per_trial"] == ("demo",)
    out = tmp_path / "figures"
    log = build_all(runs, out, FiguresConfig(formats=("png",), main_datasets=("syn1",)))
    toy = log.artifacts[-1]
    assert toy.name == "time_per_trial" and toy.skipped is None and toy.source == "demo"
    assert toy.files == [out / "time_per_trial.png"] and toy.files[0].stat().st_size > 0
    assert not toy.problems and toy.trials == 2
    report = write_report(log).read_text(encoding="utf-8")
    assert "## Time per trial" in report and "](time_per_trial.png)" in report
    # a source can be redirected by the config, like every other entry's (this entry alone is built)
    log = build_all(runs, out, FiguresConfig(formats=("png",), sources={"time_per_trial": ("main",)}),
                    artifacts=[TOY_FIGURE])
    assert [a.name for a in log.artifacts] == ["time_per_trial"]
    assert "no results table for main" in log.artifacts[-1].skipped

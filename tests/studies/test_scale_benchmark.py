"""The scale benchmark at a tiny size (the benchmark itself is `make bench-scale`)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from studies import scale_benchmark as sc


@pytest.mark.parametrize("shape", sc.SHAPES)
def test_synthetic_shapes_are_bounded_and_shaped(shape):
    X = sc.synthetic(shape, 40, 4000, np.random.default_rng(0))
    assert X.shape == (4000, 40) and np.abs(X).max() <= 1.0
    C = np.corrcoef(X, rowvar=False)
    if shape == "banded":
        assert abs(C[0, 1]) > 0.5 and np.max(np.abs(np.diag(C, 5))) < 0.1
    if shape == "block":
        assert C[0, 19] > 0.4 and abs(C[0, 20]) < 0.1
    if shape == "lowrank":
        eig = np.linalg.eigvalsh(C)
        assert eig[-5] > 2.0 and eig[-6] < 1.0  # five factors above the noise
    with pytest.raises(ValueError, match="unknown shape"):
        sc.synthetic("circle", 4, 10, np.random.default_rng(0))


@pytest.fixture
def commit(monkeypatch):
    """The commit the sweep believes it runs (a clean one, so finished cells are reused)."""
    from paceggm.bench import config

    current = {"id": "c0ffee"}
    monkeypatch.setattr(config, "_git_commit", lambda: current["id"])
    return current


def test_small_grid_end_to_end(tmp_path, commit):
    """A real cell through the entry point, in its own process: the store, its tables and plot, the exactness
    columns. (One cell: each costs a fresh interpreter importing the library; the sweep's rules over many
    cells are the tests below, with a stand-in fit.)"""
    store = tmp_path / "store"
    code = sc.main(["--dims", "24", "--rhos", "10", "--shapes", "lowrank", "--n", "2000", "--timeout", "120",
                    "--solvers", "newton_pcg", "--store", str(store), "--publish",
                    "--tables", str(tmp_path / "t"), "--figures", str(tmp_path / "f")])
    assert code == 0
    rows = json.loads((store / "scale_benchmark.json").read_text())["rows"]
    assert [(r["rho"], r["solver"], r["status"], r["fit"]) for r in rows] == [(10.0, "newton_pcg", "ok", "finished")]
    for r in rows:
        assert r["rounds"] >= 1 and r["chol_s"] > 0 and r["peak_rss_mb"] > 0 and r["commit"] == "c0ffee"
        assert r["ref_diff"] <= 1e-8 and r["kkt"] <= 1e-8
        assert 0 < r["recon_s"] <= r["cpu_s"]
    assert len(list((store / "cells").glob("*.json"))) == 1
    md = (store / "scale_benchmark.md").read_text()
    assert md.count("| lowrank | 24 |") == 1 and "commit c0ffee" in md
    assert (store / "scale_benchmark.tex").exists() and (store / "scale_benchmark.png").stat().st_size > 0
    # One cell is not the default grid: nothing reaches the committed place.
    assert not (tmp_path / "t").exists() and not (tmp_path / "f").exists()


@pytest.fixture
def quick_plot(monkeypatch):
    """The sweeps' tests redraw the store after every cell: a stand-in plot (the real one is drawn above)."""
    monkeypatch.setattr(sc, "plot", lambda rows, path: path.with_suffix(".png").write_bytes(b"png"))


def _fake_runner(calls: list, fail: set = frozenset()):
    """Stands in for the isolated fit: a row shaped like a real one, instantly."""

    def run(shape, d, rho, solver, args):
        calls.append((shape, d, rho, solver))
        row = {"shape": shape, "d": d, "rho": rho, "solver": solver, "n": args.n,
               "cell_key": sc.cell_key(shape, d, rho, solver, n=args.n, timeout=args.timeout,
                                       reference=d <= args.reference_max_d),
               "timeout": args.timeout, "commit": args.commit}
        if (shape, d) in fail:
            return {**row, "status": "failed", "error": "MemoryError"}
        return {**row, "status": "ok", "fit": "finished", "rounds": d, "n_offdiagonal": d, "largest_block": d,
                "chol_s": 1e-6 * d, "cpu_s": 1e-3 * d, "ms_per_round": 1.0, "round_over_cholesky": 1e3 / d,
                "peak_rss_mb": 100.0, "ref_diff": None, "kkt": None}

    return run


def test_sweeps_resume_and_only_a_whole_grid_from_one_commit_is_published(tmp_path, commit, monkeypatch, quick_plot):
    calls = []
    monkeypatch.setattr(sc, "_run_isolated", _fake_runner(calls))
    # A default grid of two sizes, two shapes, one rho and two solvers instead of 5 x 3 x 2 x 3: the same
    # rules (resume, publish only a whole grid from one commit) over 8 cells rather than 90, each
    # redrawing the store's tables and plot.
    monkeypatch.setattr(sc, "DIMS", (100, 200))
    monkeypatch.setattr(sc, "SHAPES", ("lowrank", "banded"))
    monkeypatch.setattr(sc, "RHOS", (1.0,))
    monkeypatch.setattr(sc, "SOLVERS_COMPARED", ("newton", "auto"))
    store, tables, figures = tmp_path / "store", tmp_path / "t", tmp_path / "f"
    common = ["--store", str(store), "--publish", "--tables", str(tables), "--figures", str(figures)]
    n_grid = len(sc.SHAPES) * len(sc.DIMS) * len(sc.RHOS) * len(sc.SOLVERS_COMPARED)

    # A reduced sweep: stored, drawn in the store, not published.
    assert sc.main(["--dims", "100"] + common) == 0
    per_d = len(sc.SHAPES) * len(sc.RHOS) * len(sc.SOLVERS_COMPARED)
    assert len(calls) == per_d and not tables.exists()
    # The whole grid: the cells already measured by this commit are not run again.
    assert sc.main(common) == 0
    assert len(calls) == n_grid
    published = (tables / "scale_benchmark.md").read_text()
    rows_table, _, versus = published.partition("\n## ")
    assert rows_table.count("\n| ") == n_grid + 1 and (figures / "scale_benchmark.png").exists()
    assert versus.startswith("The default solver") and versus.count("\n| ") == n_grid // 2 + 1  # a row per cell

    # New code, a reduced sweep: the store's table shows every row, the committed one is left alone.
    commit["id"] = "beef00"
    assert sc.main(["--dims", "200", "--shapes", "banded"] + common) == 0
    per_shape_d = len(sc.RHOS) * len(sc.SOLVERS_COMPARED)
    assert len(calls) == n_grid + per_shape_d
    assert (tables / "scale_benchmark.md").read_text() == published
    in_store = json.loads((store / "scale_benchmark.json").read_text())["rows"]
    assert len(in_store) == n_grid and {r["commit"] for r in in_store} == {"c0ffee", "beef00"}

    # --rerun measures again what this commit already measured.
    assert sc.main(["--dims", "200", "--shapes", "banded", "--rerun", "--store", str(store)]) == 0
    assert len(calls) == n_grid + 2 * per_shape_d


def test_a_failed_or_corrupt_cell_is_recorded_and_retried(tmp_path, commit, monkeypatch, quick_plot):
    calls = []
    monkeypatch.setattr(sc, "_run_isolated", _fake_runner(calls, fail={("block", 100)}))
    store = tmp_path / "store"
    args = ["--dims", "100,200", "--rhos", "1", "--solvers", "newton", "--store", str(store)]
    assert sc.main(args) == 1  # a failed cell makes the sweep fail, after every other cell ran
    assert len(calls) == 6
    md = (store / "scale_benchmark.md").read_text()
    assert "error: MemoryError" in md and md.count("| finished |") == 5
    # Damage one finished cell's file: it is reported and measured again, with the failed one.
    victim = sorted((store / "cells").glob("banded-d200*.json"))[0]
    victim.write_text("{not json")
    monkeypatch.setattr(sc, "_run_isolated", _fake_runner(calls))
    assert sc.main(args) == 0
    assert sorted(calls[6:]) == [("banded", 200, 1.0, "newton"), ("block", 100, 1.0, "newton")]
    assert (store / "scale_benchmark.md").read_text().count("| finished |") == 6


def test_a_dirty_tree_never_reuses_a_row(tmp_path, commit, monkeypatch, quick_plot):
    calls = []
    monkeypatch.setattr(sc, "_run_isolated", _fake_runner(calls))
    commit["id"] = "c0ffee+dirty"
    args = ["--dims", "100", "--rhos", "1", "--shapes", "block", "--solvers", "newton", "--store", str(tmp_path)]
    assert sc.main(args) == 0 and sc.main(args) == 0
    assert len(calls) == 2


def test_a_cell_over_its_time_limit_is_recorded_not_fatal():
    row = sc.run_cell("lowrank", 60, 10.0, n=2000, timeout=0.05, reference=True)
    assert row["status"] == "ok" and row["fit"] == "timeout" and row["n_offdiagonal"] is None
    assert "ref_diff" not in row
    assert 0 <= row["recon_s"] <= row["cpu_s"]


def test_a_backend_cell_is_the_default_fit_timed_by_the_wall_clock():
    """The GPU column's code path (solver ``auto+backend``), on the CPU array namespace."""
    cpu = sc.run_cell("lowrank", 16, 10.0, n=2000, timeout=120, reference=True, solver="auto")
    dev = sc.run_cell("lowrank", 16, 10.0, n=2000, timeout=120, reference=True, solver="auto+numpy")
    assert dev["fit"] == cpu["fit"] == "finished" and dev["rounds"] == cpu["rounds"]
    assert dev["ref_diff"] <= 3.5e-9 and dev["wall_s"] > 0
    assert dev["ms_per_round"] == pytest.approx(1e3 * dev["wall_s"] / dev["rounds"])
    # a wall-clock budget stops it like a CPU one
    late = sc.run_cell("lowrank", 60, 10.0, n=2000, timeout=0.05, reference=False, solver="auto+numpy")
    assert late["fit"] == "timeout"


@pytest.mark.parametrize("present", [True, False])
def test_the_gpu_column_is_added_where_a_gpu_is_present_else_skipped_with_the_reason(
        tmp_path, commit, monkeypatch, capsys, present, quick_plot):
    calls = []
    monkeypatch.setattr(sc, "_run_isolated", _fake_runner(calls))
    monkeypatch.setattr(sc, "gpu_available", lambda: (present, "why: no CUDA device" if not present else "H100"))
    args = ["--dims", "100", "--rhos", "10", "--shapes", "lowrank", "--solvers", "auto", "--store", str(tmp_path)]
    assert sc.main(args + ["--gpu", "auto"]) == 0
    assert [c[3] for c in calls] == (["auto", sc.GPU_SOLVER] if present else ["auto"])
    err = capsys.readouterr().err
    assert ("GPU column (auto+torch): on, H100" in err) if present else ("skipped: why: no CUDA device" in err)


def test_the_matched_shape_has_its_targets_statistics_and_the_cols_variant_spans_each_column():
    from paceggm.bench.seeds import derive_seed
    from studies._common import matched_params
    from studies.matched_data import TARGETS, covariance, statistics

    params = matched_params("indian_pines")
    target = TARGETS["indian_pines"]
    # the population the benchmark samples indian_pines-like data from: the loadings the model was fitted on
    got = statistics(covariance(params, target["d"], seed=derive_seed("matched-shape", "indian_pines")))
    assert got["mean_abs_r"] == pytest.approx(target["mean_abs_r"], abs=0.03)
    assert got["e_off"] == pytest.approx(target["e_off"], abs=0.015)
    assert got["eff_rank"] == pytest.approx(target["eff_rank"], rel=0.05)
    assert got["max_abs_r"] == pytest.approx(target["max_abs_r"], abs=0.002)
    X = sc.synthetic("indian_pines", 187, 20_000, np.random.default_rng(0))
    assert statistics(np.cov(X, rowvar=False))["e_off"] == pytest.approx(target["e_off"], abs=0.02)  # the sample
    assert sc.cell_size("indian_pines_cols", 5, 7) == (187, 9144) and sc.cell_size("hard_cols", 50, 70) == (50, 70)
    assert {sc.target_of(s) for s in ("indian_pines", "indian_pines_cols", "hard", "hard_cols")} == {"indian_pines"}
    rng = np.random.default_rng(1)
    X = sc.synthetic("hard_cols", 30, 500, rng)
    np.testing.assert_allclose(X.min(axis=0), -1.0, atol=1e-12)
    np.testing.assert_allclose(X.max(axis=0), 1.0, atol=1e-12)
    Y = sc.synthetic("hard", 30, 500, np.random.default_rng(1))
    assert np.abs(Y).max() == pytest.approx(1.0) and np.ptp(Y, axis=0).min() < 1.0  # one factor for all columns
    # the same draws, scaled per column instead of by one factor: the correlations are the same
    np.testing.assert_allclose(np.corrcoef(X, rowvar=False), np.corrcoef(Y, rowvar=False), atol=1e-10)


def test_published_seconds_are_those_of_the_imitated_data_set_only():
    assert sc.published_for("indian_pines", 1.0) == pytest.approx(2714, rel=0.01)
    assert sc.published_for("indian_pines_cols", 10.0) == sc.published_for("indian_pines", 10.0) is not None
    assert sc.published_for("hard", 10.0) is None and sc.published_for("hard_cols", 10.0) is None  # d = 1,000+
    assert sc.published_for("lowrank", 1.0) is None


def _row(shape, d, rho, solver, cpu_s, fit="finished"):
    return {"shape": shape, "d": d, "rho": rho, "solver": solver, "cpu_s": cpu_s, "fit": fit, "status": "ok"}


def test_default_against_best_counts_a_stopped_fit_as_slower_than_any_finished_one():
    rows = [_row("lowrank", 100, 1.0, "newton", 2.0), _row("lowrank", 100, 1.0, "newton_pcg", 1.0),
            _row("lowrank", 100, 1.0, "auto", 1.1),
            _row("lowrank", 400, 10.0, "newton", 600.0, "timeout"), _row("lowrank", 400, 10.0, "newton_pcg", 20.0),
            _row("lowrank", 400, 10.0, "auto", 30.0),
            _row("hard_cols", 1000, 10.0, "newton", 600.0, "timeout"),
            _row("hard_cols", 1000, 10.0, "newton_pcg", 600.0, "timeout"),
            _row("hard_cols", 1000, 10.0, "auto", 600.0, "timeout"),
            _row("banded", 100, 1.0, "auto+torch", 0.1), _row("banded", 100, 1.0, "newton", 1.0)]
    cells = {(c["shape"], c["d"]): c for c in sc.default_vs_best(rows)}
    assert set(cells) == {("lowrank", 100), ("lowrank", 400), ("hard_cols", 1000)}  # banded: no default on the CPU
    assert cells["lowrank", 100]["best"] == "newton_pcg" and cells["lowrank", 100]["ratio"] == pytest.approx(1.1)
    assert cells["lowrank", 100]["within"] is True
    assert cells["lowrank", 400]["best"] == "newton_pcg" and cells["lowrank", 400]["within"] is False
    assert cells["hard_cols", 1000]["ratio"] is None and cells["hard_cols", 1000]["within"] is None
    text = "".join(sc._default_vs_best_markdown(rows))
    assert "within 20 % of the best in 1 of 2 cells" in text and "| **no** |" in text and "600.0 (timeout)" in text


def test_scale_rows_grid_and_factor_shapes():
    """--scale-rows: hard_cols up to d = 10,000 and the factor shapes, each with the previous default beside it."""
    args = sc._parser().parse_args(["--scale-rows"])
    args.solvers = list(sc.SCALE_ROWS_SOLVERS)
    grid = sc._grid(args)
    assert {(s, d) for s, d, _, _ in grid if s == "hard_cols"} == {("hard_cols", d) for d in sc.SCALE_ROWS_DIMS}
    factors = {s for s, d, _, _ in grid if sc.is_factor_shape(s) and d == sc.FACTOR_D}
    assert len(factors) == len(sc.FACTOR_COUNTS) * len(sc.FACTOR_SEEDS)
    assert {solver for *_, solver in grid} == {"auto", "newton_pcg", "newton_chordal"}
    X = sc.factor_data("factors5_seed1", 30, 400, np.random.default_rng(0))
    assert X.shape == (400, 30) and np.abs(X).max() == 1.0 and np.allclose(np.abs(X).max(axis=0), 1.0)
    assert np.array_equal(X, sc.factor_data("factors5_seed1", 30, 400, np.random.default_rng(0)))
    assert not np.allclose(X, sc.factor_data("factors5_seed2", 30, 400, np.random.default_rng(0)))
    assert sorted(["factors10_seed1", "hard_cols", "factors3_seed2"], key=sc._shape_rank) == [
        "hard_cols", "factors3_seed2", "factors10_seed1"]

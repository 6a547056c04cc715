"""The scale benchmark at a tiny size (the benchmark itself is `make bench-scale`)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from paceggm.bench import scale_benchmark as sc


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


def test_small_grid_end_to_end(tmp_path):
    """Four cells through the real entry point: tables, plot and exactness columns."""
    code = sc.main(["--dims", "24", "--rhos", "1,10", "--shapes", "lowrank", "--n", "2000", "--timeout", "120",
                    "--solvers", "newton,newton_pcg",
                    "--tables", str(tmp_path / "t"), "--figures", str(tmp_path / "f")])
    assert code == 0
    rows = json.loads((tmp_path / "t" / "scale_benchmark.json").read_text())["rows"]
    assert [(r["rho"], r["solver"], r["status"]) for r in rows] == [
        (1.0, "newton", "ok"), (1.0, "newton_pcg", "ok"), (10.0, "newton", "ok"), (10.0, "newton_pcg", "ok")]
    for r in rows:
        assert r["rounds"] >= 1 and r["chol_s"] > 0 and r["peak_rss_mb"] > 0
        assert r["ref_diff"] <= 1e-8 and r["kkt"] <= 1e-8
    md = (tmp_path / "t" / "scale_benchmark.md").read_text()
    assert md.count("| lowrank | 24 |") == 4
    assert (tmp_path / "t" / "scale_benchmark.tex").exists()
    assert (tmp_path / "f" / "scale_benchmark.png").stat().st_size > 0
    # Tables of sweeps run apart are drawn together, in grid order.
    assert sc.main(["--merge", str(tmp_path / "t" / "scale_benchmark.json"), str(tmp_path / "t" / "scale_benchmark.json"),
                    "--tables", str(tmp_path / "m"), "--figures", str(tmp_path / "m")]) == 0
    merged = json.loads((tmp_path / "m" / "scale_benchmark.json").read_text())["rows"]
    assert len(merged) == 8 and [r["rho"] for r in merged] == [1.0] * 4 + [10.0] * 4


def test_a_cell_over_its_time_limit_is_recorded_not_fatal():
    row = sc.run_cell("lowrank", 60, 10.0, n=2000, timeout=0.05, reference=True)
    assert row["status"] == "timeout" and row["n_offdiagonal"] is None and "ref_diff" not in row

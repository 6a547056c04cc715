"""The reference-solver benchmark on a quick synthetic run (the benchmark itself is `make bench`)."""

from __future__ import annotations

import numpy as np

from studies import reference_solvers as rs


def test_replayed_blocks_are_the_components_a_run_re_solves():
    problems, n_rounds = rs.replayed_blocks(rs._synthetic(), rho=10.0, n_blocks=3)
    assert n_rounds > 6 and 1 <= len(problems) <= 3
    for p in problems:
        assert p.d >= 2 and np.all(p.lam[p.rows, p.cols] > 0)


def test_table_reports_both_settings_with_sane_errors(tmp_path):
    out = tmp_path / "reference_solvers.md"
    rs.main(["--quick", "--blocks", "2", "--out", str(out)])
    text = out.read_text()
    rows = [line for line in text.splitlines() if line.startswith("| ") and line[2].isdigit()]
    assert rows and "| **all** |" in text
    problems, _ = rs.replayed_blocks(rs._synthetic(), rho=10.0, n_blocks=2)
    row = rs.measure_block(problems[-1], lambda s: None)
    # IPM reaches Newton's exact completion to its stall level with either cap on this small block.
    assert row["err_ipm"] < 1e-3 and row["err_ipm_prev"] < 1e-3
    # PGD's looser library tolerance costs fewer iterations and stays within ~1e-3 of the path's limit.
    for init in (0, 1):
        assert row[f"it_pgd{init}"] < row[f"it_pgd{init}_prev"]
        assert row[f"dist_pgd{init}_prev"] < row[f"dist_pgd{init}"] < 5e-3

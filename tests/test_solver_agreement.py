"""The real-data agreement check: it passes the exact solver and catches one that moves the answer."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from paceggm import SOLVERS
from paceggm.bench import solver_agreement as sa
from paceggm.reconstruction import register_solver
from paceggm.reconstruction.newton import solve_newton

ARGS = ["--datasets", "breast_cancer_sklearn", "--rhos", "10", "--trials", "1"]


@pytest.fixture
def perturbed_solver():
    """``newton`` with its answers moved by 1e-6 relative: a solver that is not exact."""
    def solve(p, *, init=None, **options):
        sol = solve_newton(p, init=init, **options)
        return dataclasses.replace(sol, W=sol.W * (1.0 + 1e-6))

    register_solver("perturbed", dataclasses.replace(SOLVERS["newton"], solve=solve))
    yield "perturbed"
    SOLVERS.pop("perturbed")


def test_newton_pcg_agrees_with_the_reference(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(sa, "TABLE", tmp_path / "solver_agreement.md")
    assert sa.main(ARGS + ["--publish"]) == 0
    out = capsys.readouterr()
    assert "1 of 1 fits agree." in out.out
    # A reduced set never overwrites the published table.
    assert not sa.TABLE.exists() and "not published" in out.err


def test_a_solver_that_moves_the_answer_fails_the_check(perturbed_solver, capsys):
    assert sa.main(ARGS + ["--solver", perturbed_solver]) == 1
    assert "DISAGREES" in capsys.readouterr().err


def test_compare_reports_the_difference_and_the_selection(perturbed_solver):
    from paceggm.bench.data import load_dataset

    X = np.array(load_dataset("breast_cancer_sklearn", preprocessing="paper").X)
    row = sa.compare(X, rho=10.0, seed=3, solver=perturbed_solver)
    assert 1e-7 < row["rel_diff"] < 1e-5 and row["rounds"] > 0
    assert not sa.agrees(row)
    same = sa.compare(X, rho=10.0, seed=3, solver="newton")
    assert same["same_selection"] and same["rel_diff"] == 0.0 and sa.agrees(same)


def test_unknown_solver_is_a_usage_error():
    with pytest.raises(SystemExit):
        sa.main(["--solver", "no-such-solver"])


def test_an_unknown_or_missing_data_set_is_a_clear_error_not_a_traceback(tmp_path, capsys, monkeypatch):
    from paceggm.bench.data.sources import OFFLINE_ENV

    monkeypatch.setenv(OFFLINE_ENV, "1")  # no download attempt: the file is simply missing
    assert sa.main(["--datasets", "no-such-data", "--trials", "1"]) == 2
    assert "no-such-data" in capsys.readouterr().err
    assert sa.main(["--datasets", "adult", "--trials", "1", "--data-dir", str(tmp_path)]) == 2
    assert "adult" in capsys.readouterr().err

"""Smoke test of the solver benchmark's pieces (the benchmark itself is `make bench`)."""

from __future__ import annotations

import numpy as np
import pytest

from paceggm.reconstruction.chordal import chordal_maxdet_completion
from studies import solver_benchmark as sb


@pytest.mark.parametrize("kind", ["forest", "tree", "band3"])
def test_chordal_references_are_max_det_completions(kind):
    """The closed forms the benchmark measures against: right pattern, inverse sparse."""
    rng = np.random.default_rng(0)
    d = 9
    pattern, cliques, seps = sb._chordal(kind, d, rng)
    sigma = sb._random_cov(d, rng)
    W = chordal_maxdet_completion(sigma, cliques, seps)
    np.testing.assert_allclose(W[pattern], sigma[pattern], rtol=1e-10)
    P = np.linalg.inv(W)
    assert np.max(np.abs(P[~pattern])) <= 1e-10 * np.max(np.abs(P))


def test_compare_and_table(tmp_path):
    rng = np.random.default_rng(1)
    d = 5
    pattern, cliques, seps = sb._chordal("tree", d, rng)
    sigma = sb._random_cov(d, rng)
    y = np.where(pattern, sigma, 0.0)
    lines = []
    row = sb._compare("chordal tree", d, pattern, y, sb._precisions(pattern, rng),
                      chordal_maxdet_completion(sigma, cliques, seps), lines.append)
    assert row["mu_newton"] == 0.0 and row["err_newton"] <= 1e-8
    assert row["err_ipm"] <= 1e-2 and row["t_newton"] > 0 and row["t_ipm"] > 0
    out = tmp_path / "t.md"
    sb.write_table([row], [], out, 0.0, ["a note"])
    text = out.read_text()
    assert lines[0] in text and "a note" in text

"""The stopping-rule benchmark on a quick synthetic run (the benchmark itself is `make bench-stopping`)."""

from __future__ import annotations

import numpy as np

from paceggm.bench import stopping_rule as sr
from paceggm.reconstruction import reconstruct


def test_kkt_residual_is_zero_at_the_max_entropy_completion_only():
    rng = np.random.default_rng(0)
    A = rng.normal(size=(6, 6))
    y = A @ A.T / 6 + np.eye(6)
    lam = np.eye(6) + np.eye(6, k=1) + np.eye(6, k=-1)  # a path: chordal, closed-form completion exists
    W = reconstruct(y, 1e4 * lam).covariance
    assert sr.kkt_residual(W, lam > 0) < 1e-6
    assert sr.kkt_residual(y, lam > 0) > 1e-2  # a completion, but not the max-entropy one


def test_table_orders_candidates_by_cost_and_reports_error_and_kkt(tmp_path):
    out = tmp_path / "stopping_rule.md"
    sr.main(["--quick", "--blocks", "2", "--out", str(out)])
    text = out.read_text()
    rows = {line.split(" | ")[0][2:]: line.split(" | ") for line in text.splitlines()
            if line.startswith("| ") and line.split(" | ")[0][2:] in sr.CANDIDATES and "=" not in line}
    assert set(rows) == set(sr.CANDIDATES)
    iters = {k: int(v[3].replace(",", "")) for k, v in rows.items()}
    err = {k: float(v[5]) for k, v in rows.items()}
    assert iters["E"] < iters["C"] < iters["A"] < iters["tight"]
    assert err["tight"] < err["A"] < err["E"] and err["tight"] < 1e-3  # coarser stopping, larger distance

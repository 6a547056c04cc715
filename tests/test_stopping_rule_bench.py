"""The stopping-rule benchmark on a quick synthetic run (the benchmark itself is `make bench-stopping`)."""

from __future__ import annotations

import numpy as np
import pytest

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


def test_pgd_table_coarser_tolerance_fewer_iterations_farther_from_the_limit(tmp_path):
    from paceggm.bench import stopping_rule_pgd as srp

    out = tmp_path / "stopping_rule_pgd.md"
    srp.main(["--quick", "--blocks", "2", "--out", str(out)])
    rows = [line.split(" | ") for line in out.read_text().splitlines() if line.startswith("| 0 | ")
            or line.startswith("| 1 | ")]
    assert len(rows) == 2 * len(srp.CANDIDATES)
    for init in ("0", "1"):
        mine = [r for r in rows if r[0] == f"| {init}"]
        assert [r[1] for r in mine] == list(srp.CANDIDATES)  # tight first, coarser after
        iters = [int(r[4].replace(",", "")) for r in mine]
        dist = [float(r[6].rstrip(" |")) for r in mine]
        assert iters == sorted(iters, reverse=True) and iters[-1] < iters[0]
        assert dist == sorted(dist) and dist[0] < 1e-2


def test_trial_noise_is_the_spread_of_the_committed_rows(tmp_path):
    import pandas as pd

    from paceggm.bench import stopping_rule_pgd as srp

    rows = []
    for trial, (m0, m1, ipm, newton) in enumerate([(1.0, 2.0, 3.0, 3.0), (3.0, 2.0, 4.0, 2.0)]):
        for solver, m in (("pgd0", m0), ("pgd1", m1), ("ipm", ipm), ("newton", newton)):
            rows.append(dict(dataset="a", rho=10.0, status="ok", trial=trial, p_solver=solver,
                             mahalanobis=m, frobenius=2 * m))
    rows.append(dict(dataset="a", rho=2.0, status="ok", trial=0, p_solver="pgd0", mahalanobis=99.0,
                     frobenius=99.0))
    path = tmp_path / "results.parquet"
    pd.DataFrame(rows).to_parquet(path)
    noise = srp.trial_noise(path, "a", 10.0)
    cv = np.std([1.0, 3.0], ddof=1) / 2.0
    assert noise["cv_pgd0_mahalanobis"] == pytest.approx(cv) and noise["cv_pgd0_frobenius"] == pytest.approx(cv)
    assert noise["cv_pgd1_mahalanobis"] == 0.0
    assert noise["ipm_newton_mahalanobis"] == pytest.approx((np.sqrt(2.0), 1.0, 2.0))

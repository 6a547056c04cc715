"""The stopping-rule benchmark on a quick synthetic run (the benchmark itself is `make bench-stopping`)."""

from __future__ import annotations

import numpy as np
import pytest

from studies import stopping_rule as sr


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
    from studies import stopping_rule_pgd as srp

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


def _pgd_rows(errors, *, dataset="a", rho=10.0, seconds=1.0):
    """Reference-style rows: ``errors[trial] = (pgd0, pgd1, newton)`` Mahalanobis errors (Frobenius = 2×)."""
    return [dict(dataset=dataset, rho=rho, status="ok", trial=t, seed=100 + t, p_solver=s, mahalanobis=m,
                 frobenius=2 * m, wall_time=seconds)
            for t, row in enumerate(errors) for s, m in zip(("pgd0", "pgd1", "newton"), row)]


def test_pgd_trial_noise_is_the_band_of_each_variants_own_reference_rows(tmp_path):
    import pandas as pd

    from studies import stopping_rule_pgd as srp

    path = tmp_path / "results.parquet"
    pd.DataFrame(_pgd_rows([(1.0, 2.0, 5.0), (4.0, 2.0, 7.0), (2.0, 2.0, 1.0)])).to_parquet(path)
    noise = srp.trial_noise(path, "a", 10.0, trials=3)
    expected = np.exp(2 * np.std(np.log([1.0, 4.0, 2.0]), ddof=1) / np.sqrt(3))
    assert noise["pgd0"]["mahalanobis"] == pytest.approx(expected)
    assert noise["pgd0"]["frobenius"] == pytest.approx(expected)  # a constant factor leaves the log spread
    assert noise["pgd1"] == {"mahalanobis": 1.0, "frobenius": 1.0}
    assert srp.trial_noise(path, "a", 10.0, trials=2)["pgd0"]["mahalanobis"] == pytest.approx(
        np.exp(2 * np.std(np.log([1.0, 4.0]), ddof=1) / np.sqrt(2)))


def test_reproduction_is_paired_cell_by_cell_with_the_reference_and_judged_by_its_noise(tmp_path):
    import pandas as pd

    from studies import stopping_rule_pgd as srp

    reference = [(1.0, 2.0, 1.0), (4.0, 2.0, 1.0), (2.0, 2.0, 1.0)]
    # pgd0 moves every trial by ×1.1 (inside its band of ×3.1); pgd1's reference has no spread, so ×1.5 is out.
    reproduced = [(1.1, 3.0, 1.0), (4.4, 3.0, 1.0), (2.2, 3.0, 1.0)]
    ref, new = tmp_path / "ref.parquet", tmp_path / "new.parquet"
    pd.DataFrame(_pgd_rows(reference, seconds=10.0) + _pgd_rows([(9.0, 9.0, 9.0)], rho=1.0)).to_parquet(ref)
    rows = _pgd_rows(reproduced, seconds=2.0)
    rows[0]["seed"] = 7  # another seed is another cell: not paired
    pd.DataFrame(rows).to_parquet(new)
    pairs = {r["solver"]: r for r in srp.paired_reproduction(ref, new)}
    assert set(pairs) == {"pgd0", "pgd1"} and (pairs["pgd0"]["trials"], pairs["pgd1"]["trials"]) == (2, 3)
    assert pairs["pgd0"]["mahalanobis"] == pytest.approx((1.1, 1.1, 1.1))
    assert pairs["pgd1"]["frobenius"] == pytest.approx((1.5, 1.5, 1.5))
    assert (pairs["pgd1"]["seconds_ref"], pairs["pgd1"]["seconds_new"]) == (10.0, 2.0)
    out = tmp_path / "t.md"
    srp.write_reproduction_table(list(pairs.values()), out, reference=ref, results=new)
    text = out.read_text()
    lines = {ln.split(" | ")[2]: ln for ln in text.splitlines() if ln.startswith("| a | 10 |")}
    assert lines["pgd0"].endswith("| yes |") and lines["pgd1"].endswith("| **no** |")
    assert "Within trial noise in 1 of 2" in text and "cost 10 core-seconds here and 50 in the reference" in text


def test_noise_band_is_twice_the_standard_error_of_newtons_log_errors(tmp_path):
    import pandas as pd

    newton = [1.0, 2.0, 4.0, 8.0]
    rows = [dict(dataset="a", rho=10.0, status="ok", trial=t, p_solver=s, mahalanobis=m if s == "newton" else 50.0,
                 frobenius=3.0 if s == "newton" else 50.0) for t, m in enumerate(newton) for s in ("newton", "ipm")]
    rows.append(dict(dataset="a", rho=1.0, status="ok", trial=0, p_solver="newton", mahalanobis=99.0, frobenius=9.0))
    path = tmp_path / "reference.parquet"
    pd.DataFrame(rows).to_parquet(path)
    band = sr.noise_band(path, "a", 10.0, trials=4)
    logs = np.log(newton)
    assert band["mahalanobis"] == pytest.approx(np.exp(2 * np.std(logs, ddof=1) / 2.0))
    assert band["frobenius"] == pytest.approx(1.0)  # no spread: no noise
    assert sr.noise_band(path, "a", 10.0, trials=2)["mahalanobis"] == pytest.approx(
        np.exp(2 * np.std(logs[:2], ddof=1) / np.sqrt(2)))


def test_runs_table_says_whether_each_mean_is_within_trial_noise(tmp_path):
    def cand(m, f):
        return dict(seconds=1.0, reference_seconds=9.0, trials=10, mahalanobis=(m, m, m), frobenius=(f, f, f),
                    distance=(1e-3, 5e-4, 2e-3),
                    tight_mahalanobis=(1.1, 0.5, 2.6), tight_frobenius=(1.0, 1.0, 1.0))

    blocks = {name: dict(seconds=1.0, iters=10, err=1e-3, kkt=1e-3, capped=0, solves=1) for name in sr.CANDIDATES}
    runs = {("a", 10.0): dict(noise=dict(mahalanobis=1.3, frobenius=1.05),
                              candidates={"warm": cand(1.19, 1.01), "E": cand(2.5, 1.02)})}
    out = tmp_path / "t.md"
    sr.write_table(blocks, runs, out, source="x", rho=10.0, n_rounds=5, n_blocks=1, elapsed=1.0)
    lines = {ln.split(" | ")[2]: ln for ln in out.read_text().splitlines() if ln.startswith("| a | 10 |")}
    assert lines["warm"].endswith("| yes |") and lines["E"].endswith("| **no** |")
    assert lines["tight (reference)"].endswith("| yes |") and "| 9.0 |" in lines["tight (reference)"]
    assert "×1.30, ×1.05" in lines["warm"] and "| 1.0e-03 [5.0e-04, 2.0e-03] |" in lines["warm"]

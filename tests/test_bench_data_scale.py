"""The harness's ``data_scale``: validated at the config boundary, in the key and the ``p_*`` columns only when
it is not 1, and applied to the preprocessed data before the estimator checks or clips the bound."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from paceggm.bench.cells import expand
from paceggm.bench.collect import collect, grid_view
from paceggm.bench.config import compose_config, to_plain
from paceggm.bench.config_schema import ConfigError
from paceggm.bench.execute import prepare_data, run_cell, scaled
from paceggm.bench.runner import run_sweep, store_for
from paceggm.bench.seeds import seed_sequence
from paceggm.metrics import frobenius_error

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_loaders import small_loader  # noqa: E402

BASE = ["experiment=demo", "method=[paceggm,ssp]", "datasets=[syn1]", "rho=[0.1,1.0]", "trials=2",
        "loader=bench_loaders:small_loader", "progress=false", "backend.n_jobs=1"]


def _cells(*overrides):
    return expand(to_plain(compose_config([*BASE, *overrides])))


def test_the_default_scale_leaves_every_key_and_record_unchanged():
    default = _cells()
    for explicit in (_cells("data_scale=1"), _cells("data_scale=1.0")):
        assert [c.key for c in explicit] == [c.key for c in default]
        assert [c.recorded_params for c in explicit] == [c.param_dict for c in default]


def test_another_scale_is_another_computation_with_the_same_noise():
    default, half = _cells(), _cells("data_scale=0.5")
    assert not {c.key for c in default} & {c.key for c in half}
    assert [c.seed for c in half] == [c.seed for c in default]  # paired across scales
    assert all(c.recorded_params == {**c.param_dict, "data_scale": 0.5} for c in half)
    assert "data_scale" not in half[0].param_dict  # never passed to the estimator


@pytest.mark.parametrize("value, error", [
    ("0", ValueError), ("-1", ValueError), ("inf", ValueError), ("nan", ValueError),
    ("abc", ConfigError), ("true", ConfigError), ("[0.5,1]", ConfigError),
])
def test_a_scale_that_is_not_a_positive_finite_number_is_refused(value, error):
    with pytest.raises(error, match="data_scale"):
        _cells(f"data_scale={value}")


def test_a_method_cannot_take_data_scale_as_its_own_parameter():
    with pytest.raises(ValueError, match="set by the harness"):
        _cells("+method.ssp.params.data_scale=2")


def test_the_sweep_records_the_scale_as_a_parameter_column(tmp_path):
    plain = to_plain(compose_config([*BASE, f"runs_dir={tmp_path}"]))
    half = to_plain(compose_config([*BASE, f"runs_dir={tmp_path}", "data_scale=0.5"]))
    for cfg in (plain, half):  # one store holds both: the keys differ
        summary = run_sweep(cfg)
        assert summary.n_failed == 0
    table, _ = collect(store_for(plain))
    df_plain, df_half = grid_view(table, expand(plain)), grid_view(table, expand(half))
    assert len(df_plain) == len(df_half) == 8
    # the store holds both, so its table has the column; the default cells record no scale
    assert df_plain["p_data_scale"].isna().all()
    assert all("data_scale" not in json.loads(p) for p in df_plain["params"])
    assert (df_half["p_data_scale"] == 0.5).all()
    assert all(json.loads(p)["data_scale"] == 0.5 for p in df_half["params"])
    # at a smaller scale the signal is smaller at the same noise: SSP's error is the same noise, so its
    # Frobenius error is unchanged while PACE-GGM measures at most as many entries in total
    by = ["dataset", "variant", "rho", "trial"]
    a, b = (d.set_index(by).sort_index() for d in (df_plain, df_half))
    ssp = a.index.get_level_values("variant") == "ssp"
    np.testing.assert_allclose(b.loc[ssp, "frobenius"], a.loc[ssp, "frobenius"], rtol=1e-9)
    assert b.loc[~ssp, "n_measured_offdiag"].sum() <= a.loc[~ssp, "n_measured_offdiag"].sum()


def _data(bound_check):
    ds = small_loader("syn1", preprocessing="strict")
    return prepare_data(ds, name="syn1", preprocessing="strict", bound_check=bound_check, need_target=False)


def test_the_scale_is_applied_before_the_bound_is_clipped_or_checked():
    from paceggm.baselines import SSP

    cell = next(c for c in _cells("preprocessing=strict", "bound_check=clip", "data_scale=2")
                if c.method == "ssp")
    data = _data("clip")
    assert np.abs(data.X).max() == pytest.approx(1.0)  # strict data: the bound holds before scaling
    row = run_cell(cell, data, experiment="demo")
    assert row["status"] == "ok", row["error"]
    # what SSP computes on the scaled data, clipped to the bound, against Σ of the scaled data
    X2 = 2.0 * data.X
    est = SSP(cell.rho, bound=1.0, bound_check="clip", random_state=seed_sequence(cell.seed)).fit(X2)
    assert row["frobenius"] == pytest.approx(frobenius_error(cov_true=X2.T @ X2 / len(X2), cov_pred=est.covariance_), rel=1e-12)
    clipped = np.clip(X2, -1, 1)
    assert not np.allclose(est.covariance_, SSP(cell.rho, random_state=seed_sequence(cell.seed)).fit(
        data.X).covariance_ * 4)  # the clip changed what was estimated
    assert np.allclose(est.covariance_, SSP(cell.rho, random_state=seed_sequence(cell.seed)).fit(
        clipped).covariance_)
    # under "raise" the scaled data exceed the bound: the cell fails, recorded, naming the bound
    strict = next(c for c in _cells("preprocessing=strict", "bound_check=raise", "data_scale=2")
                  if c.method == "ssp")
    failed = run_cell(strict, _data("raise"), experiment="demo")
    assert failed["status"] == "failed" and "bound" in failed["error"]
    # and a scale below 1 keeps strict data inside it
    assert run_cell(next(c for c in _cells("preprocessing=strict", "data_scale=0.5") if c.method == "ssp"),
                    _data("raise"), experiment="demo")["status"] == "ok"


def test_scaled_data_multiplies_every_array_and_leaves_scale_one_untouched():
    data = _data("raise")
    assert scaled(data, 1.0) is data
    half = scaled(data, 0.5)
    np.testing.assert_array_equal(half.X, 0.5 * data.X)
    np.testing.assert_allclose(half.truth, 0.25 * data.truth, rtol=1e-12)
    ds = small_loader("syn1", preprocessing="paper")
    reg = prepare_data(ds, name="syn1", preprocessing="paper", bound_check="waive", need_target=True)
    half = scaled(reg, 0.5)
    np.testing.assert_array_equal(half.features, 0.5 * reg.features)
    np.testing.assert_array_equal(half.target, 0.5 * reg.target)


def test_verify_rebuilds_a_scaled_cell_from_its_row():
    from paceggm.bench import verify as V

    cfg = to_plain(compose_config([*BASE, "data_scale=0.65"]))
    cell = next(c for c in expand(cfg) if c.method == "paceggm")
    row = {"method": cell.method, "params": json.dumps(cell.recorded_params), "preprocessing": cell.preprocessing,
           "dataset": cell.dataset, "variant": cell.variant, "rho": cell.rho, "trial": cell.trial,
           "cell_key": cell.key, "seed": cell.seed}
    rebuilt = V.rebuild_cell(row, cfg)
    assert rebuilt == cell and rebuilt.data_scale == 0.65

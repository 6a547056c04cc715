"""The method registry is the one list of methods: configs, cells, figures and the fitted interface read it."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from paceggm.bench.cells import expand
from paceggm.bench.collect import collect
from paceggm.bench.config import compose_config, to_plain
from paceggm.bench.figures import style
from paceggm.bench.fitted import FitRecord, read_fit
from paceggm.bench.methods import METHODS, MethodSpec, MethodStyle, register, resolve
from paceggm.bench.runner import run_sweep, store_for
from paceggm.bench.schema import SPEND_RTOL
from paceggm.privacy import gaussian_sigma

from conftest import bounded_gaussian, package_methods

TINY = ["experiment=demo", "datasets=[syn1]", "rho=[1.0]", "trials=2", "preprocessing=paper",
        "loader=bench_loaders:small_loader", "progress=false", "backend.n_jobs=1"]


class NoisyDiagonal:
    """A toy private covariance: the variances with Gaussian noise, off-diagonal entries zero."""

    def __init__(self, rho, *, bound=1.0, bound_check="raise", random_state=None, shrink=1.0):
        self.rho, self.bound, self.bound_check, self.random_state, self.shrink = (
            rho, bound, bound_check, random_state, shrink)

    def fit(self, X):
        n, d = X.shape
        sigma = gaussian_sigma(rho=self.rho / d, sensitivity=2 * self.bound ** 2 / n)
        noisy = np.mean(X * X, axis=0) + np.random.default_rng(self.random_state).normal(0, sigma, d)
        self.covariance_ = np.diag(np.maximum(self.shrink * noisy, 0.0))
        self.rho_spent_ = self.rho
        return self


TOY_STYLE = MethodStyle("Noisy diagonal", "#123456", "*", (0, (2, 2)), 35)
TOY = MethodSpec("noisy_diagonal", f"{__name__}:NoisyDiagonal", "covariance", "diagonal",
                 params={"shrink": 1.0}, grid={"shrink": [1.0, 0.5]}, style=TOY_STYLE)


def test_adding_a_method_is_one_registry_entry_plus_its_class(tmp_path, monkeypatch):
    monkeypatch.setitem(METHODS, TOY.key, METHODS["ssp"])  # restored after the test
    register(TOY)
    cfg = to_plain(compose_config([*TINY, f"runs_dir={tmp_path}", "method=[noisy_diagonal,ssp]"]))
    assert cfg["method"]["noisy_diagonal"]["grid"] == {"shrink": [1.0, 0.5]}
    summary = run_sweep(cfg)
    assert summary.n_failed == 0, summary.format()
    df, report = collect(store_for(cfg), expected=expand(cfg))
    assert not report.missing
    toy = df[df["method"] == "noisy_diagonal"]
    assert len(toy) == 4 and (toy["status"] == "ok").all()
    assert set(toy["variant"]) == {"noisy_diagonal[shrink=1]", "noisy_diagonal[shrink=0.5]"}
    assert (toy["n_measured_diag"] == toy["d"]).all() and (toy["n_measured_offdiag"] == 0).all()
    assert np.isfinite(toy["frobenius"]).all()
    # the figures' style lookup finds it without any other edit
    assert style.method_style("noisy_diagonal") == TOY_STYLE
    assert style.variant_style("noisy_diagonal", {"shrink": 0.5}).label == "Noisy diagonal (shrink=0.5)"
    assert style.variant_order(["ssp", "noisy_diagonal"]) == ["ssp", "noisy_diagonal"]


def test_every_registered_method_composes_from_the_registry():
    for key, spec in METHODS.items():
        cfg = to_plain(compose_config(["experiment=demo", f"method=[{key}]"]))
        assert cfg["method"] == {key: spec.config()}, key
    cfg = to_plain(compose_config(["experiment=demo", "method.paceggm.params.solver=ipm"]))
    assert cfg["method"]["paceggm"]["params"]["solver"] == "ipm"
    assert {c.param_dict["solver"] for c in expand(cfg) if c.method == "paceggm"} == {"ipm"}


def test_every_method_of_the_package_has_a_style_and_distinct_order():
    # a user's method may leave its style to be derived from its key (paceggm.bench.figures.style)
    ours = list(package_methods().values())
    orders = [spec.style.order for spec in ours]
    assert all(spec.style is not None for spec in ours)
    assert len(set(orders)) == len(orders)


def test_the_regression_key_is_one_everywhere():
    assert "paceggm_regression" in METHODS and "pace_ggm_regression" not in METHODS
    assert resolve(METHODS["paceggm_regression"]).__name__ == "PACEGGMRegression"


@pytest.mark.parametrize("key", sorted(METHODS))
def test_every_registered_method_keeps_the_fitted_interface(key):
    spec = METHODS[key]
    cls = resolve(spec)
    X = bounded_gaussian(400, 4, seed=1)
    est = cls(1.0, bound=1.0, bound_check="raise", random_state=0,
              **{k: v for k, v in spec.params.items() if v is not None})
    if spec.task == "regression":
        est.fit(X[:, :3], X[:, 3])
        d = 4
        assert np.asarray(est.predict(X[:, :3])).shape == (400,)
    else:
        est.fit(X)
        d = 4
        assert np.asarray(est.covariance_).shape == (4, 4)
    rec = read_fit(est, spec, d)
    assert isinstance(rec, FitRecord)
    assert 0 < rec.rho_spent <= 1.0 * (1 + 1e-12)
    if spec.measures != "none":
        assert rec.n_measured_diag == d and 0 <= rec.n_measured_offdiag <= d * (d - 1) // 2
    if spec.measures == "pattern":
        # n_rounds: 0 for a pattern fixed in advance (no adaptive round)
        assert rec.n_rounds >= 0 and rec.solve_time >= 0 and isinstance(rec.converged, bool)
    else:
        assert rec.converged is None


def test_a_method_that_does_not_keep_its_side_fails_with_the_attribute_named():
    class Forgetful(NoisyDiagonal):
        def fit(self, X):
            super().fit(X)
            del self.rho_spent_
            return self

    est = Forgetful(1.0).fit(bounded_gaussian(100, 3, seed=0))
    with pytest.raises(TypeError, match="rho_spent_"):
        read_fit(est, TOY, 3)
    est = NoisyDiagonal(1.0).fit(bounded_gaussian(100, 3, seed=0))
    with pytest.raises(TypeError, match="pattern_"):
        read_fit(est, MethodSpec("x", "m:C", measures="pattern"), 3)


def test_rows_of_an_older_store_collect_into_parameter_columns():
    # cell files written before parameters were columns carry four PACE-GGM fields; the
    # table takes the parameters from `params` instead, for every method alike
    from paceggm.bench.collect import to_frame
    from paceggm.bench.execute import COLUMNS

    base = dict.fromkeys(COLUMNS)
    base.update(experiment="main", cell_key="a", dataset="adult", preprocessing="paper", method="paceggm",
                variant="paceggm", rho=1.0, trial=0, seed=1, status="ok", error="")
    old_pace = {**base, "solver": "ipm", "use_components": True, "alpha": 0.3, "beta": 0.5,
                "params": '{"alpha":0.3,"beta":0.5,"solver":"ipm","use_components":true}'}
    toy = {**base, "cell_key": "b", "method": "noisy_diagonal", "variant": "noisy_diagonal", "params": '{"shrink":0.5}'}
    df = to_frame([old_pace, toy]).set_index("cell_key")
    assert not {"solver", "use_components", "alpha", "beta"} & set(df.columns)
    assert df.loc["a", "p_solver"] == "ipm" and df.loc["a", "p_alpha"] == 0.3 and bool(df.loc["a", "p_use_components"])
    assert df.loc["b", "p_shrink"] == 0.5 and np.isnan(df.loc["a", "p_shrink"]) and pd.isna(df.loc["b", "p_solver"])


def test_every_registered_class_is_held_to_the_contract_tests(monkeypatch):
    # The scikit-learn, privacy, exact-noise and bad-input tests parametrize over conftest's ALL, COVARIANCE and
    # REGRESSION: no registered class may escape them, and none may be listed that the registry does not hold.
    import conftest

    registered = {task: {resolve(spec) for spec in METHODS.values() if spec.task == task}
                  for task in ("covariance", "regression")}
    assert {task: set(classes) for task, classes in conftest.registered_classes().items()} == registered
    assert set(conftest.ALL) == registered["covariance"] | registered["regression"]
    assert set(conftest.COVARIANCE) == registered["covariance"] and set(conftest.REGRESSION) == registered["regression"]
    # the lists follow the registry: a method registered later (a plugin's, before the tests are collected)
    # is among them without an edit
    monkeypatch.setitem(METHODS, TOY.key, METHODS["ssp"])  # restored after the test
    register(TOY)
    assert NoisyDiagonal in conftest.registered_classes()["covariance"]


class Overspending(NoisyDiagonal):
    """NoisyDiagonal that reports spending ``overspend`` times its budget."""

    def __init__(self, rho, *, bound=1.0, bound_check="raise", random_state=None, shrink=1.0, overspend=1.0):
        super().__init__(rho, bound=bound, bound_check=bound_check, random_state=random_state, shrink=shrink)
        self.overspend = overspend

    def fit(self, X):
        super().fit(X)
        self.rho_spent_ = self.rho * self.overspend
        return self


@pytest.mark.parametrize(("overspend", "refused"), [
    (1.0, False),  # exactly the budget
    (1.0 + 1e-12, False),  # the ledger's float rounding of a sum of charges (far below any privacy meaning)
    (1.0 + SPEND_RTOL, False),  # the slack itself is allowed (rho = 0.5 scales both sides exactly) ...
    (math.nextafter(1.0 + SPEND_RTOL, 2.0), True),  # ... one float above it is not
    (1.0 + 1e-6, True),
    (2.0, True),
])
def test_the_harness_refuses_a_method_that_overspends(overspend, refused):
    from paceggm.bench.cells import Cell
    from paceggm.bench.execute import prepare_data, run_cell

    class Data:
        X = bounded_gaussian(200, 3, seed=0)
        bound = 1.0

    data = prepare_data(Data(), name="toy", preprocessing="strict", bound_check="auto", need_target=False)
    cell = Cell("toy", "strict", "overspending", f"{__name__}:Overspending", "covariance", "diagonal",
                (("overspend", overspend),), "overspending", 0.5, 0, 1)
    row = run_cell(cell, data, experiment="test")
    if refused:
        assert row["status"] == "failed" and "privacy budget overspent" in row["error"], row["error"]
        assert np.isnan(row["frobenius"])
    else:
        assert row["status"] == "ok", row["error"]
        assert row["rho_spent"] == 0.5 * overspend

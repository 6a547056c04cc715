"""Cell keys and seeds: stable, derived from the cell's identity only."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from paceggm.bench import seeds as seeds_module
from paceggm.bench.cells import Cell, expand, variant_label
from paceggm.bench.seeds import canonical_json, data_seed, derive_seed, method_seed, stable_hash


def _cell(**kw):
    base = dict(dataset="adult", preprocessing="paper", method="paceggm", target="paceggm:PACEGGM",
                task="covariance", measures="pattern", params=(("alpha", 0.3), ("solver", "ipm")),
                variant="paceggm", rho=0.1, trial=3, base_seed=0)
    base.update(kw)
    return Cell(**base)


def test_golden_key_and_seeds():
    # Changing these values orphans every stored result: only ever on purpose.
    c = _cell()
    assert c.key == "b0f7b53c081b0785f3e7"
    assert c.seed == 5742083663773663970
    assert c.data_seed == 4394764129368709731


def test_baseline_keys_survive_the_move_into_the_paceggm_namespace():
    # The key this cell had while the baselines were a top-level package `baselines`.
    c = _cell(method="ssp", target="paceggm.baselines:SSP", measures="all", variant="ssp", params=())
    assert c.key == "354771f99ef929985b20"
    assert c.target == "paceggm.baselines:SSP"
    assert _cell(target="paceggm.baselinesx:SSP").key != _cell(target="baselinesx:SSP").key


def test_hash_is_the_same_in_a_fresh_interpreter():
    # Python's hash() is salted per process; ours must not be. The module is loaded from its file (it
    # imports numpy alone): importing the package would start scikit-learn, seconds for nothing.
    code = ("import importlib.util, sys; spec = importlib.util.spec_from_file_location('seeds', sys.argv[1]); "
            "seeds = importlib.util.module_from_spec(spec); spec.loader.exec_module(seeds); "
            "print(seeds.stable_hash({'b': [1, 2.5], 'a': 'x'}))")
    out = subprocess.run([sys.executable, "-c", code, seeds_module.__file__], capture_output=True, text=True,
                         check=True, env={**os.environ, "PYTHONHASHSEED": "12345"})
    assert out.stdout.strip() == stable_hash({"a": "x", "b": [1, 2.5]})


def test_key_ignores_labels_and_follows_the_computation():
    c = _cell()
    assert _cell(variant="another label").key == c.key
    for change in (dict(rho=1.0), dict(trial=4), dict(dataset="pol"), dict(base_seed=1),
                   dict(preprocessing="strict"), dict(params=(("alpha", 0.3), ("solver", "pgd0")))):
        assert _cell(**change).key != c.key, change


def test_canonical_json_normalises_types():
    assert canonical_json({"b": np.float64(0.5), "a": (np.int64(1), True)}) == '{"a":[1,true],"b":0.5}'
    assert stable_hash({"rho": 1}) != stable_hash({"rho": 1.0})  # ints and floats are different values…
    assert _cell(rho=1).key == _cell(rho=1.0).key  # …so ρ is normalised to float before hashing
    with pytest.raises(ValueError, match="non-finite"):
        canonical_json({"x": float("nan")})
    with pytest.raises(TypeError, match="cannot hash"):
        canonical_json({"x": object()})


def test_data_seed_is_shared_across_methods_and_budgets():
    a = _cell(method="paceggm", rho=0.1)
    b = _cell(method="ssp", target="paceggm.baselines:SSP", rho=10.0, params=())
    assert a.data_seed == b.data_seed
    assert a.seed != b.seed
    assert data_seed(0, "adult", 3) != data_seed(0, "adult", 4)


def test_method_seed_depends_on_method_and_rho_but_not_parameters():
    assert _cell().seed == _cell(params=(("solver", "pgd1"),)).seed
    assert _cell().seed != _cell(rho=1.0).seed
    assert method_seed(0, "adult", 3, "paceggm", 0.1) == _cell().seed
    assert 0 <= derive_seed("x") < 2**63


def test_variant_labels():
    assert variant_label("ssp", {}) == "ssp"
    assert variant_label("paceggm", {"use_components": False}) == "paceggm[use_components=False]"
    assert variant_label("paceggm", {"solver": "pgd0"}) == "paceggm[solver=pgd0]"


def test_null_parameters_resolve_to_the_library_default():
    from paceggm import PACEGGM

    cfg = {"name": "t", "datasets": ["a"], "preprocessing": "paper", "rho": [1.0], "trials": 1, "base_seed": 0,
           "method": {"paceggm": {"key": "paceggm", "params": {"solver": None, "max_rounds": None}}}}
    (cell,) = expand(cfg)
    assert cell.param_dict == {"solver": PACEGGM(1.0).solver}  # max_rounds=None stays the class default


def test_unavailable_method_fails_only_at_run_time():
    cfg = {"name": "t", "datasets": ["a"], "preprocessing": "paper", "rho": [1.0], "trials": 2, "base_seed": 0,
           "method": {"x": {"key": "x", "target": "no_such_module:Estimator", "params": {"p": None}}}}
    cells = expand(cfg)  # no import happens here that could fail the sweep
    assert len(cells) == 2 and cells[0].target == "no_such_module:Estimator"


def _keys(*overrides):
    from paceggm.bench.config import compose_config, to_plain

    return {c.key: c for c in expand(to_plain(compose_config(list(overrides))))}


def test_every_input_that_changes_a_result_is_in_the_key():
    default = _keys("experiment=quick")
    # the bound policy: "auto" means waive for the paper preprocessing, so these are one computation
    assert set(_keys("experiment=quick", "bound_check=waive")) == set(default)
    assert not set(_keys("experiment=quick", "bound_check=clip")) & set(default)
    assert not set(_keys("experiment=quick", "bound_check=raise")) & set(default)
    # the held-out share changes regression cells only
    split = _keys("experiment=quick", "test_fraction=0.3")
    changed = {c.key for c in default.values() if c.task == "regression"}
    assert changed and set(split) & set(default) == set(default) - changed


def test_keys_of_cells_run_with_the_defaults_are_unchanged():
    """The committed tables of the full reproduction are found under the same keys."""
    import pandas as pd

    REPO_ROOT = Path(__file__).resolve().parents[1]  # the clone's or an unpacked sdist's committed tables

    for experiment in ("main", "main_strict", "regression"):
        table = pd.read_parquet(REPO_ROOT / "figures" / "results" / experiment / "results.parquet")
        grid = _keys(f"experiment={experiment}")
        # cells of data sets this machine could not load are not stored, so not published
        absent = {c.dataset for c in grid.values()} - set(table["dataset"])
        assert absent <= {"indian_pines", "madeline"}, (experiment, absent)
        expected = {k for k, c in grid.items() if c.dataset not in absent}
        assert expected == set(table["cell_key"]), experiment


@pytest.mark.parametrize("value", [-1, 0, 1, 1.5, "x", True])
def test_test_fraction_outside_the_open_unit_interval_is_refused(value):
    with pytest.raises(ValueError, match="test_fraction"):
        _keys("experiment=demo", f"test_fraction={value}")

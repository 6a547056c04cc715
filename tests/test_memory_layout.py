"""Results do not depend on where or how the input lies in memory.

numpy's matmul and BLAS choose their code path by the operands' alignment and
order, and the paths round differently; arrays that reach a worker through a
transport (pickling, dask scatter) can start at any address. Every estimator
and every backend must give the same bits whatever the layout.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from threadpoolctl import threadpool_limits

from paceggm import PACEGGM
from paceggm._validation import aligned_copy
from paceggm.bench.methods import METHODS, resolve
from paceggm.bench.schema import CLOCK_COLUMNS

from bench_loaders import WORKER_PROCESSES
from conftest import bounded_gaussian


def _at(X: np.ndarray, offset: int) -> np.ndarray:
    """A C-contiguous copy of ``X`` starting ``offset`` bytes past a 64-byte boundary."""
    raw = np.empty(X.nbytes + 128, dtype=np.uint8)
    start = -raw.ctypes.data % 64 + offset
    out = raw[start:start + X.nbytes].view(X.dtype).reshape(X.shape)
    out[...] = X
    return out


def _layouts(X: np.ndarray) -> dict[str, np.ndarray]:
    wide = np.hstack([X, X])
    return {
        "aligned": _at(X, 0),
        **{f"offset {o}": _at(X, o) for o in (1, 3, 8, 16, 24, 32)},
        "fortran": np.asfortranarray(X),
        "column view": wide[:, : X.shape[1]],
        "row view": np.repeat(X, 2, axis=0)[::2],
        "transposed view": np.ascontiguousarray(X.T).T,
    }


@pytest.fixture(scope="module")
def data():
    return bounded_gaussian(800, 12, seed=3)


def test_aligned_copy_is_aligned_contiguous_and_equal(data):
    for name, X in _layouts(data).items():
        Y = aligned_copy(X)
        assert Y.ctypes.data % 64 == 0 and Y.flags.c_contiguous and Y.flags.writeable, name
        assert np.array_equal(Y, data) and not np.shares_memory(Y, X), name
    assert aligned_copy(np.zeros((0, 3))).shape == (0, 3)


ESTIMATORS = {key: resolve(spec) for key, spec in METHODS.items() if spec.task == "covariance"}
REGRESSION_METHODS = {key: resolve(spec) for key, spec in METHODS.items() if spec.task == "regression"}


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_covariance_estimators_give_the_same_bits_for_any_layout(name, data):
    cls = ESTIMATORS[name]
    with threadpool_limits(limits=1):
        results = {k: cls(rho=0.5, random_state=7).fit(X).covariance_ for k, X in _layouts(data).items()}
    reference = results["aligned"]
    differ = [k for k, cov in results.items() if not np.array_equal(cov, reference)]
    assert not differ, f"{name}: other bits for {differ}"


@pytest.mark.parametrize("name", sorted(REGRESSION_METHODS))
def test_regression_estimators_give_the_same_bits_for_any_layout(name, data):
    cls = REGRESSION_METHODS[name]
    X, y = data[:, :-1], data[:, -1]
    with threadpool_limits(limits=1):
        results = {k: cls(rho=0.5, random_state=7).fit(Xk, _at(y, 1) if k == "offset 1" else y).coef_
                   for k, Xk in _layouts(X).items()}
    reference = results["aligned"]
    differ = [k for k, coef in results.items() if not np.array_equal(coef, reference)]
    assert not differ, f"{name}: other bits for {differ}"


def test_the_estimators_do_not_keep_or_modify_the_caller_array(data):
    X = np.asfortranarray(data.copy())
    assert np.abs(X).max() > 0.5  # so the fit below clips
    PACEGGM(rho=0.5, bound_check="clip", bound=0.5, random_state=0).fit(X)
    assert np.array_equal(X, data)


# ---------------------------------------------------------------- dask with real processes
# (a dask scheduler and worker started by dask's command line: conftest.dask_cluster)

@pytest.mark.slow
@pytest.mark.xdist_group(WORKER_PROCESSES)
def test_dask_scheduler_and_worker_processes_give_the_local_bits(tmp_path, dask_cluster):
    from paceggm.bench.collect import collect
    from paceggm.bench.config import compose_config, to_plain
    from paceggm.bench.runner import run_sweep, store_for

    base = ["experiment=demo", "trials=2", "progress=false", "method=[paceggm,ssp,diagonal,adaptivecov]"]
    tables = {}
    for name, extra in {"local": ["backend.n_jobs=1"],
                        "dask": ["backend=dask", f"backend.address={dask_cluster}", "backend.n_jobs=2"]}.items():
        cfg = to_plain(compose_config([*base, f"runs_dir={tmp_path / name}", *extra]))
        summary = run_sweep(cfg)
        assert summary.n_ok == summary.n_cells == 24, summary.format()
        df, _ = collect(store_for(cfg))
        tables[name] = df.drop(columns=["wall_time", "solve_time", *CLOCK_COLUMNS]).sort_values("cell_key").reset_index(drop=True)
    pd.testing.assert_frame_equal(tables["local"], tables["dask"], check_exact=True)

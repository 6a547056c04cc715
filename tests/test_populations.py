"""Populations with a known covariance: their Σ and Ω, seeding, bound, registry, and the harness's columns."""

import math

import numpy as np
import pandas as pd
import pytest

from paceggm.bench.data import populations as pops
from paceggm.bench.data.populations import CATALOGUE, SHAPES, make_population, population_of, register_population
from paceggm.bench.data.registry import register, unregister
from paceggm.metrics import support_edges

SD = 1.0 / 6.0


@pytest.mark.parametrize("shape", SHAPES)
def test_sigma_and_omega_are_inverse_with_the_stated_scale(shape):
    for d in (2, 7, 30):
        pop = make_population(shape, d=d, n=10, sd=SD)
        assert np.allclose(pop.covariance @ pop.precision, np.eye(d), atol=1e-10)
        assert np.isclose(np.diag(pop.covariance).max(), SD**2)  # the largest coordinate sd is sd
        assert np.all(np.linalg.eigvalsh(pop.covariance) > 0)
        assert not pop.covariance.flags.writeable and not pop.precision.flags.writeable


def test_each_shape_has_its_structure():
    d = 12
    idx = np.arange(d)
    banded = make_population("banded", d=d, n=10, sd=1.0)
    assert np.allclose(banded.covariance, 0.6 ** np.abs(idx[:, None] - idx[None, :]))  # AR(1), Toeplitz
    assert np.array_equal(banded.precision != 0, np.abs(idx[:, None] - idx[None, :]) <= 1)  # tridiagonal, exact zeros
    block = make_population("block", d=d, n=10, sd=1.0)
    groups = np.repeat(np.arange(5), [3, 3, 2, 2, 2])  # array_split of 12 into 5 blocks
    same = groups[:, None] == groups[None, :]
    assert np.array_equal(block.precision != 0, same) and np.array_equal(block.covariance != 0, same)
    assert np.allclose(sorted({round(block.covariance[i, j], 12) for i, j in zip(*np.nonzero(same)) if i != j}),
                       [0.3, 0.4, 0.5, 0.6, 0.7])
    sparse = make_population("sparse", d=30, n=10, sd=1.0)
    edges = support_edges(sparse.precision)
    assert 10 <= edges.sum() <= 60 and not edges.all()  # mean degree 2: about 30 of 435 pairs
    assert np.ptp(np.diag(sparse.precision)) < 1e-12  # A + δI: one diagonal value
    partial = np.abs(sparse.precision[np.triu_indices(30, 1)][edges]) / sparse.precision[0, 0]
    assert 0.1 < partial.min() and partial.max() < 0.5  # the stated range (about 0.15 to 0.4), above the threshold
    spiked = make_population("spiked", d=d, n=10, sd=1.0)
    w = np.sort(np.linalg.eigvalsh(spiked.covariance))[::-1] / np.linalg.eigvalsh(spiked.covariance).min()
    assert np.allclose(w[:5], [17.0, 9.0, 5.0, 3.0, 2.0]) and np.allclose(w[5:], 1.0)  # 1 + s over a flat bulk
    assert support_edges(spiked.precision).all()  # a dense precision: a complete graph


def test_seeding_the_structure_and_the_rows():
    a, b = make_population("sparse", d=10, n=500, seed=3), make_population("sparse", d=10, n=500, seed=3)
    assert np.array_equal(a.sample(), b.sample()) and np.array_equal(a.sample(), a.sample())
    other = make_population("sparse", d=10, n=500, seed=4)
    assert not np.array_equal(a.precision != 0, other.precision != 0) or not np.allclose(a.covariance, other.covariance)
    assert not np.allclose(a.sample(), other.sample())
    # Σ depends on (seed, shape, d) only; n and sd change the rows' count and scale, not the structure
    big = make_population("sparse", d=10, n=2000, seed=3, sd=1.0 / 20.0)
    assert np.allclose(big.covariance * 400.0, a.covariance * 36.0)
    assert np.array_equal(big.precision != 0, a.precision != 0)
    loose = make_population("sparse", d=10, n=500, seed=3, sd=1.0 / 20.0)
    assert np.allclose(loose.sample() * 20.0, a.sample() * 6.0)  # paired draws (nothing clipped at z = 6 here)


@pytest.mark.parametrize("shape", SHAPES)
def test_the_sample_covariance_of_a_large_draw_converges_to_sigma(shape):
    # Each entry of XᵀX/n has sd sqrt((Σ_ii Σ_jj + Σ_ij²)/n) <= sd²·sqrt(2/n): 5 of those is the tolerance
    # (a 5-sigma miss has probability 6e-7 per entry; the draw is fixed by its seed).
    n = 100_000
    pop = make_population(shape, d=8, n=n, sd=SD)
    X = pop.sample()
    assert np.abs(X).max() <= 1.0
    err = np.abs(X.T @ X / n - pop.covariance)
    assert err.max() <= 5 * SD**2 * math.sqrt(2.0 / n)
    # and it is far from another shape's Σ (the test can fail)
    wrong = make_population(SHAPES[(SHAPES.index(shape) + 1) % 4], d=8, n=n, sd=SD).covariance
    assert np.abs(X.T @ X / n - wrong).max() > 20 * SD**2 * math.sqrt(2.0 / n)


def test_clipping_keeps_the_bound_and_its_bias_is_the_stated_integral():
    from scipy import integrate, stats

    tight = make_population("banded", d=5, n=200, sd=SD)
    for z, pop in ((6.0, tight), (20.0, make_population("banded", d=5, n=200, sd=1.0 / 20.0))):
        assert pop.clip_probability == pytest.approx(2 * stats.norm.sf(z), rel=1e-10)
        delta = 2 * integrate.quad(lambda x, z=z: (x - z) ** 2 * stats.norm.pdf(x), z, np.inf, epsabs=0, epsrel=1e-12)[0]
        assert pop.clip_bias == pytest.approx(2 * math.sqrt(delta), rel=1e-6)
    assert 1e-9 < tight.clip_probability < 3e-9 and 1e-5 < tight.clip_bias < 3e-5
    # a scale beyond the bound is clipped, every value within it
    wide = make_population("block", d=5, n=2000, sd=1.0)
    X = wide.sample()
    assert np.abs(X).max() == 1.0 and (np.abs(X) == 1.0).mean() > 0.2


@pytest.mark.parametrize("kwargs, message", [
    ({"shape": "circle"}, "shape must be one of spiked, banded, sparse, block"),
    ({"d": 1}, "d must be an integer >= 2"),
    ({"n": 2.5}, "n must be an integer >= 2"),
    ({"seed": -1}, "seed must be an integer >= 0"),
    ({"sd": 0.0}, "sd must be a finite number > 0"),
    ({"bound": np.inf}, "bound must be a finite number > 0"),
])
def test_bad_parameters_are_one_line_errors(kwargs, message):
    args = {"shape": "banded", "d": 4, "n": 10, **kwargs}
    with pytest.raises(ValueError, match=message):
        make_population(args.pop("shape"), **args)


def test_the_catalogue_is_registered_and_loads_as_drawn():
    from paceggm.bench.data import list_datasets, load_dataset

    assert len(CATALOGUE) == 32 and set(CATALOGUE) <= set(list_datasets())
    assert {p.sd for p in CATALOGUE.values()} == {1 / 6, 1 / 20}
    ds = load_dataset("pop_block_d10_n1000_loose", preprocessing="none")
    pop = population_of("pop_block_d10_n1000_loose")
    assert pop is CATALOGUE["pop_block_d10_n1000_loose"] and pop.sd == 1 / 20
    assert np.array_equal(ds.X, pop.sample()) and ds.max_abs <= ds.bound == 1.0
    assert population_of("breast_cancer_sklearn") is None


def test_a_population_replaced_in_the_registry_has_no_truth_any_more():
    pop = make_population("banded", d=3, n=50)
    register_population("pop_test_replaced", pop)
    try:
        assert population_of("pop_test_replaced") is pop
        register("pop_test_replaced", lambda: np.zeros((50, 3)))  # another table under the name
        assert population_of("pop_test_replaced") is None
    finally:
        unregister("pop_test_replaced")
        pops._POPULATIONS.pop("pop_test_replaced", None)
    with pytest.raises(TypeError, match="population must be a Population"):
        register_population("pop_test_bad", np.eye(3))


# ---- the harness: a cell on a population records the population's columns ----

def _run(tmp_path, *overrides):
    from paceggm.bench.collect import collect
    from paceggm.bench.config import compose_config, to_plain
    from paceggm.bench.runner import run_sweep, store_for

    cfg = to_plain(compose_config(["experiment=populations", "trials=1", "rho=[1.0]", "progress=false",
                                   "backend.n_jobs=1", f"runs_dir={tmp_path}", *overrides]))
    summary = run_sweep(cfg)
    assert summary.n_failed == 0
    df, _ = collect(store_for(cfg))
    return df


def test_a_cell_on_a_population_records_the_population_columns(tmp_path):
    from paceggm.bench.schema import TASK_COLUMNS

    df = _run(tmp_path, "datasets=[pop_banded_d10_n1000,pop_spiked_d10_n1000]", "method=[ssp,diagonal]")
    assert set(TASK_COLUMNS) <= set(df.columns) and len(df) == 4 and (df["status"] == "ok").all()
    assert df[list(TASK_COLUMNS)].dtypes.eq(float).all()
    assert np.isfinite(df[["mahalanobis_pop", "frobenius_pop", "subspace_k1", "subspace_k3", "subspace_k5",
                           "subspace_k1_pop", "subspace_k3_pop", "subspace_k5_pop"]].to_numpy()).all()
    # against the population, not the sample: the two Frobenius errors differ by the sampling error
    assert not np.allclose(df["frobenius"], df["frobenius_pop"])
    banded = df[df["dataset"] == "pop_banded_d10_n1000"].set_index("method")
    # the diagonal release claims no edge: precision 1 (by convention), recall 0; SSP's dense noise claims some
    assert tuple(banded.loc["diagonal", ["support_precision", "support_recall", "support_f1"]]) == (1.0, 0.0, 0.0)
    assert 0 < banded.loc["ssp", "support_recall"] <= 1
    # the spiked population's graph is complete: no support columns
    assert df.loc[df["dataset"] == "pop_spiked_d10_n1000", ["support_precision", "support_f1"]].isna().all().all()


def test_the_population_columns_are_measured_against_the_known_sigma():
    from paceggm.bench.data import load_dataset
    from paceggm.bench.execute import prepare_data, scaled, task_metrics
    from paceggm.metrics import frobenius_error, subspace_errors

    pop = CATALOGUE["pop_sparse_d10_n1000"]
    ds = load_dataset("pop_sparse_d10_n1000", preprocessing="none")
    data = prepare_data(ds, name=ds.name, preprocessing="none", bound_check="auto", need_target=False)
    assert np.array_equal(data.population, pop.covariance) and np.array_equal(data.population_precision, pop.precision)

    class Release:  # the population itself as a release: every population column at its perfect value
        precision_ = pop.precision

    got = task_metrics(data, Release(), np.array(pop.covariance))
    assert got["frobenius_pop"] == 0.0 and got["mahalanobis_pop"] < 1e-12
    assert all(got[f"subspace_k{k}_pop"] < 1e-7 for k in (1, 3, 5))
    assert (got["support_precision"], got["support_recall"], got["support_f1"]) == (1.0, 1.0, 1.0)
    assert got["subspace_k1"] > 0  # against XᵀX/n, which is not Σ
    # the harness's data_scale multiplies Σ by its square
    twice = scaled(data, 2.0)
    assert np.allclose(twice.population, 4 * pop.covariance) and np.allclose(twice.population_precision, pop.precision / 4)
    assert frobenius_error(twice.population, twice.truth) == pytest.approx(4 * frobenius_error(pop.covariance, data.truth))
    # rescaled columns (strict) have no known population, nor does a real data set
    strict = load_dataset("pop_sparse_d10_n1000", preprocessing="strict")
    assert prepare_data(strict, name=strict.name, preprocessing="strict", bound_check="auto",
                        need_target=False).population is None
    real = load_dataset("breast_cancer_sklearn", preprocessing="strict")
    data = prepare_data(real, name=real.name, preprocessing="strict", bound_check="auto", need_target=False)
    got = task_metrics(data, Release, np.eye(data.d))
    assert data.population is None and math.isnan(got.get("frobenius_pop", math.nan))
    assert set(got) == {"subspace_k1", "subspace_k3", "subspace_k5"}
    # a tie of the truth at k, or k >= d, is NaN, not an error
    tie = np.diag([3.0, 1.0, 1.0, 1.0])
    assert subspace_errors(cov_true=tie, cov_pred=tie, ks=(1,))[1] == 0.0
    got = subspace_errors(cov_true=tie, cov_pred=np.eye(4), ks=(3, 5))
    assert math.isnan(got[3]) and math.isnan(got[5])


def test_old_stores_without_the_new_columns_still_load(tmp_path):
    from paceggm.bench.collect import to_frame
    from paceggm.bench.execute import COLUMNS
    from paceggm.bench.figures.results import load_results
    from paceggm.bench.schema import RESULT_COLUMNS, TASK_COLUMNS, check_row

    # a table stored before the columns (the committed one without them): the figures stage reads it as it is
    committed = pd.read_parquet("figures/results/main/results.parquet")
    older = committed.drop(columns=[c for c in (*TASK_COLUMNS, "label", "varies") if c in committed.columns])
    (tmp_path / "main").mkdir()
    older.to_parquet(tmp_path / "main" / "results.parquet")
    tables, _ = load_results(tmp_path)
    assert len(tables["main"]) == len(committed)
    # a cell record written before them is a valid row, and collects into NaN columns of floats
    old = dict.fromkeys(RESULT_COLUMNS)  # older still: no label, no varies
    old.update(experiment="main", cell_key="a", dataset="adult", preprocessing="paper", method="ssp", variant="ssp",
               rho=1.0, trial=0, seed=1, status="ok", error="", n=10, d=2, mahalanobis=1.0, frobenius=1.0,
               rho_spent=1.0, wall_time=0.1, params="{}")
    check_row(old)
    df = to_frame([{**old, "label": None, "varies": None}])
    assert list(df.columns[: len(COLUMNS)]) == list(COLUMNS)
    assert df[list(TASK_COLUMNS)].isna().all().all() and df[list(TASK_COLUMNS)].dtypes.eq(float).all()
    with pytest.raises(ValueError, match="support_f1 must be a number"):
        check_row({**old, "support_f1": "high"})

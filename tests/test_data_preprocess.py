"""paper / strict / none preprocessing, the statistics, and the synthetic generator."""

import numpy as np
import pandas as pd
import pytest

from paceggm.bench.data import dataset_statistics, load_dataset, make_synthetic
from paceggm.bench.data.preprocess import complete_nonconstant, scale_paper, scale_strict


def _skewed(seed=0, n=500, d=4):
    rng = np.random.default_rng(seed)
    return rng.exponential(size=(n, d)) * np.arange(1, d + 1)  # skew: |mean| after scaling is large


def test_paper_maps_min_max_then_centres():
    X = _skewed()
    P = scale_paper(X)
    np.testing.assert_allclose(P.mean(axis=0), 0.0, atol=1e-12)
    np.testing.assert_allclose(P.max(axis=0) - P.min(axis=0), 2.0)
    # Skewed columns: after centring the bound B = 1 is violated, as in the publication.
    assert np.abs(P).max() > 1.2


def test_strict_bound_holds_and_statistics_equal_paper():
    X = _skewed(1)
    P, S = scale_paper(X), scale_strict(X)
    assert np.abs(S).max() == pytest.approx(1.0, abs=1e-15)
    assert np.all(np.abs(S) <= 1.0)
    sp, ss = dataset_statistics(P), dataset_statistics(S)
    for key in ("mean_abs_r", "max_abs_r", "e_off", "eff_rank"):
        assert getattr(ss, key) == pytest.approx(getattr(sp, key), rel=1e-12)
    np.testing.assert_allclose(S * np.abs(P).max(), P, atol=1e-14)


@pytest.mark.parametrize("preprocessing", ["paper", "strict", "none"])
def test_max_abs_is_recorded(preprocessing):
    ds = load_dataset("breast_cancer_sklearn", preprocessing=preprocessing)
    assert ds.max_abs == pytest.approx(np.abs(ds.X).max())
    assert ds.preprocessing == preprocessing and ds.bound == 1.0
    if preprocessing == "strict":
        assert ds.max_abs <= ds.bound
    if preprocessing == "paper":
        assert 1.0 < ds.max_abs < 2.0


def test_complete_nonconstant_drops_rows_then_constant_columns():
    frame = pd.DataFrame({"a": [1.0, 2.0, np.nan, 4.0], "b": [5.0, 5.0, 6.0, 5.0], "c": [1.0, 0.0, 1.0, 1.0]})
    out = complete_nonconstant(frame)
    # b is constant only once the incomplete row is gone: order matters, as published.
    assert list(out.columns) == ["a", "c"] and len(out) == 3


def test_statistics_on_a_known_matrix():
    # Σ = diag(1, 1) + off-diagonal 0.5: r = 0.5, e_off = 2·0.25 / (2 + 0.5), eigenvalues 1.5, 0.5.
    rng = np.random.default_rng(0)
    Z = rng.standard_normal((4000, 2))
    Z = Z - Z.mean(axis=0)
    L = np.linalg.cholesky(np.cov(Z.T, bias=True))
    W = Z @ np.linalg.inv(L).T  # exactly white
    X = W @ np.linalg.cholesky(np.array([[1.0, 0.5], [0.5, 1.0]])).T
    s = dataset_statistics(X)
    assert s.mean_abs_r == pytest.approx(0.5) and s.max_abs_r == pytest.approx(0.5)
    assert s.e_off == pytest.approx(0.5 / 2.5)
    p = np.array([0.75, 0.25])
    assert s.eff_rank == pytest.approx(np.exp(-(p * np.log(p)).sum()))


def test_statistics_reject_bad_shapes():
    with pytest.raises(ValueError, match="n >= 2 and d >= 2"):
        dataset_statistics(np.ones((5, 1)))


def test_synthetic_bound_covariance_and_seed():
    a = make_synthetic(n=20000, d=6, correlation=0.6, random_state=3)
    assert a.max_abs <= a.bound == 1.0 and a.covariance.shape == (6, 6)
    b = make_synthetic(n=20000, d=6, correlation=0.6, random_state=3)
    np.testing.assert_array_equal(a.X, b.X)
    # Statistical check: each entry's sample second moment is within 5 standard errors of the truth.
    emp = a.X.T @ a.X / a.n
    x2 = a.X[:, :, None] * a.X[:, None, :]
    se = x2.std(axis=0) / np.sqrt(a.n)
    assert np.all(np.abs(emp - a.covariance) <= 5 * se + 1e-12)
    # AR(1): the correlation of neighbours is the coefficient.
    d = np.sqrt(np.diag(a.covariance))
    assert a.covariance[0, 1] / (d[0] * d[1]) == pytest.approx(0.6)


@pytest.mark.parametrize("kwargs, match", [
    (dict(n=1, d=3), "n must be"), (dict(n=10, d=0), "d must be"),
    (dict(n=10, d=3, correlation=1.0), "correlation"), (dict(n=10, d=3, bound=-1.0), "bound"),
])
def test_synthetic_rejects_bad_parameters(kwargs, match):
    with pytest.raises(ValueError, match=match):
        make_synthetic(**kwargs)

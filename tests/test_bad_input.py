"""Every kind of bad input gets a clear, specific error — or, where it can, a correct result."""

import numpy as np
import pandas as pd
import pytest
from scipy import sparse
from sklearn.exceptions import DataConversionWarning

from paceggm import PACEGGM, pace_ggm
from paceggm.baselines import AdaSSP, PACEGGMRegression
from paceggm.exceptions import PrivacyBudgetWarning

from conftest import ALL, REGRESSION

ids = lambda c: c.__name__  # noqa: E731


def _X(n=300, d=3, seed=0):
    return np.random.default_rng(seed).uniform(-1, 1, size=(n, d))


def _fit(est, X, y=None):
    if isinstance(est, (AdaSSP, PACEGGMRegression)):
        return est.fit(X, _X()[:, 0] * 0.5 if y is None else y)
    return est.fit(X)


def _result(est):
    return est.coef_ if hasattr(est, "coef_") else est.covariance_


@pytest.mark.parametrize("cls", ALL, ids=ids)
def test_masked_array_with_masked_entries_is_refused(cls):
    X = np.ma.masked_array(_X(), mask=np.zeros((300, 3), dtype=bool))
    X.mask[5, 1] = True
    X.data[5, 1] = 1e6  # the hidden value: it must never be used as data
    with pytest.raises(ValueError, match="masked array with masked entries"):
        _fit(cls(rho=1.0), X)


@pytest.mark.parametrize("cls", ALL, ids=ids)
def test_masked_array_without_masked_entries_is_its_data(cls):
    X = _X()
    a = _fit(cls(rho=1.0, random_state=0), np.ma.masked_array(X, mask=False))
    b = _fit(cls(rho=1.0, random_state=0), X)
    np.testing.assert_array_equal(_result(a), _result(b))


@pytest.mark.parametrize("cls", REGRESSION, ids=ids)
def test_masked_target_is_refused(cls):
    y = np.ma.masked_array(_X()[:, 0] * 0.5, mask=False)
    y.mask[3] = True
    with pytest.raises(ValueError, match="y is a masked array"):
        cls(rho=1.0).fit(_X(), y)


@pytest.mark.parametrize("cls", ALL, ids=ids)
@pytest.mark.parametrize("fmt", ["csr", "csc", "coo"])
def test_sparse_input_is_refused_with_a_clear_message(cls, fmt):
    with pytest.raises(TypeError, match="sparse input is not supported.*toarray"):
        _fit(cls(rho=1.0), sparse.random(300, 3, density=0.5, format=fmt, random_state=0))


@pytest.mark.parametrize("cls", ALL, ids=ids)
def test_dataframes(cls):
    X = _X()
    frame = pd.DataFrame(X, columns=["a", "b", "c"])
    a = _fit(cls(rho=1.0, random_state=0), frame)
    np.testing.assert_array_equal(_result(a), _result(_fit(cls(rho=1.0, random_state=0), X)))
    assert list(a.feature_names_in_) == ["a", "b", "c"] and a.n_features_in_ == 3
    # refitted on an array (of another width), the names go and the width follows, as in scikit-learn
    with pytest.warns(PrivacyBudgetWarning, match="fitted again"):
        _fit(a, X[:, :2])
    assert not hasattr(a, "feature_names_in_") and a.n_features_in_ == 2
    with_na = frame.astype(object)
    with_na.iloc[4, 1] = pd.NA
    with pytest.raises(TypeError, match=r"non-numeric column\(s\) \['b'\]"):
        _fit(cls(rho=1.0), with_na.astype({"a": float, "c": float}))
    nullable = frame.astype("Float64")
    nullable.iloc[4, 1] = pd.NA
    with pytest.raises(ValueError, match="NaN"):
        _fit(cls(rho=1.0), nullable)
    text = frame.assign(b=["x"] * 300)
    with pytest.raises(TypeError, match="non-numeric"):
        _fit(cls(rho=1.0), text)


@pytest.mark.parametrize("cls", ALL, ids=ids)
def test_object_arrays(cls):
    X = _X()
    a = _fit(cls(rho=1.0, random_state=0), X.astype(object))
    np.testing.assert_array_equal(_result(a), _result(_fit(cls(rho=1.0, random_state=0), X)))
    bad = X.astype(object)
    bad[2, 2] = pd.NA
    with pytest.raises(TypeError, match="not numbers"):
        _fit(cls(rho=1.0), bad)
    bad[2, 2] = "secret"
    with pytest.raises(TypeError) as err:
        _fit(cls(rho=1.0), bad)
    assert "secret" not in str(err.value)


@pytest.mark.parametrize("cls", ALL, ids=ids)
def test_absurd_bounds_get_a_clear_error(cls):
    with pytest.raises(ValueError, match="bound=1e\\+200 is too large"):
        _fit(cls(rho=1.0, bound=1e200), _X())
    with pytest.raises(ValueError, match="too small"):
        _fit(cls(rho=1.0, bound=1e-200), _X() * 1e-201)
    for bad in (0.0, -1.0, np.inf, np.nan):
        with pytest.raises(ValueError, match="bound"):
            _fit(cls(rho=1.0, bound=bad), _X())


@pytest.mark.parametrize("cls", [PACEGGM, PACEGGMRegression], ids=ids)
def test_solver_options_are_checked(cls):
    with pytest.raises(TypeError, match="solver_options must be a dict"):
        _fit(cls(rho=1.0, solver_options="x"), _X())
    # the default solver is 'auto'; its options are checked before it picks a concrete solver
    with pytest.raises(ValueError, match=r"solver 'auto' has no option\(s\) \['tolerance'\]; its options are"):
        _fit(cls(rho=1.0, solver_options={"tolerance": 1e-3}), _X())
    with pytest.raises(ValueError, match=r"solver 'newton' has no option\(s\) \['tolerance'\]; its options are"):
        _fit(cls(rho=1.0, solver="newton", solver_options={"tolerance": 1e-3}), _X())
    with pytest.raises(ValueError, match="unknown solver"):
        _fit(cls(rho=1.0, solver="magic"), _X())


def test_solver_options_are_checked_by_the_function_too():
    with pytest.raises(TypeError, match="solver_options must be a dict"):
        pace_ggm(_X(), rho=1.0, solver_options="x")


@pytest.mark.parametrize("cls", REGRESSION, ids=ids)
def test_target_out_of_bound_is_reported_as_the_target(cls):
    with pytest.raises(ValueError, match="values of y lie outside"):
        cls(rho=1.0).fit(_X(), _X()[:, 0] * 3)
    with pytest.raises(ValueError, match="values of X lie outside"):
        cls(rho=1.0).fit(_X() * 3, _X()[:, 0] * 0.5)
    with pytest.raises(ValueError, match="y contains NaN"):
        cls(rho=1.0).fit(_X(), np.full(300, np.nan))
    with pytest.raises(ValueError, match="different numbers of rows"):
        cls(rho=1.0).fit(_X(), np.zeros(299))


@pytest.mark.parametrize("cls", ALL, ids=ids)
@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
def test_nan_and_inf(cls, value):
    X = _X()
    X[1, 1] = value
    with pytest.raises(ValueError, match="NaN or inf"):
        _fit(cls(rho=1.0), X)


@pytest.mark.parametrize("cls", ALL, ids=ids)
@pytest.mark.parametrize("shape, match", [((300,), "2-D.*Reshape"), ((30, 3, 2), "2-D"), ((300, 0), "0 feature"),
                                          ((0, 3), "0 sample"), ((1, 3), "at least 2 samples")])
def test_wrong_shapes(cls, shape, match):
    X = np.zeros(shape)
    with pytest.raises(ValueError, match=match):
        _fit(cls(rho=1.0), X, y=np.zeros(shape[0]) if len(shape) else None)


@pytest.mark.parametrize("cls", ALL, ids=ids)
def test_complex_values(cls):
    with pytest.raises(ValueError, match="Complex data not supported"):
        _fit(cls(rho=1.0), _X() + 0j)


@pytest.mark.parametrize("cls", ALL, ids=ids)
@pytest.mark.parametrize("rho", [0.0, -1.0, np.nan, np.inf])
def test_rho_must_be_positive_and_finite(cls, rho):
    with pytest.raises(ValueError, match="rho must be a finite number > 0"):
        _fit(cls(rho=rho), _X())


@pytest.mark.parametrize("cls", ALL, ids=ids)
def test_rho_must_be_a_number(cls):
    with pytest.raises(TypeError, match="rho must be a real number"):
        _fit(cls(rho="1"), _X())


@pytest.mark.parametrize("cls", [PACEGGM, PACEGGMRegression], ids=ids)
@pytest.mark.parametrize("name", ["alpha", "beta"])
@pytest.mark.parametrize("value", [0.0, 1.0, -0.1, 1.5])
def test_alpha_beta_outside_the_open_unit_interval(cls, name, value):
    with pytest.raises(ValueError, match=f"{name} must lie in the open interval"):
        _fit(cls(rho=1.0, **{name: value}), _X())


@pytest.mark.parametrize("cls", ALL, ids=ids)
def test_predict_and_score_need_a_fit_and_the_same_features(cls):
    from sklearn.exceptions import NotFittedError

    est = cls(rho=1.0, random_state=0)
    method = est.predict if hasattr(est, "predict") else est.score
    with pytest.raises(NotFittedError):
        method(_X())
    _fit(est, _X())
    method = est.predict if hasattr(est, "predict") else est.mahalanobis
    with pytest.raises(ValueError, match="X has 2 features, but .* is expecting 3 features"):
        method(_X()[:, :2])


@pytest.mark.parametrize("cls", ALL, ids=ids)
def test_memory_layout_does_not_change_the_result(cls):
    X = _X()
    a = _fit(cls(rho=1.0, random_state=0), np.asfortranarray(X))
    b = _fit(cls(rho=1.0, random_state=0), X)
    np.testing.assert_array_equal(_result(a), _result(b))


@pytest.mark.parametrize("cls", REGRESSION, ids=ids)
def test_pandas_targets(cls):
    X, y = _X(), _X()[:, 0] * 0.5
    ref = cls(rho=1.0, random_state=0).fit(X, y).coef_
    np.testing.assert_array_equal(cls(rho=1.0, random_state=0).fit(X, pd.Series(y)).coef_, ref)
    with pytest.warns(DataConversionWarning):
        np.testing.assert_array_equal(cls(rho=1.0, random_state=0).fit(X, pd.DataFrame({"t": y})).coef_, ref)
    with_na = pd.Series(y).astype("Float64")
    with_na.iloc[3] = pd.NA
    with pytest.raises(ValueError, match="y contains NaN"):
        cls(rho=1.0).fit(X, with_na)
    with pytest.raises(TypeError, match="y has non-numeric column"):
        cls(rho=1.0).fit(X, pd.Series(y).astype(object).where(np.arange(300) != 3, pd.NA))

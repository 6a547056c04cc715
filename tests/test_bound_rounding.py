"""Values within a few ulps of the declared bound count as inside it, and are clipped to it before any mechanism.

``MinMaxScaler(feature_range=(-1, 1))`` rounds: its output reaches 1.0000000000000002.
The sensitivities assume ``|x| <= bound`` exactly, so such a value is clipped to the
bound (the same map for every data set: the guarantee holds), never passed on.
"""

import math
import warnings
from pathlib import Path

import numpy as np
import pytest
from sklearn.preprocessing import MinMaxScaler

import paceggm
from paceggm import PACEGGM, PrivateGridSearch, pace_ggm
from paceggm._validation import BOUND_ULPS, enforce_bound
from paceggm.exceptions import PrivacyLeakWarning

from conftest import ALL, REGRESSION

ids = lambda c: c.__name__  # noqa: E731
EPS = np.finfo(float).eps


def _scaled():
    """MinMaxScaler's [-1, 1] output for data where it overshoots 1 by one ulp."""
    X = np.random.default_rng(1).normal(size=(300, 3))
    Z = MinMaxScaler(feature_range=(-1, 1)).fit_transform(X)
    assert Z.max() == 1.0000000000000002 and np.abs(Z).max() <= 1 + BOUND_ULPS * EPS  # the documented case
    return Z


def _target(Z):
    return 0.5 * Z[:, 0]


def _spy(monkeypatch, cls):
    """Record the data the estimator's mechanisms are given (``_estimate`` for covariance, ``_fit`` for regression)."""
    seen = []
    name = "_fit" if cls in REGRESSION else "_estimate"
    original = getattr(cls, name)

    def spy(self, data, *args, **kwargs):
        seen.append(np.array(data, copy=True))
        return original(self, data, *args, **kwargs)

    monkeypatch.setattr(cls, name, spy)
    return seen


@pytest.mark.parametrize("cls", ALL, ids=ids)
def test_min_max_scaled_data_are_accepted_and_clipped_to_the_bound_before_any_mechanism(cls, monkeypatch):
    Z = _scaled()
    before = Z.copy()
    seen = _spy(monkeypatch, cls)
    est = cls(rho=1.0, random_state=0)
    est.fit(Z, _target(Z)) if cls in REGRESSION else est.fit(Z)
    np.testing.assert_array_equal(Z, before)  # the caller's array is not modified in place
    assert len(seen) == 1 and np.abs(seen[0]).max() == 1.0  # inside the bound exactly: clipped, not passed on
    np.testing.assert_array_equal(seen[0][:, :3], np.clip(Z, -1.0, 1.0))


@pytest.mark.parametrize("cls", ALL, ids=ids)
def test_a_value_1e_9_beyond_the_bound_is_still_refused(cls):
    Z = _scaled()
    Z[7, 1] = 1.0 + 1e-9
    with pytest.raises(ValueError, match="values of X lie outside .* by more than rounding"):
        est = cls(rho=1.0, random_state=0)
        est.fit(Z, _target(_scaled())) if cls in REGRESSION else est.fit(Z)


@pytest.mark.parametrize("cls", REGRESSION, ids=ids)
def test_the_target_gets_the_same_rounding_allowance(cls, monkeypatch):
    Z = _scaled()
    y = np.where(np.arange(300) == 5, 1.0000000000000002, _target(Z))
    seen = _spy(monkeypatch, cls)
    cls(rho=1.0, random_state=0).fit(Z, y)
    assert y[5] == 1.0000000000000002 and np.abs(seen[0][:, -1]).max() == 1.0
    with pytest.raises(ValueError, match="values of y lie outside"):
        cls(rho=1.0).fit(Z, np.where(np.arange(300) == 5, 1.0 + 1e-9, y))


@pytest.mark.parametrize("bound", [1.0, 2.0, 0.3, 1e5])
def test_the_allowance_is_exactly_bound_ulps(bound):
    limit = bound * (1.0 + BOUND_ULPS * EPS)
    inside = np.array([[limit, -limit, bound, 0.0]])
    out = enforce_bound(inside, bound, "raise")
    assert out is not inside and np.array_equal(out, [[bound, -bound, bound, 0.0]])
    assert inside[0, 0] == limit  # not modified in place
    beyond = np.array([[math.nextafter(limit, math.inf)]])
    with pytest.raises(ValueError, match="lie outside"):
        enforce_bound(beyond, bound, "raise")
    within = np.array([[bound, -bound]])
    assert enforce_bound(within, bound, "raise") is within  # nothing to clip: no copy


def test_the_function_and_the_search_accept_the_scaler_s_output_too(monkeypatch):
    Z = _scaled()
    import paceggm.estimator as estimator_module

    seen = []
    fit_checked = estimator_module._fit_checked

    def spy(X, *args, **kwargs):
        seen.append(np.array(X, copy=True))
        return fit_checked(X, *args, **kwargs)

    monkeypatch.setattr(estimator_module, "_fit_checked", spy)
    pace_ggm(Z, rho=1.0, random_state=0)
    assert np.abs(seen[0]).max() == 1.0
    search = PrivateGridSearch(PACEGGM(), {"alpha": [0.1, 0.3]}, rho=1.0, random_state=0).fit(Z)
    assert search.rho_spent_ <= 1.0


def test_a_callable_scoring_sees_hold_out_rows_clipped_to_the_bound():
    Z, seen = _scaled(), []

    def score(est, X_hold, y_hold):
        seen.append(np.abs(X_hold).max())
        return 0.0

    PrivateGridSearch(PACEGGM(), {"alpha": [0.1, 0.3]}, rho=1.0, scoring=score, score_sensitivity=1.0,
                      random_state=0).fit(Z)
    assert seen and max(seen) <= 1.0


def test_the_refusal_names_the_data_the_allowance_and_the_remedies():
    beyond = np.array([[0.5, 1.0 + 1e-9, 0.0]])
    message = (r"^values of X lie outside \[-bound, bound\] = \[-1\.0, 1\.0\] by more than rounding \(4 ulps\); rescale the data "
               r"\(MinMaxScaler\(feature_range=\(-bound, bound\), clip=True\)\), pass bound_check='clip' to clip them, "
               r"or bound_check='waive' to skip the check \(voids the privacy guarantee\)$")
    with pytest.raises(ValueError, match=message):
        pace_ggm(np.vstack([_scaled(), beyond]), rho=1.0, random_state=0)  # the function names its data X too
    with pytest.raises(ValueError, match=message.replace("X", "y")):
        enforce_bound(beyond, 1.0, "raise", name="y")


@pytest.mark.parametrize("policy", ["raise", "clip"])
def test_checking_and_clipping_warn_of_nothing(policy):
    X = np.array([[0.5, 1.0 + 2 * EPS, -3.0 if policy == "clip" else -1.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # not a PrivacyLeakWarning, nor a library's deprecation
        np.testing.assert_array_equal(enforce_bound(X, 1.0, policy), [[0.5, 1.0, -1.0]])


def test_waiving_warns_once_and_never_from_a_line_of_the_library():
    Z = _scaled() * 1.5
    waive = r"^bound_check='waive': the data are not checked against the declared bound, so the privacy " \
            r"guarantee does not hold if any value lies outside \[-bound, bound\]$"
    with pytest.warns(PrivacyLeakWarning, match=waive) as record:
        pace_ggm(Z, rho=1.0, bound_check="waive", random_state=0)
    with pytest.warns(PrivacyLeakWarning, match=waive) as record_fit:
        PACEGGM(rho=1.0, bound_check="waive", random_state=0).fit(Z)
    assert len(record) == len(record_fit) == 1
    # The warning names the caller's line (this file, in a plain run), not enforce_bound's nor pace_ggm's.
    # Checked as "outside the package": a wrapper around the library's functions adds frames of its own.
    assert not Path(record[0].filename).resolve().is_relative_to(Path(paceggm.__file__).resolve().parent)

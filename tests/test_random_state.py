"""``random_state`` is None, an int, a SeedSequence, a Generator or a legacy ``numpy.random.RandomState``."""

import numpy as np
import pytest

from paceggm import PACEGGM, PrivateGridSearch, pace_ggm
from paceggm._validation import check_random_state
from paceggm.privacy.mechanisms import noise_source

from conftest import ALL, REGRESSION

ids = lambda c: c.__name__  # noqa: E731


def _X(n=300, d=3, seed=0):
    return np.random.default_rng(seed).uniform(-1, 1, size=(n, d))


def _fit(cls, random_state, noise="fast"):
    est = cls(rho=1.0, noise=noise, random_state=random_state)
    X = _X()
    est.fit(X, 0.5 * X[:, 0]) if cls in REGRESSION else est.fit(X)
    return est.coef_ if cls in REGRESSION else est.covariance_


@pytest.mark.parametrize("cls", ALL, ids=ids)
def test_every_estimator_takes_a_random_state_and_equal_seeds_give_equal_fits(cls):
    a, b = _fit(cls, np.random.RandomState(7)), _fit(cls, np.random.RandomState(7))
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, _fit(cls, np.random.RandomState(8)))


@pytest.mark.parametrize("cls", [PACEGGM, *REGRESSION[:1]], ids=ids)
def test_a_random_state_seeds_exact_noise_like_an_int(cls):
    # exact noise with random_state=None draws from secrets (a real release); a RandomState is a seed
    assert noise_source(None, "exact") is None
    assert isinstance(noise_source(np.random.RandomState(0), "exact"), np.random.Generator)
    np.testing.assert_array_equal(_fit(cls, np.random.RandomState(3), noise="exact"),
                                  _fit(cls, np.random.RandomState(3), noise="exact"))


def test_a_random_state_is_advanced_like_a_scikit_learn_consumer_advances_it():
    rs = np.random.RandomState(0)
    first, second = check_random_state(rs).random(), check_random_state(rs).random()
    assert first != second  # each use draws a fresh seed from it
    assert first == check_random_state(np.random.RandomState(0)).random()
    with pytest.raises(TypeError, match="a Generator or a RandomState, got 'seed'"):
        check_random_state("seed")


def test_the_function_the_search_and_the_synthetic_sampler_take_one():
    from paceggm.bench.data.synthetic import make_synthetic

    X = _X(n=2000, d=4)
    np.testing.assert_array_equal(pace_ggm(X, rho=1.0, random_state=np.random.RandomState(1)).covariance,
                                  pace_ggm(X, rho=1.0, random_state=np.random.RandomState(1)).covariance)
    searches = [PrivateGridSearch(PACEGGM(), {"alpha": [0.1, 0.3]}, rho=1.0, random_state=np.random.RandomState(2))
                .fit(X) for _ in range(2)]
    np.testing.assert_array_equal(*(s.best_estimator_.covariance_ for s in searches))
    a, b = (make_synthetic(n=50, d=3, random_state=np.random.RandomState(5)) for _ in range(2))
    np.testing.assert_array_equal(a.X, b.X)

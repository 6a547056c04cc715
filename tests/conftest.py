"""Shared fixtures: small data with a known structure."""

import sys
from pathlib import Path

import numpy as np
import pytest

# Harness test modules are skipped, with the reason, when the harness's dependencies are absent.
from paceggm import PACEGGM
from paceggm.baselines import (
    SSP,
    AdaptiveCov,
    AdaSSP,
    DiagonalOnly,
    GaussCov,
    PACEGGMRegression,
    SeparateCov,
    SSPProjected,
    SSPTight,
)
from paceggm.bench.conftest import pytest_make_collect_report, pytest_runtest_makereport  # noqa: F401

# studies/ (the one-off measurements, tests/studies/) is a folder of the clone, not an installed
# package: put the clone on the path, after the installed packages, where it has one.
_CLONE = Path(__file__).resolve().parents[1]
if (_CLONE / "studies" / "__init__.py").is_file() and str(_CLONE) not in sys.path:
    sys.path.append(str(_CLONE))

# Every estimator of the library, for the tests that hold each of them to the same contract
# (the harness's method registry names the same classes; test_bench_methods checks that).
COVARIANCE = [PACEGGM, SSP, SSPProjected, SSPTight, DiagonalOnly, GaussCov, SeparateCov, AdaptiveCov]
REGRESSION = [AdaSSP, PACEGGMRegression]
ALL = COVARIANCE + REGRESSION


@pytest.fixture(autouse=True)
def _conversions_computed_afresh():
    """Each test computes the (ε, δ) ↔ ρ conversions it calls, not an answer memoised by an earlier test
    (``_epsilon`` and ``_rho`` are cached): a test exercises the code it names whatever ran before it
    in the process, as under mutation testing, where every run forks from one that ran the suite."""
    from paceggm.privacy import accounting

    accounting._epsilon.cache_clear()
    accounting._rho.cache_clear()


def bounded_gaussian(n: int, d: int, seed: int) -> np.ndarray:
    """Correlated Gaussian rows scaled so that every |x_ij| <= 1."""
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(d, d))
    cov = A @ A.T / d + 0.2 * np.eye(d)
    X = rng.multivariate_normal(np.zeros(d), cov, size=n)
    return X / np.abs(X).max()


@pytest.fixture
def small_data():
    return bounded_gaussian(2000, 5, seed=0)

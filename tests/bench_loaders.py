"""Small data-set loaders injected into the harness in tests (no files, no network).

They follow the loader contract of ``paceggm.bench.data.load_dataset``
(``loader(name, *, preprocessing, data_dir)`` returning an object with ``X``,
``bound``, ``preprocessing`` and ``features_and_target()``), built from
scikit-learn's bundled breast-cancer data and seeded synthetic data.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np


@dataclass
class SmallDataset:
    name: str
    X: np.ndarray
    columns: list
    target: str | None
    preprocessing: str
    bound: float = 1.0

    @property
    def max_abs(self) -> float:
        return float(np.abs(self.X).max())

    def features_and_target(self):
        if self.target is None:
            raise ValueError(f"{self.name} has no target column")
        j = self.columns.index(self.target)
        return np.delete(self.X, j, axis=1), self.X[:, j]


def _preprocess(X: np.ndarray, preprocessing: str) -> np.ndarray:
    lo, hi = X.min(axis=0), X.max(axis=0)
    X = 2.0 * (X - lo) / (hi - lo) - 1.0
    X = X - X.mean(axis=0)
    if preprocessing == "strict":
        X = X / np.abs(X).max()
    return X


def _raw(name: str) -> np.ndarray:
    if name == "bc":  # first six features + the label of scikit-learn's breast cancer
        from sklearn.datasets import load_breast_cancer

        data = load_breast_cancer()
        return np.column_stack([data.data[:, :6], data.target.astype(float)])
    if name.startswith("syn"):  # synthetic Gaussian, seeded by its name
        seed = int.from_bytes(hashlib.sha256(name.encode()).digest()[:4], "little")
        rng = np.random.default_rng(seed)
        d = 5
        A = rng.normal(size=(d, d))
        Z = rng.normal(size=(300, d)) @ A
        return np.column_stack([Z, Z @ rng.normal(size=d) + rng.normal(size=300)])
    if name == "damaged":  # a file that is there but cannot be read: a failure, not "unavailable"
        raise ValueError("damaged.csv: 3 columns, the registry expects 7")
    raise FileNotFoundError(f"unknown test data set {name!r}")


def small_loader(name: str, *, preprocessing: str, data_dir=None) -> SmallDataset:
    X = _preprocess(_raw(name), preprocessing)
    cols = [f"x{j}" for j in range(X.shape[1] - 1)] + ["y"]
    return SmallDataset(name, X, cols, "y", preprocessing)


class PrivateMeanRegressor:
    """A tiny ρ-zCDP regressor (predicts a noisy mean of ``y``) to exercise the harness's regression path.

    Replace-one sensitivity of the mean of values in ``[-bound, bound]`` is ``2·bound/n``.
    """

    def __init__(self, rho, *, bound=1.0, bound_check="raise", random_state=None):
        self.rho, self.bound, self.bound_check, self.random_state = rho, bound, bound_check, random_state

    def fit(self, X, y):
        from paceggm._validation import check_random_state
        from paceggm.privacy import gaussian_mechanism

        y = np.clip(np.asarray(y, dtype=float), -self.bound, self.bound)
        rng = check_random_state(self.random_state)
        self.mean_, _ = gaussian_mechanism(float(y.mean()), rho=self.rho, sensitivity=2 * self.bound / len(y), rng=rng)
        self.rho_spent_ = float(self.rho)
        return self

    def predict(self, X):
        return np.full(np.asarray(X).shape[0], self.mean_)

"""The interface every private covariance estimator in the project shares.

Modelled on scikit-learn: ``__init__`` only stores keyword parameters,
``fit(X)`` learns attributes ending in ``_``. Every estimator reports
``covariance_`` and the privacy it spent (``rho_spent_``, ``ledger_``), so the
harness treats PACE-GGM and the baselines alike.
"""

from __future__ import annotations

import inspect

import numpy as np

from paceggm._validation import check_data, check_positive, enforce_bound


class PrivateCovarianceEstimator:
    """Base class: parameter handling and the shared data checks."""

    @classmethod
    def _param_names(cls) -> list[str]:
        sig = inspect.signature(cls.__init__)
        return [p.name for p in sig.parameters.values() if p.name != "self" and p.kind != p.VAR_KEYWORD]

    def get_params(self, deep: bool = True) -> dict:
        """Constructor parameters as a dict."""
        return {name: getattr(self, name) for name in self._param_names()}

    def set_params(self, **params) -> PrivateCovarianceEstimator:
        """Set constructor parameters; unknown names raise ``ValueError``."""
        valid = set(self._param_names())
        for name, value in params.items():
            if name not in valid:
                raise ValueError(f"{type(self).__name__} has no parameter {name!r}; valid: {sorted(valid)}")
            setattr(self, name, value)
        return self

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({args})"

    def _validate_X(self, X, *, bound: float, bound_check: str) -> np.ndarray:
        """Check ``X`` and the declared bound; sets ``n_clipped_``."""
        bound = check_positive(bound, "bound")
        X = check_data(X)
        X, n_out = enforce_bound(X, bound, bound_check)
        self.n_clipped_ = n_out if bound_check == "clip" else 0
        self.n_outside_bound_ = n_out
        return X

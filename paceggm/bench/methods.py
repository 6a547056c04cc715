"""Registry of the estimators a sweep can run, resolved lazily.

A method key maps to an import path ``"module:Class"``. Nothing is imported
when the registry is read: a class that is missing (a baseline not installed,
a typo in a user-supplied ``target``) fails only the cells that use it, as a
recorded :class:`MethodUnavailableError`, never the sweep or the import of
the harness.

Every estimator is built as ``Cls(rho, bound=…, bound_check=…,
random_state=…, **params)`` — the keyword-only convention of
:class:`paceggm.base.PrivateCovarianceEstimator` — and fitted with ``fit(X)``
(covariance) or ``fit(X, y)`` (regression).
"""

from __future__ import annotations

import importlib
import inspect
from dataclasses import dataclass

__all__ = ["MethodSpec", "METHODS", "MethodUnavailableError", "method_spec", "resolve", "resolved_defaults"]

_TASKS = ("covariance", "regression")
# How many entries a method releases, for the measurement columns when the
# fitted estimator does not expose its own ``pattern_``:
#   "pattern"  — read ``pattern_`` / ``n_offdiagonal_`` from the fitted estimator;
#   "all"      — every distinct entry of Σ (d diagonal, d(d-1)/2 off-diagonal);
#   "diagonal" — the d diagonal entries only;
#   "none"     — not a covariance release (reported as missing).
_MEASURES = ("pattern", "all", "diagonal", "none")


class MethodUnavailableError(ImportError):
    """A method's class cannot be imported."""


@dataclass(frozen=True, slots=True)
class MethodSpec:
    """One registered method.

    Attributes
    ----------
    key : str
        Registry key (the ``method`` column of the results table).
    target : str
        ``"module:Class"``.
    task : {"covariance", "regression"}
    measures : {"pattern", "all", "diagonal", "none"}
        See the module comment.
    """

    key: str
    target: str
    task: str = "covariance"
    measures: str = "pattern"

    def __post_init__(self):
        if self.task not in _TASKS:
            raise ValueError(f"method {self.key!r}: task must be one of {_TASKS}, got {self.task!r}")
        if self.measures not in _MEASURES:
            raise ValueError(f"method {self.key!r}: measures must be one of {_MEASURES}, got {self.measures!r}")
        if self.target.count(":") != 1:
            raise ValueError(f"method {self.key!r}: target must look like 'module:Class', got {self.target!r}")


METHODS: dict[str, MethodSpec] = {
    spec.key: spec
    for spec in (
        MethodSpec("paceggm", "paceggm:PACEGGM", "covariance", "pattern"),
        MethodSpec("ssp", "paceggm.baselines:SSP", "covariance", "all"),
        MethodSpec("ssp_projected", "paceggm.baselines:SSPProjected", "covariance", "all"),
        MethodSpec("ssp_tight", "paceggm.baselines:SSPTight", "covariance", "all"),
        MethodSpec("diagonal", "paceggm.baselines:DiagonalOnly", "covariance", "diagonal"),
        MethodSpec("gausscov", "paceggm.baselines:GaussCov", "covariance", "all"),
        MethodSpec("separatecov", "paceggm.baselines:SeparateCov", "covariance", "all"),
        MethodSpec("adaptivecov", "paceggm.baselines:AdaptiveCov", "covariance", "all"),
        MethodSpec("adassp", "paceggm.baselines:AdaSSP", "regression", "all"),
        MethodSpec("paceggm_regression", "paceggm.baselines:PACEGGMRegression", "regression", "pattern"),
    )
}


def method_spec(key: str, *, target: str | None = None, task: str | None = None,
                measures: str | None = None) -> MethodSpec:
    """The registered spec of ``key``, or a user-defined one when ``target`` is given.

    Raises
    ------
    ValueError
        ``key`` is not registered and no ``target`` is given (a configuration
        error, reported before anything runs).
    """
    if target is not None:
        base = METHODS.get(key)
        return MethodSpec(
            key, target,
            task or (base.task if base else "covariance"),
            measures or (base.measures if base else "pattern"),
        )
    if key not in METHODS:
        raise ValueError(f"unknown method {key!r}; registered methods: {sorted(METHODS)} "
                         "(or give a 'target: module:Class' in the method config)")
    spec = METHODS[key]
    if task is not None or measures is not None:
        spec = MethodSpec(key, spec.target, task or spec.task, measures or spec.measures)
    return spec


def resolve(spec: MethodSpec) -> type:
    """Import the class of ``spec``.

    Raises
    ------
    MethodUnavailableError
        The module or the class cannot be imported; the message names both.
    """
    module_name, _, attr = spec.target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise MethodUnavailableError(
            f"method {spec.key!r} needs {spec.target}, but module {module_name!r} cannot be imported: {exc}"
        ) from exc
    try:
        return getattr(module, attr)
    except AttributeError as exc:
        raise MethodUnavailableError(
            f"method {spec.key!r} needs {spec.target}, but {module_name!r} has no attribute {attr!r}"
        ) from exc


def resolved_defaults(spec: MethodSpec, names) -> dict:
    """Constructor defaults of ``names`` for the class of ``spec``; ``{}`` if it cannot be imported.

    Used to write ``solver=None`` ("the library default") into a cell's key as
    the concrete default, so a change of the default changes the key instead
    of silently mixing results computed with two solvers.
    """
    try:
        cls = resolve(spec)
    except MethodUnavailableError:
        return {}
    params = inspect.signature(cls).parameters
    return {n: params[n].default for n in names
            if n in params and params[n].default is not inspect.Parameter.empty}

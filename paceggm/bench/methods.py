"""The registry of methods: one entry per method, read by configs, cells, figures and tests.

An entry (:class:`MethodSpec`) names the class (``"module:Class"``, imported
lazily), the parameters of its config group, what a fitted instance reports,
and how figures draw it. Everything else is derived from it: the Hydra group
``method/<key>`` (:func:`store_configs`), the legend label, colour, marker and
order (:mod:`paceggm.bench.figures.style`), the task a results row belongs to.
Adding a method is one :func:`register` call (or one line in :data:`METHODS`)
plus its class; a user module that makes that call outside the package is a
plugin (:mod:`paceggm.bench.plugins`). A recipe's entry may instead name a
class itself (``target: module:Class``, with an optional ``label``, ``color``,
``marker`` and ``linestyle``): :func:`entry_spec` reads it, and the store's
manifest keeps it for ``summary`` and the figures (:func:`remember`).

Nothing is imported when the registry is read: a class that is missing (a
baseline not installed, a typo in a user-supplied ``target``) fails only the
cells that use it, as a recorded :class:`MethodUnavailableError`, never the
sweep or the import of the harness.

Every estimator is built as ``Cls(rho, bound=…, bound_check=…,
random_state=…, **params)`` — the keyword-only convention of
:class:`paceggm.base.PrivateCovarianceEstimator` — and fitted with ``fit(X)``
(covariance) or ``fit(X, y)`` (regression); what the harness then reads is
declared in :mod:`paceggm.bench.fitted`.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from paceggm._validation import did_you_mean
from paceggm.settings import PACEGGMSettings

__all__ = ["MethodSpec", "MethodStyle", "METHODS", "MethodUnavailableError", "STYLE_FIELDS", "check_method_params",
           "declared_params", "entry_spec", "method_defaults", "method_spec", "register", "remember", "resolve",
           "resolved_defaults", "store_configs"]

_TASKS = ("covariance", "regression")
# How many entries a method releases (the measurement columns of a results row):
#   "pattern"  — the fitted estimator reports them (``pattern_``, see paceggm.bench.fitted);
#   "all"      — every distinct entry of Σ (d diagonal, d(d-1)/2 off-diagonal);
#   "diagonal" — the d diagonal entries only;
#   "none"     — not a covariance release (reported as missing).
_MEASURES = ("pattern", "all", "diagonal", "none")

# Okabe & Ito (2008) colour-blind-safe palette.
PALETTE = {
    "black": "#000000", "orange": "#E69F00", "sky": "#56B4E9", "green": "#009E73", "yellow": "#F0E442",
    "blue": "#0072B2", "vermillion": "#D55E00", "purple": "#CC79A7", "grey": "#7F7F7F",
}


class MethodUnavailableError(ImportError):
    """A method's class cannot be imported."""


@dataclass(frozen=True)
class MethodStyle:
    """How one method or variant is drawn and named in figures and tables.

    Figures must read in grayscale: methods shown together differ by marker
    and line style as well as by colour. A field left ``None`` is derived
    from the method's key (:func:`paceggm.bench.figures.style.method_style`).
    """

    label: str | None
    color: str | None
    marker: str | None
    linestyle: str | tuple | None
    order: int | None


@dataclass(frozen=True)
class MethodSpec:
    """One registered method.

    Attributes
    ----------
    key : str
        Registry key: the ``method`` column of the results table and the name
        of its config group option (``method=[key,...]``).
    target : str
        ``"module:Class"``.
    task : {"covariance", "regression"}
    measures : {"pattern", "all", "diagonal", "none"}
        See the module comment.
    params : dict
        Constructor parameters of its config group (``method.<key>.params``);
        ``None`` means the class default, written into each cell's key.
    grid : dict
        Parameters varied by default (parameter → list of values).
    style : MethodStyle or None
        Legend label, colour, marker, line and order; ``None`` derives a
        stable one from the key.
    inner : str
        Attribute holding the PACE-GGM fit of a composite estimator (e.g. a
        regression built on it), whose ``pattern_``, ``n_rounds_``, ``converged_`` and
        ``solve_time_`` are reported; ``""`` for the estimator itself.
    """

    key: str
    target: str
    task: str = "covariance"
    measures: str = "pattern"
    params: dict = field(default_factory=dict, hash=False)
    grid: dict = field(default_factory=dict, hash=False)
    style: MethodStyle | None = None
    inner: str = ""

    def __post_init__(self):
        if self.task not in _TASKS:
            raise ValueError(f"method {self.key!r}: task must be one of {_TASKS}, got {self.task!r}")
        if self.measures not in _MEASURES:
            raise ValueError(f"method {self.key!r}: measures must be one of {_MEASURES}, got {self.measures!r}")
        if self.target.count(":") != 1:
            raise ValueError(f"method {self.key!r}: target must look like 'module:Class', got {self.target!r}")

    def config(self) -> dict:
        """The node of the Hydra config group ``method/<key>``."""
        return {"key": self.key, "params": dict(self.params), "grid": dict(self.grid), "datasets": None}


# The parameters a recipe may set: PACE-GGM's tuned settings (paceggm.settings, the one place they
# and their defaults are declared); None is the default. The recipes pin the reference solver `newton`
# (the library's default is "auto"): the published experiments keep their keys and results bit for bit.
_PACEGGM_PARAMS = {**dict.fromkeys(PACEGGMSettings.tuned()), "solver": "newton"}
_PACE = MethodStyle("PACE-GGM", PALETTE["vermillion"], "o", "-", 0)

METHODS: dict[str, MethodSpec] = {
    spec.key: spec
    for spec in (
        MethodSpec("paceggm", "paceggm:PACEGGM", "covariance", "pattern", _PACEGGM_PARAMS, style=_PACE),
        # The ablation of PACE-GGM's adaptive selection: its recipes' solver, a band fixed in advance.
        MethodSpec("fixed_pattern", "paceggm.baselines:FixedPatternMaxEnt", "covariance", "pattern",
                   {"solver": "newton"},
                   style=MethodStyle("Fixed band (max-entropy)", PALETTE["vermillion"], "X", (0, (8, 2)), 2)),
        MethodSpec("ssp", "paceggm.baselines:SSP", "covariance", "all",
                   style=MethodStyle("SSP", PALETTE["blue"], "s", "--", 10)),
        MethodSpec("ssp_projected", "paceggm.baselines:SSPProjected", "covariance", "all",
                   style=MethodStyle("SSP (PSD-projected)", PALETTE["sky"], "D", (0, (5, 1, 1, 1)), 11)),
        MethodSpec("ssp_tight", "paceggm.baselines:SSPTight", "covariance", "all",
                   style=MethodStyle("SSP (tight)", PALETTE["purple"], "P", (0, (3, 1, 1, 1, 1, 1)), 12)),
        MethodSpec("ssp_glasso", "paceggm.baselines:SSPGraphicalLasso", "covariance", "all",
                   style=MethodStyle("SSP + graphical lasso", PALETTE["blue"], ">", (0, (5, 2, 1, 2, 1, 2)), 13)),
        MethodSpec("ssp_threshold", "paceggm.baselines:SSPThreshold", "covariance", "all",
                   style=MethodStyle("SSP + thresholding", PALETTE["sky"], "d", (0, (2, 2)), 14)),
        MethodSpec("adaptivecov", "paceggm.baselines:AdaptiveCov", "covariance", "all",
                   style=MethodStyle("AdaptiveCov", PALETTE["green"], "^", "-.", 20)),
        MethodSpec("gausscov", "paceggm.baselines:GaussCov", "covariance", "all",
                   style=MethodStyle("GaussCov", PALETTE["orange"], "v", (0, (1, 1)), 21)),
        MethodSpec("separatecov", "paceggm.baselines:SeparateCov", "covariance", "all",
                   style=MethodStyle("SeparateCov", PALETTE["yellow"], "<", (0, (4, 2, 1, 2)), 22)),
        MethodSpec("coinpress", "paceggm.baselines:CoinPress", "covariance", "all",
                   style=MethodStyle("CoinPress", PALETTE["black"], "h", (0, (6, 2)), 23)),
        # SeparateCov's family (eigenvalues and eigenvectors released apart): its colour.
        MethodSpec("emcov", "paceggm.baselines:EMCov", "covariance", "all",
                   style=MethodStyle("EMCov", PALETTE["yellow"], "*", (0, (3, 2, 1, 2)), 24)),
        MethodSpec("diagonal", "paceggm.baselines:DiagonalOnly", "covariance", "diagonal",
                   style=MethodStyle("Diagonal only", PALETTE["grey"], "x", ":", 30)),
        MethodSpec("adassp", "paceggm.baselines:AdaSSP", "regression", "none",
                   style=MethodStyle("AdaSSP", PALETTE["blue"], "s", "--", 40)),
        MethodSpec("paceggm_regression", "paceggm.baselines:PACEGGMRegression", "regression", "pattern",
                   dict(_PACEGGM_PARAMS),
                   style=replace(_PACE, order=1), inner="pace_ggm_"),
    )
}


def register(spec: MethodSpec) -> MethodSpec:
    """Add (or replace) a method: cells, configs and figures see it from then on.

    Examples
    --------
    >>> from paceggm.bench.methods import METHODS, MethodSpec, register
    >>> spec = register(MethodSpec("ssp_copy", "paceggm.baselines:SSP", measures="all"))
    >>> METHODS["ssp_copy"].target
    'paceggm.baselines:SSP'
    >>> del METHODS["ssp_copy"]
    """
    if not isinstance(spec, MethodSpec):
        raise TypeError(f"expected a MethodSpec, got {type(spec).__name__}")
    if not isinstance(spec.key, str) or not spec.key.isidentifier():
        raise ValueError(f"a method's key must be an identifier (letters, digits, _), got {spec.key!r}")
    if spec.style is not None and not isinstance(spec.style, MethodStyle):
        raise TypeError(f"method {spec.key!r}: style must be a MethodStyle, got {type(spec.style).__name__}")
    METHODS[spec.key] = spec
    return spec


#: The fields of a recipe's method entry that say how a ``target`` method is drawn (its MethodStyle).
STYLE_FIELDS = ("label", "color", "marker", "linestyle")


def _entry_style(key: str, entry: Mapping) -> MethodStyle | None:
    given = {f: entry.get(f) for f in STYLE_FIELDS if entry.get(f) is not None}
    for f, value in given.items():
        if f == "linestyle" and isinstance(value, (list, tuple)):  # matplotlib's (offset, (on, off, ...))
            value = given[f] = (value[0], tuple(value[1])) if len(value) == 2 and isinstance(value[1], (list, tuple)) \
                else value
        if not isinstance(value, (str, tuple)):
            raise ValueError(f"method {key!r}: {f} must be a string, got {value!r}")
    return MethodStyle(given.get("label"), given.get("color"), given.get("marker"), given.get("linestyle"), None) \
        if given else None


def entry_spec(entry: Mapping) -> MethodSpec:
    """The spec of one entry of a config's ``method`` node (``key``, optional ``target``, ``task``,
    ``measures`` and the style fields :data:`STYLE_FIELDS`).

    Raises
    ------
    ValueError
        As :func:`method_spec`; or a style field that is not a string.
    """
    key = entry["key"]
    style = _entry_style(key, entry)
    spec = method_spec(key, target=entry.get("target"), task=entry.get("task"), measures=entry.get("measures"))
    if style is None:
        return spec
    if entry.get("target") is None:
        given = ", ".join(f for f in STYLE_FIELDS if entry.get(f) is not None)
        raise ValueError(f"method {key!r}: {given} only with a target (a registered method is named and drawn as "
                         "its registry entry says)")
    base = spec.style or MethodStyle(None, None, None, None, None)
    return replace(spec, style=replace(base, **{f: getattr(style, f) for f in STYLE_FIELDS
                                              if getattr(style, f) is not None}))


def remember(methods: Mapping) -> list[str]:
    """Register the methods a stored config's ``method`` node names by ``target`` and the registry lacks.

    What ``run`` was given (``target``, task, measures, label and style) is kept in
    the store's manifest; ``summary`` and the figures read it back through this, so
    a ``target`` is written once. A registered key is left as it is.

    Returns
    -------
    list of str
        The keys registered by this call.
    """
    added = []
    for entry in (methods or {}).values():
        if not isinstance(entry, Mapping) or not entry.get("key") or not entry.get("target"):
            continue
        if entry["key"] in METHODS:
            continue
        try:
            spec = entry_spec(entry)
        except (ValueError, TypeError):
            continue  # a stored entry run could not use either: nothing to draw
        register(spec)
        added.append(spec.key)
    return added


def store_configs() -> None:
    """Put every registered method into Hydra's config store as ``method/<key>``.

    Recipes then select methods by key (``method=[paceggm,ssp]``) and override
    their parameters (``method.paceggm.params.solver=ipm``) without a YAML
    file per method.
    """
    from hydra.core.config_store import ConfigStore

    cs = ConfigStore.instance()
    for key, spec in METHODS.items():
        cs.store(group="method", name=key, node=spec.config(), package=f"method.{key}")


def method_spec(key: str, *, target: str | None = None, task: str | None = None,
                measures: str | None = None) -> MethodSpec:
    """The registered spec of ``key``, or a user-defined one when ``target`` is given.

    Raises
    ------
    ValueError
        ``key`` is not registered and no ``target`` is given (a configuration
        error, reported before anything runs).
    """
    base = METHODS.get(key)
    if target is not None and (base is None or target != base.target):
        return MethodSpec(
            key, target,
            task or (base.task if base else "covariance"),
            measures or (base.measures if base else "pattern"),
            style=base.style if base else None,
        )
    if base is None:
        raise ValueError(f"unknown method {key!r}; registered methods: {sorted(METHODS)} "
                         "(or give a 'target: module:Class' in the method config)")
    if task is not None or measures is not None:
        return replace(base, task=task or base.task, measures=measures or base.measures)
    return base


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


#: Constructor arguments the harness sets itself (see the module docstring), never a method parameter.
HARNESS_SET = ("rho", "bound", "bound_check", "random_state")


def declared_params(spec: MethodSpec) -> dict | None:
    """The parameters the class of ``spec`` declares (name → default), or None if it cannot be imported.

    The harness's own arguments (:data:`HARNESS_SET`) and the privacy-budget
    aliases (``epsilon``, ``delta``, ``accountant``: a cell's budget is its ρ) are left out.
    """
    try:
        cls = resolve(spec)
    except MethodUnavailableError:
        return None
    out = {}
    for name, p in inspect.signature(cls).parameters.items():
        if name in HARNESS_SET or name in ("epsilon", "delta", "accountant"):
            continue
        if p.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
            continue
        out[name] = None if p.default is inspect.Parameter.empty else p.default
    return out


def method_defaults(key: str) -> dict:
    """What a registered method runs with unless a recipe says otherwise (name → value).

    Its entry's pinned parameters over its class's declared defaults (PACE-GGM's entry pins
    ``solver="newton"`` where the library's default is ``"auto"``; ``None`` in an entry is the class
    default). ``{}`` for an unregistered key, only the pins for a class that cannot be imported.
    A variant of a method is named by the parameters that differ from these.
    """
    spec = METHODS.get(key)
    if spec is None:
        return {}
    return {**(declared_params(spec) or {}), **{k: v for k, v in spec.params.items() if v is not None}}


def check_method_params(spec: MethodSpec, params: dict, *, where: str) -> None:
    """Refuse parameters ``spec``'s class does not declare or does not accept, before any cell runs.

    Names are checked against the constructor's signature, values by the
    class's own ``_check_params`` (the check ``fit`` runs before spending any
    budget) on an unfitted instance: the one place a value's rule is written.
    A class that cannot be imported is left to fail its cells (recorded,
    retried once it exists).

    Raises
    ------
    ValueError
        One line naming the entry, the parameter, and what is valid.
    """
    declared = declared_params(spec)
    if declared is None:
        return
    for name in params:
        if name not in declared:
            raise ValueError(f"{where}: method {spec.key!r} has no parameter {name!r}{did_you_mean(name, declared)}; "
                             f"its parameters: {', '.join(sorted(declared))}")
    est = resolve(spec)(1.0, bound=1.0, bound_check="raise", random_state=0, **params)
    check = getattr(est, "_check_params", None)
    if check is not None:
        try:
            check()
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{where}: {' '.join(str(exc).split())}") from None

"""Cells: the unit of work of a sweep, and the expansion of a recipe into cells.

A cell is (data set, method + parameters, ρ, trial). Its key is a hash of its
canonical description — everything that determines its result and nothing
else (not the experiment it was requested by, not the variant label, not the
worker it runs on) — so a rerun finds it and two recipes that ask for the same
computation ask for the same key. The data-bound policy and the regression
split enter the description only when they differ from their defaults (the
policy ``auto`` implies for the preprocessing, a 0.2 test share), so the keys
of every cell run with the defaults stay what they always were.

One composed Hydra config describes a whole grid; :func:`expand` turns it into
cells. The ``method`` node maps an *entry name* to::

    key: paceggm            # registry key (required: an entry without it is inactive)
    target: null            # optional "module:Class" overriding the registry
    label: null             # with a target: its name in figures (and color, marker, linestyle)
    params: {alpha: 0.3}    # fixed constructor parameters; null = library default
    grid: {solver: [ipm, pgd0]}   # parameters varied inside the experiment
    datasets: null          # optional restriction (e.g. regression targets)

An entry is active when it has a ``key``: every option of the ``method``
group (generated from the method registry) declares one, so selecting it (``method=[paceggm,ssp]``) activates it, and a
recipe may add entries of its own (``paceggm_nocc: {key: paceggm, params:
{use_components: false}}``; drop one with ``~method.paceggm_nocc``). An entry
without ``key`` only adjusts a method the recipe may not select (e.g.
``adassp: {datasets: [pol]}``) and is ignored when it is not selected.

Every combination of the grid is a *variant*, labelled ``entry[k=v,…]`` with
the grid parameters only (the fixed ones do not distinguish anything inside
the experiment), e.g. ``paceggm[solver=pgd0]``: the harness's own name of a
cell (``variant``). What a cell is called in summaries and figures is decided
here too, once: the parameters it runs with that differ from its method's
defaults now (``varies``) and its label ``method[k=v,…]`` over them
(:mod:`paceggm.bench.variants`), both stored with its row.
"""

from __future__ import annotations

import itertools
import math
import numbers
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from paceggm.bench.methods import (
    HARNESS_SET,
    STYLE_FIELDS,
    MethodUnavailableError,
    check_method_params,
    entry_spec,
    resolve,
    resolved_defaults,
)
from paceggm.bench.seeds import data_seed, method_seed, stable_hash

__all__ = ["Cell", "bound_policy", "check_target", "expand", "grid_id", "variant_label"]

# none: rows as drawn (populations with a known Σ, paceggm.bench.data.populations); the bound is then checked
PREPROCESSINGS = ("paper", "strict", "none")
DEFAULT_TEST_FRACTION = 0.2
#: The config key (and recorded parameter, ``p_data_scale``) of the factor applied to the preprocessed data.
DATA_SCALE = "data_scale"
DEFAULT_DATA_SCALE = 1.0


def bound_policy(policy: str, preprocessing: str) -> str:
    """The ``bound_check`` estimators get.

    ``"auto"`` waives the bound for the published preprocessing — whose data
    exceed the declared ``B = 1`` after centring (docs/design.md, *Data and metrics*), so reproducing the
    publication means running outside the guarantee, as it did — and enforces
    it (``"raise"``) for the strict one, where it holds by construction.
    """
    if policy == "auto":
        return "waive" if preprocessing == "paper" else "raise"
    if policy not in ("raise", "clip", "waive"):
        raise ValueError(f"bound_check must be auto, raise, clip or waive, got {policy!r}")
    return policy


@dataclass(frozen=True)
class Cell:
    """One (data set, method + parameters, ρ, trial) of a sweep."""

    dataset: str
    preprocessing: str
    method: str
    target: str
    task: str
    measures: str
    params: tuple[tuple[str, Any], ...]
    variant: str
    rho: float
    trial: int
    base_seed: int
    bound_check: str | None = None  # the policy estimators get; None = the preprocessing's default
    test_fraction: float | None = None  # regression cells only; None = DEFAULT_TEST_FRACTION
    # The preprocessed matrix is multiplied by this before the estimator checks (or clips) it against
    # its bound: a test of how the counts depend on the data's scale (signal) at a fixed noise level.
    data_scale: float = DEFAULT_DATA_SCALE
    # The parameters (sorted items) that differ from the method's defaults when the cell is made: its
    # display label's; not part of the key (a later change of a default renames nothing).
    varies: tuple[tuple[str, Any], ...] = ()
    key: str = field(init=False)

    def __post_init__(self):
        # ρ = 1 and ρ = 1.0 are one budget: normalise before hashing.
        object.__setattr__(self, "rho", float(self.rho))
        object.__setattr__(self, "trial", int(self.trial))
        object.__setattr__(self, "base_seed", int(self.base_seed))
        if self.test_fraction is not None:
            object.__setattr__(self, "test_fraction", float(self.test_fraction))
        object.__setattr__(self, "data_scale", _positive_float(self.data_scale, "data_scale"))
        object.__setattr__(self, "key", stable_hash(self.description()))

    def description(self) -> dict:
        """The canonical description the key hashes."""
        out = {
            "dataset": self.dataset,
            "preprocessing": self.preprocessing,
            "method": self.method,
            "target": _key_target(self.target),
            "params": self.recorded_params,
            "rho": self.rho,
            "trial": self.trial,
            "base_seed": self.base_seed,
        }
        if self.bound_check is not None and self.bound_check != bound_policy("auto", self.preprocessing):
            out["bound_check"] = self.bound_check
        if self.task == "regression" and self.test_fraction not in (None, DEFAULT_TEST_FRACTION):
            out["test_fraction"] = self.test_fraction
        return out

    @property
    def seed(self) -> int:
        """Seed of the method's noise (see :mod:`paceggm.bench.seeds`)."""
        return method_seed(self.base_seed, self.dataset, self.trial, self.method, self.rho)

    @property
    def data_seed(self) -> int:
        """Seed of the data-side randomness, shared by every method and ρ of the trial."""
        return data_seed(self.base_seed, self.dataset, self.trial)

    @property
    def label(self) -> str:
        """The display label of the cell's row: its method and the parameters it varies."""
        return variant_label(self.method, dict(self.varies))

    @property
    def param_dict(self) -> dict:
        """The estimator's constructor parameters."""
        return dict(self.params)

    @property
    def recorded_params(self) -> dict:
        """What the row's ``params`` (hence its ``p_*`` columns) records: the constructor parameters,
        and ``data_scale`` when it is not 1 (so a cell with the default scale keeps its key)."""
        return _recorded(self.params, self.data_scale)


def _recorded(params, data_scale: float) -> dict:
    """See :attr:`Cell.recorded_params`."""
    return {**dict(params), **({DATA_SCALE: data_scale} if data_scale != DEFAULT_DATA_SCALE else {})}


# The baselines moved from a top-level package into ``paceggm.baselines`` without
# changing what they compute; their keys keep the old module name, so stores
# written before the move still resume and collect.
_MOVED_MODULES = {"paceggm.baselines": "baselines"}


def _key_target(target: str) -> str:
    module, sep, attr = target.partition(":")
    for new, old in _MOVED_MODULES.items():
        if module == new or module.startswith(new + "."):
            module = old + module[len(new):]
    return module + sep + attr


def _format(value) -> str:
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, numbers.Real) and not isinstance(value, numbers.Integral):
        return f"{float(value):g}"
    return str(value)


def variant_label(name: str, combo: Mapping[str, Any]) -> str:
    """``name[k=v,…]`` over the parameters ``combo``, or ``name`` without any.

    The one builder of labels: of a recipe's variants (``entry`` and its grid)
    and of a row's display label (its method and the parameters it varies).

    Examples
    --------
    >>> variant_label("paceggm", {"beta": 0.5, "alpha": 0.1})
    'paceggm[alpha=0.1,beta=0.5]'
    """
    if not combo:
        return name
    return name + "[" + ",".join(f"{k}={_format(combo[k])}" for k in sorted(combo)) + "]"


def _positive_float(value, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value) or value <= 0:
        raise ValueError(f"{what} must be a positive finite number, got {value!r}")
    return float(value)


def _trial_indices(trials) -> list[int]:
    if isinstance(trials, bool):
        raise ValueError(f"trials must be a positive integer or a list of trial indices, got {trials!r}")
    if isinstance(trials, numbers.Integral):
        if trials < 1:
            raise ValueError(f"trials must be >= 1, got {trials}")
        return list(range(int(trials)))
    if isinstance(trials, (list, tuple)) and trials and all(
        isinstance(t, numbers.Integral) and not isinstance(t, bool) and t >= 0 for t in trials
    ):
        if len(set(trials)) != len(trials):
            raise ValueError(f"trial indices repeat: {list(trials)}")
        return [int(t) for t in trials]
    raise ValueError(f"trials must be a positive integer or a list of trial indices >= 0, got {trials!r}")


def _names(values, what: str) -> list[str]:
    if isinstance(values, str) or not isinstance(values, (list, tuple)) or not values:
        raise ValueError(f"{what} must be a non-empty list of names, got {values!r}")
    if not all(isinstance(v, str) and v for v in values):
        raise ValueError(f"{what} must contain non-empty strings, got {values!r}")
    if len(set(values)) != len(values):
        raise ValueError(f"{what} repeat: {list(values)}")
    return list(values)


def grid_id(name: str, cells) -> str:
    """The identity of a grid: ``"<recipe>@<hash of its sorted cell keys>"`` (recorded in each cell it computes).

    Two command lines that ask for the same cells under one recipe name have one
    grid identity; any other data set, method, ρ, trial, bound policy or split
    gives another.
    """
    return f"{name}@{stable_hash(sorted(c.key for c in cells), length=16)}"


def check_target(spec, where: str) -> None:
    """Refuse a ``target`` that is not an estimator class of the harness's method contract, before it is called.

    The contract (:mod:`paceggm.bench.methods`): a class, built as ``Cls(rho, bound=…,
    bound_check=…, random_state=…, **params)`` and fitted with ``fit``. A
    :class:`paceggm.base.PrivateEstimator` subclass meets it; any other class must
    declare those arguments and a ``fit`` method. Anything else importable — a
    function such as ``os:system``, a class of another kind — is refused without
    being called. A target that cannot be imported is left to fail its cells
    (recorded, retried once it exists).

    Raises
    ------
    ValueError
        One line naming the entry, the target and what it must be.
    """
    import inspect

    from paceggm.base import PrivateEstimator

    module, sep, attr = spec.target.partition(":") if isinstance(spec.target, str) else ("", "", "")
    if not (module and sep and attr) or ":" in attr:
        raise ValueError(f"{where}: target must look like 'module:Class', got {spec.target!r}")
    try:
        obj = resolve(spec)
    except MethodUnavailableError:
        return
    must = (f"{where}: target {spec.target!r} is not an estimator class the harness can run (a "
            "paceggm.base.PrivateEstimator subclass, or a class taking rho, bound=, bound_check=, "
            "random_state= with a fit method)")
    if not inspect.isclass(obj):
        raise ValueError(f"{must}; it is a {type(obj).__name__}")
    if issubclass(obj, PrivateEstimator):
        return
    try:
        params = inspect.signature(obj).parameters
    except (TypeError, ValueError):
        params = {}
    takes_all = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    lacking = [n for n in HARNESS_SET if n not in params and not takes_all]
    if lacking or not callable(getattr(obj, "fit", None)):
        what = f"no argument {', '.join(lacking)}" if lacking else "no fit method"
        raise ValueError(f"{must}; it has {what}")


#: Cells a grid may have before a run must be confirmed (``--yes`` or ``confirm_large=true``); the
#: largest recipe has a few thousand. A config may raise it (``max_cells=…``).
DEFAULT_MAX_CELLS = 50_000


def grid_size(methods: Mapping, datasets, rhos, n_trials: int) -> int:
    """Cells of a grid, counted without building them (a mistyped grid may have billions)."""
    total = 0
    for entry in methods.values():
        entry = dict(entry or {})
        if not entry.get("key"):
            continue
        variants = math.prod(len(v) if isinstance(v, (list, tuple)) else 1 for v in (entry.get("grid") or {}).values())
        ds = entry.get("datasets")
        total += variants * (len(ds) if isinstance(ds, (list, tuple)) else len(datasets)) * len(rhos) * n_trials
    return total


def _check_size(cfg: Mapping, methods: Mapping, datasets, rhos) -> None:
    from paceggm.bench.config_schema import ConfigError

    limit = cfg.get("max_cells", DEFAULT_MAX_CELLS)
    if isinstance(limit, bool) or not isinstance(limit, numbers.Integral) or limit < 1:
        raise ConfigError(f"max_cells must be a positive integer, got {limit!r}")
    trials = cfg.get("trials")
    n_trials = len(trials) if isinstance(trials, (list, tuple)) else trials
    if isinstance(n_trials, bool) or not isinstance(n_trials, numbers.Integral):
        return  # _trial_indices says what is wrong
    size = grid_size(methods, datasets, rhos, int(n_trials))
    if size > limit and cfg.get("confirm_large") is not True:
        raise ConfigError(f"the grid has {size:,} cells, more than max_cells={limit:,}: check the overrides "
                          "(rho, trials, datasets, method grids), or confirm with --yes (confirm_large=true)")


def expand(cfg: Mapping) -> list[Cell]:
    """All cells of a resolved experiment config (a plain mapping).

    Raises
    ------
    ValueError
        A malformed grid, an unknown method, or two variants that describe the
        same computation (they would share a key).
    """
    from paceggm.bench.variants import varied  # it names rows with this module's variant_label

    preprocessing = cfg.get("preprocessing")
    if preprocessing not in PREPROCESSINGS:
        raise ValueError(f"preprocessing must be one of {PREPROCESSINGS}, got {preprocessing!r}")
    datasets = _names(cfg.get("datasets"), "datasets")
    rhos = cfg.get("rho")
    if isinstance(rhos, numbers.Real):
        rhos = [rhos]
    if not isinstance(rhos, (list, tuple)) or not rhos:
        raise ValueError(f"rho must be a number or a non-empty list of numbers, got {rhos!r}")
    rhos = [_positive_float(r, "every rho") for r in rhos]
    if len(set(rhos)) != len(rhos):
        raise ValueError(f"rho values repeat: {rhos}")
    methods = cfg.get("method")
    if isinstance(methods, Mapping):
        _check_size(cfg, methods, datasets, rhos)
    trials = _trial_indices(cfg.get("trials"))
    base_seed = cfg.get("base_seed")
    if isinstance(base_seed, bool) or not isinstance(base_seed, numbers.Integral) or base_seed < 0:
        raise ValueError(f"base_seed must be a non-negative integer, got {base_seed!r}")
    bound_check = bound_policy(cfg.get("bound_check", "auto"), preprocessing)
    test_fraction = cfg.get("test_fraction", DEFAULT_TEST_FRACTION)
    if (isinstance(test_fraction, bool) or not isinstance(test_fraction, numbers.Real)
            or not 0.0 < float(test_fraction) < 1.0):
        raise ValueError(f"test_fraction must be a number strictly between 0 and 1, got {test_fraction!r}")
    data_scale = _positive_float(cfg.get(DATA_SCALE, DEFAULT_DATA_SCALE), DATA_SCALE)
    methods = cfg.get("method")
    if not isinstance(methods, Mapping) or not methods:
        raise ValueError("the config selects no method (method=[paceggm,ssp,...])")

    if not any((e or {}).get("key") for e in methods.values()):
        raise ValueError("the config selects no method (method=[paceggm,ssp,...])")
    cells: list[Cell] = []
    seen: dict[str, str] = {}
    for name, entry in methods.items():
        entry = dict(entry or {})
        if not entry.get("key"):
            continue  # an adjustment of an unselected method (see the module docstring)
        unknown = set(entry) - {"key", "target", "task", "measures", "params", "grid", "datasets", *STYLE_FIELDS}
        if unknown:
            raise ValueError(f"method entry {name!r} has unknown fields {sorted(unknown)}")
        spec = entry_spec(entry)
        if entry.get("target") is not None:
            check_target(spec, f"method.{name}")
        params = dict(entry.get("params") or {})
        grid = dict(entry.get("grid") or {})
        for p, values in grid.items():
            if not isinstance(values, (list, tuple)) or not values:
                raise ValueError(f"method {name!r}: grid.{p} must be a non-empty list, got {values!r}")
        reserved = {"rho", "bound", "bound_check", "random_state", DATA_SCALE} & (set(params) | set(grid))
        if reserved:
            raise ValueError(f"method {name!r}: {sorted(reserved)} are set by the harness, not by method params")
        entry_datasets = entry.get("datasets")
        ds_list = _names(entry_datasets, f"method {name!r} datasets") if entry_datasets is not None else datasets
        names = sorted(grid)
        for values in itertools.product(*(grid[p] for p in names)):
            combo = dict(zip(names, values))
            merged = {**params, **combo}
            unset = [k for k, v in merged.items() if v is None]
            merged.update(resolved_defaults(spec, unset))
            # A default that cannot be resolved (class unavailable) is left to the
            # class: the cell fails anyway and is retried once the class exists.
            merged = {k: v for k, v in merged.items() if v is not None}
            label = variant_label(name, combo)
            check_method_params(spec, merged, where=f"method.{name}" + (f" ({label})" if combo else ""))
            frozen = tuple(sorted(merged.items()))
            varies = tuple(varied(spec.key, _recorded(frozen, data_scale)).items())
            for ds, rho, trial in itertools.product(ds_list, rhos, trials):
                cell = Cell(ds, preprocessing, spec.key, spec.target, spec.task, spec.measures,
                            frozen, label, rho, trial, int(base_seed), bound_check,
                            float(test_fraction) if spec.task == "regression" else None, data_scale, varies)
                if cell.key in seen:
                    raise ValueError(
                        f"variants {seen[cell.key]!r} and {label!r} describe the same computation "
                        f"(data set {ds}, rho {rho}, trial {trial}); drop one of them"
                    )
                seen[cell.key] = label
                cells.append(cell)
    return cells

"""The schema of a composed config, and the checks a command line passes before anything runs.

A composed config is checked here as a whole, once, at the boundary:

* the command line's overrides (:func:`check_overrides`): Hydra's own settings
  (``hydra.*``, ``hydra/…``) are refused — the harness composes configs with
  Hydra's compose API, so it has no output directory, launcher or sweeper a
  ``hydra.*`` key could set; group options (``method=[…]``, ``backend=…``,
  ``experiment=…``) must exist, and a typo is answered with the nearest names;
* the composed config (:func:`check_composed`): every key must be one of
  :class:`BenchConfig`'s (a Hydra structured config: the recipes' YAML merged
  onto it, so a mistyped or unknown key or a value of the wrong type is an error
  naming the key and the nearest valid keys);
* the method parameters, against what each method declares
  (:func:`paceggm.bench.methods.check_method_params`, called by
  :func:`paceggm.bench.runner.check_config`).

Every error is a :class:`ConfigError`: one line, exit status 2.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

from omegaconf import MISSING

from paceggm._validation import did_you_mean

__all__ = ["BenchConfig", "ConfigError", "MethodEntry", "Backend", "check_composed", "check_overrides",
           "did_you_mean"]


class ConfigError(ValueError):
    """A config or command line the harness cannot run as given (one line, exit status 2)."""


@dataclass
class MethodEntry:
    """One entry of the ``method`` node (see :mod:`paceggm.bench.cells`)."""

    key: Any = None
    target: Any = None
    task: Any = None
    measures: Any = None
    params: dict[str, Any] = field(default_factory=dict)
    grid: dict[str, Any] = field(default_factory=dict)
    datasets: Any = None
    # How a ``target`` method is named and drawn in figures (None: the registry's, else derived from the key)
    label: Any = None
    color: Any = None
    marker: Any = None
    linestyle: Any = None


@dataclass
class Backend:
    """The ``backend`` group (``conf/backend/``); the dask fields are ignored by loky."""

    name: str = MISSING
    n_jobs: Any = -1
    address: Any = None
    n_workers: Any = 2
    processes: bool = True
    timeout: Any = 30


# Values are ``MISSING`` (or typed ``Any``) where conf/config.yaml sets them: the YAML is the one
# place a default lives; the schema says which keys exist and what type a few of them have.
# Numbers and lists stay ``Any``: paceggm.bench.cells checks them with messages that say what is allowed.
@dataclass
class BenchConfig:
    """Every key a composed config may hold (``conf/config.yaml`` documents each)."""

    name: str = MISSING
    datasets: Any = MISSING
    preprocessing: str = MISSING
    rho: Any = MISSING
    trials: Any = MISSING
    base_seed: Any = MISSING
    bound_check: str = MISSING
    drop_target: bool = False
    test_fraction: Any = MISSING
    data_scale: float = MISSING
    runs_dir: str = MISSING
    data_dir: Any = None
    loader: Any = None
    progress: Any = True
    order: str = MISSING
    reuse_from: list[str] = field(default_factory=list)
    paper_datasets: list[str] = field(default_factory=list)
    max_cells: Any = MISSING
    confirm_large: bool = False
    method: dict[str, MethodEntry] = field(default_factory=dict)
    backend: Backend = field(default_factory=Backend)
    plugins: list[str] = field(default_factory=list)


#: Config groups a command line selects options from; the options of ``method`` come from the registry.
GROUPS = ("method", "backend", "experiment")


def _fields(cls) -> list[str]:
    return [f.name for f in fields(cls)]


def _unknown_key(path: str, key: str, valid: Sequence[str]) -> ConfigError:
    where = f"{path}.{key}" if path else key
    return ConfigError(f"unknown config key {where!r}{did_you_mean(key, valid)}; valid keys"
                       f"{' of ' + path if path else ''}: {', '.join(sorted(valid))}")


def _check_keys(cfg: Mapping) -> None:
    top = _fields(BenchConfig)
    for key in cfg:
        if key not in top:
            raise _unknown_key("", str(key), top)
    backend = cfg.get("backend")
    if isinstance(backend, Mapping):
        for key in backend:
            if key not in _fields(Backend):
                raise _unknown_key("backend", str(key), _fields(Backend))
    methods = cfg.get("method")
    if isinstance(methods, Mapping):
        for name, entry in methods.items():
            for key in entry if isinstance(entry, Mapping) else ():
                if key not in _fields(MethodEntry):
                    raise _unknown_key(f"method.{name}", str(key), _fields(MethodEntry))


def check_composed(cfg) -> None:
    """Check a composed ``DictConfig`` against :class:`BenchConfig`.

    Raises
    ------
    ConfigError
        An unknown key (with the nearest valid ones), or a value OmegaConf
        cannot convert to the key's type (e.g. ``drop_target=maybe``).
    """
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    _check_keys(cfg)
    try:
        OmegaConf.merge(OmegaConf.structured(BenchConfig), cfg)
    except OmegaConfBaseException as exc:
        key = getattr(exc, "full_key", None)
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ConfigError(f"{key}: {first}" if key else first) from None


def _options(group: str, conf_dir) -> list[str]:
    if group == "method":
        from paceggm.bench.methods import METHODS

        return sorted(METHODS)
    return sorted(p.stem for p in (conf_dir / group).glob("*.yaml"))


def check_overrides(overrides: Sequence[str], conf_dir) -> None:
    """Refuse Hydra's own settings and unknown group options among ``overrides`` (parsed, not composed).

    Raises
    ------
    ConfigError
        A ``hydra.*`` / ``hydra/…`` override, an option a group does not have
        (with the nearest names and the valid ones), or an override Hydra's
        grammar cannot parse.
    """
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException

    try:
        parsed = OverridesParser.create().parse_overrides(list(overrides))
    except HydraException as exc:
        raise ConfigError(" ".join(str(exc).split())) from None
    for o in parsed:
        key = o.key_or_group
        if key.split(".", 1)[0].split("/", 1)[0] == "hydra":
            raise ConfigError(
                f"{o.input_line}: Hydra's own settings (hydra.*) are not used by this harness, which composes "
                "configs without a Hydra app (no output directory, launcher or sweeper); drop it "
                "(the store goes to runs_dir=…, a sweep is -m key=a,b)")
        if key not in GROUPS or o.package or o.is_delete():
            continue
        value = o.value()
        names = value if isinstance(value, list) else [value]
        if o.is_sweep_override():
            names = list(o.sweep_string_iterator())
            names = [n.strip("[]") for v in names for n in v.split(",")]
        valid = _options(key, conf_dir)
        for name in names:
            if str(name) not in valid:
                what = {"method": "method", "backend": "backend", "experiment": "recipe"}[key]
                raise ConfigError(f"{o.input_line}: no {what} {str(name)!r}{did_you_mean(name, valid)}; "
                                  f"valid names: {', '.join(valid)}")


def explain_override_error(message: str) -> str | None:
    """A clearer line for Hydra's "Could not override 'k'" (a key the config does not have), or None.

    Hydra's own hint (``+k=v``) would add the mistyped key; the schema names the valid ones instead.
    """
    import re

    match = re.search(r"Could not override '([^']+)'", message)
    if not match:
        return None
    path = match.group(1).split(".")
    if len(path) == 1:
        return str(_unknown_key("", path[0], _fields(BenchConfig)))
    if path[0] == "backend" and len(path) == 2:
        return str(_unknown_key("backend", path[1], _fields(Backend)))
    if path[0] == "method" and len(path) >= 3 and path[2] not in _fields(MethodEntry):
        return str(_unknown_key(f"method.{path[1]}", path[2], _fields(MethodEntry)))
    if path[0] == "method" and len(path) == 4 and path[2] in ("params", "grid"):
        from paceggm.bench.methods import METHODS, declared_params

        spec = METHODS.get(path[1])
        declared = declared_params(spec) if spec is not None else None
        if declared is not None and path[3] not in declared:
            return (f"{'.'.join(path)}: method {path[1]!r} has no parameter {path[3]!r}"
                    f"{did_you_mean(path[3], declared)}; its parameters: {', '.join(sorted(declared))}")
        return (f"{'.'.join(path)}: not set by the recipe; add it with +{'.'.join(path)}=… "
                "(a parameter the method declares but the recipe leaves to its default)")
    return None

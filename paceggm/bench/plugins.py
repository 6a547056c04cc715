"""User modules that add methods, data sets and figures to the harness's registries.

A *plugin* is any Python module that, when imported, registers what it adds:
:func:`paceggm.bench.methods.register` (a method),
:func:`paceggm.bench.data.registry.register` (a data set) and
:func:`paceggm.bench.figures.artifacts.register` (a figure or table). Nothing
in the package or the tests is edited: the harness imports the plugins before
it reads a registry, from three places, in this order:

* ``$PACEGGM_PLUGINS``: comma-separated module names (importable, or a
  ``<name>.py`` in the working directory) or paths of ``.py`` files;
* the config key ``plugins`` (``conf/config.yaml``, a recipe, or the command
  line: ``plugins=[my_methods]``), read for ``run``, ``collect``, ``show``,
  ``summary`` and ``prune`` before the config is composed;
* the entry points of the group ``paceggm.bench`` of installed distributions
  (``[project.entry-points."paceggm.bench"] my = "my_package.bench"``).

``paceggm-bench figures`` (and its ``--plugins``), ``python -m paceggm.bench.audit``
and ``python -m paceggm.bench.data`` load the first and the third (their command
lines compose no config); the test suite's
``conftest.py`` loads the first, so every method a plugin registers is held to
the contract tests.

A plugin given as a file is imported under its file name (``/x/my_methods.py``
is the module ``my_methods``, its folder appended to ``sys.path``), so a
method's ``target`` (``"my_methods:NoisyDiagonal"``) names it the same way in
every process, the sweep's workers included. Each plugin is imported once per
process; one that cannot be imported is a :class:`PluginError`, one line
naming it and where it was asked for.
"""

from __future__ import annotations

import importlib
import os
import sys
import traceback
from collections.abc import Iterable
from pathlib import Path

__all__ = ["ENTRY_POINT_GROUP", "ENV", "PluginError", "load_plugins", "loaded", "remember_runs", "requested",
           "stored_methods", "with_stored_methods"]

ENV = "PACEGGM_PLUGINS"
ENTRY_POINT_GROUP = "paceggm.bench"

# name as given (module or resolved file path) -> module; a plugin is imported once per process
_LOADED: dict[str, object] = {}
_ENTRY_POINTS_DONE = False


class PluginError(ValueError):
    """A plugin module that cannot be imported (one line: which, from where, why)."""


def loaded() -> dict[str, str]:
    """The plugins imported in this process: name as given → module name."""
    return {name: module.__name__ for name, module in _LOADED.items()}


def _where_it_failed(exc: BaseException) -> str:
    """`` (file:line)`` of the plugin's own line that raised, or nothing (the module was not found)."""
    machinery = (__file__, importlib.__file__)
    frames = [f for f in traceback.extract_tb(exc.__traceback__)
              if not f.filename.startswith("<frozen") and f.filename not in machinery]
    return f" ({frames[-1].filename}:{frames[-1].lineno})" if frames else ""


def _import_file(path: Path, origin: str):
    if path.suffix != ".py" or not path.is_file():
        raise PluginError(f"plugin {str(path)!r} ({origin}): no such Python file")
    folder = str(path.parent)
    if folder not in sys.path:
        sys.path.append(folder)  # appended: a plugin never shadows an installed module
    module = importlib.import_module(path.stem)
    found = Path(getattr(module, "__file__", "") or "").resolve()
    if found != path:
        raise PluginError(f"plugin {str(path)!r} ({origin}): a module named {path.stem!r} is already importable "
                          f"from {found}; rename the file")
    return module


def _in_working_directory(name: str) -> bool:
    """``name`` is no importable module but ``./name.py`` exists (a console script's path lacks the working directory)."""
    import importlib.util

    if not name.isidentifier() or not (Path.cwd() / f"{name}.py").is_file():
        return False
    try:
        return importlib.util.find_spec(name) is None
    except (ImportError, ValueError):
        return True


def _import(name: str, origin: str):
    if _in_working_directory(name):
        name = str(Path.cwd() / f"{name}.py")
    is_file = name.endswith(".py") or os.sep in name or "/" in name
    key = str(Path(name).expanduser().resolve()) if is_file else name
    if key in _LOADED:
        return None
    try:
        module = _import_file(Path(key), origin) if is_file else importlib.import_module(name)
    except PluginError:
        raise
    except Exception as exc:  # the plugin's own error, whatever it is: name the plugin and the line
        raise PluginError(f"plugin {name!r} ({origin}) cannot be imported: {type(exc).__name__}: "
                          f"{' '.join(str(exc).split())}{_where_it_failed(exc)}") from exc
    _LOADED[key] = module
    return module


def _names(value, origin: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        value = value.split(",")
    if not isinstance(value, (list, tuple)):
        raise PluginError(f"plugins ({origin}) must be a list of module names or .py paths, got {value!r}")
    names = []
    for item in value:
        if not isinstance(item, str):
            raise PluginError(f"plugins ({origin}) must be a list of module names or .py paths, got {item!r}")
        if item.strip():
            names.append(item.strip())
    return names


def _entry_points() -> list:
    global _ENTRY_POINTS_DONE
    if _ENTRY_POINTS_DONE:
        return []
    _ENTRY_POINTS_DONE = True
    from importlib.metadata import entry_points

    out = []
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        try:
            out.append(ep.load())
        except Exception as exc:
            raise PluginError(f"plugin entry point {ep.name!r} = {ep.value!r} (group {ENTRY_POINT_GROUP}) cannot be "
                              f"imported: {type(exc).__name__}: {' '.join(str(exc).split())}") from exc
    return out


def load_plugins(names: Iterable[str] | str | None = (), *, origin: str = "config key plugins",
                 env: bool = True, entry_points: bool = True) -> list:
    """Import the plugins named by ``names``, ``$PACEGGM_PLUGINS`` and the entry points (each once).

    Parameters
    ----------
    names : list of str, or str
        Module names or ``.py`` paths (a string: comma-separated).
    origin : str
        Where ``names`` come from, for the error message.
    env, entry_points : bool
        Also load ``$PACEGGM_PLUGINS`` / the ``paceggm.bench`` entry points.

    Returns
    -------
    list
        The modules imported by this call (empty when every one was already loaded).

    Raises
    ------
    PluginError
        A plugin that cannot be imported, or a malformed list.
    """
    new = []
    wanted = [(n, f"${ENV}") for n in _names(os.environ.get(ENV), f"${ENV}")] if env else []
    wanted += [(n, origin) for n in _names(names, origin)]
    for name, where in wanted:
        module = _import(name, where)
        if module is not None:
            new.append(module)
    if entry_points:
        new += _entry_points()
    return new


def requested(overrides: Iterable[str], conf_dir) -> list[str]:
    """The plugins a command line asks for before its config is composed.

    The value of a ``plugins=…`` override if there is one, else ``plugins`` of
    ``conf/config.yaml``, and ``plugins`` of the recipe an ``experiment=…``
    override selects (so ``method=[toy]`` composes when a plugin registers
    ``toy``).
    """
    from omegaconf import OmegaConf

    conf = Path(conf_dir)
    names: list[str] = []
    given = None
    recipe = None
    for o in overrides:
        key, sep, value = str(o).partition("=")
        key = key.lstrip("+~")
        if not sep:
            continue
        if key == "plugins":
            given = value
        elif key == "experiment":
            recipe = value
    if given is not None:
        names += [n.strip("'\"") for n in _names(given.strip().strip("[]"), "the command line's plugins=")]
    else:
        root = conf / "config.yaml"
        if root.is_file():
            names += _names(OmegaConf.to_container(OmegaConf.load(root)).get("plugins"), f"{root}")
    if recipe and (conf / "experiment" / f"{recipe}.yaml").is_file():
        path = conf / "experiment" / f"{recipe}.yaml"
        names += _names(OmegaConf.to_container(OmegaConf.load(path)).get("plugins"), str(path))
    return names


def stored_methods(manifest) -> dict:
    """The method entries that name a ``target`` in a store's manifest (the config of its last run)."""
    config = (manifest or {}).get("config") if isinstance(manifest, dict) else None
    methods = (config or {}).get("method") if isinstance(config, dict) else None
    return {name: entry for name, entry in (methods or {}).items()
            if isinstance(entry, dict) and entry.get("key") and entry.get("target")}


def remember_runs(runs) -> list[str]:
    """Register the ``target`` methods (with their label and style) of every store under ``runs``.

    A ``target`` given to ``run`` is kept in ``<runs>/<name>/manifest.json``; the
    figures read it back here, so they name and draw the method as its entry says
    without the ``target`` being repeated.
    """
    import json

    from paceggm.bench.methods import remember

    added = []
    for path in sorted(Path(runs).glob("*/manifest.json")):
        try:
            manifest = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue  # a damaged manifest is the store's business (run and collect rebuild it)
        added += remember(stored_methods(manifest))
    return added


def with_stored_methods(cfg: dict, store) -> dict:
    """``cfg`` with the ``target`` entries of ``store``'s manifest that ``cfg`` lacks, registered.

    ``summary`` then shows what ``run`` was given without the ``target`` repeated.
    """
    from paceggm.bench.methods import remember

    try:
        stored = stored_methods(store.read_manifest())
    except ValueError:
        return cfg
    remember(stored)
    extra = {name: entry for name, entry in stored.items() if name not in (cfg.get("method") or {})}
    return {**cfg, "method": {**(cfg.get("method") or {}), **extra}} if extra else cfg

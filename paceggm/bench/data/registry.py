"""The data-set registry: one Hydra/OmegaConf file per data set under ``conf/dataset/``.

Each file says where the data comes from (an OpenML id and/or the raw file and how to read it),
which columns are kept, which column is the regression target, and the publication's own
statistics for comparison. This module reads and checks those files, and holds the data sets a
user module adds from Python (:func:`register`): a table built by a function, or an entry written
as a file's content.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from ..config import checkout_root, find_conf_dir

CONF_ENV = "PACEGGM_CONF_DIR"
DATA_DIR_ENV = "PACEGGM_DATA_DIR"


def repo_root() -> Path:
    """Base of the relative paths in ``conf/paths``: the clone, else (installed package) the working directory."""
    root = checkout_root()
    return root if root is not None else Path.cwd()


def conf_dir() -> Path:
    """The configuration folder (:func:`paceggm.bench.config.find_conf_dir`); an error if it has no ``dataset/``."""
    env = os.environ.get(CONF_ENV)
    path = find_conf_dir()
    if not (path / "dataset").is_dir():
        hint = f" (from ${CONF_ENV})" if env else ""
        raise FileNotFoundError(
            f"no data-set registry at {path / 'dataset'}{hint}; reinstall paceggm (its wheel ships conf/) "
            f"or point ${CONF_ENV} at a conf/ folder"
        )
    return path


def _paths_config() -> DictConfig:
    path = conf_dir() / "paths" / "default.yaml"
    return OmegaConf.load(path) if path.is_file() else OmegaConf.create({})


def _from_root(value: str) -> Path:
    path = Path(value).expanduser()
    return path if path.is_absolute() else repo_root() / path


def resolve_data_dir(data_dir: str | os.PathLike | None = None) -> Path:
    """The raw-file directory: the argument, else ``$PACEGGM_DATA_DIR``, else ``conf/paths`` ``data_dir``."""
    if data_dir is not None:
        return Path(data_dir).expanduser().resolve()
    env = os.environ.get(DATA_DIR_ENV)
    if env:
        return Path(env).expanduser().resolve()
    return _from_root(str(_paths_config().get("data_dir", "datasets/raw"))).resolve()


def _check_entry(cfg: DictConfig, where: str) -> None:
    if cfg.get("raw") is None and cfg.get("openml") is None and cfg.get("builtin") is None:
        raise ValueError(f"{where}: a data set needs a raw file, an OpenML id or a builtin source")


@functools.cache
def _registry(root: str) -> dict[str, DictConfig]:
    entries = {}
    for path in sorted(Path(root, "dataset").glob("*.yaml")):
        cfg = OmegaConf.load(path)
        name = cfg.get("name")
        if name != path.stem:
            raise ValueError(f"{path}: field name={name!r} must equal the file name {path.stem!r}")
        _check_entry(cfg, str(path))
        entries[name] = cfg
    return entries


# Data sets added from Python (register): name -> entry, and name -> the function that builds its table.
_REGISTERED: dict[str, DictConfig] = {}
_FRAMES: dict[str, Callable] = {}
#: The ``builtin`` source of a data set whose table a registered function builds.
PYTHON_SOURCE = "python"


def register(name: str, frame: Callable | None = None, **entry) -> DictConfig:
    """Add (or replace) a data set: recipes, the data stage and the figures see it from then on.

    Parameters
    ----------
    name : str
        Its key (``datasets=[name]``).
    frame : callable, optional
        ``frame()`` returns the raw table (a ``pandas.DataFrame``, or an array: columns ``x0, x1, …``);
        it then goes through the registry's column selection and the preprocessing like any file.
    **entry
        The fields of a ``conf/dataset/<name>.yaml`` file (``columns``, ``target``, ``label``,
        ``note``, ``check``; without ``frame``: ``raw`` or ``openml``). ``columns`` defaults to
        ``{keep: numeric}``.

    Returns
    -------
    DictConfig
        The entry, as :func:`get_config` returns it.

    Examples
    --------
    >>> import numpy as np
    >>> from paceggm.bench.data import load_dataset
    >>> from paceggm.bench.data.registry import register, unregister
    >>> entry = register("toy_gauss", lambda: np.random.default_rng(0).normal(size=(200, 3)))
    >>> load_dataset("toy_gauss", preprocessing="strict").X.shape
    (200, 3)
    >>> unregister("toy_gauss")
    """
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(f"a data set's name must be an identifier (letters, digits, _), got {name!r}")
    if frame is not None and not callable(frame):
        raise TypeError(f"data set {name!r}: frame must be a function returning the table, got {type(frame).__name__}")
    if "name" in entry and entry["name"] != name:
        raise ValueError(f"data set {name!r}: entry field name={entry['name']!r} differs")
    fields = {"name": name, "columns": {"keep": "numeric"}, "target": None, "published": None, "raw": None,
              "openml": None, **entry}
    if frame is not None:
        if fields.get("builtin") not in (None, PYTHON_SOURCE) or fields.get("raw") or fields.get("openml"):
            raise ValueError(f"data set {name!r}: a frame function is its only source (no raw, openml or builtin)")
        fields["builtin"] = PYTHON_SOURCE
    cfg = OmegaConf.create(fields)
    _check_entry(cfg, f"data set {name!r}")
    _REGISTERED[name] = cfg
    if frame is not None:
        _FRAMES[name] = frame
    else:
        _FRAMES.pop(name, None)
    from .dataset import clear_cache

    clear_cache()  # a replaced entry must not be served from the cache
    return cfg


def unregister(name: str) -> None:
    """Forget a data set added by :func:`register` (tests)."""
    _REGISTERED.pop(name, None)
    _FRAMES.pop(name, None)


def added_datasets() -> list[str]:
    """Names of the data sets added from Python by :func:`register` (a plugin's), sorted."""
    return sorted(_REGISTERED)


def registered_frame(cfg: DictConfig):
    """The raw table of a data set added with a ``frame`` function, as a ``pandas.DataFrame``."""
    import numpy as np
    import pandas as pd

    fn = _FRAMES.get(str(cfg.name))
    if fn is None:
        raise ValueError(f"{cfg.name}: no function builds this data set's table in this process "
                         "(load the plugin that registers it: $PACEGGM_PLUGINS or plugins=[…])")
    table = fn()
    if isinstance(table, pd.DataFrame):
        return table
    X = np.asarray(table, dtype=float)
    if X.ndim != 2:
        raise ValueError(f"{cfg.name}: its frame function returned an array of shape {X.shape}, not a table")
    return pd.DataFrame(X, columns=[f"x{j}" for j in range(X.shape[1])])


def _entries() -> dict[str, DictConfig]:
    return {**_registry(str(conf_dir())), **_REGISTERED}


def list_datasets() -> list[str]:
    """Names of every registered data set, sorted (:func:`paper_datasets`, ``breast_cancer_sklearn``, added ones)."""
    return sorted(_entries())


def paper_datasets() -> list[str]:
    """The fourteen data sets of the publication, in its order (by d).

    The one list of them is ``paper_datasets`` in ``conf/config.yaml``, which the
    recipes interpolate; everything in Python reads it from there.
    """
    return list(OmegaConf.load(conf_dir() / "config.yaml").paper_datasets)


def get_config(name: str) -> DictConfig:
    """The registry entry of ``name``; ``ValueError`` listing the valid names if it is unknown."""
    entries = _entries()
    if not isinstance(name, str) or name not in entries:
        raise ValueError(f"unknown data set {name!r}; valid names: {', '.join(sorted(entries))} "
                         "(synthetic data: paceggm.bench.data.make_synthetic)")
    return entries[name]

"""The data-set registry: one Hydra/OmegaConf file per data set under ``conf/dataset/``.

Each file says where the data comes from (an OpenML id and/or the raw file and how to read it),
which columns are kept, which column is the regression target, and the publication's own
statistics for comparison. This module only reads and checks those files.
"""

from __future__ import annotations

import functools
import os
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


@functools.cache
def _registry(root: str) -> dict[str, DictConfig]:
    entries = {}
    for path in sorted(Path(root, "dataset").glob("*.yaml")):
        cfg = OmegaConf.load(path)
        name = cfg.get("name")
        if name != path.stem:
            raise ValueError(f"{path}: field name={name!r} must equal the file name {path.stem!r}")
        if cfg.get("raw") is None and cfg.get("openml") is None and cfg.get("builtin") is None:
            raise ValueError(f"{path}: a data set needs a raw file, an OpenML id or a builtin source")
        entries[name] = cfg
    return entries


def list_datasets() -> list[str]:
    """Names of every registered data set, sorted (:func:`paper_datasets` and ``breast_cancer_sklearn``)."""
    return sorted(_registry(str(conf_dir())))


def paper_datasets() -> list[str]:
    """The fourteen data sets of the publication, in its order (by d).

    The one list of them is ``paper_datasets`` in ``conf/config.yaml``, which the
    recipes interpolate; everything in Python reads it from there.
    """
    return list(OmegaConf.load(conf_dir() / "config.yaml").paper_datasets)


def get_config(name: str) -> DictConfig:
    """The registry entry of ``name``; ``ValueError`` listing the valid names if it is unknown."""
    entries = _registry(str(conf_dir()))
    if not isinstance(name, str) or name not in entries:
        raise ValueError(f"unknown data set {name!r}; valid names: {', '.join(sorted(entries))} "
                         "(synthetic data: paceggm.bench.data.make_synthetic)")
    return entries[name]

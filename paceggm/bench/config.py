"""Composing a recipe with Hydra's compose API, and what a store remembers of it.

The CLI composes one config (root ``conf/config.yaml`` + the selected
``experiment``, ``method`` and ``backend`` groups + command-line overrides) and
expands its grid into cells itself: one process, no Hydra output directory, no
``chdir``, no job per cell.
"""

from __future__ import annotations

import datetime as _dt
import os
import platform
import subprocess
import sys
from collections.abc import Mapping, Sequence
from importlib import metadata
from pathlib import Path

__all__ = ["CONF_DIR", "checkout_root", "compose_config", "find_conf_dir", "to_plain", "fingerprint", "provenance"]

REPO_ROOT = Path(__file__).resolve().parents[2]


def checkout_root() -> Path | None:
    """The repository root when this code runs from a clone (editable install), else None."""
    if (REPO_ROOT / "pyproject.toml").is_file() and (REPO_ROOT / "conf" / "config.yaml").is_file():
        return REPO_ROOT
    return None


def find_conf_dir() -> Path:
    """``$PACEGGM_CONF_DIR`` if set; else the clone's ``conf/``; else the copy installed with the package.

    A clone's own ``conf/`` comes first, so editing a recipe there takes effect
    without reinstalling; an installed package carries the same files as
    ``paceggm/bench/conf``.
    """
    env = os.environ.get("PACEGGM_CONF_DIR")
    if env:
        return Path(env).expanduser()
    root = checkout_root()
    return root / "conf" if root is not None else Path(__file__).resolve().parent / "conf"


CONF_DIR = find_conf_dir()

# Settings that change what a cell computes without being part of its key.
# Resuming a store whose fingerprint differs is refused (the grid itself —
# data sets, methods, ρ, trials — may grow or shrink: cells are keyed).
# The solvers' default settings (tolerances, iteration caps) are part of it too.
FINGERPRINT_FIELDS = ("name", "base_seed", "preprocessing", "bound_check", "test_fraction")

_VERSIONED = ("paceggm", "numpy", "scipy", "scikit-learn", "joblib", "hydra-core", "omegaconf",
              "pandas", "pyarrow", "dask", "distributed", "threadpoolctl")


def compose_config(overrides: Sequence[str] = (), *, config_dir=None, config_name: str = "config"):
    """The composed ``DictConfig`` for ``overrides`` (e.g. ``["experiment=main", "rho=[0.1,1]"]``)."""
    from hydra import compose, initialize_config_dir

    from paceggm.bench.config_schema import ConfigError, check_composed, check_overrides
    from paceggm.bench.methods import store_configs
    from paceggm.bench.plugins import PluginError, load_plugins, requested

    conf = Path(config_dir) if config_dir is not None else CONF_DIR
    try:  # the plugins register their methods first: `method=[theirs]` then composes
        load_plugins(requested(overrides, conf) if config_name == "config" else ())
    except PluginError as exc:
        raise ConfigError(str(exc)) from exc
    store_configs()  # the `method` group comes from the method registry
    if not (conf / f"{config_name}.yaml").is_file():
        raise FileNotFoundError(f"no {config_name}.yaml in {conf} (set PACEGGM_CONF_DIR to the conf/ directory)")
    if config_name == "config":
        check_overrides(overrides, conf)
    try:
        with initialize_config_dir(config_dir=str(conf.resolve()), version_base="1.3", job_name="paceggm_bench"):
            cfg = compose(config_name=config_name, overrides=list(overrides))
    except Exception as exc:  # Hydra's and OmegaConf's errors, whatever their type: a config error
        raise ConfigError(_compose_error(exc)) from exc
    if config_name == "config":
        check_composed(cfg)
    return cfg


def _compose_error(exc: BaseException) -> str:
    # Hydra appends its config search path: noise to someone who mistyped a name
    text = " ".join(str(exc).split("Config search path", 1)[0].split())
    from paceggm.bench.config_schema import explain_override_error

    return explain_override_error(text) or text or type(exc).__name__


def to_plain(cfg) -> dict:
    """A resolved plain-``dict`` copy of a ``DictConfig`` (or a mapping, returned as a dict)."""
    from omegaconf import DictConfig, OmegaConf

    if isinstance(cfg, DictConfig):
        return OmegaConf.to_container(cfg, resolve=True, throw_on_missing=True)
    return dict(cfg)


def fingerprint(cfg: Mapping) -> dict:
    from paceggm.reconstruction import solver_defaults

    # drop_target enters only when set, so stores made before the option keep their fingerprint
    dropped = {"drop_target": True} if cfg.get("drop_target") else {}
    return {**{k: cfg.get(k) for k in FINGERPRINT_FIELDS}, **dropped, "solver_defaults": solver_defaults()}


def _git_commit() -> str:
    if checkout_root() is None:  # an installed package: any enclosing repository is not ours
        return "unknown"
    try:
        out = subprocess.run(["git", "-C", str(REPO_ROOT), "rev-parse", "HEAD"],
                             capture_output=True, text=True, timeout=10, check=True)
        commit = out.stdout.strip()
        # runs/ and figures/ hold results, not code: clearing runs/ (placeholder included) or publishing
        # tables into figures/ between two sweeps leaves the code that measures as committed.
        dirty = subprocess.run(["git", "-C", str(REPO_ROOT), "status", "--porcelain", "--untracked-files=no",
                                "--", ".", ":(exclude)runs", ":(exclude)figures"],
                               capture_output=True, text=True, timeout=10, check=True).stdout.strip()
        return commit + ("+dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def _versions() -> dict:
    out = {"python": platform.python_version()}
    for dist in _VERSIONED:
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = None
    if out.get("paceggm") is None:  # running from a source tree without installing
        import paceggm

        out["paceggm"] = getattr(paceggm, "__version__", None)
    return out


def provenance(cfg: Mapping, *, overrides: Sequence[str] = ()) -> dict:
    """What the manifest records about one run: when, what, with which code."""
    return {
        "started": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "overrides": list(overrides),
        "argv": list(sys.argv),
        "git_commit": _git_commit(),
        "versions": _versions(),
        "backend": dict(cfg.get("backend") or {}),
    }

"""Benchmark harness: data sets, experiment grid, runners and figures (uses the library, never the reverse).

The harness needs more than the library: the ``bench`` extra
(``pip install "paceggm[bench]"``), whose importable modules are listed in
:data:`REQUIREMENTS`.
"""

import sys
from importlib.util import find_spec

#: Modules the harness imports beyond the library's own dependencies (the ``bench`` extra).
#: (scikit-learn is a dependency of the library itself, so its absence is never skipped.)
REQUIREMENTS = ("pandas", "pyarrow", "hydra", "omegaconf", "joblib", "matplotlib", "threadpoolctl", "tqdm")


def missing_requirements() -> list[str]:
    """The modules of :data:`REQUIREMENTS` that cannot be imported here."""
    return [m for m in REQUIREMENTS if find_spec(m) is None]


#: The extra that installs each module the harness imports beyond the library (pyproject.toml).
EXTRA_OF = {"hydra": "bench", "omegaconf": "bench", "pandas": "bench", "pyarrow": "bench", "joblib": "bench",
            "matplotlib": "bench", "threadpoolctl": "bench", "tqdm": "bench", "yaml": "bench", "openml": "bench",
            "dask": "cluster", "distributed": "cluster"}


def missing_extra_message(module: str) -> str | None:
    """The one-line error for a missing module of an extra, or None if no extra installs it."""
    module = module.split(".", 1)[0]
    extra = EXTRA_OF.get(module)
    if extra is None:
        return None
    return f"error: this command needs the '{extra}' extra (module {module!r} is not installed): pip install \"paceggm[{extra}]\""


def require_bench() -> None:
    """Exit with the one-line error and status 2 unless the ``bench`` extra is installed.

    Called first by the harness's ``python -m`` entry points, so a missing extra is one line,
    not a traceback from whichever import happens to come first.
    """
    missing = missing_requirements()
    if missing:
        print(missing_extra_message(missing[0]), file=sys.stderr)
        raise SystemExit(2)

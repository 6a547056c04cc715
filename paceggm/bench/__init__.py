"""Benchmark harness: data sets, experiment grid, runners and figures (uses the library, never the reverse).

The harness needs more than the library: the ``bench`` extra
(``pip install "paceggm[bench]"``), whose importable modules are listed in
:data:`REQUIREMENTS`.
"""

from importlib.util import find_spec

#: Modules the harness imports beyond the library's own dependencies (the ``bench`` extra).
#: (scikit-learn is a dependency of the library itself, so its absence is never skipped.)
REQUIREMENTS = ("pandas", "pyarrow", "hydra", "omegaconf", "joblib", "matplotlib", "threadpoolctl", "tqdm")


def missing_requirements() -> list[str]:
    """The modules of :data:`REQUIREMENTS` that cannot be imported here."""
    return [m for m in REQUIREMENTS if find_spec(m) is None]

"""The library never depends on the harness or the baselines, and neither of them on the studies
(dependencies point one way: studies -> harness -> baselines -> library).

Every way Python can import a module counts: ``import``, ``from … import``, relative
imports (``from ..bench import x``, ``from . import bench``), ``importlib.import_module``
and ``__import__``. A dynamic import whose module name is not a literal cannot be
checked and is refused as well.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

LIBRARY = Path(__file__).resolve().parents[1] / "paceggm"
# scikit-learn is a library dependency: the estimators are scikit-learn estimators.
FORBIDDEN = ("paceggm.bench", "paceggm.baselines", "baselines", "hydra", "omegaconf", "pandas", "joblib",
             "matplotlib")
_IMPORT_FUNCTIONS = {"import_module", "__import__"}


def _absolute(name: str, level: int, package: str) -> str:
    """The absolute module name of a (possibly relative) import made inside ``package``."""
    if level == 0:
        return name
    parts = package.split(".")
    if level > len(parts):
        raise ImportError(f"relative import beyond the top-level package in {package}")
    base = ".".join(parts[: len(parts) - level + 1])
    return f"{base}.{name}" if name else base


def imported_modules(source: str, module: str, *, is_package: bool = False) -> list[str]:
    """Every module the code of ``module`` imports, as absolute names; ``"<dynamic>"`` for an unreadable one."""
    package = module if is_package else module.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(node.module or "", node.level, package)
            # `from paceggm import bench` imports the module paceggm.bench.
            found += [base] + [f"{base}.{a.name}" for a in node.names if a.name != "*"]
        elif isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
            if name not in _IMPORT_FUNCTIONS:
                continue
            arg = node.args[0] if node.args else None
            if not (isinstance(arg, ast.Constant) and isinstance(arg.value, str)):
                found.append("<dynamic>")
                continue
            anchor = node.args[1] if name == "import_module" and len(node.args) > 1 else next(
                (k.value for k in node.keywords if k.arg == "package"), None)
            if arg.value.startswith("."):
                level = len(arg.value) - len(arg.value.lstrip("."))
                pkg = anchor.value if isinstance(anchor, ast.Constant) else package
                found.append(_absolute(arg.value[level:], level, pkg))
            else:
                found.append(arg.value)
    return found


def forbidden(names: list[str]) -> list[str]:
    return [n for n in names if n == "<dynamic>" or any(n == f or n.startswith(f + ".") for f in FORBIDDEN)]


def test_library_imports_nothing_from_the_harness():
    offenders = []
    for path in LIBRARY.rglob("*.py"):
        rel = path.relative_to(LIBRARY)
        if rel.parts[0] == "bench":
            continue
        parts = ("paceggm", *rel.with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        module = ".".join(parts[:-1] if is_package else parts)
        for name in forbidden(imported_modules(path.read_text(), module, is_package=is_package)):
            offenders.append(f"{rel}: {name}")
    assert not offenders, offenders


def test_nothing_installed_imports_the_studies():
    """studies/ is not shipped: the library, the harness and the baselines never import it."""
    offenders = []
    for folder, package in ((LIBRARY, "paceggm"), (LIBRARY.parent / "baselines", "paceggm.baselines")):
        for path in folder.rglob("*.py"):
            parts = (package, *path.relative_to(folder).with_suffix("").parts)
            is_package = parts[-1] == "__init__"
            module = ".".join(parts[:-1] if is_package else parts)
            names = imported_modules(path.read_text(), module, is_package=is_package)
            offenders += [f"{path.relative_to(LIBRARY.parent)}: {n}" for n in names
                          if n == "studies" or n.startswith("studies.")]
    assert not offenders, offenders


# (source, the module it sits in, whether that module is a package's __init__)
FORBIDDEN_FORMS = [
    ("import paceggm.bench", "paceggm.estimator", False),
    ("import paceggm.bench.runner as r", "paceggm.estimator", False),
    ("from paceggm.bench import runner", "paceggm.estimator", False),
    ("from paceggm import bench", "paceggm.estimator", False),
    ("from paceggm import baselines", "paceggm.estimator", False),
    ("from paceggm.baselines import SSP", "paceggm.estimator", False),
    ("import paceggm.baselines", "paceggm.privacy.mechanisms", False),
    ("import baselines", "paceggm.estimator", False),
    ("from ..bench import runner", "paceggm.reconstruction.newton", False),
    ("from .. import bench", "paceggm.reconstruction.newton", False),
    ("from .bench import runner", "paceggm.estimator", False),
    ("from . import bench", "paceggm", True),
    ("from .baselines import SSP", "paceggm", True),
    ("from ..baselines import SSP", "paceggm.privacy", True),
    ("import importlib\nimportlib.import_module('paceggm.bench')", "paceggm.estimator", False),
    ("from importlib import import_module\nimport_module('paceggm.baselines.ssp')", "paceggm.estimator", False),
    ("import importlib\nimportlib.import_module('.bench', 'paceggm')", "paceggm.estimator", False),
    ("import importlib\nimportlib.import_module('..bench', package='paceggm.privacy')", "paceggm.estimator", False),
    ("__import__('paceggm.bench')", "paceggm.estimator", False),
    ("m = __import__('pandas')", "paceggm.metrics", False),
    ("def f():\n    import matplotlib.pyplot as plt", "paceggm.metrics", False),
    ("import importlib\nname = 'paceggm.' + 'bench'\nimportlib.import_module(name)", "paceggm.estimator", False),
]


@pytest.mark.parametrize(("source", "module", "is_package"), FORBIDDEN_FORMS)
def test_every_import_form_of_a_forbidden_module_is_caught(source, module, is_package):
    assert forbidden(imported_modules(source, module, is_package=is_package)), source


ALLOWED_FORMS = [
    ("from paceggm.privacy import gaussian_sigma", "paceggm.estimator", False),
    ("from . import privacy", "paceggm", True),
    ("from .newton import solve_newton", "paceggm.reconstruction.newton_pcg", False),
    ("from ..privacy import ZCDPLedger", "paceggm.reconstruction.newton", False),
    ("import numpy as np\nimport scipy.linalg", "paceggm.metrics", False),
    ("import sklearn.base", "paceggm.base", False),
    ("from paceggm import benchmarks_helper", "paceggm.estimator", False),  # a name that only starts like one
]


@pytest.mark.parametrize(("source", "module", "is_package"), ALLOWED_FORMS)
def test_allowed_imports_are_not_flagged(source, module, is_package):
    assert not forbidden(imported_modules(source, module, is_package=is_package)), source

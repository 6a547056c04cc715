"""The library never depends on the harness or the baselines (dependencies point one way)."""

import ast
from pathlib import Path

LIBRARY = Path(__file__).resolve().parents[1] / "paceggm"
# scikit-learn is a library dependency: the estimators are scikit-learn estimators.
FORBIDDEN = ("paceggm.bench", "baselines", "hydra", "pandas", "joblib", "matplotlib")


def test_library_imports_nothing_from_the_harness():
    offenders = []
    for path in LIBRARY.rglob("*.py"):
        rel = path.relative_to(LIBRARY)
        if rel.parts[0] == "bench":
            continue
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            for name in names:
                if name.startswith(FORBIDDEN):
                    offenders.append(f"{rel}: {name}")
    assert not offenders, offenders

"""The figures stage: every figure, table and the report of the publication's experiments, and of any sweep
under its own name, built only from the harness's tidy results tables (``runs/<experiment>/results.parquet``).

Entry point: ``python -m paceggm.bench.figures --runs runs`` (draws into ``runs/figures``;
``make figures`` redraws the committed ``figures/`` from ``figures/results``).
Styling (method names, colours, markers, order) lives in :mod:`.style` only.
"""

from importlib import import_module

__all__ = ["BuildLog", "FiguresConfig", "build_all"]
_HOME = {"BuildLog": ".build", "build_all": ".build", "FiguresConfig": ".config"}


def __getattr__(name: str):
    # Lazy, so `python -m paceggm.bench.figures` reaches its own check of the `bench` extra
    # before anything imports matplotlib or pandas.
    if name in _HOME:
        return getattr(import_module(_HOME[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

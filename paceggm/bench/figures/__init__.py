"""The figures stage: every figure, table and the report of the publication's experiments, built only from
the harness's tidy results tables (``runs/<experiment>/results.parquet``).

Entry point: ``python -m paceggm.bench.figures --runs runs`` (draws into ``runs/figures``;
``make figures`` redraws the committed ``figures/`` from ``figures/results``).
Styling (method names, colours, markers, order) lives in :mod:`.style` only.
"""

from .build import BuildLog, build_all
from .config import FiguresConfig

__all__ = ["BuildLog", "FiguresConfig", "build_all"]

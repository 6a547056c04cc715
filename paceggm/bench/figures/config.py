"""What the figures stage draws: data-set choices, sources and summary statistics.

Every choice the publication leaves to us is a field here (and a flag of the
command line), not a constant buried in plotting code.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .artifacts import default_sources
from .style import FULL_WIDTH

#: The publication's main text's five data sets (the hyperparameter experiment's five).
MAIN_DATASETS = ("adult", "life_expectancy", "ibm", "bank32nh", "spambase")

#: Source → experiments to read it from, first found wins (the entries of the table of artifacts,
#: :data:`.artifacts.ARTIFACTS`). ``quick`` holds a reduced version of every experiment, so it is
#: the fallback nearly everywhere; ``demo`` (``make demo``: the embedded data only) can stand in
#: for the main comparison.
DEFAULT_SOURCES = default_sources()

SPREADS = ("minmax", "sd", "sem", "none")
DEFAULT_SPREAD = "minmax"  # the band of a figure that asks for none of its own


@dataclass(frozen=True)
class FiguresConfig:
    """Parameters of the figures stage.

    Parameters
    ----------
    main_datasets : tuple of str
        Data sets of the main-text comparison figure (drawn ordered by ``d``).
    main_methods : tuple of str
        Methods of the main-text figure; the all-data-set figure shows every
        method of the experiment that runs with default parameters.
    hyperparameter_datasets : tuple of str or None
        Data sets of the (α, β) figure and tables; ``None`` = all present.
    hyperparameter_reference : str
        Method drawn, with its default parameters, as reference in the (α, β) figure.
    preprocessing : str
        Preprocessing to show when a results table holds several.
    spread : {"minmax", "sd", "sem", "none"} or None
        Band (or error bars) around the mean over trials in every figure: min–max,
        ±1 standard deviation, ±1 standard error, or none. ``None``: each figure's
        own (:meth:`spread_for`): min–max, but none in the (α, β) figure (its ten
        bands would hide the lines) and ±1 standard error as the regression's bars.
    formats : tuple of str
        File formats of every figure.
    max_columns : int
        Data sets per row of panels before a figure wraps onto a new block.
    width : float
        Figure width in inches at print size (7.0: full text width of a two-column
        paper; 3.3: one column, panels then wrap to fit about an inch each).
    sources : dict
        Source of artifacts (an entry's ``source``) → experiments to read it from (first
        present wins); a source left out reads its entry's defaults.
    """

    main_datasets: tuple[str, ...] = MAIN_DATASETS
    main_methods: tuple[str, ...] = ("paceggm", "ssp", "adaptivecov")
    hyperparameter_datasets: tuple[str, ...] | None = MAIN_DATASETS
    hyperparameter_reference: str = "ssp"
    preprocessing: str = "paper"
    spread: str | None = None
    formats: tuple[str, ...] = ("pdf", "png")
    max_columns: int = 7
    width: float = FULL_WIDTH
    sources: dict = field(default_factory=lambda: dict(DEFAULT_SOURCES))

    def spread_for(self, own: str | None = None) -> str:
        """The spread a figure draws: the one asked for, else the figure's ``own``, else min–max."""
        return self.spread or own or DEFAULT_SPREAD

    def __post_init__(self):
        if self.spread is not None and self.spread not in SPREADS:
            raise ValueError(f"spread must be one of {SPREADS}, got {self.spread!r}")
        bad = [f for f in self.formats if f not in ("pdf", "png", "svg")]
        if bad or not self.formats:
            raise ValueError(f"formats must be a non-empty subset of pdf/png/svg, got {self.formats!r}")
        if not 2.0 <= self.width <= 20.0:
            raise ValueError(f"width must be between 2 and 20 inches, got {self.width}")
        if self.max_columns < 1:
            raise ValueError(f"max_columns must be >= 1, got {self.max_columns}")
        if not self.main_datasets:
            raise ValueError("main_datasets must name at least one data set")
        unknown = set(self.sources) - set(default_sources())
        if unknown:
            raise ValueError(f"unknown artifacts in sources: {sorted(unknown)}")

"""The table of artifacts: every figure and table the figures stage builds, one entry each.

An entry (:class:`Spec`) says what an artifact is (name, kind, title, words),
where its rows come from (the experiments to read, first with rows wins: a
dedicated recipe, then ``quick``), which rows it shows (a selection on the
``method`` and ``p_*`` columns), which metrics, and how it is drawn. The
figures stage (:func:`paceggm.bench.figures.build.build_all`), the default
sources (:data:`paceggm.bench.figures.config.DEFAULT_SOURCES`) and the tests
all read :data:`ARTIFACTS`; adding a figure is one entry here, or one call of
:func:`register` from a user's module, and, if no drawing below fits, one
drawing function.

Two kinds of entries: the publication's, read from its recipes (built only
where one of them is read), and those whose sources are :data:`SWEEPS`, drawn
for every other experiment under its own name from what its grid holds
(:mod:`paceggm.bench.figures.sweep`) into ``<out>/<experiment>/``.

How it is drawn: a ``"figure"`` whose ``draw`` is a :class:`Grid` is
:func:`paceggm.bench.figures.plots.metric_grid` with those options, any other
figure of rows ``draw(rows, ctx)`` (a matplotlib Figure); a
``"table"`` calls ``draw(rows, ctx)`` for its
:class:`~paceggm.bench.figures.tables.Table` list; an entry without ``rows``
calls ``draw(ctx, artifact)`` and fills the artifact itself: the ones made from
the others (the distance from the published tables, their scatter plots, the
verdicts) or from another stage (the data-set table).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from paceggm.bench.methods import METHODS
from paceggm.bench.summary import runtime_metric
from paceggm.bench.variants import label_of

from . import claims, peers, plots, published, style, sweep, tables
from .results import select_variants

ERRORS = ("mahalanobis", "frobenius")
KINDS = ("figure", "table")
#: The sources of an entry drawn for each sweep read that is not a publication recipe (any name, any grid),
#: into ``<out>/<experiment>/``.
SWEEPS = ("*",)
#: Recipes run by a user rather than for the publication's figures, drawn as sweeps too: the demo (the
#: embedded data) opens its report with its own grid, then the publication's artifacts it stands in for.
USER_RECIPES = ("demo",)


@dataclass(frozen=True)
class Grid:
    """How a ``"figure"`` is drawn: options of :func:`~paceggm.bench.figures.plots.metric_grid`.

    ``datasets`` and ``expected`` take the :class:`~.config.FiguresConfig` (``None``: every data set
    present; no variant expected beyond those present); ``styles`` takes the rows;
    ``references`` takes (ctx, experiment, preprocessing).
    """

    compared: tuple[str, ...] | Callable = ()  # or a function of the rows
    errorbars: bool = False
    spread: str | None = None  # None: the config's
    datasets: Callable | None = None
    expected: Callable | None = None
    styles: Callable | None = None
    references: Callable | None = None
    present_only: bool = False  # draw only the metrics with a value in the rows
    fit_legend: bool = False  # room for a legend of many variants (any sweep's grid)


@dataclass(frozen=True)
class Spec:
    """One artifact.

    ``description`` is a sentence, or a function of (ctx, legend labels) for words that follow
    what the results hold. ``source`` names the entry of ``FiguresConfig.sources`` it reads
    (artifacts drawn from the same rows share one); ``sources`` are its default experiments.
    ``rows`` selects the rows it shows from one experiment's table, given the config; it may return a dict
    (a title → rows) for one artifact per entry (e.g. one figure per swept parameter). A figure of rows is
    drawn by a :class:`Grid`, or by a function ``draw(rows, ctx)`` that returns a matplotlib Figure.
    ``sources=SWEEPS``: drawn for every sweep that is not a publication recipe (:data:`SWEEPS`).
    """

    name: str
    kind: str
    title: str
    description: str | Callable
    sources: tuple[str, ...] = ()
    rows: Callable | None = None
    metrics: tuple[str, ...] = ()
    draw: Grid | Callable | None = None
    source: str = ""
    nothing: str = "nothing to show for these results"

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"artifact {self.name!r}: kind must be one of {KINDS}, got {self.kind!r}")
        if self.rows is not None and (not self.sources or not self.metrics):
            raise ValueError(f"artifact {self.name!r}: an artifact with rows needs sources and metrics")
        if isinstance(self.draw, Grid) and not (self.kind == "figure" and self.rows is not None):
            raise ValueError(f"artifact {self.name!r}: a Grid draws a figure of rows only")
        if not isinstance(self.draw, Grid) and not callable(self.draw):
            raise ValueError(f"artifact {self.name!r}: drawn by a Grid or a function")
        if not self.source:
            object.__setattr__(self, "source", self.name)


@dataclass
class Context:
    """What the entries' functions may read while the stage builds."""

    config: object  # FiguresConfig
    runs: object  # the results folder
    tables: dict[str, pd.DataFrame]
    log: object  # BuildLog
    compared: dict = field(default_factory=dict)  # published comparison name → (Table, Distance)
    folder: object = None  # where files go: the log's folder, or a sweep's <out>/<experiment>

    @property
    def out(self):
        return self.folder if self.folder is not None else self.log.out


# ---- row selections ---------------------------------------------------------------------------

def _is_regression(df: pd.DataFrame) -> pd.Series:
    """Rows of regression methods: registered ones, and any method with a finite MSE somewhere."""
    has_mse = df.groupby("method")["mse"].transform(lambda s: np.isfinite(s).any())
    registered = [k for k, spec in METHODS.items() if spec.task == "regression"]
    return df["method"].isin(registered) | has_mse.astype(bool)


def _covariance(df):
    return df[~_is_regression(df)] if len(df) else df


def covariance_rows(df, config=None):
    """Every covariance method run with its defaults."""
    return select_variants(_covariance(df))


def _every_covariance_method(df, config=None):
    """Every covariance method with its defaults, or with its variants where it has no other rows."""
    return drawn_rows(_covariance(df))


def drawn_rows(df, methods=None):
    """Rows of ``methods`` (all: ``None``) run with their defaults; of a method run only as variants of a
    grid, those variants: a method is drawn wherever it was run."""
    plain = select_variants(df, methods=methods)
    pool = df if methods is None or not len(df) else df[df["method"].isin(list(methods))]
    only_variants = set(pool["method"]) - set(plain["method"]) if len(pool) else set()
    if not only_variants:
        return plain
    return pd.concat([plain, pool[pool["method"].isin(only_variants)]]).sort_index()


def regression_rows(df, config=None):
    return df[_is_regression(df)] if len(df) else df


def paceggm_rows(*params: str):
    """PACE-GGM's rows whose parameters differ from its defaults only in ``params``."""
    return lambda df, config=None: select_variants(df, methods={"paceggm"}, params=set(params))


def _only(df, datasets):
    """Rows of the configured data sets; all rows when none of them is there (e.g. ``quick``)."""
    if not datasets:
        return df
    sub = df[df["dataset"].isin(datasets)]
    return sub if len(sub) else df


def _hp_datasets(config):
    return list(config.hyperparameter_datasets) if config.hyperparameter_datasets else None


def hyperparameter_rows(df, config):
    """PACE-GGM's (α, β) grid and the reference method, on the configured data sets."""
    pace = paceggm_rows("alpha", "beta")(df)
    ref = select_variants(df, methods={config.hyperparameter_reference})
    return _only(pd.concat([pace, ref]), _hp_datasets(config))


# ---- words and drawings -------------------------------------------------------------------------

def enumerate_labels(labels: list[str]) -> str:
    return labels[0] if len(labels) == 1 else ", ".join(labels[:-1]) + " and " + labels[-1]


def _spread(ctx) -> str:
    return plots.spread_caption(ctx.config.spread_for())


def _hp_styles(rows: pd.DataFrame) -> dict[str, style.MethodStyle]:
    """(α, β) variants styled by their grid position (the default pair included)."""
    return style.hyperparameter_styles(rows)


def references_file(runs, experiment: str):
    from pathlib import Path

    return Path(runs) / experiment / "references.csv"


def regression_references(ctx, experiment: str, preprocessing: str | None) -> dict:
    """Per data set, the mean test MSE of predicting 0 and of non-private least squares, when the
    results have a ``references.csv`` (``python -m paceggm.bench.regression_references``)."""
    path = references_file(ctx.runs, experiment)
    if not path.is_file():
        return {}
    refs = pd.read_csv(path)
    if preprocessing is not None:
        refs = refs[refs["preprocessing"] == preprocessing]
    means = refs.groupby("dataset")[["null", "ols"]].mean()
    return {ds: {"predict 0": float(r["null"]), "non-private OLS": float(r["ols"])} for ds, r in means.iterrows()}


def _regression_words(ctx, labels) -> str:
    refs = ("grey lines: the test MSE of predicting 0 and of non-private least squares on the same splits "
            "(mean over trials; `references.csv`)." if references_file(ctx.runs, "regression").is_file() else
            "no reference lines (no `references.csv` beside these results).")
    return (f"Test MSE vs ρ of {enumerate_labels(labels)} (linear regression; PACE-GGM's from its covariance "
            f"of [X, y]); {plots.spread_caption(ctx.config.spread_for('sem'), bars=True)}; " + refs)


def _solver_ratios(rows, ctx):
    # the stored label of PACE-GGM's rows run with Newton (the plain variant when Newton is the recipes' solver)
    reference = label_of(rows, "paceggm", {"solver": "newton"}) or "paceggm[solver=newton]"
    # CPU seconds of the fit where every cell has them (a shared machine's load moves wall seconds)
    metrics = [*ERRORS, runtime_metric(rows, wall="solve_time")[0]]
    return [claims.ratio_table(rows, metrics, reference=reference, name="solver_ratios"),
            claims.paired_ratio_table(rows, metrics, reference=reference, name="solver_paired_ratios")]


def _claims(suffix: str):
    def make(rows, ctx):
        main = select_variants(rows, methods=set(ctx.config.main_methods))
        return [t for m in ERRORS
                for t in (claims.winners_table(main, m, name=f"winners_{m}{suffix}"),
                          claims.winners_table(rows, m, name=f"winners_all_{m}{suffix}"),
                          claims.gain_table(rows, m, name=f"gain_over_ssp_{m}{suffix}"))]
    return make


def _best_pairs(rows, ctx):
    best, wins = tables.best_hyperparameters(rows)
    return [*best, wins]


def _kept(ctx, result):
    """Keep a comparison with the published tables for the distances; show it if it has cells."""
    ctx.compared[result[0].name] = result
    return [result[0]] if result[1].cells else []


def _solver_of(rows) -> str:
    solvers = rows["p_solver"].dropna().unique() if "p_solver" in rows else []
    return str(solvers[0]) if len(solvers) == 1 else "default"


def _published_runtime(rows, ctx):
    return [t for _, g in rows.groupby("variant")
            for t in _kept(ctx, published.runtime_comparison(g, g["preprocessing"].iloc[0], label=_solver_of(g)))]


_MAIN = ("main", "quick", "demo")
_NO_PUBLISHED = "no cell of the published table in these results"
_CLAIMS_WORDS = ("Who wins per data set and ρ (among the main text's methods, then with every method run with "
                 "default parameters), and PACE-GGM's gain over SSP (the Gaussian mechanism) with its median and "
                 "rank correlation with d per ρ, on both errors.")


def _main_words(ctx, labels):
    # the configured methods that are drawn, in the configured order; one run only as variants, by those
    named = []
    for m in ctx.config.main_methods:
        base = style.method_style(m).label
        named += [base] if base in labels else [x for x in labels if x.startswith(base + " (")]
    names = ", ".join(named)
    return (f"Mahalanobis (top) and Frobenius (bottom) error vs ρ of {names} on the main text's data sets, "
            f"ordered by d; {_spread(ctx)}.")


def _every_method_words(words: str):
    return lambda ctx, labels: words.format(enumerate_labels(labels), _spread(ctx))


def _hp_words(ctx, labels):
    return (f"Both errors vs ρ for every (α, β) in the grid (colour: α, marker and line: β) with "
            f"{style.method_style(ctx.config.hyperparameter_reference).label} as reference; "
            + (f"{plots.spread_caption('none')} (ten overlapping bands would hide the lines)."
               if ctx.config.spread in (None, "none") else f"{plots.spread_caption(ctx.config.spread)}."))


#: Every artifact, in the order of the report. Drawn where its rows are found; skipped (with why) where not.
ARTIFACTS: list[Spec] = [
    Spec("main_comparison", "figure", "Main comparison (main-text data sets)", _main_words, _MAIN,
         lambda df, config: drawn_rows(_covariance(df), methods=set(config.main_methods)), ERRORS,
         Grid(datasets=lambda config: list(config.main_datasets), expected=lambda config: config.main_methods)),
    Spec("main_comparison_all", "figure", "Main comparison (all data sets, with the diagonal baseline)",
         _every_method_words("Both errors vs ρ of every method run with default parameters ({}) on every data set, "
                             "ordered by d; {}."), _MAIN, _every_covariance_method, ERRORS, Grid()),
    Spec("main_comparison_strict", "figure", "Main comparison under strict preprocessing (the bound B = 1 holds)",
         _every_method_words("As the all-data-set comparison, with every column divided by its max |x| so the "
                             "declared bound holds ({}); {}."), ("main_strict",), _every_covariance_method, ERRORS, Grid()),
    Spec("solver_ipm_vs_pgd", "figure", "Solver: IPM-Cholesky vs projected gradient descent",
         lambda ctx, labels: f"Both errors and the total solver time per trial vs ρ for "
                             f"{enumerate_labels(labels)}; {_spread(ctx)}.",
         ("solver", "quick"), paceggm_rows("solver"), (*ERRORS, "solve_time"), Grid(compared=("solver",)),
         source="solver"),
    Spec("components", "figure", "Connected components on vs off",
         lambda ctx, labels: f"Both errors (which should coincide) and the solver time per trial vs ρ for "
                             f"{enumerate_labels(labels)}; {_spread(ctx)}.",
         ("components", "quick"), paceggm_rows("use_components", "solver"), (*ERRORS, "solve_time"),
         Grid(compared=("use_components", "solver"))),
    Spec("solver_ratios", "table", "Solvers relative to Newton",
         "Each solver's mean error and time per trial (`cpu_time`, the fit's CPU seconds, where every cell has "
         "them; else `solve_time`, the solver's wall seconds) divided by the exact Newton solver's, per data set "
         "and ρ, summarised by the median over data sets; then the same ratio trial by trial (all solvers of a "
         "trial share its seed).", ("solver", "quick"), paceggm_rows("solver"), (*ERRORS, "solve_time"),
         _solver_ratios, source="solver"),
    Spec("hyperparameters", "figure", "Hyperparameters α (diagonal share) and β (selection share)", _hp_words,
         ("hyperparameters", "quick"), hyperparameter_rows, ERRORS,
         Grid(datasets=_hp_datasets, styles=_hp_styles, spread="none")),
    Spec("regression", "figure", "Linear regression", _regression_words, ("regression", "quick"),
         regression_rows, ("mse",), Grid(errorbars=True, spread="sem", references=regression_references)),
    Spec("measurements", "table", "Measured entries",
         "Mean number of covariance entries PACE-GGM measures per trial, written d + off-diagonal, per data set "
         "and ρ (as in the publication).", ("measurements", "main", "quick", "demo"), paceggm_rows(),
         ("n_measured_offdiag",), lambda rows, ctx: [tables.measurements_table(rows)]),
    Spec("runtime", "table", "Runtime",
         "Total time per trial (whole fit), mean ± standard error over trials, per data set, solver and ρ.",
         ("runtime", "quick", "demo"),
         lambda df, config: select_variants(df[~_is_regression(df)] if len(df) else df, params={"solver"}),
         ("wall_time",), lambda rows, ctx: [tables.runtime_table(rows)]),
    Spec("claims", "table", "The publication's claims, main comparison (published setting)", _CLAIMS_WORDS,
         _MAIN, covariance_rows, ERRORS, _claims("")),
    Spec("claims_strict", "table", "The publication's claims, main comparison (strict preprocessing)",
         _CLAIMS_WORDS, ("main_strict",), covariance_rows, ERRORS, _claims("_strict")),
    Spec("hyperparameters_tables", "table", "Best (α, β)",
         "The (α, β) pair with the smallest mean error per data set and ρ, for each metric, and how many "
         "(data set, ρ) cells each pair wins.", ("hyperparameters", "quick"),
         lambda df, config: _only(paceggm_rows("alpha", "beta")(df), _hp_datasets(config)), ERRORS, _best_pairs,
         source="hyperparameters"),
]


# ---- artifacts made from the others, or from another stage ----------------------------------------

def _datasets_table(ctx, art) -> None:
    ds_md = ctx.log.out / "tables" / "datasets.md"
    if not ds_md.is_file():
        art.skipped = f"{ds_md} not found (written by the data stage)"
        return
    art.files = [p for p in (ds_md, ds_md.with_suffix(".tex")) if p.is_file()]
    art.markdown = [ds_md.read_text(encoding="utf-8")]
    art.source = "data stage"


def _sources_of(ctx, names) -> str | None:
    found = [a.source for a in ctx.log.artifacts if a.name in names and a.source]
    return ", ".join(dict.fromkeys(found)) or None


def _published_distances(ctx, art) -> None:
    found = [r[1] for r in ctx.compared.values() if r[1].cells]
    if not found:
        art.skipped = "no cell of a published table in these results"
        return
    numeric = [d for d in found if isinstance(d, published.Distance)]
    winners = [d for d in found if isinstance(d, published.WinnerDistance)]
    t = published.distance_table(numeric, winners)
    ctx.log.replicate = published.replicate_lines(numeric, winners)
    art.files = tables.write_table(t, ctx.log.out / "tables")
    art.markdown = [f"*{t.caption}*\n\n" + tables.to_markdown(t)]
    art.source = _sources_of(ctx, ("published_measurements", "published_measurements_strict", "published_runtime",
                                   "published_best"))


def _published_scatter(stem: str, xlabel: str):
    """Each (data set, ρ) cell of the published comparisons named ``stem…``: ours against published."""
    def draw(ctx, art) -> None:
        panels = [(k[len(stem):].replace("_", ", ", 1), r[0].data) for k, r in ctx.compared.items()
                  if k.startswith(stem) and r[1].cells]
        if not panels:
            art.skipped = _NO_PUBLISHED
            return
        fig = published.scatter_figure(panels, xlabel=f"published {xlabel}", ylabel=f"ours, {xlabel}",
                                       width=ctx.config.width)
        art.files = plots.save(fig, ctx.log.out, art.name, ctx.config.formats)
        art.source = _sources_of(ctx, [a.name for a in ctx.log.artifacts
                                       if a.name.startswith(stem[:-1]) and a.kind == "table"])
    return draw


def _verdicts(ctx, art) -> None:
    from . import verdicts

    if not ctx.tables:
        art.skipped = "no results tables"
        return
    ctx.log.verdicts = verdicts.verdicts(ctx.tables)
    v = verdicts.verdict_table(ctx.log.verdicts)
    art.files = tables.write_table(v, ctx.log.out / "tables")
    testable = [x for x in ctx.log.verdicts if x.verdict != verdicts.UNTESTABLE]
    untestable = [f"{x.claim} ({x.untestable})" for x in ctx.log.verdicts if x.verdict == verdicts.UNTESTABLE]
    art.markdown = [f"*{v.caption}*\n\n" + tables.to_markdown(verdicts.verdict_table(testable))] if testable else []
    if untestable:  # a reduced grid cannot test every statement: named, not drawn as rows of a table
        art.markdown.append("Not testable with these results: " + "; ".join(untestable) + ".")
    art.source = ", ".join(sorted(ctx.tables))


def _published_measurements(rows, ctx):
    return _kept(ctx, published.measurements_comparison(rows, rows["preprocessing"].iloc[0]))


def _published_best(rows, ctx):
    from pathlib import Path

    path = Path(ctx.runs) / "investigations" / "best_pairs_trials.csv"  # the study's fresh trials, if committed
    fresh = pd.read_csv(path) if path.is_file() else None
    return [t for m in ("frobenius", "mahalanobis")
            for t in _kept(ctx, published.best_pair_comparison(rows, m, fresh=fresh))]


_MEASURED_WORDS = "Published mean off-diagonal entries per trial beside ours (mean ± SE), and the ratio."

ARTIFACTS += [
    Spec("datasets", "table", "Data sets",
         "The data sets with n, d and their statistics (e_off, effective rank, correlations), as computed by the "
         "data stage next to the publication's values.", draw=_datasets_table),
    Spec("published_measurements", "table", "Measured entries against the publication's Table 3 (published setting)",
         _MEASURED_WORDS, ("measurements", "main", "quick", "demo"), paceggm_rows(), ("n_measured_offdiag",),
         _published_measurements, nothing=_NO_PUBLISHED),
    Spec("published_measurements_strict", "table",
         "Measured entries against the publication's Table 3 (strict preprocessing)", _MEASURED_WORDS,
         ("main_strict",), paceggm_rows(), ("n_measured_offdiag",), _published_measurements, nothing=_NO_PUBLISHED),
    Spec("published_runtime", "table", "Runtime against the publication's Table 4",
         "Published seconds per trial (IPM-Cholesky) beside ours (mean ± SE), per solver run.", ("runtime",),
         paceggm_rows("solver"), ("wall_time",), _published_runtime, nothing=_NO_PUBLISHED),
    Spec("published_best", "table", "Best (α, β) against the publication's Tables 5 and 6",
         "Published best pair beside ours per data set and ρ, and what the published pair costs in our runs.",
         ("hyperparameters",), paceggm_rows("alpha", "beta"), ERRORS, _published_best, nothing=_NO_PUBLISHED),
    Spec("published_distances", "table", "Distance from the published tables",
         "Per published table: cells within 10 % / 25 % / 2×, median ratio, cells beyond 3 SE, exact winner "
         "matches.", draw=_published_distances),
    Spec("published_measurements_scatter", "figure", "Ours against published: off-diagonal entries",
         "Each (data set, ρ) cell: our mean (off-diagonal entries) against the publication's, log axes, the line "
         "y = x and a ±25 % band; colour: data set.",
         draw=_published_scatter("published_measurements_", "off-diagonal entries")),
    Spec("published_runtime_scatter", "figure", "Ours against published: seconds per trial",
         "Each (data set, ρ) cell: our mean (seconds per trial) against the publication's, log axes, the line "
         "y = x and a ±25 % band; colour: data set.",
         draw=_published_scatter("published_runtime_", "seconds per trial")),
    Spec("claims_verdicts", "table", "The publication's statements C1–C13: verdicts",
         "Each statement, the criterion applied, our numbers and the verdict, computed from the results.",
         draw=_verdicts),
]


#: The publication's recipes: every experiment an entry above reads. Its artifacts, tables and the verdicts
#: on its statements are built only where one of them is read (and say so otherwise).
PUBLICATION_RECIPES = frozenset(e for spec in ARTIFACTS for e in spec.sources)
PUBLICATION_ARTIFACTS = frozenset(spec.name for spec in ARTIFACTS)


# ---- ours, not the publication's: the peers it left out (paceggm.bench.figures.peers) --------------------

def _peers_words(what: str):
    return lambda ctx, labels: (f"{what} vs ρ of {enumerate_labels(labels)} (our comparison, not the "
                                f"publication's); {_spread(ctx)}.")


OURS: list[Spec] = [
    Spec("peers_errors", "figure", "Peers (ours): errors on real data",
         _peers_words("Mahalanobis (top) and Frobenius (bottom) error against XᵀX/n, strict preprocessing,"),
         (peers.REAL,), peers.peer_rows, ERRORS, Grid(fit_legend=True)),
    Spec("peers_errors_populations", "figure", "Peers (ours): errors against the population",
         _peers_words("Mahalanobis (top) and Frobenius (bottom) error against the population's Σ, d = 30, "
                      "n ∈ {1,000, 10,000}, each shape with sd = B/6 and in the loose-bound arm (_loose: "
                      "sd = B/20),"),
         (peers.POPULATIONS,), peers.peer_rows, peers.POP_ERRORS, Grid(fit_legend=True)),
    Spec("peers_tasks", "table", "Peers (ours): PCA on real data",
         "The top-k eigenspace a release recovers, per data set, ρ and method (our comparison).", (peers.REAL,),
         peers.peer_rows, peers.SUBSPACE, peers.real_task_tables),
    Spec("peers_tasks_populations", "table", "Peers (ours): PCA on the populations",
         "The top-k eigenspace of Σ a release recovers, per population, ρ and method (our comparison).",
         (peers.POPULATIONS,), peers.peer_rows, peers.SUBSPACE_POP, peers.population_task_tables),
    Spec("peers_graph_populations", "table", "Peers (ours): graph recovery on the populations",
         "The support of Σ⁻¹ a release recovers, per population with a sparse precision (the spiked one's is "
         "dense), ρ and method (our comparison).", (peers.POPULATIONS,), peers.graph_rows, peers.SUPPORT,
         peers.graph_tables),
    Spec("peers_verdicts", "table", "Our statement P1 (CoinPress), not the publication's: verdict",
         "The publication's CoinPress footnote made into a criterion stated in advance, judged on the real data "
         "and on the loose-bound arm; not among its numbered statements C1–C13.", (peers.REAL, peers.POPULATIONS),
         draw=peers.p1_artifact),
]
ARTIFACTS += OURS
#: Our recipes and artifacts: built only where one of their recipes is read (and absent from the report
#: otherwise), never counted among the publication's; the recipes are drawn as sweeps too.
OUR_RECIPES = frozenset(e for spec in OURS for e in spec.sources)
OUR_ARTIFACTS = frozenset(spec.name for spec in OURS)
OUR_SOURCES = frozenset(spec.source for spec in OURS)


# ---- any sweep (sources SWEEPS): its own grid, whatever its name -----------------------------------

def _sweep_words(what: str):
    return lambda ctx, labels: f"{what} vs ρ of {enumerate_labels(labels)}; {_spread(ctx)}."


_PARAMETER_WORDS = ("Both errors (or the test MSE) and the time per trial vs ρ of the variants that differ only "
                    "in the parameters the title names")

ARTIFACTS += [
    Spec("results", "table", "Results", "Each error, mean ± standard error over trials, per data set, variant "
         "and ρ.", SWEEPS, sweep.error_rows, sweep.ERRORS, sweep.results_tables),
    Spec("errors", "figure", "Errors vs ρ", _sweep_words("Each error"), SWEEPS, sweep.error_rows, sweep.ERRORS,
         Grid(present_only=True, fit_legend=True)),
    Spec("parameter", "figure", "Swept parameter",
         lambda ctx, labels: f"{_PARAMETER_WORDS} ({enumerate_labels(labels)}); {_spread(ctx)}.",
         SWEEPS, sweep.parameter_rows, (*sweep.ERRORS, "wall_time"),
         Grid(compared=sweep.swept_names, present_only=True, fit_legend=True),
         nothing="no parameter swept"),
    Spec("grid", "figure", "Parameters swept together", sweep.heatmap_words, SWEEPS, sweep.pair_rows,
         sweep.ERRORS, sweep.heatmap, nothing="no two parameters swept together"),
    Spec("time", "figure", "Time per trial", _sweep_words("Whole-fit time per trial (and the solver's)"),
         SWEEPS, sweep.time_rows, sweep.TIMES, Grid(present_only=True, fit_legend=True)),
    Spec("time_table", "table", "Time per trial, table", "Mean ± standard error over trials.", SWEEPS,
         sweep.time_rows, sweep.TIMES, sweep.time_tables),
    Spec("measured", "figure", "Measured entries",
         _sweep_words("Distinct off-diagonal entries measured per trial (the d diagonal entries on top)"),
         SWEEPS, sweep.measured_rows, (sweep.MEASURED,), Grid(fit_legend=True), nothing="no method reports measured entries"),
    Spec("measured_table", "table", "Measured entries, table", "Mean ± standard error over trials.", SWEEPS,
         sweep.measured_rows, (sweep.MEASURED,), sweep.measured_tables,
         nothing="no method reports measured entries"),
]

if len({s.name for s in ARTIFACTS}) != len(ARTIFACTS):
    raise ValueError("two entries of the table of artifacts share a name")


def register(spec: Spec) -> Spec:
    """Add (or replace, by name) an artifact: the figures stage builds it from then on, after the others.

    With ``sources=SWEEPS`` it is drawn for every sweep read, into ``<out>/<experiment>/``.

    A user module calls it once (the harness imports the modules named by ``PACEGGM_PLUGINS``); the
    entry reads its rows from the experiments it names, like every entry of :data:`ARTIFACTS`.

    Examples
    --------
    >>> from paceggm.bench.figures import artifacts
    >>> from paceggm.bench.figures.artifacts import Grid, Spec, covariance_rows, register
    >>> spec = register(Spec("time_per_trial", "figure", "Time per trial",
    ...                      "Whole-fit time per trial vs ρ of every covariance method run with its defaults.",
    ...                      ("ablation",), covariance_rows, ("wall_time",), Grid(spread="sem")))
    >>> artifacts.ARTIFACTS[-1].name, artifacts.default_sources()["time_per_trial"]
    ('time_per_trial', ('ablation',))
    >>> artifacts.ARTIFACTS.remove(spec)

    For every sweep, whatever its name, into ``<out>/<experiment>/solve_time.png``:

    >>> from paceggm.bench.figures.artifacts import SWEEPS
    >>> from paceggm.bench.figures.sweep import every_row
    >>> spec = register(Spec("solve_time", "figure", "Solver time", "The solver's seconds per trial vs ρ.",
    ...                      SWEEPS, every_row, ("solve_time",), Grid()))
    >>> artifacts.ARTIFACTS.remove(spec)
    """
    if not isinstance(spec, Spec):
        raise TypeError(f"expected a paceggm.bench.figures.artifacts.Spec, got {type(spec).__name__}")
    ARTIFACTS[:] = [s for s in ARTIFACTS if s.name != spec.name]
    ARTIFACTS.append(spec)
    return spec


def default_sources() -> dict[str, tuple[str, ...]]:
    """``FiguresConfig.sources``'s default: each entry's source → its experiments (shared sources agree)."""
    out: dict[str, tuple[str, ...]] = {}
    for spec in ARTIFACTS:
        if spec.rows is None or spec.sources == SWEEPS:
            continue
        if out.setdefault(spec.source, spec.sources) != spec.sources:
            raise ValueError(f"artifact {spec.name!r} reads source {spec.source!r} from {spec.sources}, "
                             f"another entry from {out[spec.source]}")
    return out

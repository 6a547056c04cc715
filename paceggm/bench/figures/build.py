"""Build every figure and table of the publication's experiments that the results store has data for.

Each artifact names the experiments it can be read from (``FiguresConfig.sources``,
dedicated experiment first, ``quick`` last) and the rows it needs (methods and
which non-default parameters its variants may have). The first experiment with
such rows is used; an artifact with none is skipped with the reason, and every
cell of an artifact's grid without an ok trial is recorded for the report.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import pandas as pd

from paceggm.bench.methods import METHODS, method_defaults
from paceggm.bench.variants import label as variant_label

from . import claims, plots, published, style, tables, verdicts
from .config import FiguresConfig
from .results import (
    CellProblem,
    cell_problems,
    datasets_by_d,
    dims,
    load_results,
    pick_preprocessing,
    select_variants,
)

ERRORS = ["mahalanobis", "frobenius"]


@dataclass
class Artifact:
    """One figure or table (group) and what happened when building it."""

    name: str
    kind: str  # "figure" | "table"
    title: str
    description: str
    files: list[Path] = field(default_factory=list)
    source: str | None = None
    preprocessing: str | None = None
    trials: int | None = None
    problems: list[CellProblem] = field(default_factory=list)
    skipped: str | None = None
    other_preprocessings: list[str] = field(default_factory=list)  # present in the source, not shown
    absent: list[str] = field(default_factory=list)  # configured data sets without any row
    markdown: list[str] = field(default_factory=list)  # table bodies for the report
    guarantee: str = ""  # whether the privacy guarantee holds in the cells shown (a caption line)
    labels: dict[str, str] = field(default_factory=dict)  # variant → display label (for the report)


@dataclass
class BuildLog:
    """Everything :func:`build_all` produced, skipped or could not read."""

    out: Path
    artifacts: list[Artifact] = field(default_factory=list)
    unreadable: dict[str, str] = field(default_factory=dict)
    experiments: dict[str, tuple[int, int]] = field(default_factory=dict)  # name → (rows, ok rows)
    replicate: list[str] = field(default_factory=list)  # per published table: against an exact replicate
    verdicts: list = field(default_factory=list)  # the C1–C13 verdicts (verdicts.Verdict)

    @property
    def files(self) -> list[Path]:
        return [f for a in self.artifacts for f in a.files]


def _is_regression(df: pd.DataFrame) -> pd.Series:
    """Rows of regression methods: registered ones, and any method with a finite MSE somewhere."""
    has_mse = df.groupby("method")["mse"].transform(lambda s: np.isfinite(s).any())
    registered = [k for k, spec in METHODS.items() if spec.task == "regression"]
    return df["method"].isin(registered) | has_mse.astype(bool)


def _covariance_rows(df):
    return df[~_is_regression(df)] if len(df) else df


def _regression_rows(df):
    return df[_is_regression(df)] if len(df) else df


def _enumerate(labels: list[str]) -> str:
    return labels[0] if len(labels) == 1 else ", ".join(labels[:-1]) + " and " + labels[-1]


def _hp_styles(rows: pd.DataFrame) -> dict[str, style.MethodStyle]:
    """(α, β) variants styled by their grid position (the default pair included)."""
    styles, defaults = style.variant_styles(rows), method_defaults("paceggm")
    for v, g in rows[rows["method"] == "paceggm"].groupby("variant"):
        a, b = g["p_alpha"].dropna(), g["p_beta"].dropna()
        styles[v] = style.hyperparameter_style(float(a.iloc[0]) if len(a) else defaults["alpha"],
                                               float(b.iloc[0]) if len(b) else defaults["beta"])
    return styles


def _only(df, datasets):
    """Rows of the configured data sets; all rows when none of them is there (e.g. ``quick``)."""
    if not datasets:
        return df
    sub = df[df["dataset"].isin(datasets)]
    return sub if len(sub) else df


def _pick(tables_: dict, config: FiguresConfig, artifact: str, select) -> tuple[pd.DataFrame, str | None, str | None]:
    """First source experiment with rows for ``artifact`` (after ``select``)."""
    for exp in config.sources[artifact]:
        if exp not in tables_:
            continue
        rows, prep, others = pick_preprocessing(select(tables_[exp]), config.preprocessing)
        if len(rows):
            rows.attrs["other_preprocessings"] = others
            return rows, exp, prep
    return pd.DataFrame(), None, None


def _skip_reason(config, artifact, tables_) -> str:
    tried = config.sources[artifact]
    present = [e for e in tried if e in tables_]
    if not present:
        return f"no results table for {', '.join(tried)} (runs/<experiment>/results.parquet)"
    return f"no rows for this artifact in {', '.join(present)}"


def _problems(df, datasets, variants, rhos, metrics) -> list[CellProblem]:
    seen, out = set(), []
    for m in metrics:
        for p in cell_problems(df, datasets=datasets, variants=variants, rhos=rhos, metric=m):
            k = (p.dataset, p.variant, p.rho)
            if k not in seen:
                seen.add(k)
                out.append(p)
    return out


def guarantee_note(rows) -> str:
    """One caption line: does the privacy guarantee hold in the rows an artifact shows?"""
    if not len(rows) or "guarantee_holds" not in rows.columns:
        return ""
    void = int(rows["guarantee_holds"].eq(False).fillna(False).sum())
    if void == 0:
        return "Privacy: the guarantee holds in every cell shown (the data respect the declared bound)."
    if void == len(rows):
        return ("Privacy: the guarantee does not hold in these cells: as in the publication, the data exceed "
                "the declared bound the noise is calibrated to (bound check waived); the strict preprocessing "
                "is the setting where it holds.")
    return f"Privacy: the guarantee does not hold in {void} of the {len(rows)} trials shown (bound check waived)."


def _trials(df) -> int | None:
    if not len(df):
        return None
    return int(df.groupby(["dataset", "variant", "rho"])["trial"].nunique().max())


def _figure(log, config, tables_, *, name, title, description, artifact, select, metrics,
            datasets=None, expected_variants=None, compared=(), errorbars=False, styles=None,
            spread=None, references=None):
    art = Artifact(name, "figure", title, description if isinstance(description, str) else "")
    log.artifacts.append(art)
    rows, exp, prep = _pick(tables_, config, artifact, select)
    if exp is None:
        art.skipped = _skip_reason(config, artifact, tables_)
        return art, rows
    looks = style.variant_styles(rows, compared=compared)
    if callable(description):  # worded after what the results hold
        art.description = description(
            [looks[v].label for v in style.variant_order(rows["variant"].unique(), looks)])
    present = datasets_by_d(rows)
    if datasets is not None:
        # configured data sets the source does not hold are listed, not drawn as empty panels
        art.absent = [x for x in datasets if x not in present]
        datasets = datasets_by_d(rows, only=datasets) or present
    else:
        datasets = present
    variants = style.variant_order(rows["variant"].unique(), looks)
    grid_variants = style.variant_order(set(variants) | set(expected_variants or ()), looks)
    rhos = sorted(rows["rho"].unique())
    fig = plots.metric_grid(rows, datasets=datasets, variants=variants, metrics=metrics, rhos=rhos,
                            dims=dims(rows), spread=spread or config.spread, compared=compared,
                            errorbars=errorbars, max_columns=config.max_columns, styles=styles,
                            width=config.width, references=references(exp, prep) if references else None)
    art.files = plots.save(fig, log.out, name, config.formats)
    art.source, art.preprocessing, art.trials = exp, prep, _trials(rows)
    art.other_preprocessings = rows.attrs.get("other_preprocessings", [])
    art.problems = _problems(rows, datasets, grid_variants, rhos, metrics)
    art.labels = {v: s.label for v, s in style.variant_styles(rows).items()}
    art.guarantee = guarantee_note(rows)
    return art, rows


def _tables(log, config, tables_, *, name, title, description, artifact, select, make, metrics,
            nothing="nothing to show for these results"):
    art = Artifact(name, "table", title, description)
    log.artifacts.append(art)
    rows, exp, prep = _pick(tables_, config, artifact, select)
    if exp is None:
        art.skipped = _skip_reason(config, artifact, tables_)
        return art
    made = make(rows)
    if not made:  # e.g. a demo grid without any cell of a published table: no 0-cell comparison
        art.skipped = f"{nothing} (source `{exp}`)"
        return art
    art.guarantee = guarantee_note(rows)
    for t in made:
        # The table files carry the note in their caption; the report shows it once per artifact.
        captioned = replace(t, caption=f"{t.caption} {art.guarantee}".strip())
        art.files += tables.write_table(captioned, log.out / "tables")
        art.markdown.append(f"*{t.caption}*\n\n" + tables.to_markdown(t))
    art.source, art.preprocessing, art.trials = exp, prep, _trials(rows)
    art.other_preprocessings = rows.attrs.get("other_preprocessings", [])
    looks = style.variant_styles(rows)
    art.problems = _problems(rows, datasets_by_d(rows), style.variant_order(rows["variant"].unique(), looks),
                             sorted(rows["rho"].unique()), metrics)
    art.labels = {v: s.label for v, s in looks.items()}
    return art


def build_all(runs: str | Path, out: str | Path, config: FiguresConfig | None = None, *,
              experiments=None) -> BuildLog:
    """Build every artifact it can from ``runs/*/results.parquet`` into ``out``.

    ``experiments`` restricts the tables read (e.g. ``["quick"]`` draws a
    reduced recipe alone). An artifact without results is skipped and its
    existing files in ``out`` are left alone. Returns the :class:`BuildLog`;
    :func:`report.write_report` turns it into ``out/REPORT.md``.
    """
    config = config or FiguresConfig()
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    tables_, unreadable = load_results(runs)
    if experiments is not None:
        tables_ = {k: v for k, v in tables_.items() if k in experiments}
        unreadable = {k: v for k, v in unreadable.items() if k in experiments}
    log = BuildLog(out=out, unreadable=unreadable,
                   experiments={k: (len(v), int((v["status"] == "ok").sum())) for k, v in tables_.items()})
    spread = plots.spread_caption(config.spread)

    main_methods = set(config.main_methods)
    _figure(log, config, tables_, name="main_comparison", artifact="main_comparison",
            title="Main comparison (main-text data sets)",
            description=f"Mahalanobis (top) and Frobenius (bottom) error vs ρ of "
                        f"{', '.join(style.method_style(m).label for m in config.main_methods)} on the "
                        f"main text's data sets, ordered by d; {spread}.",
            select=lambda df: select_variants(_covariance_rows(df), methods=main_methods),
            metrics=ERRORS, datasets=list(config.main_datasets),
            expected_variants=config.main_methods)
    every_method = (
        ("main_comparison_all", "Main comparison (all data sets, with the diagonal baseline)",
         "Both errors vs ρ of every method run with default parameters ({}) on every data set, "
         "ordered by d; {}."),
        ("main_comparison_strict", "Main comparison under strict preprocessing (the bound B = 1 holds)",
         "As the all-data-set comparison, with every column divided by its max |x| so the declared "
         "bound holds ({}); {}."),
    )
    for name, title, words in every_method:
        _figure(log, config, tables_, name=name, artifact=name, title=title,
                description=lambda labels, words=words: words.format(_enumerate(labels), spread),
                select=lambda df: select_variants(_covariance_rows(df)), metrics=ERRORS)
    _figure(log, config, tables_, name="solver_ipm_vs_pgd", artifact="solver",
            title="Solver: IPM-Cholesky vs projected gradient descent",
            description=lambda labels: f"Both errors and the total solver time per trial vs ρ for "
                                       f"{_enumerate(labels)}; {spread}.",
            select=lambda df: select_variants(df, methods={"paceggm"}, params={"solver"}),
            metrics=ERRORS + ["solve_time"], compared=("solver",))
    _figure(log, config, tables_, name="components", artifact="components",
            title="Connected components on vs off",
            description=lambda labels: f"Both errors (which should coincide) and the solver time per "
                                       f"trial vs ρ for {_enumerate(labels)}; {spread}.",
            select=lambda df: select_variants(df, methods={"paceggm"}, params={"use_components", "solver"}),
            metrics=ERRORS + ["solve_time"], compared=("use_components", "solver"))

    # the label of PACE-GGM's rows run with Newton (the plain variant when Newton is the recipes' solver)
    solver_reference = variant_label("paceggm", {"solver": "newton"})
    _tables(log, config, tables_, name="solver_ratios", artifact="solver",
            title="Solvers relative to Newton",
            description="Each solver's mean error and solver time per trial divided by the exact Newton "
                        "solver's, per data set and ρ, summarised by the median over data sets; then the "
                        "same ratio trial by trial (all solvers of a trial share its seed).",
            select=lambda df: select_variants(df, methods={"paceggm"}, params={"solver"}),
            make=lambda rows: [
                claims.ratio_table(rows, ERRORS + ["solve_time"], reference=solver_reference,
                                   name="solver_ratios"),
                claims.paired_ratio_table(rows, ERRORS + ["solve_time"], reference=solver_reference,
                                          name="solver_paired_ratios")],
            metrics=ERRORS + ["solve_time"])

    ref = config.hyperparameter_reference
    hp_datasets = list(config.hyperparameter_datasets) if config.hyperparameter_datasets else None

    def hp_select(df):
        pace = select_variants(df, methods={"paceggm"}, params={"alpha", "beta"})
        return _only(pd.concat([pace, select_variants(df, methods={ref}, params=set())]), hp_datasets)

    hp_rows, hp_exp, _ = _pick(tables_, config, "hyperparameters", hp_select)
    _figure(log, config, tables_, name="hyperparameters", artifact="hyperparameters",
            title="Hyperparameters α (diagonal share) and β (selection share)",
            description=f"Both errors vs ρ for every (α, β) in the grid (colour: α, marker and "
                        f"line: β) with {style.method_style(ref).label} as reference; "
                        f"{plots.spread_caption('none')} (ten overlapping bands would hide the lines).",
            select=hp_select, metrics=ERRORS, datasets=hp_datasets,
            styles=_hp_styles(hp_rows) if hp_exp else None, spread="none")
    _figure(log, config, tables_, name="regression", artifact="regression",
            title="Linear regression",
            description=lambda labels: f"Test MSE vs ρ of {_enumerate(labels)} (linear regression; "
                                       f"PACE-GGM's from its covariance of [X, y]); points: mean over "
                                       f"trials, bars: ±1 standard error; " + (
                                           "grey lines: the test MSE of predicting 0 and of non-private least "
                                           "squares on the same splits (mean over trials; `references.csv`)."
                                           if _references_file(runs, "regression").is_file() else
                                           "no reference lines (no `references.csv` beside these results)."),
            select=_regression_rows, metrics=["mse"], errorbars=True,
            references=lambda exp, prep: _regression_references(runs, exp, prep))

    _tables(log, config, tables_, name="measurements", artifact="measurements",
            title="Measured entries",
            description="Mean number of covariance entries PACE-GGM measures per trial, written "
                        "d + off-diagonal, per data set and ρ (as in the publication).",
            select=lambda df: select_variants(df, methods={"paceggm"}),
            make=lambda rows: [tables.measurements_table(rows)], metrics=["n_measured_offdiag"])
    _tables(log, config, tables_, name="runtime", artifact="runtime",
            title="Runtime",
            description="Total time per trial (whole fit), mean ± standard error over trials, "
                        "per data set, solver and ρ.",
            select=lambda df: select_variants(_covariance_rows(df), params={"solver"}),
            make=lambda rows: [tables.runtime_table(rows)], metrics=["wall_time"])

    for artifact, suffix, label in (("claims", "", "published setting"),
                                    ("claims_strict", "_strict", "strict preprocessing")):
        _tables(log, config, tables_, name=artifact, artifact=artifact,
                title=f"The publication's claims, main comparison ({label})",
                description="Who wins per data set and ρ (among the main text's methods, then with "
                            "every method run with default parameters), and PACE-GGM's gain over SSP (the "
                            "Gaussian mechanism) with its median and rank correlation with d per ρ, on "
                            "both errors.",
                select=lambda df: select_variants(_covariance_rows(df)),
                make=lambda rows, suffix=suffix: [
                    t for m in ERRORS
                    for t in (claims.winners_table(select_variants(rows, methods=main_methods), m,
                                                   name=f"winners_{m}{suffix}"),
                              claims.winners_table(rows, m, name=f"winners_all_{m}{suffix}"),
                              claims.gain_table(rows, m, name=f"gain_over_ssp_{m}{suffix}"))],
                metrics=ERRORS)

    def hp_tables(rows):
        best, wins = tables.best_hyperparameters(rows)
        return [*best, wins]
    _tables(log, config, tables_, name="hyperparameters_tables", artifact="hyperparameters",
            title="Best (α, β)",
            description="The (α, β) pair with the smallest mean error per data set and ρ, for each "
                        "metric, and how many (data set, ρ) cells each pair wins.",
            select=lambda df: _only(select_variants(df, methods={"paceggm"}, params={"alpha", "beta"}),
                                    hp_datasets),
            make=hp_tables, metrics=ERRORS)

    ds_md = out / "tables" / "datasets.md"
    art = Artifact("datasets", "table", "Data sets",
                   "The data sets with n, d and their statistics (e_off, effective rank, correlations), as computed by the "
                   "data stage next to the publication's values.")
    if ds_md.is_file():
        art.files = [p for p in (ds_md, ds_md.with_suffix(".tex")) if p.is_file()]
        art.markdown = [ds_md.read_text(encoding="utf-8")]
        art.source = "data stage"
    else:
        art.skipped = f"{ds_md} not found (written by the data stage)"
    log.artifacts.append(art)
    _against_published(log, config, tables_)
    return log


def _references_file(runs, experiment: str) -> Path:
    return Path(runs) / experiment / "references.csv"


def _regression_references(runs, experiment: str, preprocessing: str | None) -> dict:
    """Per data set, the mean test MSE of predicting 0 and of non-private least squares, when the
    results have a ``references.csv`` (``python -m paceggm.bench.regression_references``)."""
    path = _references_file(runs, experiment)
    if not path.is_file():
        return {}
    refs = pd.read_csv(path)
    if preprocessing is not None:
        refs = refs[refs["preprocessing"] == preprocessing]
    means = refs.groupby("dataset")[["null", "ols"]].mean()
    return {ds: {"predict 0": float(r["null"]), "non-private OLS": float(r["ols"])} for ds, r in means.iterrows()}


def _solver_of(rows) -> str:
    solvers = rows["p_solver"].dropna().unique() if "p_solver" in rows else []
    return str(solvers[0]) if len(solvers) == 1 else "default"


def _against_published(log, config, tables_):
    """Each published table beside ours, their distance figures, scatter plots, and the C1–C13 verdicts."""
    compared = {}

    def keep(result):
        compared[result[0].name] = result
        return [result[0]] if result[1].cells else []
    nothing = "no cell of the published table in these results"

    pace = {"select": lambda df: select_variants(df, methods={"paceggm"}), "metrics": ["n_measured_offdiag"]}
    for artifact, label in (("published_measurements", "published setting"),
                            ("published_measurements_strict", "strict preprocessing")):
        _tables(log, config, tables_, name=artifact, artifact=artifact, **pace,
                title=f"Measured entries against the publication's Table 3 ({label})",
                description="Published mean off-diagonal entries per trial beside ours (mean ± SE), and the ratio.",
                make=lambda rows: keep(published.measurements_comparison(rows, rows["preprocessing"].iloc[0])),
                nothing=nothing)
    _tables(log, config, tables_, name="published_runtime", artifact="published_runtime",
            title="Runtime against the publication's Table 4",
            description="Published seconds per trial (IPM-Cholesky) beside ours (mean ± SE), per solver run.",
            select=lambda df: select_variants(df, methods={"paceggm"}, params={"solver"}), metrics=["wall_time"],
            make=lambda rows: [t for v, g in rows.groupby("variant") for t in keep(published.runtime_comparison(
                g, g["preprocessing"].iloc[0], label=_solver_of(g)))], nothing=nothing)
    _tables(log, config, tables_, name="published_best", artifact="published_best",
            title="Best (α, β) against the publication's Tables 5 and 6",
            description="Published best pair beside ours per data set and ρ, and what the published pair costs in our runs.",
            select=lambda df: select_variants(df, methods={"paceggm"}, params={"alpha", "beta"}), metrics=ERRORS,
            make=lambda rows: [t for m in ("frobenius", "mahalanobis")
                               for t in keep(published.best_pair_comparison(rows, m))], nothing=nothing)
    def sources(*names):
        found = [a.source for a in log.artifacts if a.name in names and a.source]
        return ", ".join(dict.fromkeys(found)) or None
    art = Artifact("published_distances", "table", "Distance from the published tables",
                   "Per published table: cells within 10 % / 25 % / 2×, median ratio, cells beyond 3 SE, "
                   "exact winner matches.")
    log.artifacts.append(art)
    found = [r[1] for r in compared.values() if r[1].cells]
    if not found:
        art.skipped = "no cell of a published table in these results"
    else:
        numeric = [d for d in found if isinstance(d, published.Distance)]
        winners = [d for d in found if isinstance(d, published.WinnerDistance)]
        t = published.distance_table(numeric, winners)
        log.replicate = published.replicate_lines(numeric, winners)
        art.files = tables.write_table(t, log.out / "tables")
        art.markdown = [f"*{t.caption}*\n\n" + tables.to_markdown(t)]
        art.source = sources("published_measurements", "published_measurements_strict", "published_runtime",
                             "published_best")
    for name, stem, xlabel in (("published_measurements_scatter", "published_measurements_", "off-diagonal entries"),
                               ("published_runtime_scatter", "published_runtime_", "seconds per trial")):
        panels = [(k[len(stem):].replace("_", ", ", 1), r[0].data) for k, r in compared.items()
                  if k.startswith(stem) and r[1].cells]
        fig_art = Artifact(name, "figure", f"Ours against published: {xlabel}",
                           f"Each (data set, ρ) cell: our mean ({xlabel}) against the publication's, log axes, "
                           "the line y = x and a ±25 % band; colour: data set.")
        log.artifacts.append(fig_art)
        if not panels:
            fig_art.skipped = "no cell of the published table in these results"
            continue
        fig = published.scatter_figure(panels, xlabel=f"published {xlabel}", ylabel=f"ours, {xlabel}",
                                       width=config.width)
        fig_art.files = plots.save(fig, log.out, name, config.formats)
        fig_art.source = sources(*(a.name for a in log.artifacts if a.name.startswith(stem[:-1])
                                   and a.kind == "table"))
    art = Artifact("claims_verdicts", "table", "The publication's statements C1–C13: verdicts",
                   "Each statement, the criterion applied, our numbers and the verdict, computed from the results.")
    log.artifacts.append(art)
    if not tables_:
        art.skipped = "no results tables"
        return
    log.verdicts = verdicts.verdicts(tables_)
    v = verdicts.verdict_table(log.verdicts)
    art.files = tables.write_table(v, log.out / "tables")
    testable = [x for x in log.verdicts if x.verdict != verdicts.UNTESTABLE]
    untestable = [f"{x.claim} ({x.untestable})" for x in log.verdicts if x.verdict == verdicts.UNTESTABLE]
    art.markdown = [f"*{v.caption}*\n\n" + tables.to_markdown(verdicts.verdict_table(testable))] if testable else []
    if untestable:  # a reduced grid cannot test every statement: named, not drawn as rows of a table
        art.markdown.append("Not testable with these results: " + "; ".join(untestable) + ".")
    art.source = ", ".join(sorted(tables_))

"""Build every artifact of :data:`~.artifacts.ARTIFACTS` that the results store has data for.

Each artifact names the experiments it can be read from (``FiguresConfig.sources``,
dedicated experiment first, ``quick`` last) and the rows it shows (a selection on
the ``method`` and ``p_*`` columns). The first experiment with such rows is used;
an artifact with none is skipped with the reason, and every cell of an artifact's
grid without an ok trial is recorded for the report.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import pandas as pd

from . import artifacts as table_of_artifacts
from . import plots, style, sweep, tables
from .artifacts import Context, Grid, Spec
from .config import FiguresConfig
from .results import CellProblem, cell_problems, datasets_by_d, dims, load_results, pick_preprocessing


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
    sweeps: dict[str, list[str]] = field(default_factory=dict)  # sweep → its grid, Markdown lines
    publication: str | None = None  # why the publication's artifacts were not built (None: they were)

    @property
    def files(self) -> list[Path]:
        return [f for a in self.artifacts for f in a.files]


#: How the reason of an artifact skipped because none of its experiments was read begins.
NO_TABLE = "no results table for"


def _sources(config: FiguresConfig, spec: Spec) -> tuple[str, ...]:
    return tuple(config.sources.get(spec.source, spec.sources))


def _pick(ctx: Context, spec: Spec) -> tuple[pd.DataFrame, str | None, str | None]:
    """First source experiment with rows for ``spec`` (after its row selection)."""
    for exp in _sources(ctx.config, spec):
        if exp not in ctx.tables:
            continue
        picked = spec.rows(ctx.tables[exp], ctx.config)
        if isinstance(picked, dict):  # one artifact per entry: drawn by _expanded
            raise TypeError(f"artifact {spec.name!r}: rows returned a dict; only a sweep's entries may")
        rows, prep, others = pick_preprocessing(picked, ctx.config.preprocessing)
        if len(rows):
            rows.attrs["other_preprocessings"] = others
            return rows, exp, prep
    return pd.DataFrame(), None, None


def _skip_reason(config, spec, tables_) -> str:
    tried = _sources(config, spec)
    present = [e for e in tried if e in tables_]
    if not present:
        return f"{NO_TABLE} {', '.join(tried)} (runs/<experiment>/results.parquet)"
    return f"no rows for this artifact in {', '.join(present)}"


def _problems(df, datasets, variants, rhos, metrics) -> list[CellProblem]:
    seen, out = set(), []
    # a metric a variant never reports (SSP's solver time) leaves no gap in its cells
    ok = df[df["status"] == "ok"]
    has = {m: set(ok.loc[np.isfinite(ok[m]), "variant"]) for m in metrics}
    reporting = set().union(*has.values()) if has else set()
    for m in metrics:
        shown = [v for v in variants if v in has[m] or v not in reporting]
        for p in cell_problems(df, datasets=datasets, variants=shown, rhos=rhos, metric=m):
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


def _record(art: Artifact, rows, exp, prep, looks, datasets, variants, metrics) -> None:
    """Where an artifact's rows came from, and the cells of its grid without a complete result."""
    art.source, art.preprocessing, art.trials = exp, prep, _trials(rows)
    art.other_preprocessings = rows.attrs.get("other_preprocessings", [])
    art.problems = _problems(rows, datasets, variants, sorted(rows["rho"].unique()), metrics)
    art.labels = {v: s.label for v, s in looks.items()}
    art.guarantee = art.guarantee or guarantee_note(rows)


def _figure(ctx: Context, spec: Spec, art: Artifact) -> None:
    rows, exp, prep = _pick(ctx, spec)
    if exp is None:
        art.skipped = _skip_reason(ctx.config, spec, ctx.tables)
        return
    grid, config = spec.draw, ctx.config
    if not isinstance(grid, Grid):  # drawn by the entry's own function
        looks = style.variant_styles(rows)
        variants = style.variant_order(rows["variant"].unique(), looks)
        if callable(spec.description):
            art.description = spec.description(ctx, [looks[v].label for v in variants])
        art.files = plots.save(grid(rows, ctx), ctx.out, spec.name, config.formats)
        _record(art, rows, exp, prep, looks, datasets_by_d(rows), variants, spec.metrics)
        return
    compared = grid.compared(rows) if callable(grid.compared) else grid.compared
    looks = style.variant_styles(rows, compared=compared)
    variants = style.variant_order(rows["variant"].unique(), looks)
    if callable(spec.description):  # worded after what the results hold
        art.description = spec.description(ctx, [looks[v].label for v in variants])
    present = datasets_by_d(rows)
    datasets = grid.datasets(config) if grid.datasets else None
    if datasets is not None:
        # configured data sets the source does not hold are listed, not drawn as empty panels
        art.absent = [x for x in datasets if x not in present]
        datasets = datasets_by_d(rows, only=datasets) or present
    else:
        datasets = present
    # a method drawn as the variants of its grid is not expected with its defaults as well
    expected = [v for v in (grid.expected(config) if grid.expected else ())
                if v in variants or v not in set(rows["method"])]
    metrics = sweep.present(rows, spec.metrics) if grid.present_only else list(spec.metrics)
    fig = plots.metric_grid(rows, datasets=datasets, variants=variants, metrics=metrics,
                            rhos=sorted(rows["rho"].unique()), dims=dims(rows), spread=config.spread_for(grid.spread),
                            compared=compared, errorbars=grid.errorbars, max_columns=config.max_columns,
                            styles=grid.styles(rows) if grid.styles else None, width=config.width,
                            references=grid.references(ctx, exp, prep) if grid.references else None,
                            fit_legend=grid.fit_legend)
    art.files = plots.save(fig, ctx.out, spec.name, config.formats)
    _record(art, rows, exp, prep, style.variant_styles(rows), datasets,
            style.variant_order(set(variants) | set(expected), looks), metrics)


def _table(ctx: Context, spec: Spec, art: Artifact) -> None:
    rows, exp, prep = _pick(ctx, spec)
    if exp is None:
        art.skipped = _skip_reason(ctx.config, spec, ctx.tables)
        return
    made = spec.draw(rows, ctx)
    if not made:  # e.g. a demo grid without any cell of a published table: no 0-cell comparison
        art.skipped = f"{spec.nothing} (source `{exp}`)"
        return
    art.guarantee = guarantee_note(rows)
    for t in made:
        # The table files carry the note in their caption; the report shows it once per artifact.
        captioned = replace(t, caption=f"{t.caption} {art.guarantee}".strip())
        art.files += tables.write_table(captioned, ctx.out / "tables")
        art.markdown.append(f"*{t.caption}*\n\n" + tables.to_markdown(t))
    looks = style.variant_styles(rows)
    _record(art, rows, exp, prep, looks, datasets_by_d(rows), style.variant_order(rows["variant"].unique(), looks),
            spec.metrics)


def _build(ctx: Context, spec: Spec, art: Artifact) -> None:
    if spec.rows is None:  # made from the other artifacts or another stage
        spec.draw(ctx, art)
    else:
        (_figure if spec.kind == "figure" else _table)(ctx, spec, art)


def _expanded(ctx: Context, spec: Spec, exp: str) -> list[Artifact]:
    """A sweep's entry drawn for experiment ``exp`` into ``<out>/<exp>/``: one artifact, or one per entry of
    the dict its rows return (e.g. one figure per swept parameter)."""
    sub = replace(ctx, folder=ctx.log.out / exp)
    picked = spec.rows(ctx.tables[exp], ctx.config) if spec.rows is not None else None
    parts = picked if isinstance(picked, dict) else {"": picked}
    made = []
    for suffix, rows in parts.items():
        stem = spec.name + (f"_{sweep.slug(suffix)}" if suffix else "")
        words = spec.description if isinstance(spec.description, str) else ""
        art = Artifact(f"{exp}/{stem}", spec.kind, f"{exp}: {spec.title}" + (f" — {suffix}" if suffix else ""),
                       words)
        made.append(art)
        if spec.rows is None:  # an entry that fills its artifact itself, given this sweep's folder
            spec.draw(sub, art)
            continue
        if not len(rows):
            art.skipped = f"{spec.nothing} (source `{exp}`)"
            continue
        metrics = tuple(sweep.present(rows, spec.metrics))
        if not metrics:
            art.skipped = f"no ok trial with {', '.join(spec.metrics)} (source `{exp}`)"
            continue
        one = replace(spec, name=stem, sources=(exp,), source=f"{exp}/{stem}",
                      rows=lambda df, config, rows=rows: rows, metrics=metrics)
        _build(sub, one, art)
        # a sweep's grid is what it ran: a variant never run on a data set (a part of a composed recipe
        # with data sets of its own) is no gap; a run that failed has its rows
        ran = set(zip(rows["dataset"], rows["variant"]))
        art.problems = [p for p in art.problems if (p.dataset, p.variant) in ran]
    if not made:
        made.append(Artifact(f"{exp}/{spec.name}", spec.kind, f"{exp}: {spec.title}", "",
                             skipped=f"{spec.nothing} (source `{exp}`)"))
    return made


def is_sweep(experiment: str, config: FiguresConfig) -> bool:
    """Whether ``experiment`` is drawn as a sweep of its own: any experiment the publication's artifacts do
    not read, and the user recipes (:data:`~.artifacts.USER_RECIPES`)."""
    return experiment not in _publication(config) or experiment in table_of_artifacts.USER_RECIPES


def _publication(config: FiguresConfig) -> set[str]:
    """The publication's recipes, and any experiment the config names as a source of its artifacts (not of
    ours, :data:`~.artifacts.OUR_ARTIFACTS`)."""
    return set(table_of_artifacts.PUBLICATION_RECIPES) | {
        e for k, v in config.sources.items() if k not in table_of_artifacts.OUR_SOURCES for e in v}


def build_all(runs: str | Path, out: str | Path, config: FiguresConfig | None = None, *,
              experiments=None, artifacts=None) -> BuildLog:
    """Build every artifact it can from ``runs/*/results.parquet`` into ``out``.

    ``experiments`` restricts the tables read (e.g. ``["quick"]`` draws a
    reduced recipe alone); ``artifacts`` replaces :data:`~.artifacts.ARTIFACTS`.
    Every sweep read that is not a publication recipe gets the entries whose
    sources are :data:`~.artifacts.SWEEPS`, into ``out/<experiment>/``; the
    publication's artifacts are built only when a publication recipe is read
    (``BuildLog.publication`` says so otherwise).
    An artifact without results is skipped and its existing files in ``out`` are
    left alone. Returns the :class:`BuildLog`; :func:`report.write_report` turns
    it into ``out/REPORT.md``.
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
    ctx = Context(config=config, runs=runs, tables=tables_, log=log)
    specs = list(table_of_artifacts.ARTIFACTS if artifacts is None else artifacts)
    for exp in (e for e in tables_ if is_sweep(e, config)):
        log.sweeps[exp] = sweep.describe(tables_[exp])
        for spec in specs:
            if spec.sources == table_of_artifacts.SWEEPS:
                log.artifacts += _expanded(ctx, spec, exp)
    if tables_ and not _publication(config) & set(tables_):
        log.publication = ("the publication's figures, tables and verdicts on its statements C1–C13 are built "
                           "only from the publication's recipes and the demo that exercises them "
                           f"({', '.join(sorted(_publication(config)))}); none was read")
    for spec in specs:
        if spec.sources == table_of_artifacts.SWEEPS or (
                log.publication and spec.name in table_of_artifacts.PUBLICATION_ARTIFACTS):
            continue
        if spec.name in table_of_artifacts.OUR_ARTIFACTS and not set(_sources(config, spec)) & set(tables_):
            continue  # ours, and none of its recipes read: not part of this report
        art = Artifact(spec.name, spec.kind, spec.title, spec.description if isinstance(spec.description, str) else "")
        log.artifacts.append(art)
        _build(ctx, spec, art)
    return log

"""The figures and tables of any sweep, whatever its name or composition, read from its results table alone.

A sweep's grid is what its rows hold: the data sets, the ρ values, the trials,
the methods with their variants (``method`` and the ``p_*`` columns, read by
:func:`paceggm.bench.variants.row_params`), and the parameters each method
sweeps: those with more than one value among its rows. Every error metric
against ρ, the time and the measured entries are drawn for every variant; each
swept parameter gets a figure of the variants that differ in it alone (the
others held at their defaults, or at their most frequent values where the grid
has no such rows), and each pair of parameters swept together (α × β) a heat
map per data set and ρ. The entries that draw them are those of the table of
artifacts whose sources are :data:`~.artifacts.SWEEPS`.
"""

from __future__ import annotations

import re
from collections import Counter

import matplotlib as mpl
import numpy as np
import pandas as pd

from paceggm.bench.summary import trial_stats
from paceggm.bench.variants import NAMED_TOGETHER, row_params, row_values

from . import plots, style, tables
from .results import _first_line, datasets_by_d, dims

ERRORS = ("mahalanobis", "frobenius", "mse")
TIMES = ("wall_time", "solve_time")
MEASURED = "n_measured_offdiag"


def present(rows: pd.DataFrame, metrics) -> list[str]:
    """The metrics with at least one finite value in an ok row of ``rows``."""
    ok = rows[rows["status"] == "ok"] if len(rows) else rows
    return [m for m in metrics if m in ok.columns and np.isfinite(pd.to_numeric(ok[m], errors="coerce")).any()]


def _value(v):
    return v.item() if hasattr(v, "item") else v


def _order(v):
    return (0, float(v), "") if isinstance(v, (int, float)) and not isinstance(v, bool) else (1, 0.0, str(v))


def text(v) -> str:
    """A parameter value as written in a caption or on an axis."""
    return f"{v:g}" if isinstance(v, float) else str(v)


def _values(ran: pd.Series, names) -> list[tuple]:
    """Per row, the values of ``names`` it ran with (its ``p_*`` columns, :func:`~paceggm.bench.variants.row_values`)."""
    return [tuple(_value(p.get(n)) for n in names) for p in ran]


def swept(df: pd.DataFrame) -> dict[str, dict[str, list]]:
    """Method → each parameter it runs with more than one value of → those values, in order."""
    if not len(df):
        return {}
    params, ran = row_params(df), row_values(df)
    out: dict[str, dict[str, list]] = {}
    for method, idx in df.groupby("method", sort=True).groups.items():
        names = sorted(set().union(*params.loc[idx]))
        found, values = {}, _values(ran.loc[idx], names)
        for i, name in enumerate(names):
            distinct = sorted({v[i] for v in values}, key=_order)
            if len(distinct) > 1:
                found[name] = distinct
        if found:
            out[method] = found
    return out


def swept_names(rows: pd.DataFrame) -> tuple[str, ...]:
    """Every parameter swept in ``rows``, by any method (a figure's compared parameters)."""
    return tuple(dict.fromkeys(n for found in swept(rows).values() for n in found))


def units(names) -> list[tuple[str, ...]]:
    """The swept parameters in figures: the ones named together (α, β) as one, each other alone."""
    together = tuple(n for n in NAMED_TOGETHER if n in names)
    return ([together] if together else []) + [(n,) for n in names if n not in together]


def _slice(df: pd.DataFrame, method: str, unit: tuple[str, ...], others: list[str]):
    """``method``'s rows that vary ``unit`` alone: the other swept parameters at their defaults, else at
    their most frequent values; with the values held (empty for the defaults)."""
    rows = df[df["method"] == method]
    ran = row_values(rows)
    held = _values(ran, others)
    # at their defaults: the rows were stored varying none of them
    at_defaults = [not set(p) & set(others) for p in row_params(rows)]
    if len(set(v for v, keep in zip(_values(ran, unit), at_defaults) if keep)) > 1:
        return rows[at_defaults], {}
    common = Counter(held).most_common(1)[0][0]
    return rows[[h == common for h in held]], dict(zip(others, common))


def _name(method: str, unit, held: dict) -> str:
    title = f"{method}: {' × '.join(unit)}"
    return title + (f" ({', '.join(f'{k}={text(v)}' for k, v in held.items())} held)" if held else "")


def parameter_rows(df: pd.DataFrame, config=None) -> dict[str, pd.DataFrame]:
    """One entry per swept parameter (α and β as one): the variants that differ in it alone."""
    out = {}
    for method, found in swept(df).items():
        for unit in units(list(found)):
            rows, held = _slice(df, method, unit, [n for n in found if n not in unit])
            if len(set(_values(row_values(rows), unit))) > 1:
                out[_name(method, unit, held)] = rows
    return out


def pair_rows(df: pd.DataFrame, config=None) -> dict[str, pd.DataFrame]:
    """One entry per pair of parameters a method sweeps as a whole grid (at least two values each)."""
    out = {}
    for method, found in swept(df).items():
        names = list(found)
        for i, p in enumerate(names):
            for q in names[i + 1:]:
                rows, held = _slice(df, method, (p, q), [n for n in names if n not in (p, q)])
                cells = set(_values(row_values(rows), (p, q)))
                xs, ys = {c[0] for c in cells}, {c[1] for c in cells}
                if len(xs) > 1 and len(ys) > 1 and len(cells) == len(xs) * len(ys):  # a whole grid
                    out[_name(method, (p, q), held)] = rows
    return out


def every_row(df: pd.DataFrame, config=None) -> pd.DataFrame:
    return df


def measured_rows(df: pd.DataFrame, config=None) -> pd.DataFrame:
    """The rows of the methods that report their measured entries."""
    if not len(df) or MEASURED not in df.columns:
        return df.iloc[:0]
    counts = pd.to_numeric(df[MEASURED], errors="coerce")
    reporting = set(df.loc[counts.notna(), "method"])
    return df[df["method"].isin(reporting)]


def error_rows(df: pd.DataFrame, config=None):
    """Every row with an error; the covariance and the regression methods apart when the sweep has both
    (their errors are not the same metrics)."""
    if not present(df, ERRORS):
        return df.iloc[:0]
    ok = df[(df["status"] == "ok") & np.isfinite(pd.to_numeric(df["mse"], errors="coerce"))]
    regression = df["method"].isin(set(ok["method"]))
    if regression.all() or not regression.any():
        return df
    return {"covariance": df[~regression], "regression": df[regression]}


def time_rows(df: pd.DataFrame, config=None) -> pd.DataFrame:
    return df if present(df, TIMES) else df.iloc[:0]


def slug(title: str) -> str:
    """A file-name stem for a title: lower case, words joined by underscores."""
    words = re.sub(r"[^0-9a-z]+", "_", title.lower().replace("×", "x")).strip("_")
    return words or "entry"


# ---- tables ------------------------------------------------------------------------------------

def mean_tables(rows: pd.DataFrame, metrics, what: str) -> list[tables.Table]:
    """Per metric present: mean ± standard error per data set, variant and ρ (:func:`tables.runtime_table`)."""
    from dataclasses import replace

    return [replace(tables.runtime_table(rows, metric=m), name=m,
                    caption=f"{style.metric_label(m)}{what}, mean ± standard error over trials "
                            "(n/a: a single ok trial), per data set, variant and ρ.")
            for m in present(rows, metrics)]


def results_tables(rows, ctx) -> list[tables.Table]:
    return mean_tables(rows, ERRORS, "")


def time_tables(rows, ctx) -> list[tables.Table]:
    return mean_tables(rows, TIMES, " (seconds per trial)")


def measured_tables(rows, ctx) -> list[tables.Table]:
    return mean_tables(rows, (MEASURED,), " (the d diagonal entries on top)")


# ---- the heat map of a pair ----------------------------------------------------------------------

_SPREAD_TEXT = {"sd": "±1 standard deviation", "sem": "±1 standard error", "minmax": "min–max over trials"}


def heatmap_words(ctx, labels) -> str:
    spread = ctx.config.spread_for()
    second = f"; second line: {_SPREAD_TEXT[spread]}" if spread in _SPREAD_TEXT else ""
    return ("Each error over the grid of the two parameters, one panel per data set (with its metric) and ρ; "
            f"colour (log scale, per panel) and number: mean over trials{second}; framed: the panel's "
            "smallest mean.")


def short(x: float) -> str:
    """A number in six characters at most, for a heat map's cell: 2.8e-3, 0.92, 1.4, 733, 17.2k."""
    if not np.isfinite(x):
        return tables.MISSING
    for scale, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(x) >= scale:
            return f"{x / scale:.3g}{suffix}"
    if 0 < abs(x) < 0.01:
        mantissa, exponent = f"{x:.1e}".split("e")
        return f"{mantissa}e{int(exponent)}"
    return f"{x:.2g}" if abs(x) < 1 else f"{x:.3g}"


def _spread_text(st, spread: str) -> str:
    if spread == "minmax":
        return f"{short(st['min'])}–{short(st['max'])}"
    if spread in ("sd", "sem") and np.isfinite(st[spread]):
        return "±" + short(st[spread])
    return ""


def heatmap(rows: pd.DataFrame, ctx):
    """The pair's grid: x = the first parameter's values, y = the second's; one panel per (data set,
    metric) row and ρ column; the mean (and spread) of each cell written in it."""
    (method, found), = swept(rows).items()
    p, q = list(found)[:2]
    xs, ys = found[p], found[q]
    vals = _values(row_values(rows), (p, q))
    cells = rows.assign(_x=[xs.index(v[0]) for v in vals], _y=[ys.index(v[1]) for v in vals])
    metrics = present(rows, ERRORS)
    datasets, rhos, d = datasets_by_d(rows), sorted(rows["rho"].unique()), dims(rows)
    spread = ctx.config.spread_for()
    nrows, ncols = len(datasets) * len(metrics), len(rhos)
    cell = 0.45 if len(xs) * len(ys) <= 25 else 0.25
    width = min(ctx.config.width, 0.9 + ncols * (len(xs) * cell + 0.35))
    with mpl.rc_context(style.RC):
        fig = plots._new_figure(width, 0.5 + nrows * (len(ys) * cell + 0.45))
        axes = np.atleast_2d(fig.subplots(nrows, ncols, squeeze=False))
        for i, (ds, metric) in enumerate((ds, m) for ds in datasets for m in metrics):
            stats = trial_stats(cells[cells["dataset"] == ds], metric, by=("rho", "_x", "_y"))
            for j, rho in enumerate(rhos):
                ax = axes[i, j]
                grid = np.full((len(ys), len(xs)), np.nan)
                if rho in stats.index.get_level_values("rho"):
                    for (x, y), st in stats.xs(rho, level="rho").iterrows():
                        grid[int(y), int(x)] = st["mean"]
                finite = grid[np.isfinite(grid)]
                norm = (mpl.colors.LogNorm(finite.min(), finite.max()) if len(finite) and finite.min() > 0
                        and finite.max() > finite.min() else None)
                ax.imshow(np.ma.masked_invalid(grid), cmap="cividis_r", norm=norm, aspect="auto", origin="lower")
                if len(finite):
                    by, bx = np.unravel_index(np.nanargmin(grid), grid.shape)
                    ax.add_patch(mpl.patches.Rectangle((bx - 0.5, by - 0.5), 1, 1, fill=False, lw=1.2,
                                                       edgecolor="#D55E00"))
                for (x, y), st in (stats.xs(rho, level="rho").iterrows()
                                   if rho in stats.index.get_level_values("rho") else ()):
                    shade = norm(st["mean"]) if norm is not None else 0.5
                    words = short(st["mean"])
                    extra = _spread_text(st, spread)
                    ax.text(x, y, words + (f"\n{extra}" if extra else ""), ha="center", va="center",
                            fontsize=4.5 if extra else 5.5, color="black" if shade < 0.55 else "white")
                ax.set_xticks(range(len(xs)), [text(v) for v in xs])
                ax.set_yticks(range(len(ys)), [text(v) for v in ys])
                ax.tick_params(length=0)
                for side in ("top", "right", "left", "bottom"):
                    ax.spines[side].set_visible(False)
                if i == 0:
                    ax.set_title(tables.rho_label(rho))
                if i == nrows - 1:
                    ax.set_xlabel(p)
                if j == 0:
                    ax.set_ylabel(f"{style.dataset_label(ds)}" + (f" (d={d[ds]})" if ds in d else "")
                                  + f"\n{style.metric_label(metric)}\n{q}")
    return fig


# ---- the grid, for the report --------------------------------------------------------------------

def describe(df: pd.DataFrame) -> list[str]:
    """Markdown lines: what the sweep ran (its grid) and how many of its trials are ok."""
    ok = int((df["status"] == "ok").sum())
    d, n = dims(df), df.groupby("dataset")["n"].max()
    sets = ", ".join(f"{ds} (n={int(n[ds])}, d={d[ds]})" if ds in d and np.isfinite(n[ds]) else ds
                     for ds in datasets_by_d(df))
    trials = df.groupby(["dataset", "variant", "rho"])["trial"].nunique()
    looks = style.variant_styles(df)
    methods = []
    for method, g in df.groupby("method", sort=False):
        labels = [looks[v].label for v in style.variant_order(g["variant"].unique(), looks)]
        methods.append(labels[0] if len(labels) == 1 else f"{style.method_style(method).label} "
                       f"({len(labels)} variants: {'; '.join(labels)})")
    params = [f"{style.method_style(m).label}: " + ", ".join(f"{k} ∈ {{{', '.join(text(v) for v in vs)}}}"
                                                             for k, vs in found.items())
              for m, found in swept(df).items()]
    lines = [f"- data sets: {sets}",
             f"- preprocessing: {', '.join(sorted(df['preprocessing'].unique()))}",
             f"- ρ: {', '.join(f'{r:g}' for r in sorted(df['rho'].unique()))}",
             f"- trials per cell: {int(trials.min())}" + (f"–{int(trials.max())}" if trials.max() > trials.min()
                                                          else "")
             + f" ({len(df)} trials: {ok} ok, {len(df) - ok} failed)",
             f"- methods: {'; '.join(methods)}",
             f"- swept parameters: {'; '.join(params) if params else 'none'}"]
    failed = df.loc[df["status"] != "ok", "error"]
    if len(failed):  # why, once per reason: a sweep whose every trial failed has no figure to say it
        reasons = Counter(_first_line(e) or "no error recorded" for e in failed)
        lines.append("- failed trials: " + "; ".join(f"{n} × {r}" for r, n in reasons.most_common(3))
                     + (f"; {len(reasons) - 3} other reasons" if len(reasons) > 3 else ""))
    return ["Its grid, as its results table holds it:", "", *lines]

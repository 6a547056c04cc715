"""Figures: metric vs ρ, one column per data set, one row per metric.

Only :class:`matplotlib.figure.Figure` with the Agg canvas is used (no pyplot,
no global backend state), so building figures works headless and in parallel.
Every (data set, variant) line is drawn on the *full* ρ grid of the figure with
NaN where a cell has no ok trial: matplotlib then breaks the line there, so a
missing or failed cell is a visible gap, never an interpolation.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib as mpl
import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import FixedLocator, FuncFormatter, LogLocator, MaxNLocator, NullFormatter, NullLocator

from paceggm.bench.summary import trial_stats

from . import style

RHO_LABEL = "ρ (zCDP)"
PANEL_HEIGHT = 1.4  # inches per row of panels


def _band(stats: pd.DataFrame, spread: str) -> tuple[np.ndarray, np.ndarray] | None:
    mean = stats["mean"].to_numpy()
    if spread == "none":
        return None
    if spread == "minmax":
        return stats["min"].to_numpy(), stats["max"].to_numpy()
    width = stats["sd" if spread == "sd" else "sem"].to_numpy()
    return mean - width, mean + width


def spread_caption(spread: str, *, bars: bool = False) -> str:
    """What a figure's line and band (or, ``bars=True``, its points and error bars) show."""
    what = {"minmax": "min–max over trials", "sd": "±1 standard deviation", "sem": "±1 standard error"}
    if bars:
        return "points: mean over trials" + (f", bars: {what[spread]}" if spread in what else "")
    return "line: mean over trials" + (f"; band: {what[spread]}" if spread in what else "")


def _decade_xticks(ax, rhos: np.ndarray, step: int = 2) -> None:
    """Labels on every ``step``-th decade of ρ (legible in narrow panels), ticks on all."""
    lo, hi = int(np.floor(np.log10(rhos.min()))), int(np.ceil(np.log10(rhos.max())))
    ax.set_xticks([10.0**k for k in range(lo, hi + 1) if (k - lo) % step == 0 or lo == hi])
    ax.set_xticks([10.0**k for k in range(lo, hi + 1)], minor=True)
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlim(rhos.min() / 2, rhos.max() * 2)


def _decade_ylim(ax) -> None:
    """Whole decades on the y axis, so each panel has labelled major ticks only."""
    lo, hi = ax.dataLim.y0, ax.dataLim.y1
    if not (np.isfinite(lo) and np.isfinite(hi)) or lo <= 0:
        return
    lo_dec, hi_dec = np.floor(np.log10(lo)), np.ceil(np.log10(hi))
    if hi_dec == lo_dec:
        hi_dec += 1
    ax.set_ylim(10.0**lo_dec, 10.0**hi_dec)
    ax.yaxis.set_major_locator(LogLocator(base=10, numticks=5))
    ax.yaxis.set_minor_formatter(NullFormatter())


#: Looks of the reference lines (grey, told apart by dash pattern in grayscale too).
REFERENCE_STYLES = {
    "predict 0": {"color": "0.45", "linestyle": ":", "lw": 1.0},
    "non-private OLS": {"color": "0.2", "linestyle": (0, (6, 2, 1, 2)), "lw": 0.9},
}


def _fitted_ylim(ax) -> None:
    """A log y axis fitted to what is drawn (data, bars and reference lines), a little margin each side."""
    lo, hi = ax.dataLim.y0, ax.dataLim.y1
    if not (np.isfinite(lo) and np.isfinite(hi)) or lo <= 0:
        return
    pad = max((np.log10(hi) - np.log10(lo)) * 0.08, 0.02)
    lo, hi = 10 ** (np.log10(lo) - pad), 10 ** (np.log10(hi) + pad)
    ax.set_ylim(lo, hi)
    # labels at 1, 2 and 5 × powers of ten, or at every digit when that leaves fewer than two:
    # a range under a decade still has labelled ticks, each with the digits that tell it apart
    decades = range(int(np.floor(np.log10(lo))), int(np.ceil(np.log10(hi))) + 1)
    for digits in ((1, 2, 5), range(1, 10)):
        ticks = [m * 10.0 ** k for k in decades for m in digits if lo <= m * 10.0 ** k <= hi]
        if len(ticks) >= 2:
            break
    else:  # a range within one digit: evenly spaced round values
        ticks = [t for t in MaxNLocator(nbins=3).tick_values(lo, hi) if lo <= t <= hi]
    ax.yaxis.set_major_locator(FixedLocator(ticks))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda y, _: f"{y:.2g}"))
    ax.yaxis.set_minor_locator(NullLocator())


def _linthresh(stats: pd.DataFrame, dataset: str) -> float:
    """Linear range of a symlog axis: the panel's smallest positive mean (or 1e-3)."""
    means = stats.xs(dataset, level="dataset")["mean"].to_numpy()
    positive = means[np.isfinite(means) & (means > 0)]
    return float(positive.min()) if len(positive) else 1e-3


def _new_figure(width: float, height: float) -> Figure:
    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def metric_grid(df: pd.DataFrame, *, datasets: list[str], variants: list[str], metrics: list[str],
                rhos: list[float], dims: dict[str, int], spread: str = "minmax",
                compared: tuple[str, ...] = (), errorbars: bool = False, max_columns: int = 7,
                styles: dict[str, style.MethodStyle] | None = None,
                width: float = style.FULL_WIDTH, references: dict | None = None,
                fit_legend: bool = False) -> Figure:
    """Metric vs ρ on log–log axes; columns = ``datasets``, rows = ``metrics``.

    With more than ``max_columns`` data sets the columns wrap onto further
    blocks of ``len(metrics)`` rows. ``errorbars=True`` draws the ``spread`` as
    error bars instead of a band (the regression figure), the variants
    side by side at each ρ and the y axis fitted to the data rather than to whole
    decades, so bars of a few per cent stay visible. ``references`` maps a data set
    to ``{label: value}``: horizontal lines (e.g. predicting 0, non-private OLS)
    in the :data:`REFERENCE_STYLES` looks. ``fit_legend=True`` makes the figure tall enough
    for a legend of many variants above one row of panels.
    """
    if not datasets or not metrics or not rhos:
        raise ValueError("metric_grid needs at least one data set, one metric and one rho")
    looks = styles or style.variant_styles(df, compared=compared)
    styles = {v: style.look(v, looks) for v in variants}
    variants = sorted(variants, key=lambda v: (styles[v].order, v))
    # about an inch per panel at least; balanced blocks: 14 data sets at 7 columns → 7 + 7
    max_columns = max(1, min(max_columns, int(width // 1.0)))
    nblocks = -(-len(datasets) // max_columns)
    ncols = -(-len(datasets) // nblocks)
    blocks = [datasets[i:i + ncols] for i in range(0, len(datasets), ncols)]
    nrows = len(blocks) * len(metrics)
    # few panels: don't stretch them over the full width (at most ~2.2 in each, at least a column)
    width = min(width, max(style.COLUMN_WIDTH, 2.2 * ncols))
    with mpl.rc_context(style.RC):
        height = PANEL_HEIGHT * nrows + 0.45
        if fit_legend:
            labels = [styles[v].label for v in variants]
            per_row = _legend_columns(labels, width)
            height += max(0.0, 0.15 * -(-len(labels) // per_row) - 0.3)
        fig = _new_figure(width, height)
        axes = np.atleast_2d(fig.subplots(nrows, ncols, squeeze=False))
        stats = {m: trial_stats(df, m) for m in metrics}
        grid = pd.Index(sorted(rhos), name="rho")
        drawn: set[str] = set()
        drawn_refs: set[str] = set()
        for b, block in enumerate(blocks):
            for r, metric in enumerate(metrics):
                row = b * len(metrics) + r
                for c in range(ncols):
                    ax = axes[row, c]
                    if c >= len(block):
                        ax.set_axis_off()
                        continue
                    ds = block[c]
                    has_data, smallest = False, np.inf
                    for v in variants:
                        key = (ds, v)
                        s = stats[metric]
                        try:
                            sub = s.xs(key, level=("dataset", "variant"))
                        except KeyError:
                            continue
                        sub = sub.reindex(grid)
                        if not np.isfinite(sub["mean"]).any():
                            continue
                        has_data = True
                        smallest = min(smallest, np.nanmin(sub["mean"]))
                        drawn.add(v)
                        # side by side at each ρ when drawn as error bars, so bars do not hide each other
                        offset = variants.index(v) - (len(variants) - 1) / 2 if errorbars else None
                        _draw_variant(ax, grid.to_numpy(), sub, styles[v], spread, offset)
                    for label, value in ((references or {}).get(ds) or {}).items():
                        if metric == "mse" and np.isfinite(value) and value > 0:
                            ax.axhline(value, zorder=1, **REFERENCE_STYLES.get(label, {"color": "0.5", "lw": 0.8}))
                            drawn_refs.add(label)
                    ax.set_xscale("log")
                    _decade_xticks(ax, grid.to_numpy(), step=2 if width / ncols >= 1.2 else 3)
                    _y_axis(ax, has_data, smallest, errorbars, stats[metric], ds)
                    ax.grid(True, which="major")
                    if r == 0:
                        d = dims.get(ds)
                        ax.set_title(style.dataset_label(ds) + (f"\nd={d}" if d is not None else ""))
                    if c == 0:
                        ax.set_ylabel(style.metric_label(metric))
                    if r == len(metrics) - 1:
                        ax.set_xlabel(RHO_LABEL)
        _legend(fig, [styles[v] for v in variants if v in drawn],
                [label for label in REFERENCE_STYLES if label in drawn_refs], width)
    return fig


def _draw_variant(ax, x, sub, st: style.MethodStyle, spread: str, offset: float | None) -> None:
    """One variant's means on one panel: a line with its band, or (``offset`` given) error bars."""
    if offset is not None:
        if spread == "sem":
            yerr = sub["sem"].fillna(0.0)
        else:
            band = _band(sub, spread)
            mean = sub["mean"].to_numpy()
            yerr = None if band is None else np.nan_to_num(np.vstack([mean - band[0], band[1] - mean]))
        # a twentieth of a decade apart per position
        ax.errorbar(x * 10 ** (0.05 * offset), sub["mean"], yerr=yerr,
                    color=st.color, marker=st.marker, linestyle=st.linestyle, capsize=1.8,
                    elinewidth=0.8, markersize=2.6, markerfacecolor="white", zorder=3)
        return
    ax.plot(x, sub["mean"], color=st.color, marker=st.marker,
            linestyle=st.linestyle, markerfacecolor="white", zorder=3)
    band = _band(sub, spread)
    if band is not None:
        lo, hi = band
        # a band below zero cannot show on a log axis; clip it to the mean's scale
        lo = np.where(lo > 0, lo, sub["mean"] / 10)
        ax.fill_between(x, lo, hi, color=st.color, alpha=0.15, linewidth=0, zorder=2)


def _y_axis(ax, has_data: bool, smallest: float, errorbars: bool, stats: pd.DataFrame, dataset: str) -> None:
    if has_data and smallest > 0 and errorbars:
        ax.set_yscale("log")
        _fitted_ylim(ax)
    elif has_data and smallest > 0:
        ax.set_yscale("log")
        _decade_ylim(ax)
    elif has_data:
        # a zero (e.g. no solver call when nothing off-diagonal was measured)
        # would vanish on a log axis: keep it visible on a symmetric-log one
        ax.set_yscale("symlog", linthresh=_linthresh(stats, dataset))
    else:
        ax.text(0.5, 0.5, "no data", transform=ax.transAxes, ha="center", va="center", color="0.4")
        ax.set_yticks([])


def _legend(fig, looks: list[style.MethodStyle], references: list[str], width: float) -> None:
    handles = [Line2D([], [], color=st.color, marker=st.marker, linestyle=st.linestyle,
                      markerfacecolor="white", label=st.label) for st in looks]
    handles += [Line2D([], [], label=label, **REFERENCE_STYLES.get(label, {"color": "0.5", "lw": 0.8}))
                for label in references]
    if handles:
        fig.legend(handles=handles, loc="outside upper center",
                   ncols=_legend_columns([h.get_label() for h in handles], width), frameon=False)


def _legend_columns(labels: list[str], width: float) -> int:
    # A legend column needs room for its longest label (≈0.055 in per
    # character at the legend's font size, plus the handle), or it is cut.
    col_width = 0.45 + 0.055 * max(len(x) for x in labels)
    return min(len(labels), max(1, int(width // col_width)))


def save(fig: Figure, out_dir: Path, name: str, formats) -> list[Path]:
    """Write ``out_dir/name.<fmt>`` for each format; return the paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for fmt in formats:
        path = out_dir / f"{name}.{fmt}"
        # Saving reads the resolution and the PDF font type from the rc settings: outside the
        # style's context they fall back to matplotlib's (100 dpi: 700 px at full text width).
        with mpl.rc_context(style.RC):
            fig.savefig(path, format=fmt, metadata={"CreationDate": None} if fmt == "pdf" else None)
        paths.append(path)
    return paths

"""How methods and their variants look: labels, colours, markers, line styles, order.

Every figure and table asks this module for a variant's label and style. A
base method's look is its entry in the method registry
(:data:`paceggm.bench.methods.METHODS`), so a method registered there shows up
the same way everywhere; this module adds the looks of variants (solvers,
components off, the (α, β) grid). An unknown method still gets a stable style
derived from its key, so nothing breaks before it is registered.

Figures must read in grayscale: each method differs from the others by marker
and line style as well as by colour (Okabe–Ito colour-blind-safe palette).

A *variant* is a method with the parameters that set it apart from the
method's defaults when its rows were made (:mod:`paceggm.bench.variants`, stored
with the rows); its looks are keyed by those parameters and the values the rows
ran with (``p_*``), never by its label and never by today's defaults.
"""

from __future__ import annotations

import textwrap
import zlib
from dataclasses import replace

import matplotlib as mpl
import pandas as pd

from paceggm.bench.cells import variant_label
from paceggm.bench.methods import METHODS, PALETTE, MethodStyle
from paceggm.bench.variants import NAMED_TOGETHER, variants_of

#: Figure widths (inches) of a two-column paper.
COLUMN_WIDTH = 3.3
FULL_WIDTH = 7.0

#: PACE-GGM's variants compared in the solver / components experiments, with their own look,
#: keyed by the one parameter each varies.
SOLVER_LABELS = {"ipm": "IPM", "pgd0": "PGD init 0", "pgd1": "PGD init 1", "newton": "Newton"}
VARIANTS: dict[tuple[str, object], MethodStyle] = {
    ("solver", "ipm"): MethodStyle("PACE-GGM (IPM)", PALETTE["orange"], "D", "-.", 2),
    ("solver", "pgd0"): MethodStyle("PACE-GGM (PGD init 0)", PALETTE["purple"], "v", "--", 3),
    ("solver", "pgd1"): MethodStyle("PACE-GGM (PGD init 1)", PALETTE["sky"], "^", ":", 4),
    ("solver", "newton"): MethodStyle("PACE-GGM (Newton)", PALETTE["green"], "s", (0, (5, 1)), 5),
    ("use_components", False): MethodStyle("PACE-GGM (components off)", PALETTE["black"], "x", "--", 6),
}

_PARAM_LABELS = {
    "solver": lambda v: SOLVER_LABELS.get(str(v), str(v)),
    "use_components": lambda v: "components on" if v else "components off",
    "alpha": lambda v: f"α={v:g}" if isinstance(v, float) else f"α={v}",
    "beta": lambda v: f"β={v:g}" if isinstance(v, float) else f"β={v}",
}

#: Metric column → axis label.
METRIC_LABELS = {
    "mahalanobis": "Mahalanobis error",
    "frobenius": "Frobenius error",
    "mse": "Test MSE",
    "solve_time": "Solver wall time (s)",
    "cpu_time": "Fit CPU time (s)",
    "wall_time": "Time per trial (s)",
    "n_measured_offdiag": "Off-diagonal entries",
    "mahalanobis_pop": "Mahalanobis error vs Σ",
    "frobenius_pop": "Frobenius error vs Σ",
}

_FALLBACK_COLORS = ["#332288", "#88CCEE", "#44AA99", "#117733", "#999933", "#DDCC77", "#882255", "#AA4499"]
_FALLBACK_MARKERS = ["h", "*", "p", "d", "8", "H", ">", "X"]
_FALLBACK_LINES = ["-", "--", "-.", ":", (0, (5, 2)), (0, (1, 2)), (0, (3, 2, 1, 2)), (0, (6, 1))]

def _fallback(key: str, order: int) -> MethodStyle:
    # crc32, not hash(): stable across processes, so a new method keeps its look.
    h = zlib.crc32(key.encode())
    return MethodStyle(
        key,
        _FALLBACK_COLORS[h % len(_FALLBACK_COLORS)],
        _FALLBACK_MARKERS[(h // 7) % len(_FALLBACK_MARKERS)],
        _FALLBACK_LINES[(h // 49) % len(_FALLBACK_LINES)],
        order,
    )


def method_style(method: str) -> MethodStyle:
    """Style of a base method: its registry entry's, else one derived from its key."""
    spec = METHODS.get(method)
    if spec is not None and spec.style is not None:
        # a field left None (a user's method names only its label, say) is derived from the key
        given = {k: v for k, v in vars(spec.style).items() if v is not None}
        return spec.style if len(given) == len(vars(spec.style)) else replace(_fallback(method, 1000), **given)
    return _fallback(method, 1000)


def _params_text(params: dict) -> str:
    return ", ".join(_PARAM_LABELS.get(k, lambda v, k=k: f"{k}={v}")(v) for k, v in params.items())


def variant_style(method: str, params: dict | None = None, *, compared: tuple[str, ...] = (),
                  given: dict | None = None) -> MethodStyle:
    """Style of ``method`` run with the parameters ``params`` it varies from its defaults.

    Parameters
    ----------
    method : str
        The results table's ``method``.
    params : dict
        The parameters the variant varies (stored with its rows, :func:`paceggm.bench.variants.row_params`).
    compared : tuple of str
        Parameters the figure compares (e.g. ``("solver",)``); the default
        variant's label then names the value it ran with, from ``given``
        ("PACE-GGM (Newton)").
    given : dict, optional
        Every parameter the variant's rows ran with (their ``p_*`` columns,
        :func:`paceggm.bench.variants.row_values`).
    """
    params, given = dict(params or {}), dict(given or {})
    base = method_style(method)
    if method == "paceggm" and len(params) == 1 and next(iter(params.items())) in VARIANTS:
        return VARIANTS[next(iter(params.items()))]
    if params and set(params) <= set(NAMED_TOGETHER) and method.startswith("paceggm"):
        a, b = (params.get(k, given.get(k)) for k in NAMED_TOGETHER)
        if a is not None and b is not None:
            return replace(hyperparameter_style(a, b), label=f"{base.label} ({_params_text(params)})")
    if not params:
        named = [_PARAM_LABELS[c](given[c]) for c in compared if c in given and c in _PARAM_LABELS]
        return replace(base, label=f"{base.label} ({', '.join(named)})") if named else base
    fb = _fallback(variant_label(method, params), base.order + 500)
    return replace(fb, label=f"{base.label} ({_params_text(params)})")


def variant_styles(rows: pd.DataFrame, *, compared: tuple[str, ...] = ()) -> dict[str, MethodStyle]:
    """Every ``variant`` of ``rows`` → its style, from its method and the parameters it varies and ran with."""
    return {v: variant_style(m, p, compared=compared, given=g) for v, (m, p, g) in variants_of(rows).items()}


def hyperparameter_styles(rows: pd.DataFrame) -> dict[str, MethodStyle]:
    """PACE-GGM's (α, β) variants styled by their grid position, the default pair (varying neither) marked."""
    styles = variant_styles(rows)
    for v, (_, params, given) in variants_of(rows[rows["method"] == "paceggm"]).items():
        if all(k in given for k in NAMED_TOGETHER):
            styles[v] = hyperparameter_style(float(given["alpha"]), float(given["beta"]),
                                             default=not set(params) & set(NAMED_TOGETHER))
    return styles


def look(variant: str, looks: dict[str, MethodStyle]) -> MethodStyle:
    """``variant``'s style among ``looks``; a label without rows is a plain method's."""
    return looks[variant] if variant in looks else method_style(variant)


#: α values → colour (light to dark), β values → marker and line style.
_ALPHA_COLORS = {0.1: "#FDB863", 0.3: "#E66101", 0.5: "#5E3C99"}
# markers/lines unlike SSP's (the figure's reference), so grayscale stays unambiguous
_BETA_LOOK = {0.1: ("v", ":"), 0.3: ("o", "-"), 0.5: ("h", (0, (4, 1, 1, 1)))}


def hyperparameter_style(alpha: float, beta: float, *, default: bool = False) -> MethodStyle:
    """Style of one (α, β) pair of the hyperparameter grid: colour by α, marker/line by β; ``default``
    (the rows vary neither) says so in the label."""
    color = _ALPHA_COLORS.get(round(float(alpha), 6))
    if color is None:
        color = mpl.colormaps["viridis"](min(max(float(alpha), 0.0), 1.0))
        color = mpl.colors.to_hex(color)
    marker, line = _BETA_LOOK.get(round(float(beta), 6), ("d", "-."))
    order = 100 + int(round(float(alpha) * 100)) * 1000 + int(round(float(beta) * 100))
    label = f"α={alpha:g}, β={beta:g}" + (" (default)" if default else "")
    return MethodStyle(label, color, marker, line, order)


def variant_order(variants, looks: dict[str, MethodStyle] | None = None) -> list[str]:
    """Variants sorted into legend order (their style's order, then label)."""
    looks = looks or {}
    return sorted(set(variants), key=lambda v: (look(v, looks).order, v))


def metric_label(metric: str) -> str:
    return METRIC_LABELS.get(metric, metric)


def dataset_label(dataset: str, width: int = 14) -> str:
    """Panel title of a data set, wrapped so it fits a narrow column."""
    return "\n".join(textwrap.wrap(dataset.replace("_", " "), width)) or dataset


#: Matplotlib settings for column-width figures: small but legible fonts.
RC = {
    "font.size": 7,
    "axes.titlesize": 7,
    "axes.labelsize": 7,
    "legend.fontsize": 7,
    "xtick.labelsize": 6,
    "ytick.labelsize": 6,
    "lines.linewidth": 1.1,
    "lines.markersize": 3.5,
    "axes.linewidth": 0.6,
    "grid.linewidth": 0.4,
    "grid.alpha": 0.5,
    "savefig.dpi": 200,
    "pdf.fonttype": 42,  # TrueType in PDFs: editable text, accepted by publishers
    "ps.fonttype": 42,
    "axes.spines.top": False,
    "axes.spines.right": False,
}

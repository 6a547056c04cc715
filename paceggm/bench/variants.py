"""A variant: a method and the parameters that set its rows apart, decided once, when its cell is made.

When :func:`paceggm.bench.cells.expand` makes a cell, :func:`varied` takes the
parameters it runs with that differ from its method's defaults *then*
(:func:`paceggm.bench.methods.method_defaults`), and :func:`label` names it
``method[k=v,…]`` (:func:`paceggm.bench.cells.variant_label`). The cell's row
stores both, as ``varies`` and ``label`` (:mod:`paceggm.bench.schema`).
Summaries and figures read them back (:func:`row_params`, :func:`row_labels`)
and select and style rows by them and the ``p_*`` columns, never by today's
classes: a default changed later neither renames nor regroups a stored row.
A label is a display key and is never parsed back.

Rows stored before they carried their variant (every committed table) are read
against the defaults they were computed with, recorded here
(:data:`DEFAULTS_OF_UNLABELLED_ROWS`).

>>> varied("paceggm", {"alpha": 0.3, "beta": 0.5, "solver": "ipm", "use_components": True})
{'solver': 'ipm'}
>>> label("paceggm", {"alpha": 0.1, "beta": 0.5, "solver": "newton"})
'paceggm[alpha=0.1,beta=0.5]'
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping

import pandas as pd

from paceggm.bench.cells import variant_label
from paceggm.bench.schema import LABEL, PARAM_PREFIX, VARIES

__all__ = ["DEFAULTS_OF_UNLABELLED_ROWS", "NAMED_TOGETHER", "label", "label_of", "row_labels", "row_params",
           "row_values", "stored_varies", "varied", "variants_of"]

#: Parameters named together whenever one of them differs from its default: α and β split one
#: budget, so a variant is one point of the (α, β) grid.
NAMED_TOGETHER = ("alpha", "beta")

_COMMON = {"assume_centered": True, "mean_fraction": 0.1, "noise": "fast"}
_PACE = {"alpha": 0.3, "beta": 0.5, "max_rounds": None, "solver": "newton", "use_components": True,
         "solver_options": None}
#: The registered methods' defaults (registry pins over class defaults) when rows did not yet store
#: their variant: what such a row's ``p_*`` columns are compared with. A record of that time, not a
#: second home of today's defaults, which may move on.
DEFAULTS_OF_UNLABELLED_ROWS: dict[str, dict] = {
    "paceggm": {**_PACE, "sampler": "gumbel", "forced_pairs": None, "forced_fraction": 0.5, **_COMMON},
    "paceggm_regression": {**_PACE, "failure_prob": 0.05, "measure_target_first": False, "target_fraction": 0.5,
                           "noise": "fast"},
    "adaptivecov": {"failure_prob": 0.1, **_COMMON},
    "adassp": {"failure_prob": 0.05, "noise": "fast"},
    **{key: dict(_COMMON) for key in ("ssp", "ssp_projected", "ssp_tight", "gausscov", "separatecov", "diagonal")},
}


def _missing(value) -> bool:
    return value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value))


def _plain(value):
    """A Python scalar for a table's value (numpy / pandas scalars compare and print as Python's)."""
    return value.item() if hasattr(value, "item") else value


def _same(value, default) -> bool:
    if isinstance(default, bool) or isinstance(value, bool):
        return bool(value) == bool(default)
    if isinstance(default, (int, float)) and isinstance(value, (int, float)):
        return float(value) == float(default)
    return str(value) == str(default)


def varied(method: str, params: Mapping, defaults: Mapping | None = None) -> dict:
    """The parameters of ``params`` that differ from ``defaults`` (a missing value is the default).

    ``defaults``: ``method``'s defaults now (:func:`paceggm.bench.methods.method_defaults`),
    which is right when a cell is made, and only then.
    """
    if defaults is None:
        from paceggm.bench.methods import method_defaults

        defaults = method_defaults(method)
    given = {k: _plain(v) for k, v in params.items() if not _missing(v)}
    out = {k: v for k, v in given.items() if k not in defaults or not _same(v, defaults[k])}
    if any(k in out for k in NAMED_TOGETHER):
        for k in NAMED_TOGETHER:
            value = given.get(k, defaults.get(k))
            if not _missing(value):
                out.setdefault(k, value)
    return dict(sorted(out.items()))


def label(method: str, params: Mapping, defaults: Mapping | None = None) -> str:
    """The display label of ``method`` run with ``params``: its name and the parameters it varies."""
    return variant_label(method, varied(method, params, defaults))


def _param_cols(df: pd.DataFrame) -> list[str]:
    return [c for c in df.columns if c.startswith(PARAM_PREFIX)]


def row_values(df: pd.DataFrame) -> pd.Series:
    """Per row, the parameters it was run with (a dict, from its ``p_*`` columns; missing ones left out)."""
    cols = _param_cols(df)
    return pd.Series([{c[len(PARAM_PREFIX):]: _plain(v) for c, v in zip(cols, values) if not _missing(v)}
                      for values in zip(*(df[c] for c in cols))] if cols else [{} for _ in range(len(df))],
                     index=df.index, dtype=object)


def _stored(df: pd.DataFrame, column: str) -> list:
    """``column``'s stored values, ``None`` where a row has none (written before it existed)."""
    if column not in df.columns:
        return [None] * len(df)
    return [v if isinstance(v, str) and v else None for v in df[column]]


def _unlabelled(df: pd.DataFrame, keep) -> dict:
    """(label, varies) of the rows without a stored variant, from their ``p_*`` columns and the recorded defaults."""
    cols = _param_cols(df)
    memo: dict = {}
    out = {}
    for i, (keep_row, values) in enumerate(zip(keep, zip(df["method"], *(df[c] for c in cols)))):
        if keep_row:
            continue
        key = tuple(None if _missing(v) else v for v in values)
        if key not in memo:
            method = key[0]
            params = varied(method, {c[len(PARAM_PREFIX):]: v for c, v in zip(cols, key[1:])},
                            DEFAULTS_OF_UNLABELLED_ROWS.get(method, {}))
            memo[key] = (variant_label(method, params), params)
        out[i] = memo[key]
    return out


def stored_varies(row: Mapping) -> dict:
    """What one stored row (a mapping with ``method`` and ``params``) varies: its ``varies``, or, for an
    older row, its ``params`` against the recorded defaults."""
    stored = row.get(VARIES)
    if isinstance(stored, str) and stored:
        return json.loads(stored)
    return varied(row["method"], json.loads(row["params"] or "{}"), DEFAULTS_OF_UNLABELLED_ROWS.get(row["method"], {}))


def row_params(df: pd.DataFrame) -> pd.Series:
    """Per row, the parameters it varies (a dict): stored with it, or, for an older row, from its ``p_*`` columns."""
    stored = _stored(df, VARIES)
    older = _unlabelled(df, [s is not None for s in stored])
    return pd.Series([json.loads(s) if s is not None else older[i][1] for i, s in enumerate(stored)],
                     index=df.index, dtype=object)


def row_labels(df: pd.DataFrame) -> pd.Series:
    """Per row, its display label: stored with it, or, for an older row, from its ``p_*`` columns."""
    stored = _stored(df, LABEL)
    older = _unlabelled(df, [s is not None for s in stored])
    return pd.Series([s if s is not None else older[i][0] for i, s in enumerate(stored)], index=df.index, dtype=object)


def variants_of(df: pd.DataFrame) -> dict[str, tuple[str, dict, dict]]:
    """Every ``variant`` of ``df`` → (method, the parameters it varies, the parameters it ran with), first row's."""
    if not len(df):
        return {}
    first = ~df["variant"].duplicated()
    rows = df[first]
    return {v: (m, p, g) for v, m, p, g in zip(rows["variant"], rows["method"], row_params(rows), row_values(rows))}


def label_of(df: pd.DataFrame, method: str, params: Mapping) -> str | None:
    """The ``variant`` of ``df``'s rows of ``method`` run with ``params`` and otherwise its defaults, if any.

    Read from the rows (their ``p_*`` columns and what they vary), so it is the
    name the table gives, whatever today's defaults.
    """
    rows = df[df["method"] == method] if len(df) else df
    if not len(rows):
        return None
    for v, p, g in zip(rows["variant"], row_params(rows), row_values(rows)):
        if set(p) <= set(params) and all(k in g and _same(g[k], value) for k, value in params.items()):
            return v
    return None

"""A variant: a method and the parameters that set its rows apart, read from the ``p_*`` columns.

Figures and summaries select and style rows by these parameters. The label
(``method[k=v,…]``, built by :func:`paceggm.bench.cells.variant_label`) is
computed here, once, from the parameters that differ from the method's
defaults (:func:`paceggm.bench.methods.method_defaults`); it is a display key
and is never parsed back.

>>> varied("paceggm", {"alpha": 0.3, "beta": 0.5, "solver": "ipm", "use_components": True})
{'solver': 'ipm'}
>>> label("paceggm", {"alpha": 0.1, "beta": 0.5, "solver": "newton"})
'paceggm[alpha=0.1,beta=0.5]'
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import pandas as pd

from paceggm.bench.cells import variant_label
from paceggm.bench.methods import method_defaults
from paceggm.bench.schema import PARAM_PREFIX

__all__ = ["NAMED_TOGETHER", "label", "row_params", "varied", "variants_of"]

#: Parameters named together whenever one of them differs from its default: α and β split one
#: budget, so a variant is one point of the (α, β) grid.
NAMED_TOGETHER = ("alpha", "beta")


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


def varied(method: str, params: Mapping) -> dict:
    """The parameters of ``params`` that differ from ``method``'s defaults (a missing value is the default)."""
    defaults = method_defaults(method)
    given = {k: _plain(v) for k, v in params.items() if not _missing(v)}
    out = {k: v for k, v in given.items() if k not in defaults or not _same(v, defaults[k])}
    if any(k in out for k in NAMED_TOGETHER):
        for k in NAMED_TOGETHER:
            value = given.get(k, defaults.get(k))
            if not _missing(value):
                out.setdefault(k, value)
    return out


def label(method: str, params: Mapping) -> str:
    """The display label of ``method`` run with ``params``: its name and the parameters it varies."""
    return variant_label(method, varied(method, params))


def row_params(df: pd.DataFrame) -> pd.Series:
    """Per row, the parameters it varies (a dict), from ``method`` and the ``p_*`` columns."""
    cols = [c for c in df.columns if c.startswith(PARAM_PREFIX)]
    memo: dict = {}
    out = []
    for values in zip(df["method"], *(df[c] for c in cols)):
        key = tuple(None if _missing(v) else v for v in values)
        if key not in memo:
            memo[key] = varied(key[0], {c[len(PARAM_PREFIX):]: v for c, v in zip(cols, key[1:])})
        out.append(memo[key])
    return pd.Series(out, index=df.index, dtype=object)


def variants_of(df: pd.DataFrame) -> dict[str, tuple[str, dict]]:
    """Every ``variant`` label of ``df`` → (method, the parameters it varies), first row's."""
    if not len(df):
        return {}
    params = row_params(df)
    first = ~df["variant"].duplicated()
    return {v: (m, p) for v, m, p in zip(df.loc[first, "variant"], df.loc[first, "method"], params[first])}

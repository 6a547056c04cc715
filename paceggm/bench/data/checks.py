"""What every copy of a data set must hold, whatever its source: the registry's ``check`` block.

A raw file is checked by the SHA-256 of its bytes before it is parsed (:mod:`.sources`); an OpenML
download or cache has no such checksum, and two sources of one data set (a raw file and
OpenML) never have the same bytes. So every table, from any source, is also checked after its
columns are named and selected, against ``check`` in the data set's YAML::

    check:
      rows: 48842                 # rows of the table
      source_columns: 260         # columns of the table as served (OpenML-only data sets)
      columns: [age, fnlwgt, …]   # the kept columns, in order
      sha256: 5f0c…               # of the kept columns' values (table_digest)

Each field is checked where recorded. The digest covers the kept columns' names and float64
values (missing values as one NaN), so it is the same for a raw file and an OpenML copy of the
same data, and different for any other; it is taken in the order of ``columns``, whatever order a
source serves them in. Columns a source lacks (``openml.absent``) are left out of both.
``python -m paceggm.bench.data check`` prints the block of each data set as loaded here.
"""

from __future__ import annotations

import hashlib
import warnings

import numpy as np
import pandas as pd
from omegaconf import DictConfig

from .sources import DatasetFileError

__all__ = ["UnverifiedDataWarning", "check_table", "table_check", "table_digest"]


class UnverifiedDataWarning(UserWarning):
    """A table whose registry entry records no content hash: only its shape could be checked."""


def _comparable(cfg: DictConfig, kept: pd.DataFrame) -> pd.DataFrame:
    absent = {str(c) for c in ((cfg.get("openml") or {}).get("absent") or [])}
    return kept.loc[:, [c for c in kept.columns if str(c) not in absent]]


def table_digest(kept: pd.DataFrame) -> str:
    """SHA-256 of a kept table: column names, shape and float64 values (NaN canonical, little-endian)."""
    values = np.ascontiguousarray(kept.to_numpy(dtype=np.float64))
    values = np.where(np.isnan(values), np.nan, values).astype("<f8")
    h = hashlib.sha256()
    h.update("\x1f".join(str(c) for c in kept.columns).encode())
    h.update(f"\n{values.shape[0]}x{values.shape[1]}\n".encode())
    h.update(values.tobytes())
    return h.hexdigest()


def table_check(cfg: DictConfig, source: pd.DataFrame, kept: pd.DataFrame) -> dict:
    """The ``check`` block of a table as loaded (what ``python -m paceggm.bench.data check`` prints)."""
    comparable = _comparable(cfg, kept)
    return {"rows": int(source.shape[0]), "columns": [str(c) for c in comparable.columns],
            "sha256": table_digest(comparable)}


def check_table(cfg: DictConfig, source: pd.DataFrame, kept: pd.DataFrame, where: str) -> None:
    """Refuse a table that is not the registered data set.

    Raises
    ------
    DatasetFileError
        Naming ``where`` (the file or cache the table came from), what differs, and what to do.
    """
    spec = cfg.get("check")
    if spec is None:
        return
    fix = ("the file is not the documented data set (truncated, edited or another data set): delete it and "
           "download it again, or replace it with a fresh copy (datasets/README.md)")
    rows = spec.get("rows")
    if rows is not None and source.shape[0] != int(rows):
        raise DatasetFileError(f"{where}: {source.shape[0]:,} rows, the registry ({cfg.name}) lists {int(rows):,}; {fix}")
    n_source = spec.get("source_columns")
    if n_source is not None and source.shape[1] != int(n_source):
        raise DatasetFileError(f"{where}: {source.shape[1]:,} columns, the registry ({cfg.name}) lists "
                               f"{int(n_source):,}; {fix}")
    comparable = _comparable(cfg, kept)
    columns = spec.get("columns")
    if columns is not None:
        got, want = [str(c) for c in comparable.columns], [str(c) for c in columns]
        if sorted(got) != sorted(want):
            diff = sorted(set(want) ^ set(got))[:5]
            raise DatasetFileError(f"{where}: kept columns differ from the registry's ({cfg.name}): {len(got)} "
                                   f"instead of {len(want)}, differing in {diff}; {fix}")
        # a source may serve the columns in another order (OpenML puts the label last): hash in the registry's
        comparable = comparable.set_axis(got, axis=1)[want]
    digest = spec.get("sha256")
    if digest is None:
        warnings.warn(f"{where}: {cfg.name}'s registry entry records no content hash, so only its shape is checked; "
                      "record one from a verified copy with `python -m paceggm.bench.data check --datasets "
                      f"{cfg.name}`", UnverifiedDataWarning, stacklevel=2)
    elif table_digest(comparable) != str(digest):
        raise DatasetFileError(f"{where}: the content of {cfg.name}'s kept columns differs from the registry's "
                               f"(SHA-256 {table_digest(comparable)[:12]}…, registry {str(digest)[:12]}…); {fix}")

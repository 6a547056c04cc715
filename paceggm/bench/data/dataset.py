"""The :class:`Dataset` record and :func:`load_dataset`, the one entry point of the harness."""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .checks import check_table
from .preprocess import PREPROCESSINGS, complete_nonconstant, preprocess, select_columns
from .registry import get_config, resolve_data_dir
from .sources import encode_columns, load_frame, source_files


# eq=False: equality of records holding arrays would be ambiguous; identity is what the cache gives.
@dataclass(frozen=True, eq=False)
class Dataset:
    """A preprocessed data set: the matrix, its columns, and what was done to it.

    Attributes
    ----------
    name : str
        Registry key (or ``"synthetic"``).
    X : ndarray of shape (n, d)
        Float64, read-only; every kept column, the regression target included.
    columns : tuple of str
        Names of the columns of ``X``.
    target : str or None
        The regression target's name within ``columns``, or None.
    label : str or None
        The class label's name within ``columns`` for a classification data set kept whole
        (e.g. spambase's ``spam``), or None. Only ``drop_target`` reads it.
    preprocessing : {"paper", "strict", "none"}
    bound : float
        The declared coordinate bound ``B`` (1.0). It truly holds only if ``max_abs <= bound``,
        which ``strict`` guarantees and ``paper`` does not.
    max_abs : float
        Largest ``|x_ij|`` after preprocessing.
    covariance : ndarray or None
        The true population covariance for synthetic data, else None.
    source : str
        Where the table came from (file paths, OpenML id and cache file, builtin), for provenance.
    """

    name: str
    X: np.ndarray
    columns: tuple[str, ...]
    target: str | None
    preprocessing: str
    bound: float
    max_abs: float
    covariance: np.ndarray | None = None
    source: str = ""
    label: str | None = None

    @property
    def n(self) -> int:
        return int(self.X.shape[0])

    @property
    def d(self) -> int:
        return int(self.X.shape[1])

    def features_and_target(self) -> tuple[np.ndarray, np.ndarray]:
        """``(X without the target column, the target column)``; ValueError if there is no target."""
        if self.target is None:
            raise ValueError(f"data set {self.name!r} has no regression target")
        j = self.columns.index(self.target)
        return np.delete(self.X, j, axis=1), self.X[:, j].copy()


def _readonly(X: np.ndarray) -> np.ndarray:
    X = np.ascontiguousarray(X, dtype=np.float64)
    X.setflags(write=False)  # shared by every caller of the cache: nobody may modify it in place
    return X


def load_table(name: str, data_dir, *, check: bool = True):
    """``(table, kept columns, source)`` of a registered data set, checked against its registry entry.

    ``table`` is the source's table with canonical column names, ``kept`` its
    selected numeric columns (missing values still present), ``source`` where it
    came from. With ``check``, a table that is not the registered data set is
    refused (:func:`paceggm.bench.data.checks.check_table`).
    """
    cfg = get_config(name)
    table, source = load_frame(cfg, Path(data_dir))
    kept = select_columns(cfg, encode_columns(cfg, table))
    if check:
        check_table(cfg, table, kept, where=source_files(source))
    return table, kept, source


@functools.lru_cache(maxsize=64)
def _load_cached(name: str, preprocessing: str, data_dir: str) -> Dataset:
    cfg = get_config(name)
    _table, kept, source = load_table(name, data_dir)
    frame = complete_nonconstant(kept)
    target, label = cfg.get("target"), cfg.get("label")
    if target is not None and target not in frame.columns:
        raise ValueError(f"{name}: regression target {target!r} was dropped (constant or not numeric)")
    if label is not None and label not in frame.columns:
        raise ValueError(f"{name}: class label {label!r} is not a kept column")
    X = preprocess(frame.to_numpy(dtype=np.float64), preprocessing)
    return Dataset(
        name=name,
        X=_readonly(X),
        columns=tuple(str(c) for c in frame.columns),
        target=None if target is None else str(target),
        preprocessing=preprocessing,
        bound=1.0,
        max_abs=float(np.abs(X).max()),
        source=source,
        label=None if label is None else str(label),
    )


def load_dataset(name: str, *, preprocessing: str = "paper",
                 data_dir: str | os.PathLike | None = None) -> Dataset:
    """Load a registered data set by name, preprocessed.

    Parameters
    ----------
    name : str
        A key of :func:`list_datasets` (the 14 data sets of the publication or ``breast_cancer_sklearn``).
    preprocessing : {"paper", "strict", "none"}, default="paper"
        See :mod:`paceggm.bench.data.preprocess`.
    data_dir : path-like, optional
        Folder with the raw files; default ``$PACEGGM_DATA_DIR``, else ``conf/paths`` ``data_dir``.

    Returns
    -------
    Dataset
        Cached per process (name, preprocessing, data directory): a sweep worker reads each
        file once. The arrays are read-only.

    Raises
    ------
    ValueError
        Unknown name (the message lists the valid ones) or preprocessing.
    DatasetUnavailableError
        No file, no cached copy, no network: the message says where to put the file.
    DatasetFileError
        A file exists but is corrupt or truncated: the message names it.

    Examples
    --------
    >>> from paceggm.bench.data import load_dataset
    >>> ds = load_dataset("breast_cancer_sklearn", preprocessing="strict")
    >>> ds.X.shape, ds.max_abs
    ((569, 30), 1.0)
    """
    get_config(name)  # unknown names fail before anything else
    if preprocessing not in PREPROCESSINGS:
        raise ValueError(f"preprocessing must be one of {PREPROCESSINGS}, got {preprocessing!r}")
    return _load_cached(name, preprocessing, str(resolve_data_dir(data_dir)))


def clear_cache() -> None:
    """Forget every loaded data set (tests; or after replacing files in the data directory)."""
    _load_cached.cache_clear()

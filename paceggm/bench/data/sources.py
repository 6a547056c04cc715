"""Where a data set's table comes from: raw files in the data directory, the OpenML cache, OpenML,
or scikit-learn's bundled copy.

Every source returns a ``pandas.DataFrame`` with the registry's canonical column names, so the
preprocessing sees the same table whichever way the file arrived (plain or gzip, local or OpenML).

Each raw file's entry names where it is downloaded from (``raw.urls``, with ``raw.edits`` where the
download needs one before it matches) and its checksum (``raw.sha256``: the SHA-256 of the file's
decompressed bytes). A file is checked before it is parsed: a different file is refused with its
name, never silently read, and a missing one is reported with its address. OpenML goes through the ``openml`` client exactly as
the user configured it (its cache directory, retry policy and server are left alone), and the
client's cache is the only copy of a download: this module writes no file.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import warnings
import zlib
from pathlib import Path

import numpy as np
import pandas as pd
from omegaconf import DictConfig, OmegaConf

from .registry import DATA_DIR_ENV, PYTHON_SOURCE, registered_frame

OFFLINE_ENV = "PACEGGM_OFFLINE"


class DatasetUnavailableError(FileNotFoundError):
    """No local file, no cached copy and no OpenML download for a data set.

    ``hint`` is one line saying what is missing and where to put it (what a sweep prints per data set).
    """

    def __init__(self, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.hint = hint or message


class DatasetFileError(ValueError):
    """A data file exists but cannot be read as documented (corrupt, truncated, wrong layout)."""


# --------------------------------------------------------------------------- column names

def column_names(spec) -> list[str] | None:
    """Expand the registry's ``column_names``: a list, or ``{then_first, pattern, count, then}``."""
    if spec is None:
        return None
    spec = OmegaConf.to_container(spec) if isinstance(spec, DictConfig) or OmegaConf.is_list(spec) else spec
    if isinstance(spec, list):
        return [str(c) for c in spec]
    names = [str(c) for c in spec.get("then_first", [])]
    names += [spec["pattern"].format(i=i) for i in range(int(spec["count"]))]
    names += [str(c) for c in spec.get("then", [])]
    return names


# --------------------------------------------------------------------------- raw files

def _candidates(data_dir: Path, file_name: str) -> list[Path]:
    """The file as registered, and its gzip / plain twin (``x.csv.gz`` <-> ``x.csv``)."""
    if file_name.endswith(".gz"):
        names = [file_name, file_name[:-3]]
    else:
        names = [file_name, file_name + ".gz"]
    return [data_dir / n for n in names]


def find_raw_files(cfg: DictConfig, data_dir: Path) -> list[Path] | None:
    """The raw files of ``cfg`` in ``data_dir`` (plain or gzip), or None if any is missing."""
    raw = cfg.get("raw")
    if raw is None:
        return None
    found = []
    for file_name in raw.files:
        hits = [p for p in _candidates(data_dir, str(file_name)) if p.is_file()]
        if not hits:
            return None
        found.append(hits[0])
    return found


_FRESH_COPY = "(its address and checksum: raw.urls and raw.sha256 in its registry file; datasets/README.md)"


def _read_text(path: Path, encoding: str, sha256: str | None = None) -> str:
    try:
        if path.suffix == ".gz":
            with gzip.open(path, "rb") as fh:
                data = fh.read()
        else:
            data = path.read_bytes()
    except (OSError, EOFError, zlib.error) as exc:
        raise DatasetFileError(
            f"{path}: corrupt or truncated file ({type(exc).__name__}: {exc}); replace it with a fresh copy "
            + _FRESH_COPY
        ) from exc
    if sha256 is not None:
        got = hashlib.sha256(data).hexdigest()
        if got != str(sha256).lower():
            raise DatasetFileError(
                f"{path}: checksum mismatch: the SHA-256 of its content is {got}, the registry lists {sha256}; "
                f"the file is damaged or not the documented one: replace it with a fresh copy " + _FRESH_COPY
            )
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as exc:
        raise DatasetFileError(f"{path}: not {encoding} text ({exc}); replace it with a fresh copy "
                               + _FRESH_COPY) from exc


def _read_one(path: Path, raw: DictConfig, skiprows: int, sha256: str | None = None) -> pd.DataFrame:
    encoding = str(raw.get("encoding", "utf-8"))
    text = _read_text(path, encoding, sha256)
    fmt = str(raw.get("format", "csv"))
    try:
        if fmt == "arff":
            from scipy.io import arff

            data, _meta = arff.loadarff(io.StringIO(text))
            frame = pd.DataFrame(data)
            for col in frame.columns:  # nominal ARFF attributes arrive as bytes
                if frame[col].dtype == object:
                    frame[col] = frame[col].str.decode("utf-8")
            return frame
        if fmt != "csv":
            raise DatasetFileError(f"{path}: unknown format {fmt!r} in the registry (csv or arff)")
        na_values = list(raw.get("na_values") or [])
        return pd.read_csv(
            io.StringIO(text),
            sep=str(raw.get("sep", ",")),
            header=0 if raw.get("header", True) else None,
            skiprows=skiprows or None,
            skipinitialspace=bool(raw.get("skipinitialspace", False)),
            na_values=na_values or None,
            keep_default_na=True,
        )
    except DatasetFileError:
        raise
    except Exception as exc:  # pandas / scipy parser errors on a damaged file
        raise DatasetFileError(f"{path}: cannot be parsed as {fmt} ({type(exc).__name__}: {exc})") from exc


def read_raw(cfg: DictConfig, paths: list[Path]) -> pd.DataFrame:
    """Read (and concatenate) the raw files of ``cfg``, name the columns, check the row count."""
    raw = cfg.raw
    skiprows = list(raw.get("skiprows") or [0] * len(paths))
    checksums = list(raw.get("sha256") or [None] * len(paths))
    if len(checksums) != len(paths):
        raise ValueError(f"{cfg.name}: raw.sha256 lists {len(checksums)} checksums for {len(paths)} files")
    frames = []
    names = column_names(raw.get("column_names"))
    for path, skip, sha256 in zip(paths, skiprows, checksums):
        frame = _read_one(path, raw, int(skip), sha256)
        if raw.get("drop_empty_columns", False):
            frame = frame.loc[:, frame.notna().any()]
        if names is not None:
            if frame.shape[1] != len(names):
                raise DatasetFileError(
                    f"{path}: {frame.shape[1]} columns, the registry ({cfg.name}) expects {len(names)}; "
                    "the file is damaged or not the documented one"
                )
            frame.columns = names
        frames.append(frame)
    frame = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
    expected = raw.get("rows")
    if expected is not None and len(frame) != int(expected):
        raise DatasetFileError(
            f"{', '.join(map(str, paths))}: {len(frame)} data rows, expected {int(expected)} for {cfg.name}; "
            "the file is truncated or not the documented one"
        )
    return frame


def downloads(cfg: DictConfig) -> list[str]:
    """Where each raw file of ``cfg`` is downloaded from: ``"<file> from <url>"``, with its edit if it needs one."""
    raw = cfg.get("raw")
    if raw is None or not raw.get("urls"):
        return []
    edits = list(raw.get("edits") or [None] * len(raw.files))
    out = []
    for name, url, edit in zip(raw.files, raw.urls, edits):
        plain = str(name).removesuffix(".gz")
        out.append(f"{plain} from {url}" + (f", then {edit}" if edit else ""))
    return out


# --------------------------------------------------------------------------- OpenML

def _offline() -> bool:
    return os.environ.get(OFFLINE_ENV, "").strip().lower() not in ("", "0", "false", "no")


def fetch_openml(openml_id: int) -> tuple[pd.DataFrame, str]:
    """The full OpenML table (features and target) through the ``openml`` client.

    The client is used as configured (``~/.config/openml/config``, ``$OPENML_CACHE_DIR``): a data
    set it has downloaded once loads from its cache without the network. Nothing of the client's
    global configuration is changed, and nothing is written here.
    """
    if _offline():
        raise ConnectionError(f"${OFFLINE_ENV} is set: no download attempted")
    import openml

    dataset = openml.datasets.get_dataset(
        int(openml_id), download_data=True, download_qualities=False, download_features_meta_data=False
    )
    frame, *_ = dataset.get_data(dataset_format="dataframe")
    cached = getattr(dataset, "parquet_file", None) or getattr(dataset, "data_file", None)
    where = f"{cached}" if cached else f"openml client cache {openml.config.get_cache_directory()}"
    if not isinstance(frame, pd.DataFrame):
        raise DatasetFileError(f"{where} (OpenML {openml_id}): expected a data frame, got {type(frame).__name__}")
    return frame, where


def source_files(source: str) -> str:
    """The file(s) a table came from, out of :func:`load_frame`'s description of its source."""
    kind, _, rest = source.partition(":")
    if kind == "file":
        return rest.replace(",", ", ")
    if kind == "openml":
        openml_id, _, where = rest.partition(":")
        return f"{where} (OpenML {openml_id})"
    return source


def openml_frame(cfg: DictConfig, frame: pd.DataFrame) -> pd.DataFrame:
    """Give an OpenML table the registry's canonical column names.

    ``openml.columns`` is ``same`` (keep OpenML's names), ``positional`` (OpenML's columns are the
    raw file's, in the same order, minus ``openml.absent``) or an explicit list of canonical names
    in OpenML's column order. The column count is checked in the last two cases.
    """
    spec = cfg.openml
    mode = spec.get("columns", "same")
    if isinstance(mode, str) and mode == "same":
        return frame
    absent = set(spec.get("absent") or [])
    if isinstance(mode, str):
        if mode != "positional":
            raise ValueError(f"{cfg.name}: openml.columns must be 'same', 'positional' or a list, got {mode!r}")
        names = column_names(cfg.raw.get("column_names")) if cfg.get("raw") is not None else None
        if names is None:
            raise ValueError(f"{cfg.name}: positional OpenML columns need raw.column_names in the registry")
        names = [n for n in names if n not in absent]
    else:
        names = [str(n) for n in mode]
    if frame.shape[1] != len(names):
        raise DatasetFileError(
            f"OpenML {spec.id} ({cfg.name}): {frame.shape[1]} columns, the registry expects {len(names)}"
        )
    frame = frame.copy()
    frame.columns = names
    if absent:
        warnings.warn(f"{cfg.name}: the OpenML copy lacks column(s) {sorted(absent)}; they are left out",
                      stacklevel=3)
    return frame


# --------------------------------------------------------------------------- builtin

def builtin_frame(cfg: DictConfig) -> pd.DataFrame:
    kind = str(cfg.builtin)
    if kind == PYTHON_SOURCE:  # a data set a user module registered with its table's function
        return registered_frame(cfg)
    if kind == "sklearn_breast_cancer":
        from sklearn.datasets import load_breast_cancer

        return load_breast_cancer(as_frame=True).data
    raise ValueError(f"{cfg.name}: unknown builtin source {kind!r}")


# --------------------------------------------------------------------------- dispatch

def load_frame(cfg: DictConfig, data_dir: Path) -> tuple[pd.DataFrame, str]:
    """The raw table of ``cfg`` and a description of where it came from.

    Order: builtin; raw files in ``data_dir``; the OpenML cache; an OpenML download. If none
    works, one :class:`DatasetUnavailableError` says where to put the file or how to download it.
    """
    if cfg.get("builtin") is not None:
        return builtin_frame(cfg), f"builtin:{cfg.builtin}"
    paths = find_raw_files(cfg, data_dir)
    if paths is not None:
        return read_raw(cfg, paths), "file:" + ",".join(map(str, paths))
    spec = cfg.get("openml")
    reason = short = "no OpenML copy is registered"
    if spec is not None:
        try:
            frame, where = fetch_openml(int(spec.id))
            return openml_frame(cfg, frame), f"openml:{int(spec.id)}:{where}"
        except DatasetFileError:
            raise
        except Exception as exc:  # no network, server down, client missing: all mean "not available"
            reason = f"OpenML download of id {int(spec.id)} failed ({type(exc).__name__}: {exc})"
            short = f"OpenML {int(spec.id)}: {type(exc).__name__}"
    wanted = " + ".join(str(f) for f in cfg.raw.files) if cfg.get("raw") is not None else None
    where = []
    if wanted:
        fetched = downloads(cfg)
        where.append(f"put {wanted} (gzip or plain) in the data directory {data_dir} "
                     f"(or point ${DATA_DIR_ENV} / data_dir= at the folder holding it)"
                     + (f"; download {'; '.join(fetched)}" if fetched else ""))
    if spec is not None:
        where.append(f"run once with network access to download it from OpenML "
                     f"(https://www.openml.org/d/{int(spec.id)}; kept in the openml client's cache)")
    todo = []
    if wanted:
        todo.append(f"put the file(s) there (gzip or plain; addresses: raw.urls in conf/dataset/{cfg.name}.yaml) "
                    f"or point ${DATA_DIR_ENV} / data_dir=… at the folder holding it")
    if spec is not None:
        todo.append(f"download OpenML {int(spec.id)} once with network access (kept in the openml client's cache)")
    missing = f"no {wanted} in {data_dir}" if wanted else "no local copy (only on OpenML)"
    raise DatasetUnavailableError(
        f"data set {cfg.name!r} is not available: "
        + (f"no {wanted} in {data_dir}; " if wanted else "")
        + f"{reason}. To fix: " + "; or ".join(where) + ". See datasets/README.md.",
        hint=f"{missing}; {short}. To fix: " + "; or ".join(todo),
    )


def encode_columns(cfg: DictConfig, frame: pd.DataFrame) -> pd.DataFrame:
    """Apply ``raw.encode`` value maps (e.g. diagnosis M/B -> 1/0); unknown values are an error."""
    raw = cfg.get("raw")
    encode = raw.get("encode") if raw is not None else None
    if not encode:
        return frame
    frame = frame.copy()
    for col, mapping in encode.items():
        if col not in frame.columns:
            continue
        mapping = {str(k): float(v) for k, v in mapping.items()}
        values = frame[col].astype(str).str.strip()
        unknown = sorted(set(values) - set(mapping))
        if unknown:
            raise DatasetFileError(f"{cfg.name}: column {col!r} has values {unknown[:5]} outside {sorted(mapping)}")
        frame[col] = values.map(mapping).astype(np.float64)
    return frame

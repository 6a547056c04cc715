"""Data sets for the benchmark: registry (``conf/dataset/``), sources, preprocessing, statistics.

>>> from paceggm.bench.data import load_dataset, list_datasets
>>> ds = load_dataset("breast_cancer_sklearn")          # works offline, no file needed
>>> ds.X.shape
(569, 30)
"""

from importlib import import_module

__all__ = [
    "DATA_DIR_ENV", "PREPROCESSINGS", "Dataset", "DatasetFileError", "DatasetStatistics",
    "DatasetUnavailableError", "clear_cache", "dataset_statistics", "get_config", "list_datasets",
    "load_dataset", "make_synthetic", "resolve_data_dir",
]
_HOME = {"Dataset": ".dataset", "clear_cache": ".dataset", "load_dataset": ".dataset",
         "PREPROCESSINGS": ".preprocess",
         "DATA_DIR_ENV": ".registry", "get_config": ".registry", "list_datasets": ".registry",
         "resolve_data_dir": ".registry",
         "DatasetFileError": ".sources", "DatasetUnavailableError": ".sources",
         "DatasetStatistics": ".stats", "dataset_statistics": ".stats",
         "make_synthetic": ".synthetic"}


def __getattr__(name: str):
    # Lazy, so `python -m paceggm.bench.data` reaches its own check of the `bench` extra
    # before anything imports pandas.
    if name in _HOME:
        return getattr(import_module(_HOME[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

"""Data sets for the benchmark: registry (``conf/dataset/``), sources, preprocessing, statistics.

>>> from paceggm.bench.data import load_dataset, list_datasets
>>> ds = load_dataset("breast_cancer_sklearn")          # works offline, no file needed
>>> ds.X.shape
(569, 30)
"""

from .dataset import Dataset, clear_cache, load_dataset
from .preprocess import PREPROCESSINGS
from .registry import DATA_DIR_ENV, get_config, list_datasets, resolve_data_dir
from .sources import DatasetFileError, DatasetUnavailableError
from .stats import DatasetStatistics, dataset_statistics
from .synthetic import make_synthetic

__all__ = [
    "DATA_DIR_ENV", "PREPROCESSINGS", "Dataset", "DatasetFileError", "DatasetStatistics",
    "DatasetUnavailableError", "clear_cache", "dataset_statistics", "get_config", "list_datasets",
    "load_dataset", "make_synthetic", "resolve_data_dir",
]

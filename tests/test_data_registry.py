"""The data-set registry (conf/dataset) and the public loading API that needs no file."""

import numpy as np
import pytest
from hydra import compose, initialize_config_dir

from paceggm.bench.data import (
    DatasetUnavailableError,
    get_config,
    list_datasets,
    load_dataset,
    resolve_data_dir,
)
from paceggm.bench.data.registry import added_datasets, conf_dir, paper_datasets, repo_root

PAPER_KEYS = set(paper_datasets())
# The publication's eight regression data sets and their targets.
REGRESSION_TARGETS = {"seoul_bike": "Rented Bike Count", "life_expectancy": "Life expectancy",
                      "parkinsons": "motor_UPDRS", "pol": "label", "bank32nh": "class",
                      "ailerons": "class", "communities_crime": "ViolentCrimesPerPop",
                      "ibm": "MonthlyIncome"}


def test_registry_lists_the_fourteen_and_the_embedded_default():
    assert len(paper_datasets()) == 14 == len(PAPER_KEYS)
    assert set(list_datasets()) - set(added_datasets()) == PAPER_KEYS | {"breast_cancer_sklearn"}  # a plugin's aside


@pytest.mark.parametrize("name", sorted(PAPER_KEYS))
def test_every_entry_documents_source_columns_and_published_values(name):
    cfg = get_config(name)
    assert cfg.raw is not None or cfg.openml is not None
    assert cfg.columns.keep is not None
    pub = cfg.published
    for key in ("n", "d", "mean_abs_r", "max_abs_r", "e_off", "eff_rank"):
        assert pub[key] > 0
    assert cfg.target == REGRESSION_TARGETS.get(name)


def test_only_on_openml_entries_have_ids():
    assert get_config("indian_pines").openml.id == 41972
    assert get_config("madeline").openml.id == 41144
    assert get_config("indian_pines").raw is None and get_config("madeline").raw is None


def test_registry_composes_with_hydra():
    with initialize_config_dir(config_dir=str(conf_dir()), version_base=None):
        cfg = compose(config_name="paths/default", overrides=[])
        assert "data_dir" in cfg.paths
        for name in ("adult", "pol"):
            ds = compose(config_name=f"dataset/{name}")
            assert ds.dataset.name == name


def test_unknown_name_lists_valid_names():
    with pytest.raises(ValueError, match="unknown data set 'nope'.*adult.*spambase"):
        load_dataset("nope")


def test_unknown_preprocessing_is_refused():
    with pytest.raises(ValueError, match="preprocessing must be one of"):
        load_dataset("breast_cancer_sklearn", preprocessing="zscore")


def test_data_dir_resolution_order(monkeypatch, tmp_path):
    monkeypatch.delenv("PACEGGM_DATA_DIR", raising=False)
    assert resolve_data_dir() == (repo_root() / "datasets" / "raw").resolve()
    monkeypatch.setenv("PACEGGM_DATA_DIR", str(tmp_path / "env"))
    assert resolve_data_dir() == (tmp_path / "env").resolve()
    assert resolve_data_dir(tmp_path / "arg") == (tmp_path / "arg").resolve()


def test_conf_dir_env_override(monkeypatch, tmp_path):
    monkeypatch.setenv("PACEGGM_CONF_DIR", str(tmp_path))
    with pytest.raises(FileNotFoundError, match="PACEGGM_CONF_DIR"):
        conf_dir()


def test_embedded_default_works_without_file_or_network(monkeypatch, tmp_path):
    monkeypatch.setenv("PACEGGM_OFFLINE", "1")
    ds = load_dataset("breast_cancer_sklearn", data_dir=tmp_path)
    assert ds.X.shape == (569, 30)
    assert ds.target is None and ds.covariance is None
    np.testing.assert_allclose(ds.X.mean(axis=0), 0.0, atol=1e-12)
    with pytest.raises(ValueError, match="no regression target"):
        ds.features_and_target()


def test_loaded_arrays_are_read_only_and_cached():
    a = load_dataset("breast_cancer_sklearn")
    assert load_dataset("breast_cancer_sklearn") is a
    with pytest.raises(ValueError):
        a.X[0, 0] = 0.0


@pytest.mark.parametrize("name", ["indian_pines", "madeline"])
def test_openml_only_data_sets_fail_clearly_offline(name, monkeypatch, tmp_path):
    monkeypatch.setenv("PACEGGM_OFFLINE", "1")
    monkeypatch.setenv("OPENML_CACHE_DIR", str(tmp_path / "cache"))
    with pytest.raises(DatasetUnavailableError, match=r"openml\.org/d/\d+.*datasets/README\.md"):
        load_dataset(name, data_dir=tmp_path)


# ---------------------------------------------------------------- OpenML-only content

#: OpenML-only data sets whose content hash is not recorded yet: no copy could be loaded where the registry
#: was written (no network). This list may only shrink: every other data set records ``check.sha256``.
NOT_YET_HASHED = {"indian_pines", "madeline"}


def test_every_data_set_records_a_content_hash_but_the_listed_openml_only_ones():
    unhashed = {name for name in set(list_datasets()) - set(added_datasets())
                if get_config(name).check.get("sha256") is None}
    assert unhashed == NOT_YET_HASHED
    for name in NOT_YET_HASHED:
        assert get_config(name).raw is None and get_config(name).openml is not None, name


class _Served:
    """What the openml client returns for a data set: ``get_data`` gives its table."""

    def __init__(self, frame):
        self.frame = frame

    def get_data(self, dataset_format="dataframe", **kwargs):
        return self.frame, None, [False] * self.frame.shape[1], list(self.frame.columns)


def _openml_only_registry(tmp_path, frame, monkeypatch, *, sha256: str | None):
    """A registry holding one OpenML-only data set ``tiny`` (its check block as recorded) and a client serving ``frame``."""
    import openml

    entry = {"name": "tiny", "openml": {"id": 999999, "columns": "same"}, "raw": None,
             "columns": {"keep": "numeric", "drop": ["class"]}, "target": None,
             "check": {"rows": 6, "source_columns": 4, "columns": ["a", "b", "c"],
                       **({"sha256": sha256} if sha256 else {})}}
    (tmp_path / "conf" / "dataset").mkdir(parents=True)
    from omegaconf import OmegaConf

    OmegaConf.save(OmegaConf.create(entry), tmp_path / "conf" / "dataset" / "tiny.yaml")
    monkeypatch.setenv("PACEGGM_CONF_DIR", str(tmp_path / "conf"))
    monkeypatch.delenv("PACEGGM_OFFLINE", raising=False)
    monkeypatch.setattr(openml.datasets, "get_dataset", lambda *a, **k: _Served(frame))


def _tiny_frame():
    import pandas as pd

    rng = np.random.default_rng(3)
    frame = pd.DataFrame(rng.normal(size=(6, 3)), columns=["a", "b", "c"])
    frame["class"] = pd.Categorical(["x", "y"] * 3)
    return frame


def test_an_openml_only_copy_is_checked_against_its_content_hash(tmp_path, monkeypatch):
    from paceggm.bench.data.checks import table_digest
    from paceggm.bench.data.dataset import load_table
    from paceggm.bench.data.sources import DatasetFileError

    frame = _tiny_frame()
    digest = table_digest(frame[["a", "b", "c"]])
    _openml_only_registry(tmp_path, frame, monkeypatch, sha256=digest)
    _, kept, source = load_table("tiny", tmp_path)
    assert source.startswith("openml:999999") and list(kept.columns) == ["a", "b", "c"]
    edited = frame.copy()
    edited.iloc[4, 1] += 1e-12  # same shape, one value in its last digits
    import openml

    monkeypatch.setattr(openml.datasets, "get_dataset", lambda *a, **k: _Served(edited))
    with pytest.raises(DatasetFileError, match=r"\(OpenML 999999\): the content of tiny's kept columns differs "
                                               r"from the registry's \(SHA-256 [0-9a-f]{12}…, registry "
                                               + digest[:12]):
        load_table("tiny", tmp_path)


def test_an_openml_only_copy_without_a_recorded_hash_is_loaded_with_a_warning(tmp_path, monkeypatch):
    from paceggm.bench.data.checks import UnverifiedDataWarning
    from paceggm.bench.data.dataset import load_table

    _openml_only_registry(tmp_path, _tiny_frame(), monkeypatch, sha256=None)
    with pytest.warns(UnverifiedDataWarning, match=r"\(OpenML 999999\): tiny's registry entry records no content "
                                                   r"hash, so only its shape is checked"):
        load_table("tiny", tmp_path)

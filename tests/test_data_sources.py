"""Every registered data set names where it comes from and how a copy is checked (conf/dataset/*.yaml)."""

import re

import pytest

from paceggm.bench.data import DatasetUnavailableError, get_config, load_dataset
from paceggm.bench.data.registry import conf_dir
from paceggm.bench.data.sources import downloads

#: The repository's data sets: one registry file each (a plugin's own data sets are the user's to document).
SHIPPED = sorted(path.stem for path in (conf_dir() / "dataset").glob("*.yaml"))

#: Only on OpenML, and no copy could be loaded where the registry was written (no network): their address is
#: OpenML's page, and their content hash is not recorded (a load warns UnverifiedDataWarning).
UNHASHED = {"indian_pines", "madeline"}
SHA256 = re.compile(r"[0-9a-f]{64}")


@pytest.mark.parametrize("name", SHIPPED)
def test_every_data_set_names_an_address(name):
    cfg = get_config(name)
    assert str(cfg.origin).startswith("https://"), name  # the data set's home page
    raw = cfg.get("raw")
    if raw is not None:  # every raw file: a download pinned to a commit, an edit only where one is needed
        assert len(raw.urls) == len(raw.files), name
        assert all(str(u).startswith("https://raw.githubusercontent.com/") for u in raw.urls), name
        assert len(raw.get("edits") or raw.files) == len(raw.files), name
    else:
        assert cfg.get("openml") is not None or cfg.get("builtin") is not None, name


@pytest.mark.parametrize("name", sorted(set(SHIPPED) - UNHASHED))
def test_every_data_set_but_the_listed_ones_records_a_checksum(name):
    cfg = get_config(name)
    raw = cfg.get("raw")
    if raw is not None:  # of each file's bytes, checked before it is parsed
        assert len(raw.sha256) == len(raw.files) and all(SHA256.fullmatch(str(h)) for h in raw.sha256), name
    assert SHA256.fullmatch(str(cfg.check.sha256)), name  # of the kept table, whatever the source


@pytest.mark.parametrize("name", sorted(UNHASHED))
def test_the_unhashed_ones_are_only_on_openml(name):
    cfg = get_config(name)
    assert cfg.raw is None and cfg.openml.id > 0 and cfg.check.get("sha256") is None
    assert cfg.origin == f"https://www.openml.org/d/{cfg.openml.id}"


def test_a_missing_file_is_reported_with_its_address(tmp_path, monkeypatch):
    monkeypatch.setenv("PACEGGM_OFFLINE", "1")
    with pytest.raises(DatasetUnavailableError) as err:
        load_dataset("communities_crime", data_dir=tmp_path)
    (url,) = get_config("communities_crime").raw.urls
    assert f"download communities_crime.data from {url}, then delete line 1" in str(err.value)
    assert "addresses: raw.urls in conf/dataset/communities_crime.yaml" in err.value.hint


def test_downloads_pairs_each_file_with_its_address_and_edit():
    assert downloads(get_config("adult")) == [
        f"adult.data from {get_config('adult').raw.urls[0]}",
        f"adult.test from {get_config('adult').raw.urls[1]}, then replace line 1 (a CSV header) by UCI's "
        "'|1x3 Cross validator'"]
    assert downloads(get_config("madeline")) == []


def test_the_table_of_datasets_readme_agrees_with_the_registry():
    from pathlib import Path

    doc = Path(__file__).resolve().parents[1] / "datasets" / "README.md"
    if not doc.is_file():
        pytest.skip("no datasets/README.md beside the tests")
    rows = {}
    for line in doc.read_text(encoding="utf-8").splitlines():
        m = re.match(r"\| \[(\w+)\]\((\S+)\) \| (?:`(\S+)`|—) \| (?:\[[^]]+\]\((\S+)\))?.*?\| (?:table )?`([0-9a-f]{12})…`", line)
        if m:
            rows[(m[1], m[3])] = m.groups()
    expected = {}
    for name in SHIPPED:
        cfg = get_config(name)
        raw = cfg.get("raw")
        if raw is None:
            continue
        for file, url, digest in zip(raw.files, raw.urls, raw.sha256):
            expected[(name, str(file))] = (name, str(cfg.origin), str(file), str(url), str(digest)[:12])
    assert {k: v for k, v in rows.items() if k[1] is not None} == expected
    (builtin,) = [v for k, v in rows.items() if k[1] is None]
    assert builtin[4] == str(get_config("breast_cancer_sklearn").check.sha256)[:12]

"""Packaging: one `paceggm` namespace, configurations shipped, a wheel that works outside the clone."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from paceggm.bench import config

tomllib = pytest.importorskip("tomllib")

ROOT = Path(__file__).resolve().parents[1]
# Source folders and the package each one installs as.
MAPPED = {"paceggm": "paceggm", "baselines": "paceggm.baselines", "conf": "paceggm.bench.conf"}
# Checks of a clone's layout and its editable install; a release (the sdist's tests) runs the installed copy.
clone_only = pytest.mark.skipif(not (ROOT / "studies" / "__init__.py").is_file(),
                                reason="checks a clone's layout and editable install; this is a release")


def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def _packages_on_disk() -> set[str]:
    found = set()
    for folder, package in MAPPED.items():
        base = ROOT / folder
        for path in [base, *sorted(p for p in base.rglob("*") if p.is_dir())]:
            if path.name == "__pycache__" or not (any(path.glob("*.py")) or any(path.glob("*.yaml"))):
                continue
            found.add(".".join([package, *path.relative_to(base).parts]))
    return found


def test_every_source_folder_is_a_listed_package():
    setuptools = _pyproject()["tool"]["setuptools"]
    assert set(setuptools["packages"]) == _packages_on_disk()
    mapped = {k: v for v, k in MAPPED.items() if k != v}
    assert setuptools["package-dir"] == mapped


@clone_only
def test_the_studies_are_not_shipped():
    """studies/ runs from a clone: no package of the wheel, and the sdist leaves out its tests too."""
    setuptools = _pyproject()["tool"]["setuptools"]
    assert not [p for p in setuptools["packages"] if p.split(".")[0] == "studies"]
    assert "studies" not in setuptools.get("package-dir", {})
    assert "prune tests/studies" in (ROOT / "MANIFEST.in").read_text().splitlines()
    assert (ROOT / "studies" / "__init__.py").is_file() and (ROOT / "tests" / "studies").is_dir()


@clone_only
def test_baselines_are_importable_under_the_paceggm_namespace():
    import paceggm.baselines
    from paceggm.bench import plugins
    from paceggm.bench.methods import METHODS, resolve

    assert Path(paceggm.baselines.__file__).parent == ROOT / "baselines"
    for spec in METHODS.values():
        if spec.target.split(":")[0] in plugins.loaded().values():
            continue  # a user module's method (PACEGGM_PLUGINS)
        assert spec.target.startswith("paceggm"), spec
        assert resolve(spec).__module__.startswith("paceggm"), spec


@clone_only
def test_conf_dir_is_the_clone_s_then_the_installed_copy(monkeypatch, tmp_path):
    monkeypatch.delenv("PACEGGM_CONF_DIR", raising=False)
    assert config.checkout_root() == ROOT
    assert config.find_conf_dir() == ROOT / "conf"
    monkeypatch.setenv("PACEGGM_CONF_DIR", str(tmp_path))
    assert config.find_conf_dir() == tmp_path
    monkeypatch.delenv("PACEGGM_CONF_DIR")
    # Installed (no clone around the package): the copy shipped inside paceggm.bench.
    monkeypatch.setattr(config, "REPO_ROOT", tmp_path)
    assert config.checkout_root() is None
    assert config.find_conf_dir() == Path(config.__file__).resolve().parent / "conf"
    assert config._git_commit() == "unknown"


def _run(cmd, cwd, **kw):
    out = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=600, **kw)
    assert out.returncode == 0, f"{cmd}\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}"
    return out


@pytest.mark.slow
def test_wheel_in_a_fresh_venv_runs_the_demo_outside_the_clone(tmp_path):
    # Build from a copy of the files a release holds, so no build/ folder lands in the clone.
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, src / name)
    for folder in MAPPED:
        shutil.copytree(ROOT / folder, src / folder, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    # With this environment's build backend (the dev extra asks for the one [build-system] names): an
    # isolated build would install it again, a third of this test's time.
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(tmp_path / "dist"),
          str(src)], cwd=tmp_path)
    (wheel,) = (tmp_path / "dist").glob("paceggm-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/")[0] for n in names}
    assert tops == {"paceggm", wheel.name.split("-py")[0] + ".dist-info"}, tops  # no top-level baselines
    shipped = {n.removeprefix("paceggm/bench/conf/") for n in names if n.startswith("paceggm/bench/conf/")}
    assert shipped == {str(p.relative_to(ROOT / "conf")) for p in (ROOT / "conf").rglob("*.yaml")}
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)

    # A fresh environment with nothing from the clone: the wheel in its own site-packages, and the
    # dependencies this test runs with reached through a .pth entry (a .pth line adds a folder but runs
    # none of that folder's own .pth files, so the clone's editable-install hook never loads). Installing
    # the `bench` extra from the index instead would test pip, at minutes a run.
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], cwd=tmp_path)
    py, bench = venv / "bin" / "python", venv / "bin" / "paceggm-bench"
    # Without PYTHONPATH: a source tree on it would make pip believe paceggm is installed already.
    no_path = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    _run([sys.executable, "-m", "pip", "--python", str(py), "install", "-q", "--no-deps", "--no-compile",
          "--disable-pip-version-check", str(wheel)], cwd=tmp_path, env=no_path)
    # After the install: with the line in place first, pip would find this environment's paceggm and skip it.
    site = Path(_run([str(py), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"], cwd=tmp_path).stdout.strip())
    deps = {Path(p) for p in sys.path if p.endswith("site-packages")}
    (site / "test_dependencies.pth").write_text("".join(f"{p}\n" for p in sorted(deps)))
    work = tmp_path / "elsewhere"
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PACEGGM_CONF_DIR")}
    env.update(OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    runs = work / "runs"
    # The demo recipe at one ρ (a third of its cells): what is tested is that the installed wheel runs it.
    ran = _run([str(bench), "run", "experiment=demo", "rho=[1.0]", f"runs_dir={runs}", "backend.n_jobs=1"],
               cwd=work, env=env)
    assert "(ok 9, failed 0)" in ran.stdout and "collected 9 cells" in ran.stdout  # the run's summary
    # One interpreter (each start imports scikit-learn, seconds apiece): where the package and its
    # configurations are found, then the figures stage as `python -m paceggm.bench.figures` runs it.
    figures = ["--runs", str(runs), "--out", str(work / "figures"), "--main-datasets", "breast_cancer_sklearn",
               "--main-methods", "paceggm,ssp,diagonal", "--preprocessing", "strict", "--formats", "png"]
    drawn = _run([str(py), "-c", "import importlib.util, runpy, sys, paceggm, paceggm.baselines, paceggm.bench.config as c;"
                  "print(paceggm.__file__, c.find_conf_dir(), importlib.util.find_spec('baselines'), flush=True);"
                  f"sys.argv = ['paceggm.bench.figures', *{figures!r}];"
                  "runpy.run_module('paceggm.bench.figures', run_name='__main__')"], cwd=work, env=env)
    probe = drawn.stdout.splitlines()[0].split()
    assert str(venv) in probe[0] and str(venv) in probe[1] and probe[2] == "None"
    assert (work / "figures" / "main_comparison.png").is_file()
    manifest = json.loads((runs / "demo" / "manifest.json").read_text())
    assert manifest["runs"][-1]["git_commit"] == "unknown"  # not the commit of a repository around the venv
    assert not (ROOT / "build").exists()


def test_the_recorded_commit_is_dirty_for_code_changes_not_for_results(monkeypatch, tmp_path):
    git = ["git", "-c", "user.email=t@example.org", "-c", "user.name=t", "-C", str(tmp_path)]
    for folder in ("conf", "runs", "figures"):
        (tmp_path / folder).mkdir()
    for name in ("pyproject.toml", "conf/config.yaml", "runs/.gitkeep", "figures/table.md", "code.py"):
        (tmp_path / name).write_text("x = 1\n")
    subprocess.run(git + ["init", "-q"], check=True)
    subprocess.run(git + ["add", "."], check=True)
    subprocess.run(git + ["commit", "-qm", "init"], check=True)
    head = subprocess.run(git + ["rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    monkeypatch.setattr(config, "REPO_ROOT", tmp_path)
    assert config._git_commit() == head
    (tmp_path / "runs" / ".gitkeep").unlink()  # make reproduce from an emptied runs/
    (tmp_path / "figures" / "table.md").write_text("published by an earlier sweep\n")
    assert config._git_commit() == head
    (tmp_path / "code.py").write_text("x = 2\n")
    assert config._git_commit() == head + "+dirty"

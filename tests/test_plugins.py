"""A method, a data set and a figure added from a user module outside the package, with no edit to the
package or its tests, reach the summary, the figures and the contract tests' collection; a ``target:`` method
with a label and a style is written once, for ``run``."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from bench_loaders import one_error_line, run_cli

TESTS = Path(__file__).resolve().parent

DOC = TESTS.parent / "docs" / "extending.md"


def _example_plugin() -> str:
    """The user's module docs/extending.md shows (its one home): a private covariance estimator (each variance
    with Gaussian noise at ρ/d and its exact sensitivity B²/n, charged under the purpose the privacy audit knows
    for one released variance), a data set built by a function, and a figure drawn for every sweep."""
    if not DOC.is_file():  # a release (the sdist's tests) carries no docs/
        pytest.skip("no docs/extending.md beside the tests")
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.S)
    (plugin,) = [b for b in blocks if b.startswith('"""A user\'s module')]
    return plugin


GRID = ["experiment=demo", "name=toy_run", "rho=[0.1,1.0]", "trials=2", "progress=false", "backend.n_jobs=1"]


@pytest.fixture
def registries():
    """The registries, the plugins loaded and the import path as they were before the test."""
    from paceggm.bench import plugins
    from paceggm.bench.data import registry
    from paceggm.bench.figures import artifacts
    from paceggm.bench.figures import config as figures_config
    from paceggm.bench.methods import METHODS

    saved = (dict(METHODS), list(artifacts.ARTIFACTS), dict(registry._REGISTERED), dict(registry._FRAMES),
             dict(plugins._LOADED), list(sys.path), set(sys.modules), dict(figures_config.DEFAULT_SOURCES))
    yield
    METHODS.clear()
    METHODS.update(saved[0])
    artifacts.ARTIFACTS[:] = saved[1]
    for current, before in ((registry._REGISTERED, saved[2]), (registry._FRAMES, saved[3]),
                            (plugins._LOADED, saved[4]), (figures_config.DEFAULT_SOURCES, saved[7])):
        current.clear()
        current.update(before)
    sys.path[:] = saved[5]
    for name in set(sys.modules) - saved[6]:
        if name.startswith(("toy_plugin", "toy_target")):
            del sys.modules[name]


def _write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def test_a_plugin_adds_a_method_a_data_set_and_a_figure_seen_by_run_summary_and_figures(
        tmp_path, monkeypatch, capsys, registries):
    (tmp_path / "user").mkdir()  # anywhere outside the package
    plugin = _write(tmp_path / "user", "toy_plugin_under_test.py", _example_plugin())
    monkeypatch.setenv("PACEGGM_PLUGINS", str(plugin))
    runs = tmp_path / "runs"
    grid = [*GRID, "datasets=[toy_blobs]", "method=[noisy_diagonal,ssp]", f"runs_dir={runs}"]
    code, out, err = run_cli(capsys, "run", *grid)
    assert code == 0, out + err
    assert "ran: 8 (ok 8, failed 0)" in out

    code, out, err = run_cli(capsys, "summary", *grid)
    assert code == 0, err
    rows = [line.split() for line in out.splitlines() if line.startswith("toy_blobs")]
    assert {r[1] for r in rows} == {"noisy_diagonal", "ssp"} and len(rows) == 4

    code, out, err = run_cli(capsys, "figures", "--runs", str(runs), "--out", str(tmp_path / "figures"),
                             "--formats", "png")
    assert code == 0, err
    assert "built   toy_run/toy_time from toy_run" in out
    assert (tmp_path / "figures" / "toy_run" / "toy_time.png").stat().st_size > 0
    report = "\n".join(p.read_text(encoding="utf-8") for p in (tmp_path / "figures").rglob("REPORT.md"))
    # the toy figure's words list its legend: the toy method under its display name
    assert "Whole-fit time per trial vs rho of SSP, Noisy diagonal." in report


def test_the_contract_tests_collect_a_plugins_method_without_an_edit(tmp_path):
    plugin = _write(tmp_path, "toy_plugin_under_test.py", _example_plugin())
    env = {**os.environ, "PACEGGM_PLUGINS": str(plugin)}
    files = ["test_sklearn_api.py", "test_privacy_api.py", "test_audit.py", "test_bench_methods.py"]
    done = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                           "-n", "0", *(str(TESTS / f) for f in files)],
                          cwd=TESTS.parent, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    ids = set(done.stdout.split())
    for test in ("test_check_estimator_passes_in_the_non_private_limit",
                 "test_check_estimator_at_a_private_budget_fails_only_what_privacy_forbids",
                 "test_clone_keeps_parameters_and_drops_fitted_state"):
        assert f"tests/test_sklearn_api.py::{test}[NoisyDiagonal]" in ids, test
    for test in ("test_shared_accountant_refuses_an_overspend_and_spends_nothing_then",
                 "test_second_fit_warns_and_rho_spent_counts_both", "test_messages_carry_no_data_values_or_counts"):
        assert f"tests/test_privacy_api.py::{test}[NoisyDiagonal]" in ids, test
    audit = "tests/test_audit.py::test_small_audit_finds_no_violation_and_catches_every_broken_control"
    assert {f"{audit}[invocations_noisy_diagonal]", f"{audit}[invocations_noisy_diagonal_twice]"} <= ids
    assert "tests/test_bench_methods.py::test_every_registered_method_keeps_the_fitted_interface[noisy_diagonal]" in ids


TARGET = '''
from paceggm.baselines import DiagonalOnly


class MyDiagonal(DiagonalOnly):
    """A user's class, named by a recipe's target: (nothing registered)."""
'''


def test_a_target_with_a_label_and_style_is_given_once_to_run(tmp_path, monkeypatch, capsys, registries):
    _write(tmp_path, "toy_target.py", TARGET)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delenv("PACEGGM_PLUGINS", raising=False)
    runs = tmp_path / "runs"
    grid = [*GRID, "datasets=[syn1]", "loader=bench_loaders:small_loader", "method=[ssp]", f"runs_dir={runs}"]
    mine = "+method.mine={key:mine,target:'toy_target:MyDiagonal',measures:diagonal,label:'My diagonal',color:'#123456'}"
    code, out, err = run_cli(capsys, "run", *grid, mine)
    assert code == 0, out + err
    # summary and the figures read the target, its label and its colour from the store: not repeated
    code, out, err = run_cli(capsys, "summary", *grid)
    assert code == 0, err
    assert {line.split()[1] for line in out.splitlines() if line.startswith("syn1")} == {"mine", "ssp"}
    code, out, err = run_cli(capsys, "figures", "--runs", str(runs), "--out", str(tmp_path / "figures"),
                             "--formats", "png")
    assert code == 0, err
    from paceggm.bench.figures.style import method_style

    look = method_style("mine")
    assert (look.label, look.color) == ("My diagonal", "#123456") and look.marker and look.linestyle
    assert "My diagonal" in (tmp_path / "figures" / "REPORT.md").read_text(encoding="utf-8")


def test_a_plugin_that_cannot_be_imported_is_one_line(tmp_path, monkeypatch, capsys, registries):
    broken = _write(tmp_path, "toy_plugin_broken.py", "import numpy\nraise RuntimeError('not ready')\n")
    monkeypatch.setenv("PACEGGM_PLUGINS", str(broken))
    code, _, err = run_cli(capsys, "show", *GRID)
    assert code == 2
    line = one_error_line(err)
    assert "toy_plugin_broken.py" in line and "$PACEGGM_PLUGINS" in line and "RuntimeError: not ready" in line
    monkeypatch.delenv("PACEGGM_PLUGINS")
    code, _, err = run_cli(capsys, "show", *GRID, "plugins=[toy_plugin_nowhere]")
    assert code == 2 and "plugin 'toy_plugin_nowhere'" in one_error_line(err) and "No module named" in err


def test_the_plugins_a_command_line_asks_for_come_from_its_override_the_root_config_and_its_recipe(tmp_path):
    from paceggm.bench.plugins import requested

    (tmp_path / "experiment").mkdir()
    (tmp_path / "config.yaml").write_text("name: x\nplugins: [site_methods]\n", encoding="utf-8")
    (tmp_path / "experiment" / "mine.yaml").write_text("# @package _global_\nplugins: [my_methods]\n",
                                                       encoding="utf-8")
    assert requested(["rho=[1]"], tmp_path) == ["site_methods"]
    assert requested(["experiment=mine"], tmp_path) == ["site_methods", "my_methods"]
    # the command line's list replaces the root config's; the recipe's still come with the recipe
    assert requested(["plugins=[a,'/x/b.py']", "experiment=mine"], tmp_path) == ["a", "/x/b.py", "my_methods"]
    assert requested(["plugins=[]"], tmp_path) == []


def test_an_installed_distribution_names_its_plugin_by_entry_point(tmp_path, monkeypatch, registries):
    from paceggm.bench import plugins
    from paceggm.bench.methods import METHODS

    info = tmp_path / "toy_plugin_dist-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: toy-plugin-dist\nVersion: 1.0\n", encoding="utf-8")
    (info / "entry_points.txt").write_text("[paceggm.bench]\ntoy = toy_plugin_ep\n", encoding="utf-8")
    _write(tmp_path, "toy_plugin_ep.py", """\
        from paceggm.bench.methods import MethodSpec, register

        register(MethodSpec("toy_ep", "paceggm.baselines:SSP", measures="all"))
        """)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(plugins, "_ENTRY_POINTS_DONE", False)
    monkeypatch.delenv("PACEGGM_PLUGINS", raising=False)
    assert "toy_ep" not in METHODS
    plugins.load_plugins()
    assert METHODS["toy_ep"].target == "paceggm.baselines:SSP"


def test_a_label_or_style_without_a_target_is_refused_in_one_line(capsys):
    code, _, err = run_cli(capsys, "show", *GRID, "datasets=[syn1]", "method=[ssp]", "+method.ssp.label=Mine")
    assert code == 2
    assert "method 'ssp': label only with a target" in one_error_line(err)


def test_the_audit_resamples_every_invocation_of_a_plugins_method(tmp_path, registries):
    # the invocation audit records the mechanisms a plugin's own module calls (not only the package's), so the
    # method's row has power and its control at twice the claim is caught
    from paceggm.bench import plugins
    from paceggm.bench.audit import cases
    from paceggm.bench.audit.report import audit_case
    from paceggm.bench.methods import METHODS

    plugins.load_plugins([str(_write(tmp_path, "toy_plugin_under_test.py", _example_plugin()))], env=False,
                         entry_points=False)
    correct, broken = cases._invocation_cases(METHODS["noisy_diagonal"])
    row = audit_case(correct, 40_000, power_reps=0)
    assert row.ok and 0 < row.rho_lower <= row.claimed_rho, row
    row = audit_case(broken, 40_000, power_reps=0)
    assert row.ok and row.verdict == "caught", row


def test_a_plugin_named_on_the_command_line_is_found_in_the_working_directory(tmp_path, monkeypatch, capsys,
                                                                             registries):
    _write(tmp_path, "toy_plugin_here.py", """\
        from paceggm.bench.methods import MethodSpec, register

        register(MethodSpec("toy_here", "paceggm.baselines:SSP", measures="all"))
        """)
    monkeypatch.chdir(tmp_path)  # the console script's path holds its own folder, not this one
    monkeypatch.delenv("PACEGGM_PLUGINS", raising=False)
    code, out, err = run_cli(capsys, "show", *GRID, "datasets=[syn1]", "loader=bench_loaders:small_loader",
                             "plugins=[toy_plugin_here]", "method=[toy_here]")
    assert code == 0, err
    assert out.rstrip().endswith("# 4 cells")


def test_a_plugin_method_whose_releases_bypass_the_recorded_mechanisms_is_not_audited(tmp_path, registries):
    # its own noise (here none at all) leaves the invocation audit nothing to test: that is a failing row,
    # never "no violation found"
    from paceggm.bench import plugins
    from paceggm.bench.audit import cases
    from paceggm.bench.audit.report import audit_case
    from paceggm.bench.methods import METHODS

    source = _example_plugin()
    call = "noisy[j], _ = gaussian_mechanism("
    assert call in source
    source = source.replace(call, "noisy[j], _ = (lambda v, **kw: (v, None))(")
    plugins.load_plugins([str(_write(tmp_path, "toy_plugin_unrecorded.py", source))], env=False, entry_points=False)
    correct, _ = cases._invocation_cases(METHODS["noisy_diagonal"])
    row = audit_case(correct, 1000, power_reps=0)
    assert row.verdict == "NOT AUDITED" and not row.ok, row


def test_the_readme_s_routes_are_the_working_ones(tmp_path, registries):
    # README shows a plugin registering a method and a figure, and a data set's YAML file: the same routes,
    # taken as written (with the example's class from docs/extending.md), register and load
    import numpy as np
    import pandas as pd
    from omegaconf import OmegaConf

    from paceggm.bench import plugins
    from paceggm.bench.data import load_dataset
    from paceggm.bench.data.registry import register
    from paceggm.bench.figures.artifacts import ARTIFACTS, SWEEPS
    from paceggm.bench.methods import METHODS, resolve

    readme = (TESTS.parent / "README.md").read_text(encoding="utf-8")
    (code,) = [b for b in re.findall(r"```python\n(.*?)```", readme, flags=re.S) if b.startswith("# my_plugin.py")]
    (entry,) = re.findall(r"```yaml\n(.*?)```", readme, flags=re.S)
    example = _example_plugin()
    head, cls = example[:example.index("class NoisyDiagonal")], example[example.index("class NoisyDiagonal"):]
    cls = cls[:cls.index("register_method(")]
    # under a name of its own: a user's my_plugin.py may be loaded already ($PACEGGM_PLUGINS)
    code = code.replace('"my_plugin:', '"toy_plugin_readme:')
    plugins.load_plugins([str(_write(tmp_path, "toy_plugin_readme.py", head + cls + "\n" + code))], env=False,
                         entry_points=False)
    assert resolve(METHODS["noisy_diagonal"]).__name__ == "NoisyDiagonal"
    assert METHODS["noisy_diagonal"].style.label == "Noisy diagonal"
    assert [a.sources for a in ARTIFACTS if a.name == "my_time"] == [SWEEPS]

    fields = OmegaConf.to_container(OmegaConf.create(entry))
    z = np.random.default_rng(0).normal(size=(300, 2))
    pd.DataFrame({"a": z[:, 0], "b": z[:, 1], "c": z[:, 0] + z[:, 1], "d": z[:, 0] - z[:, 1]}).to_csv(
        tmp_path / fields["raw"]["files"][0], index=False)
    register(fields.pop("name"), **fields)
    assert load_dataset("my_data", preprocessing="strict", data_dir=tmp_path).X.shape == (300, 4)

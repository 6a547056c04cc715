"""Every recipe composes through Hydra's compose API and expands into the grid it promises."""

from __future__ import annotations

from pathlib import Path

import pytest

from paceggm.bench.cells import expand
from paceggm.bench.config import CONF_DIR, compose_config, to_plain

EXPERIMENTS = sorted(p.stem for p in (CONF_DIR / "experiment").glob("*.yaml"))
PAPER_BUDGETS = [1e-4, 1e-3, 1e-2, 1e-1, 1.0, 2.0, 10.0]


def _cfg(*overrides):
    return to_plain(compose_config(list(overrides)))


def test_every_spec_recipe_has_a_config():
    assert set(EXPERIMENTS) >= {
        "main", "measurements", "runtime", "solver", "components", "hyperparameters", "regression", "quick", "demo"
    }


@pytest.mark.parametrize("experiment", EXPERIMENTS)
def test_recipe_composes_and_expands(experiment):
    cfg = _cfg(f"experiment={experiment}")
    assert cfg["name"] == experiment
    cells = expand(cfg)
    assert cells, experiment
    assert len({c.key for c in cells}) == len(cells)
    n_variants = len({(c.variant, c.dataset) for c in cells})
    rhos = cfg["rho"] if isinstance(cfg["rho"], list) else [cfg["rho"]]
    assert len(cells) == n_variants * len(rhos) * cfg["trials"]
    assert cfg["backend"]["name"] == "loky"


def test_paper_recipes_use_the_paper_budgets_and_ten_trials():
    for name in ("main", "measurements", "runtime", "solver", "components", "regression"):
        cfg = _cfg(f"experiment={name}")
        assert [float(r) for r in cfg["rho"]] == PAPER_BUDGETS
        assert cfg["trials"] == 10
        assert cfg["preprocessing"] == "paper"


def test_main_recipe_grid():
    cfg = _cfg("experiment=main")
    cells = expand(cfg)
    assert len(cfg["datasets"]) == 14
    assert {c.method for c in cells} == {"paceggm", "ssp", "adaptivecov", "diagonal"}
    assert len(cells) == 14 * 4 * 7 * 10


def test_solver_recipe_names_every_solver_and_shares_seeds():
    cells = expand(_cfg("experiment=solver"))
    assert {c.param_dict["solver"] for c in cells} == {"ipm", "pgd0", "pgd1", "newton"}
    by_trial = {}
    for c in cells:
        by_trial.setdefault((c.dataset, c.rho, c.trial), set()).add(c.seed)
    assert all(len(s) == 1 for s in by_trial.values())  # paired comparison


def test_hyperparameter_recipe_grid():
    cfg = _cfg("experiment=hyperparameters")
    cells = expand(cfg)
    pace = {c.variant for c in cells if c.method == "paceggm"}
    assert len(pace) == 9 and "paceggm[alpha=0.1,beta=0.5]" in pace
    assert {c.method for c in cells} == {"paceggm", "ssp"}
    assert cfg["trials"] == 5


def test_runtime_and_components_recipes_run_ipm_beside_newton():
    for name in ("runtime", "components"):
        cells = expand(_cfg(f"experiment={name}"))
        assert {c.param_dict["solver"] for c in cells} == {"newton", "ipm"}
        by_trial = {}
        for c in cells:
            by_trial.setdefault((c.dataset, c.rho, c.trial), set()).add(c.seed)
        assert all(len(s) == 1 for s in by_trial.values())  # both solvers paired by seed


def test_components_recipe_reuses_the_cells_with_the_decomposition_on():
    cells = expand(_cfg("experiment=components"))
    assert {c.variant for c in cells} == {f"paceggm[solver={s},use_components={u}]"
                                          for s in ("newton", "ipm") for u in (True, False)}
    cfg = _cfg("experiment=components")
    assert list(cfg["reuse_from"]) == ["runtime", "solver"]
    solver_keys = {c.key for c in expand(_cfg("experiment=solver"))}
    runtime_keys = {c.key for c in expand(_cfg("experiment=runtime"))}
    on = {c.key for c in cells if c.param_dict["use_components"]}
    assert on <= solver_keys and on <= runtime_keys
    assert not {c.key for c in cells if not c.param_dict["use_components"]} & (solver_keys | runtime_keys)


def test_solver_recipe_reuses_the_runtime_recipes_ipm_and_newton_cells():
    # Only the PGD cells are the solver recipe's own: IPM-Cholesky and Newton are copied from
    # `runtime`, which times them on one worker.
    cfg = _cfg("experiment=solver")
    assert list(cfg["reuse_from"]) == ["runtime"]
    cells = expand(cfg)
    runtime_keys = {c.key for c in expand(_cfg("experiment=runtime"))}
    reusable = {c.key for c in cells if c.param_dict["solver"] in ("ipm", "newton")}
    assert reusable and reusable <= runtime_keys
    assert not {c.key for c in cells if c.param_dict["solver"].startswith("pgd")} & runtime_keys


def test_reproduce_runs_the_recipes_reused_from_before_the_recipes_reusing_them():
    makefile = Path(__file__).resolve().parents[1] / "Makefile"
    line = next(x for x in makefile.read_text().splitlines() if x.startswith("EXPERIMENTS :="))
    order = line.split(":=")[1].split()
    for name in order:
        for source in _cfg(f"experiment={name}").get("reuse_from") or ():
            assert order.index(source) < order.index(name), (source, name)


def test_regression_recipe():
    reg = expand(_cfg("experiment=regression"))
    assert {c.task for c in reg} == {"regression"} and len({c.dataset for c in reg}) == 8


def test_quick_exercises_every_method_and_varied_parameter():
    from conftest import package_methods

    cells = expand(_cfg("experiment=quick"))
    assert {c.method for c in cells} == set(package_methods())  # a plugin's methods are the user's to run
    pace = [c.param_dict for c in cells if c.method == "paceggm"]
    assert {p["solver"] for p in pace} >= {"ipm", "pgd0", "pgd1", "newton"}
    assert {p["use_components"] for p in pace} == {True, False}
    assert {(p["alpha"], p["beta"]) for p in pace} >= {(0.3, 0.5), (0.1, 0.3)}
    assert {c.dataset for c in cells if c.task == "regression"} == {"seoul_bike"}


def test_command_line_overrides_reach_the_grid():
    cfg = _cfg("experiment=main", "rho=[0.1,1]", "trials=3", "datasets=[adult,pol]", "method=[paceggm,ssp]")
    cells = expand(cfg)
    assert len(cells) == 2 * 2 * 2 * 3
    assert {c.rho for c in cells} == {0.1, 1.0}
    assert {c.trial for c in cells} == {0, 1, 2}


def test_published_solver_is_one_override_away():
    default = expand(_cfg("experiment=main", "method=[paceggm]"))
    ipm = expand(_cfg("experiment=main", "method=[paceggm]", "method.paceggm.params.solver=ipm"))
    assert {c.param_dict["solver"] for c in ipm} == {"ipm"}
    # the recipes pin the reference solver, whatever the library's default
    assert {c.param_dict["solver"] for c in default} == {"newton"}
    # solver=null is written into the key as the library's concrete default ("auto"), not left to the class
    from paceggm import PACEGGM

    library = expand(_cfg("experiment=main", "method=[paceggm]", "method.paceggm.params.solver=null"))
    assert {c.param_dict["solver"] for c in library} == {PACEGGM(1.0).solver} == {"auto"}
    assert not {c.key for c in library} & {c.key for c in default}


def test_dask_backend_composes():
    cfg = _cfg("experiment=demo", "backend=dask")
    assert cfg["backend"]["name"] == "dask" and cfg["backend"]["address"] is None


@pytest.mark.parametrize(
    "overrides, message",
    [
        (["rho=[0,1]"], "rho"),
        (["trials=0"], "trials"),
        (["preprocessing=raw"], "preprocessing"),
        (["datasets=[]"], "datasets"),
        (["+method.bad={key:nosuch}"], "unknown method"),
        (["+method.paceggm.grid.rho=[1]"], "set by the harness"),
    ],
)
def test_malformed_grids_are_refused_with_a_clear_message(overrides, message):
    with pytest.raises(ValueError, match=message):
        expand(_cfg("experiment=demo", *overrides))


def test_identical_variants_are_refused():
    with pytest.raises(ValueError, match="same computation"):
        expand(_cfg("experiment=demo", "method=[paceggm]", "+method.copy={key:paceggm,params:{alpha:0.3,beta:0.5}}",
                    "method.paceggm.params.solver=ipm", "+method.copy.params.solver=ipm",
                    "+method.copy.params.use_components=true"))


def test_conf_dir_is_the_repository_conf():
    assert (Path(CONF_DIR) / "config.yaml").is_file()


def test_cli_show_accepts_the_singular_dataset_alias(capsys):
    from paceggm.bench.__main__ import main

    assert main(["show", "experiment=main", "rho=[0.1,1]", "trials=3", "dataset=[adult,pol]"]) == 0
    assert capsys.readouterr().out.rstrip().endswith("# 48 cells")  # 2 data sets × 4 methods × 2 ρ × 3 trials
    assert main(["show", "experiment=main", "dataset=adult", "trials=1", "rho=[1]"]) == 0
    assert capsys.readouterr().out.rstrip().endswith("# 4 cells")


def test_cli_reports_configuration_errors_without_a_traceback(capsys):
    from paceggm.bench.__main__ import main

    assert main(["run", "experiment=no_such_recipe"]) == 2
    assert "no recipe 'no_such_recipe'; valid names: components" in capsys.readouterr().err
    assert main(["frobnicate"]) == 2


def test_a_composition_reflects_the_files_as_they_are_now(tmp_path):
    # The suite remembers compositions (tests/conftest.py): an edited recipe or a new file must still
    # be composed afresh, and no caller may change another's copy.
    import shutil

    conf = tmp_path / "conf"
    shutil.copytree(CONF_DIR, conf)
    first = compose_config(["experiment=demo"], config_dir=conf)
    first.trials = 99
    assert compose_config(["experiment=demo"], config_dir=conf).trials != 99
    recipe = conf / "experiment" / "demo.yaml"
    recipe.write_text(recipe.read_text(encoding="utf-8") + "\nbase_seed: 12345\n", encoding="utf-8")
    assert compose_config(["experiment=demo"], config_dir=conf).base_seed == 12345
    (conf / "experiment" / "demo_copy.yaml").write_text(recipe.read_text(encoding="utf-8"), encoding="utf-8")
    assert compose_config(["experiment=demo_copy"], config_dir=conf).base_seed == 12345

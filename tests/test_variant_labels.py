"""A row's variant (its label and the parameters it varies) is decided once, when its cell is made, and stored:
summaries and figures read it back, so a default changed later renames and regroups nothing."""

import json
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest

import paceggm.bench.methods as methods
from paceggm import PACEGGM
from paceggm.bench import variants
from paceggm.bench.cells import expand
from paceggm.bench.collect import to_frame
from paceggm.bench.execute import failed_row
from paceggm.bench.figures import style, sweep
from paceggm.bench.figures.results import select_variants, validate_results
from paceggm.bench.summary import distinct_variants

COMMITTED = Path(__file__).resolve().parents[1] / "figures" / "results"

CONFIG = {"name": "t", "datasets": ["a"], "preprocessing": "paper", "rho": [1.0], "trials": 1, "base_seed": 0,
          "method": {"paceggm": {"key": "paceggm", "params": {"alpha": None, "beta": None, "solver": "newton"},
                                 "grid": {"solver": ["newton", "ipm"]}},
                     "paceggm_ab": {"key": "paceggm", "params": {"alpha": 0.2, "beta": None, "solver": "newton"}},
                     "ssp": {"key": "ssp"}}}


def _table(cells) -> pd.DataFrame:
    return to_frame([failed_row(c, "t", "not run") for c in cells])


def _names(df: pd.DataFrame) -> dict:
    """Everything a reader names or picks a row by: labels, legends, selections."""
    shown = validate_results(df)
    return {
        "figures": list(shown["variant"]),
        "summary": list(distinct_variants(df)["variant"]),
        "legends": {v: s.label for v, s in style.variant_styles(shown, compared=("solver",)).items()},
        "hyperparameter legends": {v: s.label for v, s in style.hyperparameter_styles(shown).items()},
        "plain rows": list(select_variants(shown, methods={"paceggm"}).index),
        "solver rows": list(select_variants(shown, methods={"paceggm"}, params={"solver"}).index),
        "swept": sweep.swept(shown),
        "sweep figures": {k: list(v.index) for k, v in sweep.parameter_rows(shown).items()},
    }


def _move_the_defaults(monkeypatch):
    """PACE-GGM's class default α becomes 0.1 and the registry's pinned solver ipm."""
    monkeypatch.setitem(PACEGGM.__init__.__kwdefaults__, "alpha", 0.1)
    spec = methods.METHODS["paceggm"]
    monkeypatch.setitem(methods.METHODS, "paceggm", replace(spec, params={**spec.params, "solver": "ipm"}))


def test_a_cell_stores_its_label_and_what_it_varies_when_it_is_made():
    cells = {c.variant: c for c in expand(CONFIG)}
    assert {v: (c.label, dict(c.varies)) for v, c in cells.items()} == {
        "paceggm[solver=newton]": ("paceggm", {}),
        "paceggm[solver=ipm]": ("paceggm[solver=ipm]", {"solver": "ipm"}),
        "paceggm_ab": ("paceggm[alpha=0.2,beta=0.5]", {"alpha": 0.2, "beta": 0.5}),
        "ssp": ("ssp", {}),
    }
    row = failed_row(cells["paceggm_ab"], "t", "not run")
    assert (row["label"], json.loads(row["varies"])) == ("paceggm[alpha=0.2,beta=0.5]", {"alpha": 0.2, "beta": 0.5})
    assert "label" not in cells["paceggm_ab"].description()  # nor in the key


def test_a_changed_default_renames_and_regroups_no_stored_row(monkeypatch):
    df = _table(expand(CONFIG))
    before = _names(df)
    assert sorted(before["figures"]) == ["paceggm", "paceggm[alpha=0.2,beta=0.5]", "paceggm[solver=ipm]", "ssp"]
    assert before["legends"]["paceggm"] == "PACE-GGM (Newton)"
    _move_the_defaults(monkeypatch)
    # The move is real: a cell made now is named against the new defaults ...
    fresh = {c.variant: c.label for c in expand(CONFIG)}
    assert fresh == {"paceggm[solver=newton]": "paceggm[solver=newton]", "paceggm[solver=ipm]": "paceggm",
                     "paceggm_ab": "paceggm[alpha=0.2,beta=0.5,solver=newton]", "ssp": "ssp"}
    # ... while the rows stored before it keep their names, legends and groups.
    assert _names(df) == before


def test_a_row_keeps_the_name_it_was_made_with(monkeypatch):
    """Rows made under other defaults keep the names those gave them: stored, not recomputed."""
    with monkeypatch.context() as moved:
        _move_the_defaults(moved)
        df = _table(expand(CONFIG))
    names = _names(df)
    assert sorted(set(names["figures"])) == ["paceggm", "paceggm[alpha=0.2,beta=0.5,solver=newton]",
                                             "paceggm[solver=newton]", "ssp"]
    assert names["legends"]["paceggm"] == "PACE-GGM (IPM)"  # the plain rows ran with ipm, then the default
    assert variants.label_of(validate_results(df), "paceggm", {"solver": "newton"}) == "paceggm[solver=newton]"


@pytest.mark.parametrize("experiment", ["solver", "components", "hyperparameters", "regression"])
def test_a_changed_default_renames_no_row_of_a_committed_table(monkeypatch, experiment):
    """A committed table names its rows as the same table stored before rows carried their variant (read
    against the defaults of then), and moving today's defaults renames no row of either."""
    df = pd.read_parquet(COMMITTED / experiment / "results.parquet")
    older = df.drop(columns=[c for c in ("label", "varies") if c in df.columns])
    before = _names(df)
    assert _names(older) == before
    _move_the_defaults(monkeypatch)
    assert _names(df) == before and _names(older) == before


def _sample(df: pd.DataFrame) -> pd.DataFrame:
    return df.groupby("variant").head(3)


def test_summaries_and_figures_never_ask_the_classes_for_defaults(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("a reader asked today's classes for their defaults")

    df = pd.concat([_table(expand(CONFIG)),
                    _sample(pd.read_parquet(COMMITTED / "solver" / "results.parquet"))], ignore_index=True)
    for name in ("method_defaults", "declared_params", "resolved_defaults", "resolve"):
        monkeypatch.setattr(methods, name, refuse)
    names = _names(df)
    assert "paceggm[solver=pgd0]" in names["figures"] and "paceggm[alpha=0.2,beta=0.5]" in names["figures"]
    assert variants.label_of(validate_results(df), "paceggm", {"solver": "newton"}) == "paceggm"

"""The figures stage's style registry: variants by their parameters, distinct looks, one place to add a method."""

import itertools

import numpy as np
import pandas as pd
import pytest

from paceggm.bench import variants
from paceggm.bench.figures import style
from paceggm.bench.methods import METHODS, MethodSpec, MethodStyle, register

from conftest import package_methods


def test_a_variant_is_named_by_the_parameters_it_varies_from_the_p_columns():
    rows = pd.DataFrame({"method": ["paceggm", "paceggm", "paceggm", "ssp"],
                         "variant": ["x", "y", "z", "w"],  # the harness's labels: never read
                         "p_solver": ["newton", "pgd0", "newton", None],
                         "p_alpha": [0.3, 0.3, 0.1, np.nan], "p_beta": [0.5, 0.5, 0.5, np.nan],
                         "p_use_components": pd.array([True, True, True, pd.NA], dtype="boolean")})
    assert list(variants.row_params(rows)) == [{}, {"solver": "pgd0"}, {"alpha": 0.1, "beta": 0.5}, {}]
    assert [variants.label(m, p) for m, p in zip(rows["method"], variants.row_params(rows))] == \
        ["paceggm", "paceggm[solver=pgd0]", "paceggm[alpha=0.1,beta=0.5]", "ssp"]
    looks = style.variant_styles(rows.assign(variant=["a", "b", "c", "d"]))
    assert looks["b"] == style.VARIANTS[("solver", "pgd0")]
    assert looks["c"].color == style.hyperparameter_style(0.1, 0.5).color
    assert looks["a"] == style.method_style("paceggm") and looks["d"] == style.method_style("ssp")


def test_methods_shown_together_differ_in_marker_and_line_besides_colour():
    # grayscale: every pair of covariance methods must differ in marker AND line style
    cov = [key for key, spec in package_methods().items() if spec.task == "covariance"]
    assert len(cov) >= 8
    for a, b in itertools.combinations(cov, 2):
        sa, sb = style.method_style(a), style.method_style(b)
        assert sa.marker != sb.marker, (a, b)
        assert sa.linestyle != sb.linestyle, (a, b)
    # the palette has nine colours: the publication's methods each have their own; a peer may share its
    # family's (SSP's release post-processed, PACE-GGM's reconstruction), never a third method's
    publication = ("paceggm", "ssp", "ssp_projected", "ssp_tight", "adaptivecov", "gausscov", "separatecov", "diagonal")
    assert len({style.method_style(k).color for k in publication}) == len(publication)
    colours = [style.method_style(k).color for k in cov]
    assert max(colours.count(c) for c in colours) <= 2
    solver = [{}, {"solver": "pgd0"}, {"solver": "pgd1"}]
    looks = {(style.variant_style("paceggm", p).marker, style.variant_style("paceggm", p).linestyle) for p in solver}
    assert len(looks) == 3


def test_hyperparameter_grid_styles_are_distinct_and_mark_the_default():
    grid = [style.hyperparameter_style(a, b) for a in (0.1, 0.3, 0.5) for b in (0.1, 0.3, 0.5)]
    assert len({(s.color, s.marker, s.linestyle) for s in grid}) == 9
    assert len({(s.marker, s.linestyle) for s in grid}) == 3  # β by marker and line, α by colour
    ref = style.variant_style("ssp")  # the figure's reference must not look like a grid pair
    assert all(s.marker != ref.marker and s.linestyle != ref.linestyle for s in grid)
    assert style.hyperparameter_style(0.3, 0.5, default=True).label.endswith("(default)")
    assert "default" not in style.hyperparameter_style(0.1, 0.5).label
    assert style.variant_style("paceggm", {"alpha": 0.1, "beta": 0.5}).color == style.hyperparameter_style(0.1, 0.5).color


def test_default_variant_names_the_compared_parameter_with_the_value_its_rows_ran_with():
    ran = {"solver": "newton", "use_components": True}
    assert style.variant_style("paceggm", compared=("solver",), given=ran).label == "PACE-GGM (Newton)"
    assert style.variant_style("paceggm", compared=("use_components",), given=ran).label == \
        "PACE-GGM (components on)"
    rows = pd.DataFrame({"method": ["paceggm"], "variant": ["paceggm"], "p_solver": ["ipm"],
                         "label": ["paceggm"], "varies": ["{}"]})  # ipm was the default when it was made
    assert style.variant_styles(rows, compared=("solver",))["paceggm"].label == "PACE-GGM (IPM)"
    assert style.variant_style("paceggm").label == "PACE-GGM"
    assert style.variant_style("ssp", compared=("solver",)).label == "SSP"


def test_unknown_method_gets_a_stable_fallback_and_sorts_last():
    a, b = style.variant_style("brand_new"), style.variant_style("brand_new")
    assert a == b and a.label == "brand_new"
    assert style.variant_order(["brand_new", "diagonal", "ssp", "paceggm"]) == \
        ["paceggm", "ssp", "diagonal", "brand_new"]
    other = style.variant_style("paceggm", {"max_rounds": 5})
    assert other.label == "PACE-GGM (max_rounds=5)"


def test_a_registered_method_is_seen_by_every_lookup(monkeypatch):
    new = MethodStyle("My estimator", "#123456", "*", "-", 5)
    monkeypatch.setitem(METHODS, "dummy", METHODS["ssp"])
    register(MethodSpec("dummy", "paceggm.baselines:SSP", measures="all", style=new))
    assert style.variant_style("dummy") == new
    assert style.variant_order(["ssp", "dummy", "paceggm"]) == ["paceggm", "dummy", "ssp"]
    with pytest.raises(TypeError):
        register({"key": "dummy"})


def test_dataset_label_wraps_long_names():
    assert style.dataset_label("communities_crime") == "communities\ncrime"
    assert style.dataset_label("adult") == "adult"

"""The figures stage's style registry: variant parsing, distinct looks, one place to add a method."""

import itertools

import pytest

from paceggm.bench.figures import style
from paceggm.bench.methods import METHODS, MethodSpec, MethodStyle, register


def test_parse_variant_types_values():
    assert style.parse_variant("paceggm[alpha=0.1,beta=0.5]") == ("paceggm", {"alpha": 0.1, "beta": 0.5})
    assert style.parse_variant("paceggm[use_components=False]") == ("paceggm", {"use_components": False})
    assert style.parse_variant("paceggm[solver=pgd0]") == ("paceggm", {"solver": "pgd0"})
    assert style.parse_variant("paceggm[max_rounds=12]") == ("paceggm", {"max_rounds": 12})
    assert style.parse_variant("ssp") == ("ssp", {})


@pytest.mark.parametrize("bad", ["", "ssp[", "paceggm[alpha]", "a[b=1]]", None])
def test_parse_variant_rejects_malformed(bad):
    with pytest.raises(ValueError):
        style.parse_variant(bad)


def test_methods_shown_together_differ_in_marker_and_line_besides_colour():
    # grayscale: every pair of covariance methods must differ in marker AND line style
    cov = [key for key, spec in METHODS.items() if spec.task == "covariance"]
    assert len(cov) == 8
    for a, b in itertools.combinations(cov, 2):
        sa, sb = style.method_style(a), style.method_style(b)
        assert sa.marker != sb.marker, (a, b)
        assert sa.linestyle != sb.linestyle, (a, b)
        assert sa.color != sb.color, (a, b)
    solver = ["paceggm", "paceggm[solver=pgd0]", "paceggm[solver=pgd1]"]
    looks = {(style.variant_style(v).marker, style.variant_style(v).linestyle) for v in solver}
    assert len(looks) == 3


def test_hyperparameter_grid_styles_are_distinct_and_mark_the_default():
    grid = [style.hyperparameter_style(a, b) for a in (0.1, 0.3, 0.5) for b in (0.1, 0.3, 0.5)]
    assert len({(s.color, s.marker, s.linestyle) for s in grid}) == 9
    assert len({(s.marker, s.linestyle) for s in grid}) == 3  # β by marker and line, α by colour
    ref = style.variant_style("ssp")  # the figure's reference must not look like a grid pair
    assert all(s.marker != ref.marker and s.linestyle != ref.linestyle for s in grid)
    assert style.hyperparameter_style(0.3, 0.5).label.endswith("(default)")
    assert "default" not in style.hyperparameter_style(0.1, 0.5).label
    assert style.variant_style("paceggm[alpha=0.1,beta=0.5]").color == style.hyperparameter_style(0.1, 0.5).color


def test_default_variant_names_the_compared_parameter():
    default = {"newton": "Newton", "ipm": "IPM"}[style.PACEGGM_DEFAULTS["solver"]]
    assert style.variant_style("paceggm", compared=("solver",)).label == f"PACE-GGM ({default})"
    assert style.variant_style("paceggm", compared=("use_components",)).label == "PACE-GGM (components on)"
    assert style.variant_style("paceggm").label == "PACE-GGM"
    assert style.variant_style("ssp", compared=("solver",)).label == "SSP"


def test_unknown_method_gets_a_stable_fallback_and_sorts_last():
    a, b = style.variant_style("brand_new"), style.variant_style("brand_new")
    assert a == b and a.label == "brand_new"
    assert style.variant_order(["brand_new", "diagonal", "ssp", "paceggm"]) == \
        ["paceggm", "ssp", "diagonal", "brand_new"]
    other = style.variant_style("paceggm[max_rounds=5]")
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

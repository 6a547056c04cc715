"""Our comparison of the peers: its figures and tables build from synthetic results of the peers recipes, never
join a report of the publication's recipes, and our statement P1 (CoinPress performs poorly) comes out
supported, partly, contradicted or not testable as the synthetic errors are made to say."""

import zlib

import numpy as np
import pandas as pd
import pytest

from paceggm.bench.figures import FiguresConfig, build_all
from paceggm.bench.figures import peers as P
from paceggm.bench.figures.artifacts import ARTIFACTS, OUR_ARTIFACTS, OUR_RECIPES, PUBLICATION_RECIPES, SWEEPS
from paceggm.bench.figures.build import is_sweep
from paceggm.bench.figures.report import write_report
from paceggm.bench.figures.results import validate_results
from paceggm.bench.figures.synthetic import _row, write_synthetic_store
from paceggm.bench.figures.verdicts import CONTRADICTED, PARTLY, SUPPORTED, UNTESTABLE
from paceggm.bench.methods import method_defaults
from paceggm.bench.schema import TASK_COLUMNS, with_param_columns
from paceggm.bench.summary import format_summary, summarize

METHODS = ("paceggm", "ssp", "diagonal", "coinpress")
REAL = ("adult", "ibm")
POPS = ("pop_sparse_d30_n10000", "pop_sparse_d30_n10000_loose")
SPIKED = "pop_spiked_d30_n10000"


def _results(experiment, datasets, coinpress=(2.0, 2.0), *, trials=5, rhos=(0.01, 0.1, 1.0), noise=0.05,
             populations=False) -> pd.DataFrame:
    """A results table in the harness's shape: CoinPress's (Mahalanobis, Frobenius) errors are SSP's times
    ``coinpress`` (per trial, up to log-normal noise of width ``noise``); task columns filled as measured."""
    pace = method_defaults("paceggm")
    rows = []
    for ds in datasets:
        for m in METHODS:
            for rho in rhos:
                for t in range(trials):
                    r = _row(experiment, ds, (10_000, 30), pace, "none" if populations else "strict", (m, m, {}),
                             rho, t, 0.0)
                    rng = np.random.default_rng([zlib.crc32(f"{ds}/{m}".encode()), int(rho * 1000), t])
                    ssp = 1.0 / np.sqrt(rho)
                    scale = {"paceggm": (0.5, 0.5), "ssp": (1.0, 1.0), "diagonal": (3.0, 3.0)}.get(m, coinpress)
                    maha, frob = (ssp * f * float(np.exp(rng.normal(0, noise))) for f in scale)
                    task = dict.fromkeys(TASK_COLUMNS, np.nan)
                    task.update({f"subspace_k{k}": min(1.0, 0.1 * k * scale[1]) for k in (1, 3, 5)})
                    if populations:
                        task.update(mahalanobis_pop=maha * 1.01, frobenius_pop=frob * 1.01,
                                    **{f"subspace_k{k}_pop": min(1.0, 0.11 * k * scale[1]) for k in (1, 3, 5)})
                        if "spiked" not in ds:  # a spiked population's precision is dense: no support to recover
                            task.update(support_precision=0.8, support_recall=0.5, support_f1=2 * 0.4 / 1.3)
                    rows.append({**r, "mahalanobis": maha, "frobenius": frob, **task})
    df = with_param_columns(pd.DataFrame(rows))
    for col in ("n_measured_diag", "n_measured_offdiag", "n_rounds"):
        df[col] = df[col].astype("Int64")
    return df


def _tables(real=(2.0, 2.0), loose=(2.0, 2.0)):
    """Validated tables of both recipes; the tight population is held equal to SSP (P1 does not read it)."""
    pops = pd.concat([_results(P.POPULATIONS, POPS[:1], (1.0, 1.0), populations=True),
                      _results(P.POPULATIONS, POPS[1:], loose, populations=True)], ignore_index=True)
    return {P.REAL: validate_results(_results(P.REAL, REAL, real)), P.POPULATIONS: validate_results(pops)}


def _verdicts(tables):
    return {v.claim: v for v in P.p1(tables)}


def test_p1_is_supported_where_coinpress_is_worse_beyond_noise_on_both_errors():
    found = _verdicts(_tables(real=(2.0, 2.0), loose=(1.5, 3.0)))
    assert [v.verdict for v in found.values()] == [SUPPORTED, SUPPORTED]
    real = found["P1 (real data)"]
    assert "significantly worse than SSP in 6 of 6 cells" in real.evidence  # both data sets × three ρ
    assert "2 data sets" in real.evidence and "÷ PACE-GGM 4.0" in real.evidence
    assert "equal methods: ≤ 1 by noise" in real.evidence  # Binomial(6, 0.025)'s 97.5 % quantile
    assert "not the publication" not in real.claim and "not among its numbered claims" in real.statement


def test_p1_is_contradicted_where_coinpress_is_never_worse_and_judged_per_arm():
    found = _verdicts(_tables(real=(0.8, 0.8), loose=(2.0, 2.0)))
    assert found["P1 (real data)"].verdict == CONTRADICTED
    assert found["P1 (loose bound)"].verdict == SUPPORTED  # the loose arm reads its own rows only
    assert "1 data set;" in found["P1 (loose bound)"].evidence


def test_p1_is_partly_supported_when_the_errors_disagree():
    found = _verdicts(_tables(real=(2.0, 0.8), loose=(1.0, 1.0)))
    assert found["P1 (real data)"].verdict == PARTLY
    assert "better in 6" in found["P1 (real data)"].evidence
    # equal to SSP up to noise: no more significant cells than noise alone gives
    assert found["P1 (loose bound)"].verdict == CONTRADICTED


def test_p1_is_not_testable_without_its_recipe_or_without_coinpress():
    assert [v.verdict for v in P.p1({})] == [UNTESTABLE, UNTESTABLE]
    tables = _tables()
    tables[P.REAL] = tables[P.REAL][tables[P.REAL]["method"] != "coinpress"]
    found = _verdicts(tables)
    assert found["P1 (real data)"].verdict == UNTESTABLE and "CoinPress and SSP" in found["P1 (real data)"].untestable
    assert found["P1 (loose bound)"].verdict == SUPPORTED


def test_the_noise_bound_and_the_paired_test():
    assert P.noise_bound(6) == 1 and P.noise_bound(27) == 3 and P.noise_bound(0) == 0
    lr = pd.DataFrame({"dataset": "a", "rho": 1.0, "trial": range(4), "log_ratio": [0.5, 0.6, 0.4, 0.5]})
    cell = P.cell_tests(lr).iloc[0]
    assert cell["trials"] == 4 and cell["p_worse"] < 0.01 < 0.99 < cell["p_better"]
    ratio = P.resampled_ratio(lr, seed_key="t", draws=200)
    assert np.all((ratio >= np.exp(0.4)) & (ratio <= np.exp(0.6)))


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("peers")
    for name, df in ((P.REAL, _results(P.REAL, REAL, trials=3)),
                     (P.POPULATIONS, _results(P.POPULATIONS, (*POPS, SPIKED), trials=3, populations=True))):
        (root / "runs" / name).mkdir(parents=True)
        df.to_parquet(root / "runs" / name / "results.parquet", index=False)
    mine = [s for s in ARTIFACTS if s.name in OUR_ARTIFACTS or s.name == "claims_verdicts"]
    log = build_all(root / "runs", root / "out", FiguresConfig(formats=("png",)), artifacts=mine)
    return log, write_report(log)


def test_our_artifacts_build_from_the_peers_recipes(built):
    log, report = built
    out = log.out
    for f in ("peers_errors.png", "peers_errors_populations.png", "tables/peers_tasks.md",
              "tables/peers_tasks_populations.md", "tables/peers_graph_populations.md",
              "tables/peers_verdicts.md"):
        assert (out / f).is_file() and (out / f).stat().st_size > 0, f
    sources = {a.name: a.source for a in log.artifacts if a.name in OUR_ARTIFACTS}
    assert sources == {"peers_errors": P.REAL, "peers_errors_populations": P.POPULATIONS,
                       "peers_tasks": P.REAL, "peers_tasks_populations": P.POPULATIONS,
                       "peers_graph_populations": P.POPULATIONS,
                       "peers_verdicts": f"{P.REAL}, {P.POPULATIONS}"}
    # ours, not the publication's: its artifacts and verdicts C1–C13 are not built from these recipes
    assert log.publication and not (out / "tables" / "claims_verdicts.md").exists()
    text = report.read_text(encoding="utf-8")
    assert "Our statement P1 (CoinPress), not the publication's" in text and "(tables/peers_verdicts.md)" in text
    tasks = (out / "tables" / "peers_graph_populations.md").read_text(encoding="utf-8")
    assert "0.80 / 0.50 / 0.62" in tasks and SPIKED not in tasks  # precision / recall / F1, sparse precisions only
    assert SPIKED in (out / "tables" / "peers_tasks_populations.md").read_text(encoding="utf-8")
    # a metric a population does not define (the spiked one's support) is no failed cell
    assert all(not a.problems for a in log.artifacts if a.name in OUR_ARTIFACTS)


def test_our_recipes_are_sweeps_apart_from_the_publications():
    config = FiguresConfig()
    assert OUR_RECIPES == {P.REAL, P.POPULATIONS} and not OUR_RECIPES & PUBLICATION_RECIPES
    assert is_sweep(P.REAL, config) and is_sweep(P.POPULATIONS, config)
    # a sweep's own artifacts go to <out>/<experiment>/<name>: never one of ours at <out>/<name>
    assert not {s.name for s in ARTIFACTS if s.sources == SWEEPS} & OUR_ARTIFACTS


def test_a_report_of_the_publications_recipes_holds_none_of_ours(tmp_path):
    write_synthetic_store(tmp_path / "runs", experiments=("measurements",), datasets=("adult",), rhos=(1.0,),
                          trials=2)
    mine = [s for s in ARTIFACTS if s.name in OUR_ARTIFACTS or s.name == "measurements"]
    log = build_all(tmp_path / "runs", tmp_path / "out", FiguresConfig(formats=("png",)), artifacts=mine)
    assert [a.name for a in log.artifacts] == ["measurements"]
    assert "peers" not in (write_report(log)).read_text(encoding="utf-8")


def test_the_summary_prints_the_task_columns_a_table_has():
    real = summarize(validate_results(_results(P.REAL, REAL[:1], trials=2)))
    assert {"subspace_k1", "subspace_k5"} <= set(real.columns) and "support_f1" not in real.columns
    pops = summarize(validate_results(_results(P.POPULATIONS, POPS[:1], trials=2, populations=True)))
    assert {"mahalanobis_pop", "subspace_k3_pop", "support_f1"} <= set(pops.columns)
    assert format_summary(pops).splitlines()[0].split()[-4:] == ["support_f1", "fit", "time", "(s)"]

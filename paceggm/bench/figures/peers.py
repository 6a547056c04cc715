"""Our comparison of PACE-GGM with the peers the publication left out, and our statement P1 on CoinPress.

These are *ours*, not the publication's: the recipes ``peers`` (real data, strict
preprocessing, errors against XᵀX/n) and ``peers_populations`` (populations with a
known Σ, errors against Σ, the loose-bound arm beside) are not among its experiments,
and P1 is not among its numbered statements C1–C13. The publication only says, in a
footnote and without numbers, that CoinPress "performed poorly in our setup"; P1 turns
that into a criterion stated here, before any result is read (:func:`p1`), judged
with the machinery of :mod:`.verdicts`: shared trial seeds, a noise-calibrated count
of significant cells, and whole trials resampled for the interval of the ratio.

The entries of the table of artifacts that draw from these recipes are in
:mod:`.artifacts` (:data:`~.artifacts.OUR_ARTIFACTS`).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
from scipy import stats

from paceggm.bench.schema import SUBSPACE_KS
from paceggm.bench.summary import trial_stats

from . import style
from .replicate import keyed_rng, poisson_binomial
from .results import datasets_by_d, dims, select_variants
from .tables import MISSING, Table, dataset_row_label, fmt_sig, rho_label
from .verdicts import CONTRADICTED, PARTLY, SUPPORTED, UNTESTABLE, Verdict, verdict_table

#: The recipes of our comparison (conf/experiment/): real data, and populations with a known Σ.
REAL, POPULATIONS = "peers", "peers_populations"
ERRORS = ("mahalanobis", "frobenius")
POP_ERRORS = ("mahalanobis_pop", "frobenius_pop")
SUBSPACE = tuple(f"subspace_k{k}" for k in SUBSPACE_KS)
SUBSPACE_POP = tuple(f"subspace_k{k}_pop" for k in SUBSPACE_KS)
SUPPORT = ("support_precision", "support_recall", "support_f1")
#: The loose-bound arm's data sets end so (paceggm.bench.data.populations: sd = B/20).
LOOSE = "_loose"

#: One-sided level of each cell's paired test; the noise-alone count of significant cells is Binomial(cells, LEVEL).
LEVEL = 0.025
#: Whole-trial resamples of the interval of CoinPress's error ratio (fixed seeds).
RESAMPLES = 2000


def peer_rows(df: pd.DataFrame, config=None) -> pd.DataFrame:
    """Every method run with its defaults (the peers recipes run no variants)."""
    return select_variants(df)


def graph_rows(df: pd.DataFrame, config=None) -> pd.DataFrame:
    """:func:`peer_rows` of the populations whose precision has a support to recover (not the spiked one's,
    which is dense: its support columns are NaN, not a failure)."""
    rows = peer_rows(df)
    if not len(rows) or "support_f1" not in rows:
        return rows.iloc[:0]
    defined = set(rows.loc[np.isfinite(pd.to_numeric(rows["support_f1"], errors="coerce")), "dataset"])
    return rows[rows["dataset"].isin(defined)]


def task_table(rows: pd.DataFrame, metrics, *, name: str, caption: str) -> Table:
    """Mean over trials of each of ``metrics``, written ``a / b / …``, per (data set, ρ) and method."""
    means = {m: trial_stats(rows, m, by=("dataset", "rho", "variant"))["mean"] for m in metrics}
    looks = style.variant_styles(rows)
    variants = style.variant_order(rows["variant"].unique(), looks)
    d, rhos = dims(rows), sorted(rows["rho"].unique())
    index = [(ds, r) for ds in datasets_by_d(rows) for r in rhos]
    text = pd.DataFrame(MISSING, index=[f"{dataset_row_label(ds, d)}, {rho_label(r)}" for ds, r in index],
                        columns=[style.look(v, looks).label for v in variants])
    text.index.name = "data set, ρ"
    for (ds, r), label in zip(index, text.index):
        for v, col in zip(variants, text.columns):
            values = [means[m].get((ds, r, v), np.nan) for m in metrics]
            if any(np.isfinite(values)):
                text.loc[label, col] = " / ".join(fmt_sig(x, 2) for x in values)
    data = pd.concat(means, axis=1).reset_index() if means else pd.DataFrame()
    return Table(name, caption, text, data)


def real_task_tables(rows, ctx) -> list[Table]:
    ks = ", ".join(str(k) for k in SUBSPACE_KS)
    return [task_table(rows, SUBSPACE, name="peers_tasks",
                       caption=f"PCA on real data: the projection distance between the top-k eigenspaces of the "
                               f"release and of XᵀX/n, k = {ks} (written k1 / k3 / k5; 0 is exact), mean over "
                               "trials, per data set, ρ and method. — where undefined (tied eigenvalues).")]


def population_task_tables(rows, ctx) -> list[Table]:
    ks = ", ".join(str(k) for k in SUBSPACE_KS)
    return [task_table(rows, SUBSPACE_POP, name="peers_tasks_populations",
                       caption=f"PCA on the populations: the projection distance between the top-k eigenspaces of "
                               f"the release and of Σ, k = {ks} (k1 / k3 / k5), mean over trials; — where Σ's "
                               "top-k eigenspace is not unique (tied eigenvalues).")]


def graph_tables(rows, ctx) -> list[Table]:
    return [task_table(rows, SUPPORT, name="peers_graph_populations",
                       caption="Graph recovery on the populations whose precision is sparse: precision / recall / "
                               "F1 of the support of the released precision (thresholded where the method is "
                               "dense) against Σ⁻¹'s, mean over trials.")]


# ---- P1: CoinPress performs poorly (our statement, judged like C1–C13) -----------------------------------

P1_STATEMENT = ("CoinPress performs poorly in our setup (the publication's footnote, no numbers given; our "
                "statement, not among its numbered claims).")
P1_CRITERION = ("A (data set, ρ) cell counts when CoinPress's error is significantly above SSP's at the same ρ: the "
                "mean over paired trials (shared trial seeds) of log(CoinPress ÷ SSP) beyond Student's one-sided "
                f"{100 * LEVEL:g} % point. Supported: in ≥ 50 % of cells on both errors, and in more cells than "
                f"two equal methods would give by noise alone (97.5 % quantile of Binomial(cells, {LEVEL:g})); "
                "contradicted: in no more cells than noise alone on both errors; partly otherwise.")

#: The arms P1 is judged on: (id, experiment, which data sets, errors, words).
P1_ARMS = (
    ("P1 (real data)", REAL, lambda ds: True, ERRORS, "real data, strict preprocessing, errors against XᵀX/n"),
    ("P1 (loose bound)", POPULATIONS, lambda ds: ds.endswith(LOOSE), POP_ERRORS,
     "populations with sd = B/20 (the regime CoinPress was designed for), errors against Σ"),
)


def paired_log_ratios(rows: pd.DataFrame, metric: str, a: str = "coinpress", b: str = "ssp") -> pd.DataFrame:
    """log(``a``'s error ÷ ``b``'s) per (data set, ρ, trial), over the trials both have ok and finite."""
    ok = rows[(rows["status"] == "ok") & rows["variant"].isin([a, b])]
    ok = ok[np.isfinite(pd.to_numeric(ok[metric], errors="coerce")) & (ok[metric] > 0)]
    wide = ok.pivot_table(index=["dataset", "rho", "trial"], columns="variant", values=metric, aggfunc="first")
    if not {a, b} <= set(wide.columns):
        return pd.DataFrame(columns=["dataset", "rho", "trial", "log_ratio"])
    wide = wide[[a, b]].dropna()
    return np.log(wide[a] / wide[b]).rename("log_ratio").reset_index()


def cell_tests(log_ratios: pd.DataFrame) -> pd.DataFrame:
    """Per (data set, ρ) with ≥ 2 paired trials: trials, mean log ratio, one-sided p-values (a worse, a better)."""
    out = []
    for (ds, rho), g in log_ratios.groupby(["dataset", "rho"]):
        x = g["log_ratio"].to_numpy(dtype=float)
        if len(x) < 2:
            continue
        mean, se = float(x.mean()), float(x.std(ddof=1) / np.sqrt(len(x)))
        if se > 0:
            t = mean / se
            worse, better = float(stats.t.sf(t, len(x) - 1)), float(stats.t.cdf(t, len(x) - 1))
        else:  # every trial the same ratio: its sign decides
            worse, better = float(mean <= 0), float(mean >= 0)
        out.append({"dataset": ds, "rho": rho, "trials": len(x), "mean_log_ratio": mean,
                    "p_worse": worse, "p_better": better})
    return pd.DataFrame(out, columns=["dataset", "rho", "trials", "mean_log_ratio", "p_worse", "p_better"])


def noise_bound(cells: int, level: float = LEVEL) -> int:
    """The 97.5 % quantile of the number of significant cells two equal methods give by noise alone."""
    return int(np.searchsorted(np.cumsum(poisson_binomial(np.full(cells, level))), 0.975 - 1e-12))


def resampled_ratio(log_ratios: pd.DataFrame, *, seed_key: str, draws: int = RESAMPLES) -> np.ndarray:
    """Geometric mean over cells of CoinPress ÷ SSP, each cell's paired trials resampled whole."""
    rng = keyed_rng(seed_key)
    means = np.zeros(draws)
    groups = [g["log_ratio"].to_numpy(dtype=float) for _, g in log_ratios.groupby(["dataset", "rho"])]
    for x in groups:
        means += x[rng.integers(0, len(x), size=(draws, len(x)))].mean(axis=1)
    return np.exp(means / max(len(groups), 1))


def _versus(rows, metric, other) -> float:
    """Geometric mean over cells of CoinPress's mean error ÷ ``other``'s (beside the verdict, not judged)."""
    s = trial_stats(rows, metric, by=("dataset", "rho", "variant"))["mean"].unstack("variant")
    if not {"coinpress", other} <= set(s.columns):
        return np.nan
    r = (s["coinpress"] / s[other]).dropna()
    return float(np.exp(np.log(r).mean())) if len(r) else np.nan


def p1_arm(tables, claim, experiment, keep, errors, words) -> Verdict:
    """P1 on one arm: the counts of significant cells per error against the noise-alone bound."""
    st = f"{P1_STATEMENT} Arm: {words}."
    df = tables.get(experiment)
    if df is None or not (df["status"] == "ok").any():
        return Verdict(claim, st, P1_CRITERION, f"no results of the {experiment} recipe", UNTESTABLE,
                       f"no results of the {experiment} recipe")
    rows = select_variants(df[df["dataset"].map(keep)])
    found, parts = [], []
    for m in errors:
        lr = paired_log_ratios(rows, m)
        cells = cell_tests(lr)
        if not len(cells):
            why = f"no (data set, ρ) cell with two paired trials of CoinPress and SSP on {m}"
            return Verdict(claim, st, P1_CRITERION, why, UNTESTABLE, why)
        n = len(cells)
        worse, better = int((cells["p_worse"] < LEVEL).sum()), int((cells["p_better"] < LEVEL).sum())
        q = noise_bound(n)
        lo, hi = np.quantile(resampled_ratio(lr, seed_key=f"{claim}/{m}"), [0.025, 0.975])
        ratio = float(np.exp(cells["mean_log_ratio"].mean()))
        found.append((worse, n, q))
        parts.append(f"{m}: CoinPress significantly worse than SSP in {worse} of {n} cells, better in {better} "
                     f"(equal methods: ≤ {q} by noise, 97.5 %); CoinPress ÷ SSP geometric mean {fmt_sig(ratio)} "
                     f"(95 % over resampled trials {fmt_sig(lo)}–{fmt_sig(hi)}), ÷ PACE-GGM "
                     f"{fmt_sig(_versus(rows, m, 'paceggm'))}")
    if all(w >= n / 2 and w > q for w, n, q in found):
        verdict = SUPPORTED
    elif all(w <= q for w, n, q in found):
        verdict = CONTRADICTED
    else:
        verdict = PARTLY
    data_sets = rows.loc[rows["status"] == "ok", "dataset"].nunique()
    sets = f"{data_sets} data set" + ("s" if data_sets != 1 else "")
    return Verdict(claim, st, P1_CRITERION, f"{sets}; " + "; ".join(parts), verdict)


def p1(tables: dict[str, pd.DataFrame]) -> list[Verdict]:
    """P1 judged on each arm of :data:`P1_ARMS`, from the results ``tables`` (experiment → results table).

    Examples
    --------
    >>> [v.verdict for v in p1({})]
    ['not testable here', 'not testable here']
    """
    return [p1_arm(tables, *arm) for arm in P1_ARMS]


def p1_table(found: list[Verdict]) -> Table:
    t = verdict_table(found)
    summary = t.caption.split("Verdicts: ", 1)[-1]
    return replace(t, name="peers_verdicts",
                   caption="Our statement P1 (not the publication's: its CoinPress footnote made into a criterion "
                           f"stated in advance), judged on each arm by the criterion shown. Verdicts: {summary}")


def p1_artifact(ctx, art) -> None:
    """The figures stage's entry: P1's table from every results table read."""
    from .tables import to_markdown, write_table

    found = p1(ctx.tables)
    t = p1_table(found)
    art.files = write_table(t, ctx.out / "tables")
    art.markdown = [f"*{t.caption}*\n\n" + to_markdown(t)]
    art.source = ", ".join(e for e in (REAL, POPULATIONS) if e in ctx.tables)

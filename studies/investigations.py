"""Investigations of REPRODUCTION.md §2 and §8: the d − 1 columns and the regression gap to AdaSSP.

Two sub-commands, each printing its tables to standard output::

    python -m studies.investigations regression-gap \\
        --datasets communities_crime,life_expectancy,pol,bank32nh --rhos 0.01,0.1,1 --trials 5
    python -m studies.investigations drop-target \\
        --full figures/results/measurements/results.parquet \\
        --dropped runs/measurements_drop_target/results.parquet

*regression-gap* refits, on the regression recipe's splits and seeds, AdaSSP at failure
probability 0.05 (as run) and 0.5, PACE-GGM regression as run, and PACE-GGM given the whole ρ
with no ridge, and reports each one's mean test MSE ÷ AdaSSP's per (data set, ρ), with the
number of y's cross-covariances PACE-GGM measures. *drop-target* sets the measured-entry
counts of two harness result tables (full d, and a ``drop_target=true`` run of the same
cells) beside the publication's Table 3, and optionally the runtime of two runs beside Table 4.
"""

from __future__ import annotations

import argparse
import os
import warnings
from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd

from paceggm import PACEGGM
from paceggm.baselines.regression import AdaSSP, PACEGGMRegression, _solve_ridge
from paceggm.bench.execute import _split
from paceggm.bench.regression_references import regression_data
from paceggm.bench.runner import resolve_loader
from paceggm.bench.seeds import data_seed, method_seed, seed_sequence
from paceggm.exceptions import PrivacyLeakWarning

__all__ = ["REGRESSION_VARIANTS", "regression_gap", "regression_gap_ratios", "regression_gap_summary",
           "drop_target_comparison", "main"]

# Test-MSE columns of :func:`regression_gap`, in the order REPRODUCTION.md §8 names them.
REGRESSION_VARIANTS = ("adassp", "adassp_p0.5", "paceggm", "paceggm_full_rho_no_ridge")


def regression_gap(datasets: Sequence[str], rhos: Sequence[float], trials: int, *, base_seed: int = 0,
                   preprocessing: str = "paper", test_fraction: float = 0.2,
                   loader: Callable | None = None, data_dir: str | None = None) -> pd.DataFrame:
    """Test MSE of AdaSSP and PACE-GGM regression variants, one row per (data set, ρ, trial).

    Parameters
    ----------
    datasets : sequence of str
        Data sets with a regression target.
    rhos : sequence of float
        Total zCDP budgets; every variant spends the whole of it.
    trials : int
        Trials 0, …, ``trials - 1``, each with the harness's split (``data_seed``) of that trial.
    base_seed : int, default 0
        The harness's ``seed``; 0 is the committed runs'.
    preprocessing : {"paper", "strict"}, default "paper"
    test_fraction : float, default 0.2
        The harness's held-out share.
    loader : callable, optional
        A harness data-set loader (``loader(name, *, preprocessing, data_dir)``); the
        harness's default when omitted.
    data_dir : str, optional
        Passed to the loader; the default loader then reads ``PACEGGM_DATA_DIR``.

    Returns
    -------
    pandas.DataFrame
        Columns ``dataset, rho, trial, null`` (test MSE of predicting 0), one test-MSE column
        per :data:`REGRESSION_VARIANTS`, ``y_row_measured`` and ``y_row_measured_full_rho``
        (how many of y's ``d`` cross-covariances PACE-GGM measured, as run and with the whole ρ).

    Notes
    -----
    Every fit of a trial draws its noise from PACE-GGM regression's harness seed, so the
    variants of a trial differ by their method only, not by their noise stream.
    """
    records = []
    for name in datasets:
        data = regression_data(name, preprocessing=preprocessing, loader=loader, data_dir=data_dir)
        X, y = data.features, data.target
        d = X.shape[1]
        for rho in rhos:
            for trial in range(trials):
                train, test = _split(len(y), test_fraction, data_seed(base_seed, name, trial))
                seed = method_seed(base_seed, name, trial, "paceggm_regression", rho)
                kw = dict(bound=data.bound, bound_check=data.bound_check)
                Xtr, ytr, Xte, yte = X[train], y[train], X[test], y[test]
                rec = dict(dataset=name, rho=float(rho), trial=trial, null=_mse(np.zeros(len(test)), yte))
                with warnings.catch_warnings():
                    # paper data exceed the declared bound, which the harness waives knowingly;
                    # any other warning (e.g. a solver's) still reaches the user
                    warnings.simplefilter("ignore", PrivacyLeakWarning)
                    ada = AdaSSP(rho, random_state=seed_sequence(seed), **kw).fit(Xtr, ytr)
                    ada_half = AdaSSP(rho, failure_prob=0.5, random_state=seed_sequence(seed), **kw).fit(Xtr, ytr)
                    reg = PACEGGMRegression(rho, random_state=seed_sequence(seed), **kw).fit(Xtr, ytr)
                    # the ridge's share of ρ goes to the covariance instead; same total spend
                    est = PACEGGM(rho, random_state=seed_sequence(seed), **kw).fit(np.column_stack([Xtr, ytr]))
                rec["adassp"] = _mse(ada.predict(Xte), yte)
                rec["adassp_p0.5"] = _mse(ada_half.predict(Xte), yte)
                rec["paceggm"] = _mse(reg.predict(Xte), yte)
                rec["y_row_measured"] = int(reg.pace_ggm_.pattern_[d, :d].sum())
                cov = est.covariance_
                rec["paceggm_full_rho_no_ridge"] = _mse(Xte @ _solve_ridge(cov[:d, :d], cov[:d, d], 0.0), yte)
                rec["y_row_measured_full_rho"] = int(est.pattern_[d, :d].sum())
                records.append(rec)
    return pd.DataFrame.from_records(records)


def _mse(pred, y: np.ndarray) -> float:
    return float(np.mean((np.ravel(pred) - y) ** 2))


def regression_gap_ratios(trials: pd.DataFrame) -> pd.DataFrame:
    """Mean test MSE of each variant ÷ AdaSSP's mean test MSE, per (data set, ρ).

    Parameters
    ----------
    trials : pandas.DataFrame
        :func:`regression_gap`'s output.

    Returns
    -------
    pandas.DataFrame
        Indexed by ``(dataset, rho)``: one ratio column per :data:`REGRESSION_VARIANTS`
        (``adassp`` is 1 by construction), ``null`` (the null model's ratio), and the mean
        ``y_row_measured`` and ``y_row_measured_full_rho``.
    """
    means = trials.groupby(["dataset", "rho"], sort=False).mean(numeric_only=True)
    ratios = means[[*REGRESSION_VARIANTS, "null"]].div(means["adassp"], axis=0)
    return ratios.join(means[["y_row_measured", "y_row_measured_full_rho"]])


def regression_gap_summary(ratios: pd.DataFrame) -> pd.DataFrame:
    """Across the cells of :func:`regression_gap_ratios`: median, cells below AdaSSP, range.

    Parameters
    ----------
    ratios : pandas.DataFrame
        :func:`regression_gap_ratios`' output.

    Returns
    -------
    pandas.DataFrame
        One row per variant and the null model: ``median``, ``better`` (cells with ratio < 1),
        ``cells``, ``min`` and ``max``.
    """
    cols = [c for c in (*REGRESSION_VARIANTS, "null") if c != "adassp"]
    rows = {c: dict(median=ratios[c].median(), better=int((ratios[c] < 1).sum()),
                    cells=len(ratios), min=ratios[c].min(), max=ratios[c].max()) for c in cols}
    return pd.DataFrame.from_dict(rows, orient="index").astype({"better": int, "cells": int})


def drop_target_comparison(full: pd.DataFrame, dropped: pd.DataFrame, *, datasets: Sequence[str] | None = None,
                           table: str = "measurements") -> tuple[pd.DataFrame, pd.DataFrame]:
    """Our full-d and d − 1 runs beside one published table, per (data set, ρ).

    Parameters
    ----------
    full, dropped : pandas.DataFrame
        Harness result tables (``results.parquet``) of the same cells, run on every column
        and with ``drop_target=true``.
    datasets : sequence of str, optional
        Restrict both to these data sets (the full-d table usually holds more).
    table : {"measurements", "runtime"}, default "measurements"
        Table 3 (mean off-diagonal entries measured) or Table 4 (seconds).

    Returns
    -------
    cells : pandas.DataFrame
        Indexed by (dataset, rho): ``published``, then ``ours``, ``ratio`` and ``z`` for each run.
    distances : pandas.DataFrame
        One row per run: :class:`~paceggm.bench.figures.published.Distance`'s fields.
    """
    from dataclasses import asdict

    from paceggm.bench.figures import published as pub
    from paceggm.bench.figures.results import select_variants, validate_results
    from paceggm.bench.summary import trial_stats

    metric, value = {"measurements": ("n_measured_offdiag", "offdiagonal_mean"),
                     "runtime": ("wall_time", "seconds_mean")}[table]
    reference = pub.published_table(table)
    cells, distances = {}, []
    for label, rows in (("full d", full), ("d - 1", dropped)):
        rows = select_variants(validate_results(rows), methods={"paceggm"})
        if datasets is not None:
            rows = rows[rows["dataset"].isin(datasets)]
        ref = reference[reference["dataset"].isin(rows["dataset"].unique())]
        text, dist = pub.compare_numeric(trial_stats(rows, metric, by=("dataset", "rho")), ref,
                                         value=value, name=label, what="", preprocessing="paper")
        cells[label] = text.data.set_index(["dataset", "rho"])
        distances.append(asdict(dist))
    both = pd.concat({"published": cells["full d"]["published"],
                      **{f"{k} {c}": cells[k][c] for k in cells for c in ("ours", "ratio", "z")}}, axis=1)
    return both, pd.DataFrame(distances).set_index("table")


def _distances_text(distances: pd.DataFrame) -> str:
    """Each run's counts beside what an exact replicate of our run would give (mean, 95 % range)."""
    lines = []
    for label, row in distances.iterrows():
        rep = row.get("replicate") or {}
        counts = ", ".join(f"{c['name']} {c['observed']} of {c['cells']} (replicate {c['mean']:.2f}, "
                           f"{c['low']}-{c['high']})" for c in rep.get("counts", ()))
        lines.append(f"{label}: {row['cells']} cells, median ratio {row['median_ratio']:.3f}; {counts}")
        if rep.get("note"):
            lines.append(f"  ({rep['note']})")
    return "\n".join(lines)


def _floats(text: str) -> list[float]:
    return [float(v) for v in text.split(",") if v]


def _names(text: str) -> list[str]:
    return [v for v in text.split(",") if v]


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point (``python -m studies.investigations``).

    Parameters
    ----------
    argv : sequence of str, optional
        Arguments; ``sys.argv[1:]`` when omitted.

    Returns
    -------
    int
        Exit status.
    """
    parser = argparse.ArgumentParser(prog="python -m studies.investigations", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    reg = sub.add_parser("regression-gap", help="PACE-GGM regression variants against AdaSSP")
    reg.add_argument("--datasets", type=_names, default=_names("communities_crime,life_expectancy,pol,bank32nh"))
    reg.add_argument("--rhos", type=_floats, default=_floats("0.01,0.1,1"))
    reg.add_argument("--trials", type=int, default=5)
    reg.add_argument("--seed", type=int, default=0, help="the harness's base seed")
    reg.add_argument("--preprocessing", default="paper", choices=("paper", "strict"))
    reg.add_argument("--loader", default=None, help="a harness loader, 'module:function'")
    reg.add_argument("--data-dir", default=os.environ.get("PACEGGM_DATA_DIR"))
    reg.add_argument("--out", default=None, help="also write the per-trial rows here (CSV)")
    drop = sub.add_parser("drop-target", help="full-d and d - 1 runs beside Table 3 (or 4)")
    drop.add_argument("--full", required=True, help="results.parquet of the full-d run")
    drop.add_argument("--dropped", required=True, help="results.parquet of the drop_target=true run")
    drop.add_argument("--datasets", type=_names, default=_names("parkinsons,pol,bank32nh,ailerons,spambase"))
    drop.add_argument("--table", default="measurements", choices=("measurements", "runtime"))
    args = parser.parse_args(argv)
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        if args.command == "regression-gap":
            rows = regression_gap(args.datasets, args.rhos, args.trials, base_seed=args.seed,
                                  preprocessing=args.preprocessing, loader=resolve_loader(args.loader),
                                  data_dir=args.data_dir)
            if args.out:
                rows.to_csv(args.out, index=False)
            ratios = regression_gap_ratios(rows)
            print("mean test MSE / AdaSSP's (y_row_measured: of d entries)")
            print(ratios.round(3).to_string())
            print()
            print(regression_gap_summary(ratios).round(3).to_string())
        else:
            cells, distances = drop_target_comparison(pd.read_parquet(args.full), pd.read_parquet(args.dropped),
                                                      datasets=args.datasets, table=args.table)
            print(_distances_text(distances))
            print()
            print(cells.round(2).to_string())
            ratio = cells[["full d ratio", "d - 1 ratio"]]
            print("\nmean |ours/published - 1| per data set")
            print((ratio - 1).abs().groupby(level="dataset").mean().round(3).to_string())
            if args.table == "runtime":
                # the published cells only, so the two runs sum over the same cells
                print("\nsum over the published cells:", cells[["full d ours", "d - 1 ours"]].sum().round(3).to_dict())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

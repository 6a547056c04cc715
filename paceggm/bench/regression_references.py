"""Reference test MSEs of the regression recipe: predicting 0, and non-private least squares.

The regression figure sets the private methods between two lines a reader needs to judge
them: the MSE of predicting 0 (what a method that learned nothing scores: the data are
centred) and of ordinary least squares on the same training split without privacy (what
the model class can reach). Both are computed on the harness's own splits (``data_seed``
of each data set and trial) and written as a small table beside the recipe's results::

    python -m paceggm.bench.regression_references \\
        --results figures/results/regression/results.parquet \\
        --out figures/results/regression/references.csv

The data sets, trials and preprocessing are read from the results table, so the
references match the committed cells exactly; the raw files come from ``PACEGGM_DATA_DIR``.
The figures stage reads ``references.csv`` when it is there; it runs no fit itself.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd

from paceggm.bench.execute import _split, prepare_data
from paceggm.bench.runner import resolve_loader
from paceggm.bench.seeds import data_seed

__all__ = ["COLUMNS", "reference_mses", "regression_data", "main"]

COLUMNS = ("dataset", "preprocessing", "trial", "n_test", "null", "ols")


def regression_data(name: str, *, preprocessing: str, loader: Callable | None = None, data_dir: str | None = None):
    """The harness's ``CellData`` of a regression data set (features and target), as its cells load it."""
    load = loader or resolve_loader(None)
    data = prepare_data(load(name, preprocessing=preprocessing, data_dir=data_dir), name=name,
                        preprocessing=preprocessing, bound_check="auto", need_target=True)
    if data.features is None:
        raise ValueError(data.target_error)
    return data


def reference_mses(datasets: Sequence[str], trials: Sequence[int], *, preprocessing: str = "paper",
                   base_seed: int = 0, test_fraction: float = 0.2, loader: Callable | None = None,
                   data_dir: str | None = None) -> pd.DataFrame:
    """Test MSE of predicting 0 (``null``) and of least squares (``ols``), one row per data set and trial.

    Least squares has no intercept, like the private methods (all fit the covariance of the
    centred data), and is solved by an SVD-based least-squares routine, so a rank-deficient
    design gets the minimum-norm solution.
    """
    records = []
    for name in datasets:
        data = regression_data(name, preprocessing=preprocessing, loader=loader, data_dir=data_dir)
        X, y = data.features, data.target
        for trial in trials:
            train, test = _split(len(y), test_fraction, data_seed(base_seed, name, int(trial)))
            coef = np.linalg.lstsq(X[train], y[train], rcond=None)[0]
            records.append(dict(dataset=name, preprocessing=preprocessing, trial=int(trial), n_test=len(test),
                                null=float(np.mean(y[test] ** 2)), ols=float(np.mean((X[test] @ coef - y[test]) ** 2))))
    return pd.DataFrame.from_records(records, columns=list(COLUMNS))


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point (``python -m paceggm.bench.regression_references``)."""
    p = argparse.ArgumentParser(prog="python -m paceggm.bench.regression_references",
                                description=__doc__.split("\n")[0])
    p.add_argument("--results", required=True, help="the regression recipe's results.parquet")
    p.add_argument("--out", required=True, help="CSV to write")
    p.add_argument("--seed", type=int, default=0, help="the harness's base seed")
    p.add_argument("--loader", default=None, help="a harness loader, 'module:function'")
    p.add_argument("--data-dir", default=os.environ.get("PACEGGM_DATA_DIR"))
    args = p.parse_args(argv)
    rows = pd.read_parquet(args.results)
    rows = rows[rows["status"] == "ok"]
    if not len(rows):
        p.error(f"{args.results} has no ok row")
    frames = [reference_mses(sorted(g["dataset"].unique()), sorted(g["trial"].unique()), preprocessing=prep,
                             base_seed=args.seed, loader=resolve_loader(args.loader), data_dir=args.data_dir)
              for prep, g in rows.groupby("preprocessing")]
    out = pd.concat(frames, ignore_index=True)
    out.to_csv(args.out, index=False, float_format="%.10g")
    print(out.groupby("dataset")[["null", "ols"]].mean().round(4).to_string())
    print(f"wrote {len(out)} rows -> {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

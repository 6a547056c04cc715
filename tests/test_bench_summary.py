"""The terminal summary of a results table."""

import numpy as np
import pandas as pd
import pytest

from paceggm.bench.__main__ import main
from paceggm.bench.summary import format_column, format_summary, summarize


def _table():
    rows = []
    for variant, base in (("paceggm", 1.0), ("ssp", 10.0)):
        for trial in range(3):
            rows.append(dict(dataset="a", variant=variant, rho=0.1, trial=trial, status="ok",
                             mahalanobis=base + trial, frobenius=base / 10, mse=np.nan, wall_time=0.5))
    rows.append(dict(dataset="a", variant="ssp", rho=1.0, trial=0, status="failed",
                     mahalanobis=np.nan, frobenius=np.nan, mse=np.nan, wall_time=np.nan))
    return pd.DataFrame(rows)


def test_means_over_ok_trials_and_failures_counted():
    s = summarize(_table()).set_index(["variant", "rho"])
    assert s.loc[("paceggm", 0.1), "mahalanobis"] == 2.0
    assert s.loc[("ssp", 0.1), "frobenius"] == 1.0
    assert s.loc[("ssp", 0.1), "trials"] == 3 and s.loc[("ssp", 0.1), "failed"] == 0
    assert s.loc[("ssp", 1.0), "trials"] == 0 and s.loc[("ssp", 1.0), "failed"] == 1
    assert "mse" not in s.columns  # no regression rows
    assert "paceggm" in format_summary(summarize(_table()))


def test_each_column_has_one_number_format_and_each_header_its_unit():
    rows = []
    for variant, (maha, frob, secs) in {"paceggm": (14012.3, 0.61314, 0.0123456), "ssp": (0.61314, 2.5e-4, 12.5),
                                        "diagonal": (783610079.29, 0.0002801, 1.0)}.items():
        rows.append(dict(dataset="a", variant=variant, rho=0.0001, trial=0, status="ok",
                         mahalanobis=maha, frobenius=frob, mse=np.nan, wall_time=secs))
    rows.append(dict(dataset="a", variant="ssp", rho=10.0, trial=0, status="failed",
                     mahalanobis=np.nan, frobenius=np.nan, mse=np.nan, wall_time=np.nan))
    header, *lines = format_summary(summarize(pd.DataFrame(rows))).splitlines()
    assert header.split() == ["dataset", "variant", "ρ", "(zCDP)", "ok", "trials", "failed", "cells",
                              "mahalanobis", "frobenius", "fit", "time", "(s)"]
    cells = {line.split()[1] + line.split()[2]: line.split()[3:] for line in lines}
    # 4 significant digits in fixed-point (the integer part whole, thousands grouped): never 1.4e+04 beside 0.6131
    assert cells["paceggm0.0001"] == ["1", "0", "14,012", "0.6131", "0.01235"]
    assert cells["ssp0.0001"] == ["1", "0", "0.6131", "0.0002500", "12.50"]
    assert cells["diagonal0.0001"] == ["1", "0", "783,610,079", "0.0002801", "1.000"]
    assert cells["ssp10"] == ["0", "1", "NaN", "NaN", "NaN"]  # ρ as given: 10 and 0.0001, not 1e+01
    assert not any("e+" in line or "e-" in line for line in lines)
    widths = {len(line) for line in lines}
    assert len(widths) == 1  # right-aligned numbers: the columns line up


def test_a_column_beyond_the_fixed_point_range_is_all_scientific():
    assert format_column([14012.3, 0.61314, 2.5e-4]) == ["14,012", "0.6131", "0.0002500"]
    assert format_column([1e-7, 0.61314, 14012.3]) == ["1.000e-07", "6.131e-01", "1.401e+04"]
    assert format_column([0.0, 9.99996, np.inf]) == ["0", "10.00", "inf"]


def test_rejects_a_table_without_the_schema():
    with pytest.raises(ValueError, match="missing columns"):
        summarize(pd.DataFrame({"x": [1]}))


def test_cli_reports_a_missing_table(tmp_path, capsys):
    assert main(["summary", "experiment=demo", f"runs_dir={tmp_path}"]) == 1
    assert "no results table" in capsys.readouterr().err

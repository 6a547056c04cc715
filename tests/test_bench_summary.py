"""The terminal summary of a results table."""

import numpy as np
import pandas as pd
import pytest

from paceggm.bench.__main__ import main
from paceggm.bench.summary import format_summary, summarize


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


def test_rejects_a_table_without_the_schema():
    with pytest.raises(ValueError, match="missing columns"):
        summarize(pd.DataFrame({"x": [1]}))


def test_cli_reports_a_missing_table(tmp_path, capsys):
    assert main(["summary", "experiment=demo", f"runs_dir={tmp_path}"]) == 1
    assert "no results table" in capsys.readouterr().err

"""Building the tidy results table of a store (:mod:`paceggm.bench.schema`)."""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from paceggm.bench.cells import Cell
from paceggm.bench.execute import COLUMNS
from paceggm.bench.store import CorruptCell, RunStore

__all__ = ["CollectReport", "collect", "to_frame"]

_INT = ("n", "d", "n_measured_diag", "n_measured_offdiag", "n_rounds", "n_solves", "n_capped_solves", "max_solve_iter")
_FLOAT = ("alpha", "beta", "rho", "mahalanobis", "frobenius", "mse", "rho_spent", "wall_time", "solve_time")


def to_frame(rows: Sequence[dict]):
    """Rows as a DataFrame with the schema's columns, order and dtypes."""
    import pandas as pd

    df = pd.DataFrame(list(rows), columns=list(COLUMNS))
    for col in _INT:
        df[col] = df[col].astype("Int64")
    for col in _FLOAT:
        df[col] = df[col].astype(float)
    df["trial"] = df["trial"].astype("int64")
    df["seed"] = df["seed"].astype("int64")
    for col in ("use_components", "guarantee_holds", "converged"):
        df[col] = df[col].astype("boolean")
    for col in ("experiment", "cell_key", "dataset", "preprocessing", "method", "variant", "solver",
                "status", "error", "params"):
        df[col] = df[col].fillna("").astype(str)
    return df.sort_values(["dataset", "variant", "rho", "trial"], kind="stable").reset_index(drop=True)


@dataclass
class CollectReport:
    path: Path
    n_rows: int
    n_ok: int
    n_failed: int
    missing: list[Cell] = field(default_factory=list)
    corrupt: list[CorruptCell] = field(default_factory=list)
    n_stale: int = 0  # cells on disk that the current grid does not ask for

    def format(self) -> str:
        lines = [f"collected {self.n_rows} cells (ok {self.n_ok}, failed {self.n_failed}, "
                 f"missing {len(self.missing)}, corrupt {len(self.corrupt)}) -> {self.path}"]
        if self.n_stale:
            lines.append(f"  {self.n_stale} stored cells are outside this config's grid and were left out")
        for c in self.corrupt:
            lines.append(f"  CORRUPT (not used; rerun to recompute): {c.path}: {c.reason}")
        for c in self.missing[:20]:
            lines.append(f"  missing: {c.variant} on {c.dataset}, rho={c.rho:g}, trial={c.trial} [{c.key}]")
        if len(self.missing) > 20:
            lines.append(f"  … and {len(self.missing) - 20} more missing cells")
        return "\n".join(lines)


def collect(store: RunStore, *, expected: Sequence[Cell] | None = None) -> tuple["object", CollectReport]:
    """Read every valid cell file of ``store`` into the tidy table and write it as Parquet.

    With ``expected`` (the cells of the current config), the table keeps only
    those cells and the report lists the ones not stored yet; without it,
    every valid cell file is used. Corrupt files are never used: they are
    listed in the report.

    Returns
    -------
    (pandas.DataFrame, CollectReport)
    """
    scan = store.scan()
    rows = scan.rows
    missing: list[Cell] = []
    n_stale = 0
    if expected is not None:
        keys = {c.key for c in expected}
        missing = [c for c in expected if c.key not in rows]
        n_stale = sum(1 for k in rows if k not in keys)
        rows = {k: r for k, r in rows.items() if k in keys}
    df = to_frame(list(rows.values()))
    store.root.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=store.root, prefix=".results.", suffix=".parquet.tmp")
    os.close(fd)
    try:
        df.to_parquet(tmp, index=False)
        os.replace(tmp, store.results_path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    n_ok = int((df["status"] == "ok").sum())
    report = CollectReport(store.results_path, len(df), n_ok, len(df) - n_ok, missing, scan.corrupt, n_stale)
    return df, report

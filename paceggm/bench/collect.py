"""Building the tidy results table of a store (:mod:`paceggm.bench.schema`)."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from paceggm.bench.cells import Cell
from paceggm.bench.execute import COLUMNS
from paceggm.bench.schema import with_param_columns
from paceggm.bench.store import CorruptCell, RunStore

__all__ = ["CollectReport", "collect", "grid_view", "publish", "to_frame"]

_INT = ("n", "d", "n_measured_diag", "n_measured_offdiag", "n_rounds", "n_solves", "n_capped_solves",
        "max_solve_iter")
_FLOAT = ("rho", "mahalanobis", "frobenius", "mse", "rho_spent", "wall_time", "solve_time")


def to_frame(rows: Sequence[dict]):
    """Rows as a DataFrame with the schema's columns, order and dtypes, then the ``p_*`` columns."""
    import pandas as pd

    df = pd.DataFrame(list(rows), columns=list(COLUMNS))
    for col in _INT:
        df[col] = df[col].astype("Int64")
    for col in _FLOAT:
        df[col] = df[col].astype(float)
    df["trial"] = df["trial"].astype("int64")
    df["seed"] = df["seed"].astype("int64")
    for col in ("guarantee_holds", "converged"):
        df[col] = df[col].astype("boolean")
    for col in ("experiment", "cell_key", "dataset", "preprocessing", "method", "variant",
                "status", "error", "params"):
        df[col] = df[col].fillna("").astype(str)
    df = with_param_columns(df)
    return df.sort_values(["dataset", "variant", "rho", "trial"], kind="stable").reset_index(drop=True)


@dataclass
class CollectReport:
    path: Path
    n_rows: int
    n_ok: int
    n_failed: int
    missing: list[Cell] = field(default_factory=list)
    corrupt: list[CorruptCell] = field(default_factory=list)
    n_outside: int = 0  # stored cells the current grid does not ask for (kept in the table)
    n_grid: int | None = None  # cells of the current grid, when one was given
    moved: dict = field(default_factory=dict)  # corrupt file -> where it was moved aside

    def format(self) -> str:
        lines = [f"collected {self.n_rows} cells (ok {self.n_ok}, failed {self.n_failed}, "
                 f"corrupt {len(self.corrupt)}) -> {self.path}"]
        if self.n_grid is not None:
            lines.append(f"  this grid: {self.n_grid} cells, {self.n_grid - len(self.missing)} stored, "
                         f"{len(self.missing)} missing; {self.n_outside} stored cells of other grids "
                         "are in the table too")
        for c in self.corrupt:
            where = f"moved to {self.moved[c.path]}; " if self.moved.get(c.path) is not None else ""
            lines.append(f"  CORRUPT (not used; {where}rerun to recompute): {c.path}: {c.reason}")
        for c in self.missing[:20]:
            lines.append(f"  missing: {c.variant} on {c.dataset}, rho={c.rho:g}, trial={c.trial} [{c.key}]")
        if len(self.missing) > 20:
            lines.append(f"  … and {len(self.missing) - 20} more missing cells")
        return "\n".join(lines)


def grid_view(table, cells: Sequence[Cell]):
    """The rows of ``table`` that belong to the grid ``cells`` (a recipe with its overrides).

    A results table holds every cell of its store; what one command line asks
    for is a view on it, selected by cell key.
    """
    keys = {c.key for c in cells}
    return table[table["cell_key"].isin(keys)].reset_index(drop=True)


def _unchanged(df, path: Path) -> bool:
    import pandas as pd

    if not path.is_file():
        return False
    try:
        old = pd.read_parquet(path)
    except Exception:  # damaged: rewrite it
        return False
    return list(old.columns) == list(df.columns) and old.dtypes.equals(df.dtypes) and old.equals(df)


def _write_table(df, path: Path) -> None:
    """Write ``df`` to ``path`` atomically, unless the file already holds exactly ``df``."""
    if _unchanged(df, path):
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.", suffix=".parquet.tmp")
    os.close(fd)
    try:
        df.to_parquet(tmp, index=False)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def publish(table, cells: Sequence[Cell], dest: Path, *, unavailable=()) -> tuple[bool, str]:
    """Write the grid view of ``table`` to ``dest`` if it holds every cell of ``cells``.

    This is how a reproduction's tables reach the committed copy: only a
    complete grid replaces it, so a partial run (a sweep stopped early, a
    reduced grid) can never shrink the published results. Cells of the data
    sets in ``unavailable`` (no file, no network when the sweep ran) are the
    one exception: they cannot be computed here, and are left out, said so.

    Returns
    -------
    (bool, str)
        Whether ``dest`` now holds the grid, and a sentence saying what happened.
    """
    view = grid_view(table, cells)
    stored = set(view["cell_key"])
    missing = [c for c in cells if c.key not in stored]
    waiting = [c for c in missing if c.dataset in set(unavailable)]
    if len(missing) > len(waiting):
        kept = f"{dest} left as it was" if dest.exists() else f"{dest} not written"
        return False, (f"not published: {len(missing) - len(waiting)} of the grid's {len(cells)} cells are "
                       f"not stored ({kept})")
    if not len(view):
        return False, f"not published: no cell of the grid is stored ({dest} left as it was)"
    _write_table(view, dest)
    note = ""
    if waiting:
        names = ", ".join(sorted({c.dataset for c in waiting}))
        note = f"; {len(waiting)} cells of unavailable data sets ({names}) left out"
    return True, f"published {len(view)} cells -> {dest}{note}"


def collect(store: RunStore, *, expected: Sequence[Cell] | None = None,
            quarantine: bool = False) -> tuple[object, CollectReport]:
    """Read every valid cell file of ``store`` into the tidy table and write it as Parquet.

    The table always holds every valid stored cell, whatever grid asked for
    it: a run of a reduced grid adds to the table, it never shrinks it. With
    ``expected`` (the cells of the current config) the report says how much
    of that grid is stored and lists the missing cells. Corrupt files are
    never used: they are listed in the report, and with ``quarantine=True``
    (only while holding the store's lock) moved aside into ``quarantine/``.
    An unchanged table is not rewritten (a finished store may be read-only);
    a damaged one is rebuilt from the cells.

    Returns
    -------
    (pandas.DataFrame, CollectReport)
        The whole table, and the report.
    """
    scan = store.scan()
    rows = scan.rows
    missing: list[Cell] = []
    n_outside = 0
    if expected is not None:
        keys = {c.key for c in expected}
        missing = [c for c in expected if c.key not in rows]
        n_outside = sum(1 for k in rows if k not in keys)
    df = to_frame([rows[k] for k in sorted(rows)])
    _write_table(df, store.results_path)
    moved = dict((bad.path, dest) for bad, dest in store.quarantine(scan.corrupt)) if quarantine else {}
    n_ok = int((df["status"] == "ok").sum())
    report = CollectReport(store.results_path, len(df), n_ok, len(df) - n_ok, missing, scan.corrupt,
                           n_outside, None if expected is None else len(expected), moved)
    return df, report

"""Building the tidy results table of a store (:mod:`paceggm.bench.schema`)."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from paceggm.bench.cells import PREPROCESSINGS, Cell, bound_policy
from paceggm.bench.execute import COLUMNS
from paceggm.bench.schema import IN_GRID, POLICY, with_param_columns
from paceggm.bench.store import CorruptCell, RunStore

__all__ = ["CollectReport", "collect", "grid_view", "publish", "recorded_policy", "to_frame"]

_INT = ("n", "d", "n_measured_diag", "n_measured_offdiag", "n_rounds", "n_solves", "n_capped_solves",
        "max_solve_iter")
_FLOAT = ("rho", "mahalanobis", "frobenius", "mse", "rho_spent", "wall_time", "solve_time", "cpu_time", "load_start",
          "load_end")


def to_frame(rows: Sequence[dict], *, policies: Mapping[str, str] | None = None,
             grid_keys: set[str] | None = None):
    """Rows as a DataFrame with the schema's columns, order and dtypes, then the ``p_*`` columns.

    With ``policies`` (cell key → bound policy) the table gets the ``bound_check``
    column, and with ``grid_keys`` (the keys of the recipe's grid) the ``in_grid``
    one (:mod:`paceggm.bench.schema`), both before the ``p_*`` columns.
    """
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
                "status", "error", "params", "label", "varies"):
        df[col] = df[col].fillna("").astype(str)
    df["cpu_scope"] = [v if isinstance(v, str) else "" for v in df["cpu_scope"]]  # absent in older records
    if policies is not None:
        df[POLICY] = [str(policies.get(k, "")) for k in df["cell_key"]]
    if grid_keys is not None:
        df[IN_GRID] = pd.array([k in grid_keys for k in df["cell_key"]], dtype="boolean")
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
    policies: dict = field(default_factory=dict)  # bound policy -> stored cells computed under it
    strays: dict = field(default_factory=dict)  # bound policy -> stored cells outside the recipe's grid
    written: bool = True  # False: a read-only store, the table was built but not written

    def format(self) -> str:
        where = self.path if self.written else f"not written ({self.path.parent} is read-only)"
        lines = [f"collected {self.n_rows} cells (ok {self.n_ok}, failed {self.n_failed}, "
                 f"corrupt {len(self.corrupt)}) -> {where}"]
        if self.n_grid is not None:
            lines.append(f"  this grid: {self.n_grid} cells, {self.n_grid - len(self.missing)} stored, "
                         f"{len(self.missing)} missing; {self.n_outside} stored cells of other grids "
                         "are in the table too")
        if len(self.policies) > 1:
            lines.append(f"  the stored cells were computed under {len(self.policies)} bound policies "
                         f"({_counts(self.policies)}): column {POLICY} keeps them apart, never average them")
        if self.strays:
            lines.append(f"  {sum(self.strays.values())} stored cells are outside the recipe's grid "
                         f"({_counts(self.strays)}; column {IN_GRID} false): the recipe's summary and "
                         "figures, and --publish, leave them out")
        for c in self.corrupt:
            where = f"moved to {self.moved[c.path]}; " if self.moved.get(c.path) is not None else ""
            lines.append(f"  CORRUPT (not used; {where}rerun to recompute): {c.path}: {c.reason}")
        for c in self.missing[:20]:
            lines.append(f"  missing: {c.variant} on {c.dataset}, rho={c.rho:g}, trial={c.trial} [{c.key}]")
        if len(self.missing) > 20:
            lines.append(f"  … and {len(self.missing) - 20} more missing cells")
        return "\n".join(lines)


def _counts(by: Mapping[str, int]) -> str:
    return ", ".join(f"{k or 'unknown'}: {n}" for k, n in sorted(by.items()))


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
    if POLICY in view.columns:
        # the key fixes the policy; a record saying otherwise is not the cell the grid asks for
        wanted = {c.key: c.bound_check for c in cells}
        wrong = view[[wanted[k] not in (None, p) for k, p in zip(view["cell_key"], view[POLICY])]]
        if len(wrong):
            found = ", ".join(sorted(set(wrong[POLICY])))
            return False, (f"not published: {len(wrong)} stored cells of the grid record another bound policy "
                           f"({found}) than the grid's; prune them (paceggm-bench prune --policy …) and rerun "
                           f"({dest} left as it was)")
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
    note = f"; {len(table) - len(view)} stored cells outside the grid left out" if len(table) > len(view) else ""
    if waiting:
        names = ", ".join(sorted({c.dataset for c in waiting}))
        note += f"; {len(waiting)} cells of unavailable data sets ({names}) left out"
    return True, f"published {len(view)} cells -> {dest}{note}"


def recorded_policy(row: dict, computed: Mapping | None, declared: str = "auto") -> str:
    """The bound policy a stored cell was computed under.

    A record states it (``computed["bound_check"]``); a cell written before records
    did is read as what its recipe declares (``declared``, the config's
    ``bound_check``, resolved for the row's preprocessing).
    """
    stored = (computed or {}).get("bound_check")
    if isinstance(stored, str) and stored:
        return stored
    preprocessing = row.get("preprocessing")
    return bound_policy(declared, preprocessing) if preprocessing in PREPROCESSINGS else str(declared)


def collect(store: RunStore, *, expected: Sequence[Cell] | None = None, grid: Sequence[Cell] | None = None,
            declared_policy: str = "auto", quarantine: bool = False,
            write: bool = True) -> tuple[object, CollectReport]:
    """Read every valid cell file of ``store`` into the tidy table and write it as Parquet.

    The table always holds every valid stored cell, whatever grid asked for
    it: a run of a reduced grid adds to the table, it never shrinks it. Each
    row says the bound policy it was computed under (column ``bound_check``,
    :func:`recorded_policy`) and, given the recipe's ``grid``, whether it is
    one of its cells (column ``in_grid``, by key: a cell planted outside the
    grid is never taken for one of it, manifest or not). With ``expected`` (the
    cells of the current config) the report says how much of that grid is
    stored and lists the missing cells. Corrupt files are never used: they are
    listed in the report, and with ``quarantine=True`` (only while holding the
    store's lock) moved aside into ``quarantine/``. An unchanged table is not
    rewritten (a finished store may be read-only), and with ``write=False``
    (a store this process may not write) none is; a damaged one is rebuilt
    from the cells.

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
    policies = {k: recorded_policy(r, (scan.meta.get(k) or {}).get("computed"), declared_policy)
                for k, r in rows.items()}
    grid_keys = None if grid is None else {c.key for c in grid}
    df = to_frame([rows[k] for k in sorted(rows)], policies=policies, grid_keys=grid_keys)
    if write:
        _write_table(df, store.results_path)
    moved = dict((bad.path, dest) for bad, dest in store.quarantine(scan.corrupt)) if quarantine else {}
    n_ok = int((df["status"] == "ok").sum())
    by_policy: dict[str, int] = {}
    strays: dict[str, int] = {}
    for k, policy in policies.items():
        by_policy[policy] = by_policy.get(policy, 0) + 1
        if grid_keys is not None and k not in grid_keys:
            strays[policy] = strays.get(policy, 0) + 1
    report = CollectReport(store.results_path, len(df), n_ok, len(df) - n_ok, missing, scan.corrupt,
                           n_outside, None if expected is None else len(expected), moved,
                           by_policy, strays, write or _unchanged(df, store.results_path))
    return df, report

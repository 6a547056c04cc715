"""What the studies share: running a harness grid into a study's own store, and writing its outputs.

A study runs its cells through the harness (``paceggm.bench``), so they have the harness's keys,
seeds, checks and store: an interrupted study resumes, a failed cell is recorded with its error,
and a cell that a recipe also runs (the same key) is the same computation, bit for bit.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from paceggm.bench.cells import expand
from paceggm.bench.collect import collect, grid_view
from paceggm.bench.config import compose_config, to_plain
from paceggm.bench.runner import run_sweep, store_for

#: Where a study's store goes unless told: under the ignored runs/ folder, one store per study.
DEFAULT_RUNS = Path("runs") / "studies"


def harness_config(overrides: Sequence[str]) -> dict:
    """The composed, resolved harness config for ``overrides`` (checked as the command line's are)."""
    return to_plain(compose_config(list(overrides)))


def run_grids(configs: Sequence[dict]) -> tuple[pd.DataFrame, int]:
    """Run every config's cells not yet stored (one store per study), and return their rows.

    Returns the rows of all the configs' grids and the number of failed cells (whose rows are
    kept, with their error). The configs must share ``name`` and ``runs_dir``.
    """
    failed = 0
    for cfg in configs:
        summary = run_sweep(cfg, log=sys.stderr)
        failed += summary.n_failed
    table, _ = collect(store_for(configs[0]))
    rows = pd.concat([grid_view(table, expand(cfg)) for cfg in configs], ignore_index=True)
    return rows, failed


def study_parser(prog: str, doc: str, out_dir: Path) -> argparse.ArgumentParser:
    """A study's argument parser with the options every study has (store, output folder, harness overrides)."""
    parser = argparse.ArgumentParser(prog=prog, description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs-dir", default=str(DEFAULT_RUNS), help="the study's store goes under it")
    parser.add_argument("--out-dir", default=None, help=f"where the tables go (default {out_dir}, default grid only)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="an extra harness override (e.g. loader=module:function)")
    return parser


def floats(text: str) -> list[float]:
    """A command line's comma-separated numbers."""
    return [float(v) for v in text.split(",") if v]


def ints(text: str) -> list[int]:
    return [int(v) for v in text.split(",") if v]


def names(text: str) -> list[str]:
    return [v for v in text.split(",") if v]


def is_default(value, default) -> bool:
    """Whether a command-line choice is the study's default (its committed grid)."""
    return list(value) == list(default) if isinstance(default, (list, tuple)) else value == default


def write_text(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def publish(out_dir: Path, name: str, table: pd.DataFrame, text: str, *, cells: int, failed: int, cpu_start) -> int:
    """Write ``<name>.csv`` and ``<name>.md`` to ``out_dir``, print the text, and return the exit status."""
    out_dir.mkdir(parents=True, exist_ok=True)
    table.to_csv(out_dir / f"{name}.csv", index=False, float_format="%.6g")
    write_text(out_dir / f"{name}.md", text + "\n")
    print(text)
    spent = os.times()
    cpu = spent.user - cpu_start.user + spent.children_user - cpu_start.children_user
    print(f"\n{cells} cells, {failed} failed; this process: {cpu:.0f} s CPU", file=sys.stderr)
    return 1 if failed else 0


def markdown(df: pd.DataFrame, *, floatfmt: str = ".3g") -> str:
    """``df`` as a GitHub table (index included), numbers with ``floatfmt``."""
    def cell(v):
        if isinstance(v, float):
            return "" if v != v else format(v, floatfmt)
        return str(v)

    cols = [str(c) for c in (df.index.names if df.index.names != [None] else [""])] + [str(c) for c in df.columns]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for idx, row in df.iterrows():
        idx = idx if isinstance(idx, tuple) else (idx,)
        lines.append("| " + " | ".join([cell(i) for i in idx] + [cell(v) for v in row]) + " |")
    return "\n".join(lines)

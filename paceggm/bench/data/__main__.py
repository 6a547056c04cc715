"""``python -m paceggm.bench.data {list,stats}``: the registry and the data-set table.

``stats`` loads every registered data set of the publication, computes its statistics and writes
``figures/tables/datasets.md`` and ``datasets.tex`` (ours next to the published values).
Data sets that cannot be loaded (no file, no network) get a row saying so; the command fails
only if none could be loaded.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from paceggm.bench import require_bench

require_bench()  # one line naming the extra, before the imports below need it

from .checks import check_table, table_check  # noqa: E402
from .dataset import load_dataset, load_table  # noqa: E402
from .registry import get_config, list_datasets, paper_datasets, repo_root, resolve_data_dir  # noqa: E402
from .sources import OFFLINE_ENV, DatasetFileError, DatasetUnavailableError, source_files  # noqa: E402
from .stats import TableRow, dataset_statistics, write_tables  # noqa: E402


def build_rows(names, *, preprocessing: str, data_dir) -> list[TableRow]:
    rows = []
    for name in names:
        cfg = get_config(name)
        published = dict(cfg.published) if cfg.get("published") is not None else None
        note = str(cfg.get("note", ""))
        try:
            ds = load_dataset(name, preprocessing=preprocessing, data_dir=data_dir)
        except DatasetUnavailableError:
            rows.append(TableRow(name, None, published, note, status="not available (no file, no network)"))
            continue
        rows.append(TableRow(name, dataset_statistics(ds.X), published, note))
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m paceggm.bench.data", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="print the registered data sets")
    check = sub.add_parser("check", help="print each data set's check block as loaded here, and whether it "
                                         "matches the registry's (exit 1 if one differs)")
    check.add_argument("--data-dir", default=None, help="raw-file folder (default: $PACEGGM_DATA_DIR, then conf)")
    check.add_argument("--datasets", nargs="*", default=None, help="subset of names (default: every registered one)")
    stats = sub.add_parser("stats", help="write the data-set table to figures/tables/")
    stats.add_argument("--data-dir", default=None, help="raw-file folder (default: $PACEGGM_DATA_DIR, then conf)")
    stats.add_argument("--preprocessing", default="paper", choices=("paper", "strict"))
    stats.add_argument("--out", default=str(repo_root() / "figures" / "tables"))
    stats.add_argument("--offline", action="store_true", help="never try OpenML (same as $PACEGGM_OFFLINE=1)")
    stats.add_argument("--datasets", nargs="*", default=None, help="subset of names (default: the 14 of the publication)")
    args = parser.parse_args(argv)
    from paceggm.bench.plugins import PluginError, load_plugins

    try:  # the data sets user modules register ($PACEGGM_PLUGINS, entry points)
        load_plugins()
    except PluginError as exc:
        parser.error(str(exc))

    if args.command == "list":
        for name in list_datasets():
            print(name)
        return 0
    if args.command == "check":
        return _check(args.datasets or list_datasets(), args.data_dir)
    if args.offline:
        os.environ[OFFLINE_ENV] = "1"
    names = args.datasets or [n for n in paper_datasets() if n in list_datasets()]  # its table's order
    print(f"data directory: {resolve_data_dir(args.data_dir)}")
    rows = build_rows(names, preprocessing=args.preprocessing, data_dir=args.data_dir)
    stem = "datasets" if args.preprocessing == "paper" else f"datasets_{args.preprocessing}"
    for path in write_tables(rows, Path(args.out), preprocessing=args.preprocessing, stem=stem):
        print(f"wrote {path}")
    for row in rows:
        verdict = row.status if row.ours is None else ("matches" if not row.mismatches() else
                                                      "differs: " + ", ".join(row.mismatches()))
        print(f"  {row.name:18s} {verdict}")
    return 0 if any(r.ours is not None for r in rows) else 1


def _check(names, data_dir) -> int:
    """Print the ``check`` block of each data set as loaded here (to record in conf/dataset/<name>.yaml)."""
    import yaml

    differs = 0
    for name in names:
        cfg = get_config(name)
        try:
            table, kept, source = load_table(name, resolve_data_dir(data_dir), check=False)
        except DatasetUnavailableError as exc:
            print(f"# {name}: not available here: {exc.hint}")
            continue
        block = table_check(cfg, table, kept)
        try:
            check_table(cfg, table, kept, where=source_files(source))
            verdict = "matches the registry" if cfg.get("check") is not None else "no check recorded"
        except DatasetFileError as exc:
            verdict, differs = f"DIFFERS: {exc}", differs + 1
        print(f"# {name} ({source_files(source)}): {verdict}")
        print(yaml.safe_dump({"check": block}, sort_keys=False, width=110), end="")
    return 1 if differs else 0


if __name__ == "__main__":
    sys.exit(main())

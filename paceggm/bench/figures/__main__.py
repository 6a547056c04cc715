"""``python -m paceggm.bench.figures --runs runs --out runs/figures``.

Builds every figure and table it has results for, writes ``<out>/REPORT.md``
and prints what it wrote and what it skipped (with why). Exit status 1 when a
results table exists but cannot be read; skipping for lack of data is not an error.

Missing inputs never erase earlier output: a skipped artifact's files are left
in place (and keep their section of the report), and when nothing at all can
be drawn the report is not rewritten either. The output folder defaults to
``<runs>/figures``, so drawing from a run never writes over the committed
figures unless ``--out`` says so.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from paceggm.bench import require_bench

require_bench()  # one line naming the extra, before the imports below need it

import matplotlib  # noqa: E402

matplotlib.use("Agg")  # headless; plots only use the Agg canvas anyway

from .build import NO_TABLE, build_all  # noqa: E402
from .config import SPREADS, FiguresConfig  # noqa: E402
from .report import write_report  # noqa: E402


def _names(text: str) -> tuple[str, ...]:
    names = tuple(x.strip() for x in text.split(",") if x.strip())
    if not names:
        raise argparse.ArgumentTypeError("expected a comma-separated list of names")
    return names


def main(argv: list[str] | None = None) -> int:
    defaults = FiguresConfig()
    p = argparse.ArgumentParser(prog="python -m paceggm.bench.figures", description=__doc__.split("\n")[0])
    p.add_argument("--runs", default="runs", help="results store: runs/<experiment>/results.parquet")
    p.add_argument("--out", default=None,
                   help="output directory (tables go to <out>/tables); default <runs>/figures")
    p.add_argument("--experiments", type=_names, default=None,
                   help="comma-separated experiments to read (default: every results table under --runs)")
    p.add_argument("--main-datasets", type=_names, default=defaults.main_datasets,
                   help="comma-separated data sets of the main-text figure")
    p.add_argument("--main-methods", type=_names, default=defaults.main_methods,
                   help="comma-separated methods of the main-text figure")
    p.add_argument("--hyperparameter-datasets", type=_names, default=defaults.hyperparameter_datasets)
    p.add_argument("--preprocessing", default=defaults.preprocessing,
                   help="preprocessing shown when a table holds several")
    p.add_argument("--spread", choices=SPREADS, default=defaults.spread,
                   help="band (or error bars) around the mean over trials, in every figure (default: each "
                        "figure's own: min–max; none in the (α, β) figure; ±1 SE bars in the regression's)")
    p.add_argument("--formats", type=_names, default=defaults.formats)
    p.add_argument("--width", type=float, default=defaults.width,
                   help="figure width in inches at print size (7 = full width, 3.3 = one column)")
    p.add_argument("--plugins", type=_names, default=(),
                   help="comma-separated user modules (names or .py paths) registering methods, data sets or "
                        "figures, besides $PACEGGM_PLUGINS (docs/extending.md)")
    args = p.parse_args(argv)
    from paceggm.bench.plugins import PluginError, load_plugins, remember_runs

    try:  # user modules' methods, data sets and figures; the `target:` methods the stores were run with
        load_plugins(args.plugins, origin="--plugins")
    except PluginError as exc:
        p.error(str(exc))
    remember_runs(args.runs)
    try:
        config = FiguresConfig(main_datasets=args.main_datasets, main_methods=args.main_methods,
                               hyperparameter_datasets=args.hyperparameter_datasets,
                               preprocessing=args.preprocessing, spread=args.spread,
                               formats=args.formats, width=args.width)
    except ValueError as exc:
        p.error(str(exc))
    out = args.out if args.out is not None else str(Path(args.runs) / "figures")
    log = build_all(args.runs, out, config, experiments=args.experiments)
    drawn = [a for a in log.artifacts if not a.skipped and a.source != "data stage"]
    report = write_report(log) if drawn else None
    # artifacts whose recipes were not run at all: one line, not one each
    absent = [a.name for a in log.artifacts if a.skipped and a.skipped.startswith(NO_TABLE)]
    for art in log.artifacts:
        if art.name in absent:
            continue
        if art.skipped:
            print(f"skipped {art.name}: {art.skipped}")
        else:
            gaps = f", {len(art.problems)} incomplete cells" if art.problems else ""
            print(f"built   {art.name} from {art.source}{gaps}: "
                  + " ".join(str(f) for f in art.files))
    if absent:
        print(f"skipped (no results table of their recipes under {args.runs}): {', '.join(absent)}")
    if log.publication:
        print(f"not built: {log.publication}")
    for name, why in sorted(log.unreadable.items()):
        print(f"ERROR   {name}: {why}", file=sys.stderr)
    if report is None:
        print(f"nothing drawn (no usable results table under {args.runs}): every file in {out}, "
              "REPORT.md included, is left as it was")
    else:
        print(f"report  {report}")
    return 1 if log.unreadable else 0


if __name__ == "__main__":
    sys.exit(main())

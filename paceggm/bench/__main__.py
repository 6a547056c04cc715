"""Command line of the benchmark harness.

    python -m paceggm.bench run     [hydra overrides…]   # sweep, then collect
    python -m paceggm.bench collect [hydra overrides…]   # rebuild results.parquet, report missing cells
    python -m paceggm.bench show    [hydra overrides…]   # print the composed config and its cell count
    python -m paceggm.bench summary [hydra overrides…]   # mean errors per data set, variant and rho
    python -m paceggm.bench figures [figure args…]       # delegate to paceggm.bench.figures

Overrides are Hydra's: ``experiment=main rho=[0.1,1] trials=3 dataset=[adult,pol]
method.paceggm.params.solver=ipm backend=dask backend.n_jobs=2``.
The console script ``paceggm-bench`` is the same entry point.
"""

from __future__ import annotations

import sys

USAGE = __doc__


def _aliases(overrides: list[str]) -> list[str]:
    """``dataset=adult`` / ``dataset=[adult,pol]`` mean ``datasets=[…]``.

    ``conf/dataset/`` is the data-set registry, not a group a recipe selects
    from; the singular spelling is accepted for the grid's list of names.
    """
    out = []
    for o in overrides:
        if o.startswith("dataset="):
            value = o.split("=", 1)[1].strip()
            o = "datasets=" + (value if value.startswith("[") else f"[{value}]")
        out.append(o)
    return out


def _compose(overrides):
    from paceggm.bench.config import compose_config, to_plain

    return to_plain(compose_config(_aliases(overrides)))


def _collect(cfg) -> int:
    from paceggm.bench.cells import expand
    from paceggm.bench.collect import collect
    from paceggm.bench.runner import store_for

    store = store_for(cfg)
    if not store.cells_dir.is_dir():
        print(f"nothing to collect: {store.cells_dir} does not exist (run the experiment first)", file=sys.stderr)
        return 1
    _, report = collect(store, expected=expand(cfg))
    print(report.format())
    return 0


def _summary(cfg) -> int:
    import pandas as pd

    from paceggm.bench.runner import store_for
    from paceggm.bench.summary import format_summary, summarize

    path = store_for(cfg).results_path
    if not path.is_file():
        print(f"no results table at {path} (run the experiment first)", file=sys.stderr)
        return 1
    print(format_summary(summarize(pd.read_parquet(path))))
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(USAGE)
        return 0 if argv else 2
    command, rest = argv[0], argv[1:]
    if command == "figures":
        import importlib.util
        import runpy

        if importlib.util.find_spec("paceggm.bench.figures") is None:
            print("the figures stage (paceggm.bench.figures) is not available", file=sys.stderr)
            return 1
        sys.argv = ["python -m paceggm.bench.figures", *rest]
        try:
            runpy.run_module("paceggm.bench.figures", run_name="__main__", alter_sys=True)
        except SystemExit as exc:
            return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        return 0
    if command not in ("run", "collect", "show", "summary"):
        print(f"unknown command {command!r}\n{USAGE}", file=sys.stderr)
        return 2

    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    from paceggm.bench.cells import expand
    from paceggm.bench.runner import resolve_loader, run_sweep
    from paceggm.bench.store import IncompatibleRunError

    try:
        # Everything that can be wrong with a config is found here, before any work;
        # these errors get one clear line, while errors of the harness itself keep
        # their traceback.
        cfg = _compose(rest)
        n_cells = len(expand(cfg))
        if command == "run":
            resolve_loader(cfg.get("loader"))
    except (HydraException, OmegaConfBaseException, ValueError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if command == "summary":
        return _summary(cfg)
    if command == "show":
        import yaml

        print(yaml.safe_dump(cfg, sort_keys=False))
        print(f"# {n_cells} cells")
        return 0
    if command == "run":
        try:
            summary = run_sweep(cfg, overrides=rest)
        except IncompatibleRunError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        print(summary.format())
    return _collect(cfg)

if __name__ == "__main__":
    sys.exit(main())

"""Command line of the benchmark harness (also installed as ``paceggm-bench``).

    paceggm-bench run     [-m] [--cfg job] [overrides…]   # sweep, then collect
    paceggm-bench run     [--costs DIR] experiment=[a,b,…] [overrides…]   # several recipes as one pool
    paceggm-bench collect [-m] [--cfg job] [overrides…]   # rebuild results.parquet, report missing cells
    paceggm-bench show    [-m] [overrides…]               # print the composed config and its cell count
    paceggm-bench summary [-m] [overrides…]               # mean errors per data set, variant and rho
    paceggm-bench prune   [--failed] [--policy P] [--commit C] [--dry-run] [overrides…]   # drop stored cells
    paceggm-bench figures [figure args…]                  # delegate to paceggm.bench.figures

Overrides use Hydra's grammar: ``experiment=main rho=[0.1,1] trials=3 datasets=[adult,pol]
method.paceggm.params.solver=ipm backend=dask backend.n_jobs=2``. A comma-separated value
(``rho=0.1,1``, ``rho=choice(0.1,1)``, ``trials=range(0,3)``) is a sweep: with
``-m/--multirun`` the command runs once per combination of the swept values.

A list of recipes (``experiment=[main,solver]``) runs their pending cells as one pool of
workers, longest first (:func:`paceggm.bench.runner.run_pool`; ``--costs DIR``: the committed
results tables whose recorded times estimate each cell's), each cell into its own recipe's
store; then each recipe is reported and collected as when run alone, and one line states the
CPU seconds of the cells run. The other overrides apply to every recipe.

Exit status: 0 success (cells waiting for unavailable data included); 1 some cell failed;
2 a usage, config or environment error (one line on stderr, nothing run); 128 + the signal
number when interrupted (SIGINT: 130, SIGTERM: 143), leaving a resumable store.
The whole config is checked before anything runs (:mod:`paceggm.bench.config_schema`);
a grid of more than ``max_cells`` cells (50,000) runs only with ``--yes``.
"""

from __future__ import annotations

import argparse
import itertools
import signal
import sys

from paceggm.bench import missing_extra_message

USAGE = __doc__

COMMANDS = {
    "run": "run every cell of the grid not yet stored, then collect the results table",
    "collect": "rebuild <runs_dir>/<name>/results.parquet from the stored cells; list missing cells",
    "show": "print the composed config and its number of cells",
    "summary": "mean errors per data set, variant and rho, over the cells of the grid",
    "prune": "delete stored cells: failed ones, those of a bound policy or of a commit (criteria combine)",
    "figures": "draw the figures and tables (python -m paceggm.bench.figures --help)",
}

EXAMPLES = """examples:
  paceggm-bench {cmd} experiment=main
  paceggm-bench {cmd} experiment=main rho=[0.1,1] trials=3 datasets=[adult,pol]
  paceggm-bench {cmd} experiment=main method.paceggm.params.solver=ipm
  paceggm-bench {cmd} -m experiment=demo rho=0.1,1          # two jobs: rho=0.1, then rho=1
  paceggm-bench {cmd} --cfg job experiment=solver           # print the composed config only
"""


class UsageError(ValueError):
    """A command line that cannot be run as given."""


class Interrupted(KeyboardInterrupt):
    """SIGTERM, raised where SIGINT raises KeyboardInterrupt, so both end a run the same way."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _on_sigterm(signum, frame):
    raise Interrupted(signum)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="paceggm-bench", description="Benchmark harness of PACE-GGM: recipes -> cells -> results table.",
        epilog=USAGE.split("\n\n", 1)[1], formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", metavar="command", required=True)
    for name, help_ in COMMANDS.items():
        if name == "figures":  # listed for --help; main() hands its arguments to the figures stage
            sub.add_parser(name, help=help_, add_help=False)
            continue
        p = sub.add_parser(name, help=help_, description=help_, epilog=EXAMPLES.format(cmd=name),
                           formatter_class=argparse.RawDescriptionHelpFormatter)
        p.add_argument("-m", "--multirun", action="store_true",
                       help="run the command once per combination of the swept values (key=a,b)")
        p.add_argument("-c", "--cfg", choices=("job",),
                       help="print the composed config (as Hydra's --cfg job does) and exit")
        p.add_argument("--yes", action="store_true",
                       help="confirm a grid larger than max_cells (same as confirm_large=true)")
        if name == "prune":
            p.add_argument("--failed", action="store_true", help="the failed cells")
            p.add_argument("--policy", choices=("raise", "clip", "waive"),
                           help="the cells computed under this bound policy (bound_check)")
            p.add_argument("--commit", metavar="PREFIX", help="the cells computed by a commit (a prefix of its hash)")
            p.add_argument("--dry-run", action="store_true", help="list what would be deleted, delete nothing")
        if name == "run":
            p.add_argument("--costs", metavar="DIR", default=None,
                           help="with a list of recipes: results tables (DIR/<recipe>/results.parquet) whose "
                                "recorded times order the pool longest first (make reproduce: figures/results)")
        if name == "collect":
            p.add_argument("--publish", metavar="DIR", default=None,
                           help="also write the recipe's table to DIR/<name>/results.parquet, only if every "
                                "cell of its grid is stored (make results: DIR=figures/results)")
        p.add_argument("overrides", nargs="*", metavar="override",
                       help="Hydra override: key=value, key=[a,b] (a list), key=a,b (a sweep: needs -m), "
                            "+key=value, ~key")
    return parser


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


def jobs(overrides: list[str], *, multirun: bool) -> list[list[str]]:
    """The override lists of each job: one without sweeps, the product of the swept values with ``-m``.

    Raises
    ------
    UsageError
        A sweep without ``-m`` (the message says how to write a list instead),
        or an interval sweep, which has no values to enumerate.
    """
    from hydra.core.override_parser.overrides_parser import OverridesParser

    parsed = OverridesParser.create().parse_overrides(list(overrides))
    choices = []
    for o in parsed:
        if not o.is_sweep_override():
            choices.append([o.input_line])
            continue
        if not multirun:
            key = o.get_key_element()
            raise UsageError(f"{o.input_line} sweeps several values: add -m (--multirun) to run once per "
                             f"value, or give {key.lstrip('+~')} one list value: {key}=[…]")
        if o.is_interval_sweep():
            raise UsageError(f"{o.input_line}: an interval sweep has no values to run; list them instead")
        choices.append([f"{o.get_key_element()}={v}" for v in o.sweep_string_iterator()])
    return [_aliases(list(combo)) for combo in itertools.product(*choices)]


def _one_line(exc: BaseException) -> str:
    # Hydra appends its config search path: noise to someone who mistyped a name
    text = str(exc).split("Config search path", 1)[0]
    return " ".join(text.split()) or type(exc).__name__


def _os_error(exc: OSError) -> str:
    where = f": {exc.filename}" if exc.filename else ""
    return f"{exc.strerror or _one_line(exc)}{where}"


def _collect(cfg, cells, *, publish_to: str | None = None) -> int:
    from pathlib import Path

    from paceggm.bench.collect import collect, publish
    from paceggm.bench.runner import store_for

    store = store_for(cfg)
    if not store.cells_dir.is_dir():
        print(f"nothing to collect: {store.cells_dir} does not exist (run the experiment first)", file=sys.stderr)
        return 1
    grid = _recipe_cells(cfg) or cells
    with store.lock():
        # a store this process may not write (read-only mount) is collected in memory, nothing moved
        table, report = collect(store, expected=cells, grid=grid, declared_policy=cfg.get("bound_check", "auto"),
                                quarantine=store.writable, write=store.writable)
    print(report.format())
    if publish_to is not None:
        done, message = publish(table, cells, Path(publish_to) / cfg["name"] / "results.parquet",
                                unavailable=store.unavailable())
        print(message)
        if not done and "bound policy" in message:
            return 1
    return 0


def _recipe_grid(cfg, cells) -> None:
    """Publishing writes a recipe's whole grid: refuse grid overrides."""
    recipe = _recipe_cells(cfg)
    if not recipe:
        raise UsageError(f"--publish writes a recipe's grid, and {cfg['name']!r} names no recipe "
                         "in conf/experiment/")
    if _keys(recipe) != _keys(cells):
        raise UsageError(f"--publish writes the recipe {cfg['name']}'s whole grid ({len(recipe)} cells); "
                         f"these overrides select another grid ({len(cells)} cells): drop them")


def _summary(cfg, cells) -> int:
    import pandas as pd

    from paceggm.bench.collect import collect, grid_view
    from paceggm.bench.runner import store_for
    from paceggm.bench.schema import STORED_COLUMNS
    from paceggm.bench.summary import format_summary, strays, strays_line, summarize

    store = store_for(cfg)
    path = store.results_path
    if not path.is_file() and not store.cells_dir.is_dir():
        print(f"no results table at {path} (run the experiment first)", file=sys.stderr)
        return 1
    recipe = _recipe_cells(cfg)
    try:
        table = pd.read_parquet(path)
        missing = [c for c in STORED_COLUMNS if c not in table.columns]
        if missing:
            raise ValueError(f"no column(s) {', '.join(missing)}")
    except Exception as exc:  # damaged, truncated, not Parquet, or a column lost: the cells are the truth
        print(f"note: {path} cannot be used ({_one_line(exc)[:200]}); rebuilt from the cell files", file=sys.stderr)
        with store.lock():
            table, _ = collect(store, grid=recipe or cells, declared_policy=cfg.get("bound_check", "auto"),
                               quarantine=store.writable, write=store.writable)
    # only the cells of the grid asked for (by key: with or without a manifest), never a planted or stray one
    view = grid_view(table, cells)
    print(format_summary(summarize(view)))
    if _keys(cells) == _keys(recipe):
        # the recipe as it is: the rows the figures draw
        print(f"# the recipe's grid: {len(view)} of its {len(cells)} cells are stored ({path})")
        outside = strays(table, _keys(cells))
        if len(outside):
            print(strays_line(outside))
    else:
        print(f"# {len(view)} of the grid's {len(cells)} cells are stored; the table {path} holds "
              f"{len(table)} cells in all")
    return 0


def _prune(cfg, *, failed: bool, policy: str | None, commit: str | None, dry_run: bool) -> int:
    """Delete the stored cells that match every criterion given, then rebuild the results table."""
    from paceggm.bench.collect import collect
    from paceggm.bench.runner import store_for

    if not (failed or policy or commit):
        raise UsageError("prune needs at least one of --failed, --policy, --commit")
    store = store_for(cfg)
    if not store.cells_dir.is_dir():
        print(f"nothing to prune: {store.cells_dir} does not exist", file=sys.stderr)
        return 1
    with store.lock():
        scan = store.scan()
        chosen, unknown = [], 0
        for key, row in sorted(scan.rows.items()):
            computed = (scan.meta.get(key) or {}).get("computed") or {}
            if failed and row.get("status") != "failed":
                continue
            if policy:
                # older cell files record only whether the guarantee held, which tells waive apart
                stored = computed.get("bound_check") or ("waive" if row.get("guarantee_holds") is False else None)
                if stored is None:
                    unknown += 1
                    continue
                if stored != policy:
                    continue
            if commit:
                if not computed.get("commit"):
                    unknown += 1
                    continue
                if not str(computed["commit"]).startswith(commit):
                    continue
            chosen.append(key)
        what = ", ".join(w for w in (failed and "failed", policy and f"bound policy {policy}",
                                     commit and f"commit {commit}") if w)
        for key in chosen:
            row = scan.rows[key]
            print(f"  {'would delete' if dry_run else 'deleted'}: {row.get('variant')} on {row.get('dataset')}, "
                  f"rho={row.get('rho')}, trial={row.get('trial')} [{key}]")
            if not dry_run:
                store.cell_path(key).unlink()
        print(f"{'would prune' if dry_run else 'pruned'} {len(chosen)} of {len(scan.rows)} cells ({what}) "
              f"of {store.root}" + (f"; {unknown} cells record no policy or commit and are kept" if unknown else ""))
        if not dry_run:
            print(collect(store, grid=_recipe_cells(cfg) or None, declared_policy=cfg.get("bound_check", "auto"),
                          quarantine=True)[1].format())
    return 0


def _keys(cells) -> set[str]:
    return {c.key for c in cells}


def _recipe_cells(cfg) -> list:
    """The cells of ``cfg``'s recipe without any command-line override (none if ``name`` names no recipe)."""
    from hydra.errors import HydraException

    from paceggm.bench.config import compose_config, to_plain
    from paceggm.bench.runner import check_config

    try:
        return check_config(to_plain(compose_config([f"experiment={cfg['name']}"])))
    except (HydraException, ValueError):  # no such recipe, or it does not compose here
        return []


def _job(command: str, overrides: list[str], *, print_cfg: bool, publish_to: str | None = None,
         prune: dict | None = None) -> int:
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    from paceggm.bench.config import compose_config, to_plain
    from paceggm.bench.runner import check_config, run_sweep

    try:
        # Everything that can be wrong with a config is found here, before any work;
        # these errors get one clear line, while errors of the harness itself keep
        # their traceback.
        cfg = to_plain(compose_config(overrides))
        if command == "summary":
            from paceggm.bench.plugins import with_stored_methods
            from paceggm.bench.runner import store_for

            cfg = with_stored_methods(cfg, store_for(cfg))  # the `target:` methods run was given, written once
        cells = check_config(cfg)
        if publish_to is not None:
            _recipe_grid(cfg, cells)
    except (HydraException, OmegaConfBaseException, ValueError, FileNotFoundError) as exc:
        print(f"error: {_one_line(exc)}", file=sys.stderr)
        return 2
    if print_cfg or command == "show":
        import yaml

        print(yaml.safe_dump(cfg, sort_keys=False), end="")
        if command == "show":
            print(f"# {len(cells)} cells")
        return 0
    if command == "summary":
        return _summary(cfg, cells)
    if command == "prune":
        return _prune(cfg, **prune)
    if command != "run":
        return _collect(cfg, cells, publish_to=publish_to)
    summary = run_sweep(cfg, overrides=overrides)
    print(summary.format(warnings=False))
    status = max(summary.exit_status, _collect(cfg, cells, publish_to=publish_to))
    said = summary.warnings_said()
    if said is not None:  # last, where a console's reader looks
        print(said)
    return status


def _pool_names(overrides: list[str]) -> list[str] | None:
    """The recipes of ``experiment=[a,b,…]`` (a pooled run), or None without such an override."""
    found = [o for o in overrides if o.replace(" ", "").startswith("experiment=[")]
    if not found:
        return None
    if len(found) > 1:
        raise UsageError("name the recipes of a pooled run in one list: experiment=[a,b,…]")
    value = found[0].split("=", 1)[1].strip()
    if not value.endswith("]"):
        raise UsageError(f"{found[0]}: a list of recipe names must end with ]")
    names = [n.strip() for n in value[1:-1].split(",") if n.strip()]
    if not names:
        raise UsageError(f"{found[0]} names no recipe")
    return names


def _pool(names: list[str], rest: list[str], *, committed: str | None) -> int:
    """``run experiment=[…]``: the recipes' cells as one pool, then each reported and collected as alone."""
    import resource

    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    from paceggm.bench.config import compose_config, to_plain
    from paceggm.bench.runner import check_config, run_pool

    overrides = [[f"experiment={name}", *_aliases(rest)] for name in names]
    try:
        cfgs = [to_plain(compose_config(o)) for o in overrides]
        cells = [check_config(cfg) for cfg in cfgs]
        summaries = run_pool(cfgs, committed=committed, overrides=overrides)
    except (HydraException, OmegaConfBaseException, ValueError, FileNotFoundError) as exc:
        print(f"error: {_one_line(exc)}", file=sys.stderr)
        return 2
    status = 0
    for cfg, grid, summary in zip(cfgs, cells, summaries):
        print(summary.format(warnings=False))
        status = max(status, summary.exit_status, _collect(cfg, grid))
    for summary in summaries:
        said = summary.warnings_said()
        if said is not None:
            print(f"[{summary.experiment}] {said}")
    own, children = (resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    print(f"[pool] {len(names)} recipes; ran {sum(s.n_ran for s in summaries)} cells "
          f"(failed {sum(s.n_failed for s in summaries)}) on {max(s.n_workers for s in summaries)} workers in "
          f"{max(s.elapsed for s in summaries):.1f} s; CPU: {sum(s.cpu_time for s in summaries):.1f} s in the "
          f"cells (the sum of their cpu_time), {own.ru_utime + own.ru_stime:.1f} s in this process, "
          f"{children.ru_utime + children.ru_stime:.1f} s in its ended child processes")
    return status


def main(argv: list[str] | None = None) -> int:
    try:
        return _main(argv)
    except ModuleNotFoundError as exc:
        message = missing_extra_message(exc.name or "")
        if message is None:
            raise
        print(message, file=sys.stderr)
        return 2


def _main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "help":
        argv = ["--help"]
    if argv and argv[0] == "figures":  # its own command line, passed through untouched
        return _figures(argv[1:])
    try:
        args = _parser().parse_args(argv)
    except SystemExit as exc:  # --help (0) or a usage error (2, message printed by argparse)
        return exc.code if isinstance(exc.code, int) else 2

    from hydra.errors import HydraException

    from paceggm.bench.runner import BackendError
    from paceggm.bench.store import IncompatibleRunError, StoreBusyError

    try:
        extra = ["confirm_large=true"] if args.yes else []
        pool = _pool_names(args.overrides) if args.command == "run" else None
        if pool is not None and (args.multirun or args.cfg):
            raise UsageError("a pooled run (experiment=[…]) takes no -m and no --cfg")
        job_overrides = [] if pool is not None else jobs(args.overrides + extra, multirun=args.multirun)
    except (UsageError, HydraException) as exc:
        print(f"error: {_one_line(exc)}", file=sys.stderr)
        return 2
    previous = signal.signal(signal.SIGTERM, _on_sigterm)
    status = 0
    try:
        if pool is not None:
            rest = [o for o in args.overrides if not o.replace(" ", "").startswith("experiment=[")] + extra
            status = _pool(pool, rest, committed=args.costs)
        for i, overrides in enumerate(job_overrides):
            if len(job_overrides) > 1:
                print(f"# job {i + 1}/{len(job_overrides)}: {' '.join(overrides)}", flush=True)
            prune = ({k: getattr(args, k) for k in ("failed", "policy", "commit", "dry_run")}
                     if args.command == "prune" else None)
            status = max(status, _job(args.command, overrides, print_cfg=bool(args.cfg),
                                      publish_to=getattr(args, "publish", None), prune=prune))
    except KeyboardInterrupt as exc:
        signum = exc.signum if isinstance(exc, Interrupted) else signal.SIGINT
        print(f"\ninterrupted ({signal.Signals(signum).name}): every finished cell is stored; "
              "rerun the same command to resume", file=sys.stderr)
        return 128 + int(signum)
    except (IncompatibleRunError, StoreBusyError, BackendError, UsageError) as exc:
        print(f"error: {_one_line(exc)}", file=sys.stderr)
        return 2
    except OSError as exc:  # a read-only runs directory, a full disk, …: finished cells are kept
        print(f"error: {_os_error(exc)} (every finished cell is stored; fix this and rerun to resume)",
              file=sys.stderr)
        return 2
    finally:
        signal.signal(signal.SIGTERM, previous)
    return status


def _figures(rest: list[str]) -> int:
    from paceggm.bench.figures.__main__ import main as figures_main

    try:
        return figures_main(rest)
    except SystemExit as exc:  # --help, or a usage error reported by its parser
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)


if __name__ == "__main__":
    sys.exit(main())

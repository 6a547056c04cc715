"""``make verify``: rerun a stratified sample of the committed results and compare them cell by cell.

    python -m paceggm.bench.verify [--results figures/results] [--seed 0] [--jobs 2] [--out FILE]
                                   [hydra overrides applied to every recipe, e.g. data_dir=…]

The committed tables (``<results>/<recipe>/results.parquet``) hold one row per
cell. Each stratum — recipe (hence preprocessing) × variant (method, solver and
parameters) × data set — contributes a few cells, drawn at random from a seed
derived from ``--seed`` and the stratum, among its cheap ones (committed
``wall_time`` at most ``--max-seconds``; the cheapest cell when none is): every
recipe, method, solver, preprocessing and data set is covered. Each sampled
cell is rebuilt from its row as a :class:`~paceggm.bench.cells.Cell` of the
recipe (its key and seed must come out as stored, else the cell is reported as
not rebuildable) and run by the harness's own :func:`~paceggm.bench.execute.run_cell`,
in loky workers with one BLAS thread each, as ``make reproduce`` runs it. Data
sets that cannot be loaded here (no file, no network) are reported, not failed.

What a row keeps and is compared: the errors (Mahalanobis, Frobenius, test
MSE), the budget spent, the selection path's summary (diagonal and off-diagonal
entries measured, rounds: the store keeps counts, not the entries themselves)
and the solver's counts (converged, solves, capped solves, most iterations).

Tolerances (docs/verify.md):

* exact solvers (Newton, Newton-PCG) and every baseline: each metric within
  ``1e-6`` relative of the committed one and the same path summary in every cell;
* inexact solvers (IPM-Cholesky, PGD), whose last bits may move a selection
  onto another path: per error, the mean over cells of ``log(rerun / committed)``
  lies within ``2·σ/√n`` of 0, where σ² is the mean over the sampled cells of
  the variance of the log error over the committed trials of the same recipe,
  variant, data set and ρ — the trial noise of a mean of ``n`` trials, the band
  ``make bench-stopping`` judges stopping rules by. A rerun that fails fails.

Exit status: 0 within tolerance; 1 beyond it (or a cell failed or could not be
rebuilt); 2 a usage error, or no sampled cell could be run at all.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from paceggm.bench.bits import bit_environment, describe
from paceggm.bench.cells import DATA_SCALE, DEFAULT_DATA_SCALE, Cell
from paceggm.bench.methods import method_spec
from paceggm.bench.seeds import derive_seed

__all__ = ["EXACT_RTOL", "INEXACT_SOLVERS", "UNRECORDED_IPM_PRESET", "GroupReport", "as_run", "compare", "judge",
           "main", "pair", "rebuild_cell", "sample", "summarise", "trial_noise", "verify"]

RESULTS = Path("figures/results")
#: Solvers whose answer is not the exact completion: their cells are judged by the paired rule.
INEXACT_SOLVERS = ("ipm", "pgd0", "pgd1")
EXACT_RTOL = 1e-6
NOISE_Z = 2.0  # the band is NOISE_Z standard errors of the trial noise

ERRORS = ("mahalanobis", "frobenius", "mse")
METRICS = (*ERRORS, "rho_spent")
PATH = ("n_measured_diag", "n_measured_offdiag", "n_rounds")
SOLVE_COUNTS = ("converged", "n_solves", "n_capped_solves", "max_solve_iter")
STRATUM = ("experiment", "variant", "dataset")
_ERROR_NAMES = {"mahalanobis": "Mahalanobis", "frobenius": "Frobenius", "mse": "MSE"}


def _value(v):
    """A stored value as a plain Python scalar, ``None`` when missing (pandas NA, None, NaN)."""
    if v is None:
        return None
    try:
        import pandas as pd

        if pd.isna(v):
            return None
    except (TypeError, ValueError):
        pass
    return v.item() if isinstance(v, np.generic) else v


def solver_of(params: str) -> str | None:
    """The reconstruction solver a cell's ``params`` name (``None`` for a baseline)."""
    return json.loads(params or "{}").get("solver")


def group_label(method: str, params: str) -> str:
    solver = solver_of(params)
    return method if solver is None else f"{method} ({solver})"


def is_inexact(params: str) -> bool:
    return solver_of(params) in INEXACT_SOLVERS


# -- sample ----------------------------------------------------------------------------
def sample(table, *, seed: int = 0, per_stratum: int = 2, per_stratum_inexact: int = 6,
           max_seconds: float = 1.0):
    """The sampled rows of ``table`` (all recipes' committed rows): deterministic in ``seed``.

    Every stratum (:data:`STRATUM`) gives ``per_stratum`` cells (``per_stratum_inexact``
    for an inexact solver's, which are judged over trials), drawn without replacement
    from its ok cells whose committed ``wall_time`` is at most ``max_seconds`` — or its
    cheapest cell, when none is that cheap.
    """
    import pandas as pd

    picked = []
    ok = table[table["status"] == "ok"]
    for stratum, rows in sorted(ok.groupby(list(STRATUM), sort=True), key=lambda kv: kv[0]):
        rows = rows.sort_values("cell_key")
        cheap = rows[rows["wall_time"] <= max(max_seconds, float(rows["wall_time"].min()))]
        k = per_stratum_inexact if is_inexact(rows["params"].iloc[0]) else per_stratum
        rng = np.random.default_rng(derive_seed("verify", int(seed), *map(str, stratum)))
        chosen = rng.choice(len(cheap), size=min(k, len(cheap)), replace=False)
        picked.append(cheap.iloc[np.sort(chosen)])
    if not picked:
        return ok.iloc[:0]
    return pd.concat(picked, ignore_index=True)


# -- rebuild and run -------------------------------------------------------------------
def rebuild_cell(row: Mapping, cfg: Mapping) -> Cell:
    """The harness's cell of a committed row, as its recipe ``cfg`` expands it.

    Raises
    ------
    ValueError
        The rebuilt cell's key or seed is not the stored one (the recipe or the
        harness no longer describes the computation the row records).
    """
    from paceggm.bench.cells import bound_policy
    from paceggm.bench.variants import stored_varies

    spec = method_spec(row["method"])
    params = json.loads(row["params"] or "{}")
    data_scale = params.pop(DATA_SCALE, DEFAULT_DATA_SCALE)  # recorded beside the constructor's
    if row["preprocessing"] != cfg.get("preprocessing"):
        raise ValueError(f"row has preprocessing {row['preprocessing']!r}, the recipe {cfg.get('preprocessing')!r}")
    cell = Cell(row["dataset"], row["preprocessing"], spec.key, spec.target, spec.task, spec.measures,
                tuple(sorted(params.items())), row["variant"], float(row["rho"]), int(row["trial"]),
                int(cfg["base_seed"]), bound_policy(cfg.get("bound_check", "auto"), row["preprocessing"]),
                float(cfg.get("test_fraction", 0.2)) if spec.task == "regression" else None, data_scale,
                tuple(stored_varies(row).items()))  # the row's name, as it was made
    if cell.key != row["cell_key"] or cell.seed != int(row["seed"]):
        raise ValueError(f"rebuilt key {cell.key} / seed {cell.seed} differ from the stored "
                         f"{row['cell_key']} / {row['seed']}")
    return cell


#: The IPM-Cholesky preset of a committed cell whose params name none: the library's default
#: when the committed reproduction was made. A cell that names its preset reruns with it.
UNRECORDED_IPM_PRESET = "warm"


def as_run(cell: Cell, ipm_preset: str | None = None) -> Cell:
    """The cell with the IPM-Cholesky preset it reruns with (other cells unchanged).

    ``ipm_preset=None`` reruns a cell as it was made: with the preset its params name, else
    :data:`UNRECORDED_IPM_PRESET` — like with like, whatever the library's default is now.
    A name reruns the IPM cells with that preset instead (to measure it on the sample; its
    comparison with the committed cells is then not like with like). Only the key changes:
    the seeds derive from the cell's data set, trial, method and ρ.
    """
    import dataclasses

    params = dict(cell.params)
    if params.get("solver") != "ipm":
        return cell
    options = dict(params.get("solver_options") or {})
    if ipm_preset is None and options:
        return cell
    options["preset"] = ipm_preset or UNRECORDED_IPM_PRESET
    return dataclasses.replace(cell, params=tuple(sorted({**params, "solver_options": options}.items())))


def _rerun(cell: Cell, data, *, experiment: str, test_fraction: float) -> tuple[dict, str, float]:
    """The cell's new row, what moves the worker's last bits, and the worker's CPU seconds for the whole cell.

    The row keeps the fit's own ``cpu_time`` (the fit's clock, as in a sweep); the cell's CPU
    seconds (data preparation and metrics included) are returned apart, for the report's total.
    """
    import warnings

    from paceggm.bench.runner import _run_in_worker
    from paceggm.exceptions import ConvergenceWarning, PrivacyLeakWarning

    with warnings.catch_warnings():
        # what the committed run recorded in the row (guarantee_holds, converged); a rerun repeats it
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        warnings.simplefilter("ignore", ConvergenceWarning)
        cpu = time.process_time()
        row = _run_in_worker(cell, data, experiment=experiment, test_fraction=test_fraction)
        cpu = time.process_time() - cpu
    return row, describe(bit_environment()), cpu


# -- compare ---------------------------------------------------------------------------
def _rel(new, old) -> float:
    if new is None and old is None:
        return 0.0
    if new is None or old is None:
        return math.inf
    new, old = float(new), float(old)
    if new == old:
        return 0.0
    return abs(new - old) / abs(old) if old != 0 else math.inf


def compare(old: Mapping, new: Mapping) -> dict:
    """One committed row against its rerun: largest relative difference of the metrics,
    whether the path summary or every stored value (timings aside) is the same, and the
    log ratio rerun / committed of each error."""
    if new.get("status") != "ok":
        return {"ok": False, "rel": math.inf, "path_differs": True, "identical": False, "log_ratio": {}}
    rel = max(_rel(_value(new.get(m)), _value(old.get(m))) for m in METRICS)
    path_differs = any(_value(new.get(c)) != _value(old.get(c)) for c in PATH)
    identical = rel == 0.0 and not path_differs and all(
        _value(new.get(c)) == _value(old.get(c)) for c in (*SOLVE_COUNTS, "n", "d"))
    log_ratio = {}
    for m in ERRORS:
        a, b = _value(new.get(m)), _value(old.get(m))
        if a is not None and b is not None and a > 0 and b > 0:
            log_ratio[m] = math.log(a / b)
    return {"ok": True, "rel": rel, "path_differs": path_differs, "identical": identical, "log_ratio": log_ratio}


def trial_noise(table) -> dict:
    """``{(experiment, variant, dataset, rho): {error: sd of log error over trials}}`` of the ok rows."""
    out = {}
    ok = table[table["status"] == "ok"]
    for key, rows in ok.groupby(["experiment", "variant", "dataset", "rho"], sort=False):
        sds = {}
        for m in ERRORS:
            e = rows[m].to_numpy(dtype=float)
            e = e[np.isfinite(e) & (e > 0)]
            if e.size >= 2:
                sds[m] = float(np.std(np.log(e), ddof=1))
        out[key] = sds
    return out


@dataclass
class GroupReport:
    """One solver or method: what its sampled cells gave."""

    label: str
    inexact: bool
    cells: int = 0
    failed: int = 0
    identical: int = 0
    max_rel: float = 0.0
    path_diffs: int = 0
    log_ratios: dict = field(default_factory=dict)  # error -> [log(rerun/committed)]
    noise_var: dict = field(default_factory=dict)  # error -> [trial variance of the cell's log error]

    def paired(self, m: str) -> tuple[float, float, float] | None:
        """(mean log ratio, its standard error, the band 2σ/√n) of error ``m``."""
        r = np.asarray(self.log_ratios.get(m, []), dtype=float)
        v = np.asarray(self.noise_var.get(m, []), dtype=float)
        if r.size == 0 or v.size == 0:
            return None
        se = float(np.std(r, ddof=1) / math.sqrt(r.size)) if r.size > 1 else math.nan
        band = NOISE_Z * math.sqrt(float(np.mean(v))) / math.sqrt(r.size)
        return float(np.mean(r)), se, band

    @property
    def passed(self) -> bool:
        if self.failed:
            return False
        if not self.inexact:
            return self.max_rel <= EXACT_RTOL and self.path_diffs == 0
        for m in self.log_ratios:
            got = self.paired(m)
            if got is not None and abs(got[0]) > got[2]:
                return False
        return True


def summarise(pairs: Sequence[tuple[Mapping, Mapping]], noise: Mapping) -> dict[str, GroupReport]:
    """Per solver/method (:func:`group_label`), the comparison of (committed, rerun) row pairs."""
    groups: dict[str, GroupReport] = {}
    for old, new in pairs:
        label = group_label(old["method"], old["params"])
        g = groups.setdefault(label, GroupReport(label, is_inexact(old["params"])))
        c = compare(old, new)
        g.cells += 1
        g.failed += not c["ok"]
        g.identical += c["identical"]
        g.max_rel = max(g.max_rel, c["rel"])
        g.path_diffs += c["path_differs"]
        sds = noise.get((old["experiment"], old["variant"], old["dataset"], float(old["rho"])), {})
        for m, lr in c["log_ratio"].items():
            if m in sds:
                g.log_ratios.setdefault(m, []).append(lr)
                g.noise_var.setdefault(m, []).append(sds[m] ** 2)
    return dict(sorted(groups.items()))


# -- report ----------------------------------------------------------------------------
def _fmt_rel(x: float) -> str:
    return "0" if x == 0 else ("inf" if math.isinf(x) else f"{x:.1e}")


def _paired_text(g: GroupReport) -> str:
    parts = []
    for m in ERRORS:
        got = g.paired(m)
        if got is None:
            continue
        mean, se, band = got
        se_txt = f" ± {se:.1e}" if math.isfinite(se) else ""
        parts.append(f"{_ERROR_NAMES[m]} ×{math.exp(mean):.4f}{se_txt} (noise ×{math.exp(band):.3f})")
    return "; ".join(parts) if parts else "–"


def _tolerance_text(g: GroupReport) -> str:
    if g.inexact:
        return f"\\|log ratio\\| ≤ {NOISE_Z:g}σ/√n"
    return f"≤ {EXACT_RTOL:g}, same paths"


def format_report(groups: Mapping[str, GroupReport], by_recipe: Mapping[str, dict], *, header: Sequence[str],
                  problems: Sequence[str]) -> str:
    lines = list(header)
    lines += ["", "| solver / method | cells | bit-identical | largest rel. difference | path differences "
              "| paired error ratio, geometric mean ± s.e. of the log (trial noise band) | tolerance | verdict |",
              "|---|---:|---:|---:|---:|---|---|---|"]
    for g in groups.values():
        failed = f" ({g.failed} failed)" if g.failed else ""
        paired = _paired_text(g) if g.inexact else "–"
        lines.append(f"| {g.label} | {g.cells}{failed} | {g.identical} | {_fmt_rel(g.max_rel)} | {g.path_diffs} "
                     f"| {paired} | {_tolerance_text(g)} | {'ok' if g.passed else '**beyond tolerance**'} |")
    lines += ["", "Per recipe:", "", "| recipe | preprocessing | cells | bit-identical | path differences "
              "| largest rel. difference |", "|---|---|---:|---:|---:|---:|"]
    for name, r in sorted(by_recipe.items()):
        lines.append(f"| {name} | {r['preprocessing']} | {r['cells']} | {r['identical']} | {r['path_diffs']} "
                     f"| {_fmt_rel(r['max_rel'])} |")
    if problems:
        lines += ["", "Beyond tolerance or not run:", ""] + [f"- {p}" for p in problems[:40]]
        if len(problems) > 40:
            lines.append(f"- … and {len(problems) - 40} more")
    return "\n".join(lines) + "\n"


def _capped_lines(pairs: Sequence[tuple[Mapping, Mapping]], names=("committed", "rerun")) -> list[str]:
    """Per inexact solver and recipe: the sampled cells' solves an iteration cap ended, in both rows of a pair."""
    counts: dict[tuple[str, str], list[int]] = {}
    for old, new in pairs:
        if not is_inexact(old["params"]) or _value(old.get("n_solves")) is None or new.get("status") != "ok":
            continue
        c = counts.setdefault((group_label(old["method"], old["params"]), old["experiment"]), [0, 0, 0, 0])
        c[0] += int(_value(old["n_capped_solves"]))
        c[1] += int(_value(old["n_solves"]))
        c[2] += int(new["n_capped_solves"])
        c[3] += int(new["n_solves"])
    if not counts:
        return []
    parts = [f"{label} in {recipe}: {a:,} of {b:,} {names[0]} ({a / max(b, 1):.0%}), {c:,} of {d:,} {names[1]} "
             f"({c / max(d, 1):.0%})" for (label, recipe), (a, b, c, d) in sorted(counts.items())]
    return ["- **Solves ended by an iteration cap** (the rest stopped on a tolerance): " + "; ".join(parts) + "."]


def _cpu() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


# -- driver ----------------------------------------------------------------------------
def _recipes(results: Path) -> list[str]:
    return sorted(p.parent.name for p in results.glob("*/results.parquet"))


def verify(results: Path = RESULTS, *, overrides: Sequence[str] = (), seed: int = 0, per_stratum: int = 2,
           per_stratum_inexact: int = 6, max_seconds: float = 1.0, jobs: int = 2, recipes: Sequence[str] = (),
           loader: Callable | None = None, progress: bool = True, rows_out=None, ipm_preset: str | None = None,
           log=sys.stderr) -> tuple[int, str]:
    """Sample, rerun and compare; returns (exit status, the report in Markdown)."""
    import pandas as pd
    from joblib import Parallel, delayed

    from paceggm.bench.config import compose_config, to_plain
    from paceggm.bench.runner import _backend, is_unavailable, load_cell_data, resolve_loader

    t0 = time.perf_counter()
    names = list(recipes) or _recipes(results)
    if not names:
        return 2, f"no committed results table under {results} (<recipe>/results.parquet)\n"
    tables, cfgs = [], {}
    for name in names:
        path = results / name / "results.parquet"
        if not path.is_file():
            return 2, f"no committed results table {path}\n"
        tables.append(pd.read_parquet(path))
        cfgs[name] = to_plain(compose_config([f"experiment={name}", *overrides]))
    table = pd.concat(tables, ignore_index=True)
    picked = sample(table, seed=seed, per_stratum=per_stratum, per_stratum_inexact=per_stratum_inexact,
                    max_seconds=max_seconds)
    problems: list[str] = []
    rows = picked.to_dict("records")
    cells: list[tuple[dict, Cell]] = []
    for row in rows:
        try:
            cells.append((row, as_run(rebuild_cell(row, cfgs[row["experiment"]]), ipm_preset)))
        except (ValueError, KeyError) as exc:
            problems.append(f"{row['experiment']} {row['variant']} {row['dataset']} ρ={row['rho']:g} "
                            f"trial {row['trial']}: not rebuildable: {exc}")

    # one load per data set and recipe setting; unavailable data sets are reported, not failed
    by_data: dict[tuple, list[tuple[dict, Cell]]] = {}
    for row, cell in cells:
        cfg = cfgs[row["experiment"]]
        key = (cell.dataset, cfg["preprocessing"], cfg.get("bound_check", "auto"), bool(cfg.get("drop_target")),
               str(cfg.get("data_dir")), str(cfg.get("loader")))
        by_data.setdefault(key, []).append((row, cell))
    unavailable: dict[str, str] = {}
    tasks, olds = [], []
    for key, members in by_data.items():
        cfg = cfgs[members[0][0]["experiment"]]
        try:
            data = load_cell_data(cfg, key[0], [c for _, c in members], loader or resolve_loader(cfg.get("loader")))
        except Exception as exc:
            if is_unavailable(exc):
                unavailable[key[0]] = f"{type(exc).__name__}: {exc}".splitlines()[0][:200]
                continue
            raise
        for row, cell in members:
            cfg = cfgs[row["experiment"]]
            tasks.append(delayed(_rerun)(cell, data, experiment=row["experiment"],
                                         test_fraction=float(cfg.get("test_fraction", 0.2))))
            olds.append(row)
    if not tasks:
        return 2, ("no sampled cell could be run here: "
                   + "; ".join(f"{k}: {v}" for k, v in sorted(unavailable.items())) + "\n")
    print(f"verify: rerunning {len(tasks)} of {len(table)} committed cells ({len(names)} recipes) "
          f"with {jobs} workers …", file=log, flush=True)
    from tqdm.auto import tqdm

    with _backend({"name": "loky", "n_jobs": jobs}, n_pending=len(tasks)) as n_jobs:
        out = list(tqdm(Parallel(n_jobs=n_jobs, return_as="generator")(tasks), total=len(tasks), desc="verify",
                        unit="cell", file=log, disable=not progress, dynamic_ncols=True))
    elapsed = time.perf_counter() - t0
    cpu = sum(cell_cpu for _, _, cell_cpu in out)

    pairs = [(old, new) for old, (new, _, _) in zip(olds, out)]
    if rows_out is not None:  # the reruns, for comparing two machines or kernels with each other
        from paceggm.bench.collect import to_frame

        Path(rows_out).parent.mkdir(parents=True, exist_ok=True)
        to_frame([new for _, new in pairs]).to_parquet(rows_out, index=False)
    environments = sorted({env for _, env, _ in out})

    header = [
        "# The committed results rerun on this machine",
        "",
        "Generated by `python -m paceggm.bench.verify` (`make verify`); do not edit by hand.",
        "",
        f"- **Sample**: {len(rows)} of the {len(table)} committed cells of {len(names)} recipes "
        f"({', '.join(names)}), seed {seed}: {per_stratum} a stratum (recipe × variant × data set), "
        f"{per_stratum_inexact} for IPM-Cholesky and PGD, among each stratum's cells of at most "
        f"{max_seconds:g} s committed time.",
        f"- **Machine**: {_cpu()}, {os.cpu_count()} logical cores; what moves the last bits in the workers: "
        f"{' | '.join(environments)} (`OPENBLAS_CORETYPE`={os.environ.get('OPENBLAS_CORETYPE', 'unset')}, "
        f"`NPY_DISABLE_CPU_FEATURES`={os.environ.get('NPY_DISABLE_CPU_FEATURES', 'unset')}).",
        f"- **Time**: {elapsed:.1f} s wall with {jobs} workers, one BLAS thread each; the cells took "
        f"{cpu:.1f} CPU seconds in the workers ({cpu / jobs:.1f} s a worker).",
        "- **IPM-Cholesky**: " + (f"every sampled cell rerun at the preset `{ipm_preset}` (a measurement of that "
                                  "preset, not like with like)" if ipm_preset else
                                  "each cell rerun at the preset it was made with (cells that name none: "
                                  f"`{UNRECORDED_IPM_PRESET}`)") + ".",
        "- **Data sets not available here** (their cells are not run): "
        + (", ".join(f"{k} ({v})" for k, v in sorted(unavailable.items())) if unavailable else "none") + ".",
    ]
    from paceggm.bench.summary import capped_exact_line

    if capped := capped_exact_line(table):  # every committed cell, not only the sample
        header.append(f"- **Committed cells**: {capped}.")
    return judge(pairs, table, header=header, problems=problems)


def _cell_text(row: Mapping) -> str:
    return f"{row['experiment']} {row['variant']} {row['dataset']} ρ={row['rho']:g} trial {row['trial']} [{row['cell_key']}]"


def judge(pairs: Sequence[tuple[Mapping, Mapping]], table, *, header: Sequence[str],
          problems: Sequence[str] = (), names=("committed", "rerun")) -> tuple[int, str]:
    """Exit status and report of (reference, rerun) row pairs; ``table`` (the committed rows) gives the trial noise."""
    problems = list(problems)
    groups = summarise(pairs, trial_noise(table))
    by_recipe: dict[str, dict] = {}
    for old, new in pairs:
        c = compare(old, new)
        r = by_recipe.setdefault(old["experiment"], {"preprocessing": old["preprocessing"], "cells": 0,
                                                     "identical": 0, "path_diffs": 0, "max_rel": 0.0})
        r["cells"] += 1
        r["identical"] += c["identical"]
        r["path_diffs"] += c["path_differs"]
        r["max_rel"] = max(r["max_rel"], c["rel"])
        if not c["ok"]:
            why = str(new.get("error") or "").strip().splitlines()[-1:]
            problems.append(f"{_cell_text(old)}: failed: {why[0] if why else 'no error recorded'}")
        elif not is_inexact(old["params"]) and (c["rel"] > EXACT_RTOL or c["path_differs"]):
            problems.append(f"{_cell_text(old)}: rel. difference {_fmt_rel(c['rel'])}, path "
                            + ", ".join(f"{p} {_value(old.get(p))}→{_value(new.get(p))}" for p in PATH))
    header = [*header, *_capped_lines(pairs, names)]
    status = 0 if all(g.passed for g in groups.values()) and not problems else 1
    header.append(f"- **Verdict**: {'within tolerance' if status == 0 else 'BEYOND TOLERANCE'} "
                  f"(exit status {status}).")
    return status, format_report(groups, by_recipe, header=header, problems=problems)


def pair(reference: Path, rerun: Path, results: Path = RESULTS) -> tuple[int, str]:
    """Two reruns' rows (``--rows``) against each other, cell by cell, by the same rules; runs nothing."""
    import pandas as pd

    a, b = pd.read_parquet(reference), pd.read_parquet(rerun)
    theirs = {k: r for k, r in zip(b["cell_key"], b.to_dict("records"))}
    pairs = [(r, theirs[k]) for k, r in zip(a["cell_key"], a.to_dict("records")) if k in theirs]
    if not pairs:
        return 2, f"{reference} and {rerun} share no cell\n"
    table = pd.concat([pd.read_parquet(results / n / "results.parquet") for n in _recipes(results)],
                      ignore_index=True)
    header = ["# Two reruns of the committed cells, one against the other", "",
              f"`python -m paceggm.bench.verify --pair {reference.name} {rerun.name}`: {len(pairs)} cells in both "
              f"({len(a)} and {len(b)} rows); the first is the reference.", ""]
    return judge(pairs, table, header=header, names=(reference.stem, rerun.stem))


def main(argv: Sequence[str] | None = None, *, loader: Callable | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m paceggm.bench.verify", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--results", type=Path, default=RESULTS, help="the committed results (default: %(default)s)")
    parser.add_argument("--recipes", default="", help="comma-separated recipes (default: every table there)")
    parser.add_argument("--seed", type=int, default=0, help="the sample's seed (default: %(default)s)")
    parser.add_argument("--per-stratum", type=int, default=2, help="cells a stratum (default: %(default)s)")
    parser.add_argument("--per-stratum-inexact", type=int, default=6,
                        help="cells a stratum of IPM-Cholesky or PGD (default: %(default)s)")
    parser.add_argument("--max-seconds", type=float, default=1.0,
                        help="sample cells of at most this committed wall time (default: %(default)s)")
    parser.add_argument("--jobs", type=int, default=2, help="worker processes (default: %(default)s)")
    parser.add_argument("--out", type=Path, help="also write the report (Markdown) here")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument("--rows", type=Path, help="also write the rerun rows (a results table) here")
    parser.add_argument("--ipm-preset", help="rerun the IPM-Cholesky cells with this preset instead of the one "
                        "they were made with (a measurement: not like with like)")
    parser.add_argument("--pair", nargs=2, type=Path, metavar=("REFERENCE", "RERUN"),
                        help="compare two --rows files with each other instead (runs nothing)")
    parser.add_argument("overrides", nargs="*", help="Hydra overrides for every recipe (e.g. data_dir=…)")
    args = parser.parse_args(argv)
    for name, v in (("--per-stratum", args.per_stratum), ("--per-stratum-inexact", args.per_stratum_inexact),
                    ("--jobs", args.jobs)):
        if v < 1:
            parser.error(f"{name} must be >= 1, got {v}")
    if not args.max_seconds > 0:
        parser.error(f"--max-seconds must be positive, got {args.max_seconds}")
    if args.pair and args.rows is not None:
        parser.error("--rows writes the rows of a rerun; --pair runs nothing")
    if args.pair:
        status, report = pair(*args.pair, results=args.results)
    else:
        status, report = verify(args.results, overrides=args.overrides, seed=args.seed, per_stratum=args.per_stratum,
                                per_stratum_inexact=args.per_stratum_inexact, max_seconds=args.max_seconds,
                                jobs=args.jobs, recipes=[r for r in args.recipes.split(",") if r], loader=loader,
                                progress=not args.no_progress, rows_out=args.rows, ipm_preset=args.ipm_preset)
    print(report, end="")
    if args.out is not None and status != 2:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(report, encoding="utf-8")
    return status


if __name__ == "__main__":
    sys.exit(main())

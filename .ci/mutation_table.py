"""Write docs/mutation.md from mutmut's results: the counts, and every surviving mutant with why it survives.

Run by ``make mutation`` after ``mutmut run``. The reasons are kept by hand in
``.ci/mutation_reasons.json`` (mutant name -> why it is equivalent, or which test should
kill it); a survivor without one is listed as unexplained and the command exits 1. A mutant no
selected test reaches ("no tests") is a gap too, held to the same rule.

    python .ci/mutation_table.py --out docs/mutation.md PATTERN...

With ``--section``, the results of a run over part of the scope (mutmut run on those
patterns alone) are written as a section of the existing file instead, in the same format,
replacing that section if it is there and leaving the rest of the file as it is:

    python .ci/mutation_table.py --out docs/mutation.md --section PATTERN...

``--commit`` names the commit whose code was run (a snapshot's ``git rev-parse --short HEAD``); ``--note``
adds a paragraph to a section (what else was checked, or how its tests were chosen).
"""

from __future__ import annotations

import argparse
import collections
import fnmatch
import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REASONS = HERE / "mutation_reasons.json"


def _mutmut(*args: str) -> str:
    exe = Path(sys.executable).with_name("mutmut")
    for _attempt in range(3):  # a run in progress rewrites the result files it reads: read again
        out = subprocess.run([str(exe), *args], capture_output=True, text=True)
        if out.returncode == 0:
            return out.stdout
    raise RuntimeError(f"mutmut {' '.join(args)} failed: {out.stderr[-2000:]}")


def results(patterns: list[str]) -> dict[str, str]:
    out = {}
    for line in _mutmut("results", "--all", "true").splitlines():
        name, _, status = line.strip().rpartition(": ")
        if name and any(fnmatch.fnmatch(name, p) for p in patterns):
            out[name] = status.strip()
    return out


def diff_line(name: str) -> str:
    """The mutated line, ``old → new``."""
    lines = _mutmut("show", name).splitlines()
    old = [ln[1:].strip() for ln in lines if ln.startswith("-") and not ln.startswith("---")]
    new = [ln[1:].strip() for ln in lines if ln.startswith("+") and not ln.startswith("+++")]
    return f"`{' '.join(old)}` → `{' '.join(new)}`".replace("|", "\\|")


INTRO = [
    "`make mutation` runs [mutmut](https://github.com/boxed/mutmut) over the privacy package",
    "(`paceggm/privacy/`), PACE-GGM's round loop (`paceggm.estimator._run`), the private parameter search",
    "(`paceggm/selection.py`), the coordinate-bound check (`paceggm._validation.enforce_bound`) and the",
    "harness's budget check (`paceggm.bench.execute.check_spent`); each",
    "mutant is run against the tests that cover it (the selection is `[tool.mutmut]` in `pyproject.toml`),",
    "and this file is regenerated from the results. A survivor is either equivalent (no test can tell it",
    "apart: the reason is given) or a gap a test should close.",
]
RUNS = [
    "mutmut runs each mutant in a child forked from its own process and stops it at 3× its tests' CPU time",
    "plus 5 s. The accountant's tests start dask and loky worker processes, which a forked run can hang, so",
    "every mutant mutmut timed out on or never reached is run again by `.ci/mutation_fresh.py` in a fresh",
    "interpreter (`python -m pytest -x` on the same tests, fastest first), stopped at 5× their time plus 60 s",
    "of wall time, and run once more if stopped. A timeout left in the table hung in both fresh runs (an",
    "endless loop: the tests never finish, which catches the mutant); they are listed below with their changes.",
]


def _section_marks(patterns: list[str]) -> tuple[str, str]:
    key = " ".join(patterns)
    return f"<!-- mutation section: {key} -->", f"<!-- end of mutation section: {key} -->"


def results_lines(status: dict[str, str], reasons: dict[str, str], *, heading: str,
                  after_counts: tuple[str, ...] = ()) -> tuple[list[str], list[str]]:
    """The counts table, the survivors with their reasons, the timeouts and the undecided; and the unexplained.

    ``heading`` is the Markdown prefix of the subsections ("##" in the whole file, "###" in a section);
    ``after_counts`` lines follow the counts table.
    """
    counts = collections.Counter(status.values())
    # A mutant no selected test runs is as uncaught as a survivor: each needs a test or a reason.
    survivors = sorted(n for n, s in status.items() if s in ("survived", "no tests"))
    unexplained = [n for n in survivors if n not in reasons]
    lines = [
        "| mutants | killed | survived | timeout | no tests | other |",
        "|---:|---:|---:|---:|---:|---:|",
        f"| {len(status)} | {counts['killed']} | {counts['survived']} | {counts['timeout']} | {counts['no tests']} | "
        f"{len(status) - counts['killed'] - counts['survived'] - counts['timeout'] - counts['no tests']} |",
        "",
        *after_counts,
    ]
    undecided = counts["not checked"] + counts["check was interrupted by user"]
    if undecided:
        lines += [f"> **A partial run**: {len(status) - undecided} of the {len(status)} mutants in scope are decided, "
                  f"{undecided} not yet run; `make mutation` resumes it.", ""]
    lines += [
        f"{heading} Survivors",
        "",
        "| mutant | status | change | why it survives |",
        "|---|---|---|---|",
    ]
    for name in survivors:
        lines.append(f"| `{name}` | {status[name]} | {diff_line(name)} | {reasons.get(name, '**unexplained**')} |")
    if not survivors:
        lines.append("| — | — | — | — |")
    timeouts = sorted(n for n, s in status.items() if s == "timeout")
    if timeouts:
        lines += ["", f"{heading} Timeouts", "", "| mutant | change |", "|---|---|"]
        lines += [f"| `{name}` | {diff_line(name)} |" for name in timeouts]
    others = collections.Counter((n.rpartition("__mutmut_")[0], s) for n, s in status.items()
                                 if s not in ("killed", "survived", "timeout", "no tests"))
    if others:
        lines += ["", f"{heading} Not decided (not run yet, or not classified)", "", "| function | status | mutants |",
                  "|---|---|---:|"]
        lines += [f"| `{f}` | {s} | {k} |" for (f, s), k in sorted(others.items())]
    return lines, unexplained


def with_section(text: str, patterns: list[str], body: list[str]) -> str:
    """``text`` with the section of ``patterns`` replaced by ``body`` (appended if it is not there)."""
    start, end = _section_marks(patterns)
    block = "\n".join([start, *body, end])
    if start in text and end in text:
        head, _, rest = text.partition(start)
        return head + block + rest.partition(end)[2]
    return text.rstrip("\n") + "\n\n" + block + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--section", action="store_true",
                        help="write the patterns' results as a section of the existing --out, not the whole file")
    parser.add_argument("--commit", help="the commit whose code the run tested, named in the output")
    parser.add_argument("--note", action="append", default=[],
                        help="a paragraph written after the section's introduction (with --section; repeatable)")
    parser.add_argument("patterns", nargs="+")
    args = parser.parse_args(argv)
    status = results(args.patterns)
    at = [f"Run at commit `{args.commit}`.", ""] if args.commit else []
    reasons = json.loads(REASONS.read_text()) if REASONS.exists() else {}
    scope = ", ".join(f"`{p}`" for p in args.patterns)
    if args.section:
        body, unexplained = results_lines(status, reasons, heading="###")
        lines = [f"## {scope}, run on its own scope", "",
                 "The table above is the last full run over the scope, at an earlier commit. These mutants were run on",
                 "their own (`.ci/mutation_run.py` and `.ci/mutation_fresh.py` given these patterns alone), each against",
                 "the tests that reach it; the next `make mutation` runs them with the rest of the scope and counts them",
                 "in the table above.", "", *at, *[line for note in args.note for line in (note, "")], *body]
        text = with_section(args.out.read_text(encoding="utf-8"), args.patterns, lines)
    else:
        body, unexplained = results_lines(status, reasons, heading="##", after_counts=(*RUNS, ""))
        lines = ["# Mutation testing", "", *INTRO, "", "Scope: " + scope, "", *at, *body]
        text = "\n".join(lines) + "\n"
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding="utf-8")
    counts = collections.Counter(status.values())
    decided = counts["killed"] + counts["survived"] + counts["timeout"] + counts["no tests"]
    print(f"{len(status)} mutants: {counts['killed']} killed, {counts['survived']} survived and "
          f"{counts['no tests']} with no tests ({len(unexplained)} unexplained), {counts['timeout']} timeout, "
          f"{len(status) - decided} not decided -> {args.out}")
    return 1 if unexplained else 0


if __name__ == "__main__":
    sys.exit(main())

"""Decide the mutants mutmut's forked runs could not: each in a fresh interpreter, its tests fastest first.

mutmut runs every mutant in a child forked from a process that has already imported the
tests. The accountant's and the ledger's tests start dask and loky worker processes, and in
such a forked child a failing pool test can spin until mutmut's CPU limit stops it: the
mutant is reported as a timeout although a plain ``pytest`` run fails in seconds. This
reruns each timeout and each mutant mutmut never reached as ``python -m pytest -x`` in
``mutants/`` (whose copy of the package holds every mutant; ``MUTANT_UNDER_TEST`` picks
one), on the tests mutmut mapped to the mutated function, and writes the verdict where
mutmut keeps its own (``mutants/<module>.py.meta``), so ``mutmut results`` and
``mutation_table.py`` read it. A mutant still running after ``--timeout-factor`` times its
tests' unmutated time plus ``--timeout-extra`` seconds of wall time in a fresh process, twice,
is a real timeout (an endless loop), and is recorded as one.

    python .ci/mutation_fresh.py PATTERN...
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from mutmut.stats import status_by_exit_code

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mutation_table import results  # noqa: E402

MUTANTS = Path("mutants")
RERUN = {"not checked", "check was interrupted by user", "timeout"}
# Verdicts are written as mutmut's own exit codes (pytest's 0, 1 and 5; mutmut's 33 for no tests
# and 36 for a timeout), so that mutmut reads them as it reads its own.
TIMEOUT, NO_TESTS = 36, 33
VERDICTS = {"killed", "survived", "no tests", "timeout"}


def _meta_path(name: str) -> Path:
    # mutmut names a mutant <module>.x_<function>__mutmut_<k> or <module>.xǁ<class>ǁ<method>__mutmut_<k>
    parts = name.split(".")
    module = parts[:next(i for i, part in enumerate(parts) if part.startswith(("x_", "xǁ")))]
    return MUTANTS.joinpath(*module[:-1], module[-1] + ".py.meta")


def _record(name: str, code: int, seconds: float) -> None:
    path = _meta_path(name)
    meta = json.loads(path.read_text())
    meta["exit_code_by_key"][name] = code
    meta.setdefault("durations_by_key", {})[name] = seconds
    tmp = path.with_suffix(".meta.tmp")
    tmp.write_text(json.dumps(meta, indent=4))
    os.replace(tmp, path)  # a reader never sees half a file


def _run(name: str, tests: list[str], limit: float) -> tuple[int, float]:
    env = {**os.environ, "MUTANT_UNDER_TEST": name, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
           "MKL_NUM_THREADS": "1"}
    cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "-o", "addopts=", *tests]
    start = time.monotonic()
    # its own session, so a timeout takes the worker processes its tests started down with it
    proc = subprocess.Popen(cmd, cwd=MUTANTS, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        code = proc.wait(timeout=limit)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        code = TIMEOUT
    return code, time.monotonic() - start


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=1, help="mutants run at once")
    parser.add_argument("--timeout-factor", type=float, default=5.0)
    parser.add_argument("--timeout-extra", type=float, default=60.0)
    parser.add_argument("--names", nargs="*", help="these mutants, whatever their status (default: every "
                        "timeout and undecided mutant the patterns match)")
    parser.add_argument("patterns", nargs="*")
    args = parser.parse_args(argv)
    # the tests as they are now (mutmut copies them into mutants/ only when it runs itself)
    shutil.copytree("tests", MUTANTS / "tests", dirs_exist_ok=True)
    stats = json.loads((MUTANTS / "mutmut-stats.json").read_text())
    tests_by_function, duration = stats["tests_by_mangled_function_name"], stats["duration_by_test"]
    names = args.names or sorted(n for n, s in results(args.patterns).items() if s in RERUN)
    print(f"{len(names)} mutants to run in fresh interpreters", flush=True)

    def decide(name: str) -> tuple[int, float]:
        tests = sorted(tests_by_function.get(name.rpartition("__mutmut_")[0], ()), key=lambda t: duration.get(t, 0))
        if not tests:
            return NO_TESTS, 0.0
        limit = args.timeout_factor * sum(duration.get(t, 0) for t in tests) + args.timeout_extra
        code, seconds = _run(name, tests, limit)
        if code == TIMEOUT:  # once more: a worker pool can stall on a loaded machine, an endless loop never ends
            code, seconds = _run(name, tests, limit)
        return code, seconds

    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        futures = {pool.submit(decide, name): name for name in names}
        for i, future in enumerate(concurrent.futures.as_completed(futures), 1):
            name, (code, seconds) = futures[future], future.result()
            verdict = status_by_exit_code[code]
            if verdict not in VERDICTS:
                print(f"{name}: pytest exited {code} (an error in the run itself, not a verdict); left undecided",
                      flush=True)
                continue
            _record(name, code, seconds)  # here, in one thread: each meta file is rewritten by one writer
            print(f"[{i}/{len(names)}] {name}: {verdict} ({seconds:.1f} s)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

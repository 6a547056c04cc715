"""Run mutmut over the scope, resuming: only the mutants in scope not yet decided are run.

mutmut reruns every mutant its name arguments match (a named mutant counts as asked for
again), so ``mutmut run PATTERN...`` would start the scope over on every call. Once
``mutants/`` holds results, this passes the names of the undecided ones instead (never run,
or interrupted); with none left it runs nothing. Run by ``make mutation``.

    python .ci/mutation_run.py --max-children 2 PATTERN...
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mutation_table import results  # noqa: E402

UNDECIDED = {"not checked", "check was interrupted by user"}
BATCH = 200  # names per call: a command line of a few tens of kB


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-children", type=int, default=2)
    parser.add_argument("patterns", nargs="+")
    args = parser.parse_args(argv)
    mutmut = [str(Path(sys.executable).with_name("mutmut")), "run", "--max-children", str(args.max_children)]
    status = results(args.patterns) if Path("mutants").is_dir() else {}
    if not status:  # nothing generated yet: mutmut makes the mutants of the scope and runs them all
        return subprocess.run([*mutmut, *args.patterns]).returncode
    pending = sorted(name for name, s in status.items() if s in UNDECIDED)
    print(f"{len(status)} mutants in scope, {len(status) - len(pending)} decided, {len(pending)} to run")
    for i in range(0, len(pending), BATCH):
        code = subprocess.run([*mutmut, *pending[i:i + BATCH]]).returncode
        if code:
            return code
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Small data-set loaders and methods injected into the harness in tests (no files, no network),
and the harness's command line in a process of its own.

The loaders follow the loader contract of ``paceggm.bench.data.load_dataset``
(``loader(name, *, preprocessing, data_dir)`` returning an object with ``X``,
``bound``, ``preprocessing`` and ``features_and_target()``), built from
scikit-learn's bundled breast-cancer data and seeded synthetic data.
"""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from paceggm.baselines import DiagonalOnly

TESTS = Path(__file__).resolve().parent

# The xdist group of the tests that send work to worker processes from the pytest process: loky's (the
# accountant's in scikit-learn's model selection, `make verify`'s, the sweep's on two workers) and dask's
# (conftest.dask_cluster). Parallel runs (make test: --dist loadgroup) keep them on one pytest worker,
# where one loky pool and one dask cluster serve them all: each new worker process costs its start-up,
# seconds apiece.
WORKER_PROCESSES = "worker_processes"


@dataclass
class SmallDataset:
    name: str
    X: np.ndarray
    columns: list
    target: str | None
    preprocessing: str
    bound: float = 1.0

    @property
    def max_abs(self) -> float:
        return float(np.abs(self.X).max())

    def features_and_target(self):
        if self.target is None:
            raise ValueError(f"{self.name} has no target column")
        j = self.columns.index(self.target)
        return np.delete(self.X, j, axis=1), self.X[:, j]


def _preprocess(X: np.ndarray, preprocessing: str) -> np.ndarray:
    lo, hi = X.min(axis=0), X.max(axis=0)
    X = 2.0 * (X - lo) / (hi - lo) - 1.0
    X = X - X.mean(axis=0)
    if preprocessing == "strict":
        X = X / np.abs(X).max()
    return X


def _raw(name: str) -> np.ndarray:
    if name == "bc":  # first six features + the label of scikit-learn's breast cancer
        from sklearn.datasets import load_breast_cancer

        data = load_breast_cancer()
        return np.column_stack([data.data[:, :6], data.target.astype(float)])
    if name.startswith("syn"):  # synthetic Gaussian, seeded by its name
        seed = int.from_bytes(hashlib.sha256(name.encode()).digest()[:4], "little")
        rng = np.random.default_rng(seed)
        d = 5
        A = rng.normal(size=(d, d))
        Z = rng.normal(size=(300, d)) @ A
        return np.column_stack([Z, Z @ rng.normal(size=d) + rng.normal(size=300)])
    if name == "damaged":  # a file that is there but cannot be read: a failure, not "unavailable"
        raise ValueError("damaged.csv: 3 columns, the registry expects 7")
    raise FileNotFoundError(f"unknown test data set {name!r}")


def small_loader(name: str, *, preprocessing: str, data_dir=None) -> SmallDataset:
    X = _preprocess(_raw(name), preprocessing)
    cols = [f"x{j}" for j in range(X.shape[1] - 1)] + ["y"]
    return SmallDataset(name, X, cols, "y", preprocessing)


class PrivateMeanRegressor:
    """A tiny ρ-zCDP regressor (predicts a noisy mean of ``y``) to exercise the harness's regression path.

    Replace-one sensitivity of the mean of values in ``[-bound, bound]`` is ``2·bound/n``.
    """

    def __init__(self, rho, *, bound=1.0, bound_check="raise", random_state=None):
        self.rho, self.bound, self.bound_check, self.random_state = rho, bound, bound_check, random_state

    def fit(self, X, y):
        from paceggm._validation import check_random_state
        from paceggm.privacy import gaussian_mechanism

        y = np.clip(np.asarray(y, dtype=float), -self.bound, self.bound)
        rng = check_random_state(self.random_state)
        self.mean_, _ = gaussian_mechanism(float(y.mean()), rho=self.rho, sensitivity=2 * self.bound / len(y), rng=rng)
        self.rho_spent_ = float(self.rho)
        return self

    def predict(self, X):
        return np.full(np.asarray(X).shape[0], self.mean_)


# A sweep of this method, interrupted in the middle: `+method.gated={...}` with `method=[]`.
GATED = "+method.gated={key:gated,target:'bench_loaders:GatedDiagonal',measures:diagonal}"


def gate_env(folder, n_open: int) -> dict:
    """Environment under which only the first ``n_open`` fits of :class:`GatedDiagonal` finish."""
    return {"BENCH_LOADERS_GATE": str(folder), "BENCH_LOADERS_OPEN": str(n_open)}


class GatedDiagonal(DiagonalOnly):
    """The diagonal baseline, whose fits can be held, to stop a sweep mid-run.

    Under :func:`gate_env`, the first ``n_open`` fits of every process together finish (each claims a
    slot by creating a file exclusively in the gate folder) and every later fit waits, without using
    the CPU, until its process is stopped (at most a minute, then it fails). Without it, every fit
    finishes at once, so a rerun in the test's own process resumes the sweep. The test then knows
    exactly which cells a stopped sweep finished, whatever the load of the machine.
    """

    def fit(self, X, y=None):
        super().fit(X, y)
        _wait_at_the_gate()
        return self


def _wait_at_the_gate() -> None:
    folder = os.environ.get("BENCH_LOADERS_GATE")
    if folder is None:
        return
    for slot in range(int(os.environ["BENCH_LOADERS_OPEN"])):
        try:
            os.close(os.open(os.path.join(folder, f"slot{slot}"), os.O_CREAT | os.O_EXCL | os.O_WRONLY))
            return
        except FileExistsError:
            continue
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        time.sleep(0.05)
    raise TimeoutError("a held fit was never stopped")


def harness_process(args, env=(), **kw) -> subprocess.Popen:
    """``python -m paceggm.bench ARGS`` in a process of its own, with these loaders importable."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS.parent), str(TESTS)]), "OMP_NUM_THREADS": "1",
           **dict(env)}
    # A shell without job control starts background commands with SIGINT ignored, and Python
    # then (rightly) keeps ignoring it; a sweep under test must start as from a terminal.
    return subprocess.Popen([sys.executable, "-m", "paceggm.bench", *args], cwd=TESTS.parent, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL), **kw)


def run_cli(capsys, *args) -> tuple[int, str, str]:
    """The harness's command line in this process: its exit status, standard output and standard error."""
    from paceggm.bench.__main__ import main

    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def one_error_line(err: str) -> str:
    """The one ``error: …`` line a refused command prints (no traceback, nothing else)."""
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in err, err
    return lines[0]

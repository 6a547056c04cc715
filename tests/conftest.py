"""Shared fixtures: small data with a known structure."""

import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

# Nothing here imports the library at module level: pytest-xdist's controller loads this file before
# it starts the workers, and importing scikit-learn would hold them back seconds for nothing.


# Harness test modules are skipped, with the reason, when the harness's dependencies are absent.
def _skip_when_a_module_is_missing(node):
    from paceggm.bench.conftest import skip_when_a_module_is_missing

    return skip_when_a_module_is_missing(node)


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    yield from _skip_when_a_module_is_missing(collector)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    yield from _skip_when_a_module_is_missing(item)

# studies/ (the one-off measurements, tests/studies/) is a folder of the clone, not an installed
# package: put the clone on the path, after the installed packages, where it has one.
_CLONE = Path(__file__).resolve().parents[1]
if (_CLONE / "studies" / "__init__.py").is_file() and str(_CLONE) not in sys.path:
    sys.path.append(str(_CLONE))


def pytest_configure(config):
    xdist_controller = bool(getattr(config.option, "numprocesses", None)) and not hasattr(config, "workerinput")
    if not xdist_controller:  # the controller runs no test (and importing the harness would slow it)
        _memoize_compose()
        # user modules named by $PACEGGM_PLUGINS register their methods before any test module reads the registry
        from paceggm.bench.plugins import load_plugins

        load_plugins()


def _memoize_compose():
    """The harness's ``compose_config``, remembered per process for identical inputs.

    Composing with Hydra takes about 0.2 s, and the harness's tests compose the same recipes with the
    same overrides about a hundred times. The key holds everything the composition reads: the
    overrides, the configuration folder and the size and time of each of its files, and the
    registered methods (interpolations such as ``${oc.env:…}`` stay unresolved until ``to_plain``).
    Each call gets its own copy, and a composition that fails is never remembered: every error is
    raised by Hydra itself.
    """
    import copy

    import paceggm.bench.config as config

    compose, remembered = config.compose_config, {}

    def memoized(overrides=(), *, config_dir=None, config_name="config"):
        from paceggm.bench.methods import METHODS

        conf = Path(config_dir) if config_dir is not None else config.CONF_DIR
        stats = sorted((str(p), p.stat()) for p in conf.rglob("*") if p.is_file()) if conf.is_dir() else []
        files = tuple((name, s.st_mtime_ns, s.st_size) for name, s in stats)
        key = (tuple(overrides), str(conf), config_name, files, repr(sorted(METHODS.items())))
        if key not in remembered:
            remembered[key] = compose(overrides, config_dir=config_dir, config_name=config_name)
        return copy.deepcopy(remembered[key])

    config.compose_config = memoized


def _slow_first(config, items):
    """In a parallel run, tests marked ``slow`` first, in their collected order, then the rest: the run
    then ends on many short tests rather than waiting on one long test that started last. A run in one
    process keeps the order it was given (the mutation run puts each mutant's fastest tests first)."""
    if hasattr(config, "workerinput"):  # a pytest-xdist worker
        items.sort(key=lambda item: item.get_closest_marker("slow") is None)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    """Slow tests first in parallel runs (:func:`_slow_first`); warn when ``--dist loadgroup`` has not grouped the tests
    marked ``xdist_group``.

    pytest-xdist groups a marked test by appending ``@group`` to its node id on the worker; where
    the installed pytest ignores that (pytest >= 9.2 with xdist 3.8) the groups fall apart and each
    worker rebuilds the shared fixtures: nothing fails, the suite only gets slower. Say so.
    """
    _slow_first(config, items)
    if not getattr(config.option, "loadgroup", False):
        return
    lost = [item.nodeid for item in items
            if item.get_closest_marker("xdist_group") is not None and "@" not in item.nodeid]
    if lost:
        warnings.warn(f"--dist loadgroup: {len(lost)} tests marked xdist_group were not grouped (e.g. {lost[0]}); "
                      "this pytest/pytest-xdist pair ignores the groups, so shared fixtures are built on every "
                      "worker. Install the versions the dev extra allows.", stacklevel=1)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nobody listens on (at the time of asking)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def dask_cluster(tmp_path_factory):
    """A ``dask scheduler`` and a ``dask worker`` on 127.0.0.1, started by dask's command line: one worker
    process with two threads, shared by the tests that send work to dask worker processes (they are in
    one xdist group, bench_loaders.WORKER_PROCESSES, so one pytest worker starts it once).

    Work reaches a process of its own (by pickling, at another address) as with any number of workers;
    a nanny and a second worker process would only add two interpreters' start-up.
    """
    import os
    import signal
    import subprocess
    import time

    pytest.importorskip("distributed")
    exe = Path(sys.executable).with_name("dask")
    if not exe.is_file():
        pytest.skip("the dask command line is not installed next to this Python")
    logs_dir = tmp_path_factory.mktemp("dask")
    port = free_port()
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
           # the tests' loaders only: the package comes from the install (a release's source tree on the
           # path would shadow it)
           "PYTHONPATH": str(Path(__file__).resolve().parent)}
    address = f"tcp://127.0.0.1:{port}"
    logs = [open(logs_dir / f"{name}.log", "w") for name in ("scheduler", "worker")]
    # --no-dashboard still serves HTTP on :8787 unless told another address, where a LocalCluster that a
    # test starts beside this one would find the port taken and warn
    procs = [subprocess.Popen([str(exe), "scheduler", "--host", "127.0.0.1", "--port", str(port), "--no-dashboard",
                               "--dashboard-address", "127.0.0.1:0"],
                              env=env, stdout=logs[0], stderr=subprocess.STDOUT, start_new_session=True)]
    try:
        from distributed import Client

        deadline = time.monotonic() + 60
        while True:  # the scheduler is up once a client connects
            try:
                Client(address, timeout=2).close()
                break
            except OSError:
                if time.monotonic() > deadline or procs[0].poll() is not None:
                    raise RuntimeError((logs_dir / "scheduler.log").read_text()) from None
        procs.append(subprocess.Popen([str(exe), "worker", address, "--no-nanny", "--nthreads", "2", "--no-dashboard"],
                                      env=env, stdout=logs[1], stderr=subprocess.STDOUT, start_new_session=True))
        with Client(address, timeout=10) as client:
            client.wait_for_workers(1, timeout=60)
        yield address
    finally:
        # Each command leads its own process group: killing the groups ends them and anything they
        # started at once, where a graceful shutdown takes seconds.
        for p in reversed(procs):
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait()
        for log in logs:
            log.close()


def pytest_sessionfinish(session):
    """Kill the idle loky workers the tests left: joblib keeps a pool for minutes, so at exit Python would
    wait for each worker to wind down its interpreter (seconds at the end of every run), and a harness
    that waits on its own children (mutmut) would wait for them to time out."""
    reusable = sys.modules.get("joblib.externals.loky.reusable_executor")
    if reusable is not None and reusable._executor is not None:
        reusable._executor.shutdown(wait=True, kill_workers=True)


def registered_classes() -> dict[str, list]:
    """Every class the method registry names, by task, each once, in registry order: the library's estimators,
    the baselines, and whatever a user module registers (``$PACEGGM_PLUGINS``, the ``paceggm.bench`` entry
    points, loaded first). A registered class that cannot be imported is an error here, naming it."""
    from paceggm.bench.methods import METHODS, resolve
    from paceggm.bench.plugins import load_plugins

    load_plugins()
    out: dict[str, list] = {"covariance": [], "regression": []}
    for spec in METHODS.values():
        cls = resolve(spec)
        if cls not in out[spec.task]:
            out[spec.task].append(cls)
    return out


def package_methods() -> dict:
    """The registry's entries whose class is the package's own (``paceggm…``), without a plugin's."""
    from paceggm.bench.methods import METHODS

    return {key: spec for key, spec in METHODS.items() if spec.target.split(":")[0].split(".")[0] == "paceggm"}


def releases_only_the_diagonal(cls) -> bool:
    """Whether the registry declares that ``cls`` releases the d variances alone (``measures="diagonal"``): its
    estimate is then compared with the diagonal of the empirical covariance, not the whole matrix."""
    from paceggm.bench.methods import METHODS, resolve

    return any(spec.measures == "diagonal" and resolve(spec) is cls for spec in METHODS.values())


def __getattr__(name: str):
    """``COVARIANCE``, ``REGRESSION``, ``ALL``: every registered estimator class (:func:`registered_classes`),
    for the tests that hold each of them to the same contract, so a method added to the registry, in the
    package or by a plugin, is held to them without an edit here. Imported when a test module asks for them
    (see the note at the top)."""
    if name not in ("COVARIANCE", "REGRESSION", "ALL"):
        raise AttributeError(name)
    classes = registered_classes()
    covariance, regression = classes["covariance"], classes["regression"]
    return {"COVARIANCE": covariance, "REGRESSION": regression, "ALL": covariance + regression}[name]


@pytest.fixture(autouse=True)
def _conversions_computed_afresh():
    """Each test computes the (ε, δ) ↔ ρ conversions it calls, not an answer memoised by an earlier test
    (``_epsilon`` and ``_rho`` are cached): a test exercises the code it names whatever ran before it
    in the process, as under mutation testing, where every run forks from one that ran the suite."""
    from paceggm.privacy import accounting

    accounting._epsilon.cache_clear()
    accounting._rho.cache_clear()


def bounded_gaussian(n: int, d: int, seed: int) -> np.ndarray:
    """Correlated Gaussian rows scaled so that every |x_ij| <= 1."""
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(d, d))
    cov = A @ A.T / d + 0.2 * np.eye(d)
    X = rng.multivariate_normal(np.zeros(d), cov, size=n)
    return X / np.abs(X).max()


@pytest.fixture
def small_data():
    return bounded_gaussian(2000, 5, seed=0)


@pytest.fixture(scope="module")
def stalled_round():
    """tests/test_warm_recentre.py's stalled round (``STALLED``): its warm μ_min stage stalls, and the
    centred points newton_pcg kept in the rounds before re-centre it (every block solved by CG)."""
    from test_warm_recentre import STALLED, _rounds

    from paceggm.reconstruction import newton_pcg

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(newton_pcg, "_CG_MIN_ENTRIES", 0)
        problems, inits, _ = _rounds(STALLED + 1)
    return problems[STALLED], inits[STALLED]

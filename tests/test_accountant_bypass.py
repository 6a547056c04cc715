"""Every way scikit-learn users run fits charges the one shared budget exactly once, or refuses.

One test per route a fit can take: threads, joblib/loky worker processes (cross_val_score and
GridSearchCV with n_jobs=2, refit included), dask's serialisation, a forked process, clone,
pickling, and a plain ZCDPLedger passed as the accountant. After each, ``a.spent`` is exactly the
number of fits that ran times their ρ, or the fit was refused with nothing spent.
"""

import gc
import json
import multiprocessing
import os
import pickle
import subprocess
import sys
import threading
import warnings
from fractions import Fraction
from pathlib import Path

import joblib
import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import FitFailedWarning
from sklearn.model_selection import GridSearchCV, cross_val_score

from paceggm import PACEGGM
from paceggm.baselines import SSP
from paceggm.exceptions import AccountantUnavailableError, BudgetExceededError, LedgerFileError, PrivacyBudgetWarning
from paceggm.privacy import Charge, FileZCDPAccountant, ZCDPAccountant, ZCDPLedger

from bench_loaders import WORKER_PROCESSES

RHO = 0.125  # a power of two: sums of it are exact floats, so a.spent == k * RHO exactly


def _X(n=600, d=3, seed=0):
    return np.random.default_rng(seed).uniform(-1, 1, size=(n, d))


pytestmark = pytest.mark.xdist_group(WORKER_PROCESSES)


@pytest.fixture
def file_accountant(tmp_path):
    return FileZCDPAccountant.create(tmp_path / "budget.jsonl", budget=4.0)


# --- loky worker processes -------------------------------------------------------------------


# In this order, one pool of loky workers serves them all: a refusal raised in a worker (error_score="raise",
# last) makes joblib kill the pool, and a new pool costs its workers' start-up, seconds apiece.


def test_cross_val_score_in_worker_processes_charges_a_file_accountant_once_per_fold(file_accountant):
    a = file_accountant
    scores = cross_val_score(SSP(rho=RHO, accountant=a, random_state=0), _X(), cv=3, n_jobs=2)
    assert len(scores) == 3 and a.spent == 3 * RHO
    assert [c.purpose for c in a.charges] == ["SSP.fit"] * 3


def test_grid_search_in_worker_processes_charges_every_fit_and_the_refit(file_accountant):
    a = file_accountant
    search = GridSearchCV(SSP(rho=RHO, accountant=a, random_state=0), {"bound": [1.0, 2.0]}, cv=3, n_jobs=2)
    search.fit(_X())
    assert a.spent == (2 * 3 + 1) * RHO  # six folds in workers, the refit here


def test_cross_val_score_in_worker_processes_refuses_with_an_in_process_accountant():
    a = ZCDPAccountant(1.0)
    # error_score defaults to nan, yet the refusal is not silent: all folds failed, so it raises.
    with pytest.raises(ValueError, match="All the 3 fits failed") as err:
        cross_val_score(SSP(rho=RHO, accountant=a, random_state=0), _X(), cv=3, n_jobs=2)
    assert "AccountantUnavailableError" in str(err.value) and "FileZCDPAccountant" in str(err.value)
    assert a.spent == 0.0 and a.charges == ()


@pytest.mark.parametrize("error_score", [np.nan, "raise"])
def test_grid_search_in_worker_processes_refuses_and_never_refits(error_score):
    a = ZCDPAccountant(1.0)
    search = GridSearchCV(SSP(rho=RHO, accountant=a, random_state=0), {"bound": [1.0, 2.0]}, cv=3, n_jobs=2,
                          error_score=error_score)
    with pytest.raises((ValueError, AccountantUnavailableError), match="fits failed|copy made by pickling"):
        search.fit(_X())
    assert a.spent == 0.0  # neither the 6 fits in workers nor the refit spent anything
    assert not hasattr(search, "best_estimator_")


def test_a_refusal_in_some_folds_is_reported_not_swallowed():
    # error_score=nan turns a failed fold into nan: scikit-learn then warns (FitFailedWarning).
    a = ZCDPAccountant(2 * RHO)
    with pytest.warns(FitFailedWarning, match="BudgetExceededError"):
        scores = cross_val_score(SSP(rho=RHO, accountant=a, random_state=0), _X(), cv=3)
    assert np.isnan(scores).sum() == 1 and a.spent == 2 * RHO


# --- threads ---------------------------------------------------------------------------------


def test_threads_charge_exactly_and_never_overspend_under_contention():
    a = ZCDPAccountant(5 * RHO)  # room for 5 of the 12 fits
    X, outcomes = _X(), []

    def fit(seed):
        try:
            PACEGGM(rho=RHO, accountant=a, random_state=seed).fit(X)
            outcomes.append("fitted")
        except BudgetExceededError:
            outcomes.append("refused")

    threads = [threading.Thread(target=fit, args=(s,)) for s in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert outcomes.count("fitted") == 5 and outcomes.count("refused") == 7
    assert a.spent_exact == 5 * Fraction(RHO) and len(a.charges) == 5


def test_threading_backend_charges_the_in_process_accountant():
    a = ZCDPAccountant(1.0)
    with joblib.parallel_backend("threading", n_jobs=2):
        cross_val_score(SSP(rho=RHO, accountant=a, random_state=0), _X(), cv=3)
    assert a.spent == 3 * RHO


def test_file_accountant_under_threads_charges_exactly(file_accountant):
    a = file_accountant  # budget 4.0: 32 charges of RHO fit, the 33rd does not
    results = []

    def charge():
        try:
            a.charge(RHO, "thread")
            results.append(True)
        except BudgetExceededError:
            results.append(False)

    threads = [threading.Thread(target=charge) for _ in range(40)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results.count(True) == 32 and a.spent_exact == Fraction(4)


# --- clone, pickling, forks, dask ------------------------------------------------------------


def test_clone_shares_the_accountant():
    a = ZCDPAccountant(1.0)
    est = SSP(rho=RHO, accountant=a, random_state=0)
    copies = [clone(est) for _ in range(3)]
    assert all(c.accountant is a for c in copies)
    for c in copies:
        c.fit(_X())
    assert a.spent == 3 * RHO


def test_pickled_estimator_in_the_same_process_charges_the_original():
    a = ZCDPAccountant(1.0)
    est = pickle.loads(pickle.dumps(SSP(rho=RHO, accountant=a, random_state=0)))
    assert est.accountant is a
    est.fit(_X())
    assert a.spent == RHO


def test_pickle_outliving_its_accountant_is_detached_and_refuses():
    blob = pickle.dumps(SSP(rho=RHO, accountant=ZCDPAccountant(1.0), random_state=0))  # the original is gone
    est = pickle.loads(blob)
    assert est.accountant.detached
    with pytest.raises(AccountantUnavailableError, match="copy made by pickling"):
        est.fit(_X())
    assert est.accountant.spent == 0.0 and not hasattr(est, "rho_spent_")


# The child runs outside the repository root, where a source tree's own paceggm/ folder (as in an
# unpacked sdist) would shadow the installed package.
_AWAY = str(Path(__file__).resolve().parent)
# One interpreter for every copy (its start-up is most of the time): each blob on stdin, one line each.
_LOAD_AND_FIT = """
import pickle, sys
import numpy as np
from paceggm.exceptions import AccountantUnavailableError
for blob in pickle.loads(sys.stdin.buffer.read()):
    est = pickle.loads(blob)
    try:
        est.fit(np.random.default_rng(0).uniform(-1, 1, size=(600, 3)))
    except AccountantUnavailableError as err:
        print("refused:", err)
    else:
        print("spent", est.accountant.spent)
"""


def _fit_elsewhere(*blobs) -> list[str]:
    """Each serialised estimator loaded and fitted in one fresh Python process: what it printed for each."""
    out = subprocess.run([sys.executable, "-c", _LOAD_AND_FIT], input=pickle.dumps(list(blobs)),
                         capture_output=True, check=True, cwd=_AWAY).stdout
    return out.decode().splitlines()


def test_a_copy_in_another_process_refuses_unless_the_accountant_is_a_file(tmp_path):
    # pickle, and cloudpickle as dask ships tasks to its workers (the same reduction): the in-memory
    # accountant's copy refuses, the file accountant's charges the file the original reads.
    cloudpickle = pytest.importorskip("cloudpickle")
    a = ZCDPAccountant(1.0)
    f = FileZCDPAccountant.create(tmp_path / "b.jsonl", budget=1.0)
    pickled, cloudpickled, on_file = _fit_elsewhere(pickle.dumps(SSP(rho=RHO, accountant=a, random_state=0)),
                                                    cloudpickle.dumps(SSP(rho=RHO, accountant=a, random_state=0)),
                                                    pickle.dumps(SSP(rho=RHO, accountant=f, random_state=0)))
    assert pickled.startswith("refused: this ZCDPAccountant is a copy made by pickling")
    assert cloudpickled.startswith("refused: this ZCDPAccountant is a copy made by pickling")
    assert a.spent == 0.0
    assert on_file == f"spent {RHO}" and f.spent == RHO


def _fit_in_child(est, queue):
    try:
        est.fit(_X())
        queue.put("fitted")
    except AccountantUnavailableError as err:
        queue.put(str(err))


@pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(), reason="no fork on this platform")
def test_forked_child_refuses():
    a = ZCDPAccountant(1.0)
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    with warnings.catch_warnings():  # forking a multi-threaded process warns on Python >= 3.12
        warnings.simplefilter("ignore", DeprecationWarning)
        p = ctx.Process(target=_fit_in_child, args=(SSP(rho=RHO, accountant=a, random_state=0), queue))
        p.start()
    message = queue.get(timeout=60)
    p.join()
    assert "forked process" in message and a.spent == 0.0


def test_a_detached_copy_says_where_it_was_made_and_how_to_charge_the_one_budget(monkeypatch):
    copy = pickle.loads(pickle.dumps(ZCDPAccountant(1.0)))  # the original is gone
    with pytest.raises(AccountantUnavailableError) as err:
        copy.charge(RHO, "fit")
    message = str(err.value)
    assert message.startswith(
        "this ZCDPAccountant is a copy made by pickling (in a joblib/loky or dask worker, or an estimator saved "
        "and loaded elsewhere): charging it would start a fresh budget, so the fit is refused and nothing is spent")
    assert "n_jobs=1" in message and "FileZCDPAccountant.create(path, budget)" in message
    assert copy.spent == 0.0 and copy.charges == ()
    # A forked child holds the object itself, in a process with another id (the fork, without forking).
    a, pid = ZCDPAccountant(1.0), os.getpid()
    with monkeypatch.context() as m:
        m.setattr(os, "getpid", lambda: pid + 1)
        assert a.detached
        with pytest.raises(AccountantUnavailableError) as err:
            a.charge(RHO, "fit")
    assert str(err.value).startswith("this ZCDPAccountant is a copy in a forked process: charging it would start a "
                                     "fresh budget, so the fit is refused and nothing is spent")
    assert not a.detached and a.spent == 0.0 and a.charges == ()


def test_an_accountant_records_each_charge_with_its_purpose_and_shows_its_state():
    a = ZCDPAccountant(1.0)
    a.charge(0.25, "fit A")
    a.charge(RHO, "fit B")
    assert a.charges == (Charge(0.25, "fit A"), Charge(RHO, "fit B"))
    assert a.by_purpose() == {"fit A": 0.25, "fit B": RHO}
    assert repr(a) == "ZCDPAccountant(budget=1.0, spent=0.375, charges=2)"
    copy = pickle.loads(pickle.dumps(ZCDPAccountant(2.0)))
    assert repr(copy) == "ZCDPAccountant(budget=2.0, spent=0.0, charges=0, detached)"
    # A pickle that outlives an accountant with charges comes back as a snapshot of them, exact.
    blob = pickle.dumps(a)
    del a
    gc.collect()
    snapshot = pickle.loads(blob)
    assert repr(snapshot) == "ZCDPAccountant(budget=1.0, spent=0.375, charges=2, detached)"
    assert snapshot.charges == (Charge(0.25, "fit A"), Charge(RHO, "fit B"))
    assert snapshot.spent_exact == Fraction(3, 8) and snapshot.remaining == 0.625


def test_each_pickle_in_the_process_comes_back_as_its_own_accountant():
    a, b = ZCDPAccountant(1.0), ZCDPAccountant(2.0)
    assert pickle.loads(pickle.dumps(a)) is a and pickle.loads(pickle.dumps(b)) is b


@pytest.mark.parametrize(("read", "expected"), [
    ("spent", 0.25), ("spent_exact", Fraction(1, 4)), ("remaining", 0.75),
    ("charges", (Charge(0.25, "x"),)), ("by_purpose", {"x": 0.25}),
])
def test_file_accountant_readers_share_the_lock_and_a_charge_waits_for_them(tmp_path, read, expected):
    import fcntl

    a = FileZCDPAccountant.create(tmp_path / "b.jsonl", budget=1.0)
    a.charge(0.25, "x")
    got, charged = [], threading.Event()

    def charge():
        a.charge(RHO, "y")
        charged.set()

    with open(a.path, "rb") as fh:
        fcntl.flock(fh, fcntl.LOCK_SH)  # another reader holds the file
        def read_alongside_it():  # through a handle opened while the other reader holds the file
            b = FileZCDPAccountant(a.path)
            got.append(b.by_purpose() if read == "by_purpose" else getattr(b, read))

        reader = threading.Thread(target=read_alongside_it)
        reader.start()
        reader.join(timeout=10)
        read_alongside = not reader.is_alive()
        writer = threading.Thread(target=charge)
        writer.start()
        charged_alongside = charged.wait(timeout=0.3)
    reader.join()
    writer.join()
    assert read_alongside, f"opening or reading {read} waited for another reader: it took the exclusive lock"
    assert got == [expected]
    assert not charged_alongside, "a charge went ahead while a reader held the file: it took a shared lock"
    assert a.spent == 0.25 + RHO


# --- what may be an accountant ---------------------------------------------------------------


def test_a_plain_ledger_is_refused_as_an_accountant():
    ledger = ZCDPLedger(1.0)
    with pytest.raises(TypeError, match="not a ZCDPLedger"):
        SSP(rho=RHO, accountant=ledger).fit(_X())
    assert ledger.spent == 0.0


def test_what_may_be_an_accountant_is_said_in_full():
    from paceggm.privacy.accountant import check_accountant

    with pytest.raises(TypeError) as err:
        check_accountant(ZCDPLedger(1.0))
    assert str(err.value) == (
        "accountant must be a ZCDPAccountant or a FileZCDPAccountant, not a ZCDPLedger: a ledger is one run's "
        "record, and clone, pickling and every worker would copy it into a fresh budget. Pass "
        "paceggm.privacy.ZCDPAccountant(budget) (one process) or FileZCDPAccountant.create(path, budget) (several "
        "processes)")
    with pytest.raises(TypeError) as err:
        check_accountant({"budget": 1.0})
    assert str(err.value) == ("accountant must be a paceggm.privacy.ZCDPAccountant, a FileZCDPAccountant or None, "
                              "got dict")


def test_file_accountant_refuses_mismatched_budget_missing_file_and_damage(tmp_path, monkeypatch):
    path = tmp_path / "b.jsonl"
    for make in (FileZCDPAccountant, FileZCDPAccountant.create):
        with pytest.raises(ValueError, match=r"^budget must be a finite number > 0, got -1\.0$"):
            make(path, budget=-1.0)
        with monkeypatch.context() as m:  # a system without flock
            m.setitem(sys.modules, "fcntl", None)
            with pytest.raises(OSError, match=r"^FileZCDPAccountant needs fcntl\.flock \(a POSIX system\); use "
                                              r"ZCDPAccountant with n_jobs=1 instead$"):
                make(path, budget=1.0)
    with pytest.raises(FileNotFoundError, match=r"FileZCDPAccountant\.create\(path, budget\)"):
        FileZCDPAccountant(path)
    assert not path.exists()
    a = FileZCDPAccountant.create(path, budget=1.0)
    assert FileZCDPAccountant(path, budget=1.0).budget == 1.0 and FileZCDPAccountant(path).budget == 1.0
    with pytest.raises(ValueError, match="holds a budget of 1.0"):
        FileZCDPAccountant(path, budget=2.0)
    a.charge(0.5, "x")
    with pytest.raises(BudgetExceededError, match="for 'y' would exceed the budget"):  # names what asked
        a.charge(0.75, "y")
    # One line per charge, appended: the exact ρ, what it paid for, which process charged it, the exact total.
    lines = [json.loads(line) for line in path.read_text().splitlines()[1:]]
    assert lines == [{"rho": (0.5).hex(), "purpose": "x", "pid": os.getpid(), "spent": "1/2"}]
    other = tmp_path / "other.jsonl"
    other.write_text('{"budget": "0x1.0p+0"}\n')
    with pytest.raises(LedgerFileError, match=r"^the accountant file '.*other\.jsonl' is damaged or not an accountant "
                                              r"file \(ValueError: not an accountant file\); nothing was charged$"):
        FileZCDPAccountant(other)
    with open(path, "a") as fh:
        fh.write("{not json\n")
    with pytest.raises(LedgerFileError, match="damaged"):
        a.charge(0.1, "z")
    with pytest.raises(LedgerFileError, match="damaged"):
        _ = a.spent


def test_model_selection_without_an_accountant_warns():
    with pytest.warns(PrivacyBudgetWarning, match="GridSearchCV.fit without an accountant"):
        GridSearchCV(SSP(rho=RHO, random_state=0), {"bound": [1.0, 2.0]}, cv=2).fit(_X())
    with pytest.warns(PrivacyBudgetWarning, match="cross_val_score without an accountant"):
        cross_val_score(SSP(rho=RHO, random_state=0), _X(), cv=2)
    with warnings.catch_warnings():  # a clone outside model selection, or with an accountant, is quiet
        warnings.simplefilter("error", PrivacyBudgetWarning)
        clone(SSP(rho=RHO))
        cross_val_score(SSP(rho=RHO, accountant=ZCDPAccountant(1.0), random_state=0), _X(), cv=2)


@pytest.mark.slow
def test_dask_worker_processes_refuse_or_charge_the_file_accountant(tmp_path, dask_cluster):
    from distributed import Client

    # One worker process, two threads: the folds reach another process through dask's transport (the
    # file accountant across several processes is the loky tests' above).
    with Client(dask_cluster), joblib.parallel_backend("dask"):
        a = ZCDPAccountant(1.0)
        with pytest.raises(ValueError, match="All the 3 fits failed") as err:
            cross_val_score(SSP(rho=RHO, accountant=a, random_state=0), _X(), cv=3)
        assert "AccountantUnavailableError" in str(err.value) and a.spent == 0.0
        f = FileZCDPAccountant.create(tmp_path / "b.jsonl", budget=1.0)
        cross_val_score(SSP(rho=RHO, accountant=f, random_state=0), _X(), cv=3)
        assert f.spent == 3 * RHO

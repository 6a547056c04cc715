"""Budgets that several fits share: the accountants an estimator charges before it runs.

An accountant stands for one real budget. Every way a fit can be run —
threads, ``clone``, pickling, joblib/loky or dask workers, forked processes —
either charges that one budget or refuses to run; none starts a fresh one.

* :class:`ZCDPAccountant` lives in one process. Threads charge it under a
  lock; ``copy``, ``deepcopy`` and ``clone`` return the object itself; a pickle
  of it loaded in the same process, while it is alive, is the object itself.
  Anywhere else (another process, a fork, a pickle outliving it) the copy is
  *detached*: charging it raises
  :class:`~paceggm.exceptions.AccountantUnavailableError`.
* :class:`FileZCDPAccountant` keeps the ledger in a file, under an exclusive
  OS lock (``flock``) for every check-and-charge, so processes on one machine
  — loky or dask workers included — charge one budget, each fit exactly once.
  The file is made only by an explicit ``create`` and carries an identity: a
  handle refuses to charge a file that is gone, replaced or edited.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import uuid
import weakref
from contextlib import contextmanager
from fractions import Fraction

from paceggm._validation import check_rho
from paceggm.exceptions import AccountantUnavailableError, LedgerFileError
from paceggm.privacy.accounting import approx_dp_to_zcdp
from paceggm.privacy.ledger import Charge, ZCDPLedger

__all__ = ["FileZCDPAccountant", "ZCDPAccountant", "check_accountant"]

# The accountants alive in this process, by token: unpickling in the process that
# made an accountant gives back the accountant itself, not a second budget.
_LIVE: weakref.WeakValueDictionary[str, ZCDPAccountant] = weakref.WeakValueDictionary()

_FIX = ("run the fits in this process (n_jobs=1, or joblib's threading backend), or share one budget "
        "between processes with paceggm.privacy.FileZCDPAccountant.create(path, budget)")


class ZCDPAccountant(ZCDPLedger):
    """A ρ-zCDP budget shared by several fits; refuses any fit that would overspend it.

    Pass it as ``accountant=`` to any estimator of the project: each ``fit``
    charges its whole budget here *before* it touches the data, and a fit the
    remaining budget cannot pay for raises :class:`BudgetExceededError` with
    nothing spent and nothing computed. The running total is exact (see
    :class:`ZCDPLedger`), so ``spent <= budget`` always holds.

    An accountant stands for one real budget, so no copy of it may spend:
    :func:`copy.copy`, :func:`copy.deepcopy` — and therefore
    :func:`sklearn.base.clone`, ``GridSearchCV`` and ``cross_val_score`` with
    ``n_jobs=1`` or the threading backend — return the same object; threads
    charge it under a lock. A pickled copy loaded in another process (a
    joblib/loky or dask worker) or a forked child cannot reach the original:
    charging it raises :class:`~paceggm.exceptions.AccountantUnavailableError`
    (a failed fit, which ``GridSearchCV``/``cross_val_score`` report as a
    ``FitFailedWarning``, or an error when every fit failed). For fits in
    several processes use :class:`FileZCDPAccountant`.

    Parameters
    ----------
    budget : float
        Total ρ, > 0.

    Examples
    --------
    >>> import numpy as np
    >>> from paceggm import PACEGGM
    >>> from paceggm.exceptions import BudgetExceededError
    >>> X = np.random.default_rng(0).uniform(-1, 1, size=(500, 3))
    >>> acc = ZCDPAccountant(1.0)
    >>> _ = PACEGGM(rho=0.6, accountant=acc).fit(X)
    >>> try:
    ...     PACEGGM(rho=0.6, accountant=acc).fit(X)
    ... except BudgetExceededError:
    ...     print("refused; spent", acc.spent)
    refused; spent 0.6
    """

    def __init__(self, budget: float) -> None:
        super().__init__(budget)
        self._lock = threading.Lock()
        self._pid = os.getpid()
        self._token = uuid.uuid4().hex
        self._detached = False
        _LIVE[self._token] = self

    @classmethod
    def from_approx_dp(cls, epsilon: float, delta: float) -> ZCDPAccountant:
        """An accountant holding the ρ that implies ``(epsilon, delta)``-DP (:func:`approx_dp_to_zcdp`)."""
        return cls(approx_dp_to_zcdp(epsilon, delta))

    @property
    def detached(self) -> bool:
        """Whether this is a copy that cannot be charged (pickled elsewhere, or in a forked process)."""
        return self._detached or os.getpid() != self._pid

    def charge(self, rho: float, purpose: str) -> None:
        """Record a charge, atomically with respect to other threads.

        Raises
        ------
        AccountantUnavailableError
            If this is a detached copy (see the class docstring); nothing is recorded.
        BudgetExceededError, ValueError
            As :meth:`ZCDPLedger.charge`.
        """
        if self.detached:
            where = ("made by pickling (in a joblib/loky or dask worker, or an estimator saved and loaded "
                     "elsewhere)" if self._detached else "in a forked process")
            raise AccountantUnavailableError(
                f"this ZCDPAccountant is a copy {where}: charging it would start a fresh budget, so the fit is "
                f"refused and nothing is spent. To charge the one budget, {_FIX}"
            )
        with self._lock:
            super().charge(rho, purpose)

    def __copy__(self) -> ZCDPAccountant:
        return self

    def __deepcopy__(self, memo) -> ZCDPAccountant:
        return self

    def __reduce__(self):
        return _restore, (self._token, self._pid, self.budget, tuple(self._charges))

    def __repr__(self) -> str:
        state = ", detached" if self.detached else ""
        return f"ZCDPAccountant(budget={self.budget!r}, spent={self.spent!r}, charges={len(self.charges)}{state})"


def _restore(token: str, pid: int, budget: float, charges: tuple[Charge, ...]) -> ZCDPAccountant:
    """Unpickle: the live original when there is one in this process, else a detached snapshot."""
    if os.getpid() == pid:
        live = _LIVE.get(token)
        if live is not None:
            return live
    copy = ZCDPAccountant.__new__(ZCDPAccountant)
    ZCDPLedger.__init__(copy, budget)
    copy._charges = list(charges)
    copy._spent = sum((Fraction(c.rho) for c in charges), Fraction(0))
    copy._lock, copy._pid, copy._token, copy._detached = threading.Lock(), pid, token, True
    return copy


_HEADER_KEY = "paceggm_zcdp_accountant"
_FORMAT = 2  # 2: the ledger's identity, its budget and a check of both in the header; a running total per charge
_LEDGER_ERRORS = (IndexError, KeyError, TypeError, ValueError, AttributeError, RuntimeError)


def _header(identity: str, budget: float) -> dict:
    """A ledger's first line; its ``check`` makes a hand-edited identity or budget unreadable."""
    if not isinstance(identity, str) or not identity:
        raise ValueError(f"the ledger's identity must be a non-empty string, got {identity!r}")
    fields = f"{_FORMAT}:{identity}:{budget.hex()}"
    return {_HEADER_KEY: _FORMAT, "id": identity, "budget": budget.hex(),
            "check": hashlib.sha256(fields.encode()).hexdigest()[:16]}


def _parse(data: bytes) -> tuple[dict, ZCDPLedger]:
    """The header and the exact ledger a file's bytes hold; ``ValueError`` (or kin) for anything else."""
    if not data:
        raise ValueError("the file is empty")
    if not data.endswith(b"\n"):
        raise ValueError("its last line is cut short")
    first, *lines = data.decode("utf-8").split("\n")[:-1]
    header = json.loads(first)
    if not isinstance(header, dict) or _HEADER_KEY not in header:
        raise ValueError("not an accountant file")
    if header[_HEADER_KEY] != _FORMAT:
        raise ValueError(f"written in format {header[_HEADER_KEY]!r}; this version reads format {_FORMAT}")
    if header != _header(header["id"], float.fromhex(header["budget"])):
        raise ValueError("its header does not match its own check: it was edited")
    ledger = ZCDPLedger(float.fromhex(header["budget"]))
    for number, line in enumerate(lines, start=1):
        entry = json.loads(line)
        ledger.charge(float.fromhex(entry["rho"]), str(entry["purpose"]))
        # Each line carries the exact total after it: an edited, removed or inserted charge shows.
        if entry["spent"] != str(ledger.spent_exact):
            raise ValueError(f"charge {number} records a total of {entry['spent']}, the charges up to it "
                             f"sum to {ledger.spent_exact}")
    return header, ledger


def _require_flock() -> None:
    try:
        import fcntl  # noqa: F401  (POSIX only)
    except ImportError as err:  # non-POSIX platforms
        raise OSError("FileZCDPAccountant needs fcntl.flock (a POSIX system); use ZCDPAccountant "
                      "with n_jobs=1 instead") from err


class FileZCDPAccountant:
    """A ρ-zCDP budget in a file, shared by every process that opens it.

    Each charge takes an exclusive ``flock`` on the file, replays the ledger
    it holds in exact rational arithmetic (:class:`ZCDPLedger`), refuses an
    overspend, and appends the charge (its ρ as an exact hexadecimal float,
    and the exact total after it) — so fits in joblib/loky or dask worker
    processes on the machine, in threads, clones or pickled copies, each
    charge the one budget once.

    A ledger is made once, deliberately, by :meth:`create`, which writes a
    random identity and the exact budget into the file's header and refuses
    a path where a file exists. The constructor only opens a ledger: it never
    creates one, so a deleted ledger file is an error, not a fresh budget.
    Starting a new budget at the same path takes two explicit acts: remove the
    file, then :meth:`create` again. A handle remembers the absolute path (so
    a pickle sent to a worker in another directory, or a later ``chdir``,
    reaches the same file), the header and the file it opened; every charge
    and every read checks, under the lock, that the file is still that
    ledger, and otherwise raises :class:`~paceggm.exceptions.LedgerFileError`
    with nothing spent: the file gone, another ledger or another file in its
    place (a copy restored included), its header edited, a charge edited or
    removed, or the file damaged. A damaged file is never read as an empty
    ledger.

    The lock is the operating system's advisory ``flock``: the processes must
    share a local file system (network file systems may not honour it), and
    the platform must provide :mod:`fcntl` (POSIX).

    Parameters
    ----------
    path : str or os.PathLike
        An existing ledger file, made by :meth:`create`.
    budget : float, optional
        Total ρ the caller expects the ledger to hold; a ledger with another
        budget is refused (``ValueError``). Omitted, the recorded budget is used.

    Raises
    ------
    FileNotFoundError
        If there is no file at ``path`` (nothing is created).
    LedgerFileError
        If the file is not a ledger this version can read, or is damaged.

    Examples
    --------
    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "budget.jsonl")
    >>> acc = FileZCDPAccountant.create(path, budget=1.0)   # once: a new budget
    >>> acc.charge(0.25, "a fit")
    >>> FileZCDPAccountant(path, budget=1.0).spent   # another handle (another process, say) on the same budget
    0.25
    """

    def __init__(self, path, budget: float | None = None) -> None:
        _require_flock()
        import fcntl

        self.path = os.path.realpath(os.fspath(path))
        if budget is not None:
            budget = check_rho(budget, "budget")
        try:
            fh = open(self.path, "rb")
        except FileNotFoundError:
            raise FileNotFoundError(
                f"no accountant file at {self.path!r}: opening never creates a budget. Make a new one with "
                "FileZCDPAccountant.create(path, budget) — if a ledger was there, its charges are lost and "
                "the new one is a fresh budget") from None
        with fh:
            fcntl.flock(fh, fcntl.LOCK_SH)
            header, ledger = self._parse(fh)
            stat = os.fstat(fh.fileno())
        if budget is not None and budget != ledger.budget:
            raise ValueError(f"the accountant file {self.path!r} holds a budget of {ledger.budget!r}, "
                             f"not {budget!r}")
        self._open(header, (stat.st_dev, stat.st_ino), len(ledger.charges))

    @classmethod
    def create(cls, path, budget: float) -> FileZCDPAccountant:
        """Make a new ledger holding ``budget`` at ``path``, and a handle on it.

        The file is written aside and linked into place: it appears complete
        or not at all, and of two processes creating it at once exactly one
        wins.

        Raises
        ------
        FileExistsError
            If there is a file at ``path``; it is left as it is.
        """
        _require_flock()
        path = os.path.realpath(os.fspath(path))
        header = _header(uuid.uuid4().hex, check_rho(budget, "budget"))
        tmp = f"{path}.{os.getpid()}.{uuid.uuid4().hex}.tmp"
        try:
            with open(tmp, "xb") as fh:
                fh.write(json.dumps(header).encode() + b"\n")
                fh.flush()
                os.fsync(fh.fileno())
                stat = os.fstat(fh.fileno())
            os.link(tmp, path)
        except FileExistsError:
            raise FileExistsError(
                f"there is a file at {path!r}: create never replaces it (a ledger's charges would be lost and "
                "its budget start afresh). Open it with FileZCDPAccountant(path, budget); to start a new budget "
                "deliberately, remove the file first") from None
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
        return _handle(path, header, (stat.st_dev, stat.st_ino), 0)

    def _open(self, header: dict, file: tuple[int, int], seen: int) -> None:
        self.budget = float.fromhex(header["budget"])
        self._header, self._file, self._seen = header, file, seen

    def _parse(self, fh) -> tuple[dict, ZCDPLedger]:
        fh.seek(0)
        try:
            return _parse(fh.read())
        except _LEDGER_ERRORS as err:
            # Never a fresh budget from a damaged file: the charges it held would be lost.
            raise LedgerFileError(f"the accountant file {self.path!r} is damaged or not an accountant file "
                                  f"({type(err).__name__}: {err}); nothing was charged") from err

    @contextmanager
    def _ledger(self, lock: int):
        """The open file and its ledger, under ``lock``, once checked to be the ledger this handle opened."""
        import fcntl

        try:
            fh = open(self.path, "r+b" if lock == fcntl.LOCK_EX else "rb")
        except FileNotFoundError:
            raise LedgerFileError(
                f"the accountant file {self.path!r} is gone (deleted or moved) since this handle opened it; "
                "nothing was charged. A ledger made there again would be a fresh budget, so that is never done "
                "implicitly: FileZCDPAccountant.create(path, budget) does it, deliberately") from None
        with fh:
            fcntl.flock(fh, lock)
            header, ledger = self._parse(fh)
            stat = os.fstat(fh.fileno())
            if header["id"] != self._header["id"]:
                raise LedgerFileError(
                    f"the accountant file {self.path!r} holds another ledger (identity {header['id']}, not "
                    f"{self._header['id']}): it was replaced or made anew since this handle opened it; nothing "
                    "was charged")
            if header != self._header:
                raise LedgerFileError(
                    f"the header of the accountant file {self.path!r} changed since this handle opened it "
                    f"({json.dumps(header)}, not {json.dumps(self._header)}); nothing was charged")
            if (stat.st_dev, stat.st_ino) != self._file:
                raise LedgerFileError(
                    f"the accountant file {self.path!r} is another file than the one this handle opened "
                    "(replaced by a copy, or restored from one); nothing was charged")
            if len(ledger.charges) < self._seen:
                raise LedgerFileError(
                    f"the accountant file {self.path!r} holds {len(ledger.charges)} charges, fewer than the "
                    f"{self._seen} this handle has seen: charges were removed; nothing was charged")
            self._seen = max(self._seen, len(ledger.charges))
            yield fh, ledger

    def _read(self) -> ZCDPLedger:
        """The ledger as the file holds it, under a shared lock: readers go side by side, a charge waits."""
        import fcntl

        with self._ledger(fcntl.LOCK_SH) as (_, ledger):
            return ledger

    def charge(self, rho: float, purpose: str) -> None:
        """Charge ``rho`` for ``purpose``: check the file, the budget and record, under one exclusive lock.

        Raises
        ------
        BudgetExceededError
            If the exact total would exceed the budget; nothing is recorded.
        LedgerFileError
            If the file is not the ledger this handle opened, or is damaged; nothing is recorded.
        ValueError
            If ``rho`` is not a finite positive number.
        """
        import fcntl

        rho = check_rho(rho)
        with self._ledger(fcntl.LOCK_EX) as (fh, ledger):
            ledger.charge(rho, purpose)  # raises, recording nothing, if it would overspend
            line = {"rho": rho.hex(), "purpose": str(purpose), "pid": os.getpid(), "spent": str(ledger.spent_exact)}
            fh.seek(0, os.SEEK_END)
            fh.write((json.dumps(line) + "\n").encode())
            fh.flush()
            os.fsync(fh.fileno())
            self._seen = max(self._seen, len(ledger.charges))

    @property
    def spent(self) -> float:
        """Total charged so far by every handle (rounded down, so ``spent <= budget``)."""
        return self._read().spent

    @property
    def spent_exact(self) -> Fraction:
        return self._read().spent_exact

    @property
    def remaining(self) -> float:
        """Budget left, rounded down: charging it never exceeds the budget."""
        return self._read().remaining

    @property
    def charges(self) -> tuple[Charge, ...]:
        return self._read().charges

    def by_purpose(self) -> dict[str, float]:
        return self._read().by_purpose()

    def __reduce__(self):
        # The handle, not a reopening: a worker charges the ledger this handle opened, or is refused.
        return _handle, (self.path, self._header, self._file, self._seen)

    def __repr__(self) -> str:
        try:
            spent = repr(self.spent)
        except AccountantUnavailableError:
            spent = "unavailable"
        return f"FileZCDPAccountant({self.path!r}, budget={self.budget!r}, spent={spent})"


def _handle(path: str, header: dict, file: tuple[int, int], seen: int) -> FileZCDPAccountant:
    """A handle on the ledger with ``header`` in ``file`` at ``path``, made without reading it (see ``__reduce__``)."""
    handle = FileZCDPAccountant.__new__(FileZCDPAccountant)
    handle.path = path
    handle._open(header, tuple(file), seen)
    return handle


ACCOUNTANTS = (ZCDPAccountant, FileZCDPAccountant)


def check_accountant(accountant):
    """``accountant`` if it is one of :data:`ACCOUNTANTS` (or None); a ``TypeError`` saying what to pass otherwise."""
    if accountant is None or isinstance(accountant, ACCOUNTANTS):
        return accountant
    if isinstance(accountant, ZCDPLedger):
        raise TypeError(
            "accountant must be a ZCDPAccountant or a FileZCDPAccountant, not a ZCDPLedger: a ledger is one "
            "run's record, and clone, pickling and every worker would copy it into a fresh budget. Pass "
            "paceggm.privacy.ZCDPAccountant(budget) (one process) or FileZCDPAccountant.create(path, budget) "
            "(several processes)"
        )
    raise TypeError("accountant must be a paceggm.privacy.ZCDPAccountant, a FileZCDPAccountant or None, "
                    f"got {type(accountant).__name__}")

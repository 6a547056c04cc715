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
"""

from __future__ import annotations

import json
import os
import threading
import uuid
import weakref
from fractions import Fraction

from paceggm._validation import check_rho
from paceggm.exceptions import AccountantUnavailableError
from paceggm.privacy.accounting import approx_dp_to_zcdp
from paceggm.privacy.ledger import Charge, ZCDPLedger

__all__ = ["FileZCDPAccountant", "ZCDPAccountant", "check_accountant"]

# The accountants alive in this process, by token: unpickling in the process that
# made an accountant gives back the accountant itself, not a second budget.
_LIVE: weakref.WeakValueDictionary[str, ZCDPAccountant] = weakref.WeakValueDictionary()

_FIX = ("run the fits in this process (n_jobs=1, or joblib's threading backend), or share one budget "
        "between processes with paceggm.privacy.FileZCDPAccountant(path, budget)")


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


class FileZCDPAccountant:
    """A ρ-zCDP budget in a file, shared by every process that opens it.

    Each charge takes an exclusive ``flock`` on the file, replays the ledger
    it holds in exact rational arithmetic (:class:`ZCDPLedger`), refuses an
    overspend, and appends the charge (its ρ as an exact hexadecimal float) —
    so fits in joblib/loky or dask worker processes on the machine, in threads,
    clones or pickled copies, each charge the one budget once. The object
    holds only the path: it pickles to another handle on the same file.

    The lock is the operating system's advisory ``flock``: the processes must
    share a local file system (network file systems may not honour it), and
    the platform must provide :mod:`fcntl` (POSIX).

    Parameters
    ----------
    path : str or os.PathLike
        The ledger file. Created with ``budget`` if it does not exist.
    budget : float, optional
        Total ρ, > 0. Required to create the file; when the file exists it
        must equal the budget recorded there (or be omitted).

    Examples
    --------
    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "budget.jsonl")
    >>> acc = FileZCDPAccountant(path, budget=1.0)
    >>> acc.charge(0.25, "a fit")
    >>> FileZCDPAccountant(path).spent   # another handle (another process, say) on the same budget
    0.25
    """

    def __init__(self, path, budget: float | None = None) -> None:
        try:
            import fcntl  # noqa: F401  (POSIX only)
        except ImportError as err:  # non-POSIX platforms
            raise OSError("FileZCDPAccountant needs fcntl.flock (a POSIX system); use ZCDPAccountant "
                          "with n_jobs=1 instead") from err
        self.path = os.fspath(path)
        if budget is not None:
            budget = check_rho(budget, "budget")
        if not os.path.exists(self.path):
            if budget is None:
                raise FileNotFoundError(f"no accountant file at {self.path!r}: pass budget=... to create one")
            self._create(budget)
        recorded = self._read().budget
        if budget is not None and budget != recorded:
            raise ValueError(f"the accountant file {self.path!r} holds a budget of {recorded!r}, not {budget!r}")
        self.budget = recorded

    def _create(self, budget: float) -> None:
        # Written aside and linked into place: the file appears complete or not at all, and of
        # two processes creating it at once exactly one wins.
        tmp = f"{self.path}.{os.getpid()}.{uuid.uuid4().hex}.tmp"
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(json.dumps({_HEADER_KEY: 1, "budget": float(budget).hex()}) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        try:
            os.link(tmp, self.path)
        except FileExistsError:
            pass
        finally:
            os.unlink(tmp)

    def _replay(self, fh) -> ZCDPLedger:
        fh.seek(0)
        lines = fh.read().decode("utf-8").splitlines()
        try:
            header = json.loads(lines[0])
            if header.get(_HEADER_KEY) != 1:
                raise ValueError("not an accountant file")
            ledger = ZCDPLedger(float.fromhex(header["budget"]))
            for line in lines[1:]:
                entry = json.loads(line)
                ledger.charge(float.fromhex(entry["rho"]), str(entry["purpose"]))
        except (IndexError, KeyError, TypeError, ValueError, RuntimeError) as err:
            # Never a fresh budget from a damaged file: the charges it held would be lost.
            raise ValueError(f"the accountant file {self.path!r} is damaged or not an accountant file "
                             f"({type(err).__name__}: {err}); nothing was charged") from err
        return ledger

    def _read(self) -> ZCDPLedger:
        """The ledger as the file holds it, under a shared lock: readers go side by side, a charge waits."""
        import fcntl

        with open(self.path, "rb") as fh:
            fcntl.flock(fh, fcntl.LOCK_SH)
            return self._replay(fh)

    def charge(self, rho: float, purpose: str) -> None:
        """Charge ``rho`` for ``purpose``: check and record under one exclusive file lock.

        Raises
        ------
        BudgetExceededError
            If the exact total would exceed the budget; nothing is recorded.
        ValueError
            If ``rho`` is not a finite positive number, or the file is damaged.
        """
        import fcntl

        rho = check_rho(rho)
        with open(self.path, "r+b") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            ledger = self._replay(fh)
            ledger.charge(rho, purpose)  # raises, recording nothing, if it would overspend
            fh.seek(0, os.SEEK_END)
            fh.write((json.dumps({"rho": rho.hex(), "purpose": str(purpose), "pid": os.getpid()}) + "\n").encode())
            fh.flush()
            os.fsync(fh.fileno())

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
        return type(self), (self.path,)

    def __repr__(self) -> str:
        return f"FileZCDPAccountant({self.path!r}, budget={self.budget!r}, spent={self.spent!r})"


ACCOUNTANTS = (ZCDPAccountant, FileZCDPAccountant)


def check_accountant(accountant):
    """``accountant`` if it is one of :data:`ACCOUNTANTS` (or None); a ``TypeError`` saying what to pass otherwise."""
    if accountant is None or isinstance(accountant, ACCOUNTANTS):
        return accountant
    if isinstance(accountant, ZCDPLedger):
        raise TypeError(
            "accountant must be a ZCDPAccountant or a FileZCDPAccountant, not a ZCDPLedger: a ledger is one "
            "run's record, and clone, pickling and every worker would copy it into a fresh budget. Pass "
            "paceggm.privacy.ZCDPAccountant(budget) (one process) or FileZCDPAccountant(path, budget) "
            "(several processes)"
        )
    raise TypeError("accountant must be a paceggm.privacy.ZCDPAccountant, a FileZCDPAccountant or None, "
                    f"got {type(accountant).__name__}")

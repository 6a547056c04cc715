"""A file ledger is one budget with an identity: no misuse of its file charges another budget, or a fresh one.

``FileZCDPAccountant.create`` alone makes a ledger; a handle keeps the absolute path, the header (identity,
exact budget, format) and the file it opened, and every charge and read checks them under the lock. One test
per misuse (each refusal is a ``LedgerFileError`` with nothing written, unless said otherwise):

1. a relative path, then ``chdir``: the charge reaches the file the handle opened;
2. a pickled handle charged by a worker process in another directory: the same file;
3. the file deleted: a charge through an old handle is refused;
4. the file deleted: the plain constructor refuses (``FileNotFoundError``) and creates nothing;
5. the file replaced by a fresh ledger of the same budget (another identity): old handles are refused;
6. the header's budget edited upward: refused, by the header's own check and by the handle's memory of it;
7. the header's identity edited: refused, likewise;
8. the file truncated, emptied or holding broken JSON: refused, never read as an empty ledger;
9. the file replaced by one that is not a ledger (or an older format's): refused;
10. an existing ledger opened with another budget, or created again: refused, the file untouched;
11. a charge line edited, removed or added by hand: the running total refuses it; the last lines removed:
    a handle that saw them refuses;
12. the path replaced by a symlink to another ledger, the file moved away, or an earlier copy of it
    restored: refused;
13. the explicit way to a new budget (remove the file, then ``create``) works, is documented, and the
    old handles are refused afterwards.

And two properties of the critical section: of several creators at once exactly one wins, and a header edited
while a charge waits for the lock is seen by that charge.
"""

import hashlib
import json
import multiprocessing
import os
import pickle
import shutil
import threading
import time
import warnings

import pytest

from paceggm.exceptions import AccountantUnavailableError, LedgerFileError
from paceggm.privacy import Charge, FileZCDPAccountant
from paceggm.privacy.accountant import _header


@pytest.fixture
def ledger(tmp_path):
    """A ledger of budget 1 with one charge of 0.25, and its path."""
    path = tmp_path / "b.jsonl"
    acc = FileZCDPAccountant.create(path, budget=1.0)
    acc.charge(0.25, "first")
    return acc, path


def _edit_in_place(path, edit):
    """Rewrite the file's lines through ``edit`` in the same file (same inode), as an editor writing in place."""
    lines = path.read_bytes().decode().split("\n")[:-1]
    data = "".join(line + "\n" for line in edit(lines)).encode()
    with open(path, "r+b") as fh:
        fh.truncate(0)
        fh.write(data)


def _edit_header(path, *, recheck, **fields):
    def edit(lines):
        header = json.loads(lines[0]) | fields
        if recheck:  # as a tool would that knows the format: the header passes its own check
            header["check"] = _header(header["id"], float.fromhex(header["budget"]))["check"]
        return [json.dumps(header), *lines[1:]]

    _edit_in_place(path, edit)


def _refused(acc, path, match):
    """Charging and reading ``acc`` are refused with ``match``, and the file is left byte for byte."""
    before = path.read_bytes() if path.exists() else None
    with pytest.raises(LedgerFileError, match=match):
        acc.charge(0.125, "refused")
    with pytest.raises(LedgerFileError, match=match):
        _ = acc.spent
    assert (path.read_bytes() if path.exists() else None) == before


def test_the_refusal_is_an_accountant_unavailable_error():
    assert issubclass(LedgerFileError, AccountantUnavailableError)


# 1
def test_a_relative_path_then_chdir_charges_the_file_the_handle_opened(tmp_path, monkeypatch):
    home, elsewhere = tmp_path / "home", tmp_path / "elsewhere"
    home.mkdir()
    elsewhere.mkdir()
    monkeypatch.chdir(home)
    a = FileZCDPAccountant.create("b.jsonl", budget=1.0)
    b = FileZCDPAccountant("b.jsonl", budget=1.0)
    assert a.path == b.path == os.path.realpath(home / "b.jsonl")
    FileZCDPAccountant.create(elsewhere / "b.jsonl", budget=1.0)  # a namesake the charges must not reach
    monkeypatch.chdir(elsewhere)
    a.charge(0.25, "a")
    b.charge(0.25, "b")
    assert FileZCDPAccountant(home / "b.jsonl").charges == (Charge(0.25, "a"), Charge(0.25, "b"))
    assert FileZCDPAccountant(elsewhere / "b.jsonl").spent == 0.0


def _charge_from(directory, blob):
    os.chdir(directory)
    pickle.loads(blob).charge(0.25, "worker")


# 2
@pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(), reason="no fork on this platform")
def test_a_pickled_handle_in_a_process_started_elsewhere_charges_the_same_file(tmp_path, monkeypatch):
    home, elsewhere = tmp_path / "home", tmp_path / "elsewhere"
    home.mkdir()
    elsewhere.mkdir()
    monkeypatch.chdir(home)
    a = FileZCDPAccountant.create("b.jsonl", budget=1.0)
    FileZCDPAccountant.create(elsewhere / "b.jsonl", budget=1.0)  # the worker's namesake
    ctx = multiprocessing.get_context("fork")  # a fork is quick to start; its own directory is what matters
    with warnings.catch_warnings():  # forking a multi-threaded process warns on Python >= 3.12
        warnings.simplefilter("ignore", DeprecationWarning)
        worker = ctx.Process(target=_charge_from, args=(elsewhere, pickle.dumps(a)))
        worker.start()
    worker.join(timeout=60)
    assert worker.exitcode == 0
    assert a.charges == (Charge(0.25, "worker"),)
    assert json.loads((home / "b.jsonl").read_text().splitlines()[1])["pid"] != os.getpid()
    assert FileZCDPAccountant(elsewhere / "b.jsonl").spent == 0.0


# 3
def test_a_charge_through_an_old_handle_on_a_deleted_file_is_refused(ledger):
    acc, path = ledger
    blob = pickle.dumps(acc)
    path.unlink()
    for handle in (acc, pickle.loads(blob)):  # a pickle loaded afterwards too: it is the handle, not a reopening
        _refused(handle, path, r"is gone \(deleted or moved\) since this handle opened it; nothing was charged")
    assert not path.exists()
    assert repr(acc) == f"FileZCDPAccountant({acc.path!r}, budget=1.0, spent=unavailable)"


# 4
def test_the_constructor_never_makes_a_fresh_budget_where_a_ledger_was(ledger):
    _, path = ledger
    path.unlink()
    for budget in (1.0, None):
        with pytest.raises(FileNotFoundError, match=r"opening never creates a budget.*FileZCDPAccountant\.create"):
            FileZCDPAccountant(path, budget=budget)
    assert not path.exists()


# 5
def test_a_fresh_ledger_of_the_same_budget_in_its_place_refuses_the_old_handles(ledger):
    acc, path = ledger
    blob = pickle.dumps(acc)
    path.unlink()
    fresh = FileZCDPAccountant.create(path, budget=1.0)
    for handle in (acc, pickle.loads(blob)):  # a worker loading the old handle's pickle now
        _refused(handle, path, r"holds another ledger \(identity [0-9a-f]{32}, not [0-9a-f]{32}\): it was replaced")
    assert fresh.spent == 0.0


# 6
def test_a_budget_edited_upward_in_the_header_is_refused(ledger):
    acc, path = ledger
    acc.charge(0.75, "the rest")  # the budget is spent
    _edit_header(path, recheck=False, budget=(2.0).hex())
    _refused(acc, path, r"header does not match its own check: it was edited")
    with pytest.raises(LedgerFileError, match="does not match its own check"):
        FileZCDPAccountant(path)
    _edit_header(path, recheck=True, budget=(2.0).hex())
    _refused(acc, path, r"the header of the accountant file .* changed since this handle opened it")
    assert FileZCDPAccountant(path).budget == 2.0  # a new handle sees what the file now says; this one never


# 7
def test_an_identity_edited_in_the_header_is_refused(ledger):
    acc, path = ledger
    _edit_header(path, recheck=False, id="0" * 32)
    _refused(acc, path, r"header does not match its own check")
    _edit_header(path, recheck=True, id="0" * 32)
    _refused(acc, path, r"holds another ledger \(identity 0{32}, not [0-9a-f]{32}\)")


# 8
@pytest.mark.parametrize(("damage", "why"), [
    (lambda data: data[:-5], r"its last line is cut short"),
    (lambda data: b"", r"the file is empty"),
    (lambda data: data + b"{not json\n", r"JSONDecodeError"),
    (lambda data: data.split(b"\n")[0][:40], r"its last line is cut short"),
], ids=["cut-mid-line", "emptied", "broken-json-appended", "header-cut"])
def test_a_truncated_or_corrupt_file_is_refused_never_read_as_empty(ledger, damage, why):
    acc, path = ledger
    damaged = damage(path.read_bytes())
    with open(path, "r+b") as fh:
        fh.truncate(0)
        fh.write(damaged)
    _refused(acc, path, rf"is damaged or not an accountant file \(.*{why}.*\); nothing was charged")
    with pytest.raises(LedgerFileError, match=why):
        FileZCDPAccountant(path)


# 9
@pytest.mark.parametrize(("content", "why"), [
    ("rho,purpose\n0.25,first\n", r"JSONDecodeError"),
    ('{"budget": "0x1.0p+0"}\n', r"not an accountant file"),
    ("[1, 2]\n", r"not an accountant file"),
    ('{"paceggm_zcdp_accountant": 1, "budget": "0x1.0p+0"}\n', r"written in format 1; this version reads format 2"),
], ids=["csv", "json-object", "json-list", "format-1"])
def test_a_file_that_is_not_a_ledger_in_its_place_is_refused(ledger, content, why):
    acc, path = ledger
    _edit_in_place(path, lambda lines: content.splitlines())
    _refused(acc, path, rf"is damaged or not an accountant file \(.*{why}.*\)")
    with pytest.raises(LedgerFileError, match=why):
        FileZCDPAccountant(path)


# 10
def test_opening_with_another_budget_or_creating_again_is_refused(ledger):
    acc, path = ledger
    before = path.read_bytes()
    with pytest.raises(ValueError, match=r"holds a budget of 1\.0, not 2\.0$"):
        FileZCDPAccountant(path, budget=2.0)
    with pytest.raises(FileExistsError, match=r"create never replaces it .* remove the file first$"):
        FileZCDPAccountant.create(path, budget=2.0)
    assert path.read_bytes() == before and acc.spent == 0.25
    assert os.listdir(path.parent) == [path.name]  # the file written aside is gone too


# 11
@pytest.mark.parametrize("edit", ["lowered", "removed", "added"])
def test_a_charge_line_edited_by_hand_is_refused(ledger, edit):
    acc, path = ledger
    acc.charge(0.5, "second")
    acc.charge(0.125, "third")

    def change(lines):
        if edit == "lowered":  # the first charge said to be less than it was
            return [lines[0], json.dumps(json.loads(lines[1]) | {"rho": (0.0625).hex()}), *lines[2:]]
        if edit == "removed":
            return [lines[0], *lines[2:]]
        return [*lines, json.dumps({"rho": (0.0625).hex(), "purpose": "by hand", "pid": 1, "spent": "1/4"})]

    _edit_in_place(path, change)
    _refused(acc, path, r"charge \d records a total of .*, the charges up to it sum to ")
    with pytest.raises(LedgerFileError, match="records a total of"):
        FileZCDPAccountant(path)


def test_charges_removed_from_the_end_are_refused_by_a_handle_that_saw_them(ledger):
    acc, path = ledger
    acc.charge(0.5, "second")
    _edit_in_place(path, lambda lines: lines[:2])
    _refused(acc, path, r"holds 1 charges, fewer than the 2 this handle has seen: charges were removed")
    copy = pickle.loads(pickle.dumps(acc))  # a pickle carries what its handle saw
    _refused(copy, path, r"fewer than the 2 this handle has seen")


# 12
def test_a_symlink_to_another_ledger_a_move_or_a_restored_copy_is_refused(ledger, tmp_path):
    acc, path = ledger
    early = FileZCDPAccountant(path)  # opened before the second charge
    backup = tmp_path / "backup.jsonl"
    shutil.copyfile(path, backup)  # the ledger as it was then: the same header, one charge
    acc.charge(0.5, "second")
    # an earlier copy put back in place: the same identity, but not the file these handles opened
    os.replace(backup, path)
    for handle in (early, acc):
        _refused(handle, path, r"is another file than the one this handle opened \(replaced by a copy, or restored")
    # a symlink to another ledger in its place
    other = FileZCDPAccountant.create(tmp_path / "other.jsonl", budget=1.0)
    path.unlink()
    path.symlink_to(other.path)
    _refused(early, path, r"holds another ledger")
    assert other.spent == 0.0
    # moved away
    path.unlink()
    moved = FileZCDPAccountant.create(tmp_path / "moved.jsonl", budget=1.0)
    moved.charge(0.25, "x")
    os.rename(moved.path, path)
    _refused(moved, tmp_path / "moved.jsonl", r"is gone \(deleted or moved\)")
    assert FileZCDPAccountant(path).charges == (Charge(0.25, "x"),)  # opened where it is now: the same charges


# 13
def test_a_new_budget_takes_removing_the_file_and_create_and_refuses_the_old_handles(ledger):
    acc, path = ledger
    acc.charge(0.75, "the rest")
    doc = " ".join(FileZCDPAccountant.__doc__.split())
    assert "Starting a new budget at the same path takes two explicit acts: remove the file, then :meth:`create`" in doc
    path.unlink()
    fresh = FileZCDPAccountant.create(path, budget=1.0)
    fresh.charge(0.5, "new")
    assert FileZCDPAccountant(path, budget=1.0).charges == (Charge(0.5, "new"),)
    _refused(acc, path, r"holds another ledger")


def test_of_several_creators_at_once_exactly_one_wins(tmp_path):
    path, start, outcomes = tmp_path / "b.jsonl", threading.Barrier(8), []

    def create():
        start.wait()
        try:
            outcomes.append(FileZCDPAccountant.create(path, budget=1.0))
        except FileExistsError:
            outcomes.append(None)

    threads = [threading.Thread(target=create) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    (winner,) = [o for o in outcomes if o is not None]
    assert len(outcomes) == 8 and os.listdir(tmp_path) == ["b.jsonl"]
    winner.charge(0.25, "x")
    assert FileZCDPAccountant(path).spent == 0.25


def test_a_header_edited_while_a_charge_waits_for_the_lock_is_seen_by_that_charge(ledger):
    import fcntl

    acc, path = ledger
    outcome = []

    def charge():
        try:
            acc.charge(0.125, "waiting")
            outcome.append("charged")
        except LedgerFileError as err:
            outcome.append(str(err))

    with open(path, "rb") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        waiting = threading.Thread(target=charge)
        waiting.start()
        time.sleep(0.3)  # the charge has opened the file and waits for the lock
        _edit_header(path, recheck=True, budget=(2.0).hex())
    waiting.join(timeout=10)
    assert len(outcome) == 1 and "changed since this handle opened it" in outcome[0]
    assert FileZCDPAccountant(path).charges == (Charge(0.25, "first"),)


def _damaged(path, why):
    return f"the accountant file {os.path.realpath(path)!r} is damaged or not an accountant file ({why}); nothing was charged"


def test_each_damage_is_named_word_for_word(ledger):
    acc, path = ledger
    acc.charge(0.5, "second")  # the running totals: 1/4, then 3/4
    original = path.read_bytes()
    lines = original.decode().split("\n")[:-1]
    header = json.loads(lines[0])
    damages = {
        b"": "ValueError: the file is empty",
        original[:-1]: "ValueError: its last line is cut short",
        (json.dumps(header | {"budget": (2.0).hex()}) + "\n" + "\n".join(lines[1:]) + "\n").encode():
            "ValueError: its header does not match its own check: it was edited",
        ("\n".join([*lines[:2], json.dumps(json.loads(lines[2]) | {"spent": "1/2"})]) + "\n").encode():
            "ValueError: charge 2 records a total of 1/2, the charges up to it sum to 3/4",
    }
    for data, why in damages.items():
        path.write_bytes(data)
        with pytest.raises(LedgerFileError) as info:
            FileZCDPAccountant(path)
        assert str(info.value) == _damaged(path, why)


@pytest.mark.parametrize("identity", ["", 7, None])
def test_a_header_without_a_non_empty_string_identity_is_refused_even_with_a_matching_check(tmp_path, identity):
    path = tmp_path / "b.jsonl"
    budget = (1.0).hex()
    check = hashlib.sha256(f"2:{identity}:{budget}".encode()).hexdigest()[:16]
    path.write_text(json.dumps({"paceggm_zcdp_accountant": 2, "id": identity, "budget": budget, "check": check}) + "\n")
    with pytest.raises(LedgerFileError) as info:
        FileZCDPAccountant(path)
    assert str(info.value) == _damaged(
        path, f"ValueError: the ledger's identity must be a non-empty string, got {identity!r}")


def test_the_constructor_says_how_to_make_a_budget_word_for_word(tmp_path):
    path = tmp_path / "none.jsonl"
    with pytest.raises(FileNotFoundError) as info:
        FileZCDPAccountant(path)
    assert str(info.value) == (
        f"no accountant file at {os.path.realpath(path)!r}: opening never creates a budget. Make a new one with "
        "FileZCDPAccountant.create(path, budget) — if a ledger was there, its charges are lost and the new one is "
        "a fresh budget")


def test_create_over_a_file_says_what_to_do_word_for_word(ledger):
    _, path = ledger
    with pytest.raises(FileExistsError) as info:
        FileZCDPAccountant.create(path, budget=1.0)
    assert str(info.value) == (
        f"there is a file at {os.path.realpath(path)!r}: create never replaces it (a ledger's charges would be lost "
        "and its budget start afresh). Open it with FileZCDPAccountant(path, budget); to start a new budget "
        "deliberately, remove the file first")


def test_charges_removed_from_the_end_are_refused_by_a_handle_that_only_read_them(ledger):
    acc, path = ledger
    reader = FileZCDPAccountant(path)  # opened at one charge
    acc.charge(0.5, "second")
    acc.charge(0.125, "third")
    assert reader.spent == 0.875  # the reader has now seen three charges
    _edit_in_place(path, lambda lines: lines[:3])
    _refused(reader, path, r"holds 2 charges, fewer than the 3 this handle has seen: charges were removed")

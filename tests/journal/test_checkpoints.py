"""The journal's checkpoints taken out of its commits (Journal.defer_checkpoints, Journal.checkpoint;
docs/journal.md "Checkpoints"), on real SQLite files with synchronous=FULL: with them deferred, no
COMMIT copies the WAL into the database (the WAL grows past SQLite's own 1000-page threshold); a
PASSIVE checkpoint copies it all, and the next commit starts the WAL again from its beginning; and the
entries committed meanwhile are all there, chained, after the journal is closed and opened again."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest

from controller.journal import Journal, PendingEntry
from controller.journal.verify import verify_chain
from controller.journal.wal import (
    CHECKPOINT_BACKSTOP_PAGES,
    SQLITE_AUTOCHECKPOINT_PAGES,
    WAL_SIZE_LIMIT_BYTES,
    WalCheckpoint,
)


def notes(count: int, start: int) -> list[PendingEntry]:
    return [
        PendingEntry("device_lost", {"device": "shoe", "reason": f"unplugged {start + index}"}, None, "shoe")
        for index in range(count)
    ]


def wal_pages(path: Path) -> int:
    """The WAL's frames now, as a reader of its own sees them (its PASSIVE checkpoint says how many)."""
    with sqlite3.connect(path, isolation_level=None) as reader:
        return int(reader.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()[0][1])


def test_deferred_checkpoints_leave_the_commits_alone_until_one_resets_the_wal(tmp_path: Path) -> None:
    path = tmp_path / "journal.sqlite"
    journal = Journal.open(path, "T1")
    try:
        assert journal.wal.pragma("wal_autocheckpoint") == SQLITE_AUTOCHECKPOINT_PAGES
        journal.wal.defer_checkpoints()
        assert journal.wal.pragma("wal_autocheckpoint") == CHECKPOINT_BACKSTOP_PAGES
        assert journal.wal.pragma("journal_size_limit") == WAL_SIZE_LIMIT_BYTES
        assert journal.wal.pragma("synchronous") == 2  # FULL: every commit still fsyncs the WAL
        page_bytes = int(journal.wal.pragma("page_size"))
        written = 0
        # Commits until the WAL holds more than SQLite's own threshold: no commit checkpointed it.
        wal = path.with_name(path.name + "-wal")
        for _ in range(1000):
            journal.append_many(notes(40, written))
            written += 40
            if wal.stat().st_size // page_bytes > 1.2 * SQLITE_AUTOCHECKPOINT_PAGES:
                break
        else:
            pytest.fail(f"the WAL never passed {SQLITE_AUTOCHECKPOINT_PAGES} pages: commits checkpointed it")
        checkpoint = journal.wal.checkpoint()
        assert checkpoint.complete, checkpoint
        assert checkpoint.wal_pages > SQLITE_AUTOCHECKPOINT_PAGES
        journal.append_many(notes(1, written))
        written += 1
        # The WAL started again from its beginning: it holds the last commit's pages only.
        assert 0 < wal_pages(path) < 20
    finally:
        journal.close()
    with Journal.open_existing(path) as reopened:
        last = reopened.last_entry()
        assert last is not None
        assert last.seq == written
    assert verify_chain(path).ok


def test_resume_checkpoints_gives_the_commits_sqlites_own_checkpoint_back(tmp_path: Path) -> None:
    """What the daemon does when its checkpointing thread stops (stop_checkpoints)."""
    with Journal.open(tmp_path / "journal.sqlite", "T1") as journal:
        journal.wal.defer_checkpoints()
        assert journal.wal.pragma("wal_autocheckpoint") == CHECKPOINT_BACKSTOP_PAGES
        journal.wal.resume_checkpoints()
        assert journal.wal.pragma("wal_autocheckpoint") == SQLITE_AUTOCHECKPOINT_PAGES
        assert journal.wal.pragma("journal_size_limit") == WAL_SIZE_LIMIT_BYTES


def test_checkpoints_in_a_thread_of_their_own_run_while_the_writer_appends(tmp_path: Path) -> None:
    """A real thread runs PASSIVE checkpoints on a connection of its own, concurrently with the writer's
    commits on this thread (both started together by a barrier): every append succeeds (no SQLITE_BUSY
    or other error surfaces on either side), checkpoints ran while the appends did, and afterwards every
    entry is there and the chain verifies. No timing window: the writer waits (bounded) until the
    checkpointer has finished a pass after the first commits, and the checkpointer runs until told."""
    path = tmp_path / "journal.sqlite"
    appends, batch = 200, 5
    start = threading.Barrier(2, timeout=30)
    done = threading.Event()
    passed_once = threading.Event()
    passes: list[WalCheckpoint] = []
    errors: list[BaseException] = []
    with Journal.open(path, "T1") as writer, Journal.open_existing(path, readonly=False) as checkpointer:
        writer.wal.defer_checkpoints()
        writer.append_many(notes(batch, 0))  # something in the WAL before the first pass

        def checkpoint_all_along() -> None:
            try:
                start.wait()
                while not done.is_set() and len(passes) < 1_000_000:  # bounded: stops when told
                    passes.append(checkpointer.wal.checkpoint())
                    passed_once.set()
            except BaseException as error:  # reported to the test's thread below
                errors.append(error)
                passed_once.set()

        thread = threading.Thread(target=checkpoint_all_along, name="checkpointer")
        thread.start()
        written = batch
        try:
            start.wait()
            for number in range(appends):
                entries = writer.append_many(notes(batch, written))
                assert [entry.seq for entry in entries] == list(range(written + 1, written + batch + 1))
                written += batch
                if number == appends // 2:
                    # Half-way: a pass has surely run beside the commits before the rest are made.
                    assert passed_once.wait(timeout=30), "the checkpointer never finished a pass"
            during = len(passes)
        finally:
            done.set()
            thread.join(timeout=30)
        assert not thread.is_alive()
        assert errors == []
        assert during > 0  # checkpoints ran while the appends did
        assert writer.last_entry().seq == written == batch * (appends + 1)  # type: ignore[union-attr]
        assert checkpointer.wal.checkpoint().complete
    with Journal.open_existing(path) as reopened:
        assert len(list(reopened.entries())) == written
    assert verify_chain(path).ok


def test_a_passive_checkpoint_with_a_reader_holding_the_wal_copies_what_it_can_and_the_writer_commits(
    tmp_path: Path,
) -> None:
    """One thread: the writer's commits and a checkpoint on another connection, taken in turn, with and
    without a reader's snapshot (the concurrent case is the test above)."""
    path = tmp_path / "journal.sqlite"
    with Journal.open(path, "T1") as writer, Journal.open_existing(path, readonly=False) as checkpointer:
        writer.wal.defer_checkpoints()
        writer.append_many(notes(30, 0))
        writer.append_many(notes(30, 30))
        first = checkpointer.wal.checkpoint()
        assert first.complete
        assert first.wal_pages > 0
        # The writer commits while a reader's snapshot keeps the WAL: a PASSIVE checkpoint copies what
        # it can and returns, and the writer is never refused.
        with sqlite3.connect(path, isolation_level=None) as reader:
            reader.execute("BEGIN")
            reader.execute("SELECT count(*) FROM journal").fetchall()
            writer.append_many(notes(30, 60))
            partial = checkpointer.wal.checkpoint()
            writer.append_many(notes(30, 90))
            reader.execute("COMMIT")
        assert not partial.busy
        assert not partial.complete  # the frames the reader's snapshot predates stay in the WAL
        caught_up = checkpointer.wal.checkpoint()
        assert caught_up.complete, caught_up
        assert writer.last_entry().seq == 120  # type: ignore[union-attr]

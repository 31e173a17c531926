"""The journal's checkpoints taken out of its commits (Journal.defer_checkpoints, Journal.checkpoint;
docs/journal.md "Checkpoints"), on real SQLite files with synchronous=FULL: with them deferred, no
COMMIT copies the WAL into the database (the WAL grows past SQLite's own 1000-page threshold); a
PASSIVE checkpoint copies it all, and the next commit starts the WAL again from its beginning; and the
entries committed meanwhile are all there, chained, after the journal is closed and opened again."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from controller.journal import Journal, PendingEntry
from controller.journal.store import CHECKPOINT_BACKSTOP_PAGES, WAL_SIZE_LIMIT_BYTES
from controller.journal.verify import verify_chain

SQLITE_AUTOCHECKPOINT_PAGES = 1000  # SQLite's default threshold


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
        assert journal.pragma("wal_autocheckpoint") == SQLITE_AUTOCHECKPOINT_PAGES
        journal.defer_checkpoints()
        assert journal.pragma("wal_autocheckpoint") == CHECKPOINT_BACKSTOP_PAGES
        assert journal.pragma("journal_size_limit") == WAL_SIZE_LIMIT_BYTES
        assert journal.pragma("synchronous") == 2  # FULL: every commit still fsyncs the WAL
        page_bytes = int(journal.pragma("page_size"))
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
        checkpoint = journal.checkpoint()
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


def test_a_checkpoint_on_a_connection_of_its_own_never_blocks_the_writer(tmp_path: Path) -> None:
    path = tmp_path / "journal.sqlite"
    with Journal.open(path, "T1") as writer, Journal.open_existing(path, readonly=False) as checkpointer:
        writer.defer_checkpoints()
        writer.append_many(notes(30, 0))
        writer.append_many(notes(30, 30))
        first = checkpointer.checkpoint()
        assert first.complete
        assert first.wal_pages > 0
        # The writer commits while a reader's snapshot keeps the WAL: a PASSIVE checkpoint copies what
        # it can and returns, and the writer is never refused.
        with sqlite3.connect(path, isolation_level=None) as reader:
            reader.execute("BEGIN")
            reader.execute("SELECT count(*) FROM journal").fetchall()
            writer.append_many(notes(30, 60))
            partial = checkpointer.checkpoint()
            writer.append_many(notes(30, 90))
            reader.execute("COMMIT")
        assert not partial.busy
        assert not partial.complete  # the frames the reader's snapshot predates stay in the WAL
        caught_up = checkpointer.checkpoint()
        assert caught_up.complete, caught_up
        assert writer.last_entry().seq == 120  # type: ignore[union-attr]

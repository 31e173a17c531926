"""The journal refuses edits and out-of-chain rows in SQLite itself, and really runs WAL + FULL."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

import pytest

from controller.journal import Journal, JournalError
from controller.journal.store import APPLICATION_ID
from tests.journal.scripted import play_round


def raw(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(path, isolation_level=None)


def test_update_and_delete_are_refused_by_triggers(journal: Journal, journal_path: Path) -> None:
    play_round(journal, random.Random(1))
    connection = raw(journal_path)
    with pytest.raises(sqlite3.IntegrityError, match="append-only: UPDATE refused"):
        connection.execute("UPDATE journal SET payload = '{}' WHERE seq = 3")
    with pytest.raises(sqlite3.IntegrityError, match="append-only: DELETE refused"):
        connection.execute("DELETE FROM journal WHERE seq = 3")
    with pytest.raises(sqlite3.IntegrityError, match="append-only: DELETE refused"):
        connection.execute("DELETE FROM journal")
    with pytest.raises(sqlite3.IntegrityError, match="journal_meta is append-only"):
        connection.execute("UPDATE journal_meta SET value = 'T2' WHERE key = 'table_id'")
    connection.close()


def test_an_insert_must_extend_the_chain(journal: Journal, journal_path: Path) -> None:
    last = journal.append("dealer_key", {"key": "next", "seat": None}, round_id=None, source="display")
    connection = raw(journal_path)
    columns = "seq, time_utc, table_id, round_id, source, kind, payload, prev_hash, hash"
    row = ("t", "T1", None, "x", "dealer_key", "{}")
    with pytest.raises(sqlite3.IntegrityError, match="must extend the last one"):
        connection.execute(
            f"INSERT INTO journal ({columns}) VALUES (5, ?, ?, ?, ?, ?, ?, ?, 'h1')", (*row, last.hash)
        )
    with pytest.raises(sqlite3.IntegrityError, match="must extend the last one"):
        connection.execute(
            f"INSERT INTO journal ({columns}) VALUES (2, ?, ?, ?, ?, ?, ?, ?, 'h2')", (*row, "0" * 64)
        )
    connection.close()


def test_a_round_is_closed_once_even_by_a_raw_writer(journal: Journal, journal_path: Path) -> None:
    round_id = play_round(journal, random.Random(2))
    closing = next(journal.entries(round_id=round_id, kinds=["round_settled"]))
    with pytest.raises(
        JournalError, match=f"round {round_id} is already closed by round_settled at entry {closing.seq}"
    ):
        journal.append(
            "round_voided",
            {"round": {}, "settlement": {}, "reason": "r", "by": "b"},
            round_id=round_id,
            source="recovery",
        )
    last = journal.last_entry()
    assert last is not None
    connection = raw(journal_path)
    columns = "seq, time_utc, table_id, round_id, source, kind, payload, prev_hash, hash"
    with pytest.raises(sqlite3.IntegrityError, match="a round is closed once"):
        connection.execute(
            f"INSERT INTO journal ({columns}) VALUES (?, 't', 'T1', ?, 'x', 'round_settled', '{{}}', ?, 'h')",
            (last.seq + 1, round_id, last.hash),
        )
    with pytest.raises(sqlite3.IntegrityError, match="a round is closed once, after it started"):
        connection.execute(
            f"INSERT INTO journal ({columns}) "
            "VALUES (?, 't', 'T1', 'never-started', 'x', 'round_dead', '{}', ?, 'h')",
            (last.seq + 1, last.hash),
        )
    with pytest.raises(sqlite3.IntegrityError, match="a round starts once"):
        connection.execute(
            f"INSERT INTO journal ({columns}) VALUES (?, 't', 'T1', ?, 'x', 'round_started', '{{}}', ?, 'h')",
            (last.seq + 1, round_id, last.hash),
        )
    connection.close()


def test_wal_and_synchronous_full_are_set(journal: Journal, journal_path: Path) -> None:
    journal.append("dealer_key", {"key": "next", "seat": None}, round_id=None, source="display")
    assert journal.wal.pragma("journal_mode") == "wal"
    assert journal.wal.pragma("synchronous") == 2  # FULL
    assert journal.wal.pragma("application_id") == APPLICATION_ID
    # WAL is persistent: the file header says so to every later connection (bytes 18 and 19 are 2).
    header = journal_path.read_bytes()[:20]
    assert header[18:20] == b"\x02\x02"
    assert (journal_path.parent / (journal_path.name + "-wal")).exists()
    connection = raw(journal_path)
    assert connection.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    connection.close()
    with pytest.raises(ValueError, match="not a pragma name"):
        journal.wal.pragma("synchronous = OFF")


def test_a_journal_opened_without_fsync_says_so(journal_path: Path) -> None:
    from structlog.testing import capture_logs

    with capture_logs() as logs, Journal.open(journal_path, "T1", synchronous="OFF") as journal:
        assert journal.wal.pragma("synchronous") == 0
    assert logs[0]["event"] == "journal_not_durable"
    assert logs[0]["log_level"] == "warning"
    with Journal.open(journal_path, "T1") as journal:
        assert journal.wal.pragma("synchronous") == 2
    with pytest.raises(ValueError, match="synchronous must be FULL or OFF"):
        Journal.open(journal_path, "T1", synchronous="NORMAL")  # type: ignore[arg-type]

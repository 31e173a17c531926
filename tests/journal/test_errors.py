"""A journal that cannot write says so, clearly, and loses nothing it had already committed.

Disk full is simulated with SQLite's own page limit on the journal's connection (the same SQLITE_FULL a
full disk gives; filling a real disk in a test is not an option): it reaches into the private
connection for that one PRAGMA, and says so here."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from controller.cli import main
from controller.journal import Journal, JournalError, PendingEntry
from controller.journal.verify import verify_chain
from tests.journal.scripted import play_round


def test_disk_full_is_a_clear_error_and_nothing_is_half_written(journal: Journal, journal_path: Path) -> None:
    play_round(journal, random.Random(3))
    before = journal.last_entry()
    assert before is not None
    pages = journal.wal.pragma("page_count")
    journal.file.connection.execute(f"PRAGMA max_page_count = {pages}")  # the simulated full disk
    big = [
        PendingEntry("operator_note", {"action": "note", "by": "a", "detail": "x" * 4000}, None, "operator:a")
    ] * 20
    with capture_logs() as logs, pytest.raises(JournalError) as raised:
        journal.append_many(big)
    message = str(raised.value)
    assert message.startswith(f"journal {journal_path}: cannot append operator_note")
    assert "full" in message
    assert message.endswith("nothing was written")
    assert [log["event"] for log in logs] == ["journal_error"]
    assert logs[0]["log_level"] == "error"
    assert journal.last_entry() == before
    # Space again: appends continue on the same chain.
    journal.file.connection.execute("PRAGMA max_page_count = 1073741823")
    after = journal.append(
        "operator_note", {"action": "note", "by": "a", "detail": "ok"}, round_id=None, source="operator:a"
    )
    assert after.seq == before.seq + 1
    assert after.prev_hash == before.hash
    journal.close()
    assert verify_chain(journal_path).ok


def test_a_locked_journal_is_a_clear_error(journal_path: Path) -> None:
    with Journal.open(journal_path, "T1", busy_timeout_s=0.05) as journal:
        journal.append("dealer_key", {"key": "next", "seat": None}, round_id=None, source="display")
        other = sqlite3.connect(journal_path, isolation_level=None)
        other.execute("BEGIN EXCLUSIVE")
        with pytest.raises(JournalError, match="cannot append dealer_key: database is locked"):
            journal.append("dealer_key", {"key": "confirm", "seat": None}, round_id=None, source="display")
        other.execute("ROLLBACK")
        other.close()
        assert (
            journal.append(
                "dealer_key", {"key": "confirm", "seat": None}, round_id=None, source="display"
            ).seq
            == 2
        )


def test_a_corrupt_journal_is_a_clear_error(
    journal: Journal, journal_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    play_round(journal, random.Random(4))
    journal.close()
    data = bytearray(journal_path.read_bytes())
    data[:16] = b"corrupted header"
    journal_path.write_bytes(bytes(data))
    capsys.readouterr()  # the appends' log lines
    with pytest.raises(JournalError, match="not a database"):
        Journal.open(journal_path, "T1")
    assert main(["recall", "--journal", str(journal_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("flushtable recall: journal ")
    assert err.count("\n") == 1
    assert "Traceback" not in err


def test_a_journal_directory_that_cannot_be_made(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(JournalError, match="cannot create its directory"):
        Journal.open(blocker / "sub" / "journal.sqlite", "T1")


def test_last_error_is_kept_until_an_append_succeeds(journal_path: Path) -> None:
    with Journal.open(journal_path, "T1", busy_timeout_s=0.05) as journal:
        assert journal.writer.last_error is None
        other = sqlite3.connect(journal_path, isolation_level=None)
        other.execute("BEGIN EXCLUSIVE")
        with pytest.raises(JournalError):
            journal.append("dealer_key", {"key": "next", "seat": None}, round_id=None, source="display")
        assert "database is locked" in str(journal.writer.last_error)
        other.execute("ROLLBACK")
        other.close()
        journal.append("dealer_key", {"key": "next", "seat": None}, round_id=None, source="display")
        assert journal.writer.last_error is None

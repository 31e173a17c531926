"""`flushtable journal verify --totals` (controller/journal/totals_check.py, docs/journal.md "Totals and
indexes"): on a live table an append between reading the entries and reading the stored totals is not
taken for tampering (both read in one snapshot), and a damaged journal gets a verdict line and exit 1,
not a traceback."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from controller.cli import main
from controller.journal import Journal
from controller.journal.totals_check import check_totals
from tests.journal.tamper import tamper
from tests.journal.test_meters_progressive import (
    progressive_session_records,
    stepping_clock,
    write_progressive_journal,
)

_TOTALS_READ = "FROM journal_totals"


def test_an_append_between_the_two_reads_is_not_a_difference(tmp_path: Path) -> None:
    path = tmp_path / "journal.sqlite"
    batches = progressive_session_records(4)
    # The last round and the chips moved after it (the records after its closing entry).
    late_round = batches[-2] + batches[-1]
    del batches[-2:]
    ticks = stepping_clock()
    with Journal.open(path, "T1", clock=lambda: next(ticks), synchronous="OFF") as writer:
        for batch in batches:
            writer.append_many(batch)
        appended: list[int] = []

        def append_before_the_totals_are_read(sql: str) -> None:
            # Called as the stored totals' SELECT starts, after the entries were read: the moment a
            # live table's next round can land between the two reads.
            if _TOTALS_READ in sql and not appended:
                appended.append(writer.append_many(late_round)[-1].seq)

        with Journal.open_existing(path, readonly=True) as reader:
            reader.file.connection.set_trace_callback(append_before_the_totals_are_read)
            try:
                verdicts = check_totals(reader)
            finally:
                reader.file.connection.set_trace_callback(None)
    assert appended, "the totals were never read"
    assert [verdict.ok for verdict in verdicts] == [True], verdicts
    assert "totals of" in verdicts[0].line
    # The round appended meanwhile is counted by the next check, entries and totals alike.
    with Journal.open_existing(path, readonly=True) as reader:
        assert [verdict.ok for verdict in check_totals(reader)] == [True]


def _first_settled_seq(path: Path) -> int:
    with sqlite3.connect(path) as connection:
        row = connection.execute(
            "SELECT seq FROM journal WHERE kind = 'round_settled' ORDER BY seq LIMIT 1"
        ).fetchone()
    connection.close()
    return int(row[0])


def _verify_totals(path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, list[str], str]:
    code = main(["journal", "verify", "--journal", str(path), "--totals"])
    captured = capsys.readouterr()
    lines = [line for line in captured.out.splitlines() if line.startswith("totals: ")]
    return code, lines, captured.out + captured.err


def test_a_payload_that_is_not_json_is_a_verdict_not_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "journal.sqlite"
    write_progressive_journal(path, rounds=3)
    seq = _first_settled_seq(path)
    tamper(path, ("UPDATE journal SET payload = '{not json' WHERE seq = ?", (seq,)))
    code, lines, everything = _verify_totals(path, capsys)
    assert code == 1
    assert lines == [
        f"totals: segment 1 (open): cannot recount its entries: entry {seq}: payload is not JSON"
    ]
    assert f"bad entry {seq}: payload is not JSON" in everything  # the chain's own verdict, as before
    assert "Traceback" not in everything


def test_a_payload_that_is_not_an_object_is_a_verdict(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "journal.sqlite"
    write_progressive_journal(path, rounds=3)
    seq = _first_settled_seq(path)
    tamper(path, ("UPDATE journal SET payload = '[1, 2]' WHERE seq = ?", (seq,)))
    code, lines, everything = _verify_totals(path, capsys)
    assert code == 1
    assert lines == [
        f"totals: segment 1 (open): cannot recount its entries: entry {seq}: payload is not a JSON object"
    ]
    assert "Traceback" not in everything


def test_a_payload_not_of_its_kinds_shape_is_a_verdict(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "journal.sqlite"
    write_progressive_journal(path, rounds=3)
    seq = _first_settled_seq(path)
    tamper(path, ("UPDATE journal SET payload = '{\"settlement\": 5}' WHERE seq = ?", (seq,)))
    code, lines, everything = _verify_totals(path, capsys)
    assert code == 1
    assert len(lines) == 1
    assert lines[0].startswith(
        f"totals: segment 1 (open): cannot recount its entries: entry {seq}: payload is not a round_settled ("
    ), lines
    assert "Traceback" not in everything


def test_an_unreadable_totals_table_is_a_verdict(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "journal.sqlite"
    write_progressive_journal(path, rounds=3)
    # A damaged totals table: its values no longer numbers.
    tamper(path, ("UPDATE journal_totals SET value = 'x' WHERE period = 'all' AND key = 'handle_cents'", ()))
    code, lines, everything = _verify_totals(path, capsys)
    assert code == 1
    assert len(lines) == 1
    assert lines[0].startswith("totals: segment 1 (open): cannot read its totals: "), lines
    assert "all handle_cents" in lines[0]
    assert "Traceback" not in everything


def test_a_dropped_totals_table_is_a_verdict(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "journal.sqlite"
    write_progressive_journal(path, rounds=3)
    tamper(path, ("DROP TABLE journal_totals", ()))
    code, lines, everything = _verify_totals(path, capsys)
    assert code == 1
    assert lines == [
        "totals: segment 1 (open): cannot read its entries or totals: "
        "no such table: journal_totals (SQLITE_ERROR)"
    ]
    assert "Traceback" not in everything

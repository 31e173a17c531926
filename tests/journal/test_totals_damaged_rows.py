"""A stored entry the totals cannot count (its public part not its kind's shape: an edited or damaged
file's) is one ``JournalError`` naming the journal and the entry's seq where the totals read a file's
rows back: the migration's rebuild (a schema-2 journal opened to append) and a file's folds without
stored totals or round index (a segment sealed before the totals were kept). Never a bare
``EntryError``/``AttributeError`` traceback; the migration rolls back, so the file loses nothing.
`journal verify --totals` keeps making the same error its verdict (tests/journal/test_totals_check.py).
A real schema-2 journal written by release 57d2c68 (tests/journal/fixtures/README.md), damaged the way
a person with the file would (tests/journal/tamper.py)."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from controller.journal import Journal
from controller.journal.errors import JournalError
from controller.journal.totals import ALL_PERIOD
from tests.journal.tamper import tamper
from tests.journal.test_versions import _schema_version

V2 = Path(__file__).parent / "fixtures" / "journal-v2-57d2c68.sqlite"
SEVERITY_NOT_TEXT = (
    "payload is not a fault_raised (EntryError: journal: fault_raised: Expected `str`, got `int` - at "
    "`$.severity`)"
)


def _first_seq(path: Path, kind: str) -> int:
    connection = sqlite3.connect(path)
    try:
        return int(connection.execute("SELECT MIN(seq) FROM journal WHERE kind = ?", (kind,)).fetchone()[0])
    finally:
        connection.close()


def _with_severity_a_number(tmp_path: Path) -> tuple[Path, int]:
    path = tmp_path / "journal.sqlite"
    shutil.copyfile(V2, path)
    seq = _first_seq(path, "fault_raised")
    tamper(path, ("UPDATE journal SET payload = json_set(payload, '$.severity', 3) WHERE seq = ?", (seq,)))
    return path, seq


def test_the_migrations_rebuild_refuses_a_damaged_entry_in_one_line(tmp_path: Path) -> None:
    path, seq = _with_severity_a_number(tmp_path)
    with pytest.raises(JournalError) as refused:
        Journal.open(path, "T1")  # schema 2: migrated in place, its totals rebuilt from its entries
    assert str(refused.value) == f"journal {path}: entry {seq}: {SEVERITY_NOT_TEXT}"
    assert _schema_version(path) == 2  # rolled back: the file as it was


def test_a_files_fold_without_stored_totals_refuses_a_damaged_entry_in_one_line(tmp_path: Path) -> None:
    path, seq = _with_severity_a_number(tmp_path)
    with Journal.open_existing(path, readonly=True) as journal, pytest.raises(JournalError) as refused:
        journal.indexes.own_period_totals([ALL_PERIOD])  # no totals kept: folded from its entries
    assert str(refused.value) == f"journal {path}: entry {seq}: {SEVERITY_NOT_TEXT}"


def test_a_files_scan_without_a_round_index_refuses_a_damaged_closing_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "journal.sqlite"
    shutil.copyfile(V2, path)
    seq = _first_seq(path, "round_settled")
    tamper(path, ("UPDATE journal SET payload = '{\"settlement\": 5}' WHERE seq = ?", (seq,)))
    with Journal.open_existing(path, readonly=True) as journal, pytest.raises(JournalError) as refused:
        journal.indexes.closed_round_seqs(seat=1)  # no round index: its closings scanned
    assert str(refused.value) == (
        f"journal {path}: entry {seq}: payload is not a round_settled "
        "(AttributeError: 'int' object has no attribute 'get')"
    )

"""Journals written by earlier releases (tests/journal/fixtures/README.md names the commits) open,
verify, recall and append in this release; upcasting never changes what verifies.

- ``journal-v1-654a859.sqlite``: the untyped journal (schema 1, entry version 1), written by release
  654a859a866bf4f497f791805f51f48c0e50c8c4's own engine and journal.
- ``journal-v2-57d2c68.sqlite``: the first typed journal (schema 2, entry version 2), written by release
  57d2c68f05fc91c55e106280f3e9591bffb8ccfd; the same seed, so the same rounds as the first.
"""

from __future__ import annotations

import random
import shutil
import sqlite3
from pathlib import Path

import pytest

from controller.journal import Journal
from controller.journal.kinds import CLOSING_KINDS
from controller.journal.meters import compute_meters, fold_meters
from controller.journal.privacy import viewer_event
from controller.journal.proof import anchor_journal, startup_check
from controller.journal.recall import recall_records
from controller.journal.state import TableState
from controller.journal.store import SCHEMA_VERSION, JournalError
from controller.journal.totals import ALL_PERIOD, summed
from controller.journal.verify import verify_chain
from tests.journal.scripted import play_round
from tests.journal.tamper import tamper

FIXTURES = Path(__file__).parent / "fixtures"
V1 = "journal-v1-654a859.sqlite"
V2 = "journal-v2-57d2c68.sqlite"
ENTRIES = 984  # each fixture: 12 rounds (11 settled, 1 dead), 2 faults raised, 1 cleared


def _copy(tmp_path: Path, name: str) -> Path:
    target = tmp_path / name
    shutil.copyfile(FIXTURES / name, target)
    return target


def _schema_version(path: Path) -> int:
    connection = sqlite3.connect(path)
    try:
        return int(connection.execute("PRAGMA user_version").fetchone()[0])
    finally:
        connection.close()


@pytest.mark.parametrize(("name", "version"), [(V1, 1), (V2, 2)])
def test_an_earlier_journal_verifies_and_recalls_as_it_is(tmp_path: Path, name: str, version: int) -> None:
    path = _copy(tmp_path, name)
    result = verify_chain(path)
    assert result.ok, result.summary()
    assert result.entries_checked == ENTRIES
    records = recall_records(path)  # read-only: the file is not migrated by a reader
    assert [r["status"] for r in records].count("settled") == 11
    assert [r["status"] for r in records].count("dead") == 1
    with Journal.open_existing(path) as journal:
        assert journal.file.schema_version == version
        assert not journal.file.has_totals
        meters = compute_meters(journal)
    assert meters.rounds_settled == 11
    assert meters.rounds_dead == 1
    assert meters.balanced
    assert meters.faults_raised == 2
    assert meters.faults_cleared == 1
    assert _schema_version(path) == version  # reading never changed the file


@pytest.mark.parametrize(("name", "version"), [(V1, 1), (V2, 2)])
def test_an_earlier_journal_read_as_it_is_answers_the_round_index_and_totals(
    tmp_path: Path, name: str, version: int
) -> None:
    """A file read without migrating it has no round index and no totals: ``closed_round_seqs`` scans
    its closing entries and ``period_totals`` folds its entries (``schema.counted_rows``). A schema-1
    file has no ``version`` column (its entries are all version 1): both read it all the same."""
    path = _copy(tmp_path, name)
    seat_one_rounds = {record["round_id"] for record in recall_records(path, seat=1)}
    with Journal.open_existing(path) as journal:
        assert not journal.file.has_totals
        closings = list(journal.entries(kinds=sorted(CLOSING_KINDS)))
        assert journal.indexes.closed_round_seqs() == [entry.seq for entry in closings]
        assert journal.indexes.closed_round_seqs(last=2) == [entry.seq for entry in closings][-2:]
        assert journal.indexes.closed_round_seqs(status="dead") == [
            entry.seq for entry in closings if entry.kind == "round_dead"
        ]
        assert journal.indexes.closed_round_seqs(seat=1) == [
            entry.seq for entry in closings if entry.round_id in seat_one_rounds
        ]
        stored = summed(journal.indexes.period_totals([ALL_PERIOD])).meters
        assert stored.to_json() == fold_meters(journal).to_json()
    assert stored.rounds_settled == 11
    assert _schema_version(path) == version  # reading never changed the file


def test_the_two_releases_recall_the_same_rounds(tmp_path: Path) -> None:
    """The same seed through both releases: the upcast version-1 entries recall as the version-2 ones
    (the cards, hands, wagers and results; only the reasons' public words are the upcaster's own)."""
    old = recall_records(_copy(tmp_path, V1), with_private=True)
    new = recall_records(_copy(tmp_path, V2), with_private=True)
    for before, after in zip(old, new, strict=True):
        assert before["round_id"] == after["round_id"]
        assert before["round"] == after["round"]
        assert before["settlement"] == after["settlement"]
        assert before["dead_hands"].keys() == after["dead_hands"].keys()
        assert [e["kind"] for e in before["events"]] == [e["kind"] for e in after["events"]]


def test_a_version_1_entry_naming_a_card_keeps_it_private(tmp_path: Path) -> None:
    """Version 1 held a dead round's reason as the engine's text ("9c seen twice"): upcast, its public
    part has a code and neutral words, the text is private and never reaches a viewer."""
    path = _copy(tmp_path, V1)
    with Journal.open_existing(path) as journal:
        dead = next(journal.entries(kinds=["round_dead"]))
        assert dead.version == 1
        assert dead.public["reason"]["code"] == "card_repeated"
        assert "twice" in dead.private["message"]  # type: ignore[index]
        assert dead.private["message"] not in str(dead.public)  # type: ignore[index]
        round_entries = list(journal.entries(round_id=dead.round_id))
        state = TableState(journal.table_id).apply_all(round_entries)
        shown = viewer_event(dead, state, with_private=False)
    assert dead.private["message"] not in str(shown)  # type: ignore[index]


@pytest.mark.parametrize(("name", "version"), [(V1, 1), (V2, 2)])
def test_a_table_upgraded_in_place_keeps_appending(tmp_path: Path, name: str, version: int) -> None:
    path = _copy(tmp_path, name)
    # The upgrade as docs/operations.md "Upgrading a table" says: anchor the journal as it is (an
    # earlier release may have had no anchor), then start this release on it.
    verdict = anchor_journal(path, key=None)
    assert verdict.ok, verdict.line
    head_before = verify_chain(path).head_hash
    startup = startup_check(path, "T1", key=None)
    assert startup.refusal is None
    assert startup.then == "open"
    with Journal.open(path, "T1") as journal:  # migrates: schema SCHEMA_VERSION, totals made
        assert journal.file.schema_version == SCHEMA_VERSION
        assert journal.file.has_totals
        assert journal.entry(ENTRIES).hash == head_before  # type: ignore[union-attr]
        new_round = play_round(journal, random.Random(9))
        assert compute_meters(journal).to_json() == fold_meters(journal).to_json()
        assert compute_meters(journal).rounds_settled == 12
        last = journal.last_entry()
        assert last is not None
        assert last.version == 2
    assert _schema_version(path) == SCHEMA_VERSION
    result = verify_chain(path)
    assert result.ok, result.summary()
    assert result.entries_checked > ENTRIES
    # The old entries' bytes are as written: the chain through them verifies, the anchor still holds.
    startup = startup_check(path, "T1", key=None)
    assert startup.refusal is None, startup.refusal
    (record,) = recall_records(path, round_id=new_round)
    assert record["status"] == "settled"
    assert len(recall_records(path, start_utc="2027-01-15T00:00:00.000000Z", seat=1)) >= 1
    connection = sqlite3.connect(path)
    try:
        versions = dict(
            connection.execute("SELECT version, COUNT(*) FROM journal GROUP BY version").fetchall()
        )
        migrated = connection.execute(
            "SELECT value FROM journal_meta WHERE key = ?", (f"migrated_from_schema_{version}",)
        ).fetchone()
    finally:
        connection.close()
    assert versions.get(1, 0) == (ENTRIES if version == 1 else 0)  # the old entries kept their version
    assert set(versions) <= {1, 2}
    assert sum(versions.values()) > ENTRIES
    assert migrated is not None
    assert migrated[0].endswith(f"to schema {SCHEMA_VERSION}")


def test_an_edited_version_1_entry_is_found(tmp_path: Path) -> None:
    """A version-1 entry is hashed by its own formula over its bytes as written: a stake raised in it
    breaks the chain there."""
    path = _copy(tmp_path, V1)
    connection = sqlite3.connect(path)
    try:
        (seq,) = connection.execute("SELECT MIN(seq) FROM journal WHERE kind = 'bet_changed'").fetchone()
    finally:
        connection.close()
    edit = (
        "UPDATE journal SET payload = replace(payload, '\"amount_cents\":', '\"amount_cents\":9') "
        "WHERE seq = ?"
    )
    tamper(path, (edit, (seq,)))
    result = verify_chain(path)
    assert not result.ok
    assert result.first_bad_seq == seq, result.summary()


def test_an_entry_made_to_look_older_is_found(tmp_path: Path) -> None:
    """Versions only go up along the chain: a version-2 entry relabelled version 1 (to be hashed by the
    older formula) is an edit."""
    path = _copy(tmp_path, V1)
    with Journal.open(path, "T1") as journal:
        play_round(journal, random.Random(4))
    tamper(path, ("UPDATE journal SET version = 1 WHERE seq = (SELECT MAX(seq) FROM journal)", ()))
    result = verify_chain(path)
    assert not result.ok
    assert "version 1 after version 2" in result.reason


def test_a_journal_of_a_newer_release_is_refused_in_one_line(tmp_path: Path) -> None:
    path = _copy(tmp_path, V2)
    tamper(path, (f"PRAGMA user_version = {SCHEMA_VERSION + 1}", ()))
    with pytest.raises(JournalError, match="written by a newer release"):
        Journal.open_existing(path)

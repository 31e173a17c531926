"""The hash chain and the store's API, on a real SQLite file."""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controller.journal import GENESIS_HASH, Journal, JournalError, PendingEntry, canonical_json, entry_hash
from controller.journal.chain import entry_hash_from_text
from controller.journal.verify import verify_chain

OPENED = {"game": "high-card-flush", "banking_mode": "house", "config_digest": "d" * 64}


def fixed_clock() -> datetime:
    return datetime(2026, 11, 29, 16, 30, 1, 123456, tzinfo=UTC)


def test_canonical_json_is_sorted_compact_and_keeps_unicode() -> None:
    assert canonical_json({"b": 1, "a": [1, {"d": "é", "c": None}]}) == '{"a":[1,{"c":null,"d":"é"}],"b":1}'


def test_canonical_json_refuses_nan() -> None:
    with pytest.raises(ValueError, match="Out of range float"):
        canonical_json({"x": math.nan})


def test_first_entry_hash_is_sha256_of_genesis_plus_canonical_json(journal_path: Path) -> None:
    with Journal.open(journal_path, "T1", clock=fixed_clock) as journal:
        entry = journal.append("table_opened", OPENED, round_id=None, source="engine")
    # Recomputed here by hand, independently of controller.journal.chain.
    body = (
        '{"kind":"table_opened","payload":{"banking_mode":"house","config_digest":"' + "d" * 64 + '",'
        '"game":"high-card-flush"},"round_id":null,"seq":1,"source":"engine","table_id":"T1",'
        '"time_utc":"2026-11-29T16:30:01.123456Z"}'
    )
    assert entry.prev_hash == GENESIS_HASH == "0" * 64
    assert entry.hash == hashlib.sha256(("0" * 64 + body).encode()).hexdigest()
    assert entry.time_utc == "2026-11-29T16:30:01.123456Z"


def test_entries_link_and_number_without_gaps(journal: Journal) -> None:
    written = [
        journal.append(
            "operator_action", {"action": "x", "by": "a", "detail": i}, round_id=None, source="operator:a"
        )
        for i in range(5)
    ]
    assert [entry.seq for entry in written] == [1, 2, 3, 4, 5]
    for before, after in itertools.pairwise(written):
        assert after.prev_hash == before.hash
    assert list(journal.entries()) == written


def test_append_many_is_one_transaction(journal: Journal) -> None:
    journal.append("table_opened", OPENED, round_id=None, source="engine")
    rid = journal.next_round_id()
    started = {"round_id": rid, "game": "high-card-flush", "banking": {"mode": "house"}, "seats": [1]}
    voided = {"round": {}, "settlement": {}, "reason": "r", "by": "b"}
    # The second close of the same round in one batch is refused, and with it the whole batch.
    with pytest.raises(JournalError, match="already closed by round_voided at entry 3"):
        journal.append_many(
            [
                PendingEntry("round_started", started, rid, "engine"),
                PendingEntry("round_voided", voided, rid, "engine"),
                PendingEntry("round_voided", voided, rid, "engine"),
            ]
        )
    assert [entry.kind for entry in journal.entries()] == ["table_opened"]
    # A bug in the writer (an unknown kind) is refused before any I/O, also for the whole batch.
    with pytest.raises(ValueError, match="unknown entry kind"):
        journal.append_many(
            [PendingEntry("round_started", started, rid, "engine"), ("no_such_kind", {}, None, "x")]
        )
    assert journal.last_entry() is not None
    assert journal.last_entry().seq == 1  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("kind", "payload", "round_id", "message"),
    [
        ("round_started", {"game": "x"}, "R1", "lacks banking, round_id, seats"),
        ("round_settled", {"round": {}, "settlement": {}}, None, "needs a round_id"),
        ("fault_raised", {"fault_id": "f", "kind": "red_light"}, None, "lacks severity"),
        ("round_started", {"round_id": "R2", "game": "g", "banking": {}, "seats": []}, "R1", "names 'R2'"),
    ],
)
def test_malformed_entries_are_refused(
    journal: Journal, kind: str, payload: dict[str, Any], round_id: str | None, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        journal.append(kind, payload, round_id=round_id, source="engine")
    assert journal.last_entry() is None


def test_payload_that_is_not_json_is_refused(journal: Journal) -> None:
    with pytest.raises(TypeError):
        journal.append("operator_action", {"action": object()}, round_id=None, source="operator:a")
    assert journal.last_entry() is None


def test_entries_filters_and_pages(journal: Journal) -> None:
    # More than one page (500 rows) so the paging is exercised.
    journal.append_many(
        PendingEntry("dealer_key", {"key": "next", "seat": i % 7}, f"R{i % 3}" if i % 2 else None, "display")
        for i in range(1213)
    )
    everything = list(journal.entries())
    assert [entry.seq for entry in everything] == list(range(1, len(everything) + 1))
    assert len(everything) == 1213
    assert [entry.seq for entry in journal.entries(since_seq=1200)] == list(range(1201, 1214))
    round_one = list(journal.entries(round_id="R1"))
    assert round_one
    assert all(entry.round_id == "R1" for entry in round_one)
    assert list(journal.entries(kinds=["bets_locked"])) == []
    assert list(journal.entries(kinds=[])) == []
    assert len(list(journal.entries(kinds=["dealer_key"]))) == 1213


def test_reopen_continues_the_chain_and_round_numbers(journal_path: Path) -> None:
    with Journal.open(journal_path, "T1", clock=fixed_clock) as journal:
        rid = journal.next_round_id()
        assert rid == "RT1-20261129-000001"
        journal.append(
            "round_started",
            {"round_id": rid, "game": "g", "banking": {}, "seats": []},
            round_id=rid,
            source="engine",
        )
    with Journal.open(journal_path, "T1", clock=fixed_clock) as journal:
        assert journal.next_round_id() == "RT1-20261129-000002"
        entry = journal.append(
            "table_closed", {"by": "a", "reason": "end"}, round_id=None, source="operator:a"
        )
        assert entry.seq == 2
    assert verify_chain(journal_path).summary() == "ok 2 entries"


def test_a_journal_belongs_to_one_table(journal_path: Path) -> None:
    Journal.open(journal_path, "T1").close()
    with pytest.raises(JournalError, match="belongs to table 'T1', not 'T2'"):
        Journal.open(journal_path, "T2")
    with Journal.open_existing(journal_path) as journal:
        assert journal.table_id == "T1"


def test_other_files_are_refused(tmp_path: Path) -> None:
    other = tmp_path / "other.sqlite"
    with sqlite3.connect(other) as connection:
        connection.execute("CREATE TABLE t (x)")
    with pytest.raises(JournalError, match="not a flushtable journal"):
        Journal.open(other, "T1")
    with pytest.raises(JournalError, match="no such file"):
        Journal.open_existing(tmp_path / "missing.sqlite")
    text = tmp_path / "notes.txt"
    text.write_text("these are not the droids\n" * 100)
    with pytest.raises(JournalError, match="not a database"):
        Journal.open(text, "T1")


def test_read_only_journal_refuses_appends(journal_path: Path) -> None:
    Journal.open(journal_path, "T1").close()
    with Journal.open_existing(journal_path) as journal, pytest.raises(JournalError, match="read-only"):
        journal.append("table_closed", {"by": "a", "reason": "r"}, round_id=None, source="operator:a")


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**53), max_value=2**53) | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    payloads=st.lists(st.dictionaries(st.text(max_size=8), json_values, max_size=5), min_size=1, max_size=4)
)
def test_any_json_payload_round_trips_and_verifies(tmp_path: Path, payloads: list[dict[str, Any]]) -> None:
    path = tmp_path / f"j{abs(hash(json.dumps(payloads, sort_keys=True)))}.sqlite"
    with Journal.open(path, "T1") as journal:
        written = journal.append_many(
            PendingEntry("operator_action", payload, None, "operator:x") for payload in payloads
        )
        read = list(journal.entries(since_seq=written[0].seq - 1))
    assert [entry.payload for entry in read] == payloads
    assert verify_chain(path).ok


@settings(max_examples=200, deadline=None)
@given(
    payload=st.dictionaries(st.text(max_size=8), json_values, max_size=5),
    seq=st.integers(min_value=1, max_value=2**40),
    round_id=st.none() | st.text(max_size=30),
    source=st.text(min_size=1, max_size=20),
)
def test_the_append_paths_hash_equals_the_reference_hash(
    payload: dict[str, Any], seq: int, round_id: str | None, source: str
) -> None:
    fields: dict[str, Any] = {
        "prev_hash": "ab" * 32,
        "seq": seq,
        "time_utc": "2026-11-29T16:30:01.123456Z",
        "table_id": "T1",
        "round_id": round_id,
        "source": source,
        "kind": "operator_action",
    }
    assert entry_hash_from_text(payload_text=canonical_json(payload), **fields) == entry_hash(
        payload=payload, **fields
    )


def test_append_many_takes_records_with_the_four_fields(journal: Journal) -> None:
    from dataclasses import dataclass

    @dataclass(frozen=True)
    class Record:  # the shape of the round engine's JournalRecord
        kind: str
        payload: dict[str, Any]
        round_id: str | None
        source: str

    written = journal.append_many(
        [
            Record("dealer_key", {"key": "next", "seat": 1}, None, "display"),
            ("dealer_key", {"key": "confirm", "seat": None}, None, "display"),
        ]
    )
    assert [entry.payload["key"] for entry in written] == ["next", "confirm"]


@pytest.mark.parametrize("variable_limit", [999, 32766])
def test_a_large_batch_is_inserted_in_chunks_that_keep_the_chain(
    journal: Journal, journal_path: Path, variable_limit: int
) -> None:
    """One append of 1,200 entries: several multi-row INSERTs (at most 111 rows each where SQLite allows
    999 parameters, as before 3.32), each row still checked by the chain trigger in order."""
    journal._connection.setlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, variable_limit)
    written = journal.append_many(
        PendingEntry("card_dealt", {"position": 1, "index": n % 7, "card": "As"}, None, "shuffler")
        for n in range(1200)
    )
    assert [entry.seq for entry in written] == list(range(1, 1201))
    assert verify_chain(journal_path).ok
    assert journal.last_entry() == written[-1]

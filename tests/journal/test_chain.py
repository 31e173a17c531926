"""The hash chain and the store's API, on a real SQLite file."""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controller.journal import GENESIS_HASH, Journal, JournalError, PendingEntry, canonical_json, entry_hash
from controller.journal import entries as typed
from controller.journal.chain import entry_hash_from_text, envelope_hash
from controller.journal.store import recompute_hash
from controller.journal.verify import verify_chain
from tests.journal.tamper import tamper

OPENED = {"game": "high-card-flush", "banking_mode": "house", "config_digest": "d" * 64, "by": "engine"}


def reference_hash(
    prev_hash: str,
    *,
    seq: int,
    time_utc: str,
    table_id: str,
    round_id: str | None,
    source: str,
    kind: str,
    version: int,
    payload: dict[str, Any],
    private_digest: str | None,
) -> str:
    """The documented formula (docs/journal.md "Entries and the hash chain"), written here with the
    standard library only, independently of controller.journal.chain."""
    body = json.dumps(
        {
            "kind": kind,
            "payload": payload,
            "private_digest": private_digest,
            "round_id": round_id,
            "seq": seq,
            "source": source,
            "table_id": table_id,
            "time_utc": time_utc,
            "version": version,
        },
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
        allow_nan=False,
    )
    return hashlib.sha256((prev_hash + body).encode("utf-8")).hexdigest()


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
    # Recomputed here by hand, independently of controller.journal.chain: a public-only entry has
    # private_digest null, and the envelope carries the entry schema version.
    body = (
        '{"kind":"table_opened","payload":{"banking_mode":"house","by":"engine","config_digest":"'
        + "d" * 64
        + '","game":"high-card-flush"},"private_digest":null,"round_id":null,"seq":1,"source":"engine",'
        '"table_id":"T1","time_utc":"2026-11-29T16:30:01.123456Z","version":2}'
    )
    assert entry.prev_hash == GENESIS_HASH == "0" * 64
    assert entry.version == typed.ENTRY_SCHEMA_VERSION == 2
    assert entry.private is None
    assert entry.private_text is None
    assert entry.private_digest is None
    assert entry.hash == hashlib.sha256(("0" * 64 + body).encode()).hexdigest()
    assert entry.time_utc == "2026-11-29T16:30:01.123456Z"


CARD = {"position": 1, "index": 4, "card": "Qd"}


def test_a_private_part_is_checked_against_its_commitment(journal_path: Path) -> None:
    """The chain holds a salted digest of the private part, never the part: the hash is recomputed
    from the public part and the digest alone, and the stored private text is checked against it."""
    with Journal.open(journal_path, "T1", clock=fixed_clock) as journal:
        journal.append("table_opened", OPENED, round_id=None, source="engine")
        entry = journal.append("card_dealt", CARD, round_id=None, source="shuffler")
        again = journal.append("card_dealt", CARD, round_id=None, source="shuffler")
    # The card is private by type: the public part (the payload column) holds nothing of it.
    assert entry.public == {}
    assert entry.private == CARD
    assert entry.payload == CARD
    assert "Qd" not in canonical_json(entry.public_json())
    # The stored private text is canonical {"part", "salt"} with a fresh 16-byte salt ...
    assert entry.private_text is not None
    sealed = json.loads(entry.private_text)
    assert set(sealed) == {"part", "salt"}
    assert sealed["part"] == CARD
    assert len(bytes.fromhex(sealed["salt"])) == 16
    assert entry.private_text == json.dumps(sealed, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    # ... and the commitment is its sha256 (the salt inside the hashed text).
    assert entry.private_digest == hashlib.sha256(entry.private_text.encode()).hexdigest()
    # The same card dealt again is committed to differently: the digest does not let one guess it.
    assert again.private == entry.private
    assert again.private_digest != entry.private_digest
    # A reader holding only the public part and the digest recomputes the hash (documented formula).
    public = entry.public_json()
    assert "private" not in public
    assert public["private_digest"] == entry.private_digest
    assert entry.hash == reference_hash(
        entry.prev_hash,
        seq=public["seq"],
        time_utc=public["time_utc"],
        table_id=public["table_id"],
        round_id=public["round_id"],
        source=public["source"],
        kind=public["kind"],
        version=public["version"],
        payload=public["payload"],
        private_digest=public["private_digest"],
    )
    assert recompute_hash(entry) == entry.hash
    assert verify_chain(journal_path).summary() == "ok 3 entries"


def test_changing_a_private_part_breaks_verification(journal_path: Path) -> None:
    with Journal.open(journal_path, "T1", clock=fixed_clock) as journal:
        journal.append("table_opened", OPENED, round_id=None, source="engine")
        entry = journal.append("card_dealt", CARD, round_id=None, source="shuffler")
        journal.append("table_closed", {"by": "a", "reason": "end"}, round_id=None, source="operator:a")
    assert entry.private_text is not None
    sealed = json.loads(entry.private_text)
    # Another card under the same salt: the text no longer matches its commitment.
    forged = canonical_json({"part": {**CARD, "card": "As"}, "salt": sealed["salt"]})
    tamper(journal_path, ("UPDATE journal SET private = ? WHERE seq = ?", (forged, entry.seq)))
    result = verify_chain(journal_path)
    assert not result.ok
    assert result.first_bad_seq == entry.seq
    assert "private part does not match its digest" in result.reason
    # The private part and its digest both rewritten: now the entry's hash breaks instead.
    tamper(
        journal_path,
        (
            "UPDATE journal SET private_digest = ? WHERE seq = ?",
            (hashlib.sha256(forged.encode()).hexdigest(), entry.seq),
        ),
    )
    result = verify_chain(journal_path)
    assert not result.ok
    assert result.first_bad_seq == entry.seq
    assert "hash does not match" in result.reason
    # A private part removed (digest kept) or added where there was none: refused too.
    tamper(
        journal_path,
        (
            "UPDATE journal SET private = NULL, private_digest = ? WHERE seq = ?",
            (entry.private_digest, entry.seq),
        ),
    )
    result = verify_chain(journal_path)
    assert not result.ok
    assert result.first_bad_seq == entry.seq


def test_entries_link_and_number_without_gaps(journal: Journal) -> None:
    written = [
        journal.append(
            "panel_request",
            {"action": "x", "by": "a", "request": {"n": i}, "outcome": "done"},
            round_id=None,
            source="operator:a",
        )
        for i in range(5)
    ]
    assert [entry.seq for entry in written] == [1, 2, 3, 4, 5]
    for before, after in itertools.pairwise(written):
        assert after.prev_hash == before.hash
    assert list(journal.entries()) == written


def test_append_many_is_one_transaction(journal: Journal) -> None:
    journal.append("table_opened", OPENED, round_id=None, source="engine")
    rid = journal.indexes.next_round_id()
    started = {"round_id": rid, "game": "high-card-flush", "banking": {"mode": "house"}, "seats": [1]}
    voided = {"round": {}, "settlement": {}, "reason": "r", "by": "b"}
    # A field the kind does not have is refused before any I/O, with the whole batch.
    with pytest.raises(ValueError, match="unknown field `detail`"):
        journal.append_many(
            [
                PendingEntry("round_started", started, rid, "engine"),
                PendingEntry("round_voided", {**voided, "detail": "x"}, rid, "engine"),
            ]
        )
    assert [entry.kind for entry in journal.entries()] == ["table_opened"]
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
        ("round_started", {"game": "x"}, "R1", "round_started: Object missing required field `round_id`"),
        ("round_started", {"round_id": "R1", "game": "x"}, "R1", "missing required field `banking`"),
        ("round_settled", {"round": {}, "settlement": {}}, None, "needs a round_id"),
        ("fault_raised", {"fault_id": "f", "kind": "red_light"}, None, "missing required field `severity`"),
        ("round_started", {"round_id": "R2", "game": "g", "banking": {}, "seats": []}, "R1", "names 'R2'"),
        ("no_such_kind", {}, None, "unknown entry kind 'no_such_kind'"),
        # A field its kind does not have, in either part: e.g. the old untyped fault's free text.
        (
            "fault_raised",
            {
                "fault_id": "f",
                "kind": "red_light",
                "severity": "hcf",
                "device": None,
                "reason": {"code": "red_light", "message": "red light"},
                "detail": "card 23 dealt twice",
            },
            None,
            "unknown field `detail`",
        ),
        # A reason is structured: a code from the list, not free text.
        (
            "dead_hand",
            {"seat": 1, "reason": "card 23 dealt twice"},
            "R1",
            r"Expected `object`, got `str` - at `\$.reason`",
        ),
        (
            "dead_hand",
            {"seat": 1, "reason": {"code": "no_such_code", "message": "m"}},
            "R1",
            "Invalid enum value 'no_such_code'",
        ),
        # A wrong type, public or private.
        (
            "bet_changed",
            {"seat": "1", "wager": "ante", "amount_cents": 1, "chip_count": 1, "locked": False},
            None,
            r"Expected `int`, got `str` - at `\$.seat`",
        ),
        ("card_dealt", {"position": 1, "index": 0, "card": 23}, None, "Expected `str | null`, got `int`"),
    ],
)
def test_malformed_entries_are_refused(
    journal: Journal, kind: str, payload: dict[str, Any], round_id: str | None, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        journal.append(kind, payload, round_id=round_id, source="engine")
    assert journal.last_entry() is None


def test_payload_that_is_not_json_is_refused(journal: Journal) -> None:
    # A typed field of the wrong type is refused by its type ...
    with pytest.raises(ValueError, match=r"Expected `str`, got `object` - at `\$.action`"):
        journal.append(
            "action_refused",
            {"action": object(), "by": "a", "reason": "d"},
            round_id=None,
            source="operator:a",
        )
    # ... and a value that is not JSON inside a free object (a request's detail) by the encoder.
    with pytest.raises(TypeError):
        journal.append(
            "panel_request",
            {"action": "x", "by": "a", "request": {"x": object()}, "outcome": "done"},
            round_id=None,
            source="operator:a",
        )
    with pytest.raises(ValueError, match="Out of range float"):
        journal.append(
            "panel_request",
            {"action": "x", "by": "a", "request": {"x": math.inf}, "outcome": "done"},
            round_id=None,
            source="operator:a",
        )
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
        rid = journal.indexes.next_round_id()
        assert rid == "RT1-20261129-000001"
        journal.append(
            "round_started",
            {"round_id": rid, "game": "g", "banking": {}, "seats": []},
            round_id=rid,
            source="engine",
        )
    with Journal.open(journal_path, "T1", clock=fixed_clock) as journal:
        assert journal.indexes.next_round_id() == "RT1-20261129-000002"
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


panel_requests = st.tuples(
    st.just("panel_request"),
    st.fixed_dictionaries(
        {
            "action": st.text(max_size=8),
            "by": st.text(max_size=8),
            # The request record's fields are a free object: any JSON object must round-trip and hash.
            "request": st.dictionaries(st.text(max_size=8), json_values, max_size=5),
            "outcome": st.text(max_size=20),
        }
    ),
)
refusals = st.tuples(
    st.just("action_refused"),
    st.fixed_dictionaries(
        {"action": st.text(max_size=8), "by": st.text(max_size=8), "reason": st.text(max_size=20)},
        optional={"refusal_detail": st.text(max_size=20)},  # private by type
    ),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(items=st.lists(panel_requests | refusals, min_size=1, max_size=4))
def test_any_json_payload_round_trips_and_verifies(
    tmp_path: Path, items: list[tuple[str, dict[str, Any]]]
) -> None:
    path = tmp_path / f"j{abs(hash(json.dumps(items, sort_keys=True)))}.sqlite"
    with Journal.open(path, "T1") as journal:
        written = journal.append_many(
            PendingEntry(kind, payload, None, "operator:x") for kind, payload in items
        )
        read = list(journal.entries(since_seq=written[0].seq - 1))
        replayed = list(journal.replay(since_seq=written[0].seq - 1))
    assert read == written
    for entry, replay, (kind, payload) in zip(read, replayed, items, strict=True):
        # Every field given comes back, each in the part its type says (the rest are the defaults).
        assert {key: entry.payload[key] for key in payload} == payload
        private = {key: value for key, value in payload.items() if key == "refusal_detail"}
        assert entry.private == (private or None)
        assert not set(entry.public) & set(private)
        assert entry.entry == typed.build(kind, payload) == replay.entry
        assert (entry.private_digest is None) == (not private)
    assert verify_chain(path).ok


@settings(max_examples=200, deadline=None)
@given(
    payload=st.dictionaries(st.text(max_size=8), json_values, max_size=5),
    seq=st.integers(min_value=1, max_value=2**40),
    round_id=st.none() | st.text(max_size=30),
    source=st.text(min_size=1, max_size=20),
    version=st.integers(min_value=1, max_value=9),
    private_digest=st.none() | st.binary(min_size=32, max_size=32).map(bytes.hex),
    time_utc=st.text(max_size=30),
)
def test_the_append_paths_hash_equals_the_reference_hash(
    *,
    payload: dict[str, Any],
    seq: int,
    round_id: str | None,
    source: str,
    version: int,
    private_digest: str | None,
    time_utc: str,
) -> None:
    fields: dict[str, Any] = {
        "seq": seq,
        "time_utc": "2026-11-29T16:30:01.123456Z",
        "table_id": "T1",
        "round_id": round_id,
        "source": source,
        "kind": "operator_action",
        "version": version,
        "private_digest": private_digest,
    }
    spliced = entry_hash_from_text(prev_hash="ab" * 32, payload_text=canonical_json(payload), **fields)
    assert spliced == entry_hash(prev_hash="ab" * 32, payload=payload, **fields)
    # The documented formula, computed independently (json.dumps of the whole object).
    assert spliced == reference_hash("ab" * 32, payload=payload, **fields)
    # The floor's: the same entry given as its columns (controller/floor/checks.py), any time text.
    columns = SimpleNamespace(prev_hash="ab" * 32, **{**fields, "time_utc": time_utc})
    assert envelope_hash(columns, canonical_json(payload)) == reference_hash(
        "ab" * 32, payload=payload, **{**fields, "time_utc": time_utc}
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
    journal.file.connection.setlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, variable_limit)
    written = journal.append_many(
        PendingEntry("card_dealt", {"position": 1, "index": n % 7, "card": "As"}, None, "shuffler")
        for n in range(1200)
    )
    assert [entry.seq for entry in written] == list(range(1, 1201))
    assert verify_chain(journal_path).ok
    assert journal.last_entry() == written[-1]

"""Every entry kind's round trip, the schema, and the public/private split (controller/journal/entries/).

The examples are what the real round engine writes (journals played by tests/journal/scripted.py), plus
the entries written outside the engine (the daemon's, the panel's, a supervisor's), made by the code
paths that write them where one exists. A kind with no example fails the test: a new kind must come
with one."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path

import jsonschema
import msgspec
import pytest

from controller.engine import TableConfig
from controller.engine import actions as engine_actions
from controller.journal import Journal, JournalEntry
from controller.journal import entries as e
from controller.journal.recovery import recover
from controller.journal.store import recompute_hash
from controller.journal.verify import verify_chain
from controller.progressive.controller import ProgressiveController
from controller.progressive.journal_store import JournalStore
from controller.progressive.model import Hit, parse_parameters
from controller.progressive.parameters import change_progressive_parameters
from tests.engine.table import Table, stack
from tests.engine.test_clear_and_reset import red_light_table
from tests.journal.scripted import Outcome, play_round

SCHEMA_FILE = Path(__file__).resolve().parents[2] / "docs" / "journal-entries.schema.json"

# Entries the round engine does not write, as their writers write them (daemon, panel, supervisor).
OUTSIDE_THE_ENGINE: list[tuple[str, dict[str, object], str]] = [
    (
        "table_opened",
        {"game": "high-card-flush", "banking_mode": "house", "config_digest": "ab", "by": "daemon"},
        "engine",
    ),
    ("table_closed", {"by": "daemon", "reason": "shutdown"}, "engine"),
    (
        "software_verified",
        {
            "release": "0.1.0",
            "release_digest": "ab" * 32,
            "development": False,
            "key_id": "0123456789abcdef",
            "files": 210,
            "dependencies": 33,
        },
        "engine",
    ),
    (
        "software_checked",
        {"seed": "00" * 16, "aggregate": "cd" * 32, "files": 210, "requested_by": "floor:alice"},
        "engine",
    ),
    (
        "device_ready",
        {
            "device": "shuffler",
            "kind": "shuffler",
            "model": "SIM",
            "serial_number": "1",
            "firmware_version": "1.0.0",
        },
        "shuffler",
    ),
    ("device_lost", {"device": "sensors", "reason": "serial port closed"}, "sensors"),
    ("device_status", {"device": "shuffler", "state": "ready", "fault_code": 0, "lamp": "green"}, "shuffler"),
    ("security_event", {"device": "display", "reason": "bad_tag", "detail": "frame 12"}, "display"),
    ("login", {"user": "alice", "role": "supervisor", "remote": "127.0.0.1"}, "panel"),
    ("login_failed", {"user": "alice", "remote": "127.0.0.1", "reason": "bad_credentials"}, "panel"),
    ("fault_acknowledged", {"fault_id": "FT1-000001", "by": "alice"}, "operator:alice"),
    (
        "noise_suppressed",
        {
            "category": "login_failed",
            "source": "127.0.0.1",
            "count": 40,
            "first_time_utc": "2026-12-01T10:00:00.000000Z",
            "last_time_utc": "2026-12-01T10:00:59.000000Z",
        },
        "panel",
    ),
    (
        "panel_request",
        {"action": "logout", "by": "alice", "request": {}, "outcome": "done"},
        "operator:alice",
    ),
    # The linked progressive's records (controller/engine/progressive.py; the engine writes them against a
    # floor: tests/progressive/test_linked_table.py plays them there), as that code builds them.
    ("lock_refused_progressive", {"by": "engine", "reason": "the meter is closed"}, "engine"),
    ("linked_claim_answered", {"by": "engine", "answer": "award A1 seat 1 1,000.00 paid"}, "engine"),
    (
        "linked_confirmation_sent",
        {"by": "sue", "message": "progressive: award MAIN/T1/R1/1 sent", "award_id": "MAIN/T1/R1/1"},
        "operator:sue",
    ),
    # Never written by this release: what an earlier release's operator_action of no known form reads as.
    ("operator_note", {"action": "note", "by": "alice", "detail": "free words"}, "operator:alice"),
    ("dp_waived", {"seat": 3}, "operator:dealer"),
    (
        "clock_offset",
        {
            "source": "sntp://127.0.0.1:123",
            "offset_us": -3_000_000,
            "delay_us": 120,
            "bound_us": 1_000_000,
            "within_bound": False,
            "table_time_utc": "2026-12-01T10:00:03.000000Z",
        },
        "clock",
    ),
    (
        "clock_stepped",
        {
            "wall_clock_utc": "2026-12-01T10:00:00.000000Z",
            "journal_time_utc": "2026-12-01T10:00:03.000000Z",
            "step_back_us": 3_000_000,
        },
        "journal",
    ),
    (
        "config_checked",
        {
            "source": "t.toml",
            "file_sha256": "a" * 64,
            "config_digest": "b" * 64,
            "previous_file_sha256": "c" * 64,
            "previous_config_digest": "b" * 64,
            "settings": {"limits.max_ante_cents": 100_000},
            "changed": ["the file's text changed; the effective settings did not"],
            "unapproved": True,
        },
        "daemon",
    ),
    (
        "change_proposed",
        {
            "change_id": "CT1-0001",
            "change_kind": "paytable",
            "params": {"wager": "flush", "spec": "hcf-flush-dp"},
            "summary": "flush paytable hcf-flush-dp",
            "by": "max",
            "reason": "promotion",
            "lapses_utc": "2026-12-01T10:30:00.000000Z",
        },
        "changes",
    ),
    ("change_refused", {"change_id": "CT1-0001", "by": "max", "reason": "own", "closed": False}, "changes"),
    (
        "change_approved",
        {
            "change_id": "CT1-0001",
            "change_kind": "paytable",
            "proposed_by": "max",
            "by": "mia",
            "summary": "flush paytable hcf-flush-dp",
        },
        "changes",
    ),
    (
        "change_lapsed",
        {
            "change_id": "CT1-0002",
            "change_kind": "limits",
            "proposed_by": "max",
            "lapses_utc": "2026-12-01T10:30:00.000000Z",
        },
        "changes",
    ),
]


@pytest.fixture(scope="module")
def journal_entries(tmp_path_factory: pytest.TempPathFactory) -> list[JournalEntry]:
    path = tmp_path_factory.mktemp("entries") / "journal.sqlite"
    rng = random.Random(5)
    with Journal.open(path, "T1", synchronous="OFF") as journal:
        for game in ("high-card-flush", "top-flush", "chase-the-flush"):
            outcomes: tuple[Outcome, ...] = ("settled", "dead", "settled", "settled")
            for outcome in outcomes:
                play_round(journal, rng, game=game, outcome=outcome)
        dp_outcomes: tuple[Outcome, ...] = ("settled", "dead", "settled")
        for outcome in dp_outcomes:
            play_round(
                journal, rng, game="high-card-flush", banking_mode="designated-player", outcome=outcome
            )
        play_round(journal, rng, outcome="settled", over_limit_rate=1.0, past_post=True, players=3)
        play_round(journal, rng, outcome="settled", players=3, kill_request=True)
        play_round(journal, rng, outcome="settled", past_post=True, accept_past_post=True, players=3)
        play_round(journal, rng, outcome="void")
        write_operator_examples(journal)
        play_round(journal, rng, outcome="open_mid_deal")
        recover(journal)  # the interrupted round: round_voided
        for kind, fields, source in OUTSIDE_THE_ENGINE:
            journal.append(kind, fields, round_id=None, source=source)
        write_progressive_examples(journal)
        return list(journal.entries())


def write_operator_examples(journal: Journal) -> None:
    """A manager's settings, a refusal and a device reset, as the engine writes them (tests/engine/table.py
    plays it): only those records are appended (the rest are the engine tests' rounds)."""
    kinds = {"limits_set", "paytable_set", "action_refused", "device_reset"}
    table = Table(TableConfig(config_digest="d1"), stack())
    table.call(table.engine.handle, engine_actions.SetLimits(200, 50_000, "mia"), table.now_s)
    table.call(table.engine.handle, engine_actions.SetPaytable("flush", "hcf-flush-dp", "mia"), table.now_s)
    table.call(table.engine.handle, engine_actions.VoidRound("no round", "sue"), table.now_s)  # refused
    reset = red_light_table()
    (fault_id,) = reset.engine.view().latched
    reset.call(reset.engine.handle, engine_actions.ClearFault(fault_id, "sue", "shoe checked"), reset.now_s)
    records = [r for r in (*table.journal(), *reset.journal()) if r.kind in kinds]
    journal.append_many((r.kind, r.entry, None, r.source) for r in records)


def write_progressive_examples(journal: Journal) -> None:
    """Every progressive_* kind, as the stand-alone controller writes them (controller/progressive/)."""
    store = JournalStore(journal)
    controller = ProgressiveController(store)
    parameters = parse_parameters(
        {
            "unit_cents": 100,
            "base_cents": 10_000,
            "reset_cents": 10_000,
            "increment_percent": 20,
            "hidden_percent": 5,
            "limit_cents": 10_050,
        }
    )
    controller.open_now("T1", parameters, by="daemon")
    controller.contribute_now("T1", "P-1", 3)  # 60 cents: 50 to the limit, 10 overflow
    controller.claim_now("T1", "P-1", [Hit(1, 7), Hit(2, 4)])  # the jackpot (reset) and a fixed award
    controller.confirm_paid_now("T1/P-1/1", by="sue")
    controller.move_reserve_now(500, reason="seed the next reset", by="mia")
    change_progressive_parameters(
        controller,
        {**parameters.to_json(), "limit_cents": 20_000},
        by="mia",
        role="manager",
        round_in_play=False,
    )


def by_kind(stored: list[JournalEntry]) -> Iterator[tuple[str, JournalEntry]]:
    seen: set[str] = set()
    for entry in stored:
        if entry.kind not in seen:
            seen.add(entry.kind)
            yield entry.kind, entry


def test_every_kind_has_an_example(journal_entries: list[JournalEntry]) -> None:
    have = {entry.kind for entry in journal_entries}
    assert e.KINDS - have == set(), "kinds with no example: give each one"


@pytest.mark.parametrize("kind", sorted(e.KINDS))
def test_each_kind_round_trips_through_the_journal(kind: str, journal_entries: list[JournalEntry]) -> None:
    for stored in (entry for entry in journal_entries if entry.kind == kind):
        typed = stored.entry
        assert isinstance(typed, e.CLASS_BY_KIND[kind])
        assert typed.kind == kind
        # The public part is the kind's public fields exactly; the private part its private fields.
        assert set(stored.public) == e.PUBLIC_FIELDS[kind]
        if stored.private is not None:
            assert set(stored.private) <= e.PRIVATE_FIELDS[kind]
            assert stored.private_text is not None
            assert e.commitment(stored.private_text) == stored.private_digest
        else:
            assert stored.private_digest is None
        # Typed -> fields -> typed again, and the whole entry through JSON.
        assert e.build(kind, stored.payload) == typed
        assert msgspec.json.decode(e.to_json_text(typed), type=e.EntryType) == typed
        assert e.public_dict(typed) == stored.public
        assert stored.version == e.ENTRY_SCHEMA_VERSION
        assert recompute_hash(stored) == stored.hash


def test_private_fields_hold_every_card(journal_entries: list[JournalEntry]) -> None:
    """No public part of any entry, in any round, holds a card code or a hand: cards are private by
    type. (The leak test, tests/privacy, checks every viewer's path; this checks the journal itself.)"""
    codes = {f"{rank}{suit}" for rank in "23456789TJQKA" for suit in "cdhs"}
    for stored in journal_entries:
        if stored.kind in {"round_dead", "round_voided"}:
            continue  # a dead or void round's settle input is public: it holds no card ([] per seat)
        text = json.dumps(stored.public)
        tokens = set(text.replace('"', " ").replace(",", " ").replace(":", " ").replace("[", " ").split())
        assert not (tokens & codes), f"{stored.kind} {stored.seq}: a card in the public part: {text[:200]}"
        assert '"hand"' not in text, f"{stored.kind} {stored.seq}: a hand in the public part"
    dead = [s for s in journal_entries if s.kind == "round_dead"]
    assert dead
    for stored in dead:
        for seat in stored.public["round"]["seats"]:
            assert seat["cards"] == []


def test_a_changed_private_part_breaks_its_commitment(tmp_path: Path) -> None:
    path = tmp_path / "journal.sqlite"
    with Journal.open(path, "T1", synchronous="OFF") as journal:
        play_round(journal, random.Random(1), outcome="settled")
    assert verify_chain(path).ok
    import sqlite3

    connection = sqlite3.connect(path)
    connection.execute("DROP TRIGGER journal_no_update")
    seq, private_text = connection.execute(
        "SELECT seq, private FROM journal WHERE kind = 'card_dealt' ORDER BY seq LIMIT 1"
    ).fetchone()
    part = json.loads(private_text)
    part["part"]["card"] = "As" if part["part"]["card"] != "As" else "Ks"
    connection.execute(
        "UPDATE journal SET private = ? WHERE seq = ?",
        (json.dumps(part, sort_keys=True, separators=(",", ":")), seq),
    )
    connection.commit()
    connection.close()
    result = verify_chain(path)
    assert not result.ok
    assert result.first_bad_seq == seq
    assert "private part does not match its digest" in result.reason


def test_the_salt_makes_equal_private_parts_commit_differently() -> None:
    part = {"card": "Qd", "index": 4, "position": 1}
    first, second = e.seal_private(part), e.seal_private(part)
    assert first != second
    assert e.commitment(first) != e.commitment(second)
    assert e.open_private(first) == part == e.open_private(second)


def test_unknown_kinds_fields_and_types_are_refused() -> None:
    with pytest.raises(e.EntryError, match="unknown entry kind"):
        e.build("round_exploded", {})
    with pytest.raises(e.EntryError, match="bet_changed"):
        e.build(
            "bet_changed", {"seat": 1, "wager": "ante", "amount_cents": "5", "chip_count": 1, "locked": False}
        )
    with pytest.raises(e.EntryError, match="unknown field"):
        e.build("dp_waived", {"seat": 1, "detail": "free text"})
    with pytest.raises(e.EntryError):
        e.build(
            "fault_raised",
            {
                "fault_id": "F1",
                "kind": "integrity",
                "severity": "alert",
                "device": None,
                "reason": {"code": "no such code", "message": "x"},
            },
        )


def test_the_schema_file_is_current() -> None:
    assert SCHEMA_FILE.read_text(encoding="utf-8") == e.json_schema_text(), (
        "docs/journal-entries.schema.json is stale: run `flushtable journal schema > "
        "docs/journal-entries.schema.json`"
    )


def test_every_example_validates_against_the_schema(journal_entries: list[JournalEntry]) -> None:
    schema = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    validator = jsonschema.Draft202012Validator(schema)
    for stored in journal_entries:
        document = json.loads(e.to_json_text(stored.entry))
        errors = sorted(validator.iter_errors(document), key=str)
        assert not errors, f"{stored.kind} {stored.seq}: {errors[0].message}"
    # And the schema refuses what the types refuse: an unknown field.
    bad = {"entry_kind": "dp_waived", "seat": 1, "detail": "x"}
    assert list(validator.iter_errors(bad))

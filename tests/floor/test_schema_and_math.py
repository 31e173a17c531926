"""The floor's schema migrations (versioned, each applied once, a newer database refused), the
theoretical win of a settlement, and the wire format's refusals (pure)."""

from __future__ import annotations

import random
import uuid
from fractions import Fraction
from pathlib import Path

import psycopg
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.floor import schema
from controller.floor.theoretical import theoretical_win_cents
from controller.journal.store import Journal
from controller.rules.catalogue import BASE_EDGE_PER_ANTE, PRESET_EDGE
from controller.simulation.floor.servers import PostgresCluster
from controller.uplink import wire
from controller.uplink.outbox import Outbox
from tests.journal.scripted import play_round


def test_migrations_are_versioned_and_applied_once(pg_cluster: PostgresCluster) -> None:
    """On a new, empty database of its own (not a floor's, which is a copy of the tests' migrated
    template: tests/floor/conftest.py), every migration applied in order, then none again."""
    dbname = f"floor_{uuid.uuid4().hex[:12]}"
    schema.create_database(pg_cluster.superuser_dsn, dbname)
    with psycopg.connect(pg_cluster.dsn("postgres", pg_cluster.superuser_password, dbname)) as connection:
        schema.ensure_roles(connection, writer_password="w", reporting_password="r")
        assert schema.applied_versions(connection) == []
        assert schema.migrate(connection) == [m.version for m in schema.MIGRATIONS]
        assert schema.applied_versions(connection) == [m.version for m in schema.MIGRATIONS]
        assert schema.migrate(connection) == []  # nothing twice
        connection.execute("INSERT INTO floor_schema_migrations (version, name) VALUES (999, 'future')")
        connection.commit()
        with pytest.raises(psycopg.ProgrammingError, match="newer than this program"):
            schema.migrate(connection)


def test_theoretical_win_of_a_settlement() -> None:
    settlement = {
        "banking": "house",
        "dead": False,
        "seats": [
            {"wagers": {"ante": {"stake": 1000, "result": "win"}, "flush": {"stake": 500, "result": "lose"}}},
            {"wagers": {"ante": {"stake": 1000, "result": "returned"}}},
        ],
    }
    expected = round(
        Fraction(1000, 1) * Fraction(*BASE_EDGE_PER_ANTE["high-card-flush"])
        + 500 * Fraction(*PRESET_EDGE["hcf-flush-house"])
    )
    assert theoretical_win_cents("high-card-flush", settlement) == expected == 66
    assert theoretical_win_cents("high-card-flush", {**settlement, "banking": "designated-player"}) == 0


def test_outbox_never_releases_a_private_part_before_the_reveal(tmp_path: Path) -> None:
    """Every private message comes after the entry that revealed its round, and a dead round's never."""
    with Journal.open(tmp_path / "j.sqlite", "T1", synchronous="OFF") as journal:
        rng = random.Random(5)
        for outcome in ("settled", "dead", "settled", "open_mid_deal"):
            play_round(journal, rng, game="chase-the-flush", outcome=outcome)
        outbox = Outbox("T1")
        released: dict[int, wire.Position] = {}
        dead_rounds = {e.round_id for e in journal.entries(kinds=["round_dead"])}
        open_round = journal.last_entries(1, ["round_started"])[0].round_id
        for stored in journal.entries():
            for message in outbox.feed(stored):
                if message.private:
                    released[message.entry_seq] = message.position
        for stored in journal.entries():
            if stored.private_text is None:
                continue
            if stored.round_id in dead_rounds or stored.round_id == open_round:
                assert stored.seq not in released, (stored.kind, stored.round_id)
        assert released  # settled rounds' parts went out
        positions = sorted(released.values())
        assert len(set(positions)) == len(positions)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=300))
def test_wire_decode_refuses_garbage_in_one_line(data: bytes) -> None:
    reason = ""
    try:
        wire.decode(data)
    except wire.BadMessage as error:
        reason = str(error)
    assert "\n" not in reason


@pytest.mark.parametrize("constant", [b"NaN", b"Infinity", b"-Infinity"])
def test_wire_decode_refuses_what_is_not_json(constant: bytes) -> None:
    """Python's JSON reader takes NaN and the infinities; the canonical text cannot hold them, so such a
    message is refused (quarantined by the floor), never an error that fails the floor's batch."""
    body = (
        b'{"type":"entry","v":1,"table_id":"T1","seq":1,"kind":"table_opened","payload":{"x":'
        + constant
        + b'},"prev_hash":"'
        + b"0" * 64
        + b'","hash":"'
        + b"0" * 64
        + b'","source":"engine",'
        b'"time_utc":"2026-01-01T00:00:00.000000Z","version":1}'
    )
    with pytest.raises(wire.BadMessage, match="undecodable"):
        wire.decode(body)

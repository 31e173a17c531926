"""The floor's readers on typed columns (migration 12, docs/floor.md "Schema"): a floor upgraded from the
schema before them answers as one whose rows the floor service wrote with them.

Database A: the privacy test's floor (tests/floor/test_floor_privacy.py ``old_gate_floor``: a voided
round, a killed seat, a Chase round voided after its flop, a release verified at a table's start),
written by today's floor service, which fills the typed columns at commit from the typed entries.
Database B, on the same PostgreSQL: migrated through version 11 only, given A's rows as the code before
wrote them (every column it had), then migrated to today. Real engine, uplink, nats-server, PostgreSQL.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

from controller.floor import schema
from controller.floor.queries import FLOOR_MAP_SQL
from tests.floor.conftest import MakeFloor
from tests.floor.test_floor_privacy import RELEASE, old_gate_floor

# The version before the typed columns, and the tables whose rows the floor's readers here read.
BEFORE_TYPED_COLUMNS = 11
COPIED = ("floor_tables", "floor_rounds", "floor_entries", "floor_private")
TYPED_COLUMNS_SQL = (
    "SELECT table_id, seq, kind, seat, state_to, software_release, software_release_digest, "
    "software_development FROM floor_entries ORDER BY table_id, seq"
)
SHOWN_SQL = "SELECT table_id, seq, private_text FROM floor_private_shown ORDER BY table_id, seq"
# The floor map's release column (the rest of its row is the time of day's: how long ago, the shift).
SOFTWARE_SQL = f"SELECT m.table_id, m.software FROM ({FLOOR_MAP_SQL}) m ORDER BY m.table_id"
# Any bounds: the map's shift figures are not compared.
SHIFT = {"shift_start": datetime(2000, 1, 1, tzinfo=UTC), "shift_end": datetime(2000, 1, 2, tzinfo=UTC)}


def _answers(dsn: str) -> dict[str, list[tuple[Any, ...]]]:
    with psycopg.connect(dsn) as connection:
        return {
            "floor_private_shown": connection.execute(SHOWN_SQL).fetchall(),
            "the floor map's release": connection.execute(SOFTWARE_SQL, SHIFT).fetchall(),
            "the typed columns": connection.execute(TYPED_COLUMNS_SQL).fetchall(),
        }


def _columns(connection: psycopg.Connection[Any], table: str) -> list[str]:
    rows = connection.execute(
        "SELECT column_name FROM information_schema.columns WHERE table_name = %s ORDER BY ordinal_position",
        (table,),
    ).fetchall()
    return [str(name) for (name,) in rows]


def _copy_rows(source_dsn: str, target_dsn: str) -> None:
    """A's rows into B, each table's columns as B has them (the schema before the typed columns)."""
    with psycopg.connect(source_dsn) as source, psycopg.connect(target_dsn) as target:
        for table in COPIED:
            columns = sql.SQL(", ").join(sql.Identifier(c) for c in _columns(target, table))
            out = sql.SQL("COPY (SELECT {} FROM {}) TO STDOUT").format(columns, sql.Identifier(table))
            into = sql.SQL("COPY {} ({}) FROM STDIN").format(sql.Identifier(table), columns)
            with source.cursor().copy(out) as reading, target.cursor().copy(into) as writing:
                for data in reading:
                    writing.write(data)


def test_a_floor_upgraded_to_the_typed_columns_answers_as_one_written_with_them(
    tmp_path: Path, make_floor: MakeFloor, monkeypatch: pytest.MonkeyPatch
) -> None:
    scenario = old_gate_floor(tmp_path, make_floor, monkeypatch)
    floor = scenario.floor
    written = _answers(floor.owner_dsn)
    # What the readers rely on is there (else the comparison below could not fail).
    typed = written["the typed columns"]
    assert any(row[2] == "dead_hand" and row[3] == 1 for row in typed), "seat 1's dead hand"
    assert any(row[2] == "state_changed" and row[4] == "reveal" for row in typed)
    assert ("T001", f"{RELEASE.release} {RELEASE.digest[:16]}") in written["the floor map's release"]
    with psycopg.connect(floor.owner_dsn) as connection:
        held = connection.execute("SELECT count(*) FROM floor_private").fetchone()
    assert held is not None
    assert 0 < len(written["floor_private_shown"]) < held[0], "some parts held and not shown"

    postgres = floor.postgres
    assert postgres is not None
    dbname = f"floor_before_{uuid.uuid4().hex[:12]}"
    schema.create_database(postgres.superuser_dsn, dbname)
    upgraded_dsn = postgres.dsn("postgres", postgres.superuser_password, dbname)
    try:
        with psycopg.connect(upgraded_dsn) as connection:
            schema.migrate(connection, through=BEFORE_TYPED_COLUMNS)
            assert "seat" not in _columns(connection, "floor_entries")
        _copy_rows(floor.owner_dsn, upgraded_dsn)
        with psycopg.connect(upgraded_dsn) as connection:
            assert schema.migrate(connection) == [m.version for m in schema.MIGRATIONS[BEFORE_TYPED_COLUMNS:]]
        upgraded = _answers(upgraded_dsn)
        for name, rows in written.items():
            assert upgraded[name] == rows, f"{name}: the upgraded floor answers otherwise"
    finally:
        with psycopg.connect(postgres.superuser_dsn, autocommit=True) as connection:
            connection.execute(sql.SQL("DROP DATABASE IF EXISTS {}").format(sql.Identifier(dbname)))

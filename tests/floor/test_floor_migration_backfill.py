"""Migration 16's backfill on a floor with history (controller/floor/migrations_rows.py
``_backfill_day_figures``): the rows it writes are the writer's (controller/floor/store.py
``day_figure_rows``) for every entry, and it reads the floor in one pass, not through the primary key's
index (an index walk over the whole floor, a random heap read an entry: docs/operations.md "Upgrading a
floor with history"). A real PostgreSQL; the entries are the round engine's, written through a real
journal."""

from __future__ import annotations

import dataclasses
import uuid
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql

from controller.floor import schema
from controller.floor.store import day_figure_rows
from controller.journal import Journal
from controller.journal.chain import canonical_json
from controller.journal.rows import JournalEntry
from controller.simulation.floor.postgres import PostgresCluster
from tests.engine.test_autoplay import CONFIGS, play_session

# The schema before migration 16, the floor's tables, and each one's rounds (faults included: dead rounds).
BEFORE_DAY_FIGURES = 15
TABLES = ("T1", "T2", "T3", "T4")
ROUNDS_A_TABLE = 30
COPY_ENTRIES = (
    "COPY floor_entries (table_id, seq, time_utc, time_text, round_id, source, kind, version, payload, "
    "prev_hash, hash, stream_seq, typed_columns) FROM STDIN"
)
DAY_FIGURES_SQL = (
    "SELECT table_id, seq, time_utc, measure, label, numerator, denominator FROM floor_day_figures "
    "ORDER BY table_id, seq, measure, label"
)
PRIMARY_KEY_TUPLES_SQL = (
    "SELECT idx_tup_read FROM pg_stat_user_indexes WHERE indexrelname = 'floor_entries_pkey'"
)


def _journal_entries(tmp_path: Path) -> list[JournalEntry]:
    """A table's rounds as a journal stores them (one journal: each floor table copies it), faults
    included (dead rounds, faults raised)."""
    config = dataclasses.replace(CONFIGS["hcf-house"], table_id="T1")
    table = play_session(config, rounds=ROUNDS_A_TABLE, seed=7, fault_rate=0.3)
    journal = Journal.open(tmp_path / "journal.sqlite", "T1", synchronous="OFF")
    try:
        return journal.append_many(table.journal())
    finally:
        journal.close()


def _index_tuples_read(connection: psycopg.Connection[Any]) -> int:
    """floor_entries' primary key: index entries read, as counted by PostgreSQL's statistics (this
    backend's flushed first; a fresh snapshot read)."""
    connection.execute("SELECT pg_stat_force_next_flush()")
    connection.execute("SELECT 1")  # the flush happens as the backend goes idle after the line above
    connection.execute("SELECT pg_stat_clear_snapshot()")
    row = connection.execute(PRIMARY_KEY_TUPLES_SQL).fetchone()
    assert row is not None
    return int(row[0])


def test_migration_16_backfills_what_the_writer_computes_in_one_pass(
    tmp_path: Path, pg_cluster: PostgresCluster
) -> None:
    entries = _journal_entries(tmp_path)
    dbname = f"floor_backfill_{uuid.uuid4().hex[:12]}"
    schema.create_database(pg_cluster.superuser_dsn, dbname)
    dsn = pg_cluster.dsn("postgres", pg_cluster.superuser_password, dbname)
    try:
        with psycopg.connect(dsn, autocommit=True) as connection:
            schema.migrate(connection, through=BEFORE_DAY_FIGURES)
            # As the floor's service writes them: the tables' entries interleaved in arrival order.
            with connection.cursor() as cursor, cursor.copy(COPY_ENTRIES) as copy:
                for position, entry in enumerate(entries):
                    for number, table_id in enumerate(TABLES):
                        copy.write_row((
                            table_id, entry.seq, entry.time_utc, entry.time_utc, entry.round_id, entry.source,
                            entry.kind, entry.version, canonical_json(entry.public), "0" * 64, "1" * 64,
                            position * len(TABLES) + number + 1, 2,
                        ))  # fmt: skip
            connection.execute("ANALYZE floor_entries")  # as on a floor that has been running
            stored = connection.execute(
                "SELECT table_id, seq, time_utc FROM floor_entries ORDER BY table_id, seq"
            ).fetchall()
            times = {(table_id, seq): time_utc for table_id, seq, time_utc in stored}
            expected = sorted(
                row
                for table_id in TABLES
                for entry in entries
                for row in day_figure_rows(table_id, entry.seq, times[table_id, entry.seq], entry.entry)
            )
            assert len(expected) > len(TABLES) * ROUNDS_A_TABLE, "figures of every round at least"
            before = _index_tuples_read(connection)
            assert schema.migrate(connection) == [BEFORE_DAY_FIGURES + 1]
            tuples_read = _index_tuples_read(connection) - before
            backfilled = connection.execute(DAY_FIGURES_SQL).fetchall()
        assert backfilled == expected
        # One pass over the heap: the primary key read only by the check that each row's entry is held
        # (at most a lookup a row), never walked over every entry of the floor.
        assert tuples_read <= len(expected) < len(stored), (
            f"the backfill read {tuples_read} of the primary key's {len(stored)} entries"
        )
    finally:
        with psycopg.connect(pg_cluster.superuser_dsn, autocommit=True) as connection:
            connection.execute(sql.SQL("DROP DATABASE IF EXISTS {}").format(sql.Identifier(dbname)))

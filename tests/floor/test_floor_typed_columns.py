"""The floor's readers on typed columns (migration 12, docs/floor.md "Schema"): a floor upgraded from the
schema before them answers as one whose rows the floor service wrote with them.

Database A: the privacy test's floor (tests/floor/test_floor_privacy.py ``old_gate_floor``: a voided
round, a killed seat, a Chase round voided after its flop, a release verified at a table's start), then
two clock measurements and three rounds settled with a progressive part (one counted, one at another
unit, one whose count is text), written by today's floor service, which fills the typed columns at commit
from the typed entries; and link L1 over T002 run on it by the floor's own link (its opening, the
contribution, two refusals, a claim, a reserve movement: the store writes the events' columns).
Database B, on the same PostgreSQL: migrated through version 11 only, given A's rows as the code before
wrote them (every column it had), then migrated to today (migrations 12 to 16, each backfilling once:
15 the bets_locked wagers' rows, which the progressive's reconciliation reads, 16 each entry's gaming-day
figures, which the gaming day's report sums).
Real engine, uplink, nats-server, PostgreSQL.
"""

from __future__ import annotations

import asyncio
import re
import threading
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

from controller.floor import schema
from controller.floor.gaming_day import read_floor_day
from controller.floor.progressive import Link, LinkConfig, LinkedStatus, PostgresStore, settled_rounds
from controller.floor.progressive_view import reconcile_params
from controller.floor.queries import BY_TABLE_SQL, CHANGES_SQL, FLOOR_MAP_SQL, HITS_SQL, RECONCILE_SQL
from controller.floor.service import FloorService
from controller.floor.store import day_figure_rows, entry_columns, locked_wager_rows
from controller.floor.verify import verify_table
from controller.journal import entries as typed
from controller.journal.chain import GENESIS_HASH, canonical_json, entry_hash_from_text
from controller.locale import DEFAULT_PROPERTY, gaming_day_of
from controller.progressive.model import Hit
from controller.simulation.floor.postgres import PostgresCluster
from tests.floor.conftest import MakeFloor
from tests.floor.helpers import Running, journal_total, wait_until
from tests.floor.test_floor_clock import offset_entry
from tests.floor.test_floor_privacy import RELEASE, OldGateFloor, old_gate_floor
from tests.progressive.test_table_progressive import PARAMETERS

# The version before the typed columns, and the tables whose rows the floor's readers here read.
BEFORE_TYPED_COLUMNS = 11
BEFORE_FIGURE_COLUMNS = 13  # the version before migration 14's
# Seats of a seated kind: up to 9 digits (kept), more (NULL: past integer a cast would fail the migration).
SEAT_FIGURES = (7, 10**6, -(10**9) + 1, 10**9 - 1, 10**9, 2**31, 3_000_000_000, -(2**31) - 1, 10**30)
NON_INTEGER_SEATS = ('{"seat":1.5}', '{"seat":"7"}', '{"seat":7.0}', '{"seat":true}')
COPIED = (
    "floor_tables", "floor_rounds", "floor_entries", "floor_private", "floor_progressive_links",
    "floor_progressive_events", "floor_progressive_marks",
)  # fmt: skip
TYPED_COLUMNS_SQL = (
    "SELECT table_id, seq, kind, seat, state_to, software_release, software_release_digest, "
    "software_development, clock_offset_us, clock_within_bound, clock_bound_us, progressive_settled, "
    "progressive_wagers, progressive_unit_cents FROM floor_entries ORDER BY table_id, seq"
)
SHOWN_SQL = "SELECT table_id, seq, private_text FROM floor_private_shown ORDER BY table_id, seq"
# The floor map's release and clock columns (the rest of its row is the time of day's: how long ago,
# the shift).
SOFTWARE_SQL = f"SELECT m.table_id, m.software FROM ({FLOOR_MAP_SQL}) m ORDER BY m.table_id"
CLOCK_SQL = (
    "SELECT m.table_id, m.clock_offset_us, m.clock_within_bound, m.clock_bound_us, m.clock_measured_utc "
    f"FROM ({FLOOR_MAP_SQL}) m ORDER BY m.table_id"
)
LINK = "L1"
# A link that has read nothing yet (each answer adds it), for the contribution path's read of the rounds.
READER = "L-read"
# Any bounds: the map's shift figures are not compared.
SHIFT = {"shift_start": datetime(2000, 1, 1, tzinfo=UTC), "shift_end": datetime(2000, 1, 2, tzinfo=UTC)}


LOCKED_WAGERS_SQL = (
    "SELECT table_id, seq, round_id, seat, wager, amount_cents FROM floor_locked_wagers "
    "ORDER BY table_id, seq, seat, wager"
)


def _reconciliation(connection: psycopg.Connection[Any]) -> list[Any]:
    """The progressive page's reconciliation of L1 over every round the floor holds: its window from the
    database's own clock back past the oldest round (no dependence on today's date)."""
    row = connection.execute("SELECT now(), min(closed_utc) FROM floor_rounds").fetchone()
    assert row is not None
    db_now, oldest = row
    window_s = (db_now - oldest).total_seconds() + 86_400
    return connection.execute(
        RECONCILE_SQL, reconcile_params(LINK, window_s, DEFAULT_PROPERTY, db_now)
    ).fetchall()


DAY_FIGURES_ROWS_SQL = (
    "SELECT table_id, seq, time_utc, measure, label, numerator, denominator FROM floor_day_figures "
    "ORDER BY table_id, seq, measure, label"
)


def _gaming_days(connection: psycopg.Connection[Any]) -> list[str]:
    """The reports (CSV) of every gaming day the floor's entries fall in (from its own times)."""
    row = connection.execute("SELECT min(time_utc), max(time_utc) FROM floor_entries").fetchone()
    assert row is not None
    first, last = (gaming_day_of(moment, DEFAULT_PROPERTY) for moment in row)
    days = [first + timedelta(days=n) for n in range((last - first).days + 1)]
    return [read_floor_day(connection, day.isoformat(), DEFAULT_PROPERTY).csv_text() for day in days]


def _answers(dsn: str) -> dict[str, list[Any]]:
    with psycopg.connect(dsn, autocommit=True) as connection:
        PostgresStore(connection, READER).ensure_link(READER, ("T001", "T002"))
        found, marks = settled_rounds(connection, READER, 100)
        link = (LINK,)
        return {
            "the day figures": connection.execute(DAY_FIGURES_ROWS_SQL).fetchall(),
            "the gaming days' reports": _gaming_days(connection),
            "the locked wagers": connection.execute(LOCKED_WAGERS_SQL).fetchall(),
            "the progressive's reconciliation": _reconciliation(connection),
            "floor_private_shown": connection.execute(SHOWN_SQL).fetchall(),
            "the floor map's release": connection.execute(SOFTWARE_SQL, SHIFT).fetchall(),
            "the typed columns": connection.execute(TYPED_COLUMNS_SQL).fetchall(),
            "the floor map's clock": connection.execute(CLOCK_SQL, SHIFT).fetchall(),
            "the link's settled rounds": [*found, sorted(marks.items())],
            "the progressive by table": connection.execute(BY_TABLE_SQL, link * 4).fetchall(),
            "the progressive's hits": connection.execute(HITS_SQL, link).fetchall(),
            "the progressive's changes": connection.execute(CHANGES_SQL, link).fetchall(),
            "floor_progressive_contributions": connection.execute(
                "SELECT * FROM floor_progressive_contributions ORDER BY link_id, table_id"
            ).fetchall(),
            "floor_progressive_awards": connection.execute(
                "SELECT * FROM floor_progressive_awards ORDER BY link_id, claim_number"
            ).fetchall(),
        }


def _clocks_and_progressive(scenario: OldGateFloor) -> None:
    """Onto A, through its service: clock measurements and rounds settled with a progressive part; then
    link L1 over T002, run by the floor's own link on A."""
    tables, floor = scenario.tables, scenario.floor
    for offset_us in (-3_000_000, 42_000):
        tables.journals["T001"].append("clock_offset", offset_entry(offset_us), round_id=None, source="clock")
    parts = {
        "RT002-20261205-000901": {"unit_cents": 100, "contributions": {"wagers": 2}},
        "RT002-20261205-000902": {"unit_cents": 50, "contributions": {"wagers": 2}},
        "RT002-20261205-000903": {"unit_cents": 100, "contributions": {"wagers": "7"}},
    }
    for round_id, part in parts.items():
        started = {"round_id": round_id, "game": "top-flush", "banking": {"mode": "house"}, "seats": [1]}
        tables.journals["T002"].append("round_started", started, round_id=round_id, source="engine")
        # A Progressive wager locked (the reconciliation's journal side: migration 15's rows).
        locked = {"wagers": {"1": {"ante": 500, "progressive": 100}}}
        tables.journals["T002"].append("bets_locked", locked, round_id=round_id, source="engine")
        settled = {"settlement": {"progressive": part}}
        tables.journals["T002"].append("round_settled", settled, round_id=round_id, source="engine")

    async def send() -> None:
        running = Running(floor, tables)
        running.start_uplinks()
        running.tasks.append(asyncio.create_task(FloorService(floor.floor_config()).run(running.stop)))
        total = journal_total(tables)

        async def all_there() -> bool:
            with psycopg.connect(floor.writer_dsn) as connection:
                return connection.execute("SELECT count(*) FROM floor_entries").fetchone() == (total,)

        try:
            await wait_until(all_there, 60, "the new entries on the floor")
        finally:
            await running.close()

    asyncio.run(send())
    with psycopg.connect(floor.writer_dsn, autocommit=True) as connection:
        link = Link(LinkConfig(LINK, ("T002",), PARAMETERS), connection)
        status = LinkedStatus()
        assert link.pump(status) == 1
        assert status.refusals == 2
        link.controller.claim_now("T002", "RT002-20261205-000901", [Hit(1, 7)])
        link.controller.move_reserve_now(5_000, reason="top-up", by="mo")


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
    _clocks_and_progressive(scenario)
    written = _answers(floor.owner_dsn)
    # What the readers rely on is there (else the comparison below could not fail).
    columns = written["the typed columns"]
    assert any(row[2] == "dead_hand" and row[3] == 1 for row in columns), "seat 1's dead hand"
    assert any(row[2] == "state_changed" and row[4] == "reveal" for row in columns)
    assert ("T001", f"{RELEASE.release} {RELEASE.release_digest[:16]}") in written["the floor map's release"]
    assert written["the floor map's clock"][0][:4] == ("T001", 42_000, True, 1_000_000)
    counted, *refused, _marks = written["the link's settled rounds"]
    assert (counted.wagers, [r.progressive is not None for r in refused]) == (2, [True, True])
    assert [row[1:3] for row in written["the progressive by table"]] == [(1, 2)]
    assert [row[2:6] for row in written["the progressive's hits"]] == [
        ("T002", 1, "RT002-20261205-000901", 7)
    ]
    changes = written["the progressive's changes"]
    assert [(row[2], row[3]) for row in changes] == [
        ("progressive_reserve", "mo"),
        ("progressive_parameters_changed", "floor"),
    ]
    assert changes[1][5] == "null", "the opening's parameters before"
    assert changes[1][6], "the opening's parameters after"
    with psycopg.connect(floor.owner_dsn) as connection:
        held = connection.execute("SELECT count(*) FROM floor_private").fetchone()
    assert held is not None
    assert 0 < len(written["floor_private_shown"]) < held[0], "some parts held and not shown"
    progressive_locks = [row for row in written["the locked wagers"] if row[4] == "progressive"]
    assert [row[2:] for row in progressive_locks] == [
        (f"RT002-20261205-00090{n}", "1", "progressive", 100) for n in (1, 2, 3)
    ]
    assert len(written["the locked wagers"]) > len(progressive_locks), "the engine's locks too"
    measures = {row[3] for row in written["the day figures"]}
    assert {"rounds_settled", "rounds_voided", "handle_cents", "theoretical_win_exact", "game"} <= measures
    assert any(re.search(",rounds_settled,[1-9]", report) for report in written["the gaming days' reports"])
    reconciled = written["the progressive's reconciliation"]
    assert {row[0] for row in reconciled} == {"T002"}
    assert (sum(row[3] for row in reconciled), sum(row[4] for row in reconciled)) == (3, 300), "locked"

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
        # Every reader named at once: which ones a missing backfill changes.
        otherwise = [name for name, rows in written.items() if upgraded[name] != rows]
        assert otherwise == [], f"the upgraded floor answers otherwise: {otherwise}"
    finally:
        with psycopg.connect(postgres.superuser_dsn, autocommit=True) as connection:
            connection.execute(sql.SQL("DROP DATABASE IF EXISTS {}").format(sql.Identifier(dbname)))


# Settlements' progressive parts and clock figures as a table could write them, hostile ones included:
# the backfill's SQL (migration 14) must read each as the typed class reads it at commit.
PROGRESSIVE_PARTS: tuple[object, ...] = (
    {"unit_cents": 100, "contributions": {"wagers": 2}},
    {"unit_cents": 0, "contributions": {"wagers": 0}},
    {"unit_cents": 100, "contributions": {"wagers": -1}},
    {"unit_cents": 100, "contributions": {"wagers": 2.0}},
    {"unit_cents": 100.0, "contributions": {"wagers": 2}},
    {"unit_cents": 100, "contributions": {"wagers": True}},
    {"unit_cents": "100", "contributions": {"wagers": "7"}},
    {"unit_cents": 10**15 - 1, "contributions": {"wagers": 10**15 - 1}},
    {"unit_cents": 10**15, "contributions": {"wagers": 10**16}},
    {"unit_cents": 1e16, "contributions": {"wagers": 1e16}},
    {"unit_cents": 100, "contributions": [2]},
    {"unit_cents": 100},
    [1, 2],
    5,
    "progressive",
    None,
)
CLOCK_FIGURES = (0, -3_000_000, 2**63 - 1, -(2**63), 2**63, 10**30)


def test_the_backfill_reads_each_figure_as_the_typed_class_does(pg_cluster: PostgresCluster) -> None:
    dbname = f"floor_figures_{uuid.uuid4().hex[:12]}"
    schema.create_database(pg_cluster.superuser_dsn, dbname)
    dsn = pg_cluster.dsn("postgres", pg_cluster.superuser_password, dbname)
    entries: list[tuple[str, typed.Entry]] = [
        ("round_settled", typed.RoundSettled(settlement={"game": "top-flush", "progressive": part}))
        for part in PROGRESSIVE_PARTS
    ]
    entries.append(("round_settled", typed.RoundSettled(settlement={"game": "top-flush"})))
    for figure in CLOCK_FIGURES:
        measured = {**offset_entry(0), "offset_us": figure, "bound_us": figure, "within_bound": figure == 0}
        entries.append(("clock_offset", typed.ClockOffset(**measured)))  # type: ignore[arg-type]
    # A seat as a previous release may have stored it (its wire did not bound it): one past integer
    # failed migration 12's cast, and init-db with it.
    for seat in SEAT_FIGURES:
        bet = typed.BetChanged(seat=seat, wager="main", amount_cents=500, chip_count=1, locked=False)
        entries.append(("bet_changed", bet))
    payloads = [canonical_json(typed.public_dict(entry)) for _kind, entry in entries]
    # And seats no typed class reads (a float, text): never cast, NULL like a seat past integer.
    for text in NON_INTEGER_SEATS:
        entries.append(("bet_changed", typed.BetChanged(seat=0, wager="main", amount_cents=500, chip_count=1,
                                                        locked=False)))  # fmt: skip
        payloads.append(text)
    try:
        with psycopg.connect(dsn, autocommit=True) as connection:
            schema.migrate(connection, through=BEFORE_TYPED_COLUMNS)
            for seq, ((kind, _entry), payload) in enumerate(zip(entries, payloads, strict=True), start=1):
                connection.execute(
                    "INSERT INTO floor_entries (table_id, seq, time_utc, time_text, source, kind, version, "
                    "payload, prev_hash, hash, stream_seq) VALUES ('T1', %s, now(), '', 'engine', %s, 1, "
                    "%s, '', '', %s)",
                    (seq, kind, payload, seq),
                )
            schema.migrate(connection)
            backfilled = connection.execute(
                "SELECT seat, clock_offset_us, clock_within_bound, clock_bound_us, progressive_settled, "
                "progressive_wagers, progressive_unit_cents FROM floor_entries ORDER BY seq"
            ).fetchall()
        expected = [
            (entry_columns(kind, entry)[0], *entry_columns(kind, entry)[5:]) for kind, entry in entries
        ]
        for index in range(len(entries) - len(NON_INTEGER_SEATS), len(entries)):
            expected[index] = (None, *expected[index][1:])  # no class reads such a payload: no seat
        assert backfilled == expected
        seats = [row[0] for row in backfilled if row[0] is not None]
        assert seats == [7, 10**6, -(10**9) + 1, 10**9 - 1], seats  # the ones of up to 9 digits
        at_commit = [row[1:] for row in expected[: len(PROGRESSIVE_PARTS) + 1 + len(CLOCK_FIGURES)]]
        # What the comparison rests on: counts taken, parts refused, figures past bigint left out.
        assert at_commit[0][3:] == (True, 2, 100)
        assert {row[3:] for row in at_commit[2:7]} == {(True, None, 100), (True, 2, None), (True, None, None)}
        assert at_commit[7][3:] == (True, 10**15 - 1, 10**15 - 1)
        assert at_commit[-1][:3] == (None, False, None)
    finally:
        with psycopg.connect(pg_cluster.superuser_dsn, autocommit=True) as connection:
            connection.execute(sql.SQL("DROP DATABASE IF EXISTS {}").format(sql.Identifier(dbname)))


# The previous release's writers (531ce50: controller/floor/store.py ``_COPY_ENTRIES``, controller/floor/
# progressive.py's event INSERT), word for word: a floor service of it left running after init-db.
OLD_COPY_ENTRIES = (
    "COPY floor_entries (table_id, seq, time_utc, time_text, round_id, source, kind, version, payload, "
    "private_digest, prev_hash, hash, stream_seq) FROM STDIN"
)
# The release before migration 15 (0998bd4: its ``_COPY_ENTRIES``, word for word, writing typed_columns 1
# and no floor_locked_wagers rows beside a bets_locked).
BEFORE_LOCKED_WAGERS_COPY = (
    "COPY floor_entries (table_id, seq, time_utc, time_text, round_id, source, kind, version, payload, "
    "private_digest, prev_hash, hash, stream_seq, seat, state_to, software_release, software_release_digest, "
    "software_development, clock_offset_us, clock_within_bound, clock_bound_us, progressive_settled, "
    "progressive_wagers, progressive_unit_cents, typed_columns) FROM STDIN"
)
OLD_INSERT_EVENT = (
    "INSERT INTO floor_progressive_events (link_id, event_no, kind, table_id, round_id, "
    "award_id, claim_number, amount_cents, entry) "
    "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)"
)


def test_a_previous_releases_writer_is_refused_after_the_upgrade(pg_cluster: PostgresCluster) -> None:
    """Its rows would have the typed columns NULL: a killed seat's private part shown by
    floor_private_shown, a progressive contribution left out of settled_rounds. Refused instead, its
    batch NAKed and taken again by this release's service: nothing lost, nothing shown."""
    dbname = f"floor_old_writer_{uuid.uuid4().hex[:12]}"
    schema.create_database(pg_cluster.superuser_dsn, dbname)
    dsn = pg_cluster.dsn("postgres", pg_cluster.superuser_password, dbname)
    row = ("T1", 1, "2026-01-02T03:04:05Z", "2026-01-02T03:04:05.000000Z", "R1", "engine", "bet_changed", 1,
           '{"seat":3}', None, "0" * 64, "1" * 64, 1)  # fmt: skip
    try:
        with psycopg.connect(dsn, autocommit=True) as connection:
            schema.migrate(connection, through=BEFORE_TYPED_COLUMNS)
            with connection.cursor().copy(OLD_COPY_ENTRIES) as copy:  # before the upgrade: taken
                copy.write_row(row)
            schema.migrate(connection)
            refused = pytest.raises(psycopg.errors.NotNullViolation, match="typed_columns")
            with refused, connection.cursor().copy(OLD_COPY_ENTRIES) as copy:
                copy.write_row((*row[:1], 2, *row[2:12], 2))
            connection.execute("INSERT INTO floor_progressive_links (link_id, meter_id) VALUES ('L1', 'M1')")
            with pytest.raises(psycopg.errors.NotNullViolation, match="typed_columns"):
                connection.execute(
                    OLD_INSERT_EVENT,
                    ("L1", 1, "progressive_contribution", "T1", "R1", None, None, None, '{"wagers":1}'),
                )
            # The release just before migration 15: its lock would have no wagers' rows.
            lock = ("T1", 3, *row[2:6], "bets_locked", 2, '{"wagers":{"1":{"progressive":100}}}', None,
                    "0" * 64, "3" * 64, 3, *(None,) * 11, 1)  # fmt: skip
            refused_check = pytest.raises(psycopg.errors.CheckViolation, match="locked_wager_rows")
            with refused_check, connection.cursor().copy(BEFORE_LOCKED_WAGERS_COPY) as copy:
                copy.write_row(lock)
            counts = connection.execute(
                "SELECT (SELECT count(*) FROM floor_entries), (SELECT count(*) FROM floor_progressive_events)"
            ).fetchone()
            assert counts == (1, 0)
    finally:
        with psycopg.connect(pg_cluster.superuser_dsn, autocommit=True) as connection:
            connection.execute(sql.SQL("DROP DATABASE IF EXISTS {}").format(sql.Identifier(dbname)))


# The version before migration 15's floor_locked_wagers, and how long the upgrade may take to reach its lock.
BEFORE_LOCKED_WAGERS = 14
LOCK_WAIT_BOUND_S = 60.0


def test_a_lock_committed_while_migration_15_runs_is_refused_or_backfilled(
    pg_cluster: PostgresCluster,
) -> None:
    """The release before migration 15 with a batch open (a bets_locked copied, not yet committed) when
    init-db runs: the migration waits for it on a lock, it commits, and then its lock either has its
    wagers' rows (the backfill read it) or was refused (the check) - never typed_columns 1 and no rows,
    which the progressive's reconciliation would show as a discrepancy."""
    dbname = f"floor_race15_{uuid.uuid4().hex[:12]}"
    schema.create_database(pg_cluster.superuser_dsn, dbname)
    dsn = pg_cluster.dsn("postgres", pg_cluster.superuser_password, dbname)
    lock = ("T1", 1, "2026-01-02T03:04:05Z", "2026-01-02T03:04:05.000000Z", "R1", "engine", "bets_locked",
            2, '{"wagers":{"1":{"progressive":100}}}', None, "0" * 64, "1" * 64, 1,
            *(None,) * 11, 1)  # fmt: skip
    failures: list[BaseException] = []

    def upgrade() -> None:
        try:
            with psycopg.connect(dsn, autocommit=True) as connection:
                schema.migrate(connection)
        except BaseException as error:  # reported by the test's thread below
            failures.append(error)

    try:
        with psycopg.connect(dsn, autocommit=True) as connection:
            schema.migrate(connection, through=BEFORE_LOCKED_WAGERS)
        old_writer = psycopg.connect(dsn)  # the previous release's service, its batch in flight
        committed = True
        try:
            with old_writer.cursor().copy(BEFORE_LOCKED_WAGERS_COPY) as copy:
                copy.write_row(lock)
            migrating = threading.Thread(target=upgrade, name="init-db")
            migrating.start()
            with psycopg.connect(dsn, autocommit=True) as watcher:
                deadline = time.monotonic() + LOCK_WAIT_BOUND_S
                waiting = (
                    "SELECT count(*) > 0 FROM pg_stat_activity "
                    "WHERE datname = %s AND wait_event_type = 'Lock'"
                )
                while watcher.execute(waiting, (dbname,)).fetchone() != (True,):
                    assert migrating.is_alive(), f"the upgrade ended without waiting: {failures}"
                    assert time.monotonic() < deadline, "the upgrade never waited on the open batch's lock"
                    threading.Event().wait(0.05)  # a poll's pause, bounded by the deadline above
            try:
                old_writer.commit()
            except psycopg.errors.CheckViolation:
                committed = False  # refused: its batch NAKed, taken again by this release's service
            migrating.join(LOCK_WAIT_BOUND_S)
            assert not migrating.is_alive(), "the upgrade did not finish once the batch committed"
        finally:
            old_writer.close()
        assert failures == []
        with psycopg.connect(dsn, autocommit=True) as connection:
            assert schema.applied_versions(connection)[-1] == schema.MIGRATIONS[-1].version
            entries = connection.execute("SELECT table_id, seq, typed_columns FROM floor_entries").fetchall()
            wagers = connection.execute(LOCKED_WAGERS_SQL).fetchall()
        if committed:
            assert entries == [("T1", 1, 1)]
            assert wagers == [("T1", 1, "R1", "1", "progressive", 100)], "a lock without its wagers' rows"
        else:
            assert (entries, wagers) == ([], [])
    finally:
        with psycopg.connect(pg_cluster.superuser_dsn, autocommit=True) as connection:
            connection.execute(sql.SQL("DROP DATABASE IF EXISTS {}").format(sql.Identifier(dbname)))


ENTRY_TIME = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
INSERT_ENTRY = (
    "INSERT INTO floor_entries (table_id, seq, time_utc, time_text, round_id, source, kind, version, "
    "payload, prev_hash, hash, stream_seq, typed_columns) "
    "VALUES (%s, %s, %s, %s, 'R1', 'engine', %s, 1, %s, %s, %s, %s, 2)"
)
INSERT_WAGER = "INSERT INTO floor_locked_wagers VALUES (%s, %s, %s, %s, %s, %s)"
INSERT_FIGURE = "INSERT INTO floor_day_figures VALUES (%s, %s, %s, %s, %s, %s, %s)"


def _write_chain(
    connection: psycopg.Connection[Any], table_id: str, entries: list[typed.Entry], *, rows_beside: bool
) -> None:
    """``entries`` as table ``table_id``'s chain from seq 1 (hashes linked as a table's journal links
    them), with the rows the writer puts beside each (``rows_beside``) or without them."""
    previous = GENESIS_HASH
    for seq, entry in enumerate(entries, start=1):
        payload = canonical_json(typed.public_dict(entry))
        time_text = "2026-01-02T03:04:05.000000Z"
        hash_ = entry_hash_from_text(
            prev_hash=previous, seq=seq, time_utc=time_text, table_id=table_id, round_id="R1",
            source="engine", kind=entry.kind, version=1, payload_text=payload, private_digest=None,
        )  # fmt: skip
        connection.execute(
            INSERT_ENTRY, (table_id, seq, ENTRY_TIME, time_text, entry.kind, payload, previous, hash_, seq)
        )
        if rows_beside:
            if isinstance(entry, typed.BetsLocked):
                for row in locked_wager_rows(table_id, seq, "R1", entry):
                    connection.execute(INSERT_WAGER, row)
            for row in day_figure_rows(table_id, seq, ENTRY_TIME, entry):
                connection.execute(INSERT_FIGURE, row)
        previous = hash_


def test_floor_verify_recomputes_the_rows_beside_each_entry(pg_cluster: PostgresCluster) -> None:
    """floor_locked_wagers and floor_day_figures are outside the entries' hashes: a row the writer role
    adds (extra or different), or an entry it writes without its rows (missing), is refused by floor
    verify in one line naming the table and the entry; a row of an entry the floor does not hold is
    refused by the foreign key."""
    dbname = f"floor_beside_{uuid.uuid4().hex[:12]}"
    schema.create_database(pg_cluster.superuser_dsn, dbname)
    owner_dsn = pg_cluster.dsn("postgres", pg_cluster.superuser_password, dbname)
    chain: list[typed.Entry] = [
        typed.BetsLocked(wagers={"1": {"main": 500, "progressive": 100}}),
        typed.RoundSettled(settlement={"game": "top-flush"}),
    ]
    try:
        with psycopg.connect(owner_dsn, autocommit=True) as owner:
            schema.ensure_roles(owner, writer_password="writer-pw", reporting_password="reporting-pw")
            schema.migrate(owner)
        with psycopg.connect(
            pg_cluster.dsn(schema.WRITER_ROLE, "writer-pw", dbname), autocommit=True
        ) as writer:
            for table_id in ("T1", "T2", "T3", "T4"):
                _write_chain(writer, table_id, chain, rows_beside=True)
            _write_chain(writer, "T5", chain, rows_beside=False)  # the rows beside never written
            writer.execute(INSERT_FIGURE, ("T2", 2, ENTRY_TIME, "game", "holdem", 1, 1))  # extra
            writer.execute(INSERT_WAGER, ("T3", 1, "R1", "1", "main ", 500))  # a wager renamed
            writer.execute(INSERT_WAGER, ("T4", 1, "R1", "2", "main", 900))  # a seat added
            with pytest.raises(psycopg.errors.ForeignKeyViolation):
                writer.execute(INSERT_FIGURE, ("T1", 3, ENTRY_TIME, "game", "top-flush", 1, 1))
            with pytest.raises(psycopg.errors.ForeignKeyViolation):
                writer.execute(INSERT_WAGER, ("T1", 3, "R1", "1", "main", 500))
        with psycopg.connect(pg_cluster.dsn(schema.REPORTING_ROLE, "reporting-pw", dbname)) as reporting:
            checks = {t: verify_table(reporting, t) for t in ("T1", "T2", "T3", "T4", "T5")}
        assert checks["T1"].ok, checks["T1"]
        problems = {t: check.problem for t, check in checks.items() if not check.ok}
        assert problems == {
            "T2": "table T2 entry 2: a floor_day_figures row not its entry's (extra or different)",
            "T3": "table T3 entry 1: a floor_locked_wagers row not its entry's (extra or different)",
            "T4": "table T4 entry 1: a floor_locked_wagers row not its entry's (extra or different)",
            "T5": "table T5 entry 1: a floor_locked_wagers row missing",
        }
    finally:
        with psycopg.connect(pg_cluster.superuser_dsn, autocommit=True) as connection:
            connection.execute(sql.SQL("DROP DATABASE IF EXISTS {}").format(sql.Identifier(dbname)))

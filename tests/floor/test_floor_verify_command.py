"""`flushtable floor verify`: an auditor's check of the floor's record, on the real servers (nats-server,
PostgreSQL, the floor service fed by the tables' uplinks). A clean floor exits 0 with its tables' and
entries' counts; a payload changed in PostgreSQL (by the superuser, the append-only trigger set aside)
exits 1 naming the table and the entry; an unknown --table, a wrong password, a server not there and the
writer's role are refused in one line, exit status 2, no traceback."""

from __future__ import annotations

import asyncio
import json
import socket
import tracemalloc
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

from controller.cli import main
from controller.floor import schema, verify
from controller.floor.config import write_floor_config
from controller.floor.service import FloorService
from controller.floor.verify import auditor_session, verify_table
from controller.journal import entries as typed
from controller.simulation.floor.embedded import EmbeddedFloor
from controller.simulation.floor.servers import PostgresCluster
from tests.floor.conftest import MakeFloor
from tests.floor.helpers import Running, Tables, last_seq, wait_until
from tests.floor.test_floor_typed_columns import INSERT_WAGER, _write_chain

IDS = ["T001", "T002", "T003"]


def _floor_last(floor: EmbeddedFloor, table_id: str) -> int:
    with psycopg.connect(floor.reporting_dsn) as connection:
        row = connection.execute(
            "SELECT max(seq) FROM floor_entries WHERE table_id = %s", (table_id,)
        ).fetchone()
    return int(row[0] or 0) if row else 0


def _filled_floor(tmp_path: Path, make_floor: MakeFloor) -> tuple[EmbeddedFloor, Tables]:
    """A floor holding every entry of three tables' journals (two rounds each), sent by their uplinks and
    written by the floor service; the service and uplinks stopped again."""
    floor = make_floor(IDS)
    tables = Tables(tmp_path / "tables", IDS)
    for table_id in IDS:
        tables.play(table_id, 2)

    async def fill() -> None:
        running = Running(floor, tables)
        running.start_uplinks()
        running.tasks.append(asyncio.create_task(FloorService(floor.floor_config()).run(running.stop)))
        try:

            async def caught_up() -> bool:
                return all(_floor_last(floor, t) == last_seq(tables.journals[t]) for t in IDS)

            await wait_until(caught_up, 120, "every table's entries on the floor")
        finally:
            await running.close()

    asyncio.run(fill())
    return floor, tables


def _config(tmp_path: Path, floor: EmbeddedFloor, reporting_dsn: str) -> Path:
    return write_floor_config(tmp_path / "floor-config", floor.floor_config(), reporting_dsn=reporting_dsn)


def _verify(capsys: pytest.CaptureFixture[str], config: Path, *args: str) -> tuple[int, str, str]:
    code = main(["floor", "verify", "--config", str(config), *args])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    own = "".join(line for line in captured.err.splitlines(keepends=True) if not line.startswith("{"))
    return code, captured.out, own


def test_a_clean_floor_verifies_every_table_and_counts_its_entries(
    tmp_path: Path, make_floor: MakeFloor, capsys: pytest.CaptureFixture[str]
) -> None:
    floor, tables = _filled_floor(tmp_path, make_floor)
    entries = {t: last_seq(tables.journals[t]) for t in IDS}
    config = _config(tmp_path, floor, floor.reporting_dsn)

    code, out, err = _verify(capsys, config)
    assert (code, err) == (0, ""), err
    assert out.splitlines() == [
        *(f"{t}: ok, {entries[t]} entries" for t in IDS),
        f"floor verify: 3 tables, 3 ok, 0 failed; {sum(entries.values())} entries verified",
    ]

    code, out, err = _verify(capsys, config, "--table", "T003", "--table", "T001", "--json")
    assert (code, err) == (0, ""), err
    assert json.loads(out) == {
        "ok": True,
        "tables": 2,
        "tables_ok": 2,
        "tables_failed": 0,
        "entries_verified": entries["T003"] + entries["T001"],
        "checks": [
            {"table_id": "T003", "ok": True, "entries": entries["T003"], "problem": None},
            {"table_id": "T001", "ok": True, "entries": entries["T001"], "problem": None},
        ],
    }

    code, out, err = _verify(capsys, config, "--table", "T001", "--table", "T404")
    assert (code, out) == (2, "")
    assert err == "flushtable floor: --table T404: no such table on the floor (3 tables)\n"

    # The writer's role may write the entries: refused, the command reads as the read-only role only.
    code, out, err = _verify(capsys, _config(tmp_path, floor, floor.writer_dsn))
    assert (code, out) == (2, "")
    assert err == (
        "flushtable floor: PostgreSQL role flushtable_floor_writer may write floor_entries: floor verify "
        "reads as the read-only reporting role ([panel] reporting_dsn_file)\n"
    )


def test_a_payload_changed_in_postgresql_fails_naming_the_table_and_the_entry(
    tmp_path: Path, make_floor: MakeFloor, capsys: pytest.CaptureFixture[str]
) -> None:
    floor, tables = _filled_floor(tmp_path, make_floor)
    entries = {t: last_seq(tables.journals[t]) for t in IDS}
    with psycopg.connect(floor.owner_dsn, autocommit=True) as owner:
        # floor_entries refuses UPDATE by trigger, even to its owner: only a superuser sets it aside.
        owner.execute("SET session_replication_role = replica")
        changed = owner.execute(
            'UPDATE floor_entries SET payload = payload || \'{"note": "changed"}\'::jsonb '
            "WHERE table_id = 'T002' AND seq = 3"
        )
        assert changed.rowcount == 1

    code, out, err = _verify(capsys, _config(tmp_path, floor, floor.reporting_dsn))
    assert (code, err) == (1, ""), err
    assert out.splitlines() == [
        f"T001: ok, {entries['T001']} entries",
        "T002: FAILED after 2 verified entries: entry 3: hash does not match its contents",
        f"T003: ok, {entries['T003']} entries",
        f"floor verify: 3 tables, 2 ok, 1 failed; {entries['T001'] + 2 + entries['T003']} entries verified",
    ]


def test_entries_taken_off_a_chains_end_fail_against_the_floors_head(
    tmp_path: Path, make_floor: MakeFloor, capsys: pytest.CaptureFixture[str]
) -> None:
    """A chain whose last entries are deleted (with every row kept beside them) still links from entry 1:
    only the head the floor records for the table (``floor_tables.last_seq``/``last_hash``) shows it.
    A review's reproduction: before, ``T002: ok, <fewer> entries`` and exit 0."""
    floor, tables = _filled_floor(tmp_path, make_floor)
    entries = {t: last_seq(tables.journals[t]) for t in IDS}
    kept = entries["T002"] - 5
    with psycopg.connect(floor.owner_dsn, autocommit=True) as owner:
        owner.execute("SET session_replication_role = replica")  # past the tables' no-delete triggers
        holders = owner.execute(
            "SELECT table_name FROM information_schema.columns WHERE table_schema = current_schema() "
            "AND column_name = 'seq' AND table_name IN (SELECT table_name FROM information_schema.tables "
            "WHERE table_type = 'BASE TABLE') AND table_name IN (SELECT table_name FROM "
            "information_schema.columns WHERE column_name = 'table_id') AND table_name <> 'floor_tables'"
        ).fetchall()
        assert ("floor_entries",) in holders
        for (name,) in holders:
            owner.execute(
                sql.SQL("DELETE FROM {} WHERE table_id = 'T002' AND seq > %s").format(sql.Identifier(name)),
                (kept,),
            )

    code, out, err = _verify(capsys, _config(tmp_path, floor, floor.reporting_dsn))
    assert (code, err) == (1, ""), err
    assert out.splitlines()[1] == (
        f"T002: FAILED after {kept} verified entries: the chain ends at entry {kept}, the floor's head "
        f"for the table is entry {entries['T002']} (entries taken off its end?)"
    )


def _hand_written_config(directory: Path, reporting_dsn: str) -> Path:
    """A floor's file with [panel] reporting_dsn_file; [floor]'s files are named but never read."""
    directory.mkdir()
    (directory / "floor-reporting.dsn").write_text(reporting_dsn + "\n", encoding="utf-8")
    path = directory / "floor.toml"
    path.write_text(
        '[floor]\nservers = ["tls://127.0.0.1:4222"]\nuser = "floor-reader"\npassword_file = "nats.pw"\n'
        'ca_file = "ca.pem"\ndsn_file = "floor-writer.dsn"\n\n'
        '[panel]\nreporting_dsn_file = "floor-reporting.dsn"\n',
        encoding="utf-8",
    )
    return path


def test_a_wrong_password_or_no_server_is_one_line(
    tmp_path: Path, pg_cluster: PostgresCluster, capsys: pytest.CaptureFixture[str]
) -> None:
    wrong_password = pg_cluster.dsn("postgres", "not-the-password", "postgres")
    code, out, err = _verify(capsys, _hand_written_config(tmp_path / "a", wrong_password))
    assert (code, out) == (2, "")
    assert err.startswith("flushtable floor: PostgreSQL: "), err
    assert "password authentication failed" in err
    assert err.count("\n") == 1, err

    # A port bound here and never listened on: refused, and no other process (the other pytest-xdist
    # worker's server) can listen there while the check runs, as it could on a port probed and closed.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as held:
        held.bind(("127.0.0.1", 0))
        port = held.getsockname()[1]
        nobody = f"host=127.0.0.1 port={port} dbname=floor user=flushtable_floor_reporting password=x"
        code, out, err = _verify(capsys, _hand_written_config(tmp_path / "b", nobody))
    assert (code, out) == (2, "")
    assert err.startswith("flushtable floor: PostgreSQL: "), err
    assert "Connection refused" in err or "connection refused" in err, err
    assert err.count("\n") == 1, err

    # Not a floor's database at all (the superuser's own): said so.
    code, out, err = _verify(capsys, _hand_written_config(tmp_path / "c", pg_cluster.superuser_dsn))
    assert (code, out) == (2, "")
    assert (
        err
        == "flushtable floor: PostgreSQL: not a floor database (no floor_entries; flushtable floor init-db)\n"
    )


class _WriterCommitsMidway(psycopg.Connection[Any]):
    """A reader's connection after whose read of the day figures ``midway`` runs once: a real writer
    committing a batch at the moment a live floor's service can, between verify_table's read of the rows
    beside the entries and its read of the entries (a statement, or a server-side cursor's DECLARE)."""

    midway: Callable[[], None] | None = None

    def execute(self, query: Any, params: Any = None, **options: Any) -> psycopg.Cursor[Any]:
        cursor = super().execute(query, params, **options)
        self.after(query)
        return cursor

    def after(self, query: Any) -> None:
        if self.midway is not None and "FROM floor_day_figures" in str(query):
            midway, self.midway = self.midway, None
            midway()


class _MidwayServerCursor(psycopg.ServerCursor[Any]):
    """A server-side cursor of a ``_WriterCommitsMidway`` connection: its DECLARE is a read too."""

    def execute(self, query: Any, params: Any = None, **options: Any) -> _MidwayServerCursor:
        super().execute(query, params, **options)
        connection = self.connection
        if isinstance(connection, _WriterCommitsMidway):
            connection.after(query)
        return self


@pytest.mark.parametrize("isolation", ["auditor_session", "read committed"])
def test_a_batch_committed_while_a_table_is_read_is_wholly_seen_or_not_at_all(
    pg_cluster: PostgresCluster, isolation: str
) -> None:
    """floor verify reads a table in one REPEATABLE READ snapshot (``auditor_session``): the writer's
    batch committed between its two reads is not seen, the table verifies as it was. In READ COMMITTED
    the same moment shows the batch's entries without the rows beside them, a false failure (which is
    what shows this test can tell the two apart)."""
    dbname = f"floor_snapshot_{uuid.uuid4().hex[:12]}"
    schema.create_database(pg_cluster.superuser_dsn, dbname)
    chain: list[typed.Entry] = [
        typed.BetsLocked(wagers={"1": {"main": 500, "progressive": 100}}),
        typed.RoundSettled(settlement={"game": "top-flush"}),
    ]
    try:
        with psycopg.connect(pg_cluster.dsn("postgres", pg_cluster.superuser_password, dbname)) as owner:
            schema.ensure_roles(owner, writer_password="writer-pw", reporting_password="reporting-pw")
            schema.migrate(owner)
        writer_dsn = pg_cluster.dsn(schema.WRITER_ROLE, "writer-pw", dbname)
        with psycopg.connect(writer_dsn) as writer:
            _write_chain(writer, "T1", chain, rows_beside=True)  # committed before the check starts

        landed: list[str] = []

        def a_batch_lands() -> None:
            landed.append("T2")
            with psycopg.connect(writer_dsn) as late:  # T2's whole chain and its rows, one commit
                _write_chain(late, "T2", chain, rows_beside=True)

        reporting_dsn = pg_cluster.dsn(schema.REPORTING_ROLE, "reporting-pw", dbname)
        with _WriterCommitsMidway.connect(reporting_dsn, autocommit=True) as reader:
            reader.server_cursor_factory = _MidwayServerCursor
            if isolation == "auditor_session":
                auditor_session(reader, statement_timeout_s=60)
            reader.midway = a_batch_lands
            check = verify_table(reader, "T2")
        assert landed == ["T2"], "the writer's batch never landed between the reads"
        if isolation == "auditor_session":
            assert (check.ok, check.entries, check.problem) == (True, 0, "")
        else:
            assert (check.ok, check.problem) == (False, "table T2 entry 1: a floor_locked_wagers row missing")
    finally:
        with psycopg.connect(pg_cluster.superuser_dsn, autocommit=True) as connection:
            connection.execute(sql.SQL("DROP DATABASE IF EXISTS {}").format(sql.Identifier(dbname)))


def test_entries_with_no_floor_tables_row_are_walked_and_fail(
    tmp_path: Path, make_floor: MakeFloor, capsys: pytest.CaptureFixture[str]
) -> None:
    """A table whose entries the floor holds with no floor_tables row (the writer writes both in one
    transaction: only a hand in PostgreSQL parts them) is found and fails, by itself or named with
    --table. Before: floor verify listed floor_tables only, printed T001 and T003 ok and exited 0, and
    ``--table T002`` was refused as "no such table on the floor"."""
    floor, tables = _filled_floor(tmp_path, make_floor)
    entries = {t: last_seq(tables.journals[t]) for t in IDS}
    with psycopg.connect(floor.owner_dsn, autocommit=True) as owner:
        owner.execute("SET session_replication_role = replica")  # past any trigger on the row
        assert owner.execute("DELETE FROM floor_tables WHERE table_id = 'T002'").rowcount == 1
    config = _config(tmp_path, floor, floor.reporting_dsn)
    no_row = (
        f"T002: FAILED after {entries['T002']} verified entries: no floor_tables row: the floor holds "
        "entries of the table and records no head for it"
    )

    code, out, err = _verify(capsys, config)
    assert (code, err) == (1, ""), err
    assert out.splitlines() == [
        f"T001: ok, {entries['T001']} entries",
        no_row,
        f"T003: ok, {entries['T003']} entries",
        f"floor verify: 3 tables, 2 ok, 1 failed; {sum(entries.values())} entries verified",
    ]
    code, out, err = _verify(capsys, config, "--table", "T002")
    assert (code, err) == (1, ""), err
    assert out.splitlines()[0] == no_row


def _write_long_chain(writer: psycopg.Connection[Any], table_id: str, rounds: int) -> int:
    """``rounds`` rounds of a full table's wagers locked and settled as ``table_id``'s chain, with the
    rows beside each entry, in one pipeline; the number of rows beside written."""
    wagers = {str(seat): {"main": 500 + seat, "progressive": 100, "flush": 200} for seat in range(1, 8)}
    chain: list[typed.Entry] = []
    for _ in range(rounds):
        chain += [typed.BetsLocked(wagers=wagers), typed.RoundSettled(settlement={"game": "top-flush"})]
    with writer.pipeline():
        _write_chain(writer, table_id, chain, rows_beside=True)
    row = writer.execute(
        "SELECT (SELECT count(*) FROM floor_locked_wagers WHERE table_id = %s) "
        "+ (SELECT count(*) FROM floor_day_figures WHERE table_id = %s)",
        (table_id, table_id),
    ).fetchone()
    return int(row[0]) if row else 0


def test_the_rows_beside_are_read_in_bounded_fetches_not_held_whole(
    pg_cluster: PostgresCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    """verify_table's memory is bounded by its fetches, not by the table's rows beside its entries: a
    table of 1,500 rounds (over 30,000 rows beside) is verified, one row broken at its far end is still
    found, and the peak of Python's allocations while walking it (fetches of 100 rows) stays under
    1.5 MiB. Before: every row beside the table's entries was read into a dict first, a peak of about
    14 MB here, against 0.6 MB after (and gigabytes for a table that ran for years)."""
    monkeypatch.setattr(verify, "ENTRIES_PER_FETCH", 100)
    monkeypatch.setattr(verify, "ROWS_BESIDE_PER_FETCH", 100, raising=False)
    dbname = f"floor_long_{uuid.uuid4().hex[:12]}"
    schema.create_database(pg_cluster.superuser_dsn, dbname)
    try:
        with psycopg.connect(pg_cluster.dsn("postgres", pg_cluster.superuser_password, dbname)) as owner:
            schema.ensure_roles(owner, writer_password="writer-pw", reporting_password="reporting-pw")
            schema.migrate(owner)
        with psycopg.connect(
            pg_cluster.dsn(schema.WRITER_ROLE, "writer-pw", dbname), autocommit=True
        ) as writer:
            assert _write_long_chain(writer, "T1", 1500) > 30_000
            last = 2 * 1500 - 1  # the last round's bets_locked
            writer.execute(INSERT_WAGER, ("T1", last, "R1", "8", "main", 900))  # a seat added at the end
        with psycopg.connect(pg_cluster.dsn(schema.REPORTING_ROLE, "reporting-pw", dbname)) as reporting:
            tracemalloc.start()
            try:
                check = verify_table(reporting, "T1")
                _, peak_bytes = tracemalloc.get_traced_memory()
            finally:
                tracemalloc.stop()
        assert (check.ok, check.entries) == (False, last - 1)
        assert (
            check.problem
            == f"table T1 entry {last}: a floor_locked_wagers row not its entry's (extra or different)"
        )
        assert peak_bytes < 1_536 * 1024, f"peak {peak_bytes} bytes while verifying"
    finally:
        with psycopg.connect(pg_cluster.superuser_dsn, autocommit=True) as connection:
            connection.execute(sql.SQL("DROP DATABASE IF EXISTS {}").format(sql.Identifier(dbname)))

"""The surveillance publisher's pass costs the same few statements however many tables are behind
(docs/floor.md "CPU per message", the second stop): over a real PostgreSQL floor database, the
statements one pass of ``publish_pending`` sends are counted on the wire itself (libpq's protocol trace
of the connection), for 2 tables behind and for 30. Before, each behind table cost a read in a
transaction of its own and a statement for its mark (30 tables: over a hundred messages to the server).
No table here has an event entry, so the pass publishes nothing (no JetStream is needed: ``js`` is
never called) and moves every mark to its table's head.

Checked to fail: with the per-table reads and marks of before, 2 tables cost 16 statements and 30
tables 128 (``AssertionError: (16, 128)``)."""

from __future__ import annotations

import asyncio
import os
import tempfile
from pathlib import Path

import psycopg

from controller.floor.surveillance import publish_pending
from controller.simulation.floor.embedded import EmbeddedFloor
from tests.floor.conftest import MakeFloor


def _statements_of_a_pass(floor: EmbeddedFloor, tables: list[str], trace_dir: Path) -> int:
    with psycopg.connect(floor.owner_dsn, autocommit=True) as connection:
        connection.execute("DELETE FROM floor_surveillance_marks")
        connection.execute("DELETE FROM floor_tables")
        for table_id in tables:
            connection.execute("INSERT INTO floor_tables (table_id, last_seq) VALUES (%s, 7)", (table_id,))

    async def run() -> str:
        connection = await psycopg.AsyncConnection.connect(floor.writer_dsn, autocommit=True)
        fd, trace_path = tempfile.mkstemp(dir=trace_dir, suffix=".trace")
        try:
            connection.pgconn.trace(fd)
            await publish_pending(connection, None, 500_000)
            connection.pgconn.untrace()
        finally:
            await connection.close()
            os.close(fd)
        return Path(trace_path).read_text(errors="replace")

    trace = asyncio.run(run())
    with psycopg.connect(floor.reporting_dsn) as connection:
        rows = connection.execute("SELECT table_id, last_seq FROM floor_surveillance_marks").fetchall()
    marks = {str(table_id): int(last_seq) for table_id, last_seq in rows}
    assert marks == dict.fromkeys(tables, 7)
    # Every statement the client sends: a simple Query (BEGIN, COMMIT ...) or an extended one's Bind.
    return sum(
        1 for line in trace.splitlines() if "\tF\t" in line and ("\tQuery\t" in line or "\tBind\t" in line)
    )


def test_a_pass_costs_the_same_statements_for_2_tables_behind_as_for_30(
    make_floor: MakeFloor, tmp_path: Path
) -> None:
    floor = make_floor(["T1"])
    few = _statements_of_a_pass(floor, [f"T{n}" for n in range(1, 3)], tmp_path)
    many = _statements_of_a_pass(floor, [f"T{n}" for n in range(1, 31)], tmp_path)
    print(f"statements of a pass: {few} for 2 tables behind, {many} for 30")
    assert few > 0
    assert many == few, (few, many)

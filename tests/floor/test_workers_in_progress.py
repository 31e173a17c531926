"""In-progress acks (controller/floor/in_progress.py; docs/floor.md "In-progress acks"): a batch whose
commit outlasts its consumer's ``ack_wait`` (here held by a lock the test holds on ``floor_entries`` in
PostgreSQL) tells JetStream ``+WPI`` while it is taken, so its messages are not delivered again to
another puller of the same consumer (a partition's new holder) mid-batch. Real nats-server and
PostgreSQL; the other puller is the test's own pull subscription bound to the floor's consumer."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import psycopg

from controller.floor.service import FloorService
from controller.uplink.wire import FLOOR_CONSUMER, STREAM_NAME
from tests.floor.conftest import MakeFloor
from tests.floor.helpers import (
    Running,
    Tables,
    floor_count,
    floor_problems,
    journal_total,
    table_ids,
    wait_until,
)
from tests.floor.test_partition_filters import _published

ACK_WAIT_S = 2.0
# The batch is held for three ack_waits: without +WPI its messages are due again twice over.
HELD_FOR_ACK_WAITS = 3
WAIT_S = 120.0  # every condition's bound (a loaded machine)


def test_a_batch_held_past_ack_wait_is_not_delivered_again_meanwhile(
    tmp_path: Path, make_floor: MakeFloor
) -> None:
    """The floor service pulls every message (one batch) and waits on a lock the test holds on
    floor_entries for three ack_waits (2 s each) while another puller of the same consumer asks for
    messages: before, the batch's messages were delivered to it once their ack_wait ran out (every one,
    several times: "456 of 456 messages delivered again while their batch was taken (1212 deliveries)");
    with +WPI none is. Released, the batch commits and every entry is on the
    floor once, every chain verified."""
    ids = table_ids(3)
    floor = make_floor(ids, ack_wait_s=ACK_WAIT_S)
    tables = Tables(tmp_path / "tables", ids)
    for table_id in ids:
        tables.play(table_id, 2)

    async def scenario() -> None:
        running = Running(floor, tables)
        running.start_uplinks()
        await _published(floor, tables, ids)
        await running.close()  # nothing more is published: the consumer's count is the batch's
        stop = asyncio.Event()
        service_task: asyncio.Task[None] | None = None
        admin = await floor.connect_admin()
        locker = await psycopg.AsyncConnection.connect(floor.owner_dsn)  # not autocommit: the lock stays
        try:
            js = admin.jetstream(timeout=10)
            total = (await js.consumer_info(STREAM_NAME, FLOOR_CONSUMER)).num_pending
            assert total, "the stream holds the tables' messages"
            # Inserts wait for it; the batch's reads (its tables' projections) do not.
            await locker.execute("LOCK TABLE floor_entries IN SHARE MODE")
            service = FloorService(floor.floor_config(backoff_max_s=1.0))
            service_task = asyncio.create_task(service.run(stop))

            async def all_delivered_to_the_service() -> bool:
                info = await js.consumer_info(STREAM_NAME, FLOOR_CONSUMER)
                return bool(info.num_pending == 0 and info.num_ack_pending == total)

            await wait_until(all_delivered_to_the_service, WAIT_S, "the service's batch of every message")
            other = await js.pull_subscribe_bind(FLOOR_CONSUMER, STREAM_NAME)
            delivered_again: list[int] = []
            # What is measured is ack_wait itself: the batch is held this long, then released.
            held_until_s = time.monotonic() + HELD_FOR_ACK_WAITS * ACK_WAIT_S
            for _ in range(10_000):  # bounded; each turn waits at most 0.5 s for a message
                if time.monotonic() >= held_until_s:
                    break
                try:
                    messages = await other.fetch(100, timeout=0.5)
                except TimeoutError:  # nothing delivered to it in that turn
                    continue
                # Not acked: each goes back to the consumer (then to the service) after ack_wait.
                delivered_again += [message.metadata.sequence.stream for message in messages]
            assert service.status.batches == 0, "the batch was held by the lock"
            await locker.commit()  # the lock released: the batch commits

            async def all_on_floor() -> bool:
                return floor_count(floor) >= journal_total(tables)

            # The uplinks again, for what they had not published yet (the rounds' last private parts).
            rest = Running(floor, tables)
            rest.start_uplinks()
            try:
                await wait_until(all_on_floor, WAIT_S, "every entry on the floor")
            finally:
                await rest.close()
            assert not delivered_again, (
                f"{len(set(delivered_again))} of {total} messages delivered again while their batch was "
                f"taken ({len(delivered_again)} deliveries)"
            )
        finally:
            await locker.close()  # the lock released first: a service held by it could not stop
            stop.set()
            if service_task is not None:
                await asyncio.wait_for(service_task, 30)
            await admin.close()

    asyncio.run(scenario())
    assert floor_problems(floor, tables) == []

"""The floor's batch and its consumers' ``max_ack_pending`` are one number (docs/floor.md "Twelfth stop:
the batch of 2,000"): the defaults agree, and a consumer made with another batch size (1000 before the
twelfth stop) is updated in place by the set-up that runs on every start (JetStream's consumer update,
which keeps a consumer's delivered and ack state). A real nats-server and PostgreSQL (make_floor)."""

from __future__ import annotations

import asyncio
import dataclasses

from controller.floor.config import FloorSection
from controller.floor.partition_setup import DEFAULT_LEASE_TTL_S, partition_ack_wait_s
from controller.floor.service_settings import FloorConfig
from controller.floor.stream import MAX_ACK_PENDING, ensure_stream
from controller.floor.workers import ensure_partitions, partition_consumer
from controller.uplink.wire import FLOOR_CONSUMER, STREAM_NAME
from tests.floor.conftest import MakeFloor
from tests.floor.helpers import table_ids

PARTITIONS = 2
OLD_BATCH = 1000  # the consumers' max_ack_pending before the twelfth stop


def test_the_default_batch_is_the_consumers_max_ack_pending() -> None:
    defaults = {field.name: field.default for field in dataclasses.fields(FloorConfig)}
    assert defaults["batch_size"] == MAX_ACK_PENDING
    assert FloorSection.model_fields["batch_size"].default == MAX_ACK_PENDING  # a file without the key


def test_consumers_made_with_another_batch_are_updated_in_place(make_floor: MakeFloor) -> None:
    floor = make_floor(table_ids(1))

    async def scenario() -> None:
        admin = await floor.connect_admin()
        try:
            js = admin.jetstream()
            await ensure_partitions(admin, PARTITIONS, lease_ttl_s=DEFAULT_LEASE_TTL_S)
            names = [FLOOR_CONSUMER] + [partition_consumer(p, PARTITIONS) for p in range(PARTITIONS)]

            async def max_ack_pending() -> list[int | None]:
                return [(await js.consumer_info(STREAM_NAME, name)).config.max_ack_pending for name in names]

            assert await max_ack_pending() == [MAX_ACK_PENDING] * len(names)
            for name in names:  # as a floor set up before the twelfth stop made them
                info = await js.consumer_info(STREAM_NAME, name)
                old = dataclasses.replace(info.config, max_ack_pending=OLD_BATCH)
                await js.add_consumer(STREAM_NAME, old)
            assert await max_ack_pending() == [OLD_BATCH] * len(names)
            await ensure_stream(admin)
            await ensure_partitions(admin, PARTITIONS, lease_ttl_s=DEFAULT_LEASE_TTL_S)
            assert await max_ack_pending() == [MAX_ACK_PENDING] * len(names)
            for name in names[1:]:  # the partitions' ack_wait untouched by the update
                info = await js.consumer_info(STREAM_NAME, name)
                assert info.config.ack_wait == partition_ack_wait_s(DEFAULT_LEASE_TTL_S)
        finally:
            await admin.close()

    asyncio.run(scenario())

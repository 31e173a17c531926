"""The floor's JetStream stream and its durable consumer, set up by the floor's admin user.

The stream keeps every table's subject, on disk, refuses message deletes and purges (``deny_delete``,
``deny_purge``), de-duplicates by ``Nats-Msg-Id`` within ``duplicate_window_s`` and answers direct gets
(the uplinks ask it for their subject's last message). The consumer ``floor`` is durable, pulls, and
needs each message acked (``AckPolicy.EXPLICIT``: an ack never covers a message the floor did not
hold, so a message skipped after a crash comes back); the floor acks only after its PostgreSQL commit.
"""

from __future__ import annotations

import nats.js.errors
from nats.aio.client import Client
from nats.js.api import (
    AckPolicy,
    ConsumerConfig,
    DeliverPolicy,
    DiscardPolicy,
    RetentionPolicy,
    StorageType,
    StreamConfig,
)

from controller.floor.servers import FLOOR_CONSUMER, STREAM_NAME, SUBJECT_ROOT

DEFAULT_DUPLICATE_WINDOW_S = 120.0
ACK_WAIT_S = 30.0
MAX_ACK_PENDING = 1000  # = FloorConfig.batch_size


def stream_config(duplicate_window_s: float = DEFAULT_DUPLICATE_WINDOW_S) -> StreamConfig:
    return StreamConfig(
        name=STREAM_NAME,
        subjects=[f"{SUBJECT_ROOT}.>"],
        retention=RetentionPolicy.LIMITS,
        storage=StorageType.FILE,
        discard=DiscardPolicy.NEW,  # never drop the oldest: a full stream refuses, the uplink retries
        duplicate_window=duplicate_window_s,
        deny_delete=True,
        deny_purge=True,
        allow_direct=True,
        num_replicas=1,
    )


async def ensure_stream(
    admin: Client,
    *,
    duplicate_window_s: float = DEFAULT_DUPLICATE_WINDOW_S,
    ack_wait_s: float = ACK_WAIT_S,
    max_ack_pending: int = MAX_ACK_PENDING,
) -> None:
    """Create or update the stream, and create the floor's consumer when missing. ``max_ack_pending``
    is the floor's batch size: after a crash, nothing newer is delivered before the unacked batch."""
    js = admin.jetstream()
    config = stream_config(duplicate_window_s)
    try:
        await js.stream_info(STREAM_NAME)
    except nats.js.errors.NotFoundError:
        await js.add_stream(config)
    else:
        await js.update_stream(config)
    try:
        await js.consumer_info(STREAM_NAME, FLOOR_CONSUMER)
    except nats.js.errors.NotFoundError:
        await js.add_consumer(
            STREAM_NAME,
            ConsumerConfig(
                durable_name=FLOOR_CONSUMER,
                deliver_policy=DeliverPolicy.ALL,
                ack_policy=AckPolicy.EXPLICIT,  # each message acked after its batch's commit
                ack_wait=ack_wait_s,
                max_ack_pending=max_ack_pending,
                filter_subject=f"{SUBJECT_ROOT}.>",
                max_deliver=-1,
            ),
        )

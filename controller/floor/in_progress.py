"""A batch's deliveries kept in progress while it is taken (docs/floor.md "In-progress acks").

A JetStream consumer redelivers a message not acked within its ``ack_wait`` (6 s for a partition
consumer at the default lease TTL, 30 s for the one-worker floor's): to the same worker's next pull, or,
after a move, to the partition's new holder. A batch that takes longer than that (PostgreSQL slow or a
lock held, a loaded machine) would be delivered again while it is still being written: wasted work at
best (the writes are idempotent by (table, seq)), and a second worker taking the same messages at once.
``+WPI`` (work in progress) to a delivery's reply subject restarts its ``ack_wait``; it is sent for every
delivery of the batch every ``interval_s`` until the batch's commit or rollback, so a batch shorter than
the interval sends nothing."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Sequence

import structlog
from nats.aio.client import Client

__all__ = ["IN_PROGRESS", "kept_in_progress"]

log = structlog.get_logger("flushtable.floor")

IN_PROGRESS = b"+WPI"


async def _keep(client: Client, replies: Sequence[str], interval_s: float) -> None:
    # A timer of the product (each tick restarts the server's ack_wait), not a wait for something.
    while True:
        await asyncio.sleep(interval_s)
        for reply in replies:
            await client.publish(reply, IN_PROGRESS)
        log.info("floor_batch_in_progress", messages=len(replies))


@contextlib.asynccontextmanager
async def kept_in_progress(client: Client, replies: Sequence[str], interval_s: float) -> AsyncIterator[None]:
    """While the block runs, ``+WPI`` to each of ``replies`` every ``interval_s`` (a third of the
    consumer's ``ack_wait`` at most: two may be late on a loaded machine before it runs out)."""
    keeper = asyncio.create_task(_keep(client, [r for r in replies if r], interval_s))
    try:
        yield
    finally:
        keeper.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await keeper

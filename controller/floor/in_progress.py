"""A batch's deliveries kept in progress while it is taken (docs/floor.md "In-progress acks").

A JetStream consumer redelivers a message not acked within its ``ack_wait`` (3 s for a partition
consumer at the default lease TTL: half of it; 30 s for the one-worker floor's): to the same worker's
next pull, or, after a move, to the partition's new holder. A batch that takes longer than that
(PostgreSQL slow or a lock held, a loaded machine) would be delivered again while it is still being
written: wasted work at best (the writes are idempotent by (table, seq)), and a second worker taking the
same messages at once. ``+WPI`` (work in progress) to a delivery's reply subject restarts its
``ack_wait``; it is sent for every delivery of the batch every ``interval_s`` until the batch's commit
or rollback, so a batch shorter than the interval sends nothing.

Never for ever: after ``limit_s`` the keeper stops and the consumer's ``ack_wait`` runs again. A commit
that hangs (a half-open PostgreSQL socket after a database failover, which a lease loop on the same
database cannot see either) would otherwise hold its batch, and with ``max_ack_pending`` equal to the
batch the partition's whole window, from the worker that takes the partition over. A partitioned worker
passes the time after which it stops an unrenewed partition's service (``DROP_AFTER_TTLS`` lease TTLs);
the one-worker floor, ``DEFAULT_LIMIT_S``."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Sequence

import structlog
from nats.aio.client import Client

from controller.floor.intake import FloorClient

__all__ = ["DEFAULT_LIMIT_S", "IN_PROGRESS", "InProgress", "kept_in_progress"]

log = structlog.get_logger("flushtable.floor")

IN_PROGRESS = b"+WPI"
DEFAULT_LIMIT_S = 60.0  # the one-worker floor's bound on one batch's +WPI


class InProgress:
    """The keeper of one batch: ``ended`` is set when it stopped by its limit (the batch not done)."""

    def __init__(self) -> None:
        self.ended = asyncio.Event()


async def _keep(
    client: Client, replies: Sequence[str], interval_s: float, limit_s: float, state: InProgress
) -> None:
    # A timer of the product (each tick restarts the server's ack_wait), not a wait for something. The
    # first interval has passed already (the keeper is started by a timer, below).
    ticks = max(1, int(limit_s / interval_s))  # counted, not read off a clock: a late tick is one tick
    for tick in range(ticks):
        if tick:
            await asyncio.sleep(interval_s)
        if isinstance(client, FloorClient):  # the floor's own: one command for the batch
            await client.publish_to_each(replies, IN_PROGRESS)
        else:
            for reply in replies:
                await client.publish(reply, IN_PROGRESS)
        log.info("floor_batch_in_progress", messages=len(replies))
    log.warning("floor_batch_in_progress_limit", messages=len(replies), limit_s=limit_s)
    state.ended.set()


@contextlib.asynccontextmanager
async def kept_in_progress(
    client: Client, replies: Sequence[str], interval_s: float, limit_s: float = DEFAULT_LIMIT_S
) -> AsyncIterator[InProgress]:
    """While the block runs, ``+WPI`` to each of ``replies`` every ``interval_s`` (a third of the
    consumer's ``ack_wait`` at most: two may be late on a loaded machine before it runs out), for
    ``limit_s`` at most (module doc)."""
    state = InProgress()
    keepers: list[asyncio.Task[None]] = []
    kept = [reply for reply in replies if reply]

    def start() -> None:
        keepers.append(asyncio.create_task(_keep(client, kept, interval_s, limit_s, state)))

    # A task only for a batch still running after the first interval: the usual batch, shorter, costs one
    # timer and no task (this is every batch's path: issue 27's CPU per message).
    timer = asyncio.get_running_loop().call_later(interval_s, start)
    try:
        yield state
    finally:
        timer.cancel()
        for keeper in keepers:
            keeper.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await keeper

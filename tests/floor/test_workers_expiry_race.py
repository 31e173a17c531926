"""A dead worker's lease key expiring in the middle of its taker's create (docs/floor.md "The 11.3 s
takeover"): nats-py's ``KeyValue.create``, refused because the key is there, reads the key to tell a
deleted one from a live one, and raises ``KeyNotFoundError`` when the bucket's TTL removed it between
the two requests. A taker polls the key at the moment it expires, so a run met it: the error ended the
lease loop's connection, and its reconnection excused the dead worker's silence for a new TTL (the
partition moved 11.09 s after the kill, against 5.5-7.9 s in the other runs). Real nats-server (the
bucket) and PostgreSQL (the epochs); the workers' ticks on one injected clock (tests/floor/
test_workers_joining.py); the expiry is the test purging the key's message between create's two
requests, as the TTL removes it."""

from __future__ import annotations

import asyncio

import pytest
from nats.js.kv import KeyValue

from controller.floor.workers import lease_key
from tests.floor.conftest import MakeFloor
from tests.floor.helpers import table_ids
from tests.floor.test_workers_joining import FakeClock, _workers


def test_a_dead_workers_key_expiring_during_the_create_is_taken_in_that_tick(
    make_floor: MakeFloor, monkeypatch: pytest.MonkeyPatch
) -> None:
    """B and A hold one partition each; A dies (ticks no more). B ticks on until it counts A dead and
    tries A's key: the create is refused (the key is there), and the key expires before create's read
    of it. B creates it again in the same tick and holds the partition, at a newer epoch. Before: the
    tick raised ``KeyNotFoundError`` (the lease loop's connection ended, and the reconnection gave the
    dead worker a new TTL)."""
    floor = make_floor(table_ids(2), ack_wait_s=2)
    clock = FakeClock()

    async def scenario() -> None:
        admin = await floor.connect_admin()
        try:
            async with _workers(floor, clock, ["B", "A"]) as (b, a):
                await b.tick()
                clock.now_s += 0.1
                await a.tick()
                (dead_partition,) = a.worker.held
                expired_revisions: list[int] = []
                read_key = b.kv._get  # the create's own read, after its refused write

                async def read_after_the_ttl_removed_it(
                    key: str, revision: int | None = None
                ) -> KeyValue.Entry:
                    if key == lease_key(dead_partition) and not expired_revisions:
                        entry = await read_key(key, revision)
                        assert entry.revision is not None
                        # Gone with no delete marker, as the bucket's TTL (the stream's max age)
                        # removes a key.
                        await admin.jetstream(timeout=10).purge_stream(
                            b.kv._stream, subject=f"{b.kv._pre}{key}"
                        )
                        expired_revisions.append(entry.revision)
                    return await read_key(key, revision)

                monkeypatch.setattr(b.kv, "_get", read_after_the_ttl_removed_it)
                # A is silent from here; B ticks at its own pace until its tick tried A's key.
                for _ in range(40):
                    clock.now_s += b.worker.next_tick_in_s()
                    await b.tick()
                    if expired_revisions:
                        break
                assert expired_revisions, "B never tried the dead worker's key"
                assert dead_partition in b.worker.held
                assert b.worker.held[dead_partition].epoch > expired_revisions[0]
        finally:
            await admin.close()

    asyncio.run(scenario())

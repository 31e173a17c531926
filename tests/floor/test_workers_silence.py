"""A dead worker's silence counted from the earliest its last beat can have moved (controller/floor/
workers.py ``live_workers``; docs/floor.md "The 11.3 s takeover"): the survivor's read of the beats
before the one that saw the last beat move. The dead worker's key expires a TTL after its last renewal,
written with that beat; counted from the read that saw the beat (up to a renew interval later), the
survivor tried the key up to an interval after it expired. Real nats-server (the bucket) and PostgreSQL
(the epochs); the workers' ticks on one injected clock (tests/floor/test_workers_joining.py); the key's
expiry is the test purging it a TTL after the dead worker's last tick, as the bucket's TTL removes it."""

from __future__ import annotations

import asyncio

from controller.floor.partition_setup import SUSPECT_TICK_S
from controller.floor.workers import lease_key
from tests.floor.conftest import MakeFloor
from tests.floor.helpers import table_ids
from tests.floor.test_workers_joining import LEASE_TTL_S, RENEW_INTERVAL_S, FakeClock, _workers


def test_a_dead_workers_partition_is_taken_within_a_short_tick_of_its_keys_expiry(
    make_floor: MakeFloor,
) -> None:
    """B and A tick every renew interval, A a tenth of a second after B; A's last tick follows B's read
    of the beats, then A dies. B sees A's last beat at its next read, a renew interval later; A's key
    expires a TTL after A's last tick. B holds A's partition within a short tick of that expiry. Before:
    B counted A dead a TTL after the read that saw the beat, and took the partition 8.4 s after A's
    last renewal (a renew interval late)."""
    floor = make_floor(table_ids(2), ack_wait_s=2)
    clock = FakeClock()

    async def scenario() -> None:
        admin = await floor.connect_admin()
        try:
            async with _workers(floor, clock, ["B", "A"]) as (b, a):
                start_s = clock.now_s
                # Past the joining TTL, both ticking at the renew interval, each holding one partition.
                while clock.now_s - start_s <= LEASE_TTL_S + RENEW_INTERVAL_S:
                    await b.tick()
                    clock.now_s += 0.1
                    await a.tick()
                    clock.now_s += RENEW_INTERVAL_S - 0.1
                assert len(b.worker.held) == len(a.worker.held) == 1
                (dead_partition,) = a.worker.held
                await b.tick()  # B's read before A's last beat
                clock.now_s += 0.1
                await a.tick()  # A's last renewal and beat; then A is dead
                last_renewal_s = clock.now_s
                purged = False
                clock.now_s += RENEW_INTERVAL_S - 0.1  # B's next tick, which sees A's last beat
                for _ in range(40):
                    if not purged and clock.now_s - last_renewal_s >= LEASE_TTL_S:
                        # A's key removed, as the bucket's TTL (the stream's max age) removes it.
                        await admin.jetstream(timeout=10).purge_stream(
                            b.kv._stream, subject=f"{b.kv._pre}{lease_key(dead_partition)}"
                        )
                        purged = True
                    await b.tick()
                    if dead_partition in b.worker.held:
                        break
                    clock.now_s += b.worker.next_tick_in_s()
                assert dead_partition in b.worker.held
                assert clock.now_s - last_renewal_s <= LEASE_TTL_S + SUSPECT_TICK_S
        finally:
            await admin.close()

    asyncio.run(scenario())

"""A survivor's lease connection lost for a moment excuses a dead peer's silence for that moment only
(controller/floor/workers.py ``_excuse_unwritable_time``; docs/floor.md "Tenth stop"): the peer's silence
counted before the connection was lost is kept, and counting goes on once a beat is written again. Before,
any error that ended the lease loop's connection gave every peer a full TTL from the next beat written,
so a worker that had died before it was taken over a TTL later than its key's expiry. Real nats-server
(the bucket, the connection really closed and made again) and PostgreSQL (the epochs); the workers' ticks
on one injected clock (tests/floor/test_workers_joining.py); the key's expiry is the test purging it a TTL
after the dead worker's last tick, as the bucket's TTL removes it."""

from __future__ import annotations

import asyncio

import nats
import pytest

from controller.floor.partition_setup import (
    LEASE_REQUEST_TIMEOUT_S,
    SUSPECT_TICK_S,
    WorkerSettings,
    excuse_silence,
    way_back_s,
)
from controller.floor.service_settings import FLOOR_IO_ERRORS, floor_nats_options
from controller.floor.workers import lease_key
from controller.uplink.wire import LEASE_BUCKET
from tests.floor.conftest import MakeFloor
from tests.floor.helpers import table_ids
from tests.floor.test_workers_joining import LEASE_TTL_S, RENEW_INTERVAL_S, FakeClock, Ticking, _workers

# How long B's lease connection is lost (by the injected clock), from its last beat written to the next.
UNWRITABLE_S = 2.1
# Where B took A's partition under the rule before the tenth stop (a full TTL from B's next beat).
OLD_RULE_TAKEN_AFTER_S = 10.5


async def _reconnect(ticking: Ticking, name: str) -> None:
    """What the lease loop does after its connection ended: a new connection, its JetStream and bucket."""
    config = ticking.worker.config
    ticking.client = await nats.connect(**floor_nats_options(config, f"test-hiccup-{name}"))
    ticking.js = ticking.client.jetstream(timeout=LEASE_REQUEST_TIMEOUT_S)
    ticking.kv = await ticking.js.key_value(LEASE_BUCKET)


def test_a_lost_lease_connection_delays_a_dead_peers_takeover_by_its_own_length_only(
    make_floor: MakeFloor,
) -> None:
    """B and A hold one partition each. A ticks its last (then is dead); B's next tick sees A's last
    beat; B's tick after that finds its lease connection closed and raises, and B connects again and
    ticks 0.1 s later (the lease bucket unwritable for B for 2.1 s). A's key expires a TTL after A's
    last tick. B holds A's partition within those 2.1 s and a short tick of the expiry. Before: B's
    first beat after the reconnection gave A a full TTL from then, and B took the partition 10.5 s
    after A's last renewal (`assert 10.5 <= ((6.0 + 2.1) + 0.5)`)."""
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
                clock.now_s += RENEW_INTERVAL_S - 0.1
                await b.tick()  # sees A's last beat: B's last beat written before the loss
                clock.now_s += UNWRITABLE_S - 0.1
                await b.client.close()  # B's lease connection ends (its node lost, a reset)
                with pytest.raises(FLOOR_IO_ERRORS):
                    await b.tick()
                clock.now_s += 0.1
                await _reconnect(b, "B")
                back_after_s = clock.now_s - last_renewal_s  # B's next beat is written now
                purged = False
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
                taken_after_s = clock.now_s - last_renewal_s
                # The silence counted before the loss kept, but every peer given a live peer's way
                # back from B's next beat (``way_back_s``: a live A, its own requests lost in the
                # bucket's election, is not counted dead while it reconnects).
                given_s = way_back_s(b.worker.settings, b.worker.config.backoff_max_s)
                assert (
                    taken_after_s <= max(LEASE_TTL_S + UNWRITABLE_S, back_after_s + given_s) + SUSPECT_TICK_S
                )
                assert taken_after_s < OLD_RULE_TAKEN_AFTER_S
        finally:
            await admin.close()

    asyncio.run(scenario())


def test_a_live_peer_still_on_its_way_back_after_the_buckets_election_is_not_counted_dead() -> None:
    """The other side of the rule above, the sequence a review found (default settings: TTL 6 s, renew
    interval 2 s, backoff at most 5 s). W read P's beat moving at 4.0, counted from its read before
    (2.0), and at worst from the one before that (0.0); W's last beat written was at 4.0. The bucket's
    leader's node was lost at 4.5 and the bucket elected for 9 s: W beats again at 13.6. P, alive, had a
    request in flight when the election ended; never answered, it times out 1.5 s later, P reconnects
    after its backoff (up to its renew interval) and beats at its next tick. The silence counted before
    kept whole (s40-floor-gaps' rule), P was counted dead at 13.6 + 6 - (13.6 - 0.0 - 9.6) = 15.6,
    before it could be back: W would have taken its lapsed keys from under it. Now every peer is given
    ``way_back_s`` (5.5 s here) from W's beat: live until 19.1."""
    settings = WorkerSettings("W", 2, lease_ttl_s=6.0, renew_interval_s=2.0)
    back_s = way_back_s(settings, backoff_max_s=5.0)
    assert back_s == 2.0 + LEASE_REQUEST_TIMEOUT_S + 2.0
    for counted_from_s in (2.0, 0.0):
        beats = {"P": (7, 4.0), "W": (9, 4.0)}
        moved_after = {"P": counted_from_s, "W": 4.0}
        now_s, last_written_s = 13.6, 4.0
        excuse_silence(
            beats,
            moved_after,
            "W",
            now_s,
            now_s - last_written_s,
            earliest_s=now_s - settings.lease_ttl_s + back_s,
        )
        dead_at_s = moved_after["P"] + settings.lease_ttl_s
        assert dead_at_s >= now_s + back_s, counted_from_s
        assert moved_after["W"] == 4.0  # the worker's own entry is not touched

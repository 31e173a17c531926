"""Workers started together share the partitions from their first ticks (controller/floor/workers.py
"Joining"; docs/floor.md "Ninth stop"): a joining worker's first take is of one partition, and for its
first lease TTL it ticks every ``SUSPECT_TICK_S``, so a partition it took before its peer appeared is
given back, and taken by the peer, within short ticks. Real nats-server (the lease bucket) and
PostgreSQL (the epochs); the workers' ticks called one after another, on one injected clock, so the
order of the two workers' reads and writes is the test's, not the machine's."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass

import nats
import psycopg
from nats.aio.client import Client
from nats.js.client import JetStreamContext
from nats.js.kv import KeyValue

from controller.floor.partition_setup import LEASE_REQUEST_TIMEOUT_S, SUSPECT_TICK_S
from controller.floor.service_settings import floor_nats_options
from controller.floor.store import Connection
from controller.floor.workers import FloorWorker, WorkerSettings, ensure_partitions
from controller.simulation.floor.embedded import EmbeddedFloor
from controller.uplink.wire import LEASE_BUCKET
from tests.floor.conftest import MakeFloor
from tests.floor.helpers import table_ids

PARTITIONS = 2
LEASE_TTL_S = 6.0
RENEW_INTERVAL_S = LEASE_TTL_S / 3


@dataclass
class FakeClock:
    """The workers' monotonic clock, moved by the test."""

    now_s: float = 1000.0

    def __call__(self) -> float:
        return self.now_s


@dataclass
class Ticking:
    """A worker and what its lease loop would hold: a NATS connection, the bucket, PostgreSQL."""

    worker: FloorWorker
    client: Client
    js: JetStreamContext
    kv: KeyValue
    connection: Connection

    async def tick(self) -> None:
        await self.worker.tick(self.kv, self.js, self.connection)


@contextlib.asynccontextmanager
async def _workers(floor: EmbeddedFloor, clock: FakeClock, names: list[str]) -> AsyncIterator[list[Ticking]]:
    admin = await floor.connect_admin()
    try:
        await ensure_partitions(admin, PARTITIONS, lease_ttl_s=LEASE_TTL_S, ack_wait_s=floor.ack_wait_s)
    finally:
        await admin.close()
    config = floor.floor_config(backoff_max_s=1.0)
    ticking: list[Ticking] = []
    try:
        for name in names:
            worker = FloorWorker(
                config,
                WorkerSettings(name, PARTITIONS, lease_ttl_s=LEASE_TTL_S, renew_interval_s=RENEW_INTERVAL_S),
                clock=clock,
            )
            client = await nats.connect(**floor_nats_options(config, f"test-joining-{name}"))
            js = client.jetstream(timeout=LEASE_REQUEST_TIMEOUT_S)
            connection = await psycopg.AsyncConnection.connect(config.dsn, autocommit=True)
            ticking.append(Ticking(worker, client, js, await js.key_value(LEASE_BUCKET), connection))
        yield ticking
    finally:
        for each in ticking:
            await each.worker._release_all()
            await each.worker.services.await_stopped()
            await each.connection.close()
            await each.client.close()


def test_workers_started_together_take_one_partition_each(make_floor: MakeFloor) -> None:
    """B ticks first and sees nobody; A's first tick follows. Each holds one partition after its first
    tick, and B's next tick keeps its one. Before: B's first tick took both (its share alone), and A
    held none until B's next tick gave one back and A's took it (``assert 2 == 1``)."""
    floor = make_floor(table_ids(2), ack_wait_s=2)
    clock = FakeClock()

    async def scenario() -> None:
        async with _workers(floor, clock, ["B", "A"]) as (b, a):
            await b.tick()
            assert len(b.worker.held) == 1
            clock.now_s += 0.1  # A started a tenth of a second after B
            await a.tick()
            assert len(a.worker.held) == 1
            assert set(a.worker.held).isdisjoint(b.worker.held)
            clock.now_s += b.worker.next_tick_in_s()
            await b.tick()
            assert (len(b.worker.held), b.worker.status.released) == (1, 0)

    asyncio.run(scenario())


def test_a_partition_taken_before_the_peer_appeared_moves_to_it_within_short_ticks(
    make_floor: MakeFloor,
) -> None:
    """B alone takes both partitions (its first tick one, its next the other: nobody else beats). A
    starts: its first tick finds none free. B, still joining, ticks again SUSPECT_TICK_S later, sees A
    and gives one back; A, joining, ticks SUSPECT_TICK_S later and takes it. Before: each worker's
    next tick was a renew interval away (``assert 2.0 == 0.5``), the partition moved up to two renew
    intervals after A's start."""
    floor = make_floor(table_ids(2), ack_wait_s=2)
    clock = FakeClock()

    async def scenario() -> None:
        async with _workers(floor, clock, ["B", "A"]) as (b, a):
            await b.tick()
            clock.now_s += b.worker.next_tick_in_s()
            await b.tick()
            assert len(b.worker.held) == PARTITIONS  # alone: its share is every partition
            await a.tick()
            assert not a.worker.held  # none free
            assert b.worker.next_tick_in_s() == SUSPECT_TICK_S
            assert a.worker.next_tick_in_s() == SUSPECT_TICK_S
            clock.now_s += SUSPECT_TICK_S
            await b.tick()
            assert (len(b.worker.held), b.worker.status.released) == (1, 1)
            await a.tick()
            assert len(a.worker.held) == 1
            assert set(a.worker.held).isdisjoint(b.worker.held)
            # Past the lease TTL from their start, both tick at the renew interval again.
            clock.now_s += LEASE_TTL_S
            for each in (b, a):
                await each.tick()
            assert b.worker.next_tick_in_s() == a.worker.next_tick_in_s() == RENEW_INTERVAL_S

    asyncio.run(scenario())

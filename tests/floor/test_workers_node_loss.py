"""A node's loss moves no partition off a live worker (docs/floor.md "The lease loop through a node's
loss"): on the three-node cluster, the node leading the ``floor_leases`` bucket SIGKILLed; the bucket
has no leader for nats-server's raft election (4-9 s) and nobody can write it, no renewal and no beat.
The lease TTL here is 3 s, so every key and the workers' beats lapse in the election whatever its
draw: the case the 1,000-table run met by chance at the default 6 s (the other worker's leases lapsed,
and the killed worker took both partitions). Real nats-server cluster and PostgreSQL; the two workers
in-process (their services, held leases and counters read directly)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from controller.floor.workers import FloorWorker, WorkerSettings, ensure_partitions
from controller.simulation.floor.embedded import EmbeddedFloor
from controller.uplink.wire import LEASE_BUCKET
from tests.floor.conftest import MakeFloor
from tests.floor.helpers import Running, Tables, table_ids, wait_until
from tests.floor.test_workers import _leases

PARTITIONS = 2
# Below the election's 4 s least: every key lapses while the bucket has no leader (the test's point).
LEASE_TTL_S = 3.0
SETTLE_TIMEOUT_S = 60.0


async def _bucket_leader(floor: EmbeddedFloor) -> int | None:
    """The node (0-based) leading the lease bucket's stream, or None while it has no leader."""
    admin = await floor.connect_admin()
    try:
        info = await admin.jetstream(timeout=2).stream_info(f"KV_{LEASE_BUCKET}")
    except TimeoutError:
        return None
    finally:
        await admin.close()
    leader = info.cluster.leader if info.cluster is not None else None
    return int(leader.rsplit("n", 1)[1]) - 1 if leader else None  # flushtable-n<i>


def test_the_lease_buckets_leader_killed_moves_no_partition(tmp_path: Path, make_floor: MakeFloor) -> None:
    """Two workers hold one partition each. The bucket's leader node SIGKILLed; once the bucket has a
    new leader and both workers have renewed through it, each worker still holds its partition, with
    the same service task running (not stopped and started again), nothing lost or released, and
    PostgreSQL names the same worker for each partition. Before the fix the first worker to beat after
    the election counted the other dead (its beat older than the TTL: nobody could write one) and took
    its lapsed key: "partition 1 moved from B to A"."""
    ids = table_ids(2)
    floor = make_floor(ids, ack_wait_s=2, nodes=3)
    assert floor.cluster is not None
    cluster = floor.cluster
    tables = Tables(tmp_path / "tables", ids)

    async def scenario() -> None:
        admin = await floor.connect_admin()
        try:
            await ensure_partitions(admin, PARTITIONS, lease_ttl_s=LEASE_TTL_S, replicas=3, ack_wait_s=1.5)
        finally:
            await admin.close()
        running = Running(floor, tables)
        workers = {
            name: FloorWorker(
                floor.floor_config(backoff_max_s=1.0),
                WorkerSettings(name, PARTITIONS, lease_ttl_s=LEASE_TTL_S, renew_interval_s=LEASE_TTL_S / 3),
            )
            for name in ("A", "B")
        }
        running.tasks.extend(asyncio.create_task(w.run(running.stop)) for w in workers.values())
        killed: int | None = None
        try:

            async def shared() -> bool:
                leases = _leases(floor)
                # Each worker has seen the other's beat (the steady state a node's loss meets).
                return (
                    all(len(w.held) == 1 and w.live_workers() == {"A", "B"} for w in workers.values())
                    and len(leases) == PARTITIONS
                    and {w for w, _ in leases.values()} == {"A", "B"}
                )

            await wait_until(shared, SETTLE_TIMEOUT_S, "the two workers holding a partition each")
            holders = {p: worker for p, (worker, _) in _leases(floor).items()}
            services = {name: {p: h.task for p, h in w.held.items()} for name, w in workers.items()}
            # Counted from here: at the start one worker may take both partitions before the other's first
            # beat and give one back (a balance, before any node is killed: not what this test is about).
            before = {name: (w.status.lost, w.status.released) for name, w in workers.items()}
            leader = await _bucket_leader(floor)
            assert leader is not None
            cluster.kill(leader)
            killed = leader

            async def new_leader() -> bool:
                return (await _bucket_leader(floor)) not in (None, leader)

            await wait_until(new_leader, SETTLE_TIMEOUT_S, "the lease bucket's new leader")
            elected_s = time.monotonic()  # the workers' clock (time.monotonic)

            async def renewed_through_it() -> bool:
                # Every worker renewed after the election and ticked twice since: any move would be made.
                return all(
                    w.held and all(h.renewed_s > elected_s for h in w.held.values()) for w in workers.values()
                ) or any(w.status.lost or w.status.released for w in workers.values())

            await wait_until(renewed_through_it, SETTLE_TIMEOUT_S, "both workers renewing after the election")
            ticks = {name: w.status.ticks for name, w in workers.items()}

            async def ticked_twice() -> bool:
                return all(w.status.ticks >= ticks[name] + 2 for name, w in workers.items())

            await wait_until(ticked_twice, SETTLE_TIMEOUT_S, "two more ticks of each worker")
            now_held = {p: worker for p, (worker, _) in _leases(floor).items()}
            moved = [f"partition {p} moved from {holders[p]} to {now_held.get(p)}" for p in holders
                     if now_held.get(p) != holders[p]]  # fmt: skip
            assert moved == []
            for name, worker in workers.items():
                assert (worker.status.lost, worker.status.released) == before[name], name
                assert {p: h.task for p, h in worker.held.items()} == services[name], (
                    f"worker {name}'s partitions or services changed"
                )
                assert not any(h.task.done() for h in worker.held.values())
        finally:
            await running.close()
            if killed is not None:
                cluster.start_node(killed)

    asyncio.run(scenario())
    tables.close()

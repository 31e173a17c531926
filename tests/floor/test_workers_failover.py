"""A lease the bucket let expire while its worker lived (docs/floor.md "Partitioned floor workers": the
bucket's leader lost with its node, an election of 4-9 s against a 6 s TTL, no renewal written) is taken
again in place: the key made anew, PostgreSQL's epoch moved from the worker's own, the partition's
service kept running, not stopped and started again from nothing. Real nats-server and PostgreSQL; the
expiry is the test deleting the key (what the bucket's TTL does to it), the worker in-process."""

from __future__ import annotations

import asyncio
from pathlib import Path

from controller.floor.workers import FloorWorker, WorkerSettings, lease_key
from controller.uplink.wire import LEASE_BUCKET
from tests.floor.conftest import MakeFloor
from tests.floor.helpers import Running, Tables, floor_problems, table_ids, wait_until
from tests.floor.test_failures import CATCH_UP_TIMEOUT_S, _all_on_floor, _play_all
from tests.floor.test_workers import LEASE_TTL_S, PARTITIONS, _ensure_partitions, _leases


def test_a_lease_expired_under_its_live_worker_is_taken_again_in_place(
    tmp_path: Path, make_floor: MakeFloor
) -> None:
    """One worker holds every partition; partition 0's key disappears from the bucket (as the TTL removes
    it when no renewal could be written). At its next tick the worker finds its renewal refused, creates
    the key again and moves PostgreSQL's epoch from its own to the new one: the same service task runs
    on (before: "the service of partition 0 was started again": stopped at the lost lease, a new one
    started at the next acquisition), fenced by neither epoch; the tables play on and every entry is on
    the floor once, every chain verified."""
    ids = table_ids(4)
    floor = make_floor(ids, ack_wait_s=2)
    tables = Tables(tmp_path / "tables", ids)
    for table_id in ids:
        tables.play(table_id, 1)

    async def scenario() -> None:
        await _ensure_partitions(floor)
        running = Running(floor, tables)
        worker = FloorWorker(
            floor.floor_config(backoff_max_s=1.0),
            WorkerSettings("A", PARTITIONS, lease_ttl_s=LEASE_TTL_S, renew_interval_s=LEASE_TTL_S / 3),
        )
        running.tasks.append(asyncio.create_task(worker.run(running.stop)))
        running.start_uplinks()
        admin = await floor.connect_admin()
        try:

            async def holds_all() -> bool:
                return len(worker.held) == PARTITIONS and len(_leases(floor)) == PARTITIONS

            await wait_until(holds_all, CATCH_UP_TIMEOUT_S, "the worker holding every partition")
            service_task = worker.held[0].task
            epoch_before = _leases(floor)[0][1]
            kv = await admin.jetstream(timeout=10).key_value(LEASE_BUCKET)
            await kv.delete(lease_key(0))  # gone, as the bucket's TTL removes an unrenewed key

            async def epoch_moved() -> bool:
                return _leases(floor)[0][1] > epoch_before

            await wait_until(epoch_moved, CATCH_UP_TIMEOUT_S, "partition 0's epoch moved")
            assert _leases(floor)[0][0] == "A"
            assert worker.held[0].task is service_task, "the service of partition 0 was started again"
            assert not service_task.done(), "the service of partition 0 ended"
            await asyncio.to_thread(_play_all, tables, running, 1, asyncio.get_running_loop())
            await _all_on_floor(floor, tables, CATCH_UP_TIMEOUT_S)
            assert worker.held[0].task is service_task
            assert not worker.held[0].service.fenced
        finally:
            await admin.close()
            await running.close()

    asyncio.run(scenario())
    assert floor_problems(floor, tables) == []
    tables.close()

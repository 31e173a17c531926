"""Partitioned floor workers (controller/floor/workers.py; docs/floor.md "Partitioned floor workers"):
two workers share the partitions and every entry is on the floor exactly once; a stale worker (its
lease's epoch superseded in PostgreSQL) is refused at its commit; a worker SIGKILLed mid-stream (and a
NATS node of the three-node cluster with it) loses nothing and doubles nothing, the partitions moving to
the live worker within the lease's bound."""

from __future__ import annotations

import asyncio
import dataclasses
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psycopg
import pytest
from nats.aio.client import Client
from structlog.testing import capture_logs

from controller.floor.config import write_floor_config
from controller.floor.epochs import renew_epochs
from controller.floor.service import FloorService
from controller.floor.stream import ACK_WAIT_S
from controller.floor.workers import (
    FloorWorker,
    LeaseTtlMismatch,
    PartitionsMismatch,
    WorkerSettings,
    check_bucket_ttl,
    claim_epoch,
    ensure_partitions,
    fence_for,
    partition_consumer,
    partition_of,
    refuse_live_workers,
)
from controller.simulation.floor.embedded import EmbeddedFloor
from controller.uplink.wire import LEASE_BUCKET, STREAM_NAME
from tests.floor.conftest import MakeFloor
from tests.floor.helpers import (
    Running,
    Tables,
    floor_count,
    floor_problems,
    last_seq,
    table_ids,
    tables_for_child_service,
    wait_until,
)
from tests.floor.test_failures import CATCH_UP_TIMEOUT_S, _all_on_floor, _play_all
from tests.floor.test_partition_filters import _published

PARTITIONS = 4
LEASE_TTL_S = 6.0


async def _ensure_partitions(floor: EmbeddedFloor, partitions: int = PARTITIONS) -> None:
    admin = await floor.connect_admin()
    try:
        await ensure_partitions(
            admin,
            partitions,
            lease_ttl_s=LEASE_TTL_S,
            replicas=min(floor.nodes, 3),
            ack_wait_s=floor.ack_wait_s,
        )
    finally:
        await admin.close()


def _leases(floor: EmbeddedFloor) -> dict[int, tuple[str, int]]:
    """partition -> (worker, epoch), as PostgreSQL holds them."""
    with psycopg.connect(floor.reporting_dsn) as connection:
        rows = connection.execute("SELECT partition, worker, epoch FROM floor_partition_leases").fetchall()
    return {int(p): (str(w), int(e)) for p, w, e in rows}


def _entries_of(floor: EmbeddedFloor, table_ids: list[str]) -> int:
    with psycopg.connect(floor.reporting_dsn) as connection:
        row = connection.execute(
            "SELECT count(*) FROM floor_entries WHERE table_id = ANY(%s)", (table_ids,)
        ).fetchone()
    return int(row[0]) if row else 0


def test_a_stale_worker_is_refused_at_its_commit(tmp_path: Path, make_floor: MakeFloor) -> None:
    """Worker A took partition p at epoch 5; worker B took it over at epoch 9 (A paused: it never heard).
    A's service, still running, pulls the partition's messages and tries to commit them: PostgreSQL's
    check in the same transaction refuses it, nothing of A's is on the floor, and A's service ends
    (``fenced``). B's service, at the newest epoch, then commits every entry exactly once."""
    ids = table_ids(6)
    floor = make_floor(ids, ack_wait_s=2)
    tables = Tables(tmp_path / "tables", ids)
    for table_id in ids:
        tables.play(table_id, 2)
    partition = partition_of(ids[0], PARTITIONS)
    mine = [t for t in ids if partition_of(t, PARTITIONS) == partition]

    async def scenario() -> None:
        async with await psycopg.AsyncConnection.connect(floor.writer_dsn, autocommit=True) as connection:
            assert await claim_epoch(connection, partition, PARTITIONS, 5, "A")
            assert await claim_epoch(connection, partition, PARTITIONS, 9, "B")
            assert not await claim_epoch(connection, partition, PARTITIONS, 7, "A")  # never backwards
        running = Running(floor, tables)
        running.start_uplinks()
        # The services here run without a worker (which would add tables to its partition's consumer as
        # they come): the consumers are made once the tables' subjects are in the stream.
        await _published(floor, tables, ids)
        await _ensure_partitions(floor)
        config = dataclasses.replace(
            floor.floor_config(backoff_max_s=1.0), consumer=partition_consumer(partition, PARTITIONS)
        )

        def owns(table_id: str) -> bool:
            return partition_of(table_id, PARTITIONS) == partition

        stale = FloorService(config, owns=owns, fence=fence_for(partition, 5))
        stale_task = asyncio.create_task(stale.run(running.stop))

        async def tried() -> bool:  # refused, or (without the fence) committed
            return stale.fenced or stale.status.batches > 0

        await wait_until(tried, CATCH_UP_TIMEOUT_S, "the stale worker trying to commit")
        assert stale.status.batches == 0, "a worker that lost its lease committed"
        assert stale.fenced
        await asyncio.wait_for(stale_task, 30)  # it ended by itself
        assert _entries_of(floor, mine) == 0
        live = FloorService(config, owns=owns, fence=fence_for(partition, 9))
        running.tasks.append(asyncio.create_task(live.run(running.stop)))

        async def all_of_partition() -> bool:
            return _entries_of(floor, mine) == sum(last_seq(tables.journals[t]) for t in mine)

        await wait_until(all_of_partition, CATCH_UP_TIMEOUT_S, "the live worker's commits")
        assert not live.fenced
        assert floor_count(floor) == _entries_of(floor, mine)  # the other partitions are not this one's
        await running.close()

    asyncio.run(scenario())
    problems = floor_problems(floor, {t: tables.path(t) for t in mine})
    assert problems == []
    tables.close()


def test_two_workers_share_the_partitions_and_every_entry_is_on_the_floor_once(
    tmp_path: Path, make_floor: MakeFloor
) -> None:
    ids = table_ids(8)
    floor = make_floor(ids, ack_wait_s=2)
    tables = Tables(tmp_path / "tables", ids)
    for table_id in ids:
        tables.play(table_id, 1)

    async def scenario() -> None:
        await _ensure_partitions(floor)
        running = Running(floor, tables)
        workers = [
            FloorWorker(
                floor.floor_config(backoff_max_s=1.0),
                WorkerSettings(name, PARTITIONS, lease_ttl_s=LEASE_TTL_S, renew_interval_s=LEASE_TTL_S / 3),
            )
            for name in ("A", "B")
        ]
        running.tasks += [asyncio.create_task(worker.run(running.stop)) for worker in workers]
        running.start_uplinks()

        async def shared() -> bool:
            leases = _leases(floor)
            return len(leases) == PARTITIONS and {w for w, _ in leases.values()} == {"A", "B"}

        await wait_until(shared, CATCH_UP_TIMEOUT_S, "the two workers holding two partitions each")
        held = [set(worker.held) for worker in workers]
        assert held[0].isdisjoint(held[1])
        # A round each: the uplinks (one process, one message at a time) bound the pace, ~50 entries/s here.
        await asyncio.to_thread(_play_all, tables, running, 1, asyncio.get_running_loop())
        await _all_on_floor(floor, tables, CATCH_UP_TIMEOUT_S)
        assert all(not h.service.fenced for worker in workers for h in worker.held.values())
        await running.close()
        # A clean stop gives the leases back (the keys deleted: the others take them at once).
        assert all(not worker.held for worker in workers)

    asyncio.run(scenario())
    assert floor_problems(floor, tables) == []
    tables.close()


def test_a_worker_and_a_node_killed_mid_stream_then_both_restarted(
    tmp_path: Path, make_floor: MakeFloor
) -> None:
    """Two workers (`flushtable floor serve --worker`, child processes) on the three-node cluster. Worker
    A SIGKILLed mid-stream: B holds every partition within the lease's bound (the gap printed); then a
    NATS node SIGKILLed too; both restarted: every entry on the floor exactly once, every chain verified."""
    ids = table_ids(8)
    floor = make_floor(ids, ack_wait_s=2, nodes=3)
    assert floor.cluster is not None
    cluster = floor.cluster
    tables, config_path, env = tables_for_child_service(tmp_path, floor, ids, rounds=1)
    settings = WorkerSettings("B", PARTITIONS, lease_ttl_s=LEASE_TTL_S, renew_interval_s=LEASE_TTL_S / 3)

    def worker(name: str) -> subprocess.Popen[bytes]:
        command = [sys.executable, "-m", "controller.cli", "floor", "serve", "--config", str(config_path),
                   "--worker", name, "--partitions", str(PARTITIONS),
                   "--lease-ttl", str(LEASE_TTL_S)]  # fmt: skip
        # Each worker's log kept beside the test's files: a failure's report names where to read it.
        with (tmp_path / f"worker-{name}-{time.monotonic_ns()}.log").open("wb") as log:
            return subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)

    async def scenario() -> None:
        await _ensure_partitions(floor)
        running = Running(floor, tables)
        running.start_uplinks(backoff_max_s=1.0)
        a, b = worker("A"), worker("B")
        try:

            async def shared() -> bool:
                return {w for w, _ in _leases(floor).values()} == {"A", "B"} and len(
                    _leases(floor)
                ) == PARTITIONS

            await wait_until(shared, CATCH_UP_TIMEOUT_S, "the two workers sharing the partitions")
            playing = asyncio.create_task(
                asyncio.to_thread(_play_all, tables, running, 2, asyncio.get_running_loop())
            )
            before = floor_count(floor)

            async def moving() -> bool:
                return floor_count(floor) > before + 50

            await wait_until(moving, CATCH_UP_TIMEOUT_S, "the workers committing mid-stream")
            a.send_signal(signal.SIGKILL)
            a.wait(timeout=10)
            killed_s = time.monotonic()

            async def b_holds_all() -> bool:
                leases = _leases(floor)
                return len(leases) == PARTITIONS and all(w == "B" for w, _ in leases.values())

            await wait_until(b_holds_all, CATCH_UP_TIMEOUT_S, "worker B holding every partition")
            gap_s = time.monotonic() - killed_s
            # Stated, not asserted (a loaded machine stretches it): the bound is the lease's.
            print(f"partitions moved {gap_s:.1f} s after the kill (bound {settings.takeover_bound_s:.1f} s)")
            cluster.kill(2)
            await playing
            at_kill = floor_count(floor)
            # A round more, played after the kill: B's commits with the node down are then certain to
            # exist. Without it, on a slow machine B had caught up on the whole backlog before the kill
            # and the wait below could never end (CI, stop 36).
            await asyncio.to_thread(_play_all, tables, running, 1, asyncio.get_running_loop())

            async def moving_without_node() -> bool:
                return floor_count(floor) > at_kill

            await wait_until(moving_without_node, CATCH_UP_TIMEOUT_S, "B committing with a node down")
            cluster.start_node(2)
            a = worker("A")
            for uplink in running.uplinks.values():
                uplink.notify()
            await _all_on_floor(floor, tables, CATCH_UP_TIMEOUT_S)
            await wait_until(shared, CATCH_UP_TIMEOUT_S, "A back, the partitions shared again")
        finally:
            for process in (a, b):
                process.terminate()
            for process in (a, b):
                try:
                    process.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait(timeout=10)
            await running.close()

    try:
        asyncio.run(scenario())
    except AssertionError:
        for log_path in sorted(tmp_path.glob("worker-*.log")):  # pytest shows this beside the failure
            print(f"--- {log_path.name}, its last lines:")
            print("\n".join(log_path.read_text(errors="replace").splitlines()[-40:]))
        raise
    assert floor_problems(floor, tables) == []
    tables.close()


def test_workers_of_another_partition_count_and_a_one_worker_floor_are_refused(
    tmp_path: Path, make_floor: MakeFloor
) -> None:
    """A live worker holds a partition of 4: a worker started with --partitions 2 is refused at its
    claim (one line, naming the live worker and both counts), and so is `flushtable floor serve`
    without --worker (exit 2, one line). Once that lease's renewal is older than the TTL (the worker
    gone) the other count's claim is taken."""
    floor = make_floor(table_ids(1))
    config_path = write_floor_config(tmp_path / "floor-config", floor.floor_config())

    async def scenario() -> None:
        async with await psycopg.AsyncConnection.connect(floor.writer_dsn, autocommit=True) as connection:
            assert await claim_epoch(connection, 0, PARTITIONS, 5, "A", lease_ttl_s=LEASE_TTL_S)
            assert await claim_epoch(connection, 1, PARTITIONS, 6, "C", lease_ttl_s=LEASE_TTL_S)  # alike
            with pytest.raises(PartitionsMismatch) as refused:
                await claim_epoch(connection, 0, 2, 7, "B", lease_ttl_s=LEASE_TTL_S)
            assert "\n" not in str(refused.value)
            assert f"of {PARTITIONS} (renewed" in str(refused.value)
            assert "--partitions 2" in str(refused.value)
            assert _leases(floor)[0] == ("A", 5)  # nothing written by the refused claim
            done = await asyncio.to_thread(
                subprocess.run,
                [sys.executable, "-m", "controller.cli", "floor", "serve", "--config", str(config_path)],
                env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
                capture_output=True,
                text=True,
                timeout=120,
                check=False,
            )
            assert done.returncode == 2, done.stderr
            (line,) = done.stderr.strip().splitlines()[-1:]
            assert "a one-worker floor serve starts only when no partition's lease" in line
            assert "Traceback" not in done.stderr
            # The workers of 4 gone: their renewals older than any TTL, the claim of 2 is taken.
            await connection.execute(
                "UPDATE floor_partition_leases SET renewed_utc = renewed_utc - interval '1 hour'"
            )
            assert await claim_epoch(connection, 0, 2, 7, "B", lease_ttl_s=LEASE_TTL_S)
            await connection.execute(
                "UPDATE floor_partition_leases SET renewed_utc = renewed_utc - interval '1 hour'"
            )
            await refuse_live_workers(connection)  # nothing live: the one-worker floor may start

    asyncio.run(scenario())


# How a worker of the release before migration 13 claimed a lease (its partition hash unrecorded): the
# statement of its claim_epoch, as it ran it.
EARLIER_RELEASES_CLAIM = (
    "INSERT INTO floor_partition_leases (partition, partitions, epoch, worker) VALUES (%s, %s, %s, %s) "
    "ON CONFLICT (partition) DO UPDATE SET partitions = EXCLUDED.partitions, epoch = EXCLUDED.epoch, "
    "worker = EXCLUDED.worker, acquired_utc = clock_timestamp(), renewed_utc = clock_timestamp() "
    "WHERE floor_partition_leases.epoch < EXCLUDED.epoch RETURNING epoch"
)


def test_a_worker_of_another_partition_hash_is_refused_while_a_lease_of_it_is_live(
    tmp_path: Path, make_floor: MakeFloor
) -> None:
    """A worker of an earlier release (CRC-32's partitions, its hash not recorded) holds partition 0 of
    4, live (its renewal set an hour ahead, once: live however long the child takes to start): a worker
    of this release is refused at its claim (one line, naming both hashes), and `flushtable floor serve
    --worker` exits 2 with that line. Once the lease's renewal is older than
    the TTL the claim is taken and records FNV-1a with its epoch; the earlier release's worker claiming
    a partition again (its own statement) makes that lease's hash unknown again: refused again."""
    floor = make_floor(table_ids(1))
    config_path = write_floor_config(tmp_path / "floor-config", floor.floor_config())
    asyncio.run(_ensure_partitions(floor))

    async def scenario() -> None:
        async with await psycopg.AsyncConnection.connect(floor.writer_dsn, autocommit=True) as connection:
            await connection.execute(EARLIER_RELEASES_CLAIM, (0, PARTITIONS, 5, "old"))
            with pytest.raises(PartitionsMismatch) as refused:
                await claim_epoch(connection, 1, PARTITIONS, 6, "B", lease_ttl_s=LEASE_TTL_S)
            line = str(refused.value)
            assert "\n" not in line
            assert "worker old holds partition 0 of 4" in line
            assert "under partition hash not recorded" in line
            assert "this worker's is fnv1a-32" in line
            assert _leases(floor) == {0: ("old", 5)}  # nothing written by the refused claim
            # The earlier release's worker live for as long as the child takes to start, however loaded
            # the machine: its renewal set an hour ahead, once (no renewal loop racing the TTL).
            await connection.execute(
                "UPDATE floor_partition_leases SET renewed_utc = clock_timestamp() + interval '1 hour' "
                "WHERE worker = 'old'"
            )
            done = await asyncio.to_thread(
                subprocess.run,
                [sys.executable, "-m", "controller.cli", "floor", "serve", "--config", str(config_path),
                 "--worker", "B", "--partitions", str(PARTITIONS), "--lease-ttl", str(LEASE_TTL_S)],
                env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
                capture_output=True, text=True, timeout=120, check=False,
            )  # fmt: skip
            assert done.returncode == 2, done.stderr[-2000:]
            assert "Traceback" not in done.stderr
            (last,) = done.stderr.strip().splitlines()[-1:]
            assert "under partition hash not recorded" in last, last
            assert set(_leases(floor)) == {0}, "the refused worker holds no lease"
            # The earlier release's worker gone: its renewal older than any TTL, the claim is taken.
            await connection.execute(
                "UPDATE floor_partition_leases SET renewed_utc = clock_timestamp() - interval '1 hour'"
            )
            assert await claim_epoch(connection, 1, PARTITIONS, 6, "B", lease_ttl_s=LEASE_TTL_S)
            row = await (
                await connection.execute(
                    "SELECT partition_hash, partition_hash_epoch FROM floor_partition_leases "
                    "WHERE partition = 1"
                )
            ).fetchone()
            assert row == ("fnv1a-32", 6)
            assert await claim_epoch(connection, 2, PARTITIONS, 7, "B", lease_ttl_s=LEASE_TTL_S)  # alike
            # An earlier release's worker takes partition 1 (a newer epoch): its hash is unknown again.
            await connection.execute(EARLIER_RELEASES_CLAIM, (1, PARTITIONS, 9, "old"))
            with pytest.raises(PartitionsMismatch, match="worker old holds partition 1 of 4"):
                await claim_epoch(connection, 3, PARTITIONS, 10, "B", lease_ttl_s=LEASE_TTL_S)
            # A lease recorded under another hash (a later release's) is refused too, naming it.
            await connection.execute(
                "UPDATE floor_partition_leases SET partition_hash = 'xxh3-64', partition_hash_epoch = epoch "
                "WHERE partition = 1"
            )
            with pytest.raises(PartitionsMismatch, match="under partition hash xxh3-64, this worker's is"):
                await claim_epoch(connection, 3, PARTITIONS, 10, "B", lease_ttl_s=LEASE_TTL_S)

    asyncio.run(scenario())


RENEWED_SQL = "SELECT renewed_utc FROM floor_partition_leases WHERE partition = 1"


def test_a_running_workers_renewal_is_refused_once_a_lease_of_another_hash_is_live(
    make_floor: MakeFloor,
) -> None:
    """The hash check at each renewal too (``renew_epochs``), not only at a claim: a worker of this
    release holds partition 1 and renews it; an earlier release's worker claims partition 0 beside it
    (its own statement: its hash not recorded). The next renewal is refused in one line, writing
    nothing (the worker's tick raises it: the worker ends as at a refused claim). Once that lease is
    older than the TTL the renewal goes through. Before: `DID NOT RAISE PartitionsMismatch` (the
    running worker went on folding beside the other hash's worker)."""
    floor = make_floor(table_ids(1))

    async def scenario() -> None:
        async with await psycopg.AsyncConnection.connect(floor.writer_dsn, autocommit=True) as connection:
            assert await claim_epoch(connection, 1, PARTITIONS, 6, "B", lease_ttl_s=LEASE_TTL_S)
            assert await renew_epochs(connection, {1: 6}, lease_ttl_s=LEASE_TTL_S) == {1}
            await connection.execute(EARLIER_RELEASES_CLAIM, (0, PARTITIONS, 5, "old"))
            # Live however loaded the machine (no TTL raced): its renewal an hour ahead.
            await connection.execute(
                "UPDATE floor_partition_leases SET renewed_utc = clock_timestamp() + interval '1 hour' "
                "WHERE worker = 'old'"
            )
            before = await (await connection.execute(RENEWED_SQL)).fetchone()
            with pytest.raises(PartitionsMismatch) as refused:
                await renew_epochs(connection, {1: 6}, lease_ttl_s=LEASE_TTL_S)
            line = str(refused.value)
            assert "\n" not in line
            assert "worker old holds partition 0 of 4" in line
            assert "under partition hash not recorded" in line
            assert "this worker's is fnv1a-32" in line
            after = await (await connection.execute(RENEWED_SQL)).fetchone()
            assert after == before  # the refused renewal wrote nothing
            await connection.execute(
                "UPDATE floor_partition_leases SET renewed_utc = clock_timestamp() - interval '1 hour' "
                "WHERE worker = 'old'"
            )
            assert await renew_epochs(connection, {1: 6}, lease_ttl_s=LEASE_TTL_S) == {1}

    asyncio.run(scenario())


def test_a_lease_ttl_other_than_the_buckets_is_refused(make_floor: MakeFloor) -> None:
    """The bucket made with a 6 s TTL: a worker given --lease-ttl 6 starts, one given 10 is refused in
    one line naming both."""
    floor = make_floor(table_ids(1))

    async def scenario() -> None:
        await _ensure_partitions(floor)
        admin = await floor.connect_admin()
        try:
            kv = await admin.jetstream().key_value(LEASE_BUCKET)
            await check_bucket_ttl(kv, LEASE_TTL_S)
            with pytest.raises(LeaseTtlMismatch) as refused:
                await check_bucket_ttl(kv, 10.0)
            assert str(refused.value) == (
                f"--lease-ttl 10 but the {LEASE_BUCKET} bucket's TTL is {LEASE_TTL_S:g} s (set when it "
                "was made): give every worker the bucket's TTL"
            )
        finally:
            await admin.close()

    asyncio.run(scenario())


def test_the_partition_consumers_ack_wait_is_within_the_takeover_bound(make_floor: MakeFloor) -> None:
    """A killed worker's pulled, unacked messages come back only ``ack_wait`` after their delivery, and
    until then its partition's consumer (``max_ack_pending`` out) delivers nothing to the new holder. At
    the defaults the consumers' ``ack_wait`` must therefore be within the lease's bound (10 s): made
    fresh, and when a consumer made with the one-worker floor's 30 s is set up again (updated in place,
    its acks kept)."""
    floor = make_floor(table_ids(1))
    bound_s = WorkerSettings("A", PARTITIONS).takeover_bound_s  # the defaults: TTL 6 s, renewals every 2 s

    async def ack_waits(admin: Client, partitions: int) -> list[float]:
        js = admin.jetstream()
        infos = [
            await js.consumer_info(STREAM_NAME, partition_consumer(p, partitions)) for p in range(partitions)
        ]
        return [float(info.config.ack_wait or 0) for info in infos]

    async def warned_on_acquiring() -> None:
        """A worker acquiring a partition whose consumer's ack_wait is above the bound says so, naming
        the fix (it runs: only the admin can update a consumer)."""
        worker = FloorWorker(floor.floor_config(), WorkerSettings("A", PARTITIONS))
        stop = asyncio.Event()
        with capture_logs() as logs:
            task = asyncio.create_task(worker.run(stop))
            try:

                async def warned() -> bool:
                    events = [str(e["event"]) for e in logs]
                    return events.count("floor_partition_ack_wait_above_bound") >= PARTITIONS

                await wait_until(warned, 60, "a warning per partition acquired")
            finally:
                stop.set()
                await asyncio.wait_for(task, 60)
        warning = next(e for e in logs if e["event"] == "floor_partition_ack_wait_above_bound")
        assert warning["ack_wait_s"] == ACK_WAIT_S
        assert f"flushtable floor partitions --create {PARTITIONS} updates it to 3 s" in warning["fix"]

    async def scenario() -> None:
        admin = await floor.connect_admin()
        try:
            await ensure_partitions(admin, 2)  # made at the defaults
            assert all(0 < wait_s <= bound_s for wait_s in await ack_waits(admin, 2)), bound_s
            await ensure_partitions(admin, PARTITIONS, ack_wait_s=ACK_WAIT_S)  # as made before
            assert await ack_waits(admin, PARTITIONS) == [ACK_WAIT_S] * PARTITIONS
            await warned_on_acquiring()
            await ensure_partitions(admin, PARTITIONS)  # set up again at the defaults
            assert all(0 < wait_s <= bound_s for wait_s in await ack_waits(admin, PARTITIONS)), bound_s
        finally:
            await admin.close()

    asyncio.run(scenario())

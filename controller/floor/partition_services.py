"""The services of the partitions a floor worker holds (controller/floor/workers.py; docs/floor.md
"Partitioned floor workers"): each a ``FloorService`` started under its lease's epoch on its partition's
consumer, the consumer's filter kept here and widened when a table appears, told to stop without
waiting, and waited for when the worker ends.

The worker keeps the leases (take, renew, retake, release) and calls in through ``PartitionServices``:
``start``, ``stop``, ``sync_consumer``, ``widen_filters`` and ``await_stopped``. Nothing here writes the
lease bucket or PostgreSQL's epochs.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field

import psycopg
import structlog
from nats.js.client import JetStreamContext

from controller.floor.epochs import PartitionFence, fence_for
from controller.floor.partition_setup import (
    DROP_AFTER_TTLS,
    NO_TABLE_SUBJECT,
    WorkerSettings,
    partition_ack_wait_s,
    partition_consumer,
    partition_filter,
    stream_table_subjects,
    sync_partition_consumer,
)
from controller.floor.projections import ReadAhead
from controller.floor.service import IN_PROGRESS_INTERVAL_S, FloorConfig, FloorService
from controller.floor.store import load_projections
from controller.uplink.wire import partition_of

log = structlog.get_logger("flushtable.floor.workers")


@dataclass
class HeldPartition:
    """A partition a worker holds: its lease and the service running under it."""

    partition: int
    epoch: int  # the KV revision at which the lease was taken: the fencing token
    revision: int  # the key's last revision (each renewal writes a new one)
    renewed_s: float  # monotonic time of the last renewal
    service: FloorService
    stop: asyncio.Event
    task: asyncio.Task[None]
    fence: PartitionFence
    # A renewal was sent and not answered: it may have been written (the key then at a revision this
    # worker has not heard of). Cleared at the next renewal answered.
    unconfirmed: bool = False


@dataclass
class PartitionServices:
    """One worker's partitions' services and their consumers' filters."""

    config: FloorConfig
    settings: WorkerSettings
    clock: Callable[[], float]
    _stopping: set[asyncio.Task[None]] = field(default_factory=set)  # services told to stop, not yet ended
    _filters: dict[int, list[str]] = field(default_factory=dict)  # partition -> its consumer's filter
    _subjects: list[str] = field(default_factory=list)  # the stream's journal subjects, at tick ...
    _subjects_tick: int = -1
    # Partitions not held whose projections are being read (or were read) ahead of a takeover: their
    # holder is suspected dead (``read_ahead``). Handed to the partition's service at its start.
    _read_ahead: dict[int, asyncio.Task[ReadAhead]] = field(default_factory=dict)

    def read_ahead(self, partitions: Iterable[int], holders: Collection[str] = ()) -> None:
        """Read ahead the projections of those of ``partitions`` PostgreSQL names one of ``holders`` for
        (peers that stopped beating: theirs may be this worker's within a TTL), and drop what was read
        of any other. Why: a partition's new service read each table of its first batch back from
        PostgreSQL (its row, then every entry of it through the reducer), one table after another,
        before its first commit: 7 of the 8.2 s from the take to the first commit at 100 tables
        (docs/floor.md "A worker's takeover, timed"). Read-only: nothing is committed, and the service
        keeps only the projections whose tail PostgreSQL still holds once the partition's epoch is its
        own (``Projections.adopt``)."""
        wanted = set(partitions)
        for partition in [p for p in self._read_ahead if p not in wanted]:
            self._read_ahead.pop(partition).cancel()
        for partition in wanted - set(self._read_ahead):
            task = asyncio.create_task(
                self._read_partition(partition, frozenset(holders)), name=f"floor-read-ahead-{partition}"
            )
            # A read dropped or failed is only a head start lost: its error retrieved here, not logged
            # by asyncio as never retrieved (the service that takes it logs its own).
            task.add_done_callback(lambda done: done.cancelled() or done.exception())
            self._read_ahead[partition] = task

    async def _read_partition(self, partition: int, holders: frozenset[str]) -> ReadAhead:
        started_s = self.clock()
        async with await psycopg.AsyncConnection.connect(self.config.dsn, autocommit=True) as connection:
            cursor = await connection.execute(
                "SELECT worker FROM floor_partition_leases WHERE partition = %s AND partitions = %s",
                (partition, self.settings.partitions),
            )
            holder = await cursor.fetchone()
            if holder is not None and str(holder[0]) not in holders:
                return {}  # a live peer's: nothing to read ahead (a partition nobody held is read)
            cursor = await connection.execute("SELECT table_id FROM floor_tables")
            tables = [
                str(row[0])
                for row in await cursor.fetchall()
                if partition_of(str(row[0]), self.settings.partitions) == partition
            ]
            read = await load_projections(connection, tables)
        log.info("floor_read_ahead", partition=partition, tables=len(read),
                 seconds=round(self.clock() - started_s, 3))  # fmt: skip
        return read

    def start(self, partition: int, epoch: int, revision: int) -> HeldPartition:
        partitions = self.settings.partitions
        read_ahead = self._read_ahead.pop(partition, None)
        service_config = dataclasses.replace(
            self.config, consumer=partition_consumer(partition, partitions), side_duties=partition == 0
        )
        fence = fence_for(partition, epoch)
        service = FloorService(
            service_config,
            owns=lambda table_id: partition_of(table_id, partitions) == partition,
            fence=fence,
            # +WPI within a third of the partition consumer's ack_wait (half the lease TTL): a batch held
            # up (PostgreSQL slow, a lock) is not redelivered while it is taken; for as long as an
            # unrenewed partition's service is kept at most (a commit that hangs lets its batch go then).
            in_progress_interval_s=min(
                IN_PROGRESS_INTERVAL_S, partition_ack_wait_s(self.settings.lease_ttl_s) / 3
            ),
            in_progress_limit_s=DROP_AFTER_TTLS * self.settings.lease_ttl_s,
            read_ahead=read_ahead,
        )
        service_stop = asyncio.Event()
        task = asyncio.create_task(service.run(service_stop), name=f"floor-partition-{partition}")
        return HeldPartition(partition, epoch, revision, self.clock(), service, service_stop, task, fence)

    async def sync_consumer(self, js: JetStreamContext, partition: int, tick: int) -> None:
        """The partition's consumer made (or made again) with its tables' filter, before its service
        starts (``sync_partition_consumer``)."""
        self._filters[partition] = await sync_partition_consumer(
            js, partition, self.settings.partitions, lambda: self._table_subjects(js, tick)
        )

    async def _table_subjects(self, js: JetStreamContext, tick: int) -> list[str]:
        """The stream's journal subjects, read once a tick (every held partition's filter uses them)."""
        if self._subjects_tick != tick:
            self._subjects = await stream_table_subjects(js)
            self._subjects_tick = tick
        return self._subjects

    async def widen_filters(
        self, js: JetStreamContext, held_now: dict[int, HeldPartition], tick: int
    ) -> None:
        """A table that appeared since a held partition's consumer was made is added to it: the
        partition's service stopped (waited for: the consumer goes), the consumer made again
        (``sync_partition_consumer``), a new service started under the same lease and epoch (put in
        ``held_now``, the worker's, in place of the old)."""
        by_table = [
            held
            for held in held_now.values()
            if not any("*" in p or ">" in p for p in self._filters.get(held.partition, []))
        ]  # the others' consumers are delivered every table (ensure_partitions' by_table False)
        if not by_table:
            return
        subjects = await self._table_subjects(js, tick)
        for held in by_table:
            current = self._filters.get(held.partition, [])
            wanted = partition_filter(subjects, held.partition, self.settings.partitions)
            if set(wanted) <= set(current) or wanted == [NO_TABLE_SUBJECT]:
                continue
            held.stop.set()
            async with asyncio.timeout(self.config.backoff_max_s + 10):
                await asyncio.shield(held.task)
            self._filters[held.partition] = await sync_partition_consumer(
                js, held.partition, self.settings.partitions, subjects
            )
            if held_now.get(held.partition) is held:
                held_now[held.partition] = dataclasses.replace(
                    self.start(held.partition, held.epoch, held.revision), renewed_s=held.renewed_s
                )

    def stop(self, held: HeldPartition) -> None:
        """Tell the partition's service to stop, without waiting for it (its connections' close can take
        seconds, and the tick must renew the other leases meanwhile). Safe: until another worker claims
        a newer epoch this worker's is the partition's; after, its commits are refused (``fence_for``)."""
        held.stop.set()
        self._stopping.add(held.task)
        held.task.add_done_callback(self._stopping.discard)

    async def await_stopped(self) -> None:
        self.read_ahead(())
        for task in list(self._stopping):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                async with asyncio.timeout(self.config.backoff_max_s + 5):
                    await task
            if not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task

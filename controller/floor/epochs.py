"""The partitions' epochs in PostgreSQL (docs/floor.md "Partitioned floor workers"): a lease's claim
(``claim_epoch``), its renewal, its move after a retake (``move_epoch``), the fence every commit makes
(``PartitionFence``) and the nodes' record. Split out of controller/floor/workers.py, which re-exports
every name."""

from __future__ import annotations

from dataclasses import dataclass

import structlog
from nats.js.client import JetStreamContext

from controller.floor.partition_setup import DEFAULT_LEASE_TTL_S, MAX_LEASE_TTL_S, PartitionsMismatch
from controller.floor.service import (
    Fenced,
)
from controller.floor.store import Connection
from controller.uplink.wire import PARTITION_HASH, STREAM_NAME

log = structlog.get_logger("flushtable.floor.workers")

# Claims are taken one at a time (a transaction-scoped advisory lock): two workers of different P
# starting together cannot both pass the check below before either's row is written.
_CLAIM_LOCK = 0x666C7573  # "flus"
# A live worker marks its renewal every lease TTL / 3 (flushtable floor serve), and the TTL is at most
# MAX_LEASE_TTL_S: a lease row renewed within this is a live worker's, whatever TTL it runs with.
LIVE_RENEWAL_S = MAX_LEASE_TTL_S / 3


async def claim_epoch(
    connection: Connection,
    partition: int,
    partitions: int,
    epoch: int,
    worker: str,
    *,
    lease_ttl_s: float = DEFAULT_LEASE_TTL_S,
) -> bool:
    """Raise the partition's epoch to ``epoch`` for ``worker``; False if PostgreSQL holds a newer (or
    the same) one. The UPDATE waits for a commit holding the row's lock (``fence_for``): what the old
    holder committed is on the floor before the new one reads anything. ``PartitionsMismatch`` (one
    line) if a lease of another partition count was renewed within ``lease_ttl_s``."""
    async with connection.transaction():
        await connection.execute("SELECT pg_advisory_xact_lock(%s)", (_CLAIM_LOCK,))
        other = await (
            await connection.execute(
                "SELECT partition, partitions, worker, "
                "round(extract(epoch FROM clock_timestamp() - renewed_utc)::numeric, 1) "
                "FROM floor_partition_leases WHERE partitions <> %s "
                "AND renewed_utc > clock_timestamp() - make_interval(secs => %s) "
                "ORDER BY renewed_utc DESC LIMIT 1",
                (partitions, lease_ttl_s),
            )
        ).fetchone()
        if other is not None:
            raise PartitionsMismatch(
                f"worker {other[2]} holds partition {other[0]} of {other[1]} (renewed {other[3]} s ago), "
                f"this worker was started with --partitions {partitions}: every worker of a floor needs "
                "the same --partitions (stop the others first)"
            )
        await _refuse_other_hash(connection, lease_ttl_s)
        row = await (
            await connection.execute(
                "INSERT INTO floor_partition_leases (partition, partitions, epoch, worker, partition_hash, "
                "partition_hash_epoch) VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (partition) DO UPDATE SET "
                "partitions = EXCLUDED.partitions, epoch = EXCLUDED.epoch, worker = EXCLUDED.worker, "
                "partition_hash = EXCLUDED.partition_hash, partition_hash_epoch = EXCLUDED.epoch, "
                "acquired_utc = clock_timestamp(), renewed_utc = clock_timestamp() "
                "WHERE floor_partition_leases.epoch < EXCLUDED.epoch RETURNING epoch",
                (partition, partitions, epoch, worker, PARTITION_HASH, epoch),
            )
        ).fetchone()
    return row is not None


async def _refuse_other_hash(connection: Connection, lease_ttl_s: float) -> None:
    """``PartitionsMismatch`` (one line) if a lease renewed within ``lease_ttl_s`` was claimed under
    another partition hash than ``PARTITION_HASH``, or one not recorded (a worker of an earlier release
    claimed it: migration 13). Its worker puts the tables in other partitions than this one does, so
    both would fold some tables at once (a rolling upgrade from the CRC-32 workers)."""
    other = await (
        await connection.execute(
            "SELECT partition, partitions, worker, "
            "round(extract(epoch FROM clock_timestamp() - renewed_utc)::numeric, 1), "
            "CASE WHEN partition_hash_epoch = epoch THEN partition_hash END "
            "FROM floor_partition_leases "
            "WHERE renewed_utc > clock_timestamp() - make_interval(secs => %s) "
            "AND (partition_hash_epoch IS DISTINCT FROM epoch OR partition_hash IS DISTINCT FROM %s) "
            "ORDER BY renewed_utc DESC LIMIT 1",
            (lease_ttl_s, PARTITION_HASH),
        )
    ).fetchone()
    if other is not None:
        theirs = other[4] or "not recorded (a worker of an earlier release: CRC-32, or FNV-1a unrecorded)"
        raise PartitionsMismatch(
            f"worker {other[2]} holds partition {other[0]} of {other[1]} (renewed {other[3]} s ago) under "
            f"partition hash {theirs}, this worker's is {PARTITION_HASH}: every worker of a floor needs the "
            "same hash (stop the others, wait one lease TTL, then start the new release's)"
        )


async def refuse_live_workers(connection: Connection) -> None:
    """For the one-worker floor (``floor serve`` without ``--worker``): ``PartitionsMismatch`` (one
    line) while any partition's lease was renewed within ``LIVE_RENEWAL_S`` (a worker may be live)."""
    row = await (
        await connection.execute(
            "SELECT partition, partitions, worker, "
            "round(extract(epoch FROM clock_timestamp() - renewed_utc)::numeric, 1) "
            "FROM floor_partition_leases "
            "WHERE renewed_utc > clock_timestamp() - make_interval(secs => %s) "
            "ORDER BY renewed_utc DESC LIMIT 1",
            (LIVE_RENEWAL_S,),
        )
    ).fetchone()
    if row is not None:
        raise PartitionsMismatch(
            f"worker {row[2]} held partition {row[0]} of {row[1]} {row[3]} s ago: a one-worker floor "
            f"serve starts only when no partition's lease was renewed in the last {LIVE_RENEWAL_S:g} s "
            "(stop the workers, or start this one with --worker and the same --partitions)"
        )


async def renew_epochs(
    connection: Connection, epochs: dict[int, int], *, lease_ttl_s: float = DEFAULT_LEASE_TTL_S
) -> set[int]:
    """Mark the renewals (the panel's "last renewal") of partition -> epoch, in one statement; returns
    the partitions whose epoch is still the newest (the others are lost). ``PartitionsMismatch`` (one
    line) if a lease renewed within ``lease_ttl_s`` is another partition hash's (``_refuse_other_hash``):
    a worker of another hash started beside running ones stops them at their next tick, not only the
    next claim (the worker ends, giving its keys back; `floor serve` exits 2)."""
    if not epochs:
        return set()
    async with connection.transaction():
        await _refuse_other_hash(connection, lease_ttl_s)
        cursor = await connection.execute(
            "UPDATE floor_partition_leases SET renewed_utc = clock_timestamp() "
            "WHERE (partition, epoch) IN (SELECT * FROM unnest(%s::integer[], %s::bigint[])) "
            "RETURNING partition",
            (list(epochs), list(epochs.values())),
        )
        return {int(row[0]) for row in await cursor.fetchall()}


@dataclass
class PartitionFence:
    """The check each commit of the partition's service makes, in its own transaction: the row locked
    until the commit (a newer claim waits for it), and the commit refused unless the row's epoch is one
    of ``epochs``: this worker's for the partition. Two only while the worker moves its own lease to a
    new epoch in place (``move_epoch``: the key expired while the bucket had no leader, PostgreSQL
    still holding this worker's epoch); no other worker's epoch is ever in it."""

    partition: int
    epochs: set[int]

    async def __call__(self, connection: Connection) -> None:
        row = await (
            await connection.execute(
                "SELECT epoch, worker FROM floor_partition_leases WHERE partition = %s FOR UPDATE",
                (self.partition,),
            )
        ).fetchone()
        if row is None or int(row[0]) not in self.epochs:
            holder = "nobody" if row is None else f"epoch {row[0]} of worker {row[1]}"
            # Every epoch this service may hold (its own lease's revisions, a retake's among them): the
            # largest alone named one that PostgreSQL never held after a refused retake.
            mine = ", ".join(str(epoch) for epoch in sorted(self.epochs))
            partition = self.partition
            raise Fenced(f"partition {partition}: this lease's epochs ({mine}) are not the newest ({holder})")


def fence_for(partition: int, epoch: int) -> PartitionFence:
    """The fence of a service holding the partition at ``epoch`` (``PartitionFence``)."""
    return PartitionFence(partition, {epoch})


async def move_epoch(connection: Connection, partition: int, old: int, new: int, worker: str) -> bool:
    """Move the partition's epoch from ``old`` to ``new`` for ``worker``, only while PostgreSQL still
    holds ``old`` of that worker (nobody claimed it meanwhile); False otherwise. Waits, like a claim,
    for a commit holding the row's lock."""
    async with connection.transaction():
        row = await (
            await connection.execute(
                "UPDATE floor_partition_leases SET epoch = %s, partition_hash = %s, "
                "partition_hash_epoch = %s, acquired_utc = clock_timestamp(), "
                "renewed_utc = clock_timestamp() WHERE partition = %s AND epoch = %s AND worker = %s "
                "AND %s > epoch RETURNING epoch",
                (new, PARTITION_HASH, new, partition, old, worker, new),
            )
        ).fetchone()
    return row is not None


async def record_nodes(connection: Connection, js: JetStreamContext, worker: str) -> None:
    """The stream's cluster as this worker's node sees it (leader, replicas: current, offline, lag),
    kept in PostgreSQL for the panel. A single server has no cluster: its one row is the leader."""
    info = await js.stream_info(STREAM_NAME)
    rows: list[tuple[str, str, bool, bool, int]] = []
    cluster = info.cluster
    if cluster is not None and cluster.leader:
        rows.append((cluster.leader, "leader", True, False, 0))
        for replica in cluster.replicas or []:
            rows.append(
                (
                    str(replica.name),
                    "replica",
                    bool(replica.current),
                    bool(replica.offline),
                    int(replica.lag or 0),
                )
            )
    async with connection.transaction():
        for node, role, current, offline, lag in rows:
            await connection.execute(
                "INSERT INTO floor_nats_nodes (node, role, current, offline, lag, seen_by) "
                "VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (node) DO UPDATE SET role = EXCLUDED.role, "
                "current = EXCLUDED.current, offline = EXCLUDED.offline, lag = EXCLUDED.lag, "
                "seen_by = EXCLUDED.seen_by, seen_utc = clock_timestamp()",
                (node, role, current, offline, lag, worker),
            )

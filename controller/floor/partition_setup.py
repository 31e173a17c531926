"""The partitions' plan (docs/floor.md "Partitioned floor workers"): which partition a table is in, each
partition's consumer and its filter, the lease bucket and the consumers made or checked
(``ensure_partitions``), and the workers' settings. Split out of controller/floor/workers.py, which
re-exports every name."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass

import nats.errors
import nats.js.errors
import structlog
from nats.aio.client import Client
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy, KeyValueConfig, StorageType, StreamConfig
from nats.js.client import JetStreamContext
from nats.js.kv import KeyValue

from controller.errors import UserError
from controller.floor.service import (
    table_of_subject,
)
from controller.floor.service_settings import FLOOR_IO_ERRORS
from controller.floor.stream import MAX_ACK_PENDING, has_partition_tokens, update_consumer_in_place
from controller.uplink.wire import (
    LEASE_BUCKET,
    STREAM_NAME,
    SUBJECT_ROOT,
    partition_of,
    partition_token_filter,
)

log = structlog.get_logger("flushtable.floor.workers")

MEMBERS_KEY = "workers"
DEFAULT_LEASE_TTL_S = 6.0
# The lease loop's JetStream requests (the bucket's reads and writes, stream and consumer info) wait this
# long, not nats-py's 5 s: after a node's loss the first requests go unanswered while the bucket's and
# the stream's leaders are elected, and each waited its 5 s once (docs/floor.md "Measured: workers on
# the cluster"). A renewal that timed out is sent again (``_renew``) until the lease TTL has run out.
LEASE_REQUEST_TIMEOUT_S = 1.5
UNANSWERED_RETRY_S = 0.25  # the pause before a request answered "no responders" is sent again
# While another worker's beat has stopped moving (it may be dead), the loop ticks this often instead of
# every renew interval, so that its partitions are taken as soon as their keys expire.
SUSPECT_TICK_S = 0.5
# A service whose lease the loop could not renew for this many TTLs is stopped (the loop cut off from
# NATS): its commits are fenced anyway once another worker claims the partition.
DROP_AFTER_TTLS = 5
MAX_LEASE_TTL_S = 300.0
MAX_PARTITIONS = 256


def partition_consumer(partition: int, partitions: int) -> str:
    """The partition's durable consumer; P in the name, so a floor re-partitioned never reads a
    consumer's acks as another partitioning's."""
    return f"floor-p{partition}of{partitions}"


def partition_ack_wait_s(lease_ttl_s: float) -> float:
    """The partition consumers' ``ack_wait``: half the lease TTL (3 s at the defaults). A killed worker's
    pulled, unacked messages are redelivered ``ack_wait`` after their delivery, which was before the
    kill; its leases expire a TTL after its last renewal, at least TTL - renew interval (4 s) after the
    kill. So the messages are back before a live worker holds the partition, and its service is
    delivered them at its first pull (with ``ack_wait`` = the TTL, as before, they came up to 2 s after
    the move, and the killed worker's tables waited for them: 11.05 s at 1,000 tables, and 11.89 s at 80).
    A batch whose commit outlasts it is not delivered again meanwhile: the service sends ``+WPI`` for
    its messages every third of it (controller/floor/in_progress.py)."""
    return lease_ttl_s / 2


def lease_key(partition: int) -> str:
    return f"p{partition}"


# A subject in the stream no table publishes (two tokens, a table's are four or more): the filter of a
# partition with no table yet (an empty list would mean every subject).
NO_TABLE_SUBJECT = f"{SUBJECT_ROOT}.no-table"
# nats-server 2.15.1 spends about 97 us per message it delivers to a consumer with several filter
# subjects, 7.5 us per message to one with one wildcard (bench/bench_partition_filters.py,
# bench/results/partition-filters.json). P consumers delivered every message cost P x 7.5 us a message
# on the server, and each service reads the P - 1 others' messages too (the intake's part of a message,
# about 10 us by the profile); a list costs about 97 us once. A list wins from about 6 partitions on.
# Only for a partition count without a partition token of its own (wire.PARTITION_TOKEN_COUNTS) or a
# stream made before the tokens: a power of two from 2 to 64 filters its token, one wildcard (14.3 us
# per delivered message, each message delivered once).
BY_TABLE_FROM_PARTITIONS = 6


def partition_filter(subjects: Iterable[str], partition: int, partitions: int) -> list[str]:
    """The partition's consumer's ``filter_subjects``: the journal subjects of its tables, sorted."""
    tables = {subject: table_of_subject(subject) for subject in subjects}
    mine = sorted(s for s, t in tables.items() if t is not None and partition_of(t, partitions) == partition)
    return mine or [NO_TABLE_SUBJECT]


async def stream_table_subjects(js: JetStreamContext) -> list[str]:
    """Every table's journal subject the stream holds a message on (its own subject list: a table is
    in the floor's partitions from its first message, whoever provisioned it), as stored."""
    info = await js.stream_info(STREAM_NAME, subjects_filter=f"{SUBJECT_ROOT}.>")
    subjects = (info.state.subjects if info.state else None) or {}
    return [subject for subject in subjects if table_of_subject(subject) is not None]


class StreamWithoutPartitionTokens(UserError):
    """Partitioned workers asked of a stream that stores the journals as published (made before the
    partition tokens, and tables have published since): one line."""


async def check_partition_tokens(js: JetStreamContext, partitions: int) -> StreamConfig:
    """The stream's config; ``StreamWithoutPartitionTokens`` (one line) when ``partitions`` > 1 and it
    stores the journals as published: each partition's consumer would then filter every table
    (``flushtable.>``) and two workers fold the same tables. Asked by ``ensure_partitions`` and by each
    worker before its first tick (``floor serve --worker``: a worker started on such a stream exits 2)."""
    stream = (await js.stream_info(STREAM_NAME)).config
    if partitions > 1 and not has_partition_tokens(stream):
        raise StreamWithoutPartitionTokens(
            f"stream {STREAM_NAME} stores the tables' journals without partition tokens (made before them, "
            "and tables have published since): run one floor service on it, or partitioned workers on a "
            'new stream (docs/floor.md "Partitioned floor workers")'
        )
    return stream


def _token_filter(stream: StreamConfig, partition: int, partitions: int) -> str | None:
    """The partition's one wildcard filter on a stream with partition tokens (None: ``partitions`` is
    not a power of two from 2 to 64; the consumers are then made as before, ``by_table``)."""
    if partitions == 1:
        return f"{SUBJECT_ROOT}.>"
    return partition_token_filter(partition, partitions) if has_partition_tokens(stream) else None


def _partition_consumer_config(
    name: str, filters: Sequence[str], *, ack_wait_s: float, max_ack_pending: int, start_seq: int | None
) -> ConsumerConfig:
    return ConsumerConfig(
        durable_name=name,
        deliver_policy=DeliverPolicy.ALL if start_seq is None else DeliverPolicy.BY_START_SEQUENCE,
        opt_start_seq=start_seq,
        ack_policy=AckPolicy.EXPLICIT,
        ack_wait=ack_wait_s,
        max_ack_pending=max_ack_pending,
        # One filter as ``filter_subject``: the server's cheap path (several are its costly one, above).
        filter_subject=filters[0] if len(filters) == 1 else None,
        filter_subjects=list(filters) if len(filters) > 1 else None,
        max_deliver=-1,
    )


async def sync_partition_consumer(
    js: JetStreamContext,
    partition: int,
    partitions: int,
    subjects: Iterable[str] | Callable[[], Awaitable[Iterable[str]]],
) -> list[str]:
    """Make the partition's consumer deliver every table of the partition in ``subjects``; returns its
    filter. A consumer's filter can be changed in place, but the change does not go back: a new
    table's messages below the consumer's position would be skipped for good. So a consumer missing a
    table is deleted and made again, with the filter widened (never narrowed: a table whose subject
    the stream no longer lists keeps its place), starting at the earliest of the new tables' first
    messages and the old consumer's ack floor + 1: nothing unacknowledged is passed over, and what the
    floor already holds comes again as resends (idempotent by (table, seq)). Run only by the
    partition's lease holder, its service stopped; a stale holder doing it too only rewinds more."""
    name = partition_consumer(partition, partitions)
    info = await js.consumer_info(STREAM_NAME, name)
    config = info.config
    current = list(config.filter_subjects or ([config.filter_subject] if config.filter_subject else [">"]))
    added: list[str] = []
    filters = current
    if not any("*" in p or ">" in p for p in current):  # else every table is delivered: nothing to add
        if callable(subjects):
            # Read only when needed: the stream's subject list is one entry per table (a large answer
            # on a large floor), and a new holder waits for it before its partition's service starts.
            subjects = await subjects()
        wanted = [s for s in partition_filter(subjects, partition, partitions) if s != NO_TABLE_SUBJECT]
        added = [s for s in wanted if s not in current]
        if added:
            filters = sorted({p for p in current if p != NO_TABLE_SUBJECT} | set(wanted))
    if not added:
        return current
    start_seq = (info.ack_floor.stream_seq if info.ack_floor else 0) + 1
    for subject in added:
        try:
            first = await js.get_msg(STREAM_NAME, seq=1, subject=subject, next=True, direct=True)
        except nats.js.errors.NotFoundError:
            continue  # nothing of it left in the stream
        if first.seq is not None:
            start_seq = min(start_seq, first.seq)
    await js.delete_consumer(STREAM_NAME, name)
    await js.add_consumer(
        STREAM_NAME,
        _partition_consumer_config(
            name,
            filters,
            ack_wait_s=float(config.ack_wait or partition_ack_wait_s(DEFAULT_LEASE_TTL_S)),
            max_ack_pending=int(config.max_ack_pending or MAX_ACK_PENDING),
            start_seq=start_seq,
        ),
    )
    log.info("floor_partition_consumer_widened", partition=partition, tables_added=len(added),
             tables=len(filters), start_stream_seq=start_seq)  # fmt: skip
    return filters


@dataclass(frozen=True, slots=True)
class WorkerSettings:
    worker: str
    partitions: int
    lease_ttl_s: float = DEFAULT_LEASE_TTL_S
    # A third of the TTL: two renewals may fail (a slow broker, a leader election) before the lease goes.
    renew_interval_s: float = DEFAULT_LEASE_TTL_S / 3

    def __post_init__(self) -> None:
        if not self.worker or not all(c.isalnum() or c in "-_" for c in self.worker):
            raise ValueError(f"--worker: letters, digits, '-' and '_' only, not {self.worker!r}")
        if not 1 <= self.partitions <= MAX_PARTITIONS:
            raise ValueError(f"--partitions: 1 to {MAX_PARTITIONS}, not {self.partitions}")
        if not 1.0 <= self.lease_ttl_s <= MAX_LEASE_TTL_S:
            raise ValueError(f"--lease-ttl: 1 to {MAX_LEASE_TTL_S:g} seconds, not {self.lease_ttl_s:g}")
        if not 0 < self.renew_interval_s <= self.lease_ttl_s / 2:
            raise ValueError("the renew interval must be at most half the lease TTL")

    @property
    def takeover_bound_s(self) -> float:
        """How long a dead worker's partitions stay unworked at most (the module's docstring)."""
        return self.lease_ttl_s + 2 * self.renew_interval_s


async def ensure_partitions(  # noqa: PLR0913 - the bucket's and the consumers' settings, keyword-only, each with the product's default
    admin: Client,
    partitions: int,
    *,
    lease_ttl_s: float = DEFAULT_LEASE_TTL_S,
    replicas: int = 1,
    ack_wait_s: float | None = None,
    max_ack_pending: int = MAX_ACK_PENDING,
    by_table: bool | None = None,
) -> None:
    """As the floor's admin: the leases' KV bucket (TTL ``lease_ttl_s``, ``replicas`` like the stream)
    and each partition's durable consumer, configured as the one-worker floor's (stream.py) but for its
    ``ack_wait``: ``partition_ack_wait_s(lease_ttl_s)`` unless given. A consumer that exists with another
    ``ack_wait`` (made before it was derived: 30 s) or another ``max_ack_pending`` (made with another batch
    size) is updated to it in place (JetStream keeps its acks).
    Its filter (chosen when it is made; docs/floor.md "Partitioned floor workers"): ``by_table`` lists the
    partition's tables the stream holds now (tables that come later are added by the partition's holder:
    ``sync_partition_consumer``), so the consumer is delivered its own tables only; else one wildcard,
    every message delivered and another partition's acked unread by the service. None: by table from
    ``BY_TABLE_FROM_PARTITIONS`` partitions on, where it costs nats-server less than P deliveries."""
    ack_wait = partition_ack_wait_s(lease_ttl_s) if ack_wait_s is None else ack_wait_s
    if by_table is None:
        by_table = partitions >= BY_TABLE_FROM_PARTITIONS
    js = admin.jetstream()
    stream = await check_partition_tokens(js, partitions)
    try:
        await js.key_value(LEASE_BUCKET)
    except nats.js.errors.BucketNotFoundError:
        await js.create_key_value(
            KeyValueConfig(
                bucket=LEASE_BUCKET,
                ttl=lease_ttl_s,
                history=1,
                storage=StorageType.FILE,
                replicas=replicas,
                direct=True,
            )
        )
    subjects = await stream_table_subjects(js)
    for partition in range(partitions):
        name = partition_consumer(partition, partitions)
        try:
            info = await js.consumer_info(STREAM_NAME, name)
        except nats.js.errors.NotFoundError:
            await js.add_consumer(
                STREAM_NAME,
                _partition_consumer_config(
                    name,
                    [token]
                    if (token := _token_filter(stream, partition, partitions)) is not None
                    else partition_filter(subjects, partition, partitions)
                    if by_table
                    else [f"{SUBJECT_ROOT}.>"],
                    ack_wait_s=ack_wait,
                    max_ack_pending=max_ack_pending,
                    start_seq=None,
                ),
            )
        else:
            await update_consumer_in_place(
                js, info.config, max_ack_pending=max_ack_pending, ack_wait_s=ack_wait
            )


class LeaseTtlMismatch(UserError):
    """The worker's ``--lease-ttl`` is not the ``floor_leases`` bucket's TTL."""


async def check_bucket_ttl(kv: KeyValue, lease_ttl_s: float) -> None:
    """``LeaseTtlMismatch`` (one line) unless the bucket's TTL is ``lease_ttl_s``. The bucket's TTL is
    what removes a dead worker's keys; the worker's own TTL is what it renews against (every TTL/3)
    and stops its services after: a worker believing 10 s on a 6 s bucket loses its keys between
    renewals, one believing 3 s on a 30 s bucket makes the takeover bound a lie. Refused rather than
    taken from the bucket, so that the deployment's files say what the floor runs with."""
    bucket_ttl_s = (await kv.status()).ttl
    if bucket_ttl_s is None or abs(bucket_ttl_s - lease_ttl_s) > 1e-3:
        shown = "none" if bucket_ttl_s is None else f"{bucket_ttl_s:g} s"
        raise LeaseTtlMismatch(
            f"--lease-ttl {lease_ttl_s:g} but the {LEASE_BUCKET} bucket's TTL is {shown} (set when it "
            "was made): give every worker the bucket's TTL"
        )


# --- PostgreSQL: the fencing token ------------------------------------------------------------------


class PartitionsMismatch(UserError):
    """Another worker of a different ``--partitions`` is live: each would own its own split of the
    tables (other KV keys, other fencing rows), so one table could be in two workers at once."""


async def warn_if_ack_wait_above_bound(
    js: JetStreamContext, settings: WorkerSettings, partition: int
) -> None:
    """A partition consumer's ``ack_wait`` above the takeover bound (one made at the one-worker
    floor's 30 s) holds a killed worker's tables that long, not the bound: said, not refused (the
    worker runs; the admin's ``--create`` is the fix: it updates a consumer in place)."""
    name = partition_consumer(partition, settings.partitions)
    try:
        ack_wait_s = (await js.consumer_info(STREAM_NAME, name)).config.ack_wait
    except FLOOR_IO_ERRORS:
        return  # the service itself says so if the consumer cannot be read
    bound_s = settings.takeover_bound_s
    if ack_wait_s is not None and ack_wait_s > bound_s:
        log.warning(
            "floor_partition_ack_wait_above_bound",
            worker=settings.worker,
            consumer=name,
            ack_wait_s=ack_wait_s,
            bound_s=bound_s,
            fix=f"flushtable floor partitions --create {settings.partitions} updates it "
            f"to {partition_ack_wait_s(settings.lease_ttl_s):g} s",
        )


def excuse_silence(
    beats: dict[str, tuple[int, float]],
    moved_after: dict[str, float],
    worker: str,
    now: float,
    unwritable_s: float,
    *,
    earliest_s: float,
) -> None:
    """The ``unwritable_s`` seconds before ``now``, from ``worker``'s last beat written to its next (a
    beat unanswered, or the lease loop's connection ended by any of its I/O errors, PostgreSQL's too:
    the loop does not tell which), taken out of every peer's silence, and no peer counted from
    before ``earliest_s`` (``way_back_s``). While the bucket had no leader (its election after a node's
    loss, 4-9 s) no peer could beat either, and each comes back at its own pace: without an excuse, the
    first worker to beat again counted its peer dead and took its partitions (their keys lapsed in the
    same election) from under it (docs/floor.md "The lease loop through a node's loss"). Until the tenth
    stop every peer was given a full TTL from now; now the silence counted before is kept (a worker dead
    before the loss is taken over sooner), but never so much that a live peer still on its way back is
    counted dead ("Tenth stop: the gaps that were ours"). A slow tick alone excuses nothing."""
    for name, (beat, moved_s) in list(beats.items()):
        if name == worker:
            continue
        beats[name] = (beat, min(now, moved_s + unwritable_s))
        excused_s = now if moved_s == now else min(now, moved_after.get(name, now) + unwritable_s)
        moved_after[name] = min(now, max(excused_s, earliest_s))


def way_back_s(settings: WorkerSettings, backoff_max_s: float) -> float:
    """The longest a live peer takes to beat again once the bucket answers (at most a TTL): a request
    sent in the election and never answered (LEASE_REQUEST_TIMEOUT_S), its reconnection's backoff, a
    renew interval to its next tick."""
    interval_s = settings.renew_interval_s
    return min(settings.lease_ttl_s, interval_s + LEASE_REQUEST_TIMEOUT_S + min(backoff_max_s, interval_s))

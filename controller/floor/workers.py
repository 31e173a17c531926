"""Partitioned floor workers (docs/floor.md "Partitioned floor workers"): N `flushtable floor serve
--worker NAME --partitions P` processes share the floor's work, each table in exactly one of P partitions
(``partition_of``: nats-server's own FNV-1a hash of the table id mod P), so its order and chain checks
stay in one process.

- **A consumer per partition**: ``floor-p<k>of<P>``, durable, pulled, explicit acks, like the one-worker
  floor's ``floor``. Below ``BY_TABLE_FROM_PARTITIONS`` partitions it has one wildcard filter and is
  delivered every message (the service acks another partition's unread); from it on it lists its own
  tables' subjects (``filter_subjects``, nats-server 2.10+), which nats-server serves at several times
  the CPU per message (measured: below). A table's subject carries no partition, so a list is kept by
  the partition's holder: at each tick it reads the stream's journal subjects and, when a table it has
  not listed appeared, makes the consumer again with the table added, starting at the new table's first
  message (or the ack floor, if earlier): what lies between is delivered again and taken as resends
  (``sync_partition_consumer``).
- **A lease per partition**: the key ``p<k>`` of the JetStream KV bucket ``floor_leases`` (R3 on a
  cluster), whose per-bucket TTL (the stream's max age) removes a key its worker stopped renewing. A
  worker takes a free partition with ``create`` (a put expecting no last revision: one winner), renews
  it with ``update`` expecting its own last revision, and releases it with a revision-checked delete.
  JetStream itself is the arbiter, replicated like the stream: no other service to run.
- **Fencing**: the lease's epoch is the KV revision at which it was taken (the bucket's sequence: it only
  grows). Before the partition's service starts, the worker raises ``floor_partition_leases.epoch`` to
  it in PostgreSQL (refused if a newer epoch is there); every commit of the service then locks that row
  (``SELECT ... FOR UPDATE``) in its own transaction and is refused (``Fenced``) unless the epoch is still
  its own. A worker that lost its lease (paused, partitioned away, woken late) can never commit.
- **Balance**: each worker beats in the key ``workers`` (a revision-checked map of worker -> beat); the
  workers whose beat moved within the lease TTL are live, and each holds at most ceil(P / live). A worker
  above its share releases partitions, one below takes free ones. **Joining**: a worker's first tick
  takes one partition at most, and for its first lease TTL it ticks every ``SUSPECT_TICK_S``: workers
  started together then see each other's beats before the first has taken every partition, and one
  that did (a peer started a tick later) gives the extra back, and the peer takes it, within a short
  tick, not a renew interval each (docs/floor.md "Ninth stop").

A dead worker's partitions are free once their keys expire (at most ``lease_ttl_s`` after its last
renewal) and taken by a live worker at its next tick (``renew_interval_s``; every ``SUSPECT_TICK_S``
while a peer's beat has stalled): the move takes at most ``lease_ttl_s + 2 * renew_interval_s``. The
live worker counts the dead one's silence from its read of the beats before the one that saw the last
beat move (``live_workers``), so it tries the keys as they expire, not up to an interval later. The
messages the dead worker had pulled and not acked come back after the partition consumer's
``ack_wait``, half the lease TTL (``partition_ack_wait_s``): before the move, so a killed worker's
tables are committed again within ``takeover_bound_s`` (10 s at the defaults) plus one pull. A batch
outlasting ``ack_wait`` is kept in progress (``+WPI``, controller/floor/in_progress.py), not
redelivered.

**A takeover read ahead** (docs/floor.md "A worker's takeover, timed"): while a peer has missed a beat,
the partitions this worker does not hold have their tables' projections read (``PartitionServices.
read_ahead``), so a partition taken over once its key expires starts with them in memory: its first
batch no longer reads each table back from PostgreSQL before its first commit.

**Through a node's loss** (docs/floor.md "The lease loop through a node's loss"): the bucket, like the
stream, has no leader for nats-server's raft election (4-9 s) and cannot be written by anybody: the
loop's requests are short and retried, the loop reconnects as soon as its connection closes, and a key
that expired meanwhile is taken again in place (``_retake``) while PostgreSQL still holds this
worker's epoch, the partition's service kept running; and a peer's silence while this worker could not
write the bucket is not counted against the peer (``_excuse_unwritable_time``), so no worker takes a live
peer's lapsed keys before the peer is back to retake them.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import random
import time
import zlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import nats.errors
import nats.js.errors
import psycopg
import structlog
from nats.aio.client import Client
from nats.js.client import JetStreamContext
from nats.js.kv import KeyValue

from controller.floor.epochs import (
    PartitionFence,
    claim_epoch,
    fence_for,
    move_epoch,
    record_nodes,
    refuse_live_workers,
    renew_epochs,
)
from controller.floor.partition_services import HeldPartition, PartitionServices
from controller.floor.partition_setup import (
    DEFAULT_LEASE_TTL_S,
    DROP_AFTER_TTLS,
    LEASE_REQUEST_TIMEOUT_S,
    MAX_PARTITIONS,
    MEMBERS_KEY,
    SUSPECT_TICK_S,
    UNANSWERED_RETRY_S,
    LeaseTtlMismatch,
    PartitionsMismatch,
    WorkerSettings,
    check_bucket_ttl,
    check_partition_tokens,
    ensure_partitions,
    excuse_silence,
    lease_key,
    partition_ack_wait_s,
    partition_consumer,
    partition_filter,
    stream_table_subjects,
    sync_partition_consumer,
    warn_if_ack_wait_above_bound,
    way_back_s,
)
from controller.floor.service import (
    FloorConfig,
)
from controller.floor.service_settings import FLOOR_IO_ERRORS, floor_nats_options
from controller.floor.store import Connection
from controller.uplink.wire import LEASE_BUCKET, partition_of
from controller.waits import ReconnectDelay, Waiter, close_quietly, wait_event

__all__ = [
    "DEFAULT_LEASE_TTL_S",
    "MAX_PARTITIONS",
    "FloorWorker",
    "LeaseTtlMismatch",
    "PartitionFence",
    "PartitionsMismatch",
    "WorkerSettings",
    "check_bucket_ttl",
    "check_partition_tokens",
    "claim_epoch",
    "ensure_partitions",
    "fence_for",
    "lease_key",
    "move_epoch",
    "partition_ack_wait_s",
    "partition_consumer",
    "partition_filter",
    "partition_of",
    "refuse_live_workers",
    "stream_table_subjects",
    "sync_partition_consumer",
]

log = structlog.get_logger("flushtable.floor.workers")


# --- the worker -------------------------------------------------------------------------------------


def _setter(event: asyncio.Event) -> Callable[[], Awaitable[None]]:
    """A nats-py callback (disconnected, closed) that sets ``event``."""

    async def set_it() -> None:
        event.set()

    return set_it


async def _wait_either(first: asyncio.Event, second: asyncio.Event, timeout_s: float) -> None:
    """Until either event is set, or ``timeout_s`` (in this task: see controller/waits.py)."""
    if first.is_set() or second.is_set():
        return
    waits = [asyncio.ensure_future(first.wait()), asyncio.ensure_future(second.wait())]
    try:
        await asyncio.wait(waits, timeout=timeout_s, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for waiting in waits:
            waiting.cancel()


async def _create_key(kv: KeyValue, key: str, value: bytes) -> int | None:
    """``kv.create``: the revision it wrote, or None when the key is there (another worker's). nats-py's
    create, refused because the key is there, reads the key to tell a deleted one (then written at its
    delete marker's revision) from a live one; a key the bucket's TTL removed between those two requests
    makes that read raise ``KeyNotFoundError`` out of create. A taker polls a dead worker's key at the
    moment it expires, so it met this: the error ended the lease loop's connection, and the reconnection
    excused the dead peer's silence for a new TTL (docs/floor.md "The 11.3 s takeover"). The key is gone
    then: created again, once."""
    for attempt in range(2):
        try:
            return await kv.create(key, value)
        except nats.js.errors.KeyWrongLastSequenceError:
            return None
        except nats.js.errors.KeyNotFoundError:
            if attempt:  # gone and back again at once: taken up at the next tick
                return None
    return None


async def _adopt_own_write(kv: KeyValue, held: HeldPartition, value: bytes) -> bool:
    """After an unanswered renewal: whether the key's newer revision is that renewal's (the key names
    this worker: ``value``, its revision above the one renewed from); then it is taken as the lease's
    revision. Another worker's create needs the key gone first and writes its own name, so a key naming
    this worker past its last known revision is this worker's write. Safe either way: the commits are
    fenced by the epoch in PostgreSQL (``fence_for``), which this does not touch."""
    try:
        entry = await kv.get(lease_key(held.partition))
    except nats.js.errors.KeyNotFoundError:
        return False
    if entry.value != value or entry.revision is None or entry.revision <= held.revision:
        return False
    held.revision = entry.revision
    held.unconfirmed = False
    return True


@dataclass
class WorkerStatus:
    acquired: int = 0
    lost: int = 0  # leases found gone or superseded at renewal
    released: int = 0  # given up for balance or at the end
    ticks: int = 0
    last_error: str = ""


# A request the cluster did not answer (a leader being elected, a node lost): sent again, the connection
# kept. A closed connection is not among them: the loop connects again (to any node).
_UNANSWERED: tuple[type[BaseException], ...] = (
    TimeoutError,
    nats.errors.NoRespondersError,
    nats.js.errors.NoStreamResponseError,
    nats.js.errors.ServiceUnavailableError,
)
# A renewal is tried at most this many times a tick (each bounded by LEASE_REQUEST_TIMEOUT_S), and never
# once the lease TTL has run out since its last renewal.
_RENEW_ATTEMPTS = 6


@dataclass
class FloorWorker:
    """One worker: its leases, and a ``FloorService`` per partition it holds (each with its own
    consumer, connections, and fence)."""

    config: FloorConfig
    settings: WorkerSettings
    clock: Callable[[], float] = time.monotonic
    status: WorkerStatus = field(default_factory=WorkerStatus)
    held: dict[int, HeldPartition] = field(default_factory=dict)
    _beats: dict[str, tuple[int, float]] = field(default_factory=dict)  # worker -> (beat, seen moving at)
    # Worker -> this worker's read of the beats before the one that saw its beat move: a dead peer's key
    # expires a TTL after its last beat, and counted from the later read its silence was up to an
    # interval late (``live_workers``).
    _beat_moved_after: dict[str, float] = field(default_factory=dict)
    _beats_read_s: float | None = None  # this worker's last read of the beats
    _beat: int = 0
    _beat_missed: bool = False  # a beat was not written (unanswered, or the connection lost) since the last
    # The clock at this worker's last beat written (its read of the beats): where the time it could not
    # write the bucket begins, when a beat is missed (``_excuse_unwritable_time``).
    _beat_written_s: float | None = None
    rng: random.Random = field(default_factory=random.Random)  # the reconnection's jitter
    reconnect_waiter: Waiter = wait_event  # how the wait between reconnections is waited (a test's records)
    # A reconnection's check of the stream's partition tokens, not yet answered (``run``): no lease is
    # taken meanwhile.
    _tokens_unchecked: bool = False
    # The held partitions' services and their consumers' filters (controller/floor/partition_services.py).
    services: PartitionServices = field(init=False)
    _started_s: float = field(init=False)  # at ``run`` (or its making): joining for a TTL after it
    _taken_before: bool = False  # a partition was taken: a joining worker's first take is of one only

    def __post_init__(self) -> None:
        self.services = PartitionServices(self.config, self.settings, self.clock)
        self._started_s = self.clock()

    def joining(self) -> bool:
        """Started less than a lease TTL ago, when peers started with it appear (the module's doc
        "Joining"; docs/floor.md "Ninth stop": what it cost two workers before)."""
        return self.clock() - self._started_s < self.settings.lease_ttl_s

    def live_workers(self) -> set[str]:
        """This worker and the peers whose beat moved within the lease TTL, counted from the earliest it
        can have moved (``_beat_moved_after``; docs/floor.md "The 11.3 s takeover"). Counted dead early,
        a peer loses nothing: its keys are taken only once expired, its commits fenced by the epoch."""
        now = self.clock()
        ttl_s = self.settings.lease_ttl_s
        live = {w for w, moved_after_s in self._beat_moved_after.items() if now - moved_after_s <= ttl_s}
        return live | {self.settings.worker}

    def share(self) -> int:
        return math.ceil(self.settings.partitions / len(self.live_workers()))

    def next_tick_in_s(self) -> float:
        """The renew interval; SUSPECT_TICK_S while another worker's beat has not moved for more than
        1.5 renew intervals and it is not yet past being live plus two intervals: it may be dead, and
        its partitions are free once their keys expire (TTL after its last renewal), which the next tick
        should see at once rather than up to a renew interval later (the killed worker's tables wait
        for it: docs/floor.md "Measured: workers on the cluster")."""
        interval_s = self.settings.renew_interval_s
        # Joining: balance moves a partition at the giver's tick and then the taker's; short ticks then.
        if self.joining() or self._peer_silent_for(1.5 * interval_s):
            return min(SUSPECT_TICK_S, interval_s)
        return interval_s

    def _peer_silent_for(self, silent_s: float) -> bool:
        """Whether another worker's beat has not moved for more than ``silent_s`` while it is not yet past
        being live plus two renew intervals (it may be dead)."""
        until_s = self.settings.lease_ttl_s + 2 * self.settings.renew_interval_s
        return bool(self._peers_silent_for(silent_s, until_s))

    def _peers_silent_for(self, silent_s: float, until_s: float) -> set[str]:
        """The other workers whose beat has not moved for more than ``silent_s`` and at most ``until_s``."""
        now = self.clock()
        return {
            name
            for name, (_, moved_s) in self._beats.items()
            if name != self.settings.worker and silent_s < now - moved_s <= until_s
        }

    def _read_ahead(self) -> None:
        """The partitions this worker does not hold and a peer that has missed a beat holds (silent for
        two renew intervals: a live worker beats every interval) read ahead (``PartitionServices.
        read_ahead``), so that taking one over once its key expires starts with its tables in memory.
        Kept while the peer stays silent (not only while it is suspect: on a loaded machine the take
        can come after the suspicion's window), dropped when it beats again."""
        # Until the peer is dropped from the beats' map (ten TTLs silent: ``_beat_once``).
        silent = self._peers_silent_for(2 * self.settings.renew_interval_s, 10 * self.settings.lease_ttl_s)
        not_held = [p for p in range(self.settings.partitions) if p not in self.held] if silent else []
        self.services.read_ahead(not_held, silent)

    def _preference(self, partition: int) -> int:
        # Each worker tries free partitions in an order of its own: two starting at once mostly try
        # different ones first (fewer lost creates), and a worker tends to get the same ones back.
        return zlib.crc32(f"{self.settings.worker}:{partition}".encode())

    async def run(self, stop: asyncio.Event) -> None:
        # The shared rule (controller/waits.py), capped also at the renew interval: a lease not
        # renewed within its TTL is lost, so no wait between reconnections is longer than a tick.
        retry = ReconnectDelay(
            initial_s=self.config.backoff_initial_s,
            max_s=min(self.config.backoff_max_s, self.settings.renew_interval_s),
            rng=self.rng,
        )
        retry.waiter = self.reconnect_waiter
        first_connection = True
        self._started_s = self.clock()
        try:
            while not stop.is_set():
                client: Client | None = None
                connection: Connection | None = None
                # Set when the connection drops (its node lost): the loop connects again to another node
                # at once, not at its next tick (a renew interval later).
                woken = asyncio.Event()
                wake = _setter(woken)
                try:
                    client = await nats.connect(
                        **floor_nats_options(self.config, f"flushtable-floor-leases-{self.settings.worker}"),
                        disconnected_cb=wake,
                        closed_cb=wake,
                    )
                    connection = await psycopg.AsyncConnection.connect(self.config.dsn, autocommit=True)
                    js = client.jetstream(timeout=LEASE_REQUEST_TIMEOUT_S)
                    # The stream's partition tokens, at every connection: the stream may have been made
                    # again meanwhile without them (its partition consumers then filter every table, and
                    # two workers would fold the same tables). At the first, before anything is taken; at
                    # a reconnect, at each tick until the stream answers (``_check_tokens``), the leases
                    # renewed meanwhile: after a node's loss its leader may be in an election for seconds.
                    if first_connection:
                        await check_partition_tokens(js, self.settings.partitions)
                        first_connection = False
                    else:
                        self._tokens_unchecked = True
                    kv = await js.key_value(LEASE_BUCKET)
                    await check_bucket_ttl(kv, self.settings.lease_ttl_s)
                    log.info("floor_worker_started", worker=self.settings.worker,
                             partitions=self.settings.partitions)  # fmt: skip
                    retry.reset()
                    while not stop.is_set():
                        await self.tick(kv, js, connection)
                        await _wait_either(stop, woken, self.next_tick_in_s())
                        if woken.is_set():
                            raise nats.errors.ConnectionClosedError
                except FLOOR_IO_ERRORS as error:
                    self._beat_missed = True  # the loop's next beat excuses the peers' silence meanwhile
                    self.status.last_error = f"{type(error).__name__}: {error}"[:300]
                    log.warning(
                        "floor_worker_retry", worker=self.settings.worker, error=self.status.last_error
                    )
                finally:
                    # The services run on while the loop connects again: a lease the bucket let expire
                    # meanwhile (its leader's node lost: no renewal could be written) is taken again in
                    # place at the next tick (``_retake``) if nobody claimed it, and a service whose
                    # partition another worker claimed is refused at its next commit (its fence).
                    # Stopped only after DROP_AFTER_TTLS TTLs unrenewed (this worker cut off).
                    await self._drop_expired()
                    await close_quietly(
                        connection.close() if connection else None, client.close() if client else None
                    )
                if not stop.is_set():
                    await retry.wait(stop)
        finally:
            await self._release_all()
            await self.services.await_stopped()

    async def tick(self, kv: KeyValue, js: JetStreamContext, connection: Connection) -> None:
        """One round: beat, renew what is held, release above the share, take free partitions below it."""
        self.status.ticks += 1
        started_s = self.clock()
        try:
            await self._tick(kv, js, connection)
            if self._tokens_unchecked:  # a reconnection's check, after the renewals (``run``)
                await self._check_tokens(js)
        except FLOOR_IO_ERRORS:
            self._beat_missed = True  # as ``run`` marks it: the tick alone (a test's) keeps the rule
            raise
        finally:
            took_s = self.clock() - started_s
            if took_s > self.settings.renew_interval_s:
                log.warning("floor_worker_slow_tick", worker=self.settings.worker, seconds=round(took_s, 2))

    async def _tick(self, kv: KeyValue, js: JetStreamContext, connection: Connection) -> None:
        await self._beat_unless_unanswered(kv)
        for held in [h for h in self.held.values() if h.task.done()]:  # fenced, or ended: given back
            await self._release(kv, held, reason="service_ended")
        # Renewed together (the bucket's round trips overlap): a worker's event loop is shared with its
        # partitions' services, and one renewal after another could outlast the TTL on a busy process.
        renewing = list(self.held.values())
        sent_s = self.clock()  # a renewal counts from when it was sent: the TTL runs from the server's write
        outcomes = await asyncio.gather(*(self._renew(kv, held) for held in renewing))
        current = await renew_epochs(
            connection,
            {h.partition: h.epoch for h, lost in zip(renewing, outcomes, strict=True) if lost is None},
            lease_ttl_s=self.settings.lease_ttl_s,
        )
        for held, lost_in_bucket in zip(renewing, outcomes, strict=True):
            lost = lost_in_bucket
            if lost is None and held.partition not in current:
                lost = "PostgreSQL holds a newer epoch"
            elif lost is not None and not held.task.done() and await self._retake(kv, connection, held):
                lost = None
            if lost is None:
                held.renewed_s = sent_s
            else:
                self.services.stop(held)
                self.held.pop(held.partition, None)
                self.status.lost += 1
                log.warning("floor_lease_lost", worker=self.settings.worker, partition=held.partition,
                            epoch=held.epoch, why=lost)  # fmt: skip
        self._read_ahead()
        share = self.share()
        for partition in sorted(self.held, key=self._preference, reverse=True)[
            : max(0, len(self.held) - share)
        ]:
            await self._release(kv, self.held[partition], reason="balance")
        if len(self.held) < share and not self._tokens_unchecked:  # nothing taken before the check
            # Joining, the first take is of one: a peer started with it may not have beaten yet.
            wanted = min(share, len(self.held) + 1) if self.joining() and not self._taken_before else share
            for partition in sorted(range(self.settings.partitions), key=self._preference):
                if len(self.held) >= wanted:
                    break
                if partition not in self.held:
                    await self._try_acquire(kv, js, connection, partition)
        await self.services.widen_filters(js, self.held, self.status.ticks)
        if 0 in self.held:  # one worker reports the nodes (the holder of partition 0)
            with contextlib.suppress(*FLOOR_IO_ERRORS):
                await record_nodes(connection, js, self.settings.worker)

    async def _check_tokens(self, js: JetStreamContext) -> None:
        """The stream's partition tokens after a reconnect (``run``): ``StreamWithoutPartitionTokens``
        (one line; the worker stops, `floor serve` exits 2) if the stream stores the journals without
        them; a stream that does not answer (an election, or gone) is asked again at the next tick."""
        # Bounded below the JetStream context's timeout: asked each tick while the stream elects, a 1.5 s
        # wait would push the next renewal past a short TTL (--lease-ttl 1: a renewal every 0.33 s).
        bound_s = min(LEASE_REQUEST_TIMEOUT_S, self.settings.renew_interval_s / 2)
        try:
            await asyncio.wait_for(check_partition_tokens(js, self.settings.partitions), bound_s)
        except FLOOR_IO_ERRORS as error:
            log.warning("floor_worker_tokens_unchecked", worker=self.settings.worker,
                        error=f"{type(error).__name__}: {error}"[:200])  # fmt: skip
            return
        self._tokens_unchecked = False

    async def _beat_unless_unanswered(self, kv: KeyValue) -> None:
        try:
            await self._beat_once(kv)
        except _UNANSWERED as error:
            self._beat_missed = True
            # The renewals matter more than the beat (a missed beat only looks stale for a while): they
            # go on, each retried (``_renew``).
            log.warning("floor_worker_beat_unanswered", worker=self.settings.worker,
                        error=f"{type(error).__name__}: {error}"[:200])  # fmt: skip

    async def _beat_once(self, kv: KeyValue) -> None:
        now = self.clock()
        # A beat seen moved now was written after the previous read was sent; a peer first seen is
        # counted from now (a joining worker's view, unchanged).
        previous_s = now if self._beats_read_s is None else self._beats_read_s
        moved_after_s = max(previous_s, now - self.settings.renew_interval_s)
        for _ in range(5):  # a revision conflict is another worker's beat: read again and retry
            try:
                entry = await kv.get(MEMBERS_KEY)
                beats = json.loads(entry.value or b"{}")
                revision: int | None = entry.revision
            except nats.js.errors.KeyNotFoundError:
                beats, revision = {}, None
            self._beats_read_s = now
            for name, beat in beats.items():
                seen = self._beats.get(name)
                if seen is None or seen[0] != beat:
                    self._beats[name] = (int(beat), now)
                    self._beat_moved_after[name] = now if seen is None else moved_after_s
            # Workers silent for ten TTLs are dropped from the map (they are long past being live).
            beats = {
                n: b for n, b in beats.items() if now - self._beats[n][1] <= 10 * self.settings.lease_ttl_s
            }
            self._beat += 1
            beats[self.settings.worker] = self._beat
            value = json.dumps(beats, sort_keys=True).encode()
            try:
                if revision is None:
                    await kv.create(MEMBERS_KEY, value)
                else:
                    await kv.update(MEMBERS_KEY, value, last=revision)
            except nats.js.errors.KeyWrongLastSequenceError:
                continue
            self._excuse_unwritable_time(now)
            return

    def _excuse_unwritable_time(self, now: float) -> None:
        """After a beat this worker could not write, the time since its last beat written is not counted
        in any peer's silence (``excuse_silence``)."""
        if self._beat_missed:
            # Unknown (no beat written yet by this worker): every peer counted from now, as a first sight.
            since_s = self._beat_written_s
            unwritable_s = now - since_s if since_s is not None else math.inf
            back_s = way_back_s(self.settings, self.config.backoff_max_s)
            excuse_silence(self._beats, self._beat_moved_after, self.settings.worker, now, unwritable_s,
                           earliest_s=now - self.settings.lease_ttl_s + back_s)  # fmt: skip
            self._beat_missed = False
        self._beat_written_s = now

    def _value(self) -> bytes:
        return json.dumps({"worker": self.settings.worker}).encode()

    async def _renew(self, kv: KeyValue, held: HeldPartition) -> str | None:
        """Renew the lease in the bucket at its own revision; None, or why it is lost. A request the
        cluster did not answer (a leader election after a node's loss) is sent again at once, each
        bounded by LEASE_REQUEST_TIMEOUT_S, while the TTL since the last renewal has not run out: one
        unanswered request no longer costs the tick (and the next tick's reconnection) the lease."""
        key = lease_key(held.partition)
        for _ in range(_RENEW_ATTEMPTS):
            try:
                held.revision = await kv.update(key, self._value(), last=held.revision)
            except (nats.js.errors.KeyWrongLastSequenceError, nats.js.errors.KeyNotFoundError):
                if held.unconfirmed and await _adopt_own_write(kv, held, self._value()):
                    continue  # renewed again from the revision the unanswered write made
                since_s = self.clock() - held.renewed_s
                return (
                    f"the key is no longer at this worker's revision ({since_s:.1f} s since the last renewal)"
                )
            except _UNANSWERED as error:
                held.unconfirmed = True
                if self.clock() - held.renewed_s >= self.settings.lease_ttl_s:
                    raise
                if not isinstance(error, TimeoutError):
                    # No responders comes at once (no leader yet): a pause, so the attempts span the
                    # election rather than a fraction of a second (a retry's pause, not a wait).
                    await asyncio.sleep(UNANSWERED_RETRY_S)
                continue
            held.unconfirmed = False
            return None
        raise TimeoutError(f"partition {held.partition}: {_RENEW_ATTEMPTS} renewals unanswered")

    async def _retake(self, kv: KeyValue, connection: Connection, held: HeldPartition) -> bool:
        """The key is gone (expired while the bucket had no leader: its node lost, an election of 4-9 s
        against a 6 s TTL) or at another revision; whether this worker took it again in place, its
        service kept running: the key created anew (one winner, as any acquisition) and PostgreSQL's
        epoch moved from this worker's own to the new one (``move_epoch``; refused if anyone claimed
        the partition meanwhile). Before, the service was stopped and a new one started from nothing
        (its connections, its tables' state read back) after every such loss."""
        key = lease_key(held.partition)
        revision = await _create_key(kv, key, self._value())
        if revision is None:
            return False  # another worker's key
        held.fence.epochs.add(revision)  # accepted from the moment PostgreSQL may hold it
        if not await move_epoch(connection, held.partition, held.epoch, revision, self.settings.worker):
            held.fence.epochs.discard(revision)
            with contextlib.suppress(*FLOOR_IO_ERRORS):
                await kv.delete(key, last=revision)
            return False
        held.fence.epochs.intersection_update({revision})
        log.warning("floor_lease_retaken", worker=self.settings.worker, partition=held.partition,
                    epoch=revision, previous_epoch=held.epoch)  # fmt: skip
        held.epoch = held.revision = revision
        held.unconfirmed = False
        return True

    async def _try_acquire(
        self, kv: KeyValue, js: JetStreamContext, connection: Connection, partition: int
    ) -> None:
        key = lease_key(partition)
        # The key's value names its worker (what an operator reading the bucket sees); the revision the
        # create wrote is the epoch.
        created = await _create_key(kv, key, self._value())
        if created is None:
            return  # another worker's
        epoch = revision = created
        # The takeover's timeline (docs/floor.md "A worker's takeover, timed"): from the key taken to the
        # service started, each step's seconds since the take.
        taken_s = self.clock()
        log.info("floor_lease_taken", worker=self.settings.worker, partition=partition, epoch=epoch)
        try:
            claimed = await claim_epoch(
                connection,
                partition,
                self.settings.partitions,
                epoch,
                self.settings.worker,
                lease_ttl_s=self.settings.lease_ttl_s,
            )
        except PartitionsMismatch:
            # The key is given back; the refusal ends the worker (flushtable floor serve: one line, 2).
            with contextlib.suppress(*FLOOR_IO_ERRORS):
                await kv.delete(key, last=revision)
            raise
        if not claimed:
            log.error(
                "floor_lease_epoch_refused",
                worker=self.settings.worker,
                partition=partition,
                epoch=epoch,
                why="PostgreSQL holds a newer epoch: was the floor_leases bucket deleted and made again?",
            )
            with contextlib.suppress(*FLOOR_IO_ERRORS):
                await kv.delete(key, last=revision)
            return
        try:
            await self.services.sync_consumer(js, partition, self.status.ticks)
        except BaseException:
            with contextlib.suppress(*FLOOR_IO_ERRORS):
                await kv.delete(key, last=revision)
            raise
        synced_s = self.clock()
        self.held[partition] = self.services.start(partition, epoch, revision)
        self._taken_before = True
        self.status.acquired += 1
        log.info("floor_lease_acquired", worker=self.settings.worker, partition=partition, epoch=epoch,
                 claimed_and_consumer_synced_s=round(synced_s - taken_s, 3))  # fmt: skip
        await warn_if_ack_wait_above_bound(js, self.settings, partition)

    async def _release(self, kv: KeyValue | None, held: HeldPartition, *, reason: str) -> None:
        """Stop the partition's service first (nothing more of it commits), then delete the key at its
        own revision (a key someone else wrote meanwhile is not ours to delete)."""
        self.services.stop(held)
        self.held.pop(held.partition, None)
        if kv is not None:
            with contextlib.suppress(*FLOOR_IO_ERRORS):
                await kv.delete(lease_key(held.partition), last=held.revision)
        self.status.released += 1
        log.info("floor_lease_released", worker=self.settings.worker, partition=held.partition, reason=reason)

    async def _drop_expired(self) -> None:
        now = self.clock()
        for held in list(self.held.values()):
            if now - held.renewed_s >= DROP_AFTER_TTLS * self.settings.lease_ttl_s:
                self.services.stop(held)
                self.held.pop(held.partition, None)
                self.status.lost += 1

    async def _release_all(self) -> None:
        """At a clean stop: every service stopped, and the keys deleted so that the other workers take
        the partitions at their next tick rather than after the TTL."""
        if not self.held:
            return
        for held in self.held.values():
            held.stop.set()
        client: Client | None = None
        kv: KeyValue | None = None
        with contextlib.suppress(*FLOOR_IO_ERRORS):
            async with asyncio.timeout(5):
                client = await nats.connect(**floor_nats_options(self.config))
                kv = await client.jetstream().key_value(LEASE_BUCKET)
        try:
            for held in list(self.held.values()):
                await self._release(kv, held, reason="stopping")
        finally:
            if client is not None:
                with contextlib.suppress(Exception):
                    await client.close()

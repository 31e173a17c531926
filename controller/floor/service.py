"""`flushtable floor serve`: the durable JetStream consumer that writes every table's journal to
PostgreSQL (docs/floor.md "The floor service").

Three parts: this module is the NATS side (the consumer loop, acks, gap filling from the stream) and
composes the other two: ``controller/floor/checks.py`` (the per-table checks of one message, pure given
the table's projection) and ``controller/floor/store.py`` (PostgreSQL: a table's projection read back,
the look-ups the checks need, and one batch's writes).

Each fetched batch is checked and folded in memory, written in one PostgreSQL transaction, and acked
only after the commit. Per table:

- exactly once per (table, seq): an entry already on the floor with the same hash is a resend and is
  skipped; with another hash it is a **fork** (alert, the message quarantined);
- the chain: the next entry must be the last seq + 1 (else a **gap**), chain to the last hash (else a
  **broken chain**) and hash to its own hash (else a **bad hash**); any of those raises a floor alert
  naming the table and entry and **quarantines the table** (nothing more of it is projected until an
  operator looks); the stream keeps flowing for every other table;
- the one reducer (``TableState.apply``) folds the public parts, so the floor's phase, rounds and meters
  are the table's own; a private part is stored only if ``sha256(private_text)`` is its entry's
  commitment (else an alert, the message quarantined);
- an entry of a round's play for a round the table already closed (wagers locked again in a settled round, a
  second close) or never started is taken with an alert, ``entry_after_close`` or ``entry_without_start``;
- anything undecodable, of an unknown kind, or naming another table than its subject is quarantined with
  an alert, and acked (it will never become valid).

If PostgreSQL fails, the batch is rolled back, its messages are not acked (they are nak'd, so they come
back at once), the in-memory state of its tables is dropped (it is read back from PostgreSQL), and the
service retries with backoff. ``max_ack_pending`` on the consumer equals the batch size, so messages
redelivered after a crash come back before anything newer: each table's order is kept.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
import traceback
from collections.abc import Callable, Sequence

import nats
import nats.errors
import nats.js.errors
import psycopg
import structlog
from nats.aio.client import Client

from controller.floor import checks, progressive_view, release
from controller.floor.checks import TableProjection
from controller.floor.held import Quarantine, take_held_private, take_private, take_resend
from controller.floor.in_progress import DEFAULT_LIMIT_S, kept_in_progress
from controller.floor.intake import Delivery, FloorClient
from controller.floor.messages import (
    STREAM_SOURCE_HEADER,
    Incoming,
    by_stream_seq,
    site_of_source,
    site_of_subject,
    subject_parts,
    table_of_subject,
)
from controller.floor.ownership import Fence, Fenced, Owns, check_fence
from controller.floor.projections import Projections, ReadAhead
from controller.floor.puller import ACK, NAK, Puller, pull_status_error
from controller.floor.service_settings import FLOOR_IO_ERRORS, FloorConfig, FloorStatus, floor_nats_options
from controller.floor.session import Session, surveillance_loop
from controller.floor.store import Batch, Connection, write_batch
from controller.floor.stream_reads import MAX_GAP_FILL, StreamReads
from controller.floor.sweep import IdleSweep
from controller.floor.take import Decoded, QuarantineOf, decoded_for, mark_taken, raise_alert, take_refused
from controller.uplink import wire
from controller.waits import ReconnectDelay, raise_if_cancelled

# The service's parts, named here too: the floor's callers and tests import them from the service.
__all__ = [
    "STREAM_SOURCE_HEADER",
    "Fence",
    "Fenced",
    "FloorConfig",
    "FloorService",
    "FloorStatus",
    "Incoming",
    "Owns",
    "Puller",
    "TableProjection",
    "pull_status_error",
    "site_of_source",
    "site_of_subject",
    "table_of_subject",
]

log = structlog.get_logger("flushtable.floor")
# A batch taken longer than this sends ``+WPI`` for its messages (controller/floor/in_progress.py): a
# third of the shortest ack_wait a floor consumer is given (1.5 s), and nothing sent by a shorter batch.
IN_PROGRESS_INTERVAL_S = 0.5

# Subjects whose partition a partition's service remembers (``_OwnedSubjects``): a floor's tables, one each.
_MINE_REMEMBERED = 65_536


def _every_subject(subject: str) -> bool:
    """The one-worker floor's service: every message is its own."""
    return True


class _OwnedSubjects:
    """``owns`` of a subject's table, remembered a subject (a table's messages share one): ``owns``
    hashes the table id in Python, and a partition's service asks it of every message. A subject that
    names no table is partition 0's, by its empty table id. Bounded: subjects are the tables', but a
    table's messages are hostile."""

    def __init__(self, owns: Owns) -> None:
        self._owns = owns
        self._mine: dict[str, bool] = {}

    def __call__(self, subject: str) -> bool:
        mine = self._mine.get(subject)
        if mine is None:
            if len(self._mine) >= _MINE_REMEMBERED:
                self._mine.clear()
            mine = self._mine[subject] = self._owns(subject_parts(subject)[0] or "")
        return mine


# The floor's own I/O failing (FLOOR_IO_ERRORS, service_settings.py): retried with backoff (the batch
# rolled back and nak'd), never blamed on a table's message. Anything else raised while a message is
# taken is that message's (``_Refused``).
class _Refused(Exception):
    """A table's message raised while the floor took it: the batch is rolled back, and the message
    quarantines its table when it is taken again."""

    def __init__(self, stream_seq: int, table_id: str, reason: str) -> None:
        super().__init__(f"table {table_id}: stream seq {stream_seq}: {reason}")
        self.stream_seq = stream_seq
        self.table_id = table_id
        self.reason = reason


_NOT_A_MESSAGES_ERROR: tuple[type[BaseException], ...] = (_Refused, *FLOOR_IO_ERRORS)


def _delivered_times(reply: str) -> int:
    """How many times JetStream has delivered a message, from its ack subject (the token before the
    stream sequence: ``stream_seq_of_reply``'s two shapes); 1 when it cannot be read."""
    tokens = reply.split(".")
    token = tokens[4] if len(tokens) == 9 else tokens[6] if len(tokens) > 10 else "1"
    return int(token) if token.isdigit() else 1


def _log_first_delivery(consumer: str, messages: Sequence[Delivery], since_start_s: float) -> None:
    # Delivered before (``$JS.ACK.<stream>.<consumer>.<delivered>...``): another holder's unacked
    # messages, back after the consumer's ack_wait.
    redelivered = sum(1 for m in messages if _delivered_times(m.reply) > 1)
    log.info("floor_first_delivery", consumer=consumer, messages=len(messages),
             redelivered=redelivered, since_start_s=since_start_s)  # fmt: skip


def _raised_in(error: BaseException) -> str:
    """The floor's own innermost call the error came through (``module.function``): which of the
    service's requests a retry was for, which a timeout's message does not say."""
    where = ""
    for frame, _ in traceback.walk_tb(error.__traceback__):
        module = str(frame.f_globals.get("__name__", ""))
        if module.startswith("controller."):
            where = f"{module}.{frame.f_code.co_name}"
    return where


class FloorService:
    def __init__(  # noqa: PLR0913 - the partition's parts, keyword-only, each None for the one-worker floor
        self,
        config: FloorConfig,
        *,
        retry: ReconnectDelay | None = None,
        owns: Owns | None = None,
        fence: Fence | None = None,
        in_progress_interval_s: float = IN_PROGRESS_INTERVAL_S,
        in_progress_limit_s: float = DEFAULT_LIMIT_S,
        read_ahead: asyncio.Task[ReadAhead] | None = None,
    ) -> None:
        self.config = config
        # A partition's projections read before this service held it (a worker taking over a dead
        # peer's partition: controller/floor/partition_services.py), taken at a batch once read.
        self._read_ahead = read_ahead
        # A batch still being taken after this long tells JetStream so (``+WPI``), again each interval,
        # so it is not redelivered meanwhile (controller/floor/in_progress.py); at most a third of the
        # consumer's ack_wait (a partitioned worker passes its consumer's).
        self._in_progress_interval_s = in_progress_interval_s
        self._in_progress_limit_s = in_progress_limit_s  # and for this long at most (in_progress.py)
        # A partitioned worker's (controller/floor/workers.py): which tables are this service's, and
        # the lease check each commit makes. Both None: the one-worker floor, every table, no check.
        self._owns = owns
        # Whether a message is this service's: always, unless it is a partition's (then its table's
        # partition decides, remembered a subject).
        self._is_mine: Callable[[str], bool] = _OwnedSubjects(owns) if owns is not None else _every_subject
        self._fence = fence
        self.fenced = False  # set when a commit was refused for a lost lease: the service has ended
        self.status = FloorStatus()
        self._projections = Projections()  # the tables held in memory, shared by the parts below
        self.site_of: dict[str, str] = {}  # table -> the site token of its subject
        # The stream read beside the consumer (gaps, a renumbered stream): its ``js`` set while connected.
        self._reads = StreamReads(self._take, self.status, self.site_of)
        self._sweep = IdleSweep(
            config.consumer, self._projections, self._reads, self.status, owns=owns, fence=fence
        )
        # The wait between reconnections: the shared rule (controller/waits.py), the config's backoff.
        self._retry = retry or ReconnectDelay.of(config, random.Random())
        self.committed = asyncio.Event()  # set after each commit (tests and the demo wait on it)
        self._set_aside: set[int] = set()  # stream seqs a release set aside: never projected
        # Messages that raised while taken (stream seq -> the error): they quarantine their table. Kept
        # in memory: after a restart such a message raises once more (one batch rolled back) and is
        # remembered again.
        self._refused: dict[int, str] = {}
        # The takeover's timeline (docs/floor.md "A worker's takeover, timed"): the service's start, its
        # first delivery and its first commit, logged once each with the seconds since the start.
        self._started_s = time.monotonic()
        self._first_delivery_logged = False
        self._first_commit_logged = False

    # --- the loop ---------------------------------------------------------------------------------
    async def run(self, stop: asyncio.Event) -> None:
        self._started_s = time.monotonic()
        retry = self._retry
        retry.reset()
        while not stop.is_set():
            raise_if_cancelled()
            session = Session()
            try:
                client, connection, puller = await self._open(session, stop)
                retry.reset()
                await self._consume(stop, client, connection, puller)
            except Fenced as error:
                # The lease is another worker's now: nothing of this service may commit again. Ended,
                # not retried (controller/floor/workers.py starts a new one if the lease comes back).
                self.fenced = True
                self.status.last_error = f"Fenced: {error}"[:300]
                log.warning("floor_fenced", consumer=self.config.consumer, error=str(error))
            except FLOOR_IO_ERRORS as error:
                self.status.last_error = f"{type(error).__name__}: {error}"[:300]
                log.warning("floor_retry", consumer=self.config.consumer, error=self.status.last_error,
                            raised_in=_raised_in(error))  # fmt: skip
            except Exception as error:
                # Not a table's message (those are _Refused) nor the floor's I/O: a bug. Said loudly,
                # and retried like an outage: the service never ends for it.
                self.status.last_error = f"{type(error).__name__}: {error}"[:300]
                log.exception("floor_unexpected_error", error=self.status.last_error)
            finally:
                await session.close()
            if stop.is_set() or self.fenced:
                break
            await retry.wait(stop)

    async def _open(self, session: Session, stop: asyncio.Event) -> tuple[FloorClient, Connection, Puller]:
        """Connect to NATS and PostgreSQL (kept in ``session``, which closes them), start the pull and
        the surveillance publisher."""
        client = session.client = FloorClient()  # the floor's deliveries raw (controller/floor/intake.py)
        await client.connect(**floor_nats_options(self.config, "flushtable-floor"))
        # Autocommit: each `transaction()` block is a real BEGIN ... COMMIT. Without it, a read outside a
        # block (the idle sweep's) opened a transaction that never ended, and every later batch's block
        # became a savepoint inside it: acked, never committed.
        connection = session.connection = await psycopg.AsyncConnection.connect(
            self.config.dsn, autocommit=True
        )
        js = client.jetstream()
        self._reads.js = js
        await self._reads.learn_tokens_through_election(client, stop, self.config.consumer)
        puller = await Puller.start(client, self.config.consumer)
        # Surveillance events: a task of its own with its own connection, so publishing never holds up
        # the intake (and a slow or missing SURVEILLANCE stream never stops it).
        if self.config.side_duties:
            session.surveillance_task = asyncio.create_task(
                surveillance_loop(stop, js, self.config, self.status)
            )
        log.info("floor_consuming", consumer=self.config.consumer, since_start_s=self._since_start_s())
        return client, connection, puller

    async def _consume(
        self, stop: asyncio.Event, client: FloorClient, connection: Connection, puller: Puller
    ) -> None:
        """Batches taken until ``stop``; between them, releases applied, the progressive reconciled and,
        when the consumer has nothing, the idle sweep. Any I/O error ends it (the caller retries)."""
        async with connection.transaction():  # a read alone would leave a transaction open
            self._set_aside = await release.set_aside_stream_seqs(connection)
        last_sweep_s = time.monotonic()
        last_release_poll_s = last_reconcile_s = -float("inf")
        while not stop.is_set():
            raise_if_cancelled()  # a cancel swallowed by nats-py's wait for a reply ends it still
            try:
                if time.monotonic() - last_release_poll_s >= self.config.release_poll_interval_s:
                    last_release_poll_s = time.monotonic()
                    await self.apply_releases(connection)
                if (
                    self.config.side_duties
                    and time.monotonic() - last_reconcile_s >= self.config.reconcile_interval_s
                ):
                    last_reconcile_s = time.monotonic()
                    await self.reconcile_progressive(connection)
                messages = await puller.fetch(self.config.batch_size, self.config.fetch_timeout_s)
                if messages:
                    await self._handle(connection, client, messages)
                    continue
                if client.is_closed or not client.is_connected:
                    raise nats.errors.ConnectionClosedError
                if time.monotonic() - last_sweep_s > self.config.sweep_interval_s:
                    last_sweep_s = time.monotonic()
                    await self._sweep.if_idle(client, connection)
            except _Refused as refused:
                # Rolled back (nothing of the batch is on the floor, its messages nak'd): taken again,
                # the message quarantines its table instead of being taken (``_take``).
                self._refused[refused.stream_seq] = refused.reason
                log.error("floor_message_refused", table_id=refused.table_id,
                          stream_seq=refused.stream_seq, error=refused.reason)  # fmt: skip

    async def _adopt_read_ahead(self, connection: Connection) -> None:
        """The projections read ahead of this service's start, once read, those still current taken as
        its own (``Projections.adopt``); not waited for: until they are, each batch reads its own
        tables (``_read_batch_tables``)."""
        read_ahead = self._read_ahead
        if read_ahead is None or not read_ahead.done():
            return
        self._read_ahead = None
        if read_ahead.cancelled() or read_ahead.exception() is not None:
            # Only a head start lost: the tables are read at their need, as without it.
            why = "cancelled" if read_ahead.cancelled() else repr(read_ahead.exception())[:200]
            log.warning("floor_read_ahead_unused", consumer=self.config.consumer, error=why)
            return
        read = read_ahead.result()
        taken = await self._projections.adopt(connection, read)
        log.info("floor_read_ahead_taken", consumer=self.config.consumer, tables=taken,
                 stale=len(read) - taken, since_start_s=self._since_start_s())  # fmt: skip

    async def _read_batch_tables(self, connection: Connection, incoming: Sequence[Incoming]) -> None:
        """The batch's tables not in memory read back together (``Projections.read_many``: two
        statements), not one after another as each is met: a new service's first batch (a takeover, a
        restart) met hundreds, 70 ms each at a load of 40-50 (docs/floor.md "A worker's takeover,
        timed")."""
        await self._adopt_read_ahead(connection)
        # Each distinct subject once (a set of strings, built in C), its table remembered (``subject_parts``):
        # ``table_of_subject`` checks its partition tokens by six hashes of the table id (before: each batch
        # again for each of its tables, 4% of the service's calls in its profile).
        wanted = (subject_parts(subject)[0] for subject in {message.subject for message in incoming})
        await self._projections.read_many(connection, [t for t in wanted if t is not None])

    @property
    def tables_read_back(self) -> int:
        """Tables read back from PostgreSQL at their need (their row, then each entry through the
        reducer; a batch's together) since the service started: what a takeover's first batch waited
        for before the read ahead (docs/floor.md "A worker's takeover, timed")."""
        return self._projections.read_back

    def _since_start_s(self) -> float:
        return round(time.monotonic() - self._started_s, 3)

    def _first_delivery(self, messages: Sequence[Delivery]) -> None:
        if not self._first_delivery_logged:
            self._first_delivery_logged = True
            _log_first_delivery(self.config.consumer, messages, self._since_start_s())

    async def _handle(self, connection: Connection, client: Client, messages: list[Delivery]) -> None:
        self._first_delivery(messages)
        if self._owns is not None:
            # A partition's consumer sees every table's messages (docs/floor.md "Partitioned floor
            # workers": nats-server 2.9 filters no hash); another partition's are its consumer's, acked
            # here unread.
            others = [message for message in messages if not self._is_mine(message.subject)]
            if others:
                messages = [message for message in messages if self._is_mine(message.subject)]
                for message in others:
                    await client.publish(message.reply, ACK)
                if not messages:
                    return
        # The stream's order; redeliveries of one batch come back together (max_ack_pending).
        incoming: list[Incoming] = sorted(messages, key=by_stream_seq)  # each delivery is its Incoming
        replies = [message.reply for message in messages]
        try:
            async with (
                kept_in_progress(client, replies, self._in_progress_interval_s, self._in_progress_limit_s),
                connection.transaction(),
            ):
                batch = Batch()
                await self._read_batch_tables(connection, incoming)
                await self._take_all(connection, batch, incoming)
                await write_batch(connection, batch)
                await check_fence(self._fence, connection)
        except BaseException as error:
            # Nothing of the batch is on the floor: forget what it folded, and have it sent again.
            self._projections.forget_all()
            if not isinstance(error, _Refused):
                self.status.db_failures += 1
            for reply in replies:
                with contextlib.suppress(Exception):
                    await client.publish(reply, NAK)
            raise
        for projection in batch.tables.values():
            projection.touched_rounds.clear()
        # Each one: an ack never covers a message this batch did not hold. Buffered by the client: no
        # round trip each; the floor's own client queues the batch's acks as one command.
        if isinstance(client, FloorClient):
            await client.publish_empty(replies)
        else:
            for reply in replies:
                await client.publish(reply, ACK)
        self.status.batches += 1
        self.committed.set()
        if not self._first_commit_logged:
            self._first_commit_logged = True
            log.info("floor_first_commit", consumer=self.config.consumer, messages=len(replies),
                     tables=len(batch.tables), tables_read_back=self._projections.read_back,
                     since_start_s=self._since_start_s())  # fmt: skip

    # --- one message ------------------------------------------------------------------------------
    async def _take(self, connection: Connection, batch: Batch, message: Incoming) -> None:
        """One message through the checks. A table's messages are hostile (its credentials can extend
        its own unkeyed chain with anything): whatever error taking one raises that is not the floor's
        own I/O (NATS, PostgreSQL, the network) becomes ``_Refused`` for that message, the batch is
        rolled back and taken again, and then that message quarantines its table with the error as
        the reason (take.py ``take_refused``) instead of being taken: the service never stops for it,
        and no other table is touched."""
        await self._take_all(connection, batch, (message,))

    async def _take_all(self, connection: Connection, batch: Batch, messages: Sequence[Incoming]) -> None:
        """Each message through the checks in order, as ``_take`` takes one, in one coroutine: one a
        message was a measurable share of its CPU, so most are taken by a plain call (``_take_now``)."""
        take_now = self._take_now
        for message in messages:
            try:
                now = take_now(batch, message)
                if now is not True:
                    await self._take_one(connection, batch, message, None if now is False else now)
            except _NOT_A_MESSAGES_ERROR:
                raise
            except Exception as error:
                table_id = table_of_subject(message.subject) or "?"
                reason = f"{type(error).__name__}: {error}"[:300]
                raise _Refused(message.stream_seq, table_id, reason) from error

    def _take_now(self, batch: Batch, message: Incoming) -> bool | Decoded:
        """``_take_one`` without a coroutine, for the message of a table held in memory that waits for
        nothing: True, taken (or refused); False, nothing done; decoded, for ``_take_one`` to go on with
        (a resend, a message past the table's last entry, a commitment PostgreSQL holds)."""
        stream_seq = message.stream_seq
        subject_table, subject_site = subject_parts(message.subject)
        if subject_table is None or stream_seq in self._set_aside or stream_seq in self._refused:
            return False
        projection = self._projections.held(subject_table)
        if projection is None or projection.quarantined_at_seq is not None:
            return False
        quarantine = QuarantineOf(self.status, batch, message, subject_table)
        self.site_of[subject_table] = subject_site or ""
        decoded = decoded_for(message, subject_table, subject_site, quarantine)
        if decoded is None:
            return True
        quarantined_before = len(batch.quarantine)
        if isinstance(decoded, wire.EntryMessage):
            if decoded.seq != projection.last_seq + 1:  # a resend (at or below), or past a gap
                return decoded
            batch.tables[subject_table] = projection
            self._take_next_entry(batch, projection, decoded, stream_seq, quarantine)
        else:
            if decoded.seq > projection.last_seq:  # its entry not on the floor yet: the stream is read
                return decoded
            batch.tables[subject_table] = projection
            if not take_held_private(batch, projection, decoded, stream_seq, quarantine, status=self.status):
                return decoded
        if len(batch.quarantine) == quarantined_before:
            mark_taken(projection, decoded, stream_seq)
        return True

    async def _take_one(  # noqa: PLR0912 - one branch per way a message is taken or refused, in the order the checks run
        self, connection: Connection, batch: Batch, message: Incoming, decoded: Decoded | None = None
    ) -> None:
        """One message the whole way; ``decoded``: its body, when ``_take_now`` decoded it already."""
        stream_seq = message.stream_seq
        subject_table, subject_site = subject_parts(message.subject)
        if stream_seq in self._set_aside:
            # A release set it aside (it did not continue its table's chain): never projected, but seen,
            # so that the idle sweep does not read a set-aside tail again and again.
            if subject_table is not None:
                projection = await self._projections.of(connection, subject_table)
                projection.last_seen_stream_seq = max(projection.last_seen_stream_seq, stream_seq)
            return
        quarantine = QuarantineOf(self.status, batch, message, subject_table or "?")
        if subject_table is None:
            quarantine(f"subject {message.subject!r} is no table's journal", alert_kind="bad_subject")
            return
        self.site_of[subject_table] = subject_site or ""
        if stream_seq in self._refused:
            refused = (subject_table, self._refused[stream_seq])
            await take_refused(connection, batch, self._projections, message, refused, quarantine)
            return
        if decoded is None:
            decoded = decoded_for(message, subject_table, subject_site, quarantine)
            if decoded is None:
                return
        # The table's projection is nearly always in memory: no coroutine for it then (a message's
        # few coroutines were a measurable share of its CPU).
        projection = self._projections.held(subject_table) or await self._projections.of(
            connection, subject_table
        )
        batch.tables[subject_table] = projection
        if projection.quarantined_at_seq is not None:
            quarantine(
                f"the table is quarantined after entry {projection.quarantined_at_seq} "
                f"({projection.quarantine_reason})",
                alert_kind=None,
                seq=decoded.seq,
            )
            return
        quarantined_before = len(batch.quarantine)
        if checks.needs_stream_read(projection, decoded):
            # Beyond what the floor holds: the consumer may have skipped messages (a broker or a floor
            # service killed before its state was stored): the stream itself is asked for what lies
            # between, before anything is called a gap.
            await self._reads.fill_gap(
                connection, batch, projection, before_stream_seq=stream_seq, pending=decoded
            )
            if projection.quarantined():
                quarantine(f"the table is quarantined after entry {projection.quarantined_at_seq}",
                           alert_kind=None, seq=decoded.seq)  # fmt: skip
                return
        if isinstance(decoded, wire.PrivateMessage):
            await take_private(
                connection, batch, projection, decoded, stream_seq, quarantine, status=self.status
            )
        elif checks.is_resend(decoded, projection):
            await take_resend(connection, batch, projection, decoded, quarantine, status=self.status)
        else:
            self._take_next_entry(batch, projection, decoded, stream_seq, quarantine)
        if len(batch.quarantine) == quarantined_before:
            mark_taken(projection, decoded, stream_seq)

    def _take_next_entry(
        self,
        batch: Batch,
        projection: TableProjection,
        entry: wire.EntryMessage,
        stream_seq: int,
        quarantine: Quarantine,
    ) -> None:
        """An entry beyond what the floor holds: checked against the chain, folded, kept for the batch.
        Synchronous: nothing in it waits (a coroutine a message was a measurable share of its CPU)."""
        problem = checks.chain_problem(projection, entry)
        if problem is not None:
            quarantine(problem.reason, alert_kind=problem.kind, seq=entry.seq)
            checks.quarantine_table(projection, entry, problem)
            return
        after_close = checks.round_problem(projection, entry)  # judged on the state before it
        checks.fold_entry(projection, entry)
        batch.add_entry(entry, stream_seq)
        self.status.entries += 1
        if after_close is not None:
            # Taken and alerted, the table not quarantined: its chain holds, so the floor's copy is still
            # the table's journal; once, by the alert's stream seq (a resend is skipped before this).
            where = (entry.table_id, entry.seq, stream_seq)
            raise_alert(self.status, batch, where, after_close.kind, after_close.reason)

    async def reconcile_progressive(self, connection: Connection) -> int:
        """The progressive links' reconciliation alerts raised and cleared (progressive_view.py)."""
        raised = await progressive_view.reconcile_alerts(connection, prop=self.config.property_settings)
        self.status.alerts += raised
        return raised

    async def apply_releases(self, connection: Connection) -> int:
        """Apply every release recorded and not yet applied (controller/floor/release.py), each in one
        transaction: the table's projection read back, its quarantine lifted, its messages read again
        from the stream after its last good entry (the set-aside ones skipped) through the usual checks,
        and the release marked applied. A release whose quarantine is no longer the table's is marked
        stale. Returns how many were applied."""
        # In a transaction of its own: a bare read would leave one open, and every later transaction block
        # would then be a savepoint inside it, never committed.
        async with connection.transaction():
            pending = await release.pending_releases(connection)
        pending = [one for one in pending if self._owns is None or self._owns(one.table_id)]
        for released in pending:
            table_id = released.table_id
            self._projections.forget(table_id)  # read back: what the release checked is what is replayed
            read = 0
            try:
                async with connection.transaction():
                    projection = await self._projections.of(connection, table_id)
                    batch = Batch()
                    outcome = "stale"
                    if projection.quarantined_at_seq == released.quarantined_at_seq:
                        outcome = "projected"
                        projection.quarantined_at_seq = projection.quarantine_reason = None
                        self._set_aside.update(released.set_aside)
                        self.site_of[table_id] = site_of_subject(released.subject) or ""
                        batch.tables[table_id] = projection
                        while True:  # MAX_GAP_FILL at a time, while that moves the table on
                            before = projection.last_stream_seq
                            taken = await self._reads.fill_gap(
                                connection, batch, projection, before_stream_seq=None
                            )
                            read += taken
                            moved = projection.last_stream_seq != before and not projection.quarantined()
                            if taken < MAX_GAP_FILL or not moved:
                                break
                        await write_batch(connection, batch)
                    await release.record_applied(connection, released.release_id, outcome, read)
                    await check_fence(self._fence, connection)
            except BaseException:
                self._projections.forget(table_id)
                raise
            projection.touched_rounds.clear()
            self.status.releases += 1
            self.committed.set()
            log.warning(
                "floor_table_released",
                table_id=table_id,
                release_id=released.release_id,
                outcome=outcome,
                messages_read=read,
                last_seq=projection.last_seq,
                quarantined_again=projection.quarantined(),
            )
        return len(pending)

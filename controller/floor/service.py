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
import functools
import json
import random
import ssl
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import nats
import nats.errors
import nats.js.errors
import psycopg
import structlog
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.js.client import JetStreamContext

from controller.floor import checks, progressive_view, release
from controller.floor.checks import TableProjection
from controller.floor.in_progress import kept_in_progress
from controller.floor.intake import Delivery, FloorClient
from controller.floor.store import Batch, Connection, held_private, load_projection, stored_hash, write_batch
from controller.locale import DEFAULT_PROPERTY, PropertySettings
from controller.uplink import wire
from controller.uplink.wire import (
    FLOOR_CONSUMER,
    FLOOR_INBOX,
    STREAM_NAME,
    SUBJECT_ROOT,
    table_subject,
)
from controller.waits import close_quietly, raise_if_cancelled, wait_event

__all__ = ["FloorConfig", "FloorService", "FloorStatus", "Incoming", "TableProjection"]

log = structlog.get_logger("flushtable.floor")
_MAX_GAP_FILL = 20_000  # messages read back from the stream for one table at a time
# How long the check that the consumer is still there waits for JetStream's answer (``Puller``).
CONSUMER_CHECK_TIMEOUT_S = 1.0
# A batch taken longer than this sends ``+WPI`` for its messages (controller/floor/in_progress.py): a
# third of the shortest ack_wait a floor consumer is given (1.5 s), and nothing sent by a shorter batch.
IN_PROGRESS_INTERVAL_S = 0.5


@dataclass(frozen=True, slots=True)
class FloorConfig:
    servers: tuple[str, ...]
    user: str
    password: str = field(repr=False)  # repr (logs, test failures) never shows a secret
    ca_file: Path
    dsn: str = field(repr=False)
    inbox_prefix: str = FLOOR_INBOX
    batch_size: int = 1000
    # When the consumer has nothing, a pull request waits this long (taken at its first message): a
    # quiet floor's loop turns this often (the idle sweep's check), and adds nothing to the lag.
    fetch_timeout_s: float = 0.05
    backoff_initial_s: float = 0.2
    backoff_max_s: float = 5.0
    sweep_interval_s: float = 5.0  # when idle, this often: check every table's tail in the stream
    release_poll_interval_s: float = 1.0  # this often: apply releases of quarantined tables (release.py)
    # This often: reconcile each progressive link's in-meter against the tables' journals, a difference
    # raised as a floor alert (controller/floor/progressive_view.py).
    reconcile_interval_s: float = 5.0
    # The property's time zone, gaming day, shifts and currency (docs/configuration.md "[property]";
    # controller/locale.py): the reports', the panel's and the reconciliation's one definition.
    property_settings: PropertySettings = DEFAULT_PROPERTY
    # A seat's win in one round at or above this is a big win for surveillance (controller/floor/
    # surveillance.py): 5,000.00 by default, a figure a surveillance room asks to watch.
    surveillance_big_win_cents: int = 500_000
    surveillance_poll_interval_s: float = 0.5  # this often: publish new surveillance events
    # The durable consumer pulled: ``floor`` for the one-worker floor; a partition's own
    # (controller/floor/workers.py ``partition_consumer``) when the floor runs partitioned workers.
    consumer: str = FLOOR_CONSUMER
    # The floor-wide duties that are no table's (the progressive reconciliation, surveillance events):
    # run by one service only when the floor is partitioned (the holder of partition 0).
    side_duties: bool = True


@dataclass
class FloorStatus:
    batches: int = 0
    entries: int = 0
    privates: int = 0
    duplicates: int = 0
    quarantined: int = 0
    alerts: int = 0
    db_failures: int = 0
    gap_fills: int = 0  # messages read back from the stream that the consumer had skipped
    releases: int = 0  # releases of quarantined tables applied (controller/floor/release.py)
    sweeps: int = 0  # idle sweeps of every table's tail in the stream
    surveillance_events: int = 0  # published (controller/floor/surveillance.py)
    surveillance_error: str = ""  # the publisher's last error (its own: the intake's is last_error)
    last_error: str = ""


@dataclass(frozen=True, slots=True)
class Incoming:
    """A message from the stream: from the consumer, or read back from the stream to fill a gap."""

    stream_seq: int
    subject: str
    headers: Mapping[str, str]
    data: bytes

    @classmethod
    def of(cls, delivery: Delivery) -> Incoming:
        return cls(delivery.stream_seq, delivery.subject, delivery.headers, delivery.data)


def _by_stream_seq(incoming: Incoming) -> int:
    return incoming.stream_seq


# JetStream's acknowledgements, as nats-py's Msg.ack() and nak() send them to a delivery's reply subject.
_ACK = b""
_NAK = b"-NAK"


def site_of_subject(subject: str) -> str | None:
    parts = subject.split(".")
    return parts[1] if len(parts) == 4 else None


STREAM_SOURCE_HEADER = "Nats-Stream-Source"


def site_of_source(headers: Mapping[str, str]) -> str | None:
    """The site whose stream a message was sourced from, from the header the hub's stream sets on what
    it sources (its value begins with the source stream's name, then ``:`` and a hash of the external
    API for a stream in another domain, then the sequence there ...). None: not sourced (published on
    the hub itself); "": sourced from a stream that is no site's."""
    value = headers.get(STREAM_SOURCE_HEADER)
    if not value:
        return None
    name = value.split(" ", 1)[0].split(":", 1)[0]
    prefix = f"{STREAM_NAME}_"
    return name.removeprefix(prefix) if name.startswith(prefix) else ""


def _decoded(body: bytes) -> wire.EntryMessage | wire.PrivateMessage | None:
    """A message's body decoded, or None when it is not an uplink's (the reads quarantine those)."""
    try:
        return wire.decode(body)
    except (wire.BadMessage, *wire.UNFORESEEN_ERRORS):
        return None


@functools.lru_cache(maxsize=65_536)
def _subject_parts(subject: str) -> tuple[str | None, str | None]:
    """(table, site) of a subject, remembered: a floor's subjects are its tables', one each, and every
    message of a table names the same one."""
    return table_of_subject(subject), site_of_subject(subject)


def table_of_subject(subject: str) -> str | None:
    parts = subject.split(".")
    if len(parts) == 4 and parts[0] == SUBJECT_ROOT and parts[3] == "journal":
        return parts[2]
    return None


# 409s that end a pull request and not the pulling (the next request may be answered): JetStream's
# pull semantics, as the NATS clients read them. Any other 409 (Consumer Deleted, Consumer is push based)
# and any status but 100/404/408 (400 bad request, 503 no responders: no consumer) is an error.
_PASSING_CONFLICTS = (
    "request timeout",
    "exceeded maxwaiting",
    "exceeded maxrequestbatch",
    "exceeded maxrequestexpires",
    "exceeded maxrequestmaxbytes",
    "message size exceeds maxbytes",
    "leadership change",
    "server shutdown",
)


def pull_status_error(status: str, description: str) -> nats.js.errors.APIError | None:
    """The error a pull request's status message means, or None: 100 is a heartbeat, 404 (no messages)
    and 408 (request expired) end the request, and so do the passing 409s above; every other status
    (409 Consumer Deleted, 400, 503 no responders ...) is raised, so that the service's loop logs
    ``floor_retry`` and reconnects instead of pulling empty batches forever with nothing said."""
    if status in ("100", "404", "408"):
        return None
    if status == "409" and description.strip().lower().startswith(_PASSING_CONFLICTS):
        return None
    if status == "503":
        return nats.js.errors.ServiceUnavailableError(code=503, description=description or "no responders")
    return nats.js.errors.APIError(code=int(status) if status.isdigit() else None, description=description)


class Fenced(Exception):
    """A partitioned worker's commit refused by PostgreSQL: its lease on the partition is no longer the
    newest (controller/floor/workers.py). The batch is rolled back and the partition's service ends."""


# A partitioned worker's check, run inside each commit's transaction (raises Fenced); None: no partitions.
Fence = Callable[["Connection"], Awaitable[None]]
# Whether a table is this service's (its partition's); None: every table is.
Owns = Callable[[str], bool]


class Puller:
    """The durable consumer's batches, pulled as nats-py's ``fetch`` pulls them (a request to the
    consumer's ``MSG.NEXT`` subject, the messages delivered to an inbox of the floor's own), without its
    task and timer per message: at thousands of messages a second those cost the floor more than its
    own checks of each message do.

    A request is for up to ``batch`` messages (within ``max_ack_pending``); it ends with the server's
    status (nothing more now, or expired) or when the batch is full. A message that arrives after its
    request was answered (it was already under way) is kept for the next batch: every message
    delivered is handed over, and so acked or nak'd, once.

    Each request has a reply subject of its own (``<inbox>.<n>``), on which the server sends its
    statuses, so a late status of an earlier request (a 408 sent at its expiry, after this side had
    stopped waiting: a loaded machine) is told from the current request's: it neither ends the current
    request nor counts as its answer, which would hide a consumer gone meanwhile
    (``_consumer_is_there``). An error status ends the pulling whichever request it answers: a deleted
    consumer is news however it is heard."""

    def __init__(self, client: Client, inbox: str, consumer: str = FLOOR_CONSUMER) -> None:
        self._client = client
        self._inbox = inbox
        self._consumer = consumer
        self._messages: list[Delivery] = []
        self._wanted = 0
        self._ended = asyncio.Event()
        self._error: nats.js.errors.APIError | None = None  # a status that ends pulling (raised by fetch)
        self._requests = 0  # requests sent; the n-th is answered on <inbox>.<n>
        self._reply = ""  # the current request's reply subject
        self._answered = False  # the current request had a reply: a message or a status

    @classmethod
    async def start(cls, client: Client, consumer: str = FLOOR_CONSUMER) -> Puller:
        puller = cls(client, client.new_inbox(), consumer)
        subscription = await client.subscribe(f"{puller._inbox}.*", cb=puller._receive)
        if isinstance(client, FloorClient):  # deliveries with a body come raw (controller/floor/intake.py)
            client.deliver_raw(subscription._id, puller._delivered)
        return puller

    def _delivered(self, delivery: Delivery) -> None:
        # A delivery carries its stream subject, not the reply subject: it answers some request.
        self._answered = True
        self._messages.append(delivery)
        if len(self._messages) >= self._wanted:
            self._ended.set()

    async def _receive(self, message: Msg) -> None:
        status = JetStreamContext.is_status_msg(message) if not message.data else None
        if status is None:
            self._delivered(Delivery(message.subject, message.reply, message.data, message.headers or {}))
            return
        current = message.subject == self._reply  # a status comes on its request's reply subject
        if current:
            self._answered = True
        error = pull_status_error(status, (message.headers or {}).get("Description", ""))
        if error is not None:
            self._error = error
            self._ended.set()
        elif current and status != "100":  # 404 nothing now, 408 expired, a passing 409: it is over
            self._ended.set()

    async def fetch(self, batch: int, max_wait_s: float) -> list[Delivery]:
        # First what is there now (``no_wait``: the server answers at once); only if nothing is, a
        # request that waits up to ``max_wait_s`` and is taken at its first message: a busy floor's
        # batches are whatever came while the last one was written, a quiet floor's lag its first
        # message's (what the waiting request still delivers is kept for the next batch).
        if len(self._messages) < batch:
            await self._request(batch, {"no_wait": True}, max_wait_s, wanted=batch)
            if not self._answered and self._error is None:
                await self._consumer_is_there()
        if not self._messages and self._error is None:
            # At least 1 ns: an expiry of 0 means "never" to JetStream, and such requests would pile up.
            expires_ns = max(1, round(max_wait_s * 1e9))
            await self._request(batch, {"expires": expires_ns}, max_wait_s, wanted=1)
        if self._error is not None:
            # The messages delivered before it are not handed over: unacked, the consumer redelivers them.
            error, self._error = self._error, None
            if isinstance(error, nats.js.errors.ServiceUnavailableError):
                await self._consumer_is_there()  # raises if the consumer is gone
                # No responders while the consumer is there (or its info unanswered): its leader is
                # being elected after a node's loss. Pulled again on this connection after a pause of
                # one request's wait; ending the connection for it (reconnecting, backing off) held a
                # partition's commits for seconds after its leader's node was killed.
                await asyncio.sleep(max_wait_s)  # a retry's pause, not a wait for anything
                return []
            raise error
        messages, self._messages = self._messages[:batch], self._messages[batch:]
        return messages

    async def _consumer_is_there(self) -> None:
        """Raises nats.js.errors.NotFoundError when the consumer is gone. A ``no_wait`` request is
        answered at once by a consumer that exists (its messages, or 404); unanswered, it may have gone
        nowhere: a consumer deleted while no request of ours was waiting is told to nobody (the 409
        Consumer Deleted goes to waiting requests only), and nats-server 2.9 answers a request to a
        missing consumer with silence, not 503 (the account's ``$JS.API.>`` import has interest in
        every subject under it). Asked here, where the API's answer is certain.

        Unanswered within CONSUMER_CHECK_TIMEOUT_S (a consumer's leader being elected after a node's
        loss: the pull request went unanswered for the same reason), the next pull asks again on the
        same connection: a timeout here used to end the connection after nats-py's 5 s, and the
        reconnection's first check could wait 5 s more (controller/floor/workers.py's measurements)."""
        try:
            await self._client.jetstream(timeout=CONSUMER_CHECK_TIMEOUT_S).consumer_info(
                STREAM_NAME, self._consumer
            )
        except TimeoutError:
            log.info("floor_consumer_check_unanswered", consumer=self._consumer)

    async def _request(
        self, batch: int, options: dict[str, object], max_wait_s: float, *, wanted: int
    ) -> None:
        self._wanted = wanted
        self._requests += 1
        self._reply = f"{self._inbox}.{self._requests}"
        self._answered = False
        self._ended.clear()
        request = {"batch": batch - len(self._messages), **options}
        await self._client.publish(
            f"$JS.API.CONSUMER.MSG.NEXT.{STREAM_NAME}.{self._consumer}",
            json.dumps(request).encode(),
            reply=self._reply,
        )
        # The request's end is the server's status, or its expiry: the server does not always say so
        # when some messages came (waiting for it held a batch up to the second), and whatever it
        # still sends is kept for the next batch.
        await wait_event(self._ended, max_wait_s + 0.02)


# The floor's own I/O failing: retried with backoff (the batch rolled back and nak'd), never blamed on
# a table's message. Anything else raised while a message is taken is that message's (``_Refused``).
_INFRASTRUCTURE_ERRORS: tuple[type[BaseException], ...] = (
    nats.errors.Error,
    nats.js.errors.Error,
    psycopg.Error,
    OSError,
    TimeoutError,
    ssl.SSLError,
)


class _Refused(Exception):
    """A table's message raised while the floor took it: the batch is rolled back, and the message
    quarantines its table when it is taken again."""

    def __init__(self, stream_seq: int, table_id: str, reason: str) -> None:
        super().__init__(f"table {table_id}: stream seq {stream_seq}: {reason}")
        self.stream_seq = stream_seq
        self.table_id = table_id
        self.reason = reason


_NOT_A_MESSAGES_ERROR: tuple[type[BaseException], ...] = (_Refused, *_INFRASTRUCTURE_ERRORS)


class Quarantine(Protocol):
    """Keeps one message in floor_quarantine, with a floor alert of ``alert_kind`` unless None."""

    def __call__(self, reason: str, *, alert_kind: str | None, seq: int | None = None) -> None: ...


class FloorService:
    def __init__(
        self,
        config: FloorConfig,
        *,
        rng: random.Random | None = None,
        owns: Owns | None = None,
        fence: Fence | None = None,
        in_progress_interval_s: float = IN_PROGRESS_INTERVAL_S,
    ) -> None:
        self.config = config
        # A batch still being taken after this long tells JetStream so (``+WPI``), again each interval,
        # so it is not redelivered meanwhile (controller/floor/in_progress.py); at most a third of the
        # consumer's ack_wait (a partitioned worker passes its consumer's).
        self._in_progress_interval_s = in_progress_interval_s
        # A partitioned worker's (controller/floor/workers.py): which tables are this service's, and
        # the lease check each commit makes. Both None: the one-worker floor, every table, no check.
        self._owns = owns
        self._fence = fence
        self.fenced = False  # set when a commit was refused for a lost lease: the service has ended
        self.status = FloorStatus()
        self._tables: dict[str, TableProjection] = {}
        self._js: JetStreamContext | None = None
        self.site_of: dict[str, str] = {}  # table -> the site token of its subject
        self._rng = rng or random.Random()
        self.committed = asyncio.Event()  # set after each commit (tests and the demo wait on it)
        self._set_aside: set[int] = set()  # stream seqs a release set aside: never projected
        self._sites_learnt = False  # the stream's subjects read once a start (sweep)
        self._renumber_said: set[tuple[str, int]] = set()  # (table, last entry) told stream_renumbered
        # Messages that raised while taken (stream seq -> the error): they quarantine their table. Kept
        # in memory: after a restart such a message raises once more (one batch rolled back) and is
        # remembered again.
        self._refused: dict[int, str] = {}

    # --- the loop ---------------------------------------------------------------------------------
    async def run(self, stop: asyncio.Event) -> None:
        backoff_s = self.config.backoff_initial_s
        while not stop.is_set():
            raise_if_cancelled()
            client: Client | None = None
            connection: Connection | None = None
            surveillance_task: asyncio.Task[None] | None = None
            try:
                client = FloorClient()  # the floor's deliveries raw (controller/floor/intake.py)
                await client.connect(
                    servers=list(self.config.servers),
                    user=self.config.user,
                    password=self.config.password,
                    tls=ssl.create_default_context(cafile=str(self.config.ca_file)),
                    inbox_prefix=self.config.inbox_prefix,
                    allow_reconnect=False,
                    connect_timeout=5,
                    name="flushtable-floor",
                )
                # Autocommit: each `transaction()` block is a real BEGIN ... COMMIT. Without it, a read
                # outside a block (the idle sweep's) opened a transaction that never ended, and every
                # later batch's block became a savepoint inside it: acked, never committed.
                connection = await psycopg.AsyncConnection.connect(self.config.dsn, autocommit=True)
                js = client.jetstream()
                self._js = js
                last_sweep_s = time.monotonic()
                puller = await Puller.start(client, self.config.consumer)
                # Surveillance events: a task of its own with its own connection, so publishing never
                # holds up the intake (and a slow or missing SURVEILLANCE stream never stops it).
                if self.config.side_duties:
                    surveillance_task = asyncio.create_task(self._surveillance_loop(stop, js))
                log.info("floor_consuming", consumer=self.config.consumer)
                backoff_s = self.config.backoff_initial_s
                async with connection.transaction():  # a read alone would leave a transaction open
                    self._set_aside = await release.set_aside_stream_seqs(connection)
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
                        if not messages:
                            if client.is_closed or not client.is_connected:
                                raise nats.errors.ConnectionClosedError
                            if time.monotonic() - last_sweep_s > self.config.sweep_interval_s:
                                last_sweep_s = time.monotonic()
                                # Only when the consumer has nothing left to deliver: then a table's tail
                                # beyond what the floor took was skipped, not merely not yet delivered.
                                try:
                                    info = await client.jetstream(
                                        timeout=CONSUMER_CHECK_TIMEOUT_S
                                    ).consumer_info(STREAM_NAME, self.config.consumer)
                                except TimeoutError:
                                    continue  # unanswered (a leader election): the next idle turn asks
                                if not info.num_pending and not info.num_ack_pending:
                                    delivered = info.delivered.stream_seq if info.delivered else None
                                    await self.sweep(connection, through_stream_seq=delivered)
                            continue
                        await self._handle(connection, client, messages)
                    except _Refused as refused:
                        # Rolled back (nothing of the batch is on the floor, its messages nak'd): taken
                        # again, the message quarantines its table instead of being taken (``_take``).
                        self._refused[refused.stream_seq] = refused.reason
                        log.error("floor_message_refused", table_id=refused.table_id,
                                  stream_seq=refused.stream_seq, error=refused.reason)  # fmt: skip
            except Fenced as error:
                # The lease is another worker's now: nothing of this service may commit again. Ended,
                # not retried (controller/floor/workers.py starts a new one if the lease comes back).
                self.fenced = True
                self.status.last_error = f"Fenced: {error}"[:300]
                log.warning("floor_fenced", consumer=self.config.consumer, error=str(error))
            except _INFRASTRUCTURE_ERRORS as error:
                self.status.last_error = f"{type(error).__name__}: {error}"[:300]
                log.warning("floor_retry", error=self.status.last_error)
            except Exception as error:
                # Not a table's message (those are _Refused) nor the floor's I/O: a bug. Said loudly,
                # and retried like an outage: the service never ends for it.
                self.status.last_error = f"{type(error).__name__}: {error}"[:300]
                log.exception("floor_unexpected_error", error=self.status.last_error)
            finally:
                if surveillance_task is not None:
                    surveillance_task.cancel()
                    with contextlib.suppress(asyncio.CancelledError, Exception):
                        await surveillance_task
                    surveillance_task = None
                await close_quietly(
                    connection.close() if connection else None, client.close() if client else None
                )
            if stop.is_set() or self.fenced:
                break
            # Jittered (tables and services do not all come back at once), never past backoff_max_s.
            await wait_event(stop, min(backoff_s * (0.5 + self._rng.random()), self.config.backoff_max_s))
            backoff_s = min(backoff_s * 2, self.config.backoff_max_s)

    def _is_mine(self, subject: str) -> bool:
        """Whether a message is this service's: always, unless it is a partition's (then its table's
        partition decides; a subject that names no table is partition 0's, by its empty table id)."""
        return self._owns is None or self._owns(_subject_parts(subject)[0] or "")

    async def _handle(self, connection: Connection, client: Client, messages: list[Delivery]) -> None:
        if self._owns is not None:
            # A partition's consumer sees every table's messages (docs/floor.md "Partitioned floor
            # workers": nats-server 2.9 filters no hash); another partition's are its consumer's, acked
            # here unread.
            others = [message for message in messages if not self._is_mine(message.subject)]
            if others:
                messages = [message for message in messages if self._is_mine(message.subject)]
                for message in others:
                    await client.publish(message.reply, _ACK)
                if not messages:
                    return
        # The stream's order; redeliveries of one batch come back together (max_ack_pending).
        incoming = sorted(map(Incoming.of, messages), key=_by_stream_seq)
        replies = [message.reply for message in messages]
        try:
            async with (
                kept_in_progress(client, replies, self._in_progress_interval_s),
                connection.transaction(),
            ):
                batch = Batch()
                for one in incoming:
                    await self._take(connection, batch, one)
                await write_batch(connection, batch)
                await self._check_fence(connection)
        except BaseException as error:
            # Nothing of the batch is on the floor: forget what it folded, and have it sent again.
            self._tables.clear()
            if not isinstance(error, _Refused):
                self.status.db_failures += 1
            for reply in replies:
                with contextlib.suppress(Exception):
                    await client.publish(reply, _NAK)
            raise
        for projection in batch.tables.values():
            projection.touched_rounds.clear()
        # Each one: an ack never covers a message this batch did not hold. Buffered by the client: no
        # round trip each; the floor's own client queues the batch's acks as one command.
        if isinstance(client, FloorClient):
            await client.publish_empty(replies)
        else:
            for reply in replies:
                await client.publish(reply, _ACK)
        self.status.batches += 1
        self.committed.set()

    async def _check_fence(self, connection: Connection) -> None:
        """A partitioned worker's lease check, in the commit's own transaction (raises Fenced)."""
        if self._fence is not None:
            await self._fence(connection)

    # --- one message ------------------------------------------------------------------------------
    async def _projection(self, connection: Connection, table_id: str) -> TableProjection:
        projection = self._tables.get(table_id)
        if projection is None:
            projection = await load_projection(connection, table_id)
            self._tables[table_id] = projection
        return projection

    async def _take(self, connection: Connection, batch: Batch, message: Incoming) -> None:
        """One message through the checks. A table's messages are hostile (its credentials can extend
        its own unkeyed chain with anything): whatever error taking one raises that is not the floor's
        own I/O (NATS, PostgreSQL, the network) becomes ``_Refused`` for that message, the batch is
        rolled back and taken again, and then that message quarantines its table with the error as
        the reason (``_take_refused``) instead of being taken: the service never stops for it, and no
        other table is touched."""
        try:
            await self._take_one(connection, batch, message)
        except _NOT_A_MESSAGES_ERROR:
            raise
        except Exception as error:
            table_id = table_of_subject(message.subject) or "?"
            reason = f"{type(error).__name__}: {error}"[:300]
            raise _Refused(message.stream_seq, table_id, reason) from error

    async def _take_refused(
        self, connection: Connection, batch: Batch, message: Incoming, table_id: str, quarantine: Quarantine
    ) -> None:
        """A message that raised while it was taken (``_take``): kept in floor_quarantine with an alert
        ``floor_error``, and its table quarantined after its last good entry (a manager releases it
        once the floor reads it: docs/floor.md "A table's messages are hostile")."""
        reason = self._refused[message.stream_seq]
        decoded = _decoded(message.data)
        seq = decoded.seq if decoded is not None else None
        quarantine(f"the floor could not take this message ({reason})", alert_kind="floor_error", seq=seq)
        try:
            projection = await self._projection(connection, table_id)
        except _INFRASTRUCTURE_ERRORS:
            raise
        except Exception:  # the floor's own copy of the table cannot be read back: the message alone
            log.exception("floor_table_unreadable", table_id=table_id)
            return
        batch.tables[table_id] = projection
        if not projection.quarantined():
            where = f"entry {seq}" if seq is not None else f"stream seq {message.stream_seq}"
            checks.quarantine_at(projection, checks.Problem("floor_error", reason), where)

    async def _take_one(self, connection: Connection, batch: Batch, message: Incoming) -> None:
        stream_seq = message.stream_seq
        subject_table, subject_site = _subject_parts(message.subject)
        if stream_seq in self._set_aside:
            # A release set it aside (it did not continue its table's chain): never projected, but seen,
            # so that the idle sweep does not read a set-aside tail again and again.
            if subject_table is not None:
                projection = await self._projection(connection, subject_table)
                projection.last_seen_stream_seq = max(projection.last_seen_stream_seq, stream_seq)
            return
        if subject_table is not None:
            self.site_of[subject_table] = subject_site or ""
        headers = message.headers
        quarantine_table = subject_table or "?"

        def quarantine(reason: str, *, alert_kind: str | None, seq: int | None = None) -> None:
            batch.quarantine.append(
                (
                    stream_seq,
                    message.subject,
                    quarantine_table,
                    headers.get(wire.MSG_ID),
                    reason,
                    message.data,
                )
            )
            self.status.quarantined += 1
            if alert_kind is not None:
                text = (
                    f"table {quarantine_table}" + (f" entry {seq}" if seq is not None else "") + f": {reason}"
                )
                batch.alerts.append((quarantine_table, seq, stream_seq, alert_kind, text))
                self.status.alerts += 1
                log.warning("floor_alert", table_id=quarantine_table, seq=seq, kind=alert_kind, message=text)

        if subject_table is None:
            quarantine(f"subject {message.subject!r} is no table's journal", alert_kind="bad_subject")
            return
        if stream_seq in self._refused:
            await self._take_refused(connection, batch, message, subject_table, quarantine)
            return
        source_site = site_of_source(headers)
        if source_site is not None and source_site != subject_site:
            # The hub copies a sourced message with whatever subject the site's server gave it: a site
            # whose server was tampered with could put entries on another table's subject. A site
            # carries its own tables only (docs/floor.md "Sites").
            quarantine(
                f"sourced from {'site ' + source_site if source_site else 'a stream that is no site'}'s "
                f"stream on {message.subject}: a site's stream carries its own tables only",
                alert_kind="wrong_site",
            )
            return
        try:
            decoded = wire.decode(message.data)
        except wire.BadMessage as error:
            kind = "unknown_kind" if "unknown entry kind" in str(error) else "undecodable"
            quarantine(str(error), alert_kind=kind)
            return
        except wire.UNFORESEEN_ERRORS as error:  # what decode did not foresee: the message's, not the batch's
            quarantine(f"undecodable: {type(error).__name__}: {error}"[:300], alert_kind="undecodable")
            return
        if decoded.table_id != subject_table:
            quarantine(
                f"names table {decoded.table_id!r} on table {subject_table}'s subject",
                alert_kind="wrong_table",
                seq=decoded.seq,
            )
            return
        # The table's projection is nearly always in memory: no coroutine for it then (a message's
        # few coroutines were a measurable share of its CPU).
        projection = self._tables.get(subject_table) or await self._projection(connection, subject_table)
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
            await self._fill_gap(connection, batch, projection, before_stream_seq=stream_seq, pending=decoded)
            if projection.quarantined():
                quarantine(f"the table is quarantined after entry {projection.quarantined_at_seq}",
                           alert_kind=None, seq=decoded.seq)  # fmt: skip
                return
        if isinstance(decoded, wire.PrivateMessage):
            await self._take_private(connection, batch, projection, decoded, stream_seq, quarantine)
        elif checks.is_resend(decoded, projection):
            await self._take_resend(connection, batch, projection, decoded, quarantine)
        else:
            self._take_next_entry(batch, projection, decoded, stream_seq, quarantine)
        if len(batch.quarantine) == quarantined_before:
            projection.last_seen_stream_seq = max(projection.last_seen_stream_seq, stream_seq)
        if isinstance(decoded, wire.EntryMessage) and len(batch.quarantine) == quarantined_before:
            # Taken (or a resend): the table's entries are read up to here. (A private part comes
            # after later entries - the one that revealed it - so it does not move this.)
            projection.last_stream_seq = max(projection.last_stream_seq, stream_seq)

    async def _take_resend(
        self,
        connection: Connection,
        batch: Batch,
        projection: TableProjection,
        entry: wire.EntryMessage,
        quarantine: Quarantine,
    ) -> None:
        """An entry the floor already holds (``checks.is_resend``): a duplicate, or a fork."""
        # This batch's own entries first: a resend of one of them needs no query.
        stored = batch.entry_hashes.get((projection.table_id, entry.seq))
        if stored is None:
            stored = await stored_hash(connection, projection.table_id, entry.seq)
        fork = checks.resend_problem(entry, stored)
        if fork is None:
            self.status.duplicates += 1
        else:
            # Two bodies for one entry: the table's credentials published something the table did
            # not write (or two journals share a table). Both are kept: the first on the floor,
            # this one in floor_quarantine, the alert naming both hashes; the table is quarantined
            # (docs/floor.md "Forks").
            quarantine(fork.reason, alert_kind=fork.kind, seq=entry.seq)
            if not projection.quarantined():
                checks.quarantine_table(projection, entry, fork)

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
        checks.fold_entry(projection, entry)
        batch.add_entry(entry, stream_seq)
        self.status.entries += 1

    async def _fill_gap(
        self,
        connection: Connection,
        batch: Batch,
        projection: TableProjection,
        *,
        before_stream_seq: int | None,
        pending: wire.EntryMessage | wire.PrivateMessage | None = None,
    ) -> int:
        """Read the table's messages from the stream itself, after the last one the floor handled and
        before ``before_stream_seq`` (None: to the end), and take them in order. Returns how many.
        ``pending``: the message the consumer delivered beyond what the floor holds; if it still is
        after the read, the stream may have been renumbered under the floor (``_recover_renumbered``)."""
        if self._js is None:
            return 0
        site = self.site_of.get(projection.table_id)
        if site is None:
            return 0
        subject = table_subject(site, projection.table_id)
        taken = await self._read_subject(connection, batch, projection, subject,
                                         projection.last_stream_seq + 1, before_stream_seq)  # fmt: skip
        if pending is not None and checks.needs_stream_read(projection, pending):
            # Still a gap after reading the stream where the floor left the table: unless the stream was
            # renumbered under the floor (below), it is a real gap, and the caller's checks say so.
            taken += await self._recover_renumbered(connection, batch, projection, subject, before_stream_seq)
        if taken:
            self.status.gap_fills += taken
            log.warning("floor_gap_filled", table_id=projection.table_id, messages=taken)
        return taken

    async def _read_subject(  # noqa: PLR0917 - one read's context
        self,
        connection: Connection,
        batch: Batch,
        projection: TableProjection,
        subject: str,
        next_seq: int,
        before_stream_seq: int | None,
    ) -> int:
        """Take the subject's messages from ``next_seq`` on, in stream order, up to ``before_stream_seq``
        (or the end), at most _MAX_GAP_FILL of them. Returns how many."""
        assert self._js is not None
        taken = 0
        while taken < _MAX_GAP_FILL:
            try:
                raw = await self._js.get_msg(
                    STREAM_NAME, seq=next_seq, subject=subject, direct=True, next=True
                )
            except nats.js.errors.NotFoundError:
                break
            seq = int(raw.seq or 0)
            if seq < next_seq or (before_stream_seq is not None and seq >= before_stream_seq):
                break
            headers = {str(k): str(v) for k, v in (raw.headers or {}).items()}
            await self._take(connection, batch, Incoming(seq, subject, headers, raw.data or b""))
            taken += 1
            next_seq = seq + 1
        return taken

    async def _learn_sites(self, js: JetStreamContext) -> None:
        """The site token of every table with messages in the stream, from the stream's subjects (once
        a service start: a table heard from later is learnt from its messages)."""
        if self._sites_learnt:
            return
        self._sites_learnt = True
        info = await js.stream_info(STREAM_NAME, subjects_filter=f"{SUBJECT_ROOT}.>")
        for subject in (info.state.subjects or {}) if info.state else {}:
            table_id, site = table_of_subject(subject), site_of_subject(subject)
            if table_id is not None and site is not None:
                self.site_of.setdefault(table_id, site)

    async def _holds_entry_at(
        self, connection: Connection, batch: Batch, table_id: str, subject: str, stream_seq: int
    ) -> bool:
        """Whether the stream's message at ``stream_seq`` is an entry of the table that the floor holds,
        judged by its body (table, seq, hash: what the chain covers), never by its headers, which any
        publisher may set."""
        assert self._js is not None
        try:
            raw = await self._js.get_msg(STREAM_NAME, seq=stream_seq, direct=True)
        except nats.js.errors.NotFoundError:
            return False
        if raw.subject != subject:
            return False
        decoded = _decoded(raw.data or b"")
        if not isinstance(decoded, wire.EntryMessage) or decoded.table_id != table_id:
            return False
        held = batch.entry_hashes.get((table_id, decoded.seq))
        if held is None:
            held = await stored_hash(connection, table_id, decoded.seq)
        return held == decoded.hash

    async def _renumbered(
        self, connection: Connection, batch: Batch, projection: TableProjection, subject: str
    ) -> bool:
        """Whether the stream no longer holds, where the floor last read the table's entries, an entry of
        the table that the floor holds.

        A broker killed (SIGKILL, power) can lose messages it had acknowledged: JetStream writes its
        store behind its acks unless told to sync each one. The tables resend what it lost (each uplink
        resumes after the server's last message, docs/floor.md), but the restarted stream numbers them
        again from where it stands, below sequences the floor's consumer has already delivered: the
        consumer never delivers them, and every check of the floor that goes by stream sequence looks
        past them. Seen here under load in the 200-table broker-kill test: a table's last five entries
        never reached the floor, with nothing said. ``last_stream_seq`` is where the floor last read one
        of the table's entries (taken or a resend); if the stream holds something else there, its
        numbering is not the one the floor read."""
        if self._js is None or projection.last_seq == 0 or projection.last_stream_seq == 0:
            return False
        held = await self._holds_entry_at(
            connection, batch, projection.table_id, subject, projection.last_stream_seq
        )
        return not held

    async def _agreeing_stream_seq(
        self, connection: Connection, batch: Batch, projection: TableProjection, subject: str
    ) -> int:
        """The last stream sequence at which the stream still holds what the floor read there: the
        floor's entries of the table (their stream sequences as read) bisected, each probe one message
        read. The stream before a broker's loss is intact and what came after is numbered anew, so the
        entries the stream still holds where they were read come first. 0: none (read from the start)."""
        cursor = await connection.execute(
            "SELECT stream_seq FROM floor_entries WHERE table_id = %s ORDER BY seq", (projection.table_id,)
        )
        stream_seqs = [int(row[0]) for row in await cursor.fetchall()]
        low, high = 0, len(stream_seqs)  # stream_seqs[:low] hold; stream_seqs[high:] do not
        while low < high:
            middle = (low + high) // 2
            if await self._holds_entry_at(
                connection, batch, projection.table_id, subject, stream_seqs[middle]
            ):
                low = middle + 1
            else:
                high = middle
        return stream_seqs[low - 1] if low else 0

    async def _recover_renumbered(
        self,
        connection: Connection,
        batch: Batch,
        projection: TableProjection,
        subject: str,
        before_stream_seq: int | None,
    ) -> int:
        """If the stream was renumbered under the floor (``_renumbered``): a floor alert (once for the
        table's entry: the broker lost messages it had acknowledged; the tables sent them again), and the
        table read again from the last place where the stream still holds what the floor read there
        (``_agreeing_stream_seq``), the floor's stream positions for the table taken anew from that read.
        What the floor holds is skipped as a resend (checked against its hash: a different entry is still
        a fork); what it lacks is taken in order. Returns how many messages were read."""
        if not await self._renumbered(connection, batch, projection, subject):
            return 0
        start = await self._agreeing_stream_seq(connection, batch, projection, subject)
        text = (
            f"table {projection.table_id}: the stream no longer holds the floor's entries of the table "
            f"after stream sequence {start} where the floor read them: the broker lost messages it had "
            "acknowledged (killed before writing them?) and numbered the tables' resends again; the table "
            "is read again from there"
        )
        said = await (
            await connection.execute(
                "SELECT 1 FROM floor_alerts WHERE table_id = %s AND kind = 'stream_renumbered' AND seq = %s",
                (projection.table_id, projection.last_seq),
            )
        ).fetchone()
        if said is None and (projection.table_id, projection.last_seq) not in self._renumber_said:
            self._renumber_said.add((projection.table_id, projection.last_seq))
            batch.alerts.append((projection.table_id, projection.last_seq, None, "stream_renumbered", text))
            self.status.alerts += 1
            log.warning("floor_alert", table_id=projection.table_id, seq=projection.last_seq,
                        kind="stream_renumbered", message=text)  # fmt: skip
        projection.last_stream_seq = start
        projection.last_seen_stream_seq = start
        return await self._read_subject(connection, batch, projection, subject, start + 1, before_stream_seq)

    async def sweep(self, connection: Connection, *, through_stream_seq: int | None = None) -> int:
        """When idle: every table whose last message in the stream is beyond what the floor handled
        (the consumer skipped a tail) is read from the stream. Returns the messages taken.

        ``through_stream_seq``: how far the consumer has delivered (everything up to it acked). Only
        what lies up to it can have been skipped; a table's newer messages are on their way through the
        consumer, and reading them here too raced it (each read twice, the second a resend looked up
        in PostgreSQL: at a busy floor's idle moments, the lag's worst seconds). The tables' last
        messages are asked for all at once, not one round trip after another."""
        if self._js is None:
            return 0
        js = self._js
        taken = 0
        try:
            async with connection.transaction():
                rows = await (await connection.execute("SELECT table_id FROM floor_tables")).fetchall()
                rows = [row for row in rows if self._owns is None or self._owns(str(row[0]))]
                if any(str(table_id) not in self.site_of for (table_id,) in rows):
                    # A table not heard from since this service started (its subject's site is learnt
                    # from its messages): the stream's own subjects name it. Without this a floor service
                    # restarted while a table's messages sat where its consumer would never deliver them
                    # (a stream renumbered under it, below) never swept that table.
                    await self._learn_sites(js)
                subjects = {
                    str(table_id): table_subject(self.site_of[str(table_id)], str(table_id))
                    for (table_id,) in rows
                    if str(table_id) in self.site_of
                }

                async def last_of(subject: str) -> tuple[int, bytes]:
                    try:
                        raw = await js.get_last_msg(STREAM_NAME, subject, direct=True)
                    except nats.js.errors.NotFoundError:
                        return 0, b""
                    return int(raw.seq or 0), raw.data or b""

                lasts = await asyncio.gather(*(last_of(subject) for subject in subjects.values()))
                batch = Batch()
                bound = (
                    through_stream_seq
                    if through_stream_seq is not None
                    else max((seq for seq, _ in lasts), default=0)
                )
                for table_id, (last_in_stream, last_body) in zip(subjects, lasts, strict=True):
                    last = min(last_in_stream, bound)
                    projection = await self._projection(connection, table_id)
                    if projection.quarantined():
                        continue
                    if last > projection.last_seen_stream_seq:
                        batch.tables[projection.table_id] = projection
                        taken += await self._fill_gap(
                            connection, batch, projection, before_stream_seq=last + 1
                        )
                    elif (
                        last_in_stream <= bound
                        # its body, not its headers (any publisher may set those); decoded only here
                        and (last_message := _decoded(last_body)) is not None
                        and last_message.table_id == table_id
                        and checks.needs_stream_read(projection, last_message)
                    ):
                        # The stream holds a message beyond what the floor holds at a sequence the floor
                        # thinks it read past, and the consumer (idle, delivered through ``bound``) will
                        # not deliver it: a stream renumbered under the floor. Read from the floor's last
                        # entry of the table on; if the stream no longer holds it there, from where the
                        # stream still agrees with the floor (``_recover_renumbered``).
                        batch.tables[projection.table_id] = projection
                        taken += await self._fill_gap(
                            connection,
                            batch,
                            projection,
                            before_stream_seq=last_in_stream + 1,
                            pending=last_message,
                        )
                await write_batch(connection, batch)
                await self._check_fence(connection)
        except BaseException:
            self._tables.clear()  # nothing of it is on the floor: read the tables back from PostgreSQL
            raise
        for projection in batch.tables.values():
            projection.touched_rounds.clear()
        self.status.sweeps += 1
        return taken

    async def reconcile_progressive(self, connection: Connection) -> int:
        """Raise (and clear) the progressive links' reconciliation alerts. A failure of PostgreSQL is
        the loop's (retried like any); any other error of the reconciliation is logged and the consumer
        goes on: a report's fault never stops the floor taking the tables' journals."""
        try:
            raised = await progressive_view.raise_reconciliation_alerts(
                connection, prop=self.config.property_settings
            )
        except psycopg.OperationalError:
            raise
        except psycopg.Error as error:
            log.error("floor_progressive_reconcile_failed", error=str(error).splitlines()[0][:300])
            return 0
        if raised:
            self.status.alerts += raised
            log.warning("floor_progressive_reconcile_difference", alerts=raised)
        return raised

    async def _surveillance_loop(self, stop: asyncio.Event, js: JetStreamContext) -> None:
        """Every ``surveillance_poll_interval_s``, publish the surveillance events of what the floor
        took since the last pass (controller/floor/surveillance.py), on its own PostgreSQL connection.
        Any error (no SURVEILLANCE stream yet: `ensure_stream` creates it; the broker or PostgreSQL
        away) is logged and tried again next pass: the marks move only after the acks."""
        from controller.floor.surveillance import publish_pending  # noqa: PLC0415

        connection: Connection | None = None
        try:
            while not stop.is_set():
                try:
                    if connection is None or connection.closed:
                        connection = await psycopg.AsyncConnection.connect(self.config.dsn, autocommit=True)
                    self.status.surveillance_events += await publish_pending(
                        connection,
                        js,
                        self.config.surveillance_big_win_cents,
                        self.config.property_settings.money,
                    )
                except asyncio.CancelledError:
                    raise
                except Exception as error:  # the intake's task owns the connection's fate, not this one
                    self.status.surveillance_error = f"{type(error).__name__}: {error}"[:300]
                    log.warning("floor_surveillance_retry", error=self.status.surveillance_error)
                    if connection is not None:
                        with contextlib.suppress(Exception):
                            await connection.close()
                        connection = None
                await wait_event(stop, self.config.surveillance_poll_interval_s)
        finally:
            if connection is not None:
                with contextlib.suppress(Exception):
                    await connection.close()

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
            self._tables.pop(table_id, None)  # read back: what the release checked is what is replayed
            read = 0
            try:
                async with connection.transaction():
                    projection = await self._projection(connection, table_id)
                    batch = Batch()
                    outcome = "stale"
                    if projection.quarantined_at_seq == released.quarantined_at_seq:
                        outcome = "projected"
                        projection.quarantined_at_seq = projection.quarantine_reason = None
                        self._set_aside.update(released.set_aside)
                        self.site_of[table_id] = site_of_subject(released.subject) or ""
                        batch.tables[table_id] = projection
                        while True:  # _MAX_GAP_FILL at a time, while that moves the table on
                            before = projection.last_stream_seq
                            taken = await self._fill_gap(
                                connection, batch, projection, before_stream_seq=None
                            )
                            read += taken
                            moved = projection.last_stream_seq != before and not projection.quarantined()
                            if taken < _MAX_GAP_FILL or not moved:
                                break
                        await write_batch(connection, batch)
                    await release.record_applied(connection, released.release_id, outcome, read)
                    await self._check_fence(connection)
            except BaseException:
                self._tables.pop(table_id, None)
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

    async def _take_private(  # noqa: PLR0917 - one message's context
        self,
        connection: Connection,
        batch: Batch,
        projection: TableProjection,
        private: wire.PrivateMessage,
        stream_seq: int,
        quarantine: Quarantine,
    ) -> None:
        existing = batch.private_texts.get((projection.table_id, private.seq))
        known = projection.digests.get(private.seq)
        held: tuple[str | None, str | None] | None = (None if known is None else known[0], existing)
        if existing is None and known is None:
            held = await held_private(connection, projection.table_id, private.seq)
        try:
            verdict = checks.private_verdict(private, held=held)
        except wire.UNFORESEEN_ERRORS as error:  # no commitment of this text (wire.decode refuses it first)
            reason = f"the private part of entry {private.seq}: {type(error).__name__}"
            verdict = checks.Problem("undecodable", reason)
        if verdict == "duplicate":
            self.status.duplicates += 1
        elif isinstance(verdict, checks.Problem):
            quarantine(verdict.reason, alert_kind=verdict.kind, seq=private.seq)
        else:
            batch.add_private(projection.table_id, private, stream_seq)
            projection.digests.pop(private.seq, None)  # a resend now finds it stored
            self.status.privates += 1

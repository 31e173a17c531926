"""The uplink's shell: reads the journal (the outbox), publishes to JetStream, records what is acked.

One asyncio task per table (``Uplink.run``). It never writes the journal's entries and never makes the
table wait: it reads the journal through its own read-only connection (WAL: readers never block the
writer) and is woken by ``notify()`` or a short poll. Its state:

- **connect** (TLS, the table's own credentials, its own inbox prefix), then **sync**: ask the stream
  for the last message of the table's subject (a direct get, allowed for that subject only) and resume
  after its ``Flushtable-Pos``; the outbox is re-folded from the journal's start when the server holds
  less than what was sent (it lost something, or this process is new);
- **publish** each due message with its de-duplication id and the expected last subject sequence, one
  at a time (the next one's expected sequence is this one's ack), and move the high-water mark only on
  the ack; it is written to a small file beside the journal (``<journal>.uplink-mark.json``, replaced
  atomically) at most every 0.25 s and whenever the outbox is drained. Not into the journal's file: a
  seal while the table runs renames that file and hashes it, and a new segment must not lose the mark;
- the journal is read a page at a time, each read on a connection of its own opened by path and closed
  before the read returns, under ``file_lock``: the daemon seals only while the lock is free (it seals on
  the loop, so no read starts during a seal) and the next read opens the new segment, following the
  sealed ones by entry seq (``Journal.entries``);
- any error (the server gone, a timeout, a refused sequence) closes the connection and retries with
  exponential backoff and jitter, capped; a good sync resets it.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import random
import secrets
import sqlite3
import ssl
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import nats
import nats.errors
import nats.js.errors
import structlog
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.js.api import PubAck
from nats.js.client import JetStreamContext

from controller.config import UplinkConfig
from controller.journal.chain import format_time_utc
from controller.journal.store import Journal, JournalEntry, JournalError
from controller.logs import log_nats_error
from controller.tls import ssl_context
from controller.uplink import wire
from controller.uplink.outbox import Outbox, OutMessage
from controller.uplink.wire import stored_subject, table_inbox, table_subject, verify_subject
from controller.waits import ReconnectDelay, close_quietly, raise_if_cancelled, wait_event

log = structlog.get_logger("flushtable.uplink")
# The daemon's answer to a seeded software verification: (seed, requested_by) -> the reply's fields.
VerifyHandler = Callable[[bytes, str], Awaitable[dict[str, Any]]]
_PAGE = 500
_WRONG_LAST_SEQUENCE = 10071


@dataclass(frozen=True, slots=True)
class HighWaterMark:
    position: wire.Position
    stream_seq: int
    acked_utc: str


def mark_path(journal_path: Path) -> Path:
    """The file beside the journal that holds the uplink's high-water mark."""
    return journal_path.with_name(journal_path.name + ".uplink-mark.json")


def read_high_water_mark(journal_path: Path) -> HighWaterMark | None:
    """What the server last acknowledged, as recorded beside the journal (None: never). A journal from
    before the mark moved out of it holds it in its own table ``uplink_state``: read from there then."""
    try:
        data = json.loads(mark_path(journal_path).read_text(encoding="utf-8"))
        return HighWaterMark(
            wire.Position(int(data["entry_seq"]), int(data["release"])),
            int(data["stream_seq"]),
            str(data["acked_utc"]),
        )
    except FileNotFoundError:
        pass
    except (OSError, ValueError, KeyError, TypeError) as error:
        # Advice only (the server's answer rules): a damaged mark is as none.
        log.warning("uplink_mark_unreadable", path=str(mark_path(journal_path)), error=str(error)[:200])
        return None
    return _legacy_high_water_mark(journal_path)


def _legacy_high_water_mark(journal_path: Path) -> HighWaterMark | None:
    if not journal_path.is_file():
        return None
    connection = sqlite3.connect(f"{journal_path.resolve().as_uri()}?mode=ro", uri=True, timeout=5)
    try:
        row = connection.execute(
            "SELECT entry_seq, release, stream_seq, acked_utc FROM uplink_state"
        ).fetchone()
    except sqlite3.OperationalError:
        return None
    finally:
        connection.close()
    if row is None:
        return None
    return HighWaterMark(wire.Position(int(row[0]), int(row[1])), int(row[2]), str(row[3]))


def write_high_water_mark(journal_path: Path, mark: HighWaterMark) -> None:
    """Replace the mark beside the journal atomically (a crash leaves the old mark or the new one)."""
    target = mark_path(journal_path)
    temporary = target.with_name(target.name + ".tmp")
    body = json.dumps(
        {
            "entry_seq": mark.position.entry_seq,
            "release": mark.position.release,
            "stream_seq": mark.stream_seq,
            "acked_utc": mark.acked_utc,
        },
        sort_keys=True,
    )
    with temporary.open("w", encoding="utf-8") as handle:
        handle.write(body)
        handle.flush()
        # No fsync: the mark is advice (a stale one only resends what the server de-duplicates).
    os.replace(temporary, target)


class _MarkStore:
    """Writes the high-water mark beside the journal (never into the journal's file)."""

    def __init__(self, journal_path: Path) -> None:
        self._journal_path = journal_path

    def write(self, mark: HighWaterMark) -> None:
        write_high_water_mark(self._journal_path, mark)

    def close(self) -> None:
        pass


class _Reader:
    """Reads the journal a page at a time, each page on a read-only connection opened by path and closed
    before it returns: between reads the uplink holds nothing on the file, so the daemon can seal it."""

    def __init__(self, journal_path: Path) -> None:
        self.path = journal_path

    def page(self, since_seq: int) -> list[JournalEntry]:
        journal = Journal.open_existing(self.path, readonly=True)
        try:
            return list(itertools.islice(journal.entries(since_seq), _PAGE))
        finally:
            journal.close()


class _Resync(Exception):
    """The server's view of the subject differs from ours: sync again."""


@dataclass
class UplinkStatus:
    connected: bool = False
    acked: wire.Position = field(default_factory=lambda: wire.Position(0, 0))
    stream_seq: int = 0
    journal_seq: int = 0
    published: int = 0
    duplicates: int = 0
    forks: int = 0  # messages of ours whose place (id or position) the server holds another body in
    last_fork: str = ""
    reconnects: int = 0
    # publishes answered "no responders" and sent again on the same connection (a stream's election)
    unavailable: int = 0
    last_error: str = ""


class Uplink:
    def __init__(  # noqa: PLR0913 - keyword-only injection points and callbacks the daemon and tests set
        self,
        config: UplinkConfig,
        journal_path: Path,
        table_id: str,
        *,
        rng: random.Random | None = None,
        clock: Callable[[], float] = time.monotonic,
        on_verify: VerifyHandler | None = None,
        file_lock: asyncio.Lock | None = None,
    ) -> None:
        self.config = config
        # Held around each read of the journal's file; the daemon seals it only while the lock is free.
        self.file_lock = file_lock or asyncio.Lock()
        self._on_verify = on_verify
        self.journal_path = Path(journal_path)
        self.table_id = table_id
        self.subject = table_subject(config.site, table_id)
        self.stored_subject = stored_subject(config.site, table_id)
        self.status = UplinkStatus()
        self._wake = asyncio.Event()
        self._rng = rng or random.Random()
        self._clock = clock
        self._outbox = Outbox(table_id)
        self._queue: list[OutMessage] = []  # fed but not yet acked, in order
        self._last_persist = 0.0
        self._mark: HighWaterMark | None = None
        self._acked_body: bytes | None = None  # the body of the message at ``status.acked``, once known

    def notify(self) -> None:
        """The journal grew: publish without waiting for the next poll."""
        self._wake.set()

    async def run(self, stop: asyncio.Event) -> None:
        """Publish until ``stop`` is set; errors are retried forever (the table never waits)."""
        if any(c in self.table_id for c in ".*> "):
            raise ValueError(f"table id {self.table_id!r} cannot be a NATS subject token (it has a '.')")
        marks = _MarkStore(self.journal_path)
        async with self.file_lock:  # an old journal's mark is read from its file
            stored_mark = await asyncio.to_thread(read_high_water_mark, self.journal_path)
        if stored_mark is not None and stored_mark.position > self.status.acked:
            self.status.acked = stored_mark.position
        journal = _Reader(self.journal_path)
        retry = ReconnectDelay.of(self.config, self._rng)
        try:
            while not stop.is_set():
                raise_if_cancelled()
                client: Client | None = None
                try:
                    client = await self._connect()
                    self.status.connected = True
                    if self._on_verify is not None:
                        await client.subscribe(
                            verify_subject(self.config.site, self.table_id), cb=self._answer
                        )
                    await self._sync(client, journal)
                    retry.reset()
                    await self._publish_loop(client, journal, marks, stop)
                except (
                    _Resync,
                    nats.errors.Error,
                    OSError,
                    TimeoutError,
                    ssl.SSLError,
                    JournalError,
                    sqlite3.Error,
                ) as error:
                    self.status.last_error = f"{type(error).__name__}: {error}"[:300]
                    log.warning("uplink_retry", table_id=self.table_id, error=self.status.last_error)
                finally:
                    self.status.connected = False
                    await close_quietly(client.close() if client is not None else None)
                if stop.is_set():
                    break
                self.status.reconnects += 1
                await retry.wait(stop)
        finally:
            if self._mark is not None:
                await asyncio.to_thread(marks.write, self._mark)
            marks.close()

    async def _answer(self, message: Msg) -> None:
        """The floor's seeded software verification (docs/operations.md "Software verification"): the
        seed is the floor's; the answer is computed here, from the files that run, and journaled."""
        assert self._on_verify is not None
        try:
            request = json.loads(message.data)
            seed = bytes.fromhex(str(request["seed"]))
            requested_by = str(request.get("requested_by", "floor"))[:100]
            if not 8 <= len(seed) <= 64:
                raise ValueError("a seed is 8 to 64 bytes")
        except (ValueError, KeyError, TypeError) as error:
            await message.respond(json.dumps({"error": f"bad request: {error}"[:200]}).encode())
            return
        try:
            answer = await self._on_verify(seed, requested_by)
        except Exception as error:  # the table plays on; the floor records the failure as no answer
            log.error("software_check_failed", error=f"{type(error).__name__}: {error}"[:300])
            await message.respond(json.dumps({"error": "the table could not compute its digest"}).encode())
            return
        await message.respond(json.dumps(answer, sort_keys=True).encode())

    async def _connect(self) -> Client:
        return await nats.connect(
            servers=list(self.config.servers),
            user=self.config.user,
            password=self.config.password,
            tls=ssl_context(self.config.ca_file),
            tls_hostname="127.0.0.1" if "127.0.0.1" in self.config.servers[0] else None,
            inbox_prefix=table_inbox(self.table_id),
            allow_reconnect=False,
            connect_timeout=self.config.connect_timeout_s,
            max_reconnect_attempts=0,
            # A silent node (its sockets open) noticed in seconds, not nats-py's minutes (wire.py's why).
            ping_interval=wire.NATS_PING_INTERVAL_S,
            max_outstanding_pings=wire.NATS_MAX_OUTSTANDING_PINGS,
            name=f"flushtable-uplink-{self.table_id}",
            error_cb=log_nats_error,
        )

    async def _last_on_subject(self, js: JetStreamContext) -> tuple[int, dict[str, str], bytes] | None:
        """The stream sequence, headers and body of the last message on our subject (None: none). A
        direct get of the subject's last message is the only read a table's credentials allow: of the
        subject as published (a site's stream, or a hub's made before the tokens: docs/floor.md
        "Partitioned floor workers"), else as the hub's stream stores it (with its partition tokens,
        wire.stored_subject). A table's messages are all on one of the two in a given stream. The
        published subject is asked first: a table user written before the tokens may not direct-get the
        stored one (nats-server leaves the request unanswered: a timeout, and the uplink would retry it
        for ever), and a tokenized stream's published subject is always empty (one quick not-found)."""
        last = None
        for subject in (self.subject, self.stored_subject):
            try:
                last = await js.get_last_msg(self.config.stream, subject, direct=True)
                break
            except nats.js.errors.NotFoundError:
                continue
        if last is None:
            return None
        headers = {str(k): str(v) for k, v in (last.headers or {}).items()}
        return int(last.seq or 0), headers, last.data or b""

    async def _server_position(self, client: Client, journal: _Reader) -> tuple[wire.Position, int]:
        """The position and stream sequence of the last message the stream holds for our subject, if
        that message is ours: its body is what our journal says is at the position it claims (its
        position header is any publisher's to set). A message that is not ours (someone else published
        with this table's credentials: the floor quarantines it) leaves our place where the server
        last acknowledged us; the stream's last sequence for the subject is that message's."""
        js = client.jetstream(timeout=self.config.ack_timeout_s)
        last = await self._last_on_subject(js)
        if last is None:
            return wire.Position(0, 0), 0
        stream_seq, headers, body = last
        try:
            claimed: wire.Position | None = wire.Position.parse(headers.get(wire.POSITION) or "")
        except wire.BadMessage:
            claimed = None
        if claimed is not None:
            ours = await self._our_body(journal, claimed)
            if ours is None or ours == body:
                # Ours (or beyond this journal's end: _sync refuses to publish then, as before).
                if ours is not None:
                    self._acked_body = body
                return claimed, stream_seq
            self._fork_found(claimed.entry_seq, stream_seq, body, "the server's last message on the subject")
        else:
            # No position: not an uplink's message. If it is an entry of this table that the journal
            # holds otherwise, it is a fork all the same.
            decoded = _decoded(body)
            if isinstance(decoded, wire.EntryMessage) and decoded.table_id == self.table_id:
                ours = await self._our_body(journal, wire.Position(decoded.seq, 0))
                if ours and ours != body:
                    self._fork_found(
                        decoded.seq, stream_seq, body, "the server's last message on the subject"
                    )
        log.warning(
            "uplink_foreign_message",
            table_id=self.table_id,
            stream_seq=stream_seq,
            resume_after=self.status.acked.text(),
        )
        return self.status.acked, stream_seq

    async def _our_body(self, journal: _Reader, position: wire.Position) -> bytes | None:
        """The body of our message at ``position``: b"" if the journal has no message there, None if
        the position is beyond the journal's end. From what is at hand (the last acked message, the
        queue), else from a fold of the journal up to that entry (a new process, or a claim about an
        earlier message)."""
        if position == self.status.acked and self._acked_body is not None:
            return self._acked_body
        for message in self._queue:
            if message.position == position:
                return message.body
        outbox = Outbox(self.table_id)
        while outbox.last_seq < position.entry_seq:
            page = await self._page(journal, outbox.last_seq)
            if not page:
                return None
            for stored in page:
                if stored.seq > position.entry_seq:
                    break
                for message in outbox.feed(stored):
                    if message.position == position:
                        return message.body
        return b""

    def _fork_found(self, entry_seq: int, stream_seq: int, theirs: bytes | None, where: str) -> None:
        """The server holds, where a message of ours belongs, another body: a fork (someone published
        with this table's credentials what the table did not write). Said loudly; the floor finds it
        too (it raises its fork alert and quarantines the table when our own message reaches it)."""
        self.status.forks += 1
        decoded = _decoded(theirs) if theirs is not None else None
        what = (
            f"entry {decoded.seq} hash {decoded.hash}"
            if isinstance(decoded, wire.EntryMessage)
            else "a message that is not ours"
        )
        self.status.last_fork = (
            f"table {self.table_id}: {where} (stream seq {stream_seq}) is {what}, not this journal's entry "
            f"{entry_seq}: a fork; this table's own message is sent under an id nobody else holds"
        )[:500]
        log.error("uplink_fork", table_id=self.table_id, entry_seq=entry_seq, stream_seq=stream_seq,
                  message=self.status.last_fork)  # fmt: skip

    async def _sync(self, client: Client, journal: _Reader) -> None:
        position, stream_seq = await self._server_position(client, journal)
        if position < self.status.acked:
            # The server holds less than it acknowledged (its store lost the tail): send it again,
            # from a fresh fold of the journal (the same positions and ids as the first time).
            log.warning(
                "uplink_server_behind",
                table_id=self.table_id,
                server=position.text(),
                acked=self.status.acked.text(),
            )
            self._outbox = Outbox(self.table_id)
            self._queue = []
        self._queue = [m for m in self._queue if m.position > position]
        self.status.acked = position
        self.status.stream_seq = stream_seq
        await self._fill(journal, after=position)
        if position.entry_seq > self._outbox.last_seq:
            raise _Resync(
                f"the floor holds entry {position.entry_seq} of table {self.table_id}, beyond this journal's "
                f"last ({self._outbox.last_seq}): another journal for the same table? nothing is published"
            )
        log.info(
            "uplink_synced", table_id=self.table_id, server_position=position.text(), stream_seq=stream_seq
        )

    async def _fill(self, journal: _Reader, *, after: wire.Position) -> None:
        """Feed the outbox what the journal holds beyond it; queue the messages after ``after``."""
        while True:
            since = self._outbox.last_seq
            page = await self._page(journal, since)
            if not page:
                return
            for stored in page:
                for message in self._outbox.feed(stored):
                    if message.position > after:
                        self._queue.append(message)
            self.status.journal_seq = self._outbox.last_seq
            if len(self._queue) >= _PAGE:
                return

    async def _publish_loop(
        self, client: Client, journal: _Reader, marks: _MarkStore, stop: asyncio.Event
    ) -> None:
        js = client.jetstream(timeout=self.config.ack_timeout_s)
        while not stop.is_set():
            raise_if_cancelled()  # a cancel swallowed by nats-py's wait for an ack ends the loop still
            if not self._queue:
                # Cleared before the journal is read: a notify() while it is read wakes the wait below.
                self._wake.clear()
                await self._persist(marks, force=True)
                await self._fill(journal, after=self.status.acked)
            if not self._queue:
                await wait_event(self._wake, self.config.poll_interval_s)
                if client.is_closed or not client.is_connected:
                    raise _Resync("connection lost")
                continue
            message = self._queue[0]
            headers = {wire.MSG_ID: message.msg_id, wire.POSITION: message.position.text()}
            if self.status.stream_seq:
                headers[wire.EXPECTED_LAST_SUBJECT_SEQ] = str(self.status.stream_seq)
            ack = await self._publish(js, message.body, headers, stop)
            if ack.duplicate:
                # The server already holds a message with this id. Ours only if it is our body: the
                # stored one is compared before the ack is taken as ours. Another body (someone took
                # the id first) is a fork; ours is then sent under an id nobody can hold, so that the
                # floor holds both bodies (and raises the fork).
                self.status.duplicates += 1
                held = await self._last_on_subject(js)
                if held is None or held[0] != int(ack.seq) or held[2] != message.body:
                    self._fork_found(message.entry_seq, int(ack.seq), held[2] if held else None,
                                     f"the message the server holds under id {message.msg_id}")  # fmt: skip
                    headers[wire.MSG_ID] = f"{message.msg_id}:again:{secrets.token_hex(8)}"
                    if held is not None:
                        headers[wire.EXPECTED_LAST_SUBJECT_SEQ] = str(held[0])
                    ack = await self._publish(js, message.body, headers, stop)
                    if ack.duplicate:  # an id of 64 random bits taken: not the server's own doing
                        raise _Resync(f"a fresh id for entry {message.entry_seq} was a duplicate too")
            self._queue.pop(0)
            self.status.published += 1
            self.status.acked = message.position
            self._acked_body = message.body
            self.status.stream_seq = max(self.status.stream_seq, int(ack.seq))
            self._mark = HighWaterMark(message.position, self.status.stream_seq, _utc_text())
            await self._persist(marks, force=False)

    async def _page(self, journal: _Reader, since_seq: int) -> list[JournalEntry]:
        async with self.file_lock:
            return await asyncio.to_thread(journal.page, since_seq)

    async def _publish(
        self, js: JetStreamContext, body: bytes, headers: dict[str, str], stop: asyncio.Event
    ) -> PubAck:
        """One message published and acked. "No responders" (the stream's leader being elected) is
        retried on this connection for up to STREAM_ELECTION_WAIT_S (wire.py's why), then raised."""
        pause_s = wire.STREAM_ELECTION_PAUSE_FIRST_S
        deadline_s = self._clock() + wire.STREAM_ELECTION_WAIT_S
        while True:
            try:
                return await js.publish(self.subject, body, headers=headers)
            except nats.js.errors.NoStreamResponseError:
                if stop.is_set() or self._clock() >= deadline_s:
                    raise
            except nats.js.errors.APIError as error:
                if error.err_code == _WRONG_LAST_SEQUENCE:
                    raise _Resync(f"the stream's last sequence for {self.subject} moved: {error}") from None
                raise
            self.status.unavailable += 1
            await wait_event(stop, pause_s * (0.5 + self._rng.random()))  # a retry's pause; stop ends it
            pause_s = min(pause_s * 2, wire.STREAM_ELECTION_PAUSE_MOST_S)

    async def _persist(self, marks: _MarkStore, *, force: bool) -> None:
        now = self._clock()
        if self._mark is None or (
            not force and now - self._last_persist < self.config.hwm_persist_interval_s
        ):
            return
        mark, self._mark = self._mark, None
        self._last_persist = now
        try:
            await asyncio.to_thread(marks.write, mark)
        except OSError as error:  # a full disk: the next ack writes it; the server's answer rules
            self._mark = mark
            log.warning("uplink_mark_not_written", table_id=self.table_id, error=str(error))


def _decoded(body: bytes) -> wire.EntryMessage | wire.PrivateMessage | None:
    try:
        return wire.decode(body)
    except (wire.BadMessage, *wire.UNFORESEEN_ERRORS):
        return None


def _utc_text() -> str:
    return format_time_utc(datetime.now(UTC))


async def start_uplink(
    journal_path: Path,
    table_id: str,
    config: UplinkConfig,
    stop: asyncio.Event,
    *,
    on_verify: VerifyHandler | None = None,
    file_lock: asyncio.Lock | None = None,
) -> None:
    """The daemon's uplink task (``[uplink]`` in the table's configuration). Whatever happens to it, the
    table plays on: an unexpected error is logged and the uplink starts again after a pause."""
    while not stop.is_set():
        try:
            await Uplink(config, journal_path, table_id, on_verify=on_verify, file_lock=file_lock).run(stop)
        except Exception as error:
            log.error("uplink_failed", table_id=table_id, error=f"{type(error).__name__}: {error}"[:300])
            await wait_event(stop, config.backoff_max_s)

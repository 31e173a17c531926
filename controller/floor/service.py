"""`flushtable floor serve`: the durable JetStream consumer that writes every table's journal to
PostgreSQL (docs/floor.md "The floor service").

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
import hashlib
import json
import random
import ssl
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import nats
import nats.errors
import nats.js.errors
import psycopg
import structlog
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.js.client import JetStreamContext
from psycopg.types.json import Jsonb

from controller.floor.servers import FLOOR_CONSUMER, FLOOR_INBOX, STREAM_NAME, SUBJECT_ROOT
from controller.floor.theoretical import theoretical_win_cents
from controller.journal import entries as typed
from controller.journal.chain import GENESIS_HASH, entry_hash_from_text
from controller.journal.kinds import CLOSING_KINDS
from controller.journal.state import Meters, TableState
from controller.uplink import wire

log = structlog.get_logger("flushtable.floor")
_MAX_GAP_FILL = 20_000  # messages read back from the stream for one table at a time


@dataclass(frozen=True, slots=True)
class FloorConfig:
    servers: tuple[str, ...]
    user: str
    password: str
    ca_file: Path
    dsn: str
    inbox_prefix: str = FLOOR_INBOX
    batch_size: int = 1000
    fetch_timeout_s: float = 0.5
    backoff_initial_s: float = 0.2
    backoff_max_s: float = 5.0
    sweep_interval_s: float = 5.0  # when idle, this often: check every table's tail in the stream


@dataclass(frozen=True, slots=True)
class FloorStored:
    """An entry as the floor's reducer folds it: its envelope and its public part."""

    seq: int
    time_utc: str
    table_id: str
    round_id: str | None
    source: str
    entry: typed.Entry


@dataclass
class TableProjection:
    table_id: str
    last_seq: int = 0
    last_hash: str = GENESIS_HASH
    quarantined_at_seq: int | None = None
    quarantine_reason: str | None = None
    last_stream_seq: int = 0  # where in the stream the table's last entry on the floor is
    last_seen_stream_seq: int = 0  # the table's last message (entry or private part) taken
    state: TableState = field(default_factory=TableState)
    touched_rounds: set[str] = field(default_factory=set)
    # Commitments of entries in rounds whose private parts may still come (a round's are released right
    # after the entry that reveals them; once the next entry arrives, what did not come never will).
    digests: dict[int, tuple[str, str]] = field(default_factory=dict)  # seq -> (digest, round_id)
    closed_round: str | None = None  # the round the last entry closed

    def quarantined(self) -> bool:
        return self.quarantined_at_seq is not None


@dataclass
class _Batch:
    entries: list[tuple[Any, ...]] = field(default_factory=list)
    privates: list[tuple[Any, ...]] = field(default_factory=list)
    private_texts: dict[tuple[str, int], str] = field(default_factory=dict)
    alerts: list[tuple[Any, ...]] = field(default_factory=list)
    quarantine: list[tuple[Any, ...]] = field(default_factory=list)
    fault_raised: list[tuple[Any, ...]] = field(default_factory=list)
    fault_acked: list[tuple[Any, ...]] = field(default_factory=list)
    fault_cleared: list[tuple[Any, ...]] = field(default_factory=list)
    tables: dict[str, TableProjection] = field(default_factory=dict)


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
    last_error: str = ""


@dataclass(frozen=True, slots=True)
class Incoming:
    """A message from the stream: from the consumer, or read back from the stream to fill a gap."""

    stream_seq: int
    subject: str
    headers: Mapping[str, str]
    data: bytes

    @classmethod
    def of(cls, message: Msg) -> Incoming:
        return cls(message.metadata.sequence.stream, message.subject, message.headers or {}, message.data)


def site_of_subject(subject: str) -> str | None:
    parts = subject.split(".")
    return parts[1] if len(parts) == 4 else None


def table_of_subject(subject: str) -> str | None:
    parts = subject.split(".")
    if len(parts) == 4 and parts[0] == SUBJECT_ROOT and parts[3] == "journal":
        return parts[2]
    return None


class FloorService:
    def __init__(self, config: FloorConfig, *, rng: random.Random | None = None) -> None:
        self.config = config
        self.status = FloorStatus()
        self._tables: dict[str, TableProjection] = {}
        self._js: JetStreamContext | None = None
        self.site_of: dict[str, str] = {}  # table -> the site token of its subject
        self._rng = rng or random.Random()
        self.committed = asyncio.Event()  # set after each commit (tests and the demo wait on it)

    # --- the loop ---------------------------------------------------------------------------------
    async def run(self, stop: asyncio.Event) -> None:
        backoff_s = self.config.backoff_initial_s
        while not stop.is_set():
            client: Client | None = None
            connection: psycopg.AsyncConnection[tuple[Any, ...]] | None = None
            try:
                client = await nats.connect(
                    servers=list(self.config.servers),
                    user=self.config.user,
                    password=self.config.password,
                    tls=ssl.create_default_context(cafile=str(self.config.ca_file)),
                    inbox_prefix=self.config.inbox_prefix,
                    allow_reconnect=False,
                    connect_timeout=5,
                    name="flushtable-floor",
                )
                connection = await psycopg.AsyncConnection.connect(self.config.dsn)
                js = client.jetstream()
                self._js = js
                last_sweep_s = time.monotonic()
                subscription = await js.pull_subscribe_bind(
                    FLOOR_CONSUMER, STREAM_NAME, inbox_prefix=(self.config.inbox_prefix + ".").encode()
                )
                log.info("floor_consuming", consumer=FLOOR_CONSUMER)
                backoff_s = self.config.backoff_initial_s
                while not stop.is_set():
                    try:
                        messages = await subscription.fetch(
                            self.config.batch_size, timeout=self.config.fetch_timeout_s
                        )
                    except (nats.errors.TimeoutError, TimeoutError):
                        if client.is_closed or not client.is_connected:
                            raise
                        if time.monotonic() - last_sweep_s > self.config.sweep_interval_s:
                            last_sweep_s = time.monotonic()
                            # Only when the consumer has nothing left to deliver: then a table's tail
                            # beyond what the floor took was skipped, not merely not yet delivered.
                            info = await js.consumer_info(STREAM_NAME, FLOOR_CONSUMER)
                            if not info.num_pending and not info.num_ack_pending:
                                await self.sweep(connection)
                        continue
                    await self._handle(connection, messages)
            except (
                nats.errors.Error,
                nats.js.errors.Error,
                psycopg.Error,
                OSError,
                TimeoutError,
                ssl.SSLError,
            ) as error:
                self.status.last_error = f"{type(error).__name__}: {error}"[:300]
                log.warning("floor_retry", error=self.status.last_error)
            finally:
                for closing in (
                    connection.close() if connection else None,
                    client.close() if client else None,
                ):
                    if closing is not None:
                        with contextlib.suppress(Exception):
                            await asyncio.wait_for(closing, 2)
            if stop.is_set():
                break
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), backoff_s * (0.5 + self._rng.random()))
            backoff_s = min(backoff_s * 2, self.config.backoff_max_s)

    async def _handle(
        self, connection: psycopg.AsyncConnection[tuple[Any, ...]], messages: list[Msg]
    ) -> None:
        # The stream's order; redeliveries of one batch come back together (max_ack_pending).
        messages = sorted(messages, key=lambda m: m.metadata.sequence.stream)
        try:
            async with connection.transaction():
                batch = _Batch()
                for message in messages:
                    await self._take(connection, batch, Incoming.of(message))
                await self._write(connection, batch)
        except BaseException:
            # Nothing of the batch is on the floor: forget what it folded, and have it sent again.
            for table_id in list(self._tables):
                self._tables.pop(table_id, None)
            self.status.db_failures += 1
            for message in messages:
                with contextlib.suppress(Exception):
                    await message.nak()
            raise
        for projection in batch.tables.values():
            projection.touched_rounds.clear()
        for message in messages:  # each one: an ack never covers a message this batch did not hold
            await message.ack()
        self.status.batches += 1
        self.committed.set()

    # --- one message ------------------------------------------------------------------------------
    async def _projection(
        self, connection: psycopg.AsyncConnection[tuple[Any, ...]], table_id: str
    ) -> TableProjection:
        projection = self._tables.get(table_id)
        if projection is not None:
            return projection
        projection = TableProjection(table_id, state=TableState(table_id))
        row = await (
            await connection.execute(
                "SELECT last_seq, last_hash, quarantined_at_seq, quarantine_reason FROM floor_tables "
                "WHERE table_id = %s",
                (table_id,),
            )
        ).fetchone()
        if row is not None:
            projection.last_seq, projection.last_hash = int(row[0]), str(row[1])
            projection.quarantined_at_seq, projection.quarantine_reason = row[2], row[3]
            cursor = await connection.execute(
                "SELECT seq, time_text, round_id, source, kind, payload::text FROM floor_entries "
                "WHERE table_id = %s AND seq <= %s ORDER BY seq",
                (table_id, projection.last_seq),
            )
            async for seq, time_text, round_id, source, kind, payload_text in cursor:
                projection.state.apply(
                    FloorStored(
                        seq, time_text, table_id, round_id, source, typed.decode_public(kind, payload_text)
                    )
                )
            row = await (
                await connection.execute(
                    "SELECT stream_seq FROM floor_entries WHERE table_id = %s AND seq = %s",
                    (table_id, projection.last_seq),
                )
            ).fetchone()
            projection.last_stream_seq = int(row[0] or 0) if row is not None else 0
            row = await (
                await connection.execute(
                    "SELECT GREATEST((SELECT max(stream_seq) FROM floor_entries WHERE table_id = %s), "
                    "(SELECT max(stream_seq) FROM floor_private WHERE table_id = %s))",
                    (table_id, table_id),
                )
            ).fetchone()
            projection.last_seen_stream_seq = int(row[0] or 0) if row is not None else 0
        self._tables[table_id] = projection
        return projection

    async def _take(
        self, connection: psycopg.AsyncConnection[tuple[Any, ...]], batch: _Batch, message: Incoming
    ) -> None:
        stream_seq = message.stream_seq
        subject_table = table_of_subject(message.subject)
        if subject_table is not None:
            self.site_of[subject_table] = site_of_subject(message.subject) or ""
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
        try:
            decoded = wire.decode(message.data)
        except wire.BadMessage as error:
            kind = "unknown_kind" if "unknown entry kind" in str(error) else "undecodable"
            quarantine(str(error), alert_kind=kind)
            return
        if decoded.table_id != subject_table:
            quarantine(
                f"names table {decoded.table_id!r} on table {subject_table}'s subject",
                alert_kind="wrong_table",
                seq=decoded.seq,
            )
            return
        projection = await self._projection(connection, subject_table)
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
        if decoded.seq > projection.last_seq + (1 if isinstance(decoded, wire.EntryMessage) else 0):
            # Beyond what the floor holds: the consumer may have skipped messages (a broker or a floor
            # service killed before its state was stored): the stream itself is asked for what lies
            # between, before anything is called a gap.
            await self._fill_gap(connection, batch, projection, before_stream_seq=stream_seq)
            if projection.quarantined():
                quarantine(f"the table is quarantined after entry {projection.quarantined_at_seq}",
                           alert_kind=None, seq=decoded.seq)  # fmt: skip
                return
        if isinstance(decoded, wire.PrivateMessage):
            await self._take_private(connection, batch, projection, decoded, stream_seq, quarantine)
        else:
            await self._take_entry(connection, batch, projection, decoded, stream_seq, quarantine)
        if len(batch.quarantine) == quarantined_before:
            projection.last_seen_stream_seq = max(projection.last_seen_stream_seq, stream_seq)
        if isinstance(decoded, wire.EntryMessage) and len(batch.quarantine) == quarantined_before:
            # Taken (or a resend): the table's entries are read up to here. (A private part comes
            # after later entries - the one that revealed it - so it does not move this.)
            projection.last_stream_seq = max(projection.last_stream_seq, stream_seq)

    async def _take_entry(  # noqa: PLR0917 - one message's context
        self,
        connection: psycopg.AsyncConnection[tuple[Any, ...]],
        batch: _Batch,
        projection: TableProjection,
        entry: wire.EntryMessage,
        stream_seq: int,
        quarantine: Any,
    ) -> None:
        if entry.seq <= projection.last_seq:
            row = await (
                await connection.execute(
                    "SELECT hash FROM floor_entries WHERE table_id = %s AND seq = %s",
                    (projection.table_id, entry.seq),
                )
            ).fetchone()
            stored_hash = (
                row[0]
                if row is not None
                else next(
                    (r[11] for r in batch.entries if r[0] == projection.table_id and r[1] == entry.seq), None
                )
            )
            if stored_hash == entry.hash:
                self.status.duplicates += 1
                return
            quarantine(
                f"a second, different entry {entry.seq} (fork): the floor keeps the first",
                alert_kind="fork",
                seq=entry.seq,
            )
            return
        problem: tuple[str, str] | None = None
        if entry.seq != projection.last_seq + 1:
            problem = ("gap", f"entry {entry.seq} after {projection.last_seq}: entries missing (gap)")
        elif entry.prev_hash != projection.last_hash:
            problem = ("broken_chain", "its prev_hash is not the hash of the entry before it (broken chain)")
        else:
            recomputed = entry_hash_from_text(
                prev_hash=entry.prev_hash,
                seq=entry.seq,
                time_utc=entry.time_utc,
                table_id=entry.table_id,
                round_id=entry.round_id,
                source=entry.source,
                kind=entry.kind,
                version=entry.version,
                payload_text=entry.payload_text,
                private_digest=entry.private_digest,
            )
            if recomputed != entry.hash:
                problem = ("bad_hash", "its hash does not match its contents (tampered?)")
        if problem is not None:
            kind, reason = problem
            quarantine(reason, alert_kind=kind, seq=entry.seq)
            projection.quarantined_at_seq = projection.last_seq
            projection.quarantine_reason = f"{kind} at entry {entry.seq}"
            return
        typed_entry = entry.entry
        stored = FloorStored(
            entry.seq, entry.time_utc, entry.table_id, entry.round_id, entry.source, typed_entry
        )
        projection.state.apply(stored)
        projection.last_seq, projection.last_hash = entry.seq, entry.hash
        if entry.round_id is not None:
            projection.touched_rounds.add(entry.round_id)
        if projection.closed_round is not None:
            done = projection.closed_round
            projection.digests = {s: d for s, d in projection.digests.items() if d[1] != done}
            projection.closed_round = None
        if entry.private_digest is not None and entry.round_id is not None:
            projection.digests[entry.seq] = (entry.private_digest, entry.round_id)
        if entry.kind in CLOSING_KINDS:
            projection.closed_round = entry.round_id
        batch.entries.append(
            (
                entry.table_id,
                entry.seq,
                entry.time_utc,
                entry.time_utc,
                entry.round_id,
                entry.source,
                entry.kind,
                entry.version,
                Jsonb(entry.payload),
                entry.private_digest,
                entry.prev_hash,
                entry.hash,
                stream_seq,
            )
        )
        self.status.entries += 1
        if isinstance(typed_entry, typed.FaultRaised):
            message = f"table {entry.table_id}: {typed_entry.kind_of_fault}: {typed_entry.reason.message}"
            batch.fault_raised.append(
                (
                    entry.table_id,
                    entry.seq,
                    typed_entry.kind_of_fault,
                    typed_entry.severity,
                    message,
                    typed_entry.fault_id,
                )
            )
        elif isinstance(typed_entry, typed.FaultAcknowledged):
            batch.fault_acked.append((typed_entry.by, entry.time_utc, entry.table_id, typed_entry.fault_id))
        elif isinstance(typed_entry, typed.FaultCleared):
            batch.fault_cleared.append((entry.time_utc, entry.table_id, typed_entry.fault_id))

    async def _fill_gap(
        self,
        connection: psycopg.AsyncConnection[tuple[Any, ...]],
        batch: _Batch,
        projection: TableProjection,
        *,
        before_stream_seq: int | None,
    ) -> int:
        """Read the table's messages from the stream itself, after the last one the floor handled and
        before ``before_stream_seq`` (None: to the end), and take them in order. Returns how many."""
        if self._js is None:
            return 0
        subject = f"{SUBJECT_ROOT}.{self.site_of.get(projection.table_id, '*')}.{projection.table_id}.journal"
        if "*" in subject:
            return 0
        taken = 0
        next_seq = projection.last_stream_seq + 1
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
        if taken:
            self.status.gap_fills += taken
            log.warning("floor_gap_filled", table_id=projection.table_id, messages=taken)
        return taken

    async def sweep(self, connection: psycopg.AsyncConnection[tuple[Any, ...]]) -> int:
        """When idle: every table whose last message in the stream is beyond what the floor handled
        (the consumer skipped a tail) is read from the stream. Returns the messages taken."""
        if self._js is None:
            return 0
        rows = await (await connection.execute("SELECT table_id FROM floor_tables")).fetchall()
        taken = 0
        async with connection.transaction():
            batch = _Batch()
            for (table_id,) in rows:
                site = self.site_of.get(str(table_id))
                if site is None:
                    continue
                subject = f"{SUBJECT_ROOT}.{site}.{table_id}.journal"
                try:
                    last = await self._js.get_last_msg(STREAM_NAME, subject, direct=True)
                except nats.js.errors.NotFoundError:
                    continue
                projection = await self._projection(connection, str(table_id))
                if int(last.seq or 0) > projection.last_seen_stream_seq and not projection.quarantined():
                    batch.tables[projection.table_id] = projection
                    taken += await self._fill_gap(connection, batch, projection, before_stream_seq=None)
            await self._write(connection, batch)
        for projection in batch.tables.values():
            projection.touched_rounds.clear()
        return taken

    async def _take_private(  # noqa: PLR0917 - one message's context
        self,
        connection: psycopg.AsyncConnection[tuple[Any, ...]],
        batch: _Batch,
        projection: TableProjection,
        private: wire.PrivateMessage,
        stream_seq: int,
        quarantine: Any,
    ) -> None:
        existing = batch.private_texts.get((projection.table_id, private.seq))
        known = projection.digests.get(private.seq)
        digest = None if known is None else known[0]
        if existing is None and digest is None:
            row = await (
                await connection.execute(
                    "SELECT e.private_digest, p.private_text FROM floor_entries e LEFT JOIN floor_private p "
                    "USING (table_id, seq) WHERE e.table_id = %s AND e.seq = %s",
                    (projection.table_id, private.seq),
                )
            ).fetchone()
            if row is None:
                quarantine(
                    f"a private part for entry {private.seq}, which the floor does not hold",
                    alert_kind="private_without_entry",
                    seq=private.seq,
                )
                return
            digest, existing = row[0], row[1]
        if existing is not None:
            if existing == private.private_text:
                self.status.duplicates += 1
            else:
                quarantine(
                    f"a second, different private part for entry {private.seq}: the floor keeps the first",
                    alert_kind="bad_commitment",
                    seq=private.seq,
                )
            return
        if digest is None or typed.commitment(private.private_text) != digest:
            quarantine(
                f"the private part of entry {private.seq} does not match its commitment",
                alert_kind="bad_commitment",
                seq=private.seq,
            )
            return
        batch.privates.append((projection.table_id, private.seq, private.private_text, stream_seq))
        batch.private_texts[projection.table_id, private.seq] = private.private_text
        projection.digests.pop(private.seq, None)  # a resend now finds it stored
        self.status.privates += 1

    # --- the transaction's writes -----------------------------------------------------------------
    async def _write(self, connection: psycopg.AsyncConnection[tuple[Any, ...]], batch: _Batch) -> None:
        async with connection.cursor() as cursor:
            if batch.entries:
                await cursor.executemany(
                    "INSERT INTO floor_entries (table_id, seq, time_utc, time_text, round_id, "
                    "source, kind, version, "
                    "payload, private_digest, prev_hash, hash, stream_seq) "
                    "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                    batch.entries,
                )
            if batch.privates:
                await cursor.executemany(
                    "INSERT INTO floor_private (table_id, seq, private_text, stream_seq) VALUES (%s, "
                    "%s, %s, %s)",
                    batch.privates,
                )
            if batch.quarantine:
                await cursor.executemany(
                    "INSERT INTO floor_quarantine (stream_seq, subject, table_id, msg_id, reason, body) "
                    "VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (stream_seq) DO NOTHING",
                    batch.quarantine,
                )
            if batch.alerts:
                await cursor.executemany(
                    "INSERT INTO floor_alerts (table_id, seq, stream_seq, origin, kind, message) "
                    "VALUES (%s, %s, %s, 'floor', %s, %s) ON CONFLICT DO NOTHING",
                    batch.alerts,
                )
            if batch.fault_raised:
                await cursor.executemany(
                    "INSERT INTO floor_alerts (table_id, seq, origin, kind, severity, message, fault_id) "
                    "VALUES (%s, %s, 'table', %s, %s, %s, %s) ON CONFLICT DO NOTHING",
                    batch.fault_raised,
                )
            if batch.fault_acked:
                await cursor.executemany(
                    "UPDATE floor_alerts SET acknowledged_by = %s, acknowledged_utc = %s "
                    "WHERE table_id = %s AND fault_id = %s",
                    batch.fault_acked,
                )
            if batch.fault_cleared:
                await cursor.executemany(
                    "UPDATE floor_alerts SET cleared_utc = %s WHERE table_id = %s AND fault_id = %s",
                    batch.fault_cleared,
                )
            rounds = list(_round_rows(batch.tables.values()))
            if rounds:
                await cursor.executemany(
                    "INSERT INTO floor_rounds (table_id, round_id, game, started_seq, started_utc, "
                    "status, closed_seq, "
                    "closed_utc, settlement, handle_cents, house_win_cents, rake_cents, "
                    "theoretical_win_cents) "
                    "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) "
                    "ON CONFLICT (table_id, round_id) DO UPDATE SET game = excluded.game, "
                    "started_seq = COALESCE(excluded.started_seq, floor_rounds.started_seq), "
                    "started_utc = COALESCE(excluded.started_utc, floor_rounds.started_utc), status "
                    "= excluded.status, "
                    "closed_seq = excluded.closed_seq, closed_utc = excluded.closed_utc, "
                    "settlement = excluded.settlement, handle_cents = excluded.handle_cents, "
                    "house_win_cents = excluded.house_win_cents, rake_cents = excluded.rake_cents, "
                    "theoretical_win_cents = excluded.theoretical_win_cents",
                    rounds,
                )
            if batch.tables:
                await cursor.executemany(
                    "INSERT INTO floor_tables (table_id, game, last_seq, last_hash, quarantined_at_seq, "
                    "quarantine_reason, phase, held, table_open, last_round_id, open_alerts, meters, "
                    "last_entry_utc, "
                    "updated_utc) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, now()) "
                    "ON CONFLICT (table_id) DO UPDATE SET game = excluded.game, last_seq = "
                    "excluded.last_seq, "
                    "last_hash = excluded.last_hash, quarantined_at_seq = excluded.quarantined_at_seq, "
                    "quarantine_reason = excluded.quarantine_reason, phase = excluded.phase, held = "
                    "excluded.held, "
                    "table_open = excluded.table_open, last_round_id = excluded.last_round_id, "
                    "open_alerts = excluded.open_alerts, meters = excluded.meters, "
                    "last_entry_utc = excluded.last_entry_utc, updated_utc = now()",
                    [_table_row(p) for p in batch.tables.values()],
                )


def _table_row(projection: TableProjection) -> tuple[Any, ...]:
    state = projection.state
    return (
        projection.table_id,
        state.game,
        projection.last_seq,
        projection.last_hash,
        projection.quarantined_at_seq,
        projection.quarantine_reason,
        state.phase,
        state.held,
        state.table_open,
        state.last_round_id,
        len(state.open_alerts),
        Jsonb(state.meters.to_json()),
        state.last_entry_utc or None,
    )


def _round_rows(projections: Iterable[TableProjection]) -> Iterable[tuple[Any, ...]]:
    for projection in projections:
        for round_id in sorted(projection.touched_rounds):
            round_state = projection.state.round(round_id)
            if round_state is None:
                continue
            handle = win = rake = theoretical = 0
            if round_state.settlement is not None and round_state.status != "in_progress":
                meters = Meters()
                meters.add_settlement(round_id, round_state.settlement, voided=round_state.status == "void")
                handle, win, rake = meters.handle_cents, meters.house_win_cents, meters.rake_cents
                if round_state.status == "settled":
                    theoretical = theoretical_win_cents(round_state.game, round_state.settlement)
            yield (
                projection.table_id,
                round_id,
                round_state.game,
                round_state.started_seq or None,
                round_state.started_utc or None,
                round_state.status,
                round_state.closed_seq,
                round_state.closed_utc or None,
                Jsonb(round_state.settlement) if round_state.settlement else None,
                handle,
                win,
                rake,
                theoretical,
            )


def dumps(value: object) -> str:
    return json.dumps(value, sort_keys=True)


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()

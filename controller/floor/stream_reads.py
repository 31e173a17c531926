"""The floor's reads of a table's messages from the stream itself, beside its consumer (docs/floor.md
"The floor service", "Failure semantics"): a gap filled from the stream before anything is called a gap,
and a stream renumbered under the floor (a broker killed after acknowledging messages it then lost)
found and read again from where the stream still agrees with the floor. Each message read is handed to
the service's own ``take`` (every check unchanged); this module only decides what to read.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable
from typing import Protocol

import nats.js.errors
import structlog
from nats.aio.client import Client
from nats.js.client import JetStreamContext

from controller.floor import checks
from controller.floor.checks import TableProjection
from controller.floor.messages import Incoming, decoded_or_none, site_of_subject, table_of_subject
from controller.floor.store import Batch, Connection, stored_hash
from controller.floor.stream import has_partition_tokens
from controller.uplink import wire
from controller.uplink.wire import STREAM_NAME, SUBJECT_ROOT, stored_subject, table_subject

__all__ = ["MAX_GAP_FILL", "StreamReads", "TakeMessage"]

log = structlog.get_logger("flushtable.floor")

# The stream's info, asked at each connection (``StreamReads.learn_tokens_through_election``), waits
# this long for its answer and is asked again on the same connection, for up to STREAM_ELECTION_WAIT_S,
# while the stream has no leader: its leader's node lost, the others elect one after nats-server's
# election timeout (4-9 s, not a setting), only a leader answers, and a request sent before then is
# never answered. At nats-py's 5 s, the connection then ended and the backoff, a partition's service
# connected to the killed node reconnected into the election and went on waiting after the new leader:
# up to 5 s and a reconnection (2.66 s in a 200-table run, docs/floor.md "A node's loss, decomposed").
# An answer "unavailable" (a survivor that knows it has no leader) is asked again after
# STREAM_INFO_PAUSE_S.
STREAM_INFO_TIMEOUT_S = 1.0
STREAM_INFO_PAUSE_S = 0.25
STREAM_ELECTION_WAIT_S = 30.0
MAX_GAP_FILL = 20_000  # messages read back from the stream for one table at a time


class TakeMessage(Protocol):
    """The service's taking of one message (its checks, its fold), for a message read from the stream."""

    async def __call__(self, connection: Connection, batch: Batch, message: Incoming) -> None: ...


class ReadCounters(Protocol):
    """The service's status figures this part moves."""

    alerts: int
    gap_fills: int


class StreamReads:
    """A service's reads of the stream: ``js`` is set while the service is connected (None: nothing is
    read). ``site_of`` is the service's own map of table -> its subject's site token, shared."""

    def __init__(self, take: TakeMessage, status: ReadCounters, site_of: dict[str, str]) -> None:
        self.js: JetStreamContext | None = None
        self._take_message = take
        self.status = status
        self.site_of = site_of
        self._sites_learnt = False  # the stream's subjects read once a start (learn_sites)
        # Whether the stream stores the journals with their partition tokens (learn_tokens, each start).
        self.tokenized = True
        self._renumber_said: set[tuple[str, int]] = set()  # (table, last entry) told stream_renumbered

    async def fill_gap(
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
        if self.js is None:
            return 0
        site = self.site_of.get(projection.table_id)
        if site is None:
            return 0
        subject = self.subject_of(site, projection.table_id)
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
        (or the end), at most MAX_GAP_FILL of them. Returns how many."""
        assert self.js is not None
        taken = 0
        while taken < MAX_GAP_FILL:
            try:
                raw = await self.js.get_msg(
                    STREAM_NAME, seq=next_seq, subject=subject, direct=True, next=True
                )
            except nats.js.errors.NotFoundError:
                break
            seq = int(raw.seq or 0)
            if seq < next_seq or (before_stream_seq is not None and seq >= before_stream_seq):
                break
            headers = {str(k): str(v) for k, v in (raw.headers or {}).items()}
            await self._take_message(connection, batch, Incoming(seq, subject, headers, raw.data or b""))
            taken += 1
            next_seq = seq + 1
        return taken

    async def last_messages(self, subjects: Iterable[str]) -> list[tuple[int, bytes]]:
        """Each subject's last message in the stream: (its stream seq, its body), (0, b"") if none; asked
        for all at once, not one round trip after another."""
        js = self.js
        if js is None:
            return [(0, b"") for _ in subjects]

        async def last_of(subject: str) -> tuple[int, bytes]:
            try:
                raw = await js.get_last_msg(STREAM_NAME, subject, direct=True)
            except nats.js.errors.NotFoundError:
                return 0, b""
            return int(raw.seq or 0), raw.data or b""

        return list(await asyncio.gather(*(last_of(subject) for subject in subjects)))

    async def learn_tokens(self, js: JetStreamContext) -> None:
        """Whether the stream stores each table's journal with its partition tokens (read at each start:
        a stream made before them keeps the subjects as published)."""
        self.tokenized = has_partition_tokens((await js.stream_info(STREAM_NAME)).config)

    async def learn_tokens_through_election(self, client: Client, stop: asyncio.Event, consumer: str) -> None:
        """``learn_tokens``, asked again on the service's new connection while the stream elects a
        leader (STREAM_INFO_TIMEOUT_S's why); bounded by STREAM_ELECTION_WAIT_S, then raised: the service
        reconnects with its backoff and says so."""
        deadline_s = time.monotonic() + STREAM_ELECTION_WAIT_S
        asking = client.jetstream(timeout=STREAM_INFO_TIMEOUT_S)
        while True:
            try:
                await self.learn_tokens(asking)
                return
            except (TimeoutError, nats.js.errors.ServiceUnavailableError) as error:
                if stop.is_set() or time.monotonic() >= deadline_s:
                    raise
                log.info("floor_stream_info_unanswered", consumer=consumer, error=type(error).__name__)
                if isinstance(error, nats.js.errors.ServiceUnavailableError):
                    await asyncio.sleep(STREAM_INFO_PAUSE_S)  # answered at once: a pause, not a wait

    def subject_of(self, site: str, table_id: str) -> str:
        """The table's journal subject as the stream stores it."""
        return stored_subject(site, table_id) if self.tokenized else table_subject(site, table_id)

    async def learn_sites(self, js: JetStreamContext) -> None:
        """The site token of every table with messages in the stream, from the stream's subjects (once
        a service start: a table heard from later is learnt from its messages). Not answered (the stream
        without a leader: only a leader answers its info), it is asked again at the next sweep: before,
        it was marked learnt before the request, and a service whose first ask was lost never learnt
        them."""
        if self._sites_learnt:
            return
        info = await js.stream_info(STREAM_NAME, subjects_filter=f"{SUBJECT_ROOT}.>")
        self._sites_learnt = True
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
        assert self.js is not None
        try:
            raw = await self.js.get_msg(STREAM_NAME, seq=stream_seq, direct=True)
        except nats.js.errors.NotFoundError:
            return False
        if raw.subject != subject:
            return False
        decoded = decoded_or_none(raw.data or b"")
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
        if self.js is None or projection.last_seq == 0 or projection.last_stream_seq == 0:
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

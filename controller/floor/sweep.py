"""The floor service's idle sweep (docs/floor.md "Failure semantics"): when its consumer has nothing
left to deliver, every table whose last message in the stream lies beyond what the floor took is read
from the stream (a consumer that skipped a tail: a broker or a floor service killed before its state was
stored; or a stream renumbered under the floor). What to read is decided here; the reading and the
taking of each message are the stream reads' (controller/floor/stream_reads.py), every check unchanged.
"""

from __future__ import annotations

from typing import Protocol

import nats.js.errors
import structlog
from nats.aio.client import Client
from nats.js.client import JetStreamContext

from controller.floor import checks
from controller.floor.messages import decoded_or_none
from controller.floor.ownership import Fence, Owns, check_fence
from controller.floor.projections import Projections
from controller.floor.puller import CONSUMER_CHECK_TIMEOUT_S
from controller.floor.store import Batch, Connection, write_batch
from controller.floor.stream_reads import STREAM_INFO_TIMEOUT_S, StreamReads
from controller.uplink.wire import STREAM_NAME

__all__ = ["IdleSweep"]

log = structlog.get_logger("flushtable.floor")


class SweepCounters(Protocol):
    """The service's status figure this part moves."""

    sweeps: int


class IdleSweep:
    """One service's sweep: its consumer's name, the tables it holds, its stream reads (which know the
    sites of its tables' subjects), and, for a partitioned worker, which tables are its and the fence
    every commit makes."""

    def __init__(
        self,
        consumer: str,
        projections: Projections,
        reads: StreamReads,
        status: SweepCounters,
        *,
        owns: Owns | None,
        fence: Fence | None,
    ) -> None:
        self._consumer = consumer
        self._projections = projections
        self._reads = reads
        self._status = status
        self._owns = owns
        self._fence = fence

    async def if_idle(self, client: Client, connection: Connection) -> None:
        """The sweep, only when the consumer has nothing left to deliver: then a table's tail beyond what
        the floor took was skipped, not merely not yet delivered. Unanswered within
        CONSUMER_CHECK_TIMEOUT_S (a leader election), or answered 503 (the cluster's metadata without a
        leader: a majority lost), the next idle turn asks; the pull's retries bound how long
        (controller/floor/puller.py ELECTION_RETRIES)."""
        try:
            info = await client.jetstream(timeout=CONSUMER_CHECK_TIMEOUT_S).consumer_info(
                STREAM_NAME, self._consumer
            )
        except (TimeoutError, nats.js.errors.ServiceUnavailableError):
            return
        if not info.num_pending and not info.num_ack_pending:
            delivered = info.delivered.stream_seq if info.delivered else None
            # The stream's info (``learn_sites``) asked within STREAM_INFO_TIMEOUT_S: only the stream's
            # leader answers it, and the consumer (its own raft group, its leader elsewhere) can answer
            # while the stream elects one after a node's loss (4-9 s).
            asking = client.jetstream(timeout=STREAM_INFO_TIMEOUT_S)
            await self.sweep(connection, through_stream_seq=delivered, asking=asking)

    async def sweep(
        self,
        connection: Connection,
        *,
        through_stream_seq: int | None = None,
        asking: JetStreamContext | None = None,
    ) -> int:
        """Every table whose last message in the stream is beyond what the floor handled is read from the
        stream. Returns the messages taken.

        ``through_stream_seq``: how far the consumer has delivered (everything up to it acked). Only
        what lies up to it can have been skipped; a table's newer messages are on their way through the
        consumer, and reading them here too raced it (each read twice, the second a resend looked up
        in PostgreSQL: at a busy floor's idle moments, the lag's worst seconds). The tables' last
        messages are asked for all at once, not one round trip after another.

        ``asking``: the JetStream context the stream's info is asked on (the service's by default).
        Unanswered, or answered 503 (the stream without a leader), the sweep is skipped, and asked
        again at the next idle turn, on the same connection: before, nats-py's 5 s timeout ended the
        service's connection inside the stream's election (docs/floor.md "Tenth stop")."""
        js = self._reads.js
        if js is None:
            return 0
        taken = 0
        try:
            async with connection.transaction():
                try:
                    subjects = await self._swept_subjects(connection, asking or js)
                except (TimeoutError, nats.js.errors.ServiceUnavailableError) as error:
                    log.info("floor_sweep_unanswered", consumer=self._consumer, error=type(error).__name__)
                    return 0  # nothing read nor taken yet: the projections are as they were
                lasts = await self._reads.last_messages(subjects.values())
                batch = Batch()
                bound = (
                    through_stream_seq
                    if through_stream_seq is not None
                    else max((seq for seq, _ in lasts), default=0)
                )
                for table_id, (last_in_stream, last_body) in zip(subjects, lasts, strict=True):
                    taken += await self._sweep_table(
                        connection, batch, table_id, (last_in_stream, last_body), bound
                    )
                await write_batch(connection, batch)
                await check_fence(self._fence, connection)
        except BaseException:
            self._projections.forget_all()  # nothing of it is on the floor: read back from PostgreSQL
            raise
        for projection in batch.tables.values():
            projection.touched_rounds.clear()
        self._status.sweeps += 1
        return taken

    async def _swept_subjects(self, connection: Connection, js: JetStreamContext) -> dict[str, str]:
        """table -> its subject, for every table on the floor that is this service's and whose site is
        known."""
        rows = await (await connection.execute("SELECT table_id FROM floor_tables")).fetchall()
        rows = [row for row in rows if self._owns is None or self._owns(str(row[0]))]
        site_of = self._reads.site_of
        if any(str(table_id) not in site_of for (table_id,) in rows):
            # A table not heard from since this service started (its subject's site is learnt from its
            # messages): the stream's own subjects name it. Without this a floor service restarted
            # while a table's messages sat where its consumer would never deliver them (a stream
            # renumbered under it, below) never swept that table.
            await self._reads.learn_sites(js)
        return {
            str(table_id): self._reads.subject_of(site_of[str(table_id)], str(table_id))
            for (table_id,) in rows
            if str(table_id) in site_of
        }

    async def _sweep_table(
        self,
        connection: Connection,
        batch: Batch,
        table_id: str,
        last: tuple[int, bytes],
        bound: int,
    ) -> int:
        """One table's part of the sweep, given its last message in the stream (its stream seq and
        body); returns the messages taken."""
        last_in_stream, last_body = last
        through = min(last_in_stream, bound)
        projection = await self._projections.of(connection, table_id)
        if projection.quarantined():
            return 0
        if through > projection.last_seen_stream_seq:
            batch.tables[projection.table_id] = projection
            return await self._reads.fill_gap(connection, batch, projection, before_stream_seq=through + 1)
        if (
            last_in_stream <= bound
            # its body, not its headers (any publisher may set those); decoded only here
            and (last_message := decoded_or_none(last_body)) is not None
            and last_message.table_id == table_id
            and checks.needs_stream_read(projection, last_message)
        ):
            # The stream holds a message beyond what the floor holds at a sequence the floor thinks it
            # read past, and the consumer (idle, delivered through ``bound``) will not deliver it: a
            # stream renumbered under the floor. Read from the floor's last entry of the table on; if the
            # stream no longer holds it there, from where the stream still agrees with the floor
            # (controller/floor/stream_reads.py ``_recover_renumbered``).
            batch.tables[projection.table_id] = projection
            return await self._reads.fill_gap(
                connection,
                batch,
                projection,
                before_stream_seq=last_in_stream + 1,
                pending=last_message,
            )
        return 0

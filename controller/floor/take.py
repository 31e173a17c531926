"""One message's take, the parts of it that never wait (docs/floor.md "The floor service"): its body
decoded for its subject's table, what keeps it in floor_quarantine if a check refuses it, a floor alert,
and the table's stream positions once it is taken. controller/floor/service.py runs them for each
message, in a batch's one coroutine; a message that needs PostgreSQL or the stream (a table not in
memory, a resend, a private part whose commitment is not held, a gap) goes on in the service's
coroutine for it.
"""

from __future__ import annotations

import msgspec
import structlog

from controller.floor import checks
from controller.floor.checks import TableProjection
from controller.floor.held import Quarantine
from controller.floor.messages import Incoming, decoded_or_none, site_of_source
from controller.floor.projections import Projections
from controller.floor.service_settings import FLOOR_IO_ERRORS, FloorStatus
from controller.floor.store import Batch, Connection
from controller.uplink import wire

__all__ = ["Decoded", "QuarantineOf", "decoded_for", "mark_taken", "raise_alert", "take_refused"]

log = structlog.get_logger("flushtable.floor")

# A message's body as ``wire.decode`` reads it.
Decoded = wire.EntryMessage | wire.PrivateMessage


def raise_alert(
    status: FloorStatus, batch: Batch, where: tuple[str, int | None, int], kind: str, reason: str
) -> None:
    """A floor alert, committed with the batch (once: floor_alerts is unique by its stream seq), counted
    and logged. ``where``: the table, its entry's seq (None when the message named none), the stream seq."""
    table_id, seq, stream_seq = where
    text = f"table {table_id}" + (f" entry {seq}" if seq is not None else "") + f": {reason}"
    batch.alerts.append((table_id, seq, stream_seq, kind, text))
    status.alerts += 1
    log.warning("floor_alert", table_id=table_id, seq=seq, kind=kind, message=text)


class QuarantineOf(msgspec.Struct):
    """What keeps one message in floor_quarantine (and raises its alert) if a check refuses it: one is
    made for every message taken and nearly never called, so it is a msgspec struct, built in C (a
    closure made by a method call was about 0.2 µs of each message: docs/floor.md "The seventh stop")."""

    status: FloorStatus
    batch: Batch
    message: Incoming
    table_id: str

    def __call__(self, reason: str, *, alert_kind: str | None, seq: int | None = None) -> None:
        message, table_id, batch, status = self.message, self.table_id, self.batch, self.status
        stream_seq = message.stream_seq
        msg_id = message.headers.get(wire.MSG_ID)
        batch.quarantine.append((stream_seq, message.subject, table_id, msg_id, reason, message.data))
        status.quarantined += 1
        if alert_kind is not None:
            raise_alert(status, batch, (table_id, seq, stream_seq), alert_kind, reason)


def decoded_for(
    message: Incoming, subject_table: str, subject_site: str | None, quarantine: Quarantine
) -> wire.EntryMessage | wire.PrivateMessage | None:
    """The message's body decoded, if it is its subject's table's and came from that table's site's
    stream; else None, the message quarantined with its alert."""
    source_site = site_of_source(message.headers)
    if source_site is not None and source_site != subject_site:
        # The hub copies a sourced message with whatever subject the site's server gave it: a site whose
        # server was tampered with could put entries on another table's subject. A site carries its own
        # tables only (docs/floor.md "Sites").
        quarantine(
            f"sourced from {'site ' + source_site if source_site else 'a stream that is no site'}'s "
            f"stream on {message.subject}: a site's stream carries its own tables only",
            alert_kind="wrong_site",
        )
        return None
    try:
        decoded = wire.decode(message.data)
    except wire.BadMessage as error:
        kind = "unknown_kind" if "unknown entry kind" in str(error) else "undecodable"
        quarantine(str(error), alert_kind=kind)
        return None
    except wire.UNFORESEEN_ERRORS as error:  # what decode did not foresee: the message's, not the batch's
        quarantine(f"undecodable: {type(error).__name__}: {error}"[:300], alert_kind="undecodable")
        return None
    if decoded.table_id != subject_table:
        quarantine(
            f"names table {decoded.table_id!r} on table {subject_table}'s subject",
            alert_kind="wrong_table",
            seq=decoded.seq,
        )
        return None
    return decoded


def mark_taken(projection: TableProjection, decoded: Decoded, stream_seq: int) -> None:
    """A message taken (not quarantined): the table's messages are seen up to it, and its entries read
    up to it if it is an entry (taken, or a resend). A private part comes after later entries (the one
    that revealed it), so it does not move the entries' position."""
    # Compared, not ``max()``: the two builtin calls a message were 3-4% of the take's samples.
    if stream_seq > projection.last_seen_stream_seq:  # noqa: PLR1730 - see above
        projection.last_seen_stream_seq = stream_seq
    if stream_seq > projection.last_stream_seq and isinstance(decoded, wire.EntryMessage):
        projection.last_stream_seq = stream_seq


async def take_refused(  # noqa: PLR0917 - one message's context
    connection: Connection,
    batch: Batch,
    projections: Projections,
    message: Incoming,
    refused: tuple[str, str],
    quarantine: Quarantine,
) -> None:
    """A message that raised while it was taken (the service's ``_take``): kept in floor_quarantine with
    an alert ``floor_error``, and its table quarantined after its last good entry (a manager releases it
    once the floor reads it: docs/floor.md "A table's messages are hostile"). ``refused``: the table,
    and the error the message raised."""
    table_id, reason = refused
    decoded = decoded_or_none(message.data)
    seq = decoded.seq if decoded is not None else None
    quarantine(f"the floor could not take this message ({reason})", alert_kind="floor_error", seq=seq)
    try:
        projection = await projections.of(connection, table_id)
    except FLOOR_IO_ERRORS:
        raise
    except Exception:  # the floor's own copy of the table cannot be read back: the message alone
        log.exception("floor_table_unreadable", table_id=table_id)
        return
    batch.tables[table_id] = projection
    if not projection.quarantined():
        where = f"entry {seq}" if seq is not None else f"stream seq {message.stream_seq}"
        checks.quarantine_at(projection, checks.Problem("floor_error", reason), where)

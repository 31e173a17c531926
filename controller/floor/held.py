"""A message the floor checks against what it already holds (docs/floor.md "The floor service",
"Forks"): an entry at or below its table's last seq (a resend, or a fork) and a private part (its
entry's commitment, a text already stored). What the batch holds is looked at first, PostgreSQL only
then; the verdicts are controller/floor/checks.py's.
"""

from __future__ import annotations

from typing import Protocol

from controller.floor import checks
from controller.floor.checks import TableProjection
from controller.floor.store import Batch, Connection, held_private, stored_hash
from controller.uplink import wire

__all__ = ["HeldCounters", "Quarantine", "take_held_private", "take_private", "take_resend"]


class Quarantine(Protocol):
    """Keeps one message in floor_quarantine, with a floor alert of ``alert_kind`` unless None."""

    def __call__(self, reason: str, *, alert_kind: str | None, seq: int | None = None) -> None: ...


class HeldCounters(Protocol):
    """The service's status figures these move."""

    duplicates: int
    privates: int


async def take_resend(
    connection: Connection,
    batch: Batch,
    projection: TableProjection,
    entry: wire.EntryMessage,
    quarantine: Quarantine,
    *,
    status: HeldCounters,
) -> None:
    """An entry the floor already holds (``checks.is_resend``): a duplicate, or a fork."""
    # This batch's own entries first: a resend of one of them needs no query.
    stored = batch.entry_hashes.get((projection.table_id, entry.seq))
    if stored is None:
        stored = await stored_hash(connection, projection.table_id, entry.seq)
    fork = checks.resend_problem(entry, stored)
    if fork is None:
        status.duplicates += 1
    else:
        # Two bodies for one entry: the table's credentials published something the table did
        # not write (or two journals share a table). Both are kept: the first on the floor,
        # this one in floor_quarantine, the alert naming both hashes; the table is quarantined
        # (docs/floor.md "Forks").
        quarantine(fork.reason, alert_kind=fork.kind, seq=entry.seq)
        if not projection.quarantined():
            checks.quarantine_table(projection, entry, fork)


def take_held_private(
    batch: Batch,
    projection: TableProjection,
    private: wire.PrivateMessage,
    stream_seq: int,
    quarantine: Quarantine,
    *,
    status: HeldCounters,
) -> bool:
    """``take_private`` when the batch or the table holds what it is judged against (its entry's
    commitment, or a text already taken in this batch): nothing asked of PostgreSQL, no coroutine.
    False, nothing done: neither is held."""
    existing = batch.private_texts.get((projection.table_id, private.seq))
    known = projection.digests.get(private.seq)
    if existing is None and known is None:
        return False
    _judge_private(batch, projection, private, stream_seq, quarantine,
                   held=(None if known is None else known[0], existing), status=status)  # fmt: skip
    return True


async def take_private(  # noqa: PLR0913, PLR0917 - one message's context
    connection: Connection,
    batch: Batch,
    projection: TableProjection,
    private: wire.PrivateMessage,
    stream_seq: int,
    quarantine: Quarantine,
    *,
    status: HeldCounters,
) -> None:
    if take_held_private(batch, projection, private, stream_seq, quarantine, status=status):
        return
    held = await held_private(connection, projection.table_id, private.seq)
    _judge_private(batch, projection, private, stream_seq, quarantine, held=held, status=status)


def _judge_private(  # noqa: PLR0913 - one message's context
    batch: Batch,
    projection: TableProjection,
    private: wire.PrivateMessage,
    stream_seq: int,
    quarantine: Quarantine,
    *,
    held: tuple[str | None, str | None] | None,
    status: HeldCounters,
) -> None:
    try:
        verdict = checks.private_verdict(private, held=held)
    except wire.UNFORESEEN_ERRORS as error:  # no commitment of this text (wire.decode refuses it first)
        reason = f"the private part of entry {private.seq}: {type(error).__name__}"
        verdict = checks.Problem("undecodable", reason)
    if verdict == "duplicate":
        status.duplicates += 1
    elif isinstance(verdict, checks.Problem):
        quarantine(verdict.reason, alert_kind=verdict.kind, seq=private.seq)
    else:
        batch.add_private(projection.table_id, private, stream_seq)
        projection.digests.pop(private.seq, None)  # a resend now finds it stored
        status.privates += 1

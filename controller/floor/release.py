"""Releasing a quarantined table (docs/floor.md "Releasing a quarantined table").

A table is quarantined when one of its entries does not continue its chain (a gap, a broken chain, a bad
hash): nothing more of it is projected, its later messages are kept in ``floor_quarantine``. A release
(``flushtable floor release TABLE --reason TEXT --by NAME``, or the floor panel's Release for a
``manager``) is allowed only when **the chain verifies again from the last good entry**: walking the
messages the floor holds for the table after that entry, in stream order, as the floor service will
walk them, every entry the table claims is reached by a verified chain. Then, in one transaction:

- an append-only row in ``floor_releases`` says who, when, why, which quarantine (the last good entry)
  and which messages are **set aside** (the ones that did not continue the chain, and the undecodable:
  kept in ``floor_quarantine`` as evidence, never projected);
- the quarantine's alert is resolved (acknowledged by the releaser if it was not, and cleared).

The floor service applies the release itself, so that it stays the only writer of the projection: it
looks for releases it has not applied about every second (``FloorConfig.release_poll_interval_s``), reads
the table's messages again **from the stream** after the last good entry, in order, skipping the set-aside
ones, through the same checks as ever (exactly once per (table, seq): the primary key and the resend
check), and records in ``floor_release_applied`` that it did, in the same transaction. No restart.

``plan_release`` is the walk (pure); ``release_table`` the PostgreSQL side (one transaction, the table's
row locked so two releases, or a release and the service's write of the table, cannot interleave).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import psycopg

from controller.errors import UserError
from controller.floor import checks
from controller.floor.checks import TableProjection
from controller.uplink import wire

RELEASING_ROLES = frozenset({"manager"})  # the table-games manager; surveillance watches, it does not operate
# The alerts that quarantine a table (checks.py, service.py): a release resolves them.
CHAIN_ALERT_KINDS = ("gap", "broken_chain", "bad_hash", "fork", "floor_error")
MAX_REASON_CHARS = 500
MAX_NAME_CHARS = 64


class ReleaseRefused(UserError):
    """A release refused, with the one-line reason the operator reads."""


@dataclass(frozen=True, slots=True)
class HeldMessage:
    """A message the floor kept for the table after its last good entry (a ``floor_quarantine`` row)."""

    stream_seq: int
    body: bytes


@dataclass(frozen=True, slots=True)
class ReleasePlan:
    set_aside: tuple[int, ...]  # stream seqs never to be projected
    through_seq: int  # the chain verifies from the last good entry through this entry
    highest_seq: int  # the highest entry seq the held messages claim
    first_problem: str | None  # what the first set-aside entry was (for the operator)
    # A held entry that continues, not the floor's chain, but the other entry of a fork the floor holds
    # (entry seq, its stream seq): the floor took the entry the table did not write.
    continues_fork: tuple[int, int] | None = None

    @property
    def verifies(self) -> bool:
        return self.through_seq >= self.highest_seq


def plan_release(
    table_id: str,
    *,
    last_seq: int,
    last_hash: str,
    held: Iterable[HeldMessage],
    already_set_aside: frozenset[int] = frozenset(),
    floor_hashes: Mapping[int, str] | None = None,
) -> ReleasePlan:
    """Walk the held messages as the floor service will replay them (stream order, the same checks):
    an entry that continues the chain is taken; one that does not (gap, broken chain, bad hash) is set
    aside; a resend of an entry already taken is skipped; a second, different entry for a seq already
    taken (a fork: the floor keeps the first) is set aside, kept in floor_quarantine as evidence (it
    raised its alert when it came; replayed, it would quarantine the table again); a message that does
    not decode, or names another table, is set aside (it raised its alert when it came). Private parts
    are left to the replay (checked against their commitments then). ``floor_hashes``: the hashes the
    floor holds for the seqs of held entries at or below ``last_seq`` (a fork is told by them)."""
    head = TableProjection(table_id, last_seq=last_seq, last_hash=last_hash)
    known = dict(floor_hashes or {})
    known[last_seq] = last_hash
    forks: dict[tuple[int, str], int] = {}  # (seq, hash) of a fork's other entry -> its stream seq
    continues_fork: tuple[int, int] | None = None
    set_aside: list[int] = []
    highest = last_seq
    first_problem: str | None = None
    for message in held:
        if message.stream_seq in already_set_aside:
            continue
        try:
            decoded = wire.decode(message.body)
        except (wire.BadMessage, *wire.UNFORESEEN_ERRORS):
            set_aside.append(message.stream_seq)
            continue
        if decoded.table_id != table_id:
            set_aside.append(message.stream_seq)
            continue
        if isinstance(decoded, wire.PrivateMessage):
            continue
        highest = max(highest, decoded.seq)
        if checks.is_resend(decoded, head):
            held_hash = known.get(decoded.seq)
            if held_hash is not None and held_hash != decoded.hash:  # a fork: evidence, never replayed
                set_aside.append(message.stream_seq)
                forks.setdefault((decoded.seq, decoded.hash), message.stream_seq)
            continue  # a resend: skipped, it does not move the chain
        problem = checks.chain_problem(head, decoded)
        if problem is not None:
            set_aside.append(message.stream_seq)
            if first_problem is None:
                first_problem = f"entry {decoded.seq} (stream seq {message.stream_seq}): {problem.reason}"
            other = forks.get((decoded.seq - 1, decoded.prev_hash))
            if other is not None and continues_fork is None:
                continues_fork = (decoded.seq - 1, other)
            if problem.kind == "bad_hash":
                continue
            # A chain that continues the fork's other entry: followed, to tell the manager how far.
            if (decoded.seq - 1, decoded.prev_hash) in forks:
                forks[(decoded.seq, decoded.hash)] = forks[(decoded.seq - 1, decoded.prev_hash)]
            continue
        head.last_seq, head.last_hash = decoded.seq, decoded.hash
        known[decoded.seq] = decoded.hash
    return ReleasePlan(tuple(set_aside), head.last_seq, highest, first_problem, continues_fork)


@dataclass(frozen=True, slots=True)
class Released:
    release_id: int
    table_id: str
    quarantined_at_seq: int
    through_seq: int
    set_aside: tuple[int, ...]
    alerts_resolved: int

    def summary(self) -> str:
        aside = ", ".join(str(s) for s in self.set_aside) or "none"
        return (
            f"table {self.table_id} released (release {self.release_id}): the chain verifies from entry "
            f"{self.quarantined_at_seq} through entry {self.through_seq}; set aside (never projected): "
            f"stream seq {aside}; alerts resolved: {self.alerts_resolved}; the floor service projects the "
            "held entries within a second or two"
        )


def _text(value: str, what: str, limit: int) -> str:
    text = " ".join(value.split())
    if not text:
        raise ReleasePlanError(f"{what}: required (it is recorded with the release)")
    if len(text) > limit:
        raise ReleasePlanError(f"{what}: at most {limit} characters")
    return text


class ReleasePlanError(ReleaseRefused):
    pass


Via = Literal["cli", "panel"]


def _refuse_unless_verified(table_id: str, plan: ReleasePlan, *, last_seq: int, why: str) -> None:
    """ReleaseRefused where the plan continues a fork or the chain does not verify yet."""
    if plan.continues_fork is not None:
        fork_seq, fork_stream_seq = plan.continues_fork
        raise ReleaseRefused(
            f"table {table_id}: a fork at entry {fork_seq} ({why}): the table's own entries after "
            f"it continue the other entry {fork_seq} (stream seq {fork_stream_seq}, kept in "
            "floor_quarantine), not the one the floor holds: the floor took an entry the table did not "
            "write, and a release cannot undo it; change the table's NATS credentials and rebuild the "
            "table's floor copy from its journal"
        )
    if not plan.verifies:
        missing = (
            f"entry {plan.through_seq + 1}"
            if plan.highest_seq == plan.through_seq + 1
            else f"entries {plan.through_seq + 1} to {plan.highest_seq}"
        )
        raise ReleaseRefused(
            f"table {table_id}: the chain still does not verify from entry {last_seq} ({why}): the floor "
            f"holds entries up to {plan.highest_seq}, but no verified {missing}; wait for the table's "
            "uplink to send them, or rebuild the table's floor copy from its journal"
        )


def release_table(
    connection: psycopg.Connection[Any], table_id: str, *, reason: str, by: str, via: Via
) -> Released:
    """Check and record a release in one transaction (the module's docstring); ReleaseRefused, one line,
    when it cannot be."""
    reason = _text(reason, "reason", MAX_REASON_CHARS)
    by = _text(by, "by", MAX_NAME_CHARS)
    with connection.transaction(), connection.cursor() as cursor:
        cursor.execute(
            "SELECT last_seq, last_hash, quarantined_at_seq, quarantine_reason FROM floor_tables "
            "WHERE table_id = %s FOR UPDATE",
            (table_id,),
        )
        row = cursor.fetchone()
        if row is None:
            raise ReleaseRefused(f"no table {table_id!r} on the floor")
        last_seq, last_hash, at_seq, why = int(row[0]), str(row[1]), row[2], row[3]
        if at_seq is None:
            raise ReleaseRefused(
                f"table {table_id} is not quarantined: nothing to release (a message refused on its own "
                "stays in floor_quarantine; acknowledge its alert on the floor panel's Alerts page)"
            )
        cursor.execute(
            "SELECT r.release_id, r.released_by, r.released_utc FROM floor_releases r WHERE r.table_id = %s "
            "AND NOT EXISTS (SELECT 1 FROM floor_release_applied a WHERE a.release_id = r.release_id)",
            (table_id,),
        )
        pending = cursor.fetchone()
        if pending is not None:
            raise ReleaseRefused(
                f"table {table_id}: release {pending[0]} by {pending[1]} is recorded and waits for the floor "
                "service to apply it (is `flushtable floor serve` running?)"
            )
        cursor.execute(
            "SELECT stream_seq FROM floor_entries WHERE table_id = %s AND seq = %s", (table_id, last_seq)
        )
        found = cursor.fetchone()
        after_stream_seq = int(found[0]) if found is not None else 0
        cursor.execute(
            "SELECT stream_seq, subject, body FROM floor_quarantine WHERE table_id = %s AND stream_seq > %s "
            "ORDER BY stream_seq",
            (table_id, after_stream_seq),
        )
        rows = cursor.fetchall()
        if not rows:
            raise ReleaseRefused(f"table {table_id}: the floor holds no message after entry {last_seq}")
        subject = str(rows[-1][1])
        cursor.execute(
            "SELECT DISTINCT unnest(set_aside) FROM floor_releases WHERE table_id = %s", (table_id,)
        )
        already = frozenset(int(s) for (s,) in cursor.fetchall())
        held_messages = [HeldMessage(int(s), bytes(body)) for s, _subject, body in rows]
        plan = plan_release(
            table_id,
            last_seq=last_seq,
            last_hash=last_hash,
            held=held_messages,
            already_set_aside=already,
            floor_hashes=_floor_hashes(cursor, table_id, held_messages, last_seq),
        )
        _refuse_unless_verified(table_id, plan, last_seq=last_seq, why=why)
        cursor.execute(
            "INSERT INTO floor_releases (table_id, quarantined_at_seq, quarantine_reason, released_by, "
            "reason, via, subject, after_stream_seq, set_aside, verified_through_seq) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s) RETURNING release_id",
            (table_id, at_seq, why, by, reason, via, subject, after_stream_seq, list(plan.set_aside),
             plan.through_seq),
        )  # fmt: skip
        inserted = cursor.fetchone()
        assert inserted is not None
        cursor.execute(
            "UPDATE floor_alerts SET acknowledged_by = COALESCE(acknowledged_by, %s), "
            "acknowledged_utc = COALESCE(acknowledged_utc, now()), cleared_utc = now() "
            "WHERE table_id = %s AND origin = 'floor' AND kind = ANY(%s) AND stream_seq > %s "
            "AND cleared_utc IS NULL",
            (by, table_id, list(CHAIN_ALERT_KINDS), after_stream_seq),
        )
        resolved = cursor.rowcount
    return Released(int(inserted[0]), table_id, int(at_seq), plan.through_seq, plan.set_aside, resolved)


# --- the floor service's side -------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class PendingRelease:
    release_id: int
    table_id: str
    quarantined_at_seq: int
    subject: str
    set_aside: tuple[int, ...]


async def pending_releases(connection: psycopg.AsyncConnection[Any]) -> list[PendingRelease]:
    """Releases recorded and not yet applied, oldest first."""
    cursor = await connection.execute(
        "SELECT r.release_id, r.table_id, r.quarantined_at_seq, r.subject, r.set_aside "
        "FROM floor_releases r WHERE NOT EXISTS "
        "(SELECT 1 FROM floor_release_applied a WHERE a.release_id = r.release_id) ORDER BY r.release_id"
    )
    return [
        PendingRelease(int(r[0]), str(r[1]), int(r[2]), str(r[3]), tuple(int(s) for s in r[4]))
        for r in await cursor.fetchall()
    ]


async def set_aside_stream_seqs(connection: psycopg.AsyncConnection[Any]) -> set[int]:
    """Every message an applied release set aside: never projected, whoever reads it from the stream again."""
    # Only releases applied as projected: a stale one's set-aside list was never used (at runtime only an
    # applied release adds its list, FloorService.apply_releases), so a restart must not use it either.
    cursor = await connection.execute(
        "SELECT DISTINCT unnest(r.set_aside) FROM floor_releases r JOIN floor_release_applied a "
        "ON a.release_id = r.release_id WHERE a.outcome = 'projected'"
    )
    return {int(s) for (s,) in await cursor.fetchall()}


async def record_applied(
    connection: psycopg.AsyncConnection[Any], release_id: int, outcome: str, messages_read: int
) -> None:
    await connection.execute(
        "INSERT INTO floor_release_applied (release_id, outcome, messages_read) VALUES (%s, %s, %s)",
        (release_id, outcome, messages_read),
    )


def _floor_hashes(
    cursor: psycopg.Cursor[Any], table_id: str, held: list[HeldMessage], last_seq: int
) -> dict[int, str]:
    """The hashes the floor holds for the entry seqs the held messages claim at or below the last good
    entry (where a held entry is a resend or a fork)."""
    seqs: set[int] = set()
    for message in held:
        try:
            decoded = wire.decode(message.body)
        except (wire.BadMessage, *wire.UNFORESEEN_ERRORS):
            continue
        if isinstance(decoded, wire.EntryMessage) and decoded.seq <= last_seq:
            seqs.add(decoded.seq)
    if not seqs:
        return {}
    cursor.execute(
        "SELECT seq, hash FROM floor_entries WHERE table_id = %s AND seq = ANY(%s)", (table_id, sorted(seqs))
    )
    return {int(seq): str(hash_) for seq, hash_ in cursor.fetchall()}

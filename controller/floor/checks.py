"""The floor's per-table checks of one incoming message (docs/floor.md "The floor service"): pure
functions of the table's projection (what the floor holds of it) and the message. No I/O: what the floor
stored in PostgreSQL is looked up by the caller (controller/floor/service.py) and passed in.

- an entry at or below the table's last seq is a resend (same hash) or a **fork** (another hash: the
  table is quarantined, both entries kept);
- the next entry must be the last seq + 1 (else a **gap**), chain to the last hash (else a **broken
  chain**) and hash to its own hash (else a **bad hash**); any of those quarantines the table;
- a taken entry is folded by the one reducer (``TableState.apply``), and its private commitment is kept
  until its round's private parts can no longer come;
- a private part is taken only if ``sha256(private_text)`` is its entry's commitment;
- an entry of a round's play for a round the table already closed (a card dealt to a settled round, a
  second close, ...) is impossible from an honest table: it is taken (it continues the chain: the floor
  is the record) and raises an alert **entry_after_close**, the table not quarantined;
- so is an entry of a round's play (wagers locked, a decision, a close) for a round the table never
  started: taken, with an alert **entry_without_start**, the table not quarantined.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

import msgspec

from controller.journal import entries as typed
from controller.journal.chain import GENESIS_HASH, envelope_hash
from controller.journal.closing_entries import CLOSING_ENTRIES, ClosingEntry
from controller.journal.kinds import CLOSING_KINDS, ROUND_SETTLED, ROUND_STARTED
from controller.journal.state import TableState
from controller.journal.state_parts import METERED_KINDS
from controller.uplink import wire


class FloorStored(msgspec.Struct, frozen=True):
    """An entry the floor holds, as its reducer folds it (read back from PostgreSQL): its envelope and
    its public part. (An entry the floor takes from the stream is folded as its ``wire.EntryMessage``.)"""

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
    # The meters' document as the table's row writes it (``Meters.to_json``), kept while no entry moves
    # a meter: a batch touches a table for a few entries, and few of them are a meter's (a round's start
    # or close, a fault), yet each batch wrote the table's row with its meters built again.
    meters_json: dict[str, Any] | None = None
    # Each closed round's typed closing entry while the reducer holds the round: the round's row counts
    # it through the one meters fold (controller/floor/store.py ``round_rows``: ``Meters.count``), as
    # every other reader does, however many batches later the round is touched again.
    closings: dict[str, ClosingEntry] = field(default_factory=dict)

    def quarantined(self) -> bool:
        return self.quarantined_at_seq is not None

    def keep_closing(self, round_id: str | None, entry: typed.Entry) -> None:
        """Keep ``entry`` if it closes ``round_id``; forget the closings of rounds the reducer dropped
        (its window of recent closed rounds) once they are twice that window."""
        if round_id is None or not isinstance(entry, CLOSING_ENTRIES):
            return
        self.closings[round_id] = entry
        if len(self.closings) > 2 * TableState.RECENT_ROUNDS:
            state = self.state
            self.closings = {r: c for r, c in self.closings.items() if state.round(r) is not None}


@dataclass(frozen=True, slots=True)
class Problem:
    """Why a message is quarantined: the floor alert's kind and its text."""

    kind: str
    reason: str


def is_resend(entry: wire.EntryMessage, projection: TableProjection) -> bool:
    """An entry the floor already holds (or already took in this batch): a resend or a fork."""
    return entry.seq <= projection.last_seq


def resend_problem(entry: wire.EntryMessage, stored_hash: str | None) -> Problem | None:
    """An entry at or below the table's last seq, against the hash the floor holds for that seq: None if
    it is the same entry sent again (skipped), else a fork (the floor keeps the first)."""
    if stored_hash == entry.hash:
        return None
    return Problem(
        "fork",
        f"a second, different entry {entry.seq} (fork): the floor holds hash {stored_hash}, this one is "
        f"{entry.hash}; the floor keeps the first, both are kept as evidence",
    )


def chain_problem(projection: TableProjection, entry: wire.EntryMessage) -> Problem | None:
    """The next entry of the table: its seq, its link to the last hash and its own hash."""
    if entry.seq != projection.last_seq + 1:
        return Problem("gap", f"entry {entry.seq} after {projection.last_seq}: entries missing (gap)")
    if entry.prev_hash != projection.last_hash:
        return Problem("broken_chain", "its prev_hash is not the hash of the entry before it (broken chain)")
    recomputed = envelope_hash(entry, entry.payload_text)
    if recomputed != entry.hash:
        return Problem("bad_hash", "its hash does not match its contents (tampered?)")
    return None


# The kinds an honest table never writes for a round it has closed (docs/floor.md "An entry for a round
# already closed"): a round's start, its locked wagers and a close. A deny-list, not an allow-list: after
# its close a round's id is still on its tail (the machine's return to idle, the dealer's "next" key),
# on a fault's acknowledgement or clearing, a kill request's lapse, a linked claim's answer, the
# progressive's payments; none of those changes what the round's money was.
AFTER_ANY_CLOSE: frozenset[str] = frozenset({ROUND_STARTED, "bets_locked", *CLOSING_KINDS})
# After ``round_settled`` also its decisions (the engine journals a decision only in the decision
# states). Not its cards: a seat still short when the shoe went silent is dead and the round settles,
# and the shoe's late card for that seat is journaled with the round's id before it is judged and
# faulted (controller/engine/deal.py ``_judge_card``: the live round's id in every state but idle);
# after a dead or voided round the engine journals the rest of a deal cut short likewise. No money
# moved on those cards. Not ``hand_complete``: the engine journals a shoe's report for a position it
# never asked for before raising its fault, whatever the round's state.
AFTER_SETTLED: frozenset[str] = AFTER_ANY_CLOSE | {"decision"}


def closed_round_problem(projection: TableProjection, entry: wire.EntryMessage) -> Problem | None:
    """An entry that continues the chain but belongs to the play of a round the table already closed
    (within the reducer's window of recent closed rounds, ``TableState.RECENT_ROUNDS``), judged before
    it is folded: None for every entry an honest table writes."""
    round_id = entry.round_id
    if round_id is None:
        return None
    closed_by = projection.state.closed_rounds.get(round_id)
    if closed_by is None:
        return None
    if entry.kind not in (AFTER_SETTLED if closed_by == ROUND_SETTLED else AFTER_ANY_CLOSE):
        return None
    return Problem(
        "entry_after_close",
        f"a {entry.kind} entry for round {round_id}, which the table closed before ({closed_by}): "
        "impossible from an honest table; the entry is stored as the table chained it",
    )


# The kinds an honest table writes for a round only once it has started it (docs/floor.md "An entry for
# a round never started"): its locked wagers, its decisions and its close. Not its cards, nor any kind of
# a round's tail (a card the shoe reports is journaled with the live round's id before it is judged; a
# fault's answer, a claim's answer or a payment may name a round long closed and forgotten by the
# reducer's window).
NEEDS_A_START: frozenset[str] = AFTER_SETTLED - {ROUND_STARTED}


def unstarted_round_problem(projection: TableProjection, entry: wire.EntryMessage) -> Problem | None:
    """An entry that continues the chain but belongs to the play of a round the floor never saw start:
    no ``round_started`` of it before this entry in the table's chain (the reducer holds every open
    round, and the last ``TableState.RECENT_ROUNDS`` closed ones), judged before it is folded. None for
    every entry an honest table writes."""
    round_id = entry.round_id
    if round_id is None or entry.kind not in NEEDS_A_START:
        return None
    state = projection.state
    if state.round(round_id) is not None or round_id in state.closed_rounds:
        return None
    return Problem(
        "entry_without_start",
        f"a {entry.kind} entry for round {round_id}, which the table never started (no round_started "
        f"of it before this entry in its chain, nor among its last {TableState.RECENT_ROUNDS} closed "
        "rounds): impossible from an honest table; the entry is stored as the table chained it",
    )


def round_problem(projection: TableProjection, entry: wire.EntryMessage) -> Problem | None:
    """What the floor says of an entry of a round's play it takes: after its round's close
    (``closed_round_problem``) or in a round never started (``unstarted_round_problem``); else None."""
    return closed_round_problem(projection, entry) or unstarted_round_problem(projection, entry)


def quarantine_table(projection: TableProjection, entry: wire.EntryMessage, problem: Problem) -> None:
    """Nothing more of the table is projected after its last good entry until an operator looks."""
    quarantine_at(projection, problem, f"entry {entry.seq}")


def quarantine_at(projection: TableProjection, problem: Problem, where: str) -> None:
    """The table quarantined after its last good entry, for ``problem`` at ``where`` (an entry, or the
    stream seq of a message that names none)."""
    projection.quarantined_at_seq = projection.last_seq
    projection.quarantine_reason = f"{problem.kind} at {where}"


def fold_entry(projection: TableProjection, entry: wire.EntryMessage) -> None:
    """A checked entry through the table's reducer; its commitment kept while its private part may come."""
    projection.state.apply(entry)  # the message is the reducer's ``Stored``: no object built to carry it
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
        projection.keep_closing(entry.round_id, entry.entry)
    if entry.kind in METERED_KINDS:
        projection.meters_json = None  # built again when the table's row is next written


def fold_stored(projection: TableProjection, stored: FloorStored) -> None:
    """An entry the floor holds, read back from PostgreSQL, through the table's reducer; a closing entry
    kept for its round's row (``TableProjection.keep_closing``)."""
    projection.state.apply(stored)
    projection.keep_closing(stored.round_id, stored.entry)


def needs_stream_read(projection: TableProjection, decoded: wire.EntryMessage | wire.PrivateMessage) -> bool:
    """A message beyond what the floor holds: the consumer may have skipped messages (a broker or a floor
    service killed before its state was stored), so the stream is read before anything is a gap."""
    return decoded.seq > projection.last_seq + (1 if isinstance(decoded, wire.EntryMessage) else 0)


def private_verdict(
    private: wire.PrivateMessage,
    *,
    held: tuple[str | None, str | None] | None,
) -> Problem | Literal["take", "duplicate"]:
    """A private part against what the floor holds of its entry: ``held`` is (the entry's commitment, the
    private text already stored), or None when the floor does not hold the entry at all."""
    if held is None:
        return Problem(
            "private_without_entry", f"a private part for entry {private.seq}, which the floor does not hold"
        )
    digest, existing = held
    if existing is not None:
        if existing == private.private_text:
            return "duplicate"
        return Problem(
            "bad_commitment",
            f"a second, different private part for entry {private.seq}: the floor keeps the first",
        )
    if digest is None or typed.commitment(private.private_text) != digest:
        return Problem(
            "bad_commitment", f"the private part of entry {private.seq} does not match its commitment"
        )
    return "take"

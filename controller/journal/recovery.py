"""Crash recovery: the table's state rebuilt from its journal, and interrupted rounds voided.

The journal is the only state that survives a restart (the journal is persisted, never a pickle of objects).
``rebuild_state`` reads it and answers: which round came last, which rounds started and never closed
(and what was wagered on them: the locked wagers and every raise, play or all-in already decided),
which faults still latch the table, where the button is and who holds the bank, whether a manager
closed the table, and the limits and paytables a manager set. ``recover`` then closes every interrupted
round with ``round_voided`` (source "recovery"), every wager of the round returned, unless the caller
says it can resume that round exactly.

A round whose settlement an anchor has seen is never voided: the daemon proves the journal against its
anchor before recovery (controller/journal/proof.py), and ``recover`` checks once more, on the
connection it writes with, that the anchored entry is there with its hash (``anchored``), and refuses
otherwise (``AnchorNotHeld``), before it writes anything. The daemon anchors every commit holding a
round's close before it acts on it (controller/daemon_journal.py), so a settlement anyone was shown or
paid is always behind the anchor.

Why this is safe to run any number of times: it only closes rounds that have no closing entry, and the
journal refuses a second closing entry for a round (a trigger), so a crash during recovery, or two
recoveries at once, can never void a round twice or void a round that was settled.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from controller.errors import UserError
from controller.journal import entries as e
from controller.journal.anchor import Anchor
from controller.journal.chain import canonical_json
from controller.journal.checkpoint import (
    checkpoint_format,
    checkpoint_in_format,
    record_closings,
    refold_reason,
    state_to_checkpoint,
)
from controller.journal.kinds import CLOSING_KINDS, METER_KINDS, ROUND_VOIDED
from controller.journal.rows import Replayed
from controller.journal.state import TableState
from controller.journal.state_parts import MetersBeforeProgressiveNet, RoundState
from controller.journal.store import Journal, JournalError
from controller.names import HOUSE
from controller.rules.settle import ROUND_DEAD, SeatResult, Settlement, settle_parsed

RECOVERY_SOURCE = "recovery"
INTERRUPTED_REASON = "interrupted: the controller stopped before the round closed"

OpenRound = RoundState
"""A round that started and has no closing entry (the reducer's round state)."""


class AnchorNotHeld(JournalError):
    """The journal does not hold the entry its anchor names: recovery writes nothing (it would void
    rounds the anchor saw closed)."""


@dataclass(slots=True)
class RecoveryReport:
    state: TableState
    voided: list[str] = field(default_factory=list)
    resumed: list[str] = field(default_factory=list)


def rebuild_state(journal: Journal) -> TableState:
    """The table's state: the journal folded by the one reducer (controller/journal/state.py). In a
    segmented journal, the last seal's checkpoint (the state at its end) with the open segment folded
    on: the sealed past is never read (docs/journal.md "Segments and seals")."""
    base = journal.file.base
    if base.segment > 1:
        from controller.journal.seals import read_seal  # noqa: PLC0415 (a journal without seals)

        seal = read_seal(journal.path, base.segment - 1)
        if seal is None or seal.last_seq != base.base_seq:
            raise JournalError(
                f"journal {journal.path}: the seal of segment {base.segment - 1} is missing or does "
                "not end where the open segment starts"
            )
        if refold_reason(seal.checkpoint) is not None:
            # A seal of format 1 did not carry the progressive's meter nor the software checks, and one
            # of format 2 or 3 read a Progressive round's balance without the progressive's net: the
            # state is the whole journal's fold (the sealed segments read, this once: the start seals
            # at once, docs/journal.md "Segments and seals"). What the start reads of the sealed past
            # must fold to what the (keyed) seal says, as far as its format says anything, by the
            # meters' reading it was written with; the table goes on with this release's meters.
            found = checkpoint_format(seal.checkpoint)
            every_closed: dict[str, str] = {}  # format 1's closed_rounds: every round (the reducer's: recent)
            state = TableState(journal.table_id)
            state.meters = MetersBeforeProgressiveNet()
            state.apply_all(record_closings(_sealed_past(journal, seal.last_seq), every_closed))
            held_to = checkpoint_in_format(state_to_checkpoint(state), found, every_closed_round=every_closed)
            if canonical_json(held_to) != canonical_json(seal.checkpoint):
                raise JournalError(
                    f"journal {journal.path}: the sealed segments do not fold to the checkpoint of seal "
                    f"{seal.segment} (edited?); run flushtable journal verify --segments"
                )
            state.meters = (
                TableState(journal.table_id)
                .apply_all(_sealed_past(journal, seal.last_seq, kinds=METER_KINDS))
                .meters
            )
            return state.apply_all(journal.replay(since_seq=journal.file.base.base_seq))
        return seal.state().apply_all(journal.replay(since_seq=journal.file.base.base_seq))
    return TableState(journal.table_id).apply_all(journal.replay())


def _sealed_past(journal: Journal, last_seq: int, kinds: Sequence[str] | None = None) -> Iterator[Replayed]:
    """The journal's entries up to ``last_seq`` (the sealed segments'), of ``kinds`` when given."""
    return itertools.takewhile(lambda stored: stored.seq <= last_seq, journal.replay(kinds=kinds))


def void_round(open_round: OpenRound) -> tuple[dict[str, Any], dict[str, Any]]:
    """The voided round in the settle input shape (dead, cards withheld) and its settlement, every
    wager the round holds "returned": the locked wagers, every raise, play or all-in already decided,
    and a folded seat's ante and bonuses too (a void means no game was played: nothing is forfeited).

    The cards are left out of ``round``: a dead hand's cards are never shown (docs/rules.md), and a round cut
    off mid-deal may hold a card twice, which the settle input refuses. They stay in the journal's
    card_dealt entries for an audit."""
    dp_seat = open_round.dp_seat
    seats: list[dict[str, Any]] = []
    for seat, wagers in sorted(open_round.wagers().items()):
        if seat == dp_seat or not any(wagers.values()):
            continue
        seat_json: dict[str, Any] = {"seat": seat, "cards": [], "wagers": dict(wagers)}
        if open_round.folded(seat):
            seat_json["folded"] = True
        street = open_round.street_of(seat)
        if street is not None and open_round.game == "chase-the-flush":
            seat_json["street"] = street
        seats.append(seat_json)
    round_json: dict[str, Any] = {
        "game": open_round.game,
        "banking": open_round.banking,
        "dealer": [],
        "seats": seats,
        "dead": True,
    }
    if seats:
        try:
            return round_json, settle_parsed(round_json).to_json()
        except UserError:
            pass  # a lock the engine would refuse (no ante): return its stakes by hand, below
    return round_json, _stakes_returned(open_round.game, open_round.banking.get("mode", HOUSE), seats)


def _stakes_returned(game: str, banking_mode: str, seats: list[dict[str, Any]]) -> dict[str, Any]:
    """The settlement of a dead round the rules engine refuses to settle: each seat dead, each of its
    wagers returned, in the settle output's shape."""
    returned = Settlement.of_dead_round(
        game,
        banking_mode,
        tuple(SeatResult.returned(seat["seat"], seat["wagers"].items(), ROUND_DEAD) for seat in seats),
    ).to_json()
    # Recovery has always journaled these stakes without the (empty) rake lines a designated player's
    # settlement lists: the bytes stay as they were written (tests/journal/test_recovery_bytes.py).
    returned.pop("rake_lines", None)
    return returned


def voided_entry(open_round: OpenRound, reason: str) -> e.RoundVoided:
    """Recovery's ``round_voided`` for an interrupted round: every wager returned (``void_round``)."""
    round_json, settlement = void_round(open_round)
    return e.RoundVoided(round=round_json, settlement=settlement, reason=reason, by=RECOVERY_SOURCE)


def recover(
    journal: Journal,
    *,
    can_resume: Callable[[OpenRound], bool] | None = None,
    reason: str = INTERRUPTED_REASON,
    anchored: Anchor | None = None,
) -> RecoveryReport:
    """Rebuild the state and void every interrupted round that cannot be resumed exactly; ``anchored``:
    the anchor the journal was proven against, whose entry must be there (``AnchorNotHeld``)."""
    if anchored is not None and anchored.seq > 0:
        held = journal.entry(anchored.seq)
        if held is None or held.hash != anchored.hash:
            raise AnchorNotHeld(
                f"journal {journal.path}: recovery refused: the anchor names entry {anchored.seq}, which "
                f"the journal {'does not hold' if held is None else 'holds with another hash'}; no round "
                'was voided (docs/journal.md "When the journal is refused")'
            )
    state = rebuild_state(journal)
    report = RecoveryReport(state)
    for open_round in state.open_rounds:
        if can_resume is not None and can_resume(open_round):
            report.resumed.append(open_round.round_id)
            continue
        try:
            journal.append(
                ROUND_VOIDED,
                voided_entry(open_round, reason),
                round_id=open_round.round_id,
                source=RECOVERY_SOURCE,
            )
        except JournalError:
            # Another writer closed it since we read the journal (the store refuses a second close).
            # Re-read that round: if it is closed now, nothing was lost; otherwise the error stands.
            if not any(
                True for _ in journal.entries(round_id=open_round.round_id, kinds=sorted(CLOSING_KINDS))
            ):
                raise
            continue
        report.voided.append(open_round.round_id)
    # The voids are journal entries like any other: fold them in, so the state is the journal's.
    state.apply_all(journal.replay(since_seq=state.last_seq))
    return report

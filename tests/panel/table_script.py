"""A scripted round written to a real journal, entry by entry as the engine writes them (CONTRACTS.md),
and a small journal-backed TableActions for the panel tests.

The round engine lives on another branch; until the lead connects TableEngine, ``JournalTableActions``
stands in for it: a real object over the real journal that does what the engine's actions journal
(fault_cleared, round_voided, button_moved, ...). It is the one stand-in in these tests, said so here.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from controller.errors import UserError
from controller.journal import Journal
from controller.rules.settle import settle_round_json

HOLE_CARDS = {
    0: ["As", "Ks", "Qs", "2d", "3c", "4h", "5c"],
    1: ["Ah", "Kh", "Qh", "Jh", "2c", "3d", "4s"],
    2: ["9d", "8d", "7d", "2h", "3h", "6s", "Tc"],
    3: ["Jc", "Qc", "9c", "8c", "7c", "2s", "3s"],
}
# The dealer's 3-card spade flush A-K-Q qualifies; seats 1 and 3 beat it with 4- and 5-card flushes,
# seat 2's 3-card 9-high diamond flush loses. The settlement comes from the real rules engine.
SEATS = [1, 2, 3]
ANTE_CENTS = 1000


def all_cards() -> set[str]:
    return {card for cards in HOLE_CARDS.values() for card in cards}


def round_input(round_id: str) -> dict[str, Any]:
    return {
        "game": "high-card-flush",
        "banking": {"mode": "house"},
        "dealer": HOLE_CARDS[0],
        "seats": [
            {"seat": seat, "cards": HOLE_CARDS[seat], "wagers": {"ante": ANTE_CENTS, "raise": ANTE_CENTS}}
            for seat in SEATS
        ],
    }


@dataclass
class ScriptedRound:
    """Steps of one High Card Flush round, each a list of entries to append."""

    journal: Journal
    round_id: str = ""
    steps_done: list[str] = field(default_factory=list)

    def append(self, kind: str, payload: dict[str, Any], *, source: str = "engine") -> None:
        self.journal.append(kind, payload, round_id=self.round_id or None, source=source)

    def state(self, from_: str, to: str, trigger: str) -> None:
        self.append("state_changed", {"machine": "round", "from": from_, "to": to, "trigger": trigger})

    def steps(self) -> Iterator[str]:
        self.round_id = self.journal.next_round_id()
        self.append(
            "round_started",
            {
                "round_id": self.round_id,
                "game": "high-card-flush",
                "banking": {"mode": "house"},
                "button_seat": None,
                "seats": SEATS,
            },
        )
        self.state("idle", "betting", "start")
        yield "betting"
        for seat in SEATS:
            for wager in ("ante",):
                self.append(
                    "bet_changed",
                    {
                        "seat": seat,
                        "wager": wager,
                        "amount_cents": ANTE_CENTS,
                        "chip_count": 2,
                        "locked": False,
                    },
                    source="sensors",
                )
        self.append("bets_locked", {"wagers": {str(s): {"ante": ANTE_CENTS} for s in SEATS}})
        self.state("betting", "bets_locked", "no_more_bets")
        yield "bets_locked"
        self.state("bets_locked", "dealing", "deal")
        for position in [*SEATS, 0]:
            for index, card in enumerate(HOLE_CARDS[position]):
                self.append(
                    "card_dealt", {"position": position, "index": index, "card": card}, source="shuffler"
                )
            self.append("hand_complete", {"position": position, "card_count": 7}, source="shuffler")
        yield "dealt"
        self.state("dealing", "decisions", "deal_complete")
        for seat in SEATS:
            self.append(
                "decision", {"seat": seat, "action": "raise", "amount_cents": ANTE_CENTS, "street": None}
            )
            self.append(
                "bet_changed",
                {"seat": seat, "wager": "raise", "amount_cents": ANTE_CENTS, "chip_count": 2, "locked": True},
                source="sensors",
            )
        yield "decisions"
        self.state("decisions", "reveal", "decisions_done")
        yield "reveal"
        round_ = round_input(self.round_id)
        self.state("reveal", "settling", "settle")
        self.append("round_settled", {"round": round_, "settlement": settle_round_json(round_)})
        self.state("settling", "complete", "paid")
        yield "settled"

    def play_all(self) -> str:
        for _ in self.steps():
            pass
        return self.round_id


def raise_red_light(journal: Journal, round_id: str | None, fault_id: str = "F-red-1") -> None:
    """The shuffler's red light mid-deal: the whole round dead, the table held (CONTRACTS.md entries)."""
    journal.append(
        "fault_raised",
        {
            "fault_id": fault_id,
            "kind": "red_light",
            "severity": "latching",
            "detail": "shuffler red light during the deal; whole round dead",
            "device": "shuffler",
        },
        round_id=round_id,
        source="engine",
    )
    journal.append("dead_hand", {"seat": None, "reason": "red_light"}, round_id=round_id, source="engine")
    journal.append(
        "state_changed",
        {"machine": "round", "from": "dealing", "to": "held", "trigger": "fault"},
        round_id=round_id,
        source="engine",
    )


class JournalTableActions:
    """TableActions over the journal: what the engine's actions write, for tests (see module doc)."""

    def __init__(self, journal: Journal) -> None:
        self.journal = journal
        self.calls: list[tuple[str, tuple[Any, ...]]] = []
        self.table_open = True

    def _write(self, kind: str, payload: dict[str, Any], by: str) -> None:
        self.journal.append(kind, payload, round_id=None, source=f"operator:{by}")

    def clear_fault(self, fault_id: str, by: str, reason: str) -> None:
        self.calls.append(("clear_fault", (fault_id, by, reason)))
        self._write("fault_cleared", {"fault_id": fault_id, "by": by, "reason": reason}, by)
        # The engine releases the hold once no latched fault is left.
        self.journal.append(
            "state_changed",
            {"machine": "round", "from": "held", "to": "idle", "trigger": "clear"},
            round_id=None,
            source="engine",
        )

    def void_round(self, reason: str, by: str) -> None:
        self.calls.append(("void_round", (reason, by)))
        raise UserError("no round in progress to void")

    def move_button(self, seat: int, by: str) -> None:
        self.calls.append(("move_button", (seat, by)))
        self._write(
            "button_moved", {"from_seat": None, "to_seat": seat, "reason": "supervisor", "by": by}, by
        )

    def open_table(self, by: str) -> None:
        self.calls.append(("open_table", (by,)))
        self.table_open = True

    def close_table(self, by: str, reason: str) -> None:
        self.calls.append(("close_table", (by, reason)))
        self._write("table_closed", {"by": by, "reason": reason}, by)

    def set_limits(self, min_ante_cents: int, max_ante_cents: int, by: str) -> None:
        self.calls.append(("set_limits", (min_ante_cents, max_ante_cents, by)))

    def set_paytable(self, wager: str, paytable: str, by: str) -> None:
        self.calls.append(("set_paytable", (wager, paytable, by)))

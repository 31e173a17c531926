"""The round in play as data: each seat's wagers, cards and decision, the deal step in flight, the
round's cards and its settlement. Its lifecycle is not stored here: the round machine says where the
round stands (controller/engine/flow.py), and a round is closed when it has its settlement."""

from __future__ import annotations

from dataclasses import dataclass, field

from controller.rules.settle import Settlement

# Seat statuses in a round.
LIVE = "live"
FOLDED = "folded"
DEAD = "dead"


@dataclass(slots=True)
class SeatPlay:
    """One seat in the round: its locked wagers, its cards (private until the reveal), its decision."""

    seat: int
    wagers: dict[str, int]
    cards: list[int] = field(default_factory=list)
    status: str = LIVE
    dead_reason: str | None = None
    covered: bool = True
    decided: bool = False  # made its decision (raise/play/all-in or fold); Chase: all-in or fold
    street: str | None = None  # Chase: the street of the all-in
    pending_cents: int = 0  # chips on the decision spot during the open phase
    pending_refused: str | None = None  # why the chips on the decision spot are refused, if they are


@dataclass(slots=True)
class DealStep:
    """One Deal command in flight: what each position should get and what it got."""

    expected: dict[int, int]
    received: dict[int, list[int]] = field(default_factory=dict)
    completed: set[int] = field(default_factory=set)

    @property
    def done(self) -> bool:
        return self.completed >= set(self.expected)


@dataclass(slots=True)
class LiveRound:
    round_id: str
    banking: dict[str, object]
    button_seat: int | None
    seats: dict[int, SeatPlay]
    dealer_cards: list[int] = field(default_factory=list)
    community: list[int] = field(default_factory=list)
    seen_cards: set[int] = field(default_factory=set)
    deal: DealStep | None = None
    deal_deadline_s: float | None = (
        None  # the shoe must report by then (deal_timeout_s after its last report)
    )
    street: str | None = None  # the open decision phase
    decision_deadline_s: float | None = None
    # Set once, with the closing entry (round_settled, round_dead or round_voided): the round is closed.
    settlement: Settlement | None = None
    wrong_positions: set[int] = field(default_factory=set)  # positions found dealt the wrong count
    # The dealer's kill requests made in this round (kill_seat_request "requested"): each is numbered
    # 1, 2, ... in its round, and an answer names the number (docs/engine.md "Kill one seat by the
    # dealer's key"), so a late answer to a rejected request never answers a later one for the same seat.
    kill_requests_made: int = 0

    @property
    def closed(self) -> bool:
        """Settled, dead or voided: its closing entry is journaled (with its settlement)."""
        return self.settlement is not None

    @property
    def closed_dead(self) -> bool:
        """Dead or voided (settled as a dead round, every wager returned): no card of it is ever shown."""
        return self.settlement is not None and self.settlement.dead

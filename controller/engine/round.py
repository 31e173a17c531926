"""The round in play as data: each seat's wagers, cards and decision, the deal step in flight, the
round's cards and its settlement. Its lifecycle is not stored here: the round machine says where the
round stands (controller/engine/flow.py), and a round is closed when it has its settlement.

The parts read these fields freely but change them only through the methods below, each named for what
happens at the table (``bind_card``, ``kill``, ``fold``, ``close``...): a write from outside this file is
refused by tests/engine/test_parts.py (docs/engine.md "The round changes through its own methods")."""

from __future__ import annotations

from dataclasses import dataclass, field

from controller.rules.settle import Settlement
from drivers.events import COMMUNITY_POSITION, DEALER_POSITION

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

    def kill(self, reason: str) -> None:
        """The seat's hand is dead (its wagers go back): a wrong count, a supervisor's kill."""
        self.status = DEAD
        self.dead_reason = reason

    def leave_uncovered(self, reason: str) -> None:
        """The designated player's bank does not cover the seat: dead from the lock."""
        self.covered = False
        self.kill(reason)

    def chips_on_decision_spot(self, amount_cents: int) -> None:
        """The decision spot reads ``amount_cents`` (0: nothing there), not refused (yet)."""
        self.pending_cents = amount_cents
        self.pending_refused = None

    def refuse_decision_chips(self, reason: str) -> None:
        self.pending_refused = reason

    # (fold, check, decide and open_street clear the decision spot inline: a few times a seat a street)
    def fold(self) -> None:
        self.status = FOLDED
        self.decided = True
        self.pending_cents = 0
        self.pending_refused = None

    def check(self) -> None:
        """Chase the Flush before the river: no wager now, the seat acts again on the next street."""
        self.pending_cents = 0
        self.pending_refused = None

    def decide(self, wager: str, amount_cents: int, street: str | None) -> None:
        """The seat's decision wager, taken into action (Chase: the street of its all-in)."""
        self.decided = True
        self.wagers[wager] = amount_cents
        self.street = street
        self.pending_cents = 0
        self.pending_refused = None


@dataclass(slots=True)
class DealStep:
    """One Deal command in flight: what each position should get and what it got."""

    expected: dict[int, int]
    received: dict[int, list[int]] = field(default_factory=dict)
    completed: set[int] = field(default_factory=set)

    @property
    def done(self) -> bool:
        return self.completed >= set(self.expected)

    def complete(self, position: int) -> None:
        """The position's part of the step is over (its HandComplete, or the deal given up on it)."""
        self.completed.add(position)


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

    # ------------------------------------------------------------------ the deal
    def ask_deal(self, positions: dict[int, int], deadline_s: float) -> None:
        """A Deal went to the shoe: what each position should get; the shoe must report by then."""
        self.deal = DealStep(expected=positions)
        self.deal_deadline_s = deadline_s

    def shoe_alive(self, deadline_s: float) -> None:
        """The shoe reported: its silence deadline starts again."""
        self.deal_deadline_s = deadline_s

    def see(self, card: int) -> None:
        """The card was dealt in this round (wherever it went): seen again, it is a card seen twice."""
        self.seen_cards.add(card)

    def deals_to(self, position: int) -> bool:
        """The round has this position: the banker, the community, or one of its seats (a card or a
        count for any other position is from outside the round)."""
        return position in (DEALER_POSITION, COMMUNITY_POSITION) or position in self.seats

    def bind_card(self, step: DealStep, position: int, card: int) -> list[int]:
        """The card goes to the position's hand (the banker's, the community's or a seat's); returns
        the position's cards in this deal step so far."""
        if position == DEALER_POSITION:
            self.dealer_cards.append(card)
        elif position == COMMUNITY_POSITION:
            self.community.append(card)
        else:
            self.seats[position].cards.append(card)
        # (the step's cards inline: ~50 cards a round)
        received = step.received.get(position)
        if received is None:
            received = step.received[position] = []
        received.append(card)
        return received

    def judge_wrong_count(self, position: int) -> bool:
        """The position is found dealt the wrong count: True the first time (judged once)."""
        if position in self.wrong_positions:
            return False
        self.wrong_positions.add(position)
        return True

    def deal_step_done(self) -> None:
        self.deal = None
        self.deal_deadline_s = None

    # ------------------------------------------------------------------ decisions
    def open_street(self, street: str, deadline_s: float) -> None:
        """A decision phase opens: no chips counted on a decision spot yet."""
        self.street = street
        self.decision_deadline_s = deadline_s
        for play in self.seats.values():
            play.pending_cents = 0
            play.pending_refused = None

    def extend_decisions(self, deadline_s: float) -> None:
        """The round resumed in a decision phase: the players get the whole time again."""
        self.decision_deadline_s = deadline_s

    def close_street(self) -> None:
        self.street = None
        self.decision_deadline_s = None

    # ------------------------------------------------------------------ the dealer's kill requests
    def number_kill_request(self) -> int:
        """The next kill request of this round: its number (1, 2, ...)."""
        self.kill_requests_made += 1
        return self.kill_requests_made

    # ------------------------------------------------------------------ the end
    def close(self, settlement: Settlement) -> None:
        """Settled, dead or voided: closed with its settlement (journaled with the closing entry)."""
        self.settlement = settlement

    @property
    def closed(self) -> bool:
        """Settled, dead or voided: its closing entry is journaled (with its settlement)."""
        return self.settlement is not None

    @property
    def closed_dead(self) -> bool:
        """Dead or voided (settled as a dead round, every wager returned): no card of it is ever shown."""
        return self.settlement is not None and self.settlement.dead

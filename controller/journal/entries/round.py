"""A round and its money: started, wagers changed and locked, past-posting, the deck checked, cards
dealt, decisions, dead hands, and the round's closing (settled, dead, voided)."""

from __future__ import annotations

from typing import Any, ClassVar, Literal, NamedTuple

from controller.journal.entries.base import (
    Entry,
    Part,
    Reason,
    ReasonDetail,
)


class RoundStarted(Entry, frozen=True, tag="round_started"):
    round_id: str
    game: str
    banking: dict[str, Any]
    seats: list[int]
    button_seat: int | None = None


class BetChanged(Entry, frozen=True, tag="bet_changed"):
    seat: int
    wager: str
    amount_cents: int
    chip_count: int
    locked: bool


class BetsLocked(Entry, frozen=True, tag="bets_locked"):
    wagers: dict[str, dict[str, int]]  # seat (as text) -> wager -> cents


class PastPosting(Entry, frozen=True, tag="past_posting"):
    seat: int
    wager: str
    locked_cents: int
    seen_cents: int


class DeckVerifiedPrivate(Part, frozen=True):
    missing: list[str]  # card codes
    extra: list[str]


class DeckVerified(Entry, frozen=True, tag="deck_verified"):
    card_count: int
    missing_count: int
    extra_count: int
    private: DeckVerifiedPrivate | None = None
    PRIVATE: ClassVar[type[Part] | None] = DeckVerifiedPrivate


class CardDealtPrivate(Part, frozen=True):
    position: int
    index: int
    card: str | None  # the card's code, e.g. "Qd"; None: the shoe reported a number that is no card

    def positions(self) -> frozenset[int]:
        return frozenset((self.position,))


class CardDealt(Entry, frozen=True, tag="card_dealt"):
    """A card the shoe dealt: all of it is private (which card, and where it went)."""

    private: CardDealtPrivate | None = None
    PRIVATE: ClassVar[type[Part] | None] = CardDealtPrivate


class HandComplete(Entry, frozen=True, tag="hand_complete"):
    position: int
    card_count: int


class Decision(Entry, frozen=True, tag="decision"):
    seat: int
    action: str
    amount_cents: int
    street: str | None
    cause: str


class DecisionRefusedPrivate(Part, frozen=True):
    limit_detail: str  # the limit and why (it speaks of the hand: "exactly 25.00 with a 3-card flush")


class DecisionRefused(Entry, frozen=True, tag="decision_refused"):
    seat: int
    action: str
    amount_cents: int
    reason: Reason
    private: DecisionRefusedPrivate | None = None
    PRIVATE: ClassVar[type[Part] | None] = DecisionRefusedPrivate


KillRequestStatus = Literal["requested", "confirmed", "rejected", "lapsed"]


class KillSeatRequest(Entry, frozen=True, tag="kill_seat_request"):
    """The dealer's request to kill one seat's hand (the display's kill_seat key) and what became of it:
    ``requested`` (by the dealer), then ``confirmed`` or ``rejected`` (by the supervisor, with a reason;
    a confirmation comes after the kill's seat_killed and dead_hand) or ``lapsed`` (by
    the engine: the decisions closed or the round ended first). ``request_number``: the request's
    number in its round (1, 2, ...), on the request and on what became of it; an answer names it.
    Optional: absent in entries written before requests were numbered; such a request's number is its
    order among its round's requests, counted by the reducer (the engine numbers them the same way)."""

    seat: int
    status: KillRequestStatus
    by: str
    requested_by: str | None = None
    reason: str | None = None
    request_number: int | None = None


class DeadHand(Entry, frozen=True, tag="dead_hand"):
    """A seat (or, with seat None, the whole round) is dead."""

    seat: int | None
    reason: Reason
    private: ReasonDetail | None = None
    PRIVATE: ClassVar[type[Part] | None] = ReasonDetail


class RoundSettledPrivate(Part, frozen=True):
    round: dict[str, Any]  # the settle input (docs/settle.md): every live hand's cards
    hands: dict[str, Any]  # {"dealer": hand | None, "seats": {seat: hand}}: the settlement's hands


# The largest figure of a settlement's progressive part its typed reading takes (``settled_progressive``):
# 15 digits, below any float's exact range, so the floor's migration 14 reads the same figures from a
# stored payload's text (a float in canonical JSON has a point or an exponent, never 15 digits alone).
MAX_PROGRESSIVE_FIGURE = 10**15 - 1


class SettledProgressive(NamedTuple):
    """The settlement's progressive part, as the floor's contribution path counts it: the settled
    Progressive wagers (``progressive.contributions.wagers``) and the unit (``progressive.unit_cents``),
    each None unless a whole number from 0 to ``MAX_PROGRESSIVE_FIGURE`` (the part is the table's words,
    unchecked: a reader refuses it from the payload, controller/floor/progressive.py)."""

    wagers: int | None
    unit_cents: int | None


def _figure(value: object) -> int | None:
    # ``type is int``: a bool is no figure.
    return value if type(value) is int and 0 <= value <= MAX_PROGRESSIVE_FIGURE else None


class RoundSettled(Entry, frozen=True, tag="round_settled"):
    """The reveal. ``settlement`` is the settle output without its hands (they name cards): they are in
    the private part with the round's cards, shown once this entry is committed (the round is revealed),
    but a dead seat's cards are never in it (its cards are [] in the round). ``bank_by_seat``
    (designated player, written since issue 13; absent before): the bank after the losers are collected
    and after each seat is paid, in action order (controller.rules.settle.bank_by_seat): not part of
    the settle output, whose contract is unchanged."""

    settlement: dict[str, Any]
    bank_by_seat: dict[str, Any] | None = None
    private: RoundSettledPrivate | None = None
    PRIVATE: ClassVar[type[Part] | None] = RoundSettledPrivate

    def settled_progressive(self) -> SettledProgressive | None:
        """The settlement's progressive part (None: it has none, or null)."""
        part = self.settlement.get("progressive")
        if part is None:
            return None
        if not isinstance(part, dict):
            return SettledProgressive(None, None)
        contributions = part.get("contributions")
        wagers = contributions.get("wagers") if isinstance(contributions, dict) else None
        return SettledProgressive(_figure(wagers), _figure(part.get("unit_cents")))


class RoundDead(Entry, frozen=True, tag="round_dead"):
    """A dead round: every wager returned. ``round`` carries no cards (a dead hand's are never shown)."""

    round: dict[str, Any]
    settlement: dict[str, Any]
    reason: Reason
    private: ReasonDetail | None = None
    PRIVATE: ClassVar[type[Part] | None] = ReasonDetail


class RoundVoided(Entry, frozen=True, tag="round_voided"):
    round: dict[str, Any]
    settlement: dict[str, Any]
    reason: str  # the supervisor's words, or recovery's
    by: str

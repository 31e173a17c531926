"""Simulated players for the demonstration and for tests: simple, sensible decisions. Pure functions.

Not optimal strategy, but the shape of it (the Wizard of Odds' strategies for these games fold only
weak three-card flushes and otherwise bet the most they may):

- High Card Flush / Top Flush: fold anything below a 9-6-5 three-card flush, otherwise raise (play)
  the largest amount the hand allows.
- Chase the Flush: all in before the flop with three suited hole cards; after the flop with four
  cards of a suit; after the turn and river with at least a 9-high three-card flush, else fold.
"""

from __future__ import annotations

from collections.abc import Sequence

from controller.rules.cards import Card, parse_cards
from controller.rules.games import FLOP, PREFLOP, RIVER, decision_limits
from controller.rules.hands import Hand, evaluate

FOLD_BELOW: Hand = evaluate(parse_cards(["9h", "6h", "5h"]))
"""The weakest hand the simulated High Card Flush and Top Flush players raise with."""

CHASE_RIVER_MINIMUM: Hand = evaluate(parse_cards(["9h", "3h", "2h"]))
"""The weakest hand a simulated Chase the Flush player goes all in with after the river."""


def raise_or_fold(game: str, hand: Hand, ante_cents: int) -> int | None:
    """High Card Flush raise / Top Flush play in cents, or None to fold."""
    if hand < FOLD_BELOW:
        return None
    _, largest = decision_limits(game, hand, ante_cents)
    return largest


def chase_all_in_street(hole: Sequence[Card], community: Sequence[Card]) -> str | None:
    """The street a simulated Chase the Flush player goes all in on, or None to fold at the river.

    ``community`` is the four community cards: the flop is the first two.
    """
    if evaluate(hole).flush_length >= 3:
        return PREFLOP
    if evaluate((*hole, *community[:2])).flush_length >= 4:
        return FLOP
    if evaluate((*hole, *community)) >= CHASE_RIVER_MINIMUM:
        return RIVER
    return None

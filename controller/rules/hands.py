"""Hand evaluation for the flush games, by lookup tables over the 8,192 rank sets of one suit.

A hand's value is its longest flush (docs/rules.md "Cards and hands"): more cards beat fewer, equal lengths
compare ranks from the top down, cards outside the flush never count, suits have no rank. For two rank
sets of the same size, "compare from the highest rank down" is exactly integer comparison of their
13-bit masks, so one int orders every hand::

    strength = flush_length << 13 | flush_rank_mask

The straight-flush run (for the side bets only) is looked up the same way: the longest run of
consecutive ranks in one suit, the ace high or low but never around the corner, longer first, then the
higher top card::

    straight_flush = run_length << 4 | top_rank_index
"""

from __future__ import annotations

import functools
from collections.abc import Iterable

from controller.rules.cards import RANKS, RANKS_PER_SUIT, SUIT_RANK_MASK, SUITS, Card

RANK_MASKS = 1 << RANKS_PER_SUIT  # 8,192 rank sets of one suit
_RANK_NINE = RANKS.index("9")
_RANK_ACE = RANKS.index("A")

POPCOUNT: tuple[int, ...] = tuple(mask.bit_count() for mask in range(RANK_MASKS))
"""Number of ranks in each 13-bit rank set."""

SUIT_STRENGTH: tuple[int, ...] = tuple(
    (POPCOUNT[mask] << RANKS_PER_SUIT) | mask for mask in range(RANK_MASKS)
)
"""The strength of a hand whose flush is this rank set."""


def _longest_run(mask: int) -> int:
    """``run_length << 4 | top_rank`` of the longest straight-flush run in one suit's rank set."""
    if mask == 0:
        return 0
    # Bit 0 of the extended set is the ace played low; bit r + 1 is rank r.
    extended = (mask << 1) | ((mask >> _RANK_ACE) & 1)
    # Each pass keeps the bits that start a run one longer than the last pass's: after k passes the
    # set bits start runs of k + 1. The last non-empty set marks the starts of the longest runs; its
    # highest bit, the highest such run. (A loop per bit took 25 ms at import, on every command that
    # settles; this takes 4 and builds the same table: tests/rules/test_hands.py.)
    length = 0
    starts = extended
    while extended:
        starts = extended
        extended &= extended >> 1
        length += 1
    top_bit = starts.bit_length() + length - 2
    top_rank = top_bit - 1 if top_bit else _RANK_ACE  # a lone low ace is still the ace
    return (length << 4) | top_rank


STRAIGHT_FLUSH_RUN: tuple[int, ...] = tuple(_longest_run(mask) for mask in range(RANK_MASKS))
"""``run_length << 4 | top_rank`` for each 13-bit rank set (0 for the empty set)."""

QUALIFYING_STRENGTH = (3 << RANKS_PER_SUIT) | (1 << _RANK_NINE)
"""The weakest qualifying strength, a 9-high 3-card flush: every 3-card rank set topped by the 9 or
higher has a mask of at least ``1 << rank_index('9')``, every lower one less, and every longer flush is
above it."""

# Each suit's strength table with the suit index in the two low bits, so that one max() picks the best
# suit and remembers which it was. Ties between suits with identical rank sets report the later suit
# in c, d, h, s order. Built once at import: 4 x 8,192 ints.
_KEY_CLUBS: tuple[int, ...] = tuple(strength << 2 for strength in SUIT_STRENGTH)
_KEY_DIAMONDS: tuple[int, ...] = tuple(strength << 2 | 1 for strength in SUIT_STRENGTH)
_KEY_HEARTS: tuple[int, ...] = tuple(strength << 2 | 2 for strength in SUIT_STRENGTH)
_KEY_SPADES: tuple[int, ...] = tuple(strength << 2 | 3 for strength in SUIT_STRENGTH)
_CARD_BIT: tuple[int, ...] = tuple(1 << card for card in range(4 * RANKS_PER_SUIT))


class Hand:
    """The value of one hand. Compare hands with ``<``, ``==`` and so on: by the longest flush only.

    Built by :func:`evaluate`; the straight-flush run is looked up only when asked for, because the
    main game never needs it.
    """

    __slots__ = ("_key", "card_set")

    def __init__(self, key: int, card_set: int) -> None:
        self._key = key  # strength << 2 | flush suit index
        self.card_set = card_set

    @property
    def strength(self) -> int:
        """``flush_length << 13 | flush_rank_mask``: a larger strength is a better hand."""
        return self._key >> 2

    @property
    def flush_suit(self) -> int:
        return self._key & 3

    @property
    def flush_length(self) -> int:
        return self._key >> (RANKS_PER_SUIT + 2)

    @property
    def flush_rank_mask(self) -> int:
        return (self._key >> 2) & SUIT_RANK_MASK

    @property
    def flush_ranks(self) -> str:
        """The flush's ranks, highest first, e.g. ``"AJ952"``."""
        return _ranks_text(self.flush_rank_mask)

    @property
    def flush_suit_text(self) -> str:
        return SUITS[self._key & 3]

    @property
    def straight_flush(self) -> int:
        """``run_length << 4 | top_rank_index`` of the longest straight-flush run in any suit."""
        card_set = self.card_set
        return max(
            STRAIGHT_FLUSH_RUN[card_set & SUIT_RANK_MASK],
            STRAIGHT_FLUSH_RUN[(card_set >> 13) & SUIT_RANK_MASK],
            STRAIGHT_FLUSH_RUN[(card_set >> 26) & SUIT_RANK_MASK],
            STRAIGHT_FLUSH_RUN[card_set >> 39],
        )

    @property
    def straight_flush_length(self) -> int:
        return self.straight_flush >> 4

    @property
    def straight_flush_high(self) -> str:
        return RANKS[self.straight_flush & 0xF]

    @property
    def qualifies(self) -> bool:
        """At least a 9-high 3-card flush (docs/rules.md: the banker's qualification)."""
        return self._key >> 2 >= QUALIFYING_STRENGTH

    def to_json(self) -> dict[str, object]:
        # Every settled hand is written once a round: the run is looked up once, not twice.
        run = self.straight_flush
        return {
            "flush_length": self.flush_length,
            "flush_suit": SUITS[self._key & 3],
            "flush_ranks": self.flush_ranks,
            "straight_flush_length": run >> 4,
            "straight_flush_high": RANKS[run & 0xF],
        }

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Hand) and self._key >> 2 == other._key >> 2

    def __hash__(self) -> int:
        return hash(self._key >> 2)

    def __lt__(self, other: Hand) -> bool:
        return self._key >> 2 < other._key >> 2

    def __le__(self, other: Hand) -> bool:
        return self._key >> 2 <= other._key >> 2

    def __gt__(self, other: Hand) -> bool:
        return self._key >> 2 > other._key >> 2

    def __ge__(self, other: Hand) -> bool:
        return self._key >> 2 >= other._key >> 2

    def __repr__(self) -> str:
        return (
            f"Hand({self.flush_length}-card {self.flush_ranks}{self.flush_suit_text} flush, "
            f"straight flush {self.straight_flush_length} to {self.straight_flush_high})"
        )


@functools.cache
def _ranks_text(mask: int) -> str:
    """The ranks of a 13-bit rank mask, highest first: written once per mask (every settled hand is
    written out with its flush's ranks; at most 8,192 masks)."""
    return "".join(RANKS[rank] for rank in range(RANKS_PER_SUIT - 1, -1, -1) if mask >> rank & 1)


def evaluate_bits(card_set: int) -> Hand:
    """Evaluate a hand given as a 52-bit card set (bit ``card`` set for each card held)."""
    # Pairwise comparisons rather than max(): this is the hot path of every settlement and benchmark.
    best = _KEY_CLUBS[card_set & 0x1FFF]
    other = _KEY_DIAMONDS[(card_set >> 13) & 0x1FFF]
    if other > best:  # noqa: PLR1730 - max() costs a call on the hot path
        best = other
    hearts = _KEY_HEARTS[(card_set >> 26) & 0x1FFF]
    other = _KEY_SPADES[card_set >> 39]
    if other > hearts:  # noqa: PLR1730 - as above
        hearts = other
    return Hand(best if best > hearts else hearts, card_set)


def evaluate(cards: Iterable[Card]) -> Hand:
    """Evaluate a hand of distinct cards (7 at the table; any number works)."""
    bit = _CARD_BIT
    card_set = 0
    for card in cards:
        card_set |= bit[card]
    # Not inlined: the call costs 0 to 2.5% of an evaluation (bench/bench_evaluate_inlined.py), a few
    # hundredths of a percent of a round's settling.
    return evaluate_bits(card_set)


def compare(first: Hand, second: Hand) -> int:
    """1 if ``first`` wins, -1 if ``second`` wins, 0 for identical flushes (a tie)."""
    return (first.strength > second.strength) - (first.strength < second.strength)

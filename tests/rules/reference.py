"""A naive reference evaluator, written from docs/rules.md's words with no tables, to check the fast one."""

from __future__ import annotations

from collections.abc import Iterable

from controller.rules.cards import RANKS, SUITS, Card, rank_of, suit_of


def naive_flush(cards: Iterable[Card]) -> tuple[int, tuple[int, ...], int]:
    """(length, ranks high to low, suit) of the longest flush; of equal lengths, the higher ranks;
    of identical rank sets in two suits, the later suit in c, d, h, s order (as hands.py reports it)."""
    by_suit: dict[int, list[int]] = {suit: [] for suit in range(len(SUITS))}
    for card in cards:
        by_suit[suit_of(card)].append(rank_of(card))
    best: tuple[int, tuple[int, ...], int] = (0, (), 0)
    for suit, ranks in by_suit.items():
        key = (len(ranks), tuple(sorted(ranks, reverse=True)), suit)
        best = max(best, key)
    return best


def naive_run(cards: Iterable[Card]) -> tuple[int, int]:
    """(length, top rank) of the longest straight-flush run: ace high or low, never round the corner;
    of equal lengths the higher top card."""
    by_suit: dict[int, set[int]] = {suit: set() for suit in range(len(SUITS))}
    for card in cards:
        by_suit[suit_of(card)].add(rank_of(card))
    best = (0, 0)
    ace = RANKS.index("A")
    for ranks in by_suit.values():
        for top in ranks:
            length = 1
            below = top - 1
            while below >= 0 and below in ranks:
                length += 1
                below -= 1
            if below == -1 and ace in ranks and top != ace:
                length += 1  # A-2-3...: the ace plays low under the 2
            best = max(best, (length, top))
    return best


def naive_qualifies(cards: Iterable[Card]) -> bool:
    length, ranks, _ = naive_flush(cards)
    return length >= 4 or (length == 3 and ranks[0] >= RANKS.index("9"))

"""A hand in words, as a dealer says it and a supervisor writes it in a dispute file.

``"5-card spade flush, K high (K J 9 6 3)"``; with a straight-flush run of three or more (what the
straight-flush bonuses pay on) ``"...; 3-card straight flush, 9 high"``. One function for every reader
(``settle --text``, the terminal's recall, the panel's recall): they work from the settlement's JSON
``HAND`` (docs/settle.md), so :func:`describe_hand_json` takes that; :func:`describe_hand` takes the
rules engine's ``Hand``.

Only the flush decides who wins (rules.md), so the flush comes first and names every rank: two 4-card
flushes with the same high card are told apart by the next rank, and a dispute needs to see it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from controller.rules.hands import Hand

SUIT_WORDS = {"c": "club", "d": "diamond", "h": "heart", "s": "spade"}
MIN_STRAIGHT_FLUSH_RUN = 3  # no paytable pays a run of two; saying "2-card straight flush" misleads


def rank_word(rank: str) -> str:
    """``"T"`` -> ``"10"``; other ranks as written (``A K Q J 9 ... 2``)."""
    return "10" if rank == "T" else rank


def describe_flush(length: int, suit: str, ranks: str) -> str:
    """``(5, "s", "KJ963")`` -> ``"5-card spade flush, K high (K J 9 6 3)"``."""
    if length <= 0 or not ranks:
        return "no cards"
    high = rank_word(ranks[0])
    if length == 1:
        # One card of its best suit: possible only in a hand of fewer than five cards.
        return f"{high} high, no two cards of a suit"
    suit_word = SUIT_WORDS.get(suit, suit)
    every_rank = " ".join(rank_word(rank) for rank in ranks)
    return f"{length}-card {suit_word} flush, {high} high ({every_rank})"


def describe_straight_flush(length: int, high: str) -> str:
    """``(3, "9")`` -> ``"3-card straight flush, 9 high"``; empty below a run of three."""
    if length < MIN_STRAIGHT_FLUSH_RUN:
        return ""
    return f"{length}-card straight flush, {rank_word(high)} high"


def describe_hand_json(hand: Mapping[str, Any] | None) -> str:
    """A settlement's ``HAND`` (docs/settle.md) in words; ``"-"`` for none (a dead or withheld hand)."""
    if not hand:
        return "-"
    text = describe_flush(
        int(hand.get("flush_length", 0)), str(hand.get("flush_suit", "")), str(hand.get("flush_ranks", ""))
    )
    run = describe_straight_flush(
        int(hand.get("straight_flush_length", 0)), str(hand.get("straight_flush_high", ""))
    )
    return f"{text}; {run}" if run else text


def describe_hand(hand: Hand) -> str:
    """The rules engine's ``Hand`` in words (the same text as its JSON's)."""
    return describe_hand_json(hand.to_json())

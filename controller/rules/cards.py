"""Cards in docs/rules.md notation (`As`, `Td`, `9c`) and the 52-card deck.

A card is an int 0..51: ``suit_index * 13 + rank_index``, ranks ``23456789TJQKA`` (2 = 0, A = 12),
suits ``cdhs`` (c = 0, s = 3). The firmware protocol carries the same number in one byte, so a card
read off the wire needs no translation. A set of cards is a 52-bit int with bit ``card`` set; the 13
bits of suit ``s`` are ``(bits >> 13 * s) & 0x1FFF``, which is what the hand tables index.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from controller.errors import CardError, shown

if TYPE_CHECKING:
    import random  # loaded by shuffled_deck: settling and reading cards never shuffle (~1 ms a start)

RANKS = "23456789TJQKA"
SUITS = "cdhs"
RANKS_PER_SUIT = 13
DECK_SIZE = 52
SUIT_RANK_MASK = (1 << RANKS_PER_SUIT) - 1

Card = int
"""A card, 0..51 (see the module docstring)."""

_CARD_BY_TEXT: dict[str, Card] = {
    rank + suit: suit_index * RANKS_PER_SUIT + rank_index
    for suit_index, suit in enumerate(SUITS)
    for rank_index, rank in enumerate(RANKS)
}
_TEXT_BY_CARD: tuple[str, ...] = tuple(sorted(_CARD_BY_TEXT, key=_CARD_BY_TEXT.__getitem__))
CARD_TEXTS: tuple[str, ...] = _TEXT_BY_CARD
"""Each card's text by its number (``card_text`` without the check, for a card already checked)."""


def parse_card(text: object) -> Card:
    """The card written as ``text``; anything else is refused with a message that names it."""
    if isinstance(text, str):
        card = _CARD_BY_TEXT.get(text)
        if card is not None:
            return card
    raise CardError(
        f"{shown(text)} is not a card (write rank then suit: ranks {RANKS}, suits {SUITS}, e.g. 'As', 'Td')"
    )


def parse_cards(texts: Iterable[object], *, field: str = "cards") -> list[Card]:
    """Parse a list of cards; a bad or repeated card is refused naming ``field`` and the card."""
    cards: list[Card] = []
    seen: set[Card] = set()
    for position, text in enumerate(texts):
        try:
            card = parse_card(text)
        except CardError as error:
            raise CardError(f"{field}[{position}]: {error}") from None
        if card in seen:
            raise CardError(f"{field}[{position}]: {text} appears twice")
        seen.add(card)
        cards.append(card)
    return cards


def card_text(card: Card) -> str:
    """The docs/rules.md notation of ``card``."""
    if not 0 <= card < DECK_SIZE:
        raise CardError(f"{shown(card)} is not a card number (0..51)")
    return _TEXT_BY_CARD[card]


def cards_text(cards: Iterable[Card]) -> list[str]:
    return [card_text(card) for card in cards]


def rank_of(card: Card) -> int:
    """Rank index 0..12 (2..A)."""
    return card % RANKS_PER_SUIT


def suit_of(card: Card) -> int:
    """Suit index 0..3 (c, d, h, s)."""
    return card // RANKS_PER_SUIT


def card_bits(cards: Iterable[Card]) -> int:
    """The 52-bit set of ``cards``."""
    bits = 0
    for card in cards:
        bits |= 1 << card
    return bits


def full_deck() -> list[Card]:
    """The 52 cards in order 2c..Ac, 2d..Ad, 2h..Ah, 2s..As."""
    return list(range(DECK_SIZE))


def shuffled_deck(rng: random.Random | None = None) -> list[Card]:
    """A shuffled deck. Without ``rng`` the operating system's CSPRNG shuffles (as a table must)."""
    import random  # noqa: PLC0415 (above)

    deck = full_deck()
    (rng if rng is not None else random.SystemRandom()).shuffle(deck)
    return deck


def deal_hands(deck: Sequence[Card], hand_sizes: Sequence[int]) -> list[list[Card]]:
    """Deal hands of the given sizes off the top of ``deck``, one hand after another."""
    if sum(hand_sizes) > len(deck):
        raise CardError(f"{sum(hand_sizes)} cards wanted but the deck holds {len(deck)}")
    hands: list[list[Card]] = []
    position = 0
    for size in hand_sizes:
        hands.append(list(deck[position : position + size]))
        position += size
    return hands

"""Card notation (docs/rules.md "Cards and hands": ranks 23456789TJQKA, suits cdhs; nothing else is a
card)."""

from __future__ import annotations

import random

import pytest

from controller.errors import CardError
from controller.rules.cards import (
    card_text,
    deal_hands,
    full_deck,
    parse_card,
    parse_cards,
    rank_of,
    shuffled_deck,
    suit_of,
)


@pytest.mark.parametrize("text", ["As", "Td", "9c", "2h", "Ks"])
def test_cards_written_rank_then_suit_parse_and_print_back(text: str) -> None:
    assert card_text(parse_card(text)) == text


def test_card_numbers_are_suit_times_13_plus_rank() -> None:
    assert parse_card("2c") == 0
    assert parse_card("Ac") == 12
    assert parse_card("2d") == 13
    assert parse_card("As") == 51
    assert (rank_of(parse_card("Qh")), suit_of(parse_card("Qh"))) == (10, 2)


@pytest.mark.parametrize(
    "text", ["10h", "1s", "ah", "AS", "As ", "", "A", "Asx", "Xs", "Ts2", 5, None, ["As"]]
)
def test_anything_else_is_refused_naming_it(text: object) -> None:
    with pytest.raises(CardError, match="is not a card"):
        parse_card(text)


def test_parse_cards_names_the_field_position_and_card() -> None:
    with pytest.raises(CardError, match=r"^seats\[0\]\.cards\[2\]: '10h' is not a card"):
        parse_cards(["As", "Kd", "10h"], field="seats[0].cards")


def test_a_card_seen_twice_is_refused() -> None:
    with pytest.raises(CardError, match=r"^cards\[2\]: As appears twice"):
        parse_cards(["As", "Kd", "As"])


def test_the_deck_is_52_distinct_cards_and_a_shuffle_keeps_them() -> None:
    assert sorted(shuffled_deck(random.Random(1))) == full_deck() == list(range(52))
    assert len({card_text(card) for card in full_deck()}) == 52


def test_deal_hands_takes_cards_in_order_and_refuses_more_than_the_deck() -> None:
    deck = full_deck()
    assert deal_hands(deck, [2, 3]) == [[0, 1], [2, 3, 4]]
    with pytest.raises(CardError):
        deal_hands(deck, [7] * 8)

"""Hands in words (controller/rules/describe.py), from the rules engine's own evaluation."""

from __future__ import annotations

import pytest

from controller.rules.cards import parse_cards
from controller.rules.describe import describe_hand, describe_hand_json
from controller.rules.hands import evaluate


@pytest.mark.parametrize(
    ("cards", "words"),
    [
        ("Ks Js 9s 6s 3s 2d 4c", "5-card spade flush, K high (K J 9 6 3)"),
        ("9h 8h 7h 2c 5d Jd Qs", "3-card heart flush, 9 high (9 8 7); 3-card straight flush, 9 high"),
        ("Ts 7s 2s 3d 5d 8c Jh", "3-card spade flush, 10 high (10 7 2)"),
        ("Ah 2h 3h 4h 9c 9d Ks", "4-card heart flush, A high (A 4 3 2); 4-card straight flush, 4 high"),
        ("Ac Kc Qc Jc Tc 9c 8c", "7-card club flush, A high (A K Q J 10 9 8); 7-card straight flush, A high"),
        ("2c 3d 4h 5s", "5 high, no two cards of a suit"),
    ],
)
def test_a_hand_in_words(cards: str, words: str) -> None:
    hand = evaluate(parse_cards(cards.split()))
    assert describe_hand(hand) == words
    assert describe_hand_json(hand.to_json()) == words


def test_no_hand_is_a_dash() -> None:
    assert describe_hand_json(None) == "-"

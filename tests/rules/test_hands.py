"""Hand evaluation (docs/rules.md "Cards and hands"): worked examples, then the tables against a naive
reference evaluator and the ordering's properties on random hands."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.rules.cards import RANKS, card_bits, parse_cards
from controller.rules.hands import Hand, compare, evaluate, evaluate_bits
from tests.rules.reference import naive_flush, naive_qualifies, naive_run


def hand(*texts: str) -> Hand:
    return evaluate(parse_cards(texts))


# --- the longest flush ---------------------------------------------------------------------------------
def test_the_hand_is_its_longest_flush() -> None:
    value = hand("2h", "5h", "9h", "Jh", "As", "Kd", "Qc")
    assert (value.flush_length, value.flush_suit_text, value.flush_ranks) == (4, "h", "J952")


def test_longer_beats_shorter_whatever_the_ranks() -> None:
    assert hand("2h", "3h", "4h", "6h", "8c", "9d", "Ts") > hand("Ah", "Kh", "Qh", "2c", "3c", "4d", "5s")


def test_equal_lengths_compare_ranks_from_the_top_down() -> None:
    ace_jack = hand("Ah", "Jh", "4h", "2c", "3d", "5s", "7c")
    ace_ten = hand("As", "Ts", "9s", "2d", "3c", "5h", "7d")
    assert ace_jack > ace_ten
    # Same top two, decided by the third card.
    assert hand("Ah", "Kh", "5h", "2c", "3d", "7s", "9c") > hand("As", "Ks", "4s", "2d", "3c", "7h", "9d")


def test_cards_outside_the_flush_never_count_not_even_to_break_ties() -> None:
    first = hand("Ah", "Kh", "Qh", "Ac", "Kc", "Ad", "Kd")  # 3-card AKQ plus two A-K offsuit pairs
    second = hand("As", "Ks", "Qs", "2c", "3c", "2d", "4h")
    # Both hold 3-card AKQ flushes... but the first also has a 2-card AK in clubs: irrelevant.
    assert first == second
    assert compare(first, second) == 0


def test_of_two_flushes_of_the_same_length_the_higher_one_is_the_hand() -> None:
    value = hand("Qh", "5h", "3h", "Ks", "Qs", "Js", "2c")
    assert (value.flush_suit_text, value.flush_ranks) == ("s", "KQJ")
    assert value == hand("Kd", "Qd", "Jd", "2s", "3s", "4c", "5h")  # suits have no rank


def test_a_2_card_flush_is_a_hand_like_any_other() -> None:
    low = hand("Ah", "2h", "Kc", "3c", "Qd", "4d", "5s")
    assert (low.flush_length, low.flush_ranks) == (2, "A2")
    assert low > hand("Kh", "Qh", "Jc", "Tc", "9d", "8d", "7s")


# --- the straight-flush run ----------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("cards", "length", "high"),
    [
        (("Qh", "Kh", "Ah", "2c", "5d", "8s", "Jc"), 3, "A"),  # ace high
        (("Ah", "2h", "3h", "9c", "5d", "8s", "Jc"), 3, "3"),  # ace low
        (("Kh", "Ah", "2h", "9c", "5d", "8s", "Jc"), 2, "A"),  # never round the corner: K-A is the run
        (("2s", "3s", "4s", "5s", "6s", "7s", "8s"), 7, "8"),
        (("As", "2s", "3s", "4s", "5s", "Kd", "Qd"), 5, "5"),
        (("9h", "Th", "Jh", "2c", "3c", "4c", "7d"), 3, "J"),  # equal lengths: the higher top card counts
        (("2h", "7c", "9d", "Js", "4h", "Kc", "6d"), 1, "K"),
    ],
)
def test_the_straight_flush_run(cards: tuple[str, ...], length: int, high: str) -> None:
    value = hand(*cards)
    assert (value.straight_flush_length, value.straight_flush_high) == (length, high)


def test_the_run_need_not_be_in_the_longest_flush_and_never_counts_in_the_main_hand() -> None:
    value = hand("2h", "5h", "9h", "Jh", "Qs", "Ks", "As")
    assert (value.flush_length, value.flush_suit_text) == (4, "h")
    assert (value.straight_flush_length, value.straight_flush_high) == (3, "A")
    assert value == hand("2d", "5d", "9d", "Jd", "Qs", "3c", "7h")  # the run does not break the tie


# --- qualification -------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("cards", "qualifies"),
    [
        (("9h", "3h", "2h", "Ac", "Kd", "Qs", "Jc"), True),  # 9-high 3-card flush: the weakest qualifier
        (("8h", "7h", "6h", "Ac", "Kd", "Qs", "Jc"), False),  # 8-high 3-card flush
        (("5h", "4h", "3h", "2h", "Kd", "Qs", "Jc"), True),  # any 4-card flush
        (("Ah", "Kh", "Qc", "Jc", "Td", "9d", "8s"), False),  # 2-card flushes never
        (("Th", "2h", "3h", "4c", "5c", "6c", "Ad"), True),  # two 3-card flushes: the T-high one
        (("8h", "2h", "3h", "4c", "5c", "6c", "Ad"), False),
    ],
)
def test_the_banker_qualifies_with_at_least_a_9_high_3_card_flush(
    cards: tuple[str, ...], qualifies: bool
) -> None:
    assert hand(*cards).qualifies is qualifies


def test_to_json_is_the_settle_hand_shape() -> None:
    assert hand("Ah", "Jh", "9h", "5h", "3h", "Kc", "Qd").to_json() == {
        "flush_length": 5,
        "flush_suit": "h",
        "flush_ranks": "AJ953",
        "straight_flush_length": 1,
        "straight_flush_high": "A",
    }


# --- properties ----------------------------------------------------------------------------------------
seven_cards = st.lists(st.integers(0, 51), min_size=7, max_size=7, unique=True)
any_cards = st.lists(st.integers(0, 51), min_size=0, max_size=13, unique=True)


@settings(max_examples=2000, deadline=None)
@given(any_cards)
def test_the_tables_agree_with_the_naive_reference_evaluator(cards: list[int]) -> None:
    value = evaluate(cards)
    assert evaluate_bits(card_bits(cards)) == value
    assert evaluate_bits(card_bits(cards)).flush_suit == value.flush_suit
    length, ranks, suit = naive_flush(cards)
    assert value.flush_length == length
    assert value.flush_ranks == "".join(RANKS[rank] for rank in ranks)
    if length:
        assert value.flush_suit == suit
    run_length, run_top = naive_run(cards)
    if cards:
        assert (value.straight_flush_length, value.straight_flush_high) == (run_length, RANKS[run_top])
    assert value.qualifies is naive_qualifies(cards)


def ranking_key(cards: list[int]) -> tuple[int, tuple[int, ...]]:
    length, ranks, _ = naive_flush(cards)
    return (length, ranks)


@settings(max_examples=1000, deadline=None)
@given(seven_cards, seven_cards, seven_cards)
def test_comparison_is_a_total_order_that_agrees_with_the_ranking(
    first: list[int], second: list[int], third: list[int]
) -> None:
    a, b, c = evaluate(first), evaluate(second), evaluate(third)
    # Agrees with the ranking (length, then ranks high to low), both ways.
    key_a, key_b = ranking_key(first), ranking_key(second)
    assert (a < b) == (key_a < key_b)
    assert (a == b) == (key_a == key_b)
    assert compare(a, b) == (key_a > key_b) - (key_a < key_b)
    # Total: exactly one of <, ==, >; antisymmetric; transitive.
    assert [a < b, a == b, a > b].count(True) == 1
    assert compare(a, b) == -compare(b, a)
    assert (a <= b) == (not a > b)
    if a <= b <= c:
        assert a <= c
    if a < b < c:
        assert a < c
    assert a == evaluate(first)
    assert hash(a) == hash(evaluate(first))

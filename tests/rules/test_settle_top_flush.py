"""Top Flush (docs/rules.md "Top Flush (house-banked)")."""

from __future__ import annotations

import pytest

from controller.errors import UserError
from tests.rules.builders import Json, conserves, round_json, seat, settled, wagers_of

DEALER_QUALIFIES = "Ts 7s 2s 3d 5d 8c Jh"  # T-7-2 of spades
DEALER_DOES_NOT_QUALIFY = "8s 7s 2s 3d 5d Tc Jh"  # 8-7-2 of spades


def top_flush(dealer: str, *seats: Json) -> Json:
    return settled(round_json("top-flush", dealer, *seats))


def test_higher_hand_wins_ante_and_play() -> None:
    result = top_flush(DEALER_QUALIFIES, seat(1, "Ah Kh 9h 4h 2c 6c Qd", ante=500, play=500))
    assert wagers_of(result, 1) == {"ante": ("win", 500), "play": ("win", 500)}


def test_identical_hands_push_both_and_lower_loses_both() -> None:
    result = top_flush(
        DEALER_QUALIFIES,
        seat(1, "Th 7h 2h 3c 4c 9d Qs", ante=500, play=500),
        seat(2, "9c 6c 5c Kd 2d 3h 6s", ante=500, play=500),
    )
    assert wagers_of(result, 1) == {"ante": ("push", 0), "play": ("push", 0)}
    assert wagers_of(result, 2) == {"ante": ("lose", -500), "play": ("lose", -500)}
    assert result["banker_net"] == 1000
    assert conserves(result)


def test_dealer_does_not_qualify_ante_wins_play_pushes() -> None:
    result = top_flush(DEALER_DOES_NOT_QUALIFY, seat(1, "6h 4h 2h Ac Kd Qs 9c", ante=500, play=500))
    assert wagers_of(result, 1) == {"ante": ("win", 500), "play": ("push", 0)}


def test_play_up_to_4x_with_a_6_card_flush_and_2x_with_5() -> None:
    result = top_flush(
        DEALER_QUALIFIES,
        seat(1, "Ah Kh 9h 4h 3h 6h Qd", ante=500, play=2000),
        seat(2, "Ac Kc 9c 4c 3c 6d Qs", ante=500, play=1000),
    )
    assert wagers_of(result, 1) == {"ante": ("win", 500), "play": ("win", 2000)}
    assert wagers_of(result, 2) == {"ante": ("win", 500), "play": ("win", 1000)}


@pytest.mark.parametrize(
    ("cards", "play", "message"),
    [
        (
            "Ac Kc 9c 4c 3c 6d Qs",
            1500,
            r"1500 is outside its limit \(500 to 1000 with a 5-card flush, ante 500\)",
        ),
        ("Ac Kc 9c 4c 2d 6d Qs", 1000, r"1000 is outside its limit \(exactly 500 with a 4-card flush"),
        ("Ac Kc 9c 4c 2d 6d Qs", 400, r"400 is outside its limit"),
        ("Ah Kh 9h 4h 3h 6h Qd", 2500, r"2500 is outside its limit \(500 to 2000 with a 6-card flush"),
    ],
)
def test_a_play_above_the_limit_for_the_cards_is_refused(cards: str, play: int, message: str) -> None:
    with pytest.raises(UserError, match=r"^seats\[0\]\.wagers\.play: " + message):
        top_flush(DEALER_QUALIFIES, seat(1, cards, ante=500, play=play))


def test_fold_loses_the_ante_and_the_bonus_wagers_still_pay() -> None:
    result = top_flush(
        DEALER_QUALIFIES,
        seat(
            1, "2h 3h 4h 5h 6h 9c Jd", folded=True, ante=500, top_flush_bonus=100, straight_flush_jackpot=100
        ),
    )
    assert wagers_of(result, 1) == {
        "ante": ("lose", -500),
        "top_flush_bonus": ("win", 1000),  # 5-card flush, 10 to 1
        "straight_flush_jackpot": ("win", 10000),  # 5-card straight flush, 100 to 1
    }


def test_a_progressive_wager_in_a_round_without_a_progressive_is_refused() -> None:
    # The wager is settled (tests/rules/test_settle_progressive.py) only with the round's meter given.
    with pytest.raises(UserError, match=r"^seats\[0\]\.wagers\.progressive: the round has no progressive"):
        top_flush(DEALER_QUALIFIES, seat(1, "Ah Kh 9h 4h 2c 6c Qd", ante=500, play=500, progressive=100))


def test_top_flush_is_house_banked_only() -> None:
    obj = round_json(
        "top-flush",
        DEALER_QUALIFIES,
        seat(1, "Ah Kh 9h 4h 2c 6c Qd", ante=500, play=500),
        banking={"mode": "designated-player", "seat": 3, "funds": 10000},
    )
    with pytest.raises(UserError, match=r"^banking\.mode: top-flush is house-banked only"):
        settled(obj)

"""High Card Flush Poker, house-banked (docs/rules.md "High Card Flush Poker" and "House-banked")."""

from __future__ import annotations

from tests.rules.builders import Json, conserves, round_json, seat, seat_of, settled, wagers_of

# The dealer's T-7-2 of spades qualifies (at least a 9-high 3-card flush); 8-7-2 does not.
DEALER_QUALIFIES = "Ts 7s 2s 3d 5d 8c Jh"
DEALER_DOES_NOT_QUALIFY = "8s 7s 2s 3d 5d Tc Jh"


def hcf(dealer: str, *seats: Json) -> Json:
    return settled(round_json("high-card-flush", dealer, *seats))


def test_higher_hand_wins_ante_and_raise_1_to_1() -> None:
    result = hcf(DEALER_QUALIFIES, seat(1, "Ah Kh 9h 4h 2c 6c Qd", ante=500, raise_=500))
    assert result["dealer"]["qualifies"] is True
    assert wagers_of(result, 1) == {"ante": ("win", 500), "raise": ("win", 500)}
    assert result["banker_net"] == -1000
    assert conserves(result)


def test_lower_hand_loses_ante_and_raise() -> None:
    result = hcf(DEALER_QUALIFIES, seat(2, "9c 6c 4c Kd 2h 3h 6s", ante=500, raise_=500))
    assert wagers_of(result, 2) == {"ante": ("lose", -500), "raise": ("lose", -500)}
    assert seat_of(result, 2)["net"] == -1000
    assert result["banker_net"] == 1000


def test_identical_hands_push_ante_and_raise() -> None:
    # T-7-2 of hearts against the dealer's T-7-2 of spades: suits have no rank.
    result = hcf(DEALER_QUALIFIES, seat(3, "Th 7h 2h 3c 4c 9d Qs", ante=500, raise_=500))
    assert wagers_of(result, 3) == {"ante": ("push", 0), "raise": ("push", 0)}


def test_banker_does_not_qualify_ante_wins_raise_pushes_even_for_a_lower_hand() -> None:
    result = hcf(DEALER_DOES_NOT_QUALIFY, seat(1, "6h 4h 2h Ac Kd Qs 9c", ante=500, raise_=500))
    assert result["dealer"]["qualifies"] is False
    assert wagers_of(result, 1) == {"ante": ("win", 500), "raise": ("push", 0)}


def test_fold_loses_the_ante_and_the_bonuses_still_pay_on_the_hand() -> None:
    # A folded 4-card flush with a 4-card straight flush (5-4-3-2 of hearts): the house pays both bonuses.
    result = hcf(
        DEALER_QUALIFIES,
        seat(4, "2h 3h 4h 5h 9c Jd Kc", folded=True, ante=500, flush=100, straight_flush=100),
    )
    assert seat_of(result, 4)["status"] == "folded"
    assert wagers_of(result, 4) == {
        "ante": ("lose", -500),
        "flush": ("win", 100),
        "straight_flush": ("win", 6000),
    }
    assert seat_of(result, 4)["net"] == 5600


def test_bonuses_pay_win_or_lose_against_the_dealer() -> None:
    # The player loses the main game to a 5-card flush but the 4-card flush bonus still pays 1 to 1.
    result = hcf(
        "As Ks Qs 9s 2s 3d 4c",
        seat(1, "2h 5h 9h Jh 3c 6d 8c", ante=500, raise_=500, flush=100, straight_flush=100),
    )
    assert wagers_of(result, 1) == {
        "ante": ("lose", -500),
        "raise": ("lose", -500),
        "flush": ("win", 100),
        "straight_flush": ("lose", -100),  # no run of 3
    }


def test_the_raise_may_be_up_to_3x_with_a_6_card_flush() -> None:
    result = hcf(DEALER_QUALIFIES, seat(1, "Ah Kh 9h 4h 2h 6h Qd", ante=500, raise_=1500))
    assert wagers_of(result, 1) == {"ante": ("win", 500), "raise": ("win", 1500)}


def test_a_settlement_lists_seats_by_seat_number_and_the_hand_shapes() -> None:
    result = hcf(
        DEALER_QUALIFIES,
        seat(5, "9c 6c 4c Kd 2h 3h 6s", ante=100, raise_=100),
        seat(2, "Ah Kh 9h 4h 2c 7c Qd", ante=100, raise_=100),
    )
    assert [entry["seat"] for entry in result["seats"]] == [2, 5]
    assert seat_of(result, 2)["hand"] == {
        "flush_length": 4,
        "flush_suit": "h",
        "flush_ranks": "AK94",
        "straight_flush_length": 2,
        "straight_flush_high": "A",
    }
    assert result["dealer"]["hand"]["flush_ranks"] == "T72"
    assert result["banker_net"] == 0
    assert result["rake"] == 0
    assert conserves(result)

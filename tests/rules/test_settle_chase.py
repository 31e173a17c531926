"""Chase the Flush (docs/rules.md "Chase the Flush (house-banked)")."""

from __future__ import annotations

import pytest

from controller.errors import UserError
from tests.rules.builders import Json, conserves, round_json, seat, settled, wagers_of

# Community 9h 5h 2c 3d: every hand holds the 9-5 of hearts.
COMMUNITY = "9h 5h 2c 3d"
DEALER_QUALIFIES = "Jh Kd 4s"  # hearts J-9-5
DEALER_DOES_NOT_QUALIFY = "8s Kd 4s"  # K-3 of diamonds, 9-5 of hearts, 8-4 of spades: no 3-card flush


def chase(dealer: str, *seats: Json) -> Json:
    return settled(round_json("chase-the-flush", dealer, *seats, community=COMMUNITY))


def test_dealer_qualifies_player_wins_all_in_and_ante_win_xtra_pays_on_4_cards() -> None:
    # Ah Qh 7h + 9h 5h: a 5-card flush beats J-9-5.
    result = chase(
        DEALER_QUALIFIES, seat(1, "Ah Qh 7h", street="preflop", ante=500, xtra_bonus=500, all_in=1500)
    )
    assert result["dealer"]["qualifies"] is True
    assert wagers_of(result, 1) == {
        "ante": ("win", 500),
        "xtra_bonus": ("win", 2500),  # 5-card flush: 5 to 1
        "all_in": ("win", 1500),
    }
    assert conserves(result)


def test_dealer_qualifies_player_wins_with_3_cards_xtra_pushes() -> None:
    result = chase(
        DEALER_QUALIFIES, seat(1, "Qh 6c 7d", street="flop", ante=500, xtra_bonus=500, all_in=1000)
    )
    assert wagers_of(result, 1) == {"ante": ("win", 500), "xtra_bonus": ("push", 0), "all_in": ("win", 1000)}


def test_dealer_qualifies_player_loses_all_three() -> None:
    result = chase(
        DEALER_QUALIFIES, seat(1, "Th 6c 7d", street="river", ante=500, xtra_bonus=500, all_in=500)
    )
    assert wagers_of(result, 1) == {
        "ante": ("lose", -500),
        "xtra_bonus": ("lose", -500),
        "all_in": ("lose", -500),
    }


def test_dealer_qualifies_tie_pushes_all_three() -> None:
    # The player's J-9-5 of spades against the dealer's J-9-5 of hearts: suits have no rank.
    result = chase(
        DEALER_QUALIFIES, seat(1, "Js 9s 5s", street="preflop", ante=500, xtra_bonus=500, all_in=1500)
    )
    assert wagers_of(result, 1) == {"ante": ("push", 0), "xtra_bonus": ("push", 0), "all_in": ("push", 0)}


def test_dealer_does_not_qualify_ante_returned_then_win_pays_all_in() -> None:
    result = chase(
        DEALER_DOES_NOT_QUALIFY, seat(1, "Ah Qh 7h", street="preflop", ante=500, xtra_bonus=500, all_in=1500)
    )
    assert result["dealer"]["qualifies"] is False
    assert wagers_of(result, 1) == {"ante": ("push", 0), "xtra_bonus": ("win", 2500), "all_in": ("win", 1500)}


def test_dealer_does_not_qualify_lose_loses_all_in_and_xtra_ante_returned() -> None:
    # The dealer's best is K-3 of diamonds (no 3-card flush); the player's best is J-3 of diamonds.
    result = chase(
        DEALER_DOES_NOT_QUALIFY, seat(1, "Jd 6s 7c", street="river", ante=500, xtra_bonus=500, all_in=500)
    )
    assert result["dealer"]["hand"]["flush_ranks"] == "K3"
    assert result["seats"][0]["hand"]["flush_ranks"] == "J3"
    assert wagers_of(result, 1) == {
        "ante": ("push", 0),
        "xtra_bonus": ("lose", -500),
        "all_in": ("lose", -500),
    }


def test_dealer_does_not_qualify_tie_pushes_all_in_and_xtra() -> None:
    # Both best flushes are the shared 9-5 of hearts.
    result = chase("4s 7d 6c", seat(1, "8s 4d 7c", street="river", ante=500, xtra_bonus=500, all_in=500))
    assert result["dealer"]["qualifies"] is False
    assert result["dealer"]["hand"]["flush_ranks"] == result["seats"][0]["hand"]["flush_ranks"] == "95"
    assert wagers_of(result, 1) == {"ante": ("push", 0), "xtra_bonus": ("push", 0), "all_in": ("push", 0)}


def test_fold_loses_ante_and_xtra_same_suit_still_pays() -> None:
    result = chase(
        DEALER_QUALIFIES,
        seat(1, "Ah Qh 7h", folded=True, ante=500, xtra_bonus=500, same_suit_bonus=100),
    )
    assert result["seats"][0]["status"] == "folded"
    assert wagers_of(result, 1) == {
        "ante": ("lose", -500),
        "xtra_bonus": ("lose", -500),
        "same_suit_bonus": ("win", 1000),  # 5-card flush: 10 to 1
    }


def test_same_suit_bonus_pays_whatever_the_dealer_holds() -> None:
    result = chase(
        DEALER_QUALIFIES,
        seat(1, "2h 4c 6c", street="river", ante=500, xtra_bonus=500, all_in=500, same_suit_bonus=100),
    )
    # 9-5-2 of hearts loses to J-9-5 but it is no 4-card flush: the Same Suit Bonus loses too.
    assert wagers_of(result, 1)["same_suit_bonus"] == ("lose", -100)
    result = chase(
        "Jh Th 4s",  # the dealer's J-T-9-5 of hearts: a 4-card flush
        seat(1, "6d 7d 8d", street="river", ante=500, xtra_bonus=500, all_in=500, same_suit_bonus=100),
    )
    # The player's 8-7-6-3 of diamonds is a 4-card flush that loses to J-T-9-5: the bonus still pays.
    assert wagers_of(result, 1) == {
        "ante": ("lose", -500),
        "xtra_bonus": ("lose", -500),
        "same_suit_bonus": ("win", 100),
        "all_in": ("lose", -500),
    }


@pytest.mark.parametrize(
    ("street", "all_in", "message"),
    [
        ("preflop", 1000, r"1000 is outside its limit \(exactly 1500 before the flop, ante 500\)"),
        ("flop", 1500, r"1500 is outside its limit \(exactly 1000 after the flop, ante 500\)"),
        ("river", 1000, r"1000 is outside its limit \(exactly 500 after the river, ante 500\)"),
    ],
)
def test_the_all_in_is_exactly_3x_2x_1x_by_street(street: str, all_in: int, message: str) -> None:
    with pytest.raises(UserError, match=r"^seats\[0\]\.wagers\.all_in: " + message):
        chase(DEALER_QUALIFIES, seat(1, "Ah Qh 7h", street=street, ante=500, xtra_bonus=500, all_in=all_in))


@pytest.mark.parametrize(
    ("wagers", "street", "folded", "message"),
    [
        (
            {"ante": 500, "xtra_bonus": 400, "all_in": 500},
            "river",
            False,
            r"xtra_bonus: must equal the ante \(500\), not 400",
        ),
        ({"ante": 500, "all_in": 500}, "river", False, r"xtra_bonus: must equal the ante \(500\), not 0"),
        ({"ante": 500, "xtra_bonus": 500}, "river", False, r"all_in: missing"),
        ({"ante": 500, "xtra_bonus": 500, "all_in": 500}, None, False, r"street: missing"),
        (
            {"ante": 500, "xtra_bonus": 500, "all_in": 500},
            "turn",
            False,
            r"street: must be one of preflop, flop, river",
        ),
        (
            {"ante": 500, "xtra_bonus": 500, "all_in": 500},
            None,
            True,
            r"all_in: a folded seat has no all_in wager",
        ),
        ({"ante": 500, "xtra_bonus": 500}, "flop", True, r"street: a folded seat made no all-in"),
    ],
)
def test_chase_wager_shapes_are_checked(
    wagers: dict[str, int], street: str | None, folded: bool, message: str
) -> None:
    player = seat(1, "Ah Qh 7h", street=street, folded=folded, **wagers)
    with pytest.raises(UserError, match=r"^seats\[0\]\.(wagers\.)?" + message):
        chase(DEALER_QUALIFIES, player)


def test_up_to_seven_players() -> None:
    holes = ["Ah Qh 7h", "Ac Qc 7c", "As Qs 7s", "Ad Qd 7d", "Kh Th 8h", "Kc Tc 8c", "Ks Ts 8s"]
    seats = [
        seat(n, cards, street="preflop", ante=100, xtra_bonus=100, all_in=300)
        for n, cards in enumerate(holes, 1)
    ]
    result = settled(round_json("chase-the-flush", "2s 3s 6s", *seats, community="9h 5h 2c 3d"))
    assert len(result["seats"]) == 7
    assert conserves(result)
    eight = [*seats, seat(8, "Kd Td 8d", street="preflop", ante=100, xtra_bonus=100, all_in=300)]
    with pytest.raises(UserError, match=r"^seats(\[7\]\.seat)?: "):
        settled(round_json("chase-the-flush", "2s 3s 6s", *eight, community="9h 5h 2c 3d"))

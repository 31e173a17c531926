"""Dead hands (docs/rules.md "Dead hands and walk-aways"): a seat dealt the wrong number of cards is dead;
a banker or community count error, or "dead": true, kills the whole round. Every wager of a dead hand
is returned whatever the cards, its cards are never shown, and it is never raked."""

from __future__ import annotations

import pytest

from tests.rules.builders import Json, conserves, dp, round_json, seat, seat_of, settled, wagers_of

DEALER = "Ts 7s 2s 3d 5d 8c Jh"


@pytest.mark.parametrize("cards", ["Ah Kh 9h 4h 2c 6c", "Ah Kh 9h 4h 2c 6c Qd 9c", ""])
def test_a_seat_dealt_the_wrong_number_of_cards_is_dead_and_the_others_play(cards: str) -> None:
    result = settled(
        round_json(
            "high-card-flush",
            DEALER,
            seat(1, cards, ante=500, raise_=1500, flush=100),  # the raise is never judged: dead cards
            seat(2, "9d 6d 4d Kc 2h 3h 6s", ante=500, raise_=500),
        )
    )
    dead = seat_of(result, 1)
    assert (dead["status"], dead["reason"], dead["hand"], dead["net"]) == (
        "dead",
        "wrong card count",
        None,
        0,
    )
    assert wagers_of(result, 1) == {
        "ante": ("returned", 0),
        "raise": ("returned", 0),
        "flush": ("returned", 0),
    }
    assert wagers_of(result, 2) == {"ante": ("lose", -500), "raise": ("lose", -500)}
    assert result["dead"] is False
    assert conserves(result)


def round_is_dead(result: Json) -> None:
    assert result["dead"] is True
    assert result["dealer"] is None  # a dead hand's cards are never shown to anyone
    assert result["banker_net"] == 0
    assert result["rake"] == 0
    for entry in result["seats"]:
        assert (entry["status"], entry["reason"], entry["hand"], entry["net"]) == (
            "dead",
            "round dead",
            None,
            0,
        )
        assert {wager["result"] for wager in entry["wagers"].values()} == {"returned"}


@pytest.mark.parametrize("dealer", ["Ts 7s 2s 3d 5d 8c", "Ts 7s 2s 3d 5d 8c Jh Qh", ""])
def test_the_banker_dealt_the_wrong_number_kills_the_round(dealer: str) -> None:
    round_is_dead(
        settled(round_json("high-card-flush", dealer, seat(1, "Ah Kh 9h 4h 2c 6c Qd", ante=500, raise_=500)))
    )


def test_dead_true_kills_the_round_whatever_the_cards() -> None:
    result = settled(
        round_json(
            "top-flush",
            DEALER,
            seat(1, "Ah Kh 9h 4h 2c 6c Qd", ante=500, play=500, top_flush_bonus=100),
            seat(2, "9d 6d 4d Kc 2h 3h 6s", folded=True, ante=500),
            dead=True,
        )
    )
    round_is_dead(result)
    assert [entry["seat"] for entry in result["seats"]] == [1, 2]


@pytest.mark.parametrize("community", ["9h 5h 2c", "9h 5h 2c 3d 4d", None])
def test_a_wrong_community_count_kills_a_chase_the_flush_round(community: str | None) -> None:
    player = seat(1, "Ah Qh 7h", street="preflop", ante=500, xtra_bonus=500, all_in=1500, same_suit_bonus=100)
    round_is_dead(settled(round_json("chase-the-flush", "Jh Kd 4s", player, community=community)))


def test_a_chase_seat_with_the_wrong_hole_count_is_dead() -> None:
    result = settled(
        round_json(
            "chase-the-flush",
            "Jh Kd 4s",
            seat(1, "Ah Qh", street="preflop", ante=500, xtra_bonus=500, all_in=1500),
            seat(2, "Th 6c 7d", street="river", ante=500, xtra_bonus=500, all_in=500),
            community="9h 5h 2c 3d",
        )
    )
    assert seat_of(result, 1)["status"] == "dead"
    assert seat_of(result, 2)["status"] == "live"


def test_a_dead_designated_player_round_returns_everything_and_takes_no_rake() -> None:
    result = settled(
        round_json(
            "high-card-flush",
            "2s 4s 3d 6d 8c Tc",
            seat(3, "Ah Kh 9h 4h 2c 7c Qd", ante=500, raise_=500, straight_flush=100),
            banking=dp(4, 100),
            rake={"method": "i", "amount": 100},
        )
    )
    round_is_dead(result)
    assert result["rake_lines"] == []

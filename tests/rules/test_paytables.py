"""Every paytable line of every preset, paid through a settlement; custom tables; "only the highest
line a hand reaches pays" (docs/rules.md "Paytables")."""

from __future__ import annotations

import pytest

from controller.errors import UserError
from controller.rules.paytables import DEFAULT_PRESET, PRESETS, parse_paytable
from tests.rules.builders import dp, round_json, seat, settled, wagers_of

# Hands with an exact flush length (hearts), and hands with an exact straight-flush run (hearts from 2).
FLUSH_OF_LENGTH = {
    7: "2h 4h 6h 8h Th Qh Ah",
    6: "2h 4h 6h 8h Th Qh 7c",
    5: "2h 4h 6h 8h Th 7c 9d",
    4: "2h 4h 6h 8h 7c 9d Jc",
    3: "2h 4h 6h 7c 9d Jc Kd",
}
RUN_OF_LENGTH = {
    7: "2h 3h 4h 5h 6h 7h 8h",
    6: "2h 3h 4h 5h 6h 7h 9c",
    5: "2h 3h 4h 5h 6h 9c Jd",
    4: "2h 3h 4h 5h 9c Jd Kc",
    3: "2h 3h 4h 9c Jd Kc 5c",
    2: "2h 3h 9c Jd Kc 5c 7d",
    1: "2h 4h 6h 8h 7c 9d Jc",
}
# A banker every hand above beats: a queen-high 3-card flush (it qualifies) and no run longer than 1.
WEAK_BANKER = "2s 4s 3d 6d 8c Tc Qs"

HOUSE_LINES = {
    ("high-card-flush", "flush"): {7: 300, 6: 100, 5: 10, 4: 1, 3: None},
    ("high-card-flush", "straight_flush"): {7: 8000, 6: 1000, 5: 100, 4: 60, 3: 7, 2: None, 1: None},
    ("top-flush", "top_flush_bonus"): {7: 300, 6: 100, 5: 10, 4: 1, 3: None},
    ("top-flush", "straight_flush_jackpot"): {7: 8000, 6: 1000, 5: 100, 4: 60, 3: 7, 2: None, 1: None},
}
DP_LINES = {
    "flush": {7: 200, 6: 50, 5: 10, 4: 2, 3: None},
    "straight_flush": {7: 1000, 6: 500, 5: 100, 4: 60, 3: 8, 2: None, 1: None},
}
RUN_WAGERS = {"straight_flush", "straight_flush_jackpot"}


def house_cases() -> list[tuple[str, str, int, int | None]]:
    return [
        (game, wager, length, odds)
        for (game, wager), lines in HOUSE_LINES.items()
        for length, odds in lines.items()
    ]


@pytest.mark.parametrize(("game", "wager", "length", "odds"), house_cases())
def test_every_house_paytable_line(game: str, wager: str, length: int, odds: int | None) -> None:
    cards = (RUN_OF_LENGTH if wager in RUN_WAGERS else FLUSH_OF_LENGTH)[length]
    decision = "raise" if game == "high-card-flush" else "play"
    player = seat(1, cards, ante=100)
    player["wagers"].update({decision: 100, wager: 10})
    result = settled(round_json(game, WEAK_BANKER, player))
    expected = ("lose", -10) if odds is None else ("win", 10 * odds)
    assert wagers_of(result, 1)[wager] == expected


@pytest.mark.parametrize(
    ("wager", "length", "odds"), [(w, n, o) for w, lines in DP_LINES.items() for n, o in lines.items()]
)
def test_every_designated_player_paytable_line(wager: str, length: int, odds: int | None) -> None:
    cards = (RUN_OF_LENGTH if wager == "straight_flush" else FLUSH_OF_LENGTH)[length]
    player = seat(1, cards, ante=100, raise_=100)
    player["wagers"][wager] = 10
    result = settled(round_json("high-card-flush", WEAK_BANKER, player, banking=dp(4, 10**9)))
    expected = ("lose", -10) if odds is None else ("win", 10 * odds)
    assert wagers_of(result, 1)[wager] == expected


CHASE_XTRA_CASES = [
    # community, player hole, dealer hole, flush length, expected X-tra Bonus
    ("Ah Kh Qh Jh", "Th 9h 8h", "2s 3s 4c", 7, ("win", 250 * 10)),
    ("Ah Kh Qh Jh", "Th 9h 2c", "2s 3s 4c", 6, ("win", 20 * 10)),
    ("Ah Kh Qh Jh", "Th 5c 6d", "2s 3s 4c", 5, ("win", 5 * 10)),
    ("Ah Kh 2c 3d", "Qh Jh 5s", "4s 6s 9c", 4, ("win", 1 * 10)),
    ("Ah Kh 2c 3d", "Qh 5s 7d", "4s 6s 9c", 3, ("push", 0)),  # a win with fewer than 4 cards pushes it
]


@pytest.mark.parametrize(("community", "hole", "dealer", "length", "expected"), CHASE_XTRA_CASES)
def test_every_xtra_bonus_line_on_a_win(
    community: str, hole: str, dealer: str, length: int, expected: tuple[str, int]
) -> None:
    player = seat(1, hole, street="river", ante=10, xtra_bonus=10, all_in=10)
    result = settled(round_json("chase-the-flush", dealer, player, community=community))
    assert result["seats"][0]["hand"]["flush_length"] == length
    assert wagers_of(result, 1)["xtra_bonus"] == expected
    assert wagers_of(result, 1)["all_in"] == ("win", 10)


@pytest.mark.parametrize(
    ("community", "hole", "length", "odds"),
    [
        ("Ah Kh Qh Jh", "Th 9h 8h", 7, 300),
        ("Ah Kh Qh Jh", "Th 9h 2c", 6, 100),
        ("Ah Kh Qh Jh", "Th 5c 6d", 5, 10),
        ("Ah Kh 2c 3d", "Qh Jh 5s", 4, 1),
        ("Ah Kh 2c 3d", "Qh 5s 7d", 3, None),
    ],
)
def test_every_same_suit_bonus_line(community: str, hole: str, length: int, odds: int | None) -> None:
    player = seat(1, hole, street="river", ante=10, xtra_bonus=10, all_in=10, same_suit_bonus=10)
    result = settled(round_json("chase-the-flush", "4s 6s 9c", player, community=community))
    assert result["seats"][0]["hand"]["flush_length"] == length
    assert wagers_of(result, 1)["same_suit_bonus"] == (("lose", -10) if odds is None else ("win", 10 * odds))


def test_every_game_bonus_has_a_default_preset_and_presets_are_as_rules_md() -> None:
    assert {key: PRESETS[name].to_json() for key, name in DEFAULT_PRESET.items()} == {
        ("high-card-flush", "house", "flush"): {"7": 300, "6": 100, "5": 10, "4": 1},
        ("high-card-flush", "house", "straight_flush"): {"7": 8000, "6": 1000, "5": 100, "4": 60, "3": 7},
        ("high-card-flush", "designated-player", "flush"): {"7": 200, "6": 50, "5": 10, "4": 2},
        ("high-card-flush", "designated-player", "straight_flush"): {
            "7": 1000,
            "6": 500,
            "5": 100,
            "4": 60,
            "3": 8,
        },
        ("top-flush", "house", "top_flush_bonus"): {"7": 300, "6": 100, "5": 10, "4": 1},
        ("top-flush", "house", "straight_flush_jackpot"): {"7": 8000, "6": 1000, "5": 100, "4": 60, "3": 7},
        ("chase-the-flush", "house", "xtra_bonus"): {"7": 250, "6": 20, "5": 5, "4": 1},
        ("chase-the-flush", "house", "same_suit_bonus"): {"7": 300, "6": 100, "5": 10, "4": 1},
    }


def test_a_round_may_name_another_preset() -> None:
    # The Same Suit Bonus configured to the Top Flush bonus's card (the same numbers), and the HCF flush
    # bonus paid by the DP preset in a house game.
    player = seat(1, FLUSH_OF_LENGTH[4], ante=100, raise_=100, flush=10)
    result = settled(round_json("high-card-flush", WEAK_BANKER, player, paytables={"flush": "hcf-flush-dp"}))
    assert wagers_of(result, 1)["flush"] == ("win", 20)


def test_a_custom_table_pays_the_highest_line_reached_and_loses_below_its_lowest() -> None:
    custom = {"6": 50, "4": 3}  # no 7 line: a 7-card flush reaches the 6 line; no 5 line: 5 reaches 4
    for length, expected in [
        (7, ("win", 500)),
        (6, ("win", 500)),
        (5, ("win", 30)),
        (4, ("win", 30)),
        (3, ("lose", -10)),
    ]:
        player = seat(1, FLUSH_OF_LENGTH[length], ante=100, raise_=100, flush=10)
        result = settled(round_json("high-card-flush", WEAK_BANKER, player, paytables={"flush": custom}))
        assert wagers_of(result, 1)["flush"] == expected, length


def test_a_custom_dp_table_needs_its_own_lowest_line() -> None:
    # A DP flush wager paid from 5 cards up: a 4-card flush that beats the DP no longer wins it.
    player = seat(1, FLUSH_OF_LENGTH[4], ante=100, raise_=100, flush=10)
    result = settled(
        round_json(
            "high-card-flush", WEAK_BANKER, player, banking=dp(4, 10**6), paytables={"flush": {"5": 10}}
        )
    )
    assert wagers_of(result, 1)["flush"] == ("lose", -10)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("no-such-table", r"^paytables\.flush: unknown paytable preset 'no-such-table'"),
        ({}, r"^paytables\.flush: a paytable is a preset name or a non-empty object"),
        ({"8": 10}, r"^paytables\.flush: line '8' is not a length from 1 to 7"),
        ({"four": 10}, r"^paytables\.flush: line 'four' is not a length"),
        ({"4": 0}, r"^paytables\.flush\.4: odds must be a whole number from 1 to 1000000"),
        ({"4": 2.5}, r"^paytables\.flush\.4: odds must be a whole number"),
        ({"4": True}, r"^paytables\.flush\.4: odds must be a whole number"),
        ({"4": 10**7}, r"^paytables\.flush\.4: odds must be a whole number"),
        (7, r"^paytables\.flush: a paytable is a preset name"),
    ],
)
def test_bad_paytables_are_refused_naming_the_field(spec: object, message: str) -> None:
    with pytest.raises(UserError, match=message):
        parse_paytable(spec, field="paytables.flush")

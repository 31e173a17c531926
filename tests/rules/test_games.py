"""Each game's wagers, seat limits and decision limits (docs/rules.md, per game)."""

from __future__ import annotations

import pytest

from controller.errors import UserError
from controller.rules.cards import parse_cards
from controller.rules.games import (
    GAMES,
    check_bet_wagers,
    clockwise_from,
    decision_limits,
    decision_multiplier_limits,
    game_spec,
    largest_decision_multiplier,
)
from controller.rules.hands import Hand, evaluate

FLUSH_OF_LENGTH: dict[int, str] = {
    2: "Ah Kh Qc Jc Td 9d 8s",
    3: "Ah Kh Qh Jc Td 9d 8s",
    4: "Ah Kh Qh Jh Td 9d 8s",
    5: "Ah Kh Qh Jh 2h 9d 8s",
    6: "Ah Kh Qh Jh 2h 3h 8s",
    7: "Ah Kh Qh Jh 2h 3h 4h",
}


def flush_of(length: int) -> Hand:
    return evaluate(parse_cards(FLUSH_OF_LENGTH[length].split()))


def test_wagers_in_spot_order_as_drivers_events_states() -> None:
    assert GAMES["high-card-flush"].wagers == ("ante", "raise", "flush", "straight_flush")
    assert GAMES["top-flush"].wagers == ("ante", "play", "top_flush_bonus", "straight_flush_jackpot")
    assert GAMES["chase-the-flush"].wagers == ("ante", "xtra_bonus", "same_suit_bonus", "all_in")


def test_required_and_optional_wagers() -> None:
    assert GAMES["high-card-flush"].required_wagers == ("ante",)
    assert GAMES["top-flush"].required_wagers == ("ante",)
    assert GAMES["chase-the-flush"].required_wagers == ("ante", "xtra_bonus")
    assert GAMES["chase-the-flush"].optional_wagers == ("same_suit_bonus",)


def test_seat_limits_are_what_the_deck_serves() -> None:
    assert {name: spec.max_players for name, spec in GAMES.items()} == {
        "high-card-flush": 6,
        "top-flush": 6,
        "chase-the-flush": 7,
    }
    assert GAMES["high-card-flush"].cards_needed(6) == 49  # 6 players and the banker, 7 cards each
    assert GAMES["high-card-flush"].cards_needed(7) == 56  # one seat more than the deck serves
    assert GAMES["chase-the-flush"].cards_needed(7) == 28  # 8 x 3 hole cards and 4 community


def test_only_high_card_flush_has_a_designated_player() -> None:
    assert GAMES["high-card-flush"].banking_modes == ("house", "designated-player")
    assert GAMES["top-flush"].banking_modes == ("house",)
    assert GAMES["chase-the-flush"].banking_modes == ("house",)


@pytest.mark.parametrize(
    ("length", "limits"), [(2, (1, 1)), (3, (1, 1)), (4, (1, 1)), (5, (1, 2)), (6, (1, 3)), (7, (1, 3))]
)
def test_high_card_flush_raise_is_1x_up_to_3x_by_flush_length(length: int, limits: tuple[int, int]) -> None:
    assert decision_multiplier_limits("high-card-flush", flush_of(length)) == limits
    assert decision_limits("high-card-flush", flush_of(length), 500) == (500 * limits[0], 500 * limits[1])


@pytest.mark.parametrize(
    ("length", "limits"), [(2, (1, 1)), (4, (1, 1)), (5, (1, 2)), (6, (1, 4)), (7, (1, 4))]
)
def test_top_flush_play_is_1x_up_to_4x_by_flush_length(length: int, limits: tuple[int, int]) -> None:
    assert decision_limits("top-flush", flush_of(length), 1000) == (1000 * limits[0], 1000 * limits[1])


@pytest.mark.parametrize(("street", "multiplier"), [("preflop", 3), ("flop", 2), ("river", 1)])
def test_chase_the_flush_all_in_is_exactly_3x_2x_1x_by_street(street: str, multiplier: int) -> None:
    for length in (2, 7):  # the cards do not matter
        assert decision_limits("chase-the-flush", flush_of(length), 500, street) == (500 * multiplier,) * 2


def test_chase_the_flush_needs_a_street() -> None:
    with pytest.raises(UserError, match=r"^street: must be one of preflop, flop, river"):
        decision_limits("chase-the-flush", flush_of(3), 500)
    with pytest.raises(UserError, match=r"^street: "):
        decision_limits("chase-the-flush", flush_of(3), 500, "turn")


def test_unknown_games_are_refused_naming_the_field() -> None:
    with pytest.raises(UserError, match=r"^game: unknown game 'poker'"):
        game_spec("poker")
    with pytest.raises(UserError, match=r"^game: "):
        decision_limits("poker", flush_of(3), 500)


def test_the_largest_decision_each_banker_must_cover() -> None:
    assert [largest_decision_multiplier(name) for name in GAMES] == [3, 4, 3]


def test_check_bet_wagers_accepts_the_games_wagers() -> None:
    check_bet_wagers("high-card-flush", {"ante": 500, "flush": 100, "straight_flush": 0})
    check_bet_wagers("top-flush", {"ante": 500, "top_flush_bonus": 100, "straight_flush_jackpot": 100})
    check_bet_wagers("chase-the-flush", {"ante": 500, "xtra_bonus": 500, "same_suit_bonus": 100})


@pytest.mark.parametrize(
    ("game", "wagers", "message"),
    [
        ("high-card-flush", {"flush": 100}, r"^wagers\.ante: missing \(the ante is required\)"),
        ("high-card-flush", {"ante": 500, "play": 500}, r"^wagers\.play: unknown wager for high-card-flush"),
        ("high-card-flush", {"ante": -1}, r"^wagers\.ante: must not be negative"),
        ("high-card-flush", {"ante": True}, r"^wagers\.ante: must be a whole number of cents, not a boolean"),
        (
            "top-flush",
            {"ante": 5.0},
            r"^wagers\.ante: must be a whole number of cents, not a fractional number",
        ),
        ("chase-the-flush", {"ante": 500}, r"^wagers\.xtra_bonus: must equal the ante \(500\), not 0"),
        ("chase-the-flush", {"ante": 500, "xtra_bonus": 600}, r"^wagers\.xtra_bonus: must equal the ante"),
        (
            "chase-the-flush",
            {"ante": 500, "xtra_bonus": 500, "x" * 100: 1},
            r"^wagers\['x+\.\.\.\]: unknown",
        ),
    ],
)
def test_check_bet_wagers_refuses_naming_the_wager(
    game: str, wagers: dict[str, object], message: str
) -> None:
    with pytest.raises(UserError, match=message):
        check_bet_wagers(game, wagers)


@pytest.mark.parametrize(
    ("button", "seats", "order"),
    [
        (3, [1, 2, 3, 4, 5, 6, 7], (4, 5, 6, 7, 1, 2, 3)),
        (7, [1, 3, 5], (1, 3, 5)),
        (5, [2, 6], (6, 2)),
    ],
)
def test_the_button_moves_clockwise_to_the_next_seat(
    button: int, seats: list[int], order: tuple[int, ...]
) -> None:
    assert clockwise_from(button, seats) == order

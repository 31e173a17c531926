"""The catalogue (controller/rules/catalogue.py): its par-sheet figures are the math's, and every reader
lists the wagers it lists."""

from __future__ import annotations

from fractions import Fraction

import pytest

from controller.gamemath.parsheet import SIDE_BET_KIND, build_request, par_sheet
from controller.rules import catalogue
from controller.rules.games import GAMES, PROGRESSIVE_GAMES


@pytest.mark.parametrize("game", ["high-card-flush", "top-flush"])
def test_the_theoretical_edges_are_the_par_sheets(game: str) -> None:
    """Recomputed by controller/gamemath (a few seconds each; Chase the Flush's takes minutes and is
    tests/test_chase_math.py's published figure)."""
    sheet = par_sheet(build_request(game, "house", {}))
    assert str(Fraction(*catalogue.BASE_EDGE_PER_ANTE[game])) == sheet["base_game"]["exact"]["house_edge"]
    for wager, figures in sheet["side_bets"].items():
        preset = catalogue.DEFAULT_PRESET[(game, "house", wager)]
        assert str(Fraction(*catalogue.PRESET_EDGE[preset])) == figures["exact"]["house_edge"]


def test_the_games_and_the_math_read_the_catalogues_wagers() -> None:
    assert GAMES["chase-the-flush"].wagers == ("ante", "xtra_bonus", "same_suit_bonus", "all_in")
    assert PROGRESSIVE_GAMES == ("high-card-flush", "top-flush")
    assert SIDE_BET_KIND[("high-card-flush", "designated-player", "straight_flush")] == "run_contest"
    # The X-tra Bonus is judged with the hand by the base rule: the base game's edge counts it.
    assert ("chase-the-flush", "house", "xtra_bonus") not in SIDE_BET_KIND
    assert catalogue.paytable_wagers("chase-the-flush", "house") == ("xtra_bonus", "same_suit_bonus")
    assert catalogue.wager_label("xtra_bonus") == "X-tra bonus"


def test_a_wager_on_a_spot_that_is_not_the_next_is_refused_and_nothing_changes() -> None:
    """A spot is the wager's index in the game's wagers: a line that leaves a gap would move every
    wager after it on the sensors, so it is refused whole."""
    before = (dict(catalogue.WAGERS), dict(catalogue.GAMES), dict(catalogue.DEFAULT_PRESET))
    gap = catalogue.Wager(
        "gap", "gap", {"high-card-flush": 5}, catalogue.BANKER, catalogue.BONUS, catalogue.FLUSH_BONUS
    )
    with pytest.raises(ValueError, match=r"^high-card-flush: the wagers' spots are \[0, 1, 2, 3, 5\]"):
        catalogue.add_wager(gap)
    assert before == (catalogue.WAGERS, catalogue.GAMES, catalogue.DEFAULT_PRESET)

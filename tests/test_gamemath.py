"""Exact game math: the published figures, reproduced by exact counting (tests that fail if wrong)."""

from __future__ import annotations

import json
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.cli import main
from controller.gamemath.hand_counts import DECK_HANDS, flush_length_counts, straight_flush_length_counts
from controller.gamemath.parsheet import MAX_RAISE, build_request, contested_side_bet, own_hand_side_bet
from controller.gamemath.raise_fold import BANKER_HANDS, RaiseFoldSolution, analyse_hand, solve_raise_fold
from controller.rules.cards import parse_cards
from controller.rules.paytables import PRESETS
from tests.math_reference import reference_counts

HCF = MAX_RAISE["high-card-flush"]


@pytest.fixture(scope="module")
def hcf() -> RaiseFoldSolution:
    """The complete High Card Flush par sheet with the designated player's contests: run once."""
    return solve_raise_fold("high-card-flush", HCF, contests=True)


def test_flush_length_counts_are_rules_md_table() -> None:
    assert flush_length_counts() == {
        7: 6_864,
        6: 267_696,
        5: 3_814_668,
        4: 26_137_540,
        3: 78_881_088,
        2: 24_676_704,
    }


def test_straight_flush_run_counts_add_up_and_seven_runs_are_32() -> None:
    counts = straight_flush_length_counts()
    assert sum(counts.values()) == DECK_HANDS == 133_784_560
    assert counts[7] == 4 * 8  # 7-card straight flushes: tops 7..A in each suit
    assert counts[1] + counts[2] + counts[3] + counts[4] + counts[5] + counts[6] == DECK_HANDS - 32


def test_banker_qualifies_exactly_100825036_hands(hcf: RaiseFoldSolution) -> None:
    assert hcf.qualifying_hands == 100_825_036
    assert f"{float(hcf.banker_qualifies):.4%}" == "75.3637%"


def test_optimal_strategy_raises_67_86_percent_and_pushes_0_08_percent(hcf: RaiseFoldSolution) -> None:
    decisions = hcf.hands_by_decision
    assert sum(decisions.values()) == DECK_HANDS
    raised = DECK_HANDS - decisions["fold"]
    assert f"{raised / DECK_HANDS:.2%}" == "67.86%"
    assert f"{hcf.deals_by_outcome['push'] / hcf.deals:.2%}" == "0.08%"
    # Every 5-card flush raises 2x and every 6- or 7-card flush 3x: the raise is linear, so maximal.
    assert decisions["raise_2x"] == 3_814_668
    assert decisions["raise_3x"] == 267_696 + 6_864
    assert hcf.exact_ties == 0


def test_house_edge_matches_published_figure(hcf: RaiseFoldSolution) -> None:
    # Wizard of Odds: the T-8-6 strategy's edge is 0.06% above optimal; Gordon Michaels' advanced
    # strategy 2.6855%; our exact optimum must be a little below both.
    edge = hcf.house_edge
    assert Fraction(2664, 100_000) < edge < Fraction(2665, 100_000)
    assert edge < Fraction(26855, 1_000_000)
    assert hcf.element_of_risk == edge / hcf.average_wager
    assert sum(hcf.deals_by_outcome.values()) == hcf.deals


def test_strategy_chart_matches_published_advanced_strategy(hcf: RaiseFoldSolution) -> None:
    from controller.gamemath.parsheet import raise_fold_strategy

    chart = {entry["flush_length"]: entry for entry in raise_fold_strategy(hcf)}
    assert chart[2]["rule"] == "fold every 2-card flush"
    # Gordon Michaels' advanced strategy: the other cards matter from T-3-2 to T-9-8.
    assert chart[3]["raise_from"] == "J-3-2"
    assert chart[3]["fold_from"] == "9-8-7"
    mixed = [item["flush"] for item in chart[3]["depends_on_other_cards"]]
    assert mixed[0] == "T-9-8"
    assert mixed[-1] == "T-3-2"
    assert chart[4]["rule"] == "raise 1x with every 4-card flush"
    assert chart[6]["rule"] == "raise 3x with every 6-card flush"


def test_flush_bonus_300_100_10_1_house_edge_is_7_8_percent() -> None:
    bet = own_hand_side_bet(PRESETS["hcf-flush-house"], flush_length_counts())
    assert bet["exact"]["house_edge"] == "200861/2572780"
    assert f"{bet['house_edge']:.2%}" == "7.81%"


def test_designated_player_contests_account_for_every_deal(hcf: RaiseFoldSolution) -> None:
    for deals in (hcf.flush_contest, hcf.straight_flush_contest):
        assert sum(deals.values()) == hcf.deals
    # No 4+ card flush ever folds, so the flush wager's wins are exactly "DP weaker".
    assert all(
        deals == 0 for (line, outcome), deals in hcf.flush_contest.items() if line >= 4 and outcome == "fold"
    )
    flush = contested_side_bet(PRESETS["hcf-flush-dp"], hcf.flush_contest)
    straight = contested_side_bet(PRESETS["hcf-straight-flush-dp"], hcf.straight_flush_contest)
    assert -1 < flush["return"] < 0
    assert -1 < straight["return"] < 0


def test_top_flush_play_up_to_4x() -> None:
    solution = solve_raise_fold("top-flush", MAX_RAISE["top-flush"])
    assert solution.hands_by_decision["raise_4x"] == 267_696 + 6_864
    assert solution.qualifying_hands == 100_825_036
    # A bigger allowed play on 6- and 7-card flushes can only help the player.
    assert Fraction(2, 100) < solution.house_edge < Fraction(2664, 100_000)


EXAMPLE_HANDS = [
    "Ah Kh Qh 2c 3c 4c 5d",  # 4-card flush, 3-runs in two suits
    "Jh Th 9h Jc Tc 9c 2d",  # two identical 3-card straight flushes: identical-flush pushes
    "9h 5h 4h Jc 3c 9d 2s",  # 3-card flush exactly at qualification
    "2h 3h 4h 5h 6h 7h 8h",  # 7-card straight flush
    "Ac 2c 3c Kd Qd Js 9h",  # ace-low run
    "8s 7s 6s 5d 4d 3h 2c",  # 3-card flush below the 9: does not qualify
    "As Ks Qs Js 9s Ah Kh",  # 5-card flush
]


@pytest.mark.parametrize("text", EXAMPLE_HANDS)
def test_one_hand_matches_independent_enumeration(text: str) -> None:
    _assert_matches_reference(parse_cards(text.split()))


@settings(max_examples=15, deadline=None)
@given(st.lists(st.integers(0, 51), min_size=7, max_size=7, unique=True))
def test_random_hands_match_independent_enumeration(cards: list[int]) -> None:
    _assert_matches_reference(cards)


def _assert_matches_reference(cards: list[int]) -> None:
    mine = analyse_hand(cards, HCF)
    reference = reference_counts(cards)
    assert (mine.not_qualifying, mine.wins, mine.ties, mine.losses) == (
        reference.not_qualifying,
        reference.wins,
        reference.ties,
        reference.losses,
    )
    assert (mine.identical_flush, mine.weaker) == (reference.identical_flush, reference.weaker)
    assert (mine.straight_flush_wins, mine.straight_flush_pushes) == (
        reference.straight_flush_wins,
        reference.straight_flush_pushes,
    )
    assert mine.not_qualifying + mine.wins + mine.ties + mine.losses == BANKER_HANDS


def test_cli_json_has_the_issue_shape(capsys: pytest.CaptureFixture[str]) -> None:
    # --no-cache: computed here, never read from (or left in) the user's cache.
    assert main(["math", "--game", "high-card-flush", "--json", "--no-cache", "--quiet"]) == 0
    sheet = json.loads(capsys.readouterr().out)
    assert sheet["game"] == "high-card-flush"
    assert sheet["hands"] == 133_784_560
    assert sheet["flush_length"]["3"] == 78_881_088
    assert sheet["straight_flush_length"]["1"] == 52_438_672
    assert sheet["banker_qualifies"] == pytest.approx(100_825_036 / 133_784_560)
    base = sheet["base_game"]
    assert {"house_edge", "element_of_risk", "decision_frequencies"} <= set(base)
    assert set(sheet["side_bets"]) == {"flush", "straight_flush"}
    assert sheet["side_bets"]["flush"]["paytable"] == {"7": 300, "6": 100, "5": 10, "4": 1}
    assert {"house_edge", "hit_frequency"} <= set(sheet["side_bets"]["flush"])


def test_cli_refuses_bad_paytable_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["math", "--game", "top-flush", "--paytable", 'top_flush_bonus={"9": 5}']) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "--paytable top_flush_bonus" in err
    assert main(["math", "--game", "top-flush", "--paytable", "flush=hcf-flush-house"]) == 2
    assert "has no paytable wager 'flush'" in capsys.readouterr().err


def test_build_request_overrides_a_preset_with_a_custom_table() -> None:
    from controller.commands.math_report import parse_paytable_options

    request = build_request(
        "high-card-flush", "house", parse_paytable_options(['flush={"7": 100, "6": 50, "5": 10, "4": 2}'])
    )
    assert request.paytables["flush"].to_json() == {"7": 100, "6": 50, "5": 10, "4": 2}
    assert request.paytables["straight_flush"].name == "hcf-straight-flush-house"


@settings(max_examples=60, deadline=None)
@given(
    available=st.integers(0, (1 << 13) - 1),
    ranks=st.sets(st.integers(0, 12), min_size=0, max_size=7),
)
def test_count_subsets_below_matches_enumeration(available: int, ranks: set[int]) -> None:
    import numpy as np

    from controller.gamemath.tables import count_subsets_below

    limit = sum(1 << rank for rank in ranks)
    size = len(ranks)
    expected = sum(
        1
        for subset in range(1 << 13)
        if subset & ~available == 0 and subset.bit_count() == size and subset < limit
    )
    got = count_subsets_below(np.array([available]), size, np.array([limit]))
    assert int(got[0]) == expected

"""Chase the Flush's exact engine: river counts against brute force over every dealer hand."""

from __future__ import annotations

import itertools
import json
import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.gamemath import chase_river
from controller.gamemath.chase import (
    DEALER_HANDS,
    _solve_holes,
    class_row,
    hole_classes,
    qualifying_hands,
    river_terms,
    solve_class,
    totals_from_rows,
)
from controller.rules.cards import parse_cards
from controller.rules.hands import evaluate
from controller.rules.paytables import default_paytable

XTRA = default_paytable("chase-the-flush", "house", "xtra_bonus")


def _brute_force(hole: list[int], community: list[int], all_in: int) -> int:
    """The player's result in antes summed over every dealer hand, straight from docs/rules.md."""
    rest = [card for card in range(52) if card not in hole and card not in community]
    player = evaluate(hole + community)
    odds = XTRA.odds_for(player.flush_length)
    xtra = odds if odds is not None else 0  # a win with fewer than 4 cards pushes the X-tra Bonus
    total = 0
    for dealer_cards in itertools.combinations(rest, 3):
        dealer = evaluate(list(dealer_cards) + community)
        if player > dealer:
            total += all_in + xtra + (1 if dealer.qualifies else 0)
        elif player < dealer:
            total -= all_in + 1 + (1 if dealer.qualifies else 0)
    return total


@pytest.mark.parametrize("text", ["Ah Ad Ac", "9s 8s 2s", "Kh Qh 3c"])
def test_river_terms_match_brute_force(text: str) -> None:
    hole = parse_cards(text.split())
    community_sets, slope, base, _ = river_terms((hole[0], hole[1], hole[2]), XTRA.odds_by_length)
    rng = random.Random(text)
    for index in [rng.randrange(len(community_sets)) for _ in range(3)]:
        community = [int(card) for card in community_sets[index]]
        for all_in in (1, 3):
            assert all_in * int(slope[index]) + int(base[index]) == _brute_force(hole, community, all_in)


@settings(max_examples=10, deadline=None)
@given(
    hole=st.lists(st.integers(0, 51), min_size=3, max_size=3, unique=True),
    row=st.integers(0, 211_875),
)
def test_river_terms_of_any_hole_hand_match_brute_force(hole: list[int], row: int) -> None:
    """Any hole hand, not only the classes' representatives: its suits may be any shape, and the empty
    suits (whose patterns are computed once and transposed) anywhere."""
    community_sets, slope, base, _ = river_terms((hole[0], hole[1], hole[2]), XTRA.odds_by_length)
    community = [int(card) for card in community_sets[row]]
    assert not set(community) & set(hole)
    for all_in in (1, 2):
        assert all_in * int(slope[row]) + int(base[row]) == _brute_force(hole, community, all_in)


def test_every_community_set_once_in_each_shape_layout() -> None:
    for sizes in ((1, 1, 1, 0), (0, 2, 0, 1), (0, 0, 3, 0)):
        rows = chase_river.layout(sizes)
        ids = np.sort(rows.quad_ids, axis=1)
        assert len(np.unique(ids, axis=0)) == 211_876
        pairs = {tuple(pair) for pair in rows.pair_ids.tolist()}
        assert len(pairs) == 1176
        # Compact rows stand for every community set; each flop orbit's row sums its 1,081 turn-rivers.
        assert int(rows.compact_weight.sum()) == 211_876
        assert (np.asarray(rows.flop_by_compact.sum(axis=1)).ravel() == 1081).all()
        assert (np.asarray(rows.compact_by_flop.sum(axis=1)).ravel() == 6).all()


def test_a_batch_of_classes_of_each_shape_gives_each_class_its_row() -> None:
    """The classes of a batch share every numpy call (the grids' last axis): each still gets exactly
    its own stored row."""
    classes = hole_classes()
    rows = _rows()
    for shape in ((1, 1, 1, 0), (2, 1, 0, 0), (3, 0, 0, 0)):
        indices = [
            i
            for i, hole in enumerate(classes)
            if chase_river.suit_sizes(chase_river.hole_masks(hole.cards)) == shape
        ][::97][:3]
        results = _solve_holes([classes[i].cards for i in indices], XTRA.odds_by_length)
        assert [class_row(classes[i], result) for i, result in zip(indices, results, strict=True)] == [
            rows[i] for i in indices
        ]


def test_a_batch_must_share_its_suit_shape() -> None:
    with pytest.raises(ValueError, match="as many cards in each suit"):
        chase_river.river_terms([(0, 1, 13), (0, 13, 26)], XTRA.odds_by_length)


def test_hole_classes_cover_every_hole_hand() -> None:
    classes = hole_classes()
    assert len(classes) == 1755
    assert sum(hole.weight for hole in classes) == 22_100


def test_dealer_qualifies_as_in_rules_md() -> None:
    assert qualifying_hands() == 100_825_036
    assert DEALER_HANDS == 14_190


CLASS_ROWS = Path(__file__).parent / "data" / "chase_classes.jsonl"


def _rows() -> list[dict[str, Any]]:
    return [json.loads(line) for line in CLASS_ROWS.read_text().splitlines()]


def test_published_expected_value_per_ante_with_250_20_5_1() -> None:
    """Wizard of Odds, Chase the Flush: EV -0.023907 per ante, average wager 3.564878 (X-tra 250/20/5/1).

    The rows are the engine's exact per-class sums (written by `python -m controller.gamemath.chase
    --write`); the next test recomputes a sample of them, so a wrong engine fails one or the other."""
    rows = _rows()
    assert len(rows) == 1755
    assert sum(row["weight"] for row in rows) == 22_100
    expected_value, average_wager = totals_from_rows(rows)
    assert round(float(expected_value), 6) == -0.023907
    assert round(float(average_wager), 6) == 3.564878


@pytest.mark.parametrize("index", [0, 400, 900, 1754])
def test_class_rows_recompute_exactly(index: int) -> None:
    row = _rows()[index]
    assert solve_class(row["hole"]) == row


def test_solution_bookkeeping_and_strategy_chart_on_a_few_classes() -> None:
    from controller.gamemath.chase import DEALS_PER_HOLE, chase_strategy, solve_chase

    solution = solve_chase(workers=1, only=3)
    rows = _rows()[:3]
    assert solution.class_rows == rows
    assert sum(solution.deals_by_decision.values()) == sum(row["weight"] for row in rows) * DEALS_PER_HOLE
    chart = chase_strategy(solution)
    assert [entry["title"] for entry in chart][-2:] == ["Flop (after a check)", "River (after two checks)"]
    assert any(line.startswith("3-card flush: call") for line in chart[-1]["notes"])

"""docs/rules.md's exact counts over all C(52,7) = 133,784,560 seven-card hands, by combinatorics over the
suit rank sets that the hand tables index (not by dealing 133 million hands).

A 7-card hand is four rank sets, one per suit, whose sizes sum to 7; the suits are independent, so the
hands with suit sizes (c, d, h, s) number N(c) * N(d) * N(h) * N(s), where N(k) counts the k-card rank
sets. The longest flush is the largest size. The banker fails to qualify exactly when every suit's
rank set is below the qualifying strength in the table, so those hands number the same product over
the non-qualifying rank sets of each size.
"""

from __future__ import annotations

import itertools
import math

from controller.rules.hands import QUALIFYING_STRENGTH, RANK_MASKS, SUIT_STRENGTH, evaluate_bits

ALL_HANDS = 133_784_560
BY_LONGEST_FLUSH = {7: 6_864, 6: 267_696, 5: 3_814_668, 4: 26_137_540, 3: 78_881_088, 2: 24_676_704}
QUALIFYING_HANDS = 100_825_036


def rank_sets_by_size() -> tuple[list[int], list[int]]:
    """From the strength table: how many rank sets of each size, and how many of them do not qualify."""
    sets = [0] * 14
    non_qualifying = [0] * 14
    for mask in range(RANK_MASKS):
        strength = SUIT_STRENGTH[mask]
        size = strength >> 13
        sets[size] += 1
        # The table's strength is what evaluate compares; a one-suit hand qualifies like the table says.
        assert evaluate_bits(mask << 13).strength == strength
        if strength < QUALIFYING_STRENGTH:
            non_qualifying[size] += 1
    return sets, non_qualifying


def suit_size_splits(cards: int) -> list[tuple[int, ...]]:
    return [split for split in itertools.product(range(cards + 1), repeat=4) if sum(split) == cards]


def test_the_longest_flush_and_qualification_counts_are_rules_md_s() -> None:
    sets, non_qualifying = rank_sets_by_size()
    assert sets[:8] == [math.comb(13, k) for k in range(8)]
    by_longest: dict[int, int] = {}
    not_qualifying = 0
    for split in suit_size_splits(7):
        hands = math.prod(sets[size] for size in split)
        by_longest[max(split)] = by_longest.get(max(split), 0) + hands
        not_qualifying += math.prod(non_qualifying[size] for size in split)
    assert sum(by_longest.values()) == ALL_HANDS == math.comb(52, 7)
    assert by_longest == BY_LONGEST_FLUSH
    assert ALL_HANDS - not_qualifying == QUALIFYING_HANDS
    assert round(100 * QUALIFYING_HANDS / ALL_HANDS, 4) == 75.3637


def test_non_qualifying_rank_sets_are_the_short_ones_and_the_8_high_threes() -> None:
    _, non_qualifying = rank_sets_by_size()
    # Every 0-, 1- and 2-card set; 3-card sets whose top card is the 8 or lower: C(7, 3) = 35.
    assert non_qualifying[:4] == [1, 13, 78, math.comb(7, 3)]
    assert sum(non_qualifying[4:]) == 0

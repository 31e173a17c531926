"""The designated player's contested straight-flush wager, counted exactly per player hand.

For a player hand with longest run R (``run_length << 4 | top``) and flush X, over the DP's 7 cards
from the other 45: the DP's longest run is below R in every suit exactly when each suit's subset has
a run below R, so "DP run < R" is again a t^7 coefficient of a product of per-suit polynomials, whose
coefficients come from one table: for each rank set A (the ranks left in a suit), each size k and each
threshold, the k-subsets of A with their longest run below the threshold. docs/rules.md also pushes every
bonus wager when the two flushes are identical, so the hands that are both "run below R" and
"identical flush" are counted too and moved to the pushes.
"""

from __future__ import annotations

from functools import cache

import numpy as np

from controller.gamemath.hand_counts import HAND_SIZE
from controller.gamemath.tables import FULL_SUIT, POPCOUNT_NP, RUN_NP, SUITS, IntArray, count_subsets_below

_RUN_KEYS = 8 << 4  # every run key is below this (7 << 4 | 12 = 124)
_MIN_RUN_LENGTH = 3
# The twelve 3-card straight flushes (A-2-3 up to Q-K-A) as rank masks, with their run keys.
_TRIPLES: tuple[tuple[int, int], ...] = tuple(
    (mask, int(RUN_NP[mask]))
    for mask in sorted({(7 << low) & FULL_SUIT for low in range(11)} | {(1 << 12) | 0b11})
)


@cache
def run_below_table() -> IntArray:
    """RUN_BELOW[A, k, r]: the k-subsets (k <= 7) of rank set A whose longest run key is below r."""
    histogram = np.zeros((1 << 13, HAND_SIZE + 1, _RUN_KEYS), dtype=np.int32)
    masks = np.arange(1 << 13)
    small = masks[POPCOUNT_NP <= HAND_SIZE]
    histogram[small, POPCOUNT_NP[small], RUN_NP[small]] = 1
    for bit in range(13):  # sum over subsets, one bit at a time
        with_bit = masks[(masks >> bit) & 1 == 1]
        histogram[with_bit] += histogram[with_bit ^ (1 << bit)]
    below = np.zeros((1 << 13, HAND_SIZE + 1, _RUN_KEYS + 1), dtype=np.int64)
    np.cumsum(histogram, axis=2, out=below[:, :, 1:])
    return below


def _coefficient(polys: list[IntArray], degree: int) -> IntArray:
    """Row-wise t^degree coefficient of the product of polynomials given as (rows, 8) arrays."""
    product = polys[0]
    for poly in polys[1:]:
        out = np.zeros_like(product)
        for d in range(degree + 1):
            for i in range(d + 1):
                out[:, d] += product[:, i] * poly[:, d - i]
        product = out
    return product[:, degree]


def _run_threshold_counts(
    own: list[IntArray], flush_mask: IntArray, length: int, threshold: IntArray
) -> tuple[IntArray, IntArray]:
    """(DP hands with run < threshold, those of them whose flush is identical to the player's)."""
    table = run_below_table()
    polys = [table[FULL_SUIT ^ own[s], :, threshold] for s in range(SUITS)]
    all_below = _coefficient(polys, HAND_SIZE)
    identical_ok = [
        ((flush_mask & own[s]) == 0) & (RUN_NP[flush_mask] < threshold) for s in range(SUITS)
    ]  # suit s can hold exactly the player's flush, and that flush's run is below the threshold
    if length >= 4:
        # The DP's other 7 - L cards cannot reach length L: only one suit can hold the flush.
        identical = np.zeros_like(all_below)
        for s in range(SUITS):
            others = [polys[t] for t in range(SUITS) if t != s]
            identical += np.where(identical_ok[s], _coefficient(others, HAND_SIZE - length), 0)
        return all_below, identical
    # length == 3: every suit holds at most 3 DP cards, a 3-card set at most the player's flush.
    capped = []
    for s in range(SUITS):
        poly = polys[s].copy()
        poly[:, 4:] = 0
        available = FULL_SUIT ^ own[s]
        weaker = _three_card_below(available, flush_mask)
        for triple, key in _TRIPLES:  # remove straight triples whose run is not below the threshold
            weaker -= ((triple & own[s]) == 0) & (triple < flush_mask) & (key >= threshold)
        poly[:, 3] = weaker
        capped.append(poly)
    with_identical = []
    for s in range(SUITS):
        poly = capped[s].copy()
        poly[:, 3] += identical_ok[s]
        with_identical.append(poly)
    identical = _coefficient(with_identical, HAND_SIZE) - _coefficient(capped, HAND_SIZE)
    return all_below, identical


def _three_card_below(available: IntArray, limit: IntArray) -> IntArray:
    return count_subsets_below(available, 3, limit)


def straight_flush_contest(
    own: list[IntArray], flush_mask: IntArray, length: int, identical_flush: IntArray, dp_hands: int
) -> tuple[IntArray, IntArray, IntArray]:
    """Per player hand (suit rank sets ``own``): DP hands where the straight-flush wager (wins, pushes,
    loses). ``identical_flush`` is the number of DP hands with exactly the player's flush."""
    run = np.maximum.reduce([RUN_NP[own[s]] for s in range(SUITS)])
    wins = np.zeros_like(run)
    pushes = identical_flush.copy()
    eligible = (run >> 4) >= _MIN_RUN_LENGTH
    if length >= _MIN_RUN_LENGTH and eligible.any():
        sub_own = [own[s][eligible] for s in range(SUITS)]
        sub_flush = flush_mask[eligible]
        sub_run = run[eligible]
        below, below_identical = _run_threshold_counts(sub_own, sub_flush, length, sub_run)
        at_most, at_most_identical = _run_threshold_counts(sub_own, sub_flush, length, sub_run + 1)
        wins[eligible] = below - below_identical
        pushes[eligible] = (
            (at_most - below) + identical_flush[eligible] - (at_most_identical - below_identical)
        )
    return wins, pushes, dp_hands - wins - pushes

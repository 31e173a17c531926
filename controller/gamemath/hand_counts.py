"""Exact counts over all C(52,7) seven-card hands: longest flush and longest straight-flush run.

A hand is four rank sets, one per suit, whose sizes add up to 7. The number of hands whose every suit
satisfies a per-suit condition is the coefficient of t^7 in the product over the suits of
``sum_k #{rank sets of size k satisfying it} t^k``; "longest flush <= n" and "longest run <= n" are
such conditions, and differences give the exact counts of each length.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from math import comb

from controller.rules.hands import POPCOUNT, STRAIGHT_FLUSH_RUN

HAND_SIZE = 7
DECK_HANDS = comb(52, HAND_SIZE)  # 133,784,560


def poly_product_coefficient(polys: Sequence[Sequence[int]], degree: int) -> int:
    """The coefficient of t^degree in the product of integer polynomials (lowest degree first)."""
    product = [1]
    for poly in polys:
        out = [0] * min(len(product) + len(poly) - 1, degree + 1)
        for i, a in enumerate(product):
            if a == 0:
                continue
            for j, b in enumerate(poly):
                if i + j > degree:
                    break
                out[i + j] += a * b
        product = out
    return product[degree] if degree < len(product) else 0


def _counts_by_longest(size_limited: Sequence[Sequence[int]]) -> dict[int, int]:
    """Hands by the largest n with the property, from per-suit polynomials "property <= n"."""
    at_most = [poly_product_coefficient([poly] * 4, HAND_SIZE) for poly in size_limited]
    return {n: at_most[n] - (at_most[n - 1] if n else 0) for n in range(len(at_most)) if at_most[n]}


@cache
def flush_length_counts() -> dict[int, int]:
    """{longest flush length: number of 7-card hands} over all C(52,7) hands (docs/rules.md's table)."""
    polys = [[comb(13, k) if k <= n else 0 for k in range(HAND_SIZE + 1)] for n in range(HAND_SIZE + 1)]
    counts = _counts_by_longest(polys)
    assert sum(counts.values()) == DECK_HANDS
    return counts


@cache
def straight_flush_length_counts() -> dict[int, int]:
    """{longest straight-flush run length: number of 7-card hands} over all C(52,7) hands."""
    by_size_and_run = [[0] * (HAND_SIZE + 1) for _ in range(HAND_SIZE + 1)]
    for mask in range(1 << 13):
        size = POPCOUNT[mask]
        if size <= HAND_SIZE:
            by_size_and_run[size][STRAIGHT_FLUSH_RUN[mask] >> 4] += 1
    polys = [[sum(by_size_and_run[k][: n + 1]) for k in range(HAND_SIZE + 1)] for n in range(HAND_SIZE + 1)]
    counts = _counts_by_longest(polys)
    assert sum(counts.values()) == DECK_HANDS
    return counts

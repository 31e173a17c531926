"""Small exact tables shared by the par-sheet engines: binomials and per-suit rank-set facts as numpy arrays.

A suit's rank set is a 13-bit mask (bit r = rank index r, 2 = 0 .. A = 12), as in controller.rules.hands.
"""

from __future__ import annotations

from functools import cache
from math import comb

import numpy as np
import numpy.typing as npt

from controller.rules.hands import POPCOUNT, STRAIGHT_FLUSH_RUN, SUIT_STRENGTH

IntArray = npt.NDArray[np.int64]

RANKS_PER_SUIT = 13
SUITS = 4
FULL_SUIT = (1 << RANKS_PER_SUIT) - 1
MAX_N = 53

BINOMIAL: IntArray = np.array([[comb(n, k) for k in range(MAX_N)] for n in range(MAX_N)], dtype=np.int64)
"""BINOMIAL[n, k] = C(n, k) for 0 <= n, k <= 52 (0 when k > n)."""

POPCOUNT_NP: IntArray = np.array(POPCOUNT, dtype=np.int64)
SUIT_STRENGTH_NP: IntArray = np.array(SUIT_STRENGTH, dtype=np.int64)
RUN_NP: IntArray = np.array(STRAIGHT_FLUSH_RUN, dtype=np.int64)
"""``run_length << 4 | top_rank`` of each rank set (0 for the empty set)."""


@cache
def masks_of_size(size: int) -> IntArray:
    """Every 13-bit rank set with ``size`` ranks, ascending (so index order is strength order)."""
    masks = np.flatnonzero(size == POPCOUNT_NP).astype(np.int64)
    masks.setflags(write=False)
    return masks


def count_subsets_below(available: IntArray, size: int, limit: IntArray) -> IntArray:
    """For each row: how many ``size``-subsets b of rank set ``available[i]`` have mask b < ``limit[i]``.

    Masks of one size compare like flushes (highest rank first), so this counts the flushes of that
    length, inside the available ranks, that are weaker than ``limit``. Walk the bits of ``limit``
    from the top: a smaller b agrees with ``limit`` above some bit r where ``limit`` has a 1 and b a 0,
    and takes its remaining ranks freely from the available ranks below r.
    """
    available = np.asarray(available, dtype=np.int64)
    limit = np.asarray(limit, dtype=np.int64)
    total = np.zeros(np.broadcast(available, limit).shape, dtype=np.int64)
    prefix_available = np.ones_like(total, dtype=bool)
    for bit in range(RANKS_PER_SUIT - 1, -1, -1):
        limit_has_bit = ((limit >> bit) & 1).astype(bool)
        still_needed = size - POPCOUNT_NP[limit >> (bit + 1)]
        free_below = POPCOUNT_NP[available & ((1 << bit) - 1)]
        ways = BINOMIAL[free_below, np.clip(still_needed, 0, MAX_N - 1)]
        ways = np.where(still_needed >= 0, ways, 0)
        total += np.where(limit_has_bit & prefix_available, ways, 0)
        prefix_available &= ~limit_has_bit | ((available >> bit) & 1).astype(bool)
    return total

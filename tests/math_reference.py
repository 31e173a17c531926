"""An independent, slow reference for one player hand's counts against every banker hand.

It shares nothing with controller.gamemath but the hand tables: it enumerates every subset of each
suit's remaining ranks, classifies it against the player's hand, and combines the four suits by a plain
convolution over (cards used, comparison with the flush, comparison with the run, qualifies).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from controller.rules.hands import POPCOUNT, QUALIFYING_STRENGTH, STRAIGHT_FLUSH_RUN, SUIT_STRENGTH

FULL = (1 << 13) - 1


@dataclass(frozen=True)
class ReferenceCounts:
    not_qualifying: int
    wins: int
    ties: int
    losses: int
    identical_flush: int
    weaker: int
    straight_flush_wins: int
    straight_flush_pushes: int


def _cmp(a: int, b: int) -> int:
    return 0 if a < b else (1 if a == b else 2)


def reference_counts(cards: list[int]) -> ReferenceCounts:
    own = [0, 0, 0, 0]
    for card in cards:
        own[card // 13] |= 1 << (card % 13)
    strength = max(SUIT_STRENGTH[m] for m in own)
    run = max(STRAIGHT_FLUSH_RUN[m] for m in own)
    states: Counter[tuple[int, int, int, bool]] = Counter({(0, 0, 0, False): 1})
    for s in range(4):
        available = FULL ^ own[s]
        per_suit: Counter[tuple[int, int, int, bool]] = Counter()
        subset = available
        while True:  # every subset of the available ranks
            size = POPCOUNT[subset]
            if size <= 7:
                per_suit[
                    (
                        size,
                        _cmp(SUIT_STRENGTH[subset], strength) if subset else 0,
                        _cmp(STRAIGHT_FLUSH_RUN[subset], run),
                        SUIT_STRENGTH[subset] >= QUALIFYING_STRENGTH,
                    )
                ] += 1
            if subset == 0:
                break
            subset = (subset - 1) & available
        combined: Counter[tuple[int, int, int, bool]] = Counter()
        for (k1, x1, r1, q1), n1 in states.items():
            for (k2, x2, r2, q2), n2 in per_suit.items():
                if k1 + k2 <= 7:
                    combined[(k1 + k2, max(x1, x2), max(r1, r2), q1 or q2)] += n1 * n2
        states = combined
    final = {key: n for key, n in states.items() if key[0] == 7}
    total = sum(final.values())
    not_qualifying = sum(n for (_, _, _, q), n in final.items() if not q)
    wins = sum(n for (_, x, _, q), n in final.items() if q and x == 0)
    ties = sum(n for (_, x, _, q), n in final.items() if q and x == 1)
    identical = sum(n for (_, x, _, _), n in final.items() if x == 1)
    weaker = sum(n for (_, x, _, _), n in final.items() if x == 0)
    if run >> 4 >= 3:
        sf_wins = sum(n for (_, x, r, _), n in final.items() if r == 0 and x != 1)
        sf_pushes = sum(n for (_, x, r, _), n in final.items() if r == 1 or x == 1)
    else:
        sf_wins = 0
        sf_pushes = identical
    return ReferenceCounts(
        not_qualifying=not_qualifying,
        wins=wins,
        ties=ties,
        losses=total - not_qualifying - wins - ties,
        identical_flush=identical,
        weaker=weaker,
        straight_flush_wins=sf_wins,
        straight_flush_pushes=sf_pushes,
    )

"""The straight-flush run table (built at import by bit passes) against the obvious per-rank walk."""

from __future__ import annotations

from controller.rules.cards import RANKS, RANKS_PER_SUIT
from controller.rules.hands import RANK_MASKS, STRAIGHT_FLUSH_RUN

_ACE = RANKS.index("A")


def _walk(mask: int) -> int:
    """``run_length << 4 | top_rank``: walk the ranks ace-low to ace-high, keep the longest run (the
    highest of equal ones)."""
    if mask == 0:
        return 0
    ranks_low_to_high = [_ACE, *range(RANKS_PER_SUIT)]  # the ace plays low too
    best = run = 0
    for rank in ranks_low_to_high:
        if mask >> rank & 1:
            run += 1
            best = max(best, run << 4 | rank)
        else:
            run = 0
    return best


def test_every_rank_set_has_the_walked_run() -> None:
    assert len(STRAIGHT_FLUSH_RUN) == RANK_MASKS
    assert all(STRAIGHT_FLUSH_RUN[mask] == _walk(mask) for mask in range(RANK_MASKS))

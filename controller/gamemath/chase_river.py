"""Chase the Flush's river counts for one hole hand, board suit pattern by board suit pattern.

For a hole hand H (rank sets h_s per suit) and a community set C (rank sets c_s), the dealer's three
cards D come from the other 45. The dealer is weaker than the player's strength X (length L, mask M)
when every suit is: per suit s the dealer's k cards d_s leave c_s | d_s shorter than L, or of length L
and below M. So the number of weaker dealer hands is the t^3 coefficient of

    prod_s ( sum_{k < k0_s} C(f_s, k) t^k  +  BX_s t^k0_s ),   k0_s = L - |c_s|, f_s = 13 - |h_s| - |c_s|

with BX_s the k0_s-subsets d of the suit's free ranks with c_s | d below M (nothing when k0_s > 3).
Everything here but BX_s is fixed by the board's *suit pattern* (|c_0|, .., |c_3|), of which there are
35: within one pattern f_s and the player's suit lengths |h_s| + |c_s| are constants, so L is too, and
so is the suit t that can hold the player's flush (up to a few candidates of equal length). Expanding
the product then gives a short sum over suit sets S,

    weaker = sum_S coef_S * prod_{s in S} BX_s      (coef_S a plain integer per pattern),

and BX_s depends only on (c_s, c_t): a small table per suit pair, not per board. A pattern's boards
are the product of each suit's rank-set choices, so the whole pattern is one numpy grid with one axis
per suit, and every term above is a broadcast of a table of one or two axes. The non-qualifying count
(dealer below a 9-high 3-card flush) and "not stronger" (weaker plus the identical flushes) are the
same sum with other per-suit terms. The engine this replaced evaluated every board's four suit
polynomials row by row (docs/math.md, "Chase the Flush, three streets"); the figures are the same to
the last digit (tests/test_chase_math.py, bench/bench_chase.py).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache, lru_cache
from math import comb

import numpy as np
import scipy.sparse as sp

from controller.gamemath.tables import BINOMIAL, POPCOUNT_NP, SUIT_STRENGTH_NP, IntArray, masks_of_size
from controller.rules.hands import QUALIFYING_STRENGTH

HOLE = 3
BOARD = 4
SUIT_COUNT = 4
OTHER_CARDS = 49  # the cards left after the hole hand
_DEALER_CARDS = 3
_LOW_SEVEN = (1 << 7) - 1  # ranks 2..8: a 3-card flush of these does not qualify
_TOP_RANK = np.array([max(mask.bit_length() - 1, 0) for mask in range(1 << 13)], dtype=np.int64)
_SUIT_PATTERNS = tuple(
    pattern for pattern in itertools.product(range(BOARD + 1), repeat=SUIT_COUNT) if sum(pattern) == BOARD
)  # 35 ways to spread the 4 community cards over the suits


@cache
def superset_table() -> tuple[IntArray, IntArray]:
    """Every (c, d): c a rank set of at most 4 community ranks, d at most 3 further ranks (the dealer's),
    as sorted keys ``(c * 4 + |d|) << 13 | (c | d)``, with d beside each key. For one suit, the dealer
    subsets d with (d | c) below a flush M are the keys of segment (c, |d|) below ``... | M``."""
    small = np.flatnonzero(POPCOUNT_NP <= BOARD)
    extras = np.flatnonzero(POPCOUNT_NP <= _DEALER_CARDS)
    c = np.repeat(small, len(extras))
    d = np.tile(extras, len(small))
    keep = (c & d) == 0
    c, d = c[keep], d[keep]
    keys = ((c * 4 + POPCOUNT_NP[d]) << 13) | (c | d)
    order = np.argsort(keys, kind="stable")
    return keys[order], d[order]


@lru_cache(maxsize=32)
def _keys_avoiding(hole_mask: int) -> IntArray:
    """The superset table's keys whose dealer ranks avoid the hole ranks (consecutive hole-hand
    classes share most of their suits' hole ranks, and most suits hold none)."""
    keys, extra = superset_table()
    return keys if hole_mask == 0 else keys[(extra & hole_mask) == 0]


@dataclass(frozen=True)
class FlopIncidence:
    """The 4-card community sets of 49 positions in colex order (index = sum_i C(p_i, i + 1) over the
    sorted positions), the 2-card flops likewise, and which flops each community set contains."""

    quads: IntArray  # (211876, 4) positions, row = colex index
    pairs: IntArray  # (1176, 2) positions, row = colex index
    flop_by_quad: sp.csr_matrix  # (1176, 211876): 1 where the flop is part of the community set
    quad_by_flop: sp.csr_matrix  # its transpose


@cache
def flop_incidence() -> FlopIncidence:
    quads = np.array(list(itertools.combinations(range(OTHER_CARDS), BOARD)), dtype=np.int64)
    quads = quads[np.argsort(_colex(quads), kind="stable")]
    pairs = np.array(list(itertools.combinations(range(OTHER_CARDS), 2)), dtype=np.int64)
    pairs = pairs[np.argsort(_colex(pairs), kind="stable")]
    flop_rows = np.concatenate([_colex(quads[:, [a, b]]) for a, b in itertools.combinations(range(BOARD), 2)])
    quad_cols = np.tile(np.arange(len(quads), dtype=np.int64), 6)
    ones = np.ones(len(flop_rows), dtype=np.int64)
    by_quad = sp.csr_matrix((ones, (flop_rows, quad_cols)), shape=(len(pairs), len(quads)))
    return FlopIncidence(quads, pairs, by_quad, by_quad.T.tocsr())


def _colex(positions: IntArray) -> IntArray:
    """Colex index of each row of ascending positions."""
    return sum(BINOMIAL[positions[:, i], i + 1] for i in range(positions.shape[1]))  # type: ignore[return-value]


@dataclass(frozen=True)
class RiverTerms:
    """Per community set (rows: colex order of flop_incidence().quads) and hole hand (columns): going
    all in for a antes returns ``a * slope + base`` antes summed over the dealer's 14,190 hands;
    ``flush_key`` is the player's 7-card flush as length << 4 | top rank."""

    slope: IntArray
    base: IntArray
    flush_key: IntArray


_BATCH_SHIFT = 28  # the superset table's keys are below 2**28: a hole hand's own keys sit above b << 28


@dataclass(frozen=True)
class _Suit:
    """One suit's community rank-set choices of one size, per hole hand of the batch (rows)."""

    masks: IntArray  # the community ranks c in this suit
    player: IntArray  # strength of the player's rank set c | h
    below_q: IntArray  # dealer's (3 - |c|)-subsets keeping this suit below a 9-high 3-card flush
    position_terms: IntArray  # this suit's share of the colex index, at the pattern's offset


def hole_masks(cards: tuple[int, ...]) -> tuple[int, int, int, int]:
    masks = [0, 0, 0, 0]
    for card in cards:
        masks[card // 13] |= 1 << (card % 13)
    return masks[0], masks[1], masks[2], masks[3]


def river_terms(holes: Sequence[tuple[int, int, int]], xtra_lines: tuple[tuple[int, int], ...]) -> RiverTerms:
    """The river's two integers and the player's flush for every community set of each hole hand.

    The hole hands are computed together (one more grid axis), so each numpy call serves all of them;
    they must have as many cards in each suit (every hole-hand class of one shape does)."""
    batch = len(holes)
    hole = [hole_masks(cards) for cards in holes]
    sizes = [int(POPCOUNT_NP[h]) for h in hole[0]]
    if any([int(POPCOUNT_NP[h]) for h in masks] != sizes for masks in hole):
        raise ValueError("hole hands of one batch must have as many cards in each suit")
    # The dealer cannot hold the player's hole ranks: per suit, each hole hand's keys avoid them.
    suit_keys = [
        np.concatenate([_keys_avoiding(hole[b][s]) | (b << _BATCH_SHIFT) for b in range(batch)])
        for s in range(SUIT_COUNT)
    ]
    # Position of each card among the 49 the hole hand leaves (hole cards' entries are never used).
    position = np.stack(
        [np.arange(52, dtype=np.int64) - np.searchsorted(np.array(sorted(cards)), np.arange(52)) for cards in holes]
    )
    quad_count = comb(OTHER_CARDS, BOARD)
    slope = np.empty(quad_count * batch, dtype=np.int64)
    base = np.empty(quad_count * batch, dtype=np.int64)
    flush_key = np.empty(quad_count * batch, dtype=np.int64)
    xtra_by_length = [0] * 8
    for length in range(8):
        for line, odds in xtra_lines:  # the first line reached pays (longest line first)
            if length >= line:
                xtra_by_length[length] = odds
                break
    batch_axis = np.arange(batch, dtype=np.int64).reshape(batch, 1, 1, 1, 1)
    for pattern in _SUIT_PATTERNS:
        offsets = [sum(pattern[:s]) for s in range(SUIT_COUNT)]
        suits = [_suit(hole, s, pattern[s], offsets[s], position) for s in range(SUIT_COUNT)]
        # Rows of the (community set, hole hand) table: colex index * batch + hole hand.
        index = _outer_sum([suit.position_terms for suit in suits]) * batch + batch_axis
        grid_slope, grid_base, grid_key = _pattern_grid(pattern, hole, sizes, suits, suit_keys, xtra_by_length)
        slope[index] = grid_slope
        base[index] = grid_base
        flush_key[index] = grid_key
    shape = (quad_count, batch)
    return RiverTerms(slope.reshape(shape), base.reshape(shape), flush_key.reshape(shape))


@cache
def _suit_choices(hole_mask: int, size: int) -> tuple[IntArray, IntArray, IntArray, IntArray]:
    """A suit's community rank sets c of one size beside the hole ranks (shared by every hole hand
    with these hole ranks in a suit): c, the ranks of c ascending (one column per card), the player's
    strength in the suit (c | h), and the dealer's (3 - |c|)-subsets below a 9-high 3-card flush."""
    masks = masks_of_size(size)
    masks = masks[(masks & hole_mask) == 0]
    ranks = np.array([[r for r in range(13) if m >> r & 1] for m in masks.tolist()], dtype=np.int64)
    ranks = ranks.reshape(len(masks), size)
    player = SUIT_STRENGTH_NP[masks | hole_mask]
    low_free = POPCOUNT_NP[~(masks | hole_mask) & _LOW_SEVEN]
    below_q = np.where((masks & ~_LOW_SEVEN) == 0, BINOMIAL[low_free, max(3 - size, 0)], 0)
    for array in (masks, ranks, player, below_q):
        array.setflags(write=False)
    return masks, ranks, player, below_q


def _suit(hole: list[tuple[int, int, int, int]], suit: int, size: int, offset: int, position: IntArray) -> _Suit:
    choices = [_suit_choices(masks[suit], size) for masks in hole]
    masks, ranks, player, below_q = (np.stack([choice[i] for choice in choices]) for i in range(4))
    batch, count = masks.shape
    cards = np.take_along_axis(position, (suit * 13 + ranks).reshape(batch, -1), axis=1)
    cards = cards.reshape(batch, count, size)  # positions among the 49, ascending
    terms = np.zeros((batch, count), dtype=np.int64)
    for i in range(size):
        terms += BINOMIAL[cards[:, :, i], offset + i + 1]
    return _Suit(masks, player, below_q, terms)


def _axis(values: IntArray, suit: int) -> IntArray:
    """A one-suit table (hole hand, choice) as a grid of that suit's axis."""
    shape = [values.shape[0]] + [1] * SUIT_COUNT
    shape[1 + suit] = values.shape[1]
    return values.reshape(shape)


def _pair_axes(values: IntArray, first: int, second: int) -> IntArray:
    """A table (hole hand, choice of suit ``first``, choice of suit ``second``) as a grid."""
    if first > second:
        values = values.transpose(0, 2, 1)
        first, second = second, first
    shape = [values.shape[0]] + [1] * SUIT_COUNT
    shape[1 + first] = values.shape[1]
    shape[1 + second] = values.shape[2]
    return values.reshape(shape)


def _outer_sum(per_suit: list[IntArray]) -> IntArray:
    total = _axis(per_suit[0], 0)
    for s in range(1, SUIT_COUNT):
        total = total + _axis(per_suit[s], s)
    return total


def _truncated(free: int, below: int) -> list[int]:
    """sum_{k < below} C(free, k) t^k, as coefficients of t^0..t^3."""
    return [comb(free, k) if k < below else 0 for k in range(_DEALER_CARDS + 1)]


def _coefficient(polys: list[list[int]], degree: int) -> int:
    """The t^degree coefficient of a product of polynomials of degree at most 3."""
    product = [1, 0, 0, 0]
    for poly in polys:
        product = [sum(product[i] * poly[k - i] for i in range(k + 1)) for k in range(_DEALER_CARDS + 1)]
    return product[degree]


def _expanded_sum(
    free: list[int], first_special: list[int], special: dict[int, IntArray], shape: tuple[int, ...]
) -> IntArray:
    """[t^3] prod_s (sum_{k < e_s} C(f_s, k) t^k + special_s t^e_s) as a grid, expanded over the suit
    sets S that take their special term: sum_S coef_S * prod_{s in S} special_s. ``special`` holds the
    suits whose special term can be reached (e_s <= 3), each as a grid-shaped array."""
    total = np.zeros(shape, dtype=np.int64)
    for chosen, coef in _expansion(tuple(free), tuple(first_special), tuple(sorted(special))):
        term: IntArray | int = coef
        for s in chosen:
            term = term * special[s]
        total += term
    return total


@cache
def _expansion(
    free: tuple[int, ...], first_special: tuple[int, ...], suits: tuple[int, ...]
) -> tuple[tuple[tuple[int, ...], int], ...]:
    """The non-zero (S, coef_S) of ``_expanded_sum``: fixed by the pattern and the hole's suit sizes."""
    terms = []
    for count in range(len(suits) + 1):
        for chosen in itertools.combinations(suits, count):
            degree = _DEALER_CARDS - sum(first_special[s] for s in chosen)
            if degree < 0:
                continue
            rest = [_truncated(free[s], first_special[s]) for s in range(SUIT_COUNT) if s not in chosen]
            coef = _coefficient(rest, degree)
            if coef != 0:
                terms.append((chosen, coef))
    return tuple(terms)


def _pattern_grid(
    pattern: tuple[int, ...],
    hole: list[tuple[int, int, int, int]],
    hole_sizes: list[int],
    suits: list[_Suit],
    suit_keys: list[IntArray],
    xtra_by_length: list[int],
) -> tuple[IntArray, IntArray, IntArray]:
    """slope, base and flush key over one pattern's grid (hole hand, then one axis per suit's choice)."""
    batch = len(hole)
    shape = (batch, *(suit.masks.shape[1] for suit in suits))
    free = [13 - hole_sizes[s] - pattern[s] for s in range(SUIT_COUNT)]
    lengths = [hole_sizes[s] + pattern[s] for s in range(SUIT_COUNT)]
    length = max(lengths)
    first_special = [length - pattern[s] for s in range(SUIT_COUNT)]
    batch_keys = (np.arange(batch, dtype=np.int64) << _BATCH_SHIFT).reshape(batch, 1, 1)

    # Not qualifying: every suit of the dealer below a 9-high 3-card flush.
    if all(size <= _DEALER_CARDS for size in pattern):
        not_qualifying = _expanded_sum(
            free,
            [_DEALER_CARDS - size for size in pattern],
            {s: _axis(suits[s].below_q, s) for s in range(SUIT_COUNT)},
            shape,
        )
    else:
        not_qualifying = np.zeros(shape, dtype=np.int64)  # 4 community cards of a suit: a 4-card flush

    strength: IntArray | None = None
    weaker: IntArray | None = None
    not_stronger: IntArray | None = None
    for t in (s for s in range(SUIT_COUNT) if lengths[s] == length):
        own = suits[t]
        flush = own.player & ((1 << 13) - 1)  # M: the player's rank set in suit t
        below: dict[int, IntArray] = {}
        at_most: dict[int, IntArray] = {}
        for s in range(SUIT_COUNT):
            extra = first_special[s]
            if extra > _DEALER_CARDS:
                continue
            keys = suit_keys[s]
            if s == t:
                segment = ((own.masks * 4 + extra) << 13) | batch_keys[:, :, 0]
                count = np.searchsorted(keys, segment | flush) - np.searchsorted(keys, segment)
                below[s] = _axis(count, s)
                at_most[s] = below[s] + (1 if hole_sizes[t] == 0 else 0)
            else:
                other = suits[s].masks[:, :, None]
                segment = ((other * 4 + extra) << 13) | batch_keys
                count = np.searchsorted(keys, segment | flush[:, None, :]) - np.searchsorted(keys, segment)
                hole_ranks = np.array([masks[s] for masks in hole], dtype=np.int64).reshape(batch, 1, 1)
                identical = ((other & ~flush[:, None, :]) == 0) & ((flush[:, None, :] & hole_ranks) == 0)
                below[s] = _pair_axes(count, s, t)
                at_most[s] = _pair_axes(count + identical, s, t)
        weaker_t = _expanded_sum(free, first_special, below, shape)
        not_stronger_t = _expanded_sum(free, first_special, at_most, shape)
        strength_t = np.broadcast_to(_axis(own.player, t), shape)
        if strength is None or weaker is None or not_stronger is None:
            strength, weaker, not_stronger = strength_t, weaker_t, not_stronger_t
        else:
            # The player's flush is in whichever candidate suit is strongest (equal ones agree).
            stronger = strength_t > strength
            strength = np.where(stronger, strength_t, strength)
            weaker = np.where(stronger, weaker_t, weaker)
            not_stronger = np.where(stronger, not_stronger_t, not_stronger)
    assert strength is not None and weaker is not None and not_stronger is not None
    ties = not_stronger - weaker
    dealer_hands = comb(45, _DEALER_CARDS)
    qualifies = strength >= QUALIFYING_STRENGTH
    wins_q = np.where(qualifies, weaker - not_qualifying, 0)
    ties_q = np.where(qualifies, ties, 0)
    wins_n = np.where(qualifies, not_qualifying, weaker)
    ties_n = np.where(qualifies, 0, ties)
    losses_q = dealer_hands - not_qualifying - wins_q - ties_q
    losses_n = not_qualifying - wins_n - ties_n
    wins = wins_q + wins_n
    slope = wins - losses_q - losses_n  # per ante of all-in
    base = wins_q + xtra_by_length[length] * wins - 2 * losses_q - losses_n
    key = (length << 4) | _TOP_RANK[strength & ((1 << 13) - 1)]
    return slope, base, key

"""Chase the Flush's river counts for hole hands of one suit shape, board suit pattern by pattern.

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
the last digit (tests/test_chase_math.py, `python bench/bench_math.py --chase-vs-head`).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cache, lru_cache
from math import comb
from typing import Any

import numpy as np
import numpy.typing as npt
import scipy.sparse as sp

from controller.gamemath.tables import BINOMIAL, POPCOUNT_NP, SUIT_STRENGTH_NP, masks_of_size
from controller.rules.hands import QUALIFYING_STRENGTH

Grid = npt.NDArray[Any]  # integer (or exactly-integer float) arrays of the grids and their tables
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
def superset_table() -> tuple[Grid, Grid]:
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


@lru_cache(maxsize=64)
def _keys_avoiding(hole_mask: int) -> tuple[Grid, Grid]:
    """The superset table's keys whose dealer ranks avoid the hole ranks, and where each segment
    ``c * 4 + |d|`` starts among them. Cached: a batch's 16 classes hold up to 48 hole rank sets, and
    consecutive batches share many; int32 (the keys are below 2**28) halves the cache's memory."""
    keys, extra = superset_table()
    if hole_mask != 0:
        keys = keys[(extra & hole_mask) == 0]
    starts = np.searchsorted(keys, np.arange(1 << 15, dtype=np.int64) << 13).astype(np.int32)
    return keys.astype(np.int32), starts


@dataclass(frozen=True)
class Layout:
    """The community sets of every hole hand with given suit sizes, in one fixed order.

    A suit's free ranks (those not in the hole hand) are numbered 0.. in rank order, and a community
    set is named by each suit's subset of those numbers. In these names the sets, their grids and which
    flops each contains are the same for every hole hand of the shape: the rows are the 35 suit patterns'
    grids one after another (each suit's subsets ascending, which is also the order of the real rank
    sets), and the river's values are written row by row with no reordering."""

    sizes: tuple[int, int, int, int]  # hole cards per suit
    pattern_rows: tuple[tuple[tuple[int, ...], int, int], ...]  # (pattern, first row, rows)
    quad_ids: Grid  # (211876, 4): each row's cards as ids 0..48 (suit by suit, free ranks in order)
    pair_ids: Grid  # (1176, 2): each flop's cards as ids, in colex order (the flops' numbers)
    # Suits without hole cards are alike for every hole hand of the shape, so the river is computed
    # only on the "compact" rows: the grids of one pattern per orbit under renaming those suits
    # (``orbits``: canonical pattern, first compact row, rows, and the patterns it stands for with the
    # axis order that turns its grid into theirs). A compact row stands for ``compact_weight`` rows.
    orbits: tuple[tuple[tuple[int, ...], int, int, tuple[tuple[tuple[int, ...], tuple[int, ...]], ...]], ...]
    compact_weight: Grid  # (compact rows,) float64
    # Flops likewise: one per orbit (``flop_orbit``: each flop's row of ``flop_by_compact``), whose sums
    # over the compact rows count each compact row as often as its images hold the flop.
    flop_orbit: Grid  # (1176,)
    flop_by_compact: sp.csr_matrix  # (flop orbits, compact rows) float64
    compact_by_flop: sp.csr_matrix  # (compact rows, 1176) float32: 1 where the flop is in the set

    def cards(self, hole: tuple[int, int, int, int]) -> Grid:
        """Card (suit * 13 + rank) of each id, for one hole hand of this shape."""
        return np.array(
            [
                suit * 13 + rank
                for suit in range(SUIT_COUNT)
                for rank in range(13)
                if not hole[suit] >> rank & 1
            ],
            dtype=np.int64,
        )


@cache
def layout(sizes: tuple[int, int, int, int]) -> Layout:
    """The layout of the hole hands with ``sizes`` cards per suit (built once per process and shape)."""
    free = [13 - size for size in sizes]
    first_id = [sum(free[:s]) for s in range(SUIT_COUNT)]
    blocks = []
    pattern_rows = []
    grid_shapes: dict[tuple[int, ...], tuple[int, ...]] = {}
    row = 0
    for pattern in _SUIT_PATTERNS:
        per_suit = [_subsets(free[s], pattern[s]) + first_id[s] for s in range(SUIT_COUNT)]
        grid_shapes[pattern] = tuple(len(ids) for ids in per_suit)
        grid = np.indices(grid_shapes[pattern]).reshape(SUIT_COUNT, -1)
        block = np.concatenate([per_suit[s][grid[s]] for s in range(SUIT_COUNT)], axis=1)
        blocks.append(block)
        pattern_rows.append((pattern, row, len(block)))
        row += len(block)
    quads = np.concatenate(blocks)  # ascending within a row: suits in order, ranks ascending
    pairs = np.array(list(itertools.combinations(range(OTHER_CARDS), 2)), dtype=np.int64)
    pairs = pairs[np.argsort(_colex(pairs), kind="stable")]
    empty = [s for s in range(SUIT_COUNT) if sizes[s] == 0]
    members: dict[tuple[int, ...], list[tuple[tuple[int, ...], tuple[int, ...]]]] = {}
    for pattern in _SUIT_PATTERNS:
        canonical, axes = _canonical(pattern, empty)
        members.setdefault(canonical, []).append((pattern, axes))
    first_row = {pattern: first for pattern, first, _ in pattern_rows}
    orbits = []
    weights = []
    compact_blocks = []
    image_flops = []
    image_cols = []
    compact_first = 0
    for canonical, images in members.items():
        shape = grid_shapes[canonical]
        count = int(np.prod(shape))
        orbits.append((canonical, compact_first, count, tuple(images)))
        weights.append(np.full(count, len(images), dtype=np.float64))
        compact_blocks.append(quads[first_row[canonical] : first_row[canonical] + count])
        for pattern, axes in images:
            # Row k of the image's grid is compact row ``source[k]`` (the grid transposed by ``axes``).
            source = compact_first + np.arange(count).reshape(shape).transpose(axes).ravel()
            image = quads[first_row[pattern] : first_row[pattern] + count]
            for a, b in itertools.combinations(range(BOARD), 2):
                image_flops.append(_colex(image[:, [a, b]]))
                image_cols.append(source)
        compact_first += count
    compact_quads = np.concatenate(compact_blocks)
    flops = np.concatenate(image_flops)
    by_compact = sp.csr_matrix(
        (np.ones(len(flops)), (flops, np.concatenate(image_cols))), shape=(len(pairs), compact_first)
    )
    flop_orbit, representatives = _flop_orbits(pairs, empty, first_id)
    compact_flops = np.concatenate(
        [_colex(compact_quads[:, [a, b]]) for a, b in itertools.combinations(range(BOARD), 2)]
    )
    compact_by_flop = sp.csr_matrix(
        (
            np.ones(len(compact_flops), dtype=np.float32),  # counts of at most 6 flops: exact
            (np.tile(np.arange(compact_first), 6), compact_flops),
        ),
        shape=(compact_first, len(pairs)),
    )
    return Layout(
        sizes=(sizes[0], sizes[1], sizes[2], sizes[3]),
        pattern_rows=tuple(pattern_rows),
        quad_ids=quads,
        pair_ids=pairs,
        orbits=tuple(orbits),
        compact_weight=np.concatenate(weights),
        flop_orbit=flop_orbit,
        flop_by_compact=by_compact[representatives].tocsr(),
        compact_by_flop=compact_by_flop,
    )


def _flop_orbits(pairs: Grid, empty: list[int], first_id: list[int]) -> tuple[Grid, Grid]:
    """Each flop's orbit (0..) under renaming the suits without hole cards, and one flop per orbit."""
    suit_of_id = np.repeat(np.arange(SUIT_COUNT), np.diff([*first_id, OTHER_CARDS]))
    least = np.full(len(pairs), len(pairs), dtype=np.int64)
    for permutation in itertools.permutations(empty):
        rename = dict(zip(empty, permutation, strict=True))
        target = np.array([first_id[rename.get(s, s)] - first_id[s] for s in range(SUIT_COUNT)])
        renamed = np.sort(pairs + target[suit_of_id[pairs]], axis=1)
        least = np.minimum(least, _colex(renamed))
    representatives, flop_orbit = np.unique(least, return_inverse=True)
    return flop_orbit, representatives


def _subsets(count: int, size: int) -> Grid:
    """The size-subsets of 0..count-1 as rows of ascending members, in ascending order of their masks."""
    masks = masks_of_size(size)
    masks = masks[masks < (1 << count)]
    return np.array(
        [[i for i in range(count) if m >> i & 1] for m in masks.tolist()], dtype=np.int64
    ).reshape(len(masks), size)


def _colex(positions: Grid) -> Grid:
    """Colex index of each row of ascending positions."""
    total: Grid = sum(BINOMIAL[positions[:, i], i + 1] for i in range(positions.shape[1]))
    return total


@dataclass(frozen=True)
class RiverTerms:
    """Per community set (rows, in the order of ``layout``) and hole hand (columns): going
    all in for a antes returns ``a * slope + base`` antes summed over the dealer's 14,190 hands;
    ``flush_key`` is the player's 7-card flush as length << 4 | top rank."""

    slope: Grid
    base: Grid
    flush_key: Grid


@dataclass(frozen=True)
class _Suit:
    """One suit's community rank-set choices of one size (columns), per hole hand (rows)."""

    masks: Grid  # the community ranks c in this suit
    player: Grid  # strength of the player's rank set c | h
    below_q: Grid  # dealer's (3 - |c|)-subsets keeping this suit below a 9-high 3-card flush


def hole_masks(cards: tuple[int, ...]) -> tuple[int, int, int, int]:
    masks = [0, 0, 0, 0]
    for card in cards:
        masks[card // 13] |= 1 << (card % 13)
    return masks[0], masks[1], masks[2], masks[3]


def suit_sizes(hole: tuple[int, int, int, int]) -> tuple[int, int, int, int]:
    sizes = [int(POPCOUNT_NP[h]) for h in hole]
    return sizes[0], sizes[1], sizes[2], sizes[3]


@dataclass(frozen=True)
class StreetTerms:
    """What the flop and preflop decisions need of the river, per compact row of ``layout`` (one
    community set per orbit of its suit pattern) and hole hand (b): ``flop_values[:, b]`` is the
    all-in 2x's result ``2 * slope + base`` and ``flop_values[:, batch + b]`` the river's value
    ``max(slope + base, fold)``; ``river_codes`` is ``256 * b + (flush_key << 1 | calls)``;
    ``all_in_3x[b]`` sums ``3 * slope + base`` over every community set."""

    flop_values: Grid
    river_codes: Grid
    all_in_3x: Grid


FOLD_RESULT = -2 * comb(
    45, _DEALER_CARDS
)  # a river fold loses ante and X-tra Bonus against every dealer hand
CODES_PER_HOLE = 256


def river_terms(holes: Sequence[tuple[int, int, int]], xtra_lines: tuple[tuple[int, int], ...]) -> RiverTerms:
    """The river's two integers and the player's flush for every community set (rows, in the order of
    ``layout(sizes)``) of each hole hand (columns)."""
    batch = len(holes)
    quad_count = comb(OTHER_CARDS, BOARD)
    slope = np.empty((quad_count, batch), dtype=np.int64)
    base = np.empty((quad_count, batch), dtype=np.int64)
    flush_key = np.empty((quad_count, batch), dtype=np.int64)
    rows = layout(suit_sizes(hole_masks(holes[0])))
    first_row = {pattern: first for pattern, first, _ in rows.pattern_rows}
    orbit_images = {first: images for _, first, _, images in rows.orbits}
    for first, count, _, grid_slope, grid_base, grid_key in _river_grids(holes, xtra_lines):
        for pattern, axes in orbit_images[first]:
            order = (*axes, SUIT_COUNT)
            image = slice(first_row[pattern], first_row[pattern] + count)
            slope[image] = grid_slope.transpose(order).reshape(-1, batch)
            base[image] = grid_base.transpose(order).reshape(-1, batch)
            flush_key[image] = grid_key.transpose(order).reshape(-1, batch)
    return RiverTerms(slope, base, flush_key)


def street_terms(
    holes: Sequence[tuple[int, int, int]], xtra_lines: tuple[tuple[int, int], ...]
) -> StreetTerms:
    """``river_terms`` reduced, pattern by pattern while the grids are small, to what the flop needs."""
    batch = len(holes)
    weight = layout(suit_sizes(hole_masks(holes[0]))).compact_weight
    compact = len(weight)
    flop_values = np.empty((compact, 2 * batch), dtype=np.float64)  # integers: exact
    river_codes = np.empty((compact, batch), dtype=np.int32)
    all_in_3x = np.zeros(batch, dtype=np.int64)
    column_codes = np.arange(batch, dtype=np.int32) * CODES_PER_HOLE
    for first, count, shape, slope, base, key in _river_grids(holes, xtra_lines):
        rows = slice(first, first + count)
        river_call = slope + base
        flop_values[rows, :batch] = np.broadcast_to(2 * slope + base, shape).reshape(-1, batch)
        flop_values[rows, batch:] = np.broadcast_to(np.maximum(river_call, FOLD_RESULT), shape).reshape(
            -1, batch
        )
        codes = (key << 1) + (river_call > FOLD_RESULT) + column_codes
        river_codes[rows] = np.broadcast_to(codes, shape).reshape(-1, batch)
        images = int(weight[first])  # every row of an orbit's grid stands for as many rows
        slope_sum = np.broadcast_to(slope, shape).reshape(-1, batch).sum(axis=0, dtype=np.int64)
        base_sum = np.broadcast_to(base, shape).reshape(-1, batch).sum(axis=0, dtype=np.int64)
        all_in_3x += images * (3 * slope_sum + base_sum)
    return StreetTerms(flop_values, river_codes, all_in_3x)


def _river_grids(
    holes: Sequence[tuple[int, int, int]], xtra_lines: tuple[tuple[int, int], ...]
) -> Iterator[tuple[int, int, tuple[int, ...], Grid, Grid, Grid]]:
    """Per orbit of suit patterns (``layout(...).orbits``): its compact rows (first, count), its
    grid's shape, and slope, base and flush key over the grid (one axis per suit's choice, then the
    hole hands: computed together, each numpy call serves all of them). The hole hands must have as
    many cards in each suit (every hole-hand class of one shape does)."""
    batch = len(holes)
    hole = [hole_masks(cards) for cards in holes]
    sizes = suit_sizes(hole[0])
    if any(suit_sizes(masks) != sizes for masks in hole):
        raise ValueError("hole hands of one batch must have as many cards in each suit")
    # The dealer cannot hold the player's hole ranks: per suit, the subsets that avoid them.
    suit_keys = [[_keys_avoiding(masks[s]) for masks in hole] for s in range(SUIT_COUNT)]
    xtra_by_length = [0] * 8
    for length in range(8):
        for line, odds in xtra_lines:  # the first line reached pays (longest line first)
            if length >= line:
                xtra_by_length[length] = odds
                break
    for canonical, first, count, _ in layout(sizes).orbits:
        suits = [_suit(hole, s, canonical[s]) for s in range(SUIT_COUNT)]
        grids = _pattern_grid(
            canonical, hole, hole_sizes=sizes, suits=suits, suit_keys=suit_keys, xtra_by_length=xtra_by_length
        )
        shape = (*(len(suit.masks[0]) for suit in suits), batch)
        slope, base, key = (np.broadcast_to(grid, shape) for grid in grids)
        yield first, count, shape, slope, base, key


def _canonical(pattern: tuple[int, ...], empty: list[int]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The pattern with the empty suits' sizes in descending order, and for each suit the axis of the
    canonical grid it reads (the grid of ``pattern`` is the canonical one transposed so)."""
    canonical = list(pattern)
    for position, size in zip(empty, sorted((pattern[s] for s in empty), reverse=True), strict=True):
        canonical[position] = size
    axes = list(range(SUIT_COUNT))
    unused = list(empty)
    for s in empty:
        source = next(e for e in unused if canonical[e] == pattern[s])
        unused.remove(source)
        axes[s] = source
    return tuple(canonical), tuple(axes)


@cache
def _suit_choices(hole_mask: int, size: int) -> tuple[Grid, Grid, Grid, Grid]:
    """A suit's community rank sets c of one size beside the hole ranks (shared by every hole hand
    with these hole ranks in a suit): c, the ranks of c ascending (one column per card), the player's
    strength in the suit (c | h), and the dealer's (3 - |c|)-subsets below a 9-high 3-card flush."""
    masks = masks_of_size(size)
    masks = masks[(masks & hole_mask) == 0]
    ranks = np.array([[r for r in range(13) if m >> r & 1] for m in masks.tolist()], dtype=np.int64)
    ranks = ranks.reshape(len(masks), size)
    player = SUIT_STRENGTH_NP[masks | hole_mask].astype(np.int32)
    low_free = POPCOUNT_NP[~(masks | hole_mask) & _LOW_SEVEN]
    below_q = np.where((masks & ~_LOW_SEVEN) == 0, BINOMIAL[low_free, max(3 - size, 0)], 0).astype(np.int32)
    for array in (masks, ranks, player, below_q):
        array.setflags(write=False)
    return masks, ranks, player, below_q


def _suit(hole: list[tuple[int, int, int, int]], suit: int, size: int) -> _Suit:
    choices = [_suit_choices(masks[suit], size) for masks in hole]
    masks, player, below_q = (np.stack([choice[i] for choice in choices]) for i in (0, 2, 3))
    return _Suit(masks, player, below_q)


def _axis(values: Grid, suit: int) -> Grid:
    """A one-suit table (hole hand, choice) as a grid: the suits' axes, then the hole hands'."""
    shape = [1] * SUIT_COUNT + [values.shape[0]]
    shape[suit] = values.shape[1]
    return values.T.reshape(shape)


def _pair_axes(values: Grid, first: int, second: int) -> Grid:
    """A table (hole hand, choice of suit ``first``, choice of suit ``second``) as a grid."""
    if first > second:
        values = values.transpose(0, 2, 1)
        first, second = second, first
    shape = [1] * SUIT_COUNT + [values.shape[0]]
    shape[first] = values.shape[1]
    shape[second] = values.shape[2]
    return values.transpose(1, 2, 0).reshape(shape)


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
    free: list[int], first_special: list[int], special: dict[int, Grid], shape: tuple[int, ...]
) -> Grid:
    """[t^3] prod_s (sum_{k < e_s} C(f_s, k) t^k + special_s t^e_s) as a grid, expanded over the suit
    sets S that take their special term: sum_S coef_S * prod_{s in S} special_s. ``special`` holds the
    suits whose special term can be reached (e_s <= 3), each as a grid-shaped array."""
    # int32: every term counts dealer hands, at most C(45, 3) in all.
    total = np.zeros(shape, dtype=np.int32)
    for chosen, coef in _expansion(tuple(free), tuple(first_special), tuple(sorted(special))):
        term: Grid | int = coef
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


def _slope_and_base(
    weaker: Grid, not_stronger: Grid, not_qualifying: Grid, strength: Grid, *, length: int, xtra: int
) -> tuple[Grid, Grid]:
    """A grid's net per ante of all-in (slope) and of the ante and X-tra Bonus (base), from its dealer
    hand counts (``_pattern_grid``)."""
    # With W weaker dealer hands, NS not stronger (W plus the ties), N not qualifying, D all 14,190 and
    # x the X-tra Bonus odds: the player wins W, pushes NS - W and loses the rest, the ante pushing
    # when the dealer does not qualify (then a loss costs only the X-tra Bonus) or paying even money
    # when it does (then a loss costs the ante too). Per ante of all-in that nets W - (D - NS); the
    # ante and X-tra Bonus net (x + 1) W + 2 NS - N - 2 D when the player's flush qualifies (it wins
    # every qualifying dealer it beats) and x W + NS + N - 2 D when it does not.
    dealer_hands = comb(45, _DEALER_CARDS)
    slope = weaker + not_stronger - dealer_hands  # per ante of all-in
    if length >= 4:
        base = (xtra + 1) * weaker + 2 * not_stronger - not_qualifying - 2 * dealer_hands
    elif length <= 2:
        base = xtra * weaker + not_stronger + not_qualifying - 2 * dealer_hands
    else:
        qualifies = strength >= QUALIFYING_STRENGTH
        base = (
            np.where(
                qualifies,
                (xtra + 1) * weaker + 2 * not_stronger - not_qualifying,
                xtra * weaker + not_stronger + not_qualifying,
            )
            - 2 * dealer_hands
        )
    return slope, base


def _pattern_grid(  # noqa: PLR0915 - the grid's enumeration written as the par sheet's table, row by row
    pattern: tuple[int, ...],
    hole: list[tuple[int, int, int, int]],
    *,
    hole_sizes: tuple[int, int, int, int],
    suits: list[_Suit],
    suit_keys: list[list[tuple[Grid, Grid]]],
    xtra_by_length: list[int],
) -> tuple[Grid, Grid, Grid]:
    """slope, base and flush key over one pattern's grid (one axis per suit's choice, then hole hand)."""
    batch = len(hole)
    shape = (*(suit.masks.shape[1] for suit in suits), batch)
    free = [13 - hole_sizes[s] - pattern[s] for s in range(SUIT_COUNT)]
    lengths = [hole_sizes[s] + pattern[s] for s in range(SUIT_COUNT)]
    length = max(lengths)
    first_special = [length - pattern[s] for s in range(SUIT_COUNT)]

    # Not qualifying: every suit of the dealer below a 9-high 3-card flush.
    if all(size <= _DEALER_CARDS for size in pattern):
        not_qualifying = _expanded_sum(
            free,
            [_DEALER_CARDS - size for size in pattern],
            {s: _axis(suits[s].below_q, s) for s in range(SUIT_COUNT)},
            shape,
        )
    else:
        not_qualifying = np.zeros(shape, dtype=np.int32)  # 4 community cards of a suit: a 4-card flush

    strength: Grid | None = None
    weaker: Grid | None = None
    not_stronger: Grid | None = None
    for t in (s for s in range(SUIT_COUNT) if lengths[s] == length):
        own = suits[t]
        flush = own.player & ((1 << 13) - 1)  # M: the player's rank set in suit t
        below: dict[int, Grid] = {}
        identical_flushes = False  # whether the dealer can hold the player's flush exactly (a tie)
        at_most: dict[int, Grid] = {}
        for s in range(SUIT_COUNT):
            extra = first_special[s]
            if extra > _DEALER_CARDS:
                continue
            if s == t:
                segment = own.masks * 4 + extra
                count = _count_below(suit_keys[s], segment, (segment << 13) | flush)
                below[s] = _axis(count, s)
                at_most[s] = below[s] + (1 if hole_sizes[t] == 0 else 0)
                identical_flushes |= hole_sizes[t] == 0
            else:
                other = suits[s].masks[:, :, None]
                segment = other * 4 + extra
                count = _count_below(suit_keys[s], segment, (segment << 13) | flush[:, None, :])
                hole_ranks = np.array([masks[s] for masks in hole], dtype=np.int64).reshape(batch, 1, 1)
                identical = ((other & ~flush[:, None, :]) == 0) & ((flush[:, None, :] & hole_ranks) == 0)
                below[s] = _pair_axes(count, s, t)
                at_most[s] = _pair_axes(count + identical.astype(np.int32), s, t)
                identical_flushes |= bool(identical.any())
        weaker_t = _expanded_sum(free, first_special, below, shape)
        # Without an identical flush "not stronger" is "weaker": the same sum, not computed twice.
        not_stronger_t = _expanded_sum(free, first_special, at_most, shape) if identical_flushes else weaker_t
        strength_t = np.broadcast_to(_axis(own.player, t), shape)
        if strength is None or weaker is None or not_stronger is None:
            strength, weaker, not_stronger = strength_t, weaker_t, not_stronger_t
        else:
            # The player's flush is in whichever candidate suit is strongest (equal ones agree).
            stronger = strength_t > strength
            strength = np.where(stronger, strength_t, strength)
            weaker = np.where(stronger, weaker_t, weaker)
            not_stronger = np.where(stronger, not_stronger_t, not_stronger)
    assert strength is not None
    assert weaker is not None
    assert not_stronger is not None
    slope, base = _slope_and_base(
        weaker, not_stronger, not_qualifying, strength, length=length, xtra=xtra_by_length[length]
    )
    key = (length << 4) | _TOP_RANK[strength & ((1 << 13) - 1)]
    return slope, base, key


def _count_below(keys: list[tuple[Grid, Grid]], segment: Grid, end: Grid) -> Grid:
    """Per hole hand b (first axis): how many of its keys lie in [start of ``segment``, ``end``)."""
    return np.stack(
        [
            # The queries as int32 like the keys: a wider query would copy the keys at every call.
            (np.searchsorted(keys[b][0], end[b].astype(np.int32)) - keys[b][1][segment[b]]).astype(np.int32)
            for b in range(len(keys))
        ]
    )

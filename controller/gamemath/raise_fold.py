"""Exact par sheets of the raise-or-fold games: High Card Flush and Top Flush.

Every player hand (7 cards) meets every banker hand (7 of the other 45). A hand's value depends only on
its four suits' rank sets, so the 133,784,560 player hands are visited as tuples of rank sets whose
suit sizes are in descending order (every other arrangement of the sizes is the same hand with the
suits renamed: the tuple carries that multiplicity as its weight). For one player hand with strength
X, the banker hands weaker than X are those whose every suit is weaker than X; per suit that is every
subset of the remaining ranks with fewer than len(X) cards, plus the subsets of exactly len(X) cards
whose mask is below X's. The banker count is the t^7 coefficient of the product of the four suits'
polynomials, and because only one coefficient per suit depends on the hand, it is a short sum of
products of those per-suit counts with constants fixed by the suit sizes. The per-suit counts come from
small tables indexed by (this suit's rank set, the flush's rank set). See docs/math.md.

Raising is linear in the raise: EV(r) = q + (w - l)(1 + r) per ante, where q, w, l are the
probabilities that the banker does not qualify, qualifies and loses, qualifies and wins. So the best
raise is the largest allowed when w >= l, the smallest (1x) otherwise, and the player folds when even
that is worse than losing the ante.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from functools import cache
from math import comb, factorial, prod
from typing import TypeVar

import numpy as np
import numpy.typing as npt

from controller.gamemath.contests import straight_flush_contest
from controller.gamemath.hand_counts import DECK_HANDS, HAND_SIZE, poly_product_coefficient
from controller.gamemath.progress import ProgressFn
from controller.gamemath.tables import (
    BINOMIAL,
    FULL_SUIT,
    POPCOUNT_NP,
    RUN_NP,
    SUITS,
    IntArray,
    count_subsets_below,
    masks_of_size,
)
from controller.rules.cards import RANKS_PER_SUIT
from controller.rules.hands import QUALIFYING_STRENGTH

BANKER_HANDS = comb(52 - HAND_SIZE, HAND_SIZE)  # 45,379,620 banker hands per player hand
QUALIFYING_LENGTH = QUALIFYING_STRENGTH >> RANKS_PER_SUIT  # 3
QUALIFYING_MASK = QUALIFYING_STRENGTH & FULL_SUIT  # the 9 alone: any 3-card mask >= it has a 9 or better
_BELOW_NINE = (1 << 7) - 1  # ranks 2..8
_ROWS_PER_CHUNK = 1 << 20
K = TypeVar("K")


def suit_size_patterns(total: int = HAND_SIZE) -> list[tuple[int, int, int, int]]:
    """Every way to split ``total`` cards over four suits, sizes in descending order."""
    span = range(total + 1)
    return [
        (a, b, c, d)
        for a, b, c, d in itertools.product(span, span, span, span)
        if a + b + c + d == total and a >= b >= c >= d
    ]


def arrangements(sizes: tuple[int, ...]) -> int:
    """How many suit assignments give this multiset of suit sizes."""
    return factorial(len(sizes)) // prod(factorial(sizes.count(size)) for size in set(sizes))


@dataclass
class _Threshold:
    """ "Banker weaker than Z" for one suit-size pattern as constants times per-suit counts.

    count = sum over suit subsets S of const[S] * prod_{s in S} f_s, where f_s counts the subsets of
    suit s's remaining ranks with exactly len(Z) cards and a mask below Z's.
    """

    terms: list[tuple[tuple[int, ...], int]]

    @classmethod
    def build(cls, sizes: tuple[int, ...], length: int) -> _Threshold:
        remaining = [RANKS_PER_SUIT - size for size in sizes]
        free = [[comb(remaining[s], k) if k < length else 0 for k in range(HAND_SIZE + 1)] for s in range(4)]
        terms: list[tuple[tuple[int, ...], int]] = []
        for count in range(SUITS + 1):
            if count * length > HAND_SIZE:
                break
            for subset in itertools.combinations(range(SUITS), count):
                others = [free[s] for s in range(SUITS) if s not in subset]
                constant = (
                    poly_product_coefficient(others, HAND_SIZE - count * length)
                    if others
                    else int(count * length == HAND_SIZE)
                )
                if constant:
                    terms.append((subset, constant))
        return cls(terms)

    def count(self, per_suit: list[IntArray]) -> IntArray:
        total = np.zeros_like(per_suit[0])
        for subset, constant in self.terms:
            term = np.full_like(per_suit[0], constant)
            for s in subset:
                term = term * per_suit[s]
            total += term
        return total


@dataclass
class RaiseFoldSolution:
    """The optimal strategy's exact figures. Deal counts are out of DECK_HANDS * BANKER_HANDS."""

    game: str
    max_raise_by_length: dict[int, int]
    total_value: int = 0  # sum over deals of the player's result in antes (negative: the house wins)
    total_raise: int = 0  # sum over player hands of the raise in antes
    hands_by_decision: dict[str, int] = field(default_factory=dict)  # "fold", "raise_1x", ...
    deals_by_outcome: dict[str, int] = field(default_factory=dict)  # over all deals
    qualifying_hands: int = 0
    exact_ties: int = 0  # player hands where folding and raising are worth exactly the same
    # For the strategy chart: by (flush length, flush rank mask) the hands raised and all hands.
    raised_by_flush: dict[tuple[int, int], int] = field(default_factory=dict)
    hands_by_flush: dict[tuple[int, int], int] = field(default_factory=dict)
    # By (flush length, flush rank mask, other suits' sizes) for the lengths where the choice is close.
    raised_by_flush_and_pattern: dict[tuple[int, int, tuple[int, int, int]], int] = field(
        default_factory=dict
    )
    hands_by_flush_and_pattern: dict[tuple[int, int, tuple[int, int, int]], int] = field(default_factory=dict)
    # Contested bonuses (designated player): deals by (player's line, outcome), where the line is the
    # player's flush length (flush wager) or run length (straight-flush wager); outcome "fold" counts
    # the deals the player folded (a fold forfeits the bonus).
    flush_contest: dict[tuple[int, str], int] = field(default_factory=dict)
    straight_flush_contest: dict[tuple[int, str], int] = field(default_factory=dict)

    @property
    def deals(self) -> int:
        return DECK_HANDS * BANKER_HANDS

    @property
    def house_edge(self) -> Fraction:
        """The house's expected win per ante."""
        return Fraction(-self.total_value, self.deals)

    @property
    def average_wager(self) -> Fraction:
        """Expected total wagered (ante + raise) per ante."""
        return 1 + Fraction(self.total_raise, DECK_HANDS)

    @property
    def element_of_risk(self) -> Fraction:
        """The house's expected win per unit wagered."""
        return self.house_edge / self.average_wager

    @property
    def banker_qualifies(self) -> Fraction:
        return Fraction(self.qualifying_hands, DECK_HANDS)


def _add(counter: dict[K, int], key: K, amount: int) -> None:
    if amount:
        counter[key] = counter.get(key, 0) + amount


@cache
def _tables(size: int, length: int) -> tuple[IntArray, IntArray]:
    """For a suit holding ``size`` of the player's ranks, and a flush of ``length`` ranks: per (this
    suit's rank set index, flush rank set index) the banker's ``length``-subsets of the remaining ranks
    below the flush, and whether the flush's ranks are all still available (an identical flush)."""
    own = masks_of_size(size)[:, None]
    flush = masks_of_size(length)[None, :]
    available = FULL_SUIT ^ own
    below = count_subsets_below(available, length, flush)
    identical = ((flush & own) == 0).astype(np.int64)
    return below, identical


def _index_rows(sizes: tuple[int, ...]) -> Iterator[list[IntArray]]:
    """Every tuple of rank-set indices for these suit sizes, in chunks of about _ROWS_PER_CHUNK."""
    counts = [len(masks_of_size(size)) for size in sizes]
    inner = prod(counts[1:])
    step = max(1, _ROWS_PER_CHUNK // inner)
    for start in range(0, counts[0], step):
        first = np.arange(start, min(start + step, counts[0]), dtype=np.int64)
        grids = np.meshgrid(first, *(np.arange(n, dtype=np.int64) for n in counts[1:]), indexing="ij")
        yield [grid.ravel() for grid in grids]


def _record_contest(
    counter: dict[tuple[int, str], int],
    line: int,
    *,
    weight: int,
    stays: npt.NDArray[np.bool_],
    wins: IntArray,
    pushes: IntArray,
) -> None:
    """Add deals by (line, outcome) for a contested bonus; a fold forfeits it ("fold")."""
    _add(counter, (line, "win"), weight * int(wins[stays].sum()))
    _add(counter, (line, "push"), weight * int(pushes[stays].sum()))
    _add(counter, (line, "loss"), weight * int((BANKER_HANDS - wins - pushes)[stays].sum()))
    _add(counter, (line, "fold"), weight * int(np.count_nonzero(~stays)) * BANKER_HANDS)


@dataclass(frozen=True)
class _Pattern:
    """Everything fixed by one descending suit-size pattern."""

    sizes: tuple[int, int, int, int]
    weight: int
    length: int
    flush_masks: IntArray
    flush_suits: list[int]
    below_x: _Threshold
    below_q: _Threshold
    tables: list[tuple[IntArray, IntArray]]
    below_q_tables: list[IntArray]
    flush_qualifies: npt.NDArray[np.bool_]


@cache
def _pattern(sizes: tuple[int, int, int, int]) -> _Pattern:
    length = sizes[0]
    flush_masks = masks_of_size(length)
    if length > QUALIFYING_LENGTH:
        flush_qualifies = np.ones(len(flush_masks), dtype=bool)
    elif length == QUALIFYING_LENGTH:
        flush_qualifies = flush_masks >= QUALIFYING_MASK
    else:
        flush_qualifies = np.zeros(len(flush_masks), dtype=bool)
    return _Pattern(
        sizes=sizes,
        weight=arrangements(sizes),
        length=length,
        flush_masks=flush_masks,
        flush_suits=[s for s in range(SUITS) if sizes[s] == length],
        below_x=_Threshold.build(sizes, length),
        below_q=_Threshold.build(sizes, QUALIFYING_LENGTH),
        tables=[_tables(size, length) for size in sizes],
        # Banker 3-card flushes below the 9 use ranks 2..8 only.
        below_q_tables=[
            BINOMIAL[POPCOUNT_NP[(FULL_SUIT ^ masks_of_size(size)) & _BELOW_NINE], QUALIFYING_LENGTH]
            for size in sizes
        ],
        flush_qualifies=flush_qualifies,
    )


@dataclass
class _Rows:
    """Per player hand (row): the banker hands by outcome, and the optimal decision."""

    flush_index: IntArray
    not_qualifying: IntArray
    weaker: IntArray  # banker hands weaker than the player's, qualifying or not
    identical: IntArray  # banker hands with exactly the player's flush
    wins: IntArray  # banker qualifies and loses
    ties: IntArray  # banker qualifies with an identical flush
    losses: IntArray  # banker qualifies and wins
    raise_size: IntArray
    raises: npt.NDArray[np.bool_]
    raise_value: IntArray
    value: IntArray


def _evaluate_rows(pattern: _Pattern, rows: list[IntArray], max_raise: int) -> _Rows:
    flush_index = rows[pattern.flush_suits[0]]
    for s in pattern.flush_suits[1:]:
        flush_index = np.maximum(flush_index, rows[s])
    below = [pattern.tables[s][0][rows[s], flush_index] for s in range(SUITS)]
    at_most = [below[s] + pattern.tables[s][1][rows[s], flush_index] for s in range(SUITS)]
    weaker = pattern.below_x.count(below)
    not_stronger = pattern.below_x.count(at_most)
    not_qualifying = pattern.below_q.count([pattern.below_q_tables[s][rows[s]] for s in range(SUITS)])
    qualifies = pattern.flush_qualifies[flush_index]
    wins = np.where(qualifies, weaker - not_qualifying, 0)
    ties = np.where(qualifies, not_stronger - weaker, 0)
    losses = BANKER_HANDS - not_qualifying - wins - ties
    edge = wins - losses
    raise_size = np.where(edge >= 0, max_raise, 1)
    raise_value = not_qualifying + edge * (1 + raise_size)
    raises = raise_value > -BANKER_HANDS
    return _Rows(
        flush_index=flush_index,
        not_qualifying=not_qualifying,
        weaker=weaker,
        identical=not_stronger - weaker,
        wins=wins,
        ties=ties,
        losses=losses,
        raise_size=raise_size,
        raises=raises,
        raise_value=raise_value,
        value=np.where(raises, raise_value, -BANKER_HANDS),
    )


def _straight_flush_rows(
    pattern: _Pattern, rows: list[IntArray], result: _Rows
) -> tuple[IntArray, IntArray, IntArray]:
    """(player's run length, DP hands where the straight-flush wager wins, pushes) per row."""
    own = [masks_of_size(pattern.sizes[s])[rows[s]] for s in range(SUITS)]
    wins, pushes, _ = straight_flush_contest(
        own, pattern.flush_masks[result.flush_index], pattern.length, result.identical, BANKER_HANDS
    )
    run_length = np.maximum.reduce([RUN_NP[own[s]] for s in range(SUITS)]) >> 4
    return run_length, wins, pushes


@dataclass(frozen=True)
class HandAnalysis:
    """One player hand against every banker hand from the other 45 cards (counts of banker hands)."""

    banker_hands: int
    not_qualifying: int
    wins: int
    ties: int
    losses: int
    identical_flush: int
    weaker: int
    decision: str  # "fold" or "raise_Nx"
    value: Fraction  # expected result per ante under the optimal decision
    straight_flush_wins: int
    straight_flush_pushes: int


def analyse_hand(cards: list[int], max_raise_by_length: Mapping[int, int]) -> HandAnalysis:
    """The exact counts and optimal decision for one 7-card player hand (cards 0..51)."""
    suit_masks = [0, 0, 0, 0]
    for card in cards:
        suit_masks[card // RANKS_PER_SUIT] |= 1 << (card % RANKS_PER_SUIT)
    # Rename the suits so their sizes descend; ties keep any order (the value does not change).
    ordered = sorted(suit_masks, key=lambda mask: -int(POPCOUNT_NP[mask]))
    sizes = [int(POPCOUNT_NP[mask]) for mask in ordered]
    pattern = _pattern((sizes[0], sizes[1], sizes[2], sizes[3]))
    rows = [
        np.array([int(np.searchsorted(masks_of_size(size), mask))], dtype=np.int64)
        for size, mask in zip(sizes, ordered, strict=True)
    ]
    result = _evaluate_rows(pattern, rows, max_raise_by_length[pattern.length])
    _, sf_wins, sf_pushes = _straight_flush_rows(pattern, rows, result)
    raises = bool(result.raises[0])
    return HandAnalysis(
        banker_hands=BANKER_HANDS,
        not_qualifying=int(result.not_qualifying[0]),
        wins=int(result.wins[0]),
        ties=int(result.ties[0]),
        losses=int(result.losses[0]),
        identical_flush=int(result.identical[0]),
        weaker=int(result.weaker[0]),
        decision=f"raise_{int(result.raise_size[0])}x" if raises else "fold",
        value=Fraction(int(result.value[0]), BANKER_HANDS),
        straight_flush_wins=int(sf_wins[0]),
        straight_flush_pushes=int(sf_pushes[0]),
    )


def _record_contests(
    solution: RaiseFoldSolution, pattern: _Pattern, rows: list[IntArray], result: _Rows
) -> None:
    """The designated player's contested flush and straight-flush wagers of these rows, with the player
    raising where the base game's strategy raises (a fold forfeits them)."""
    raises = result.raises
    flush_wins = result.weaker if pattern.length >= 4 else np.zeros_like(result.weaker)
    _record_contest(
        solution.flush_contest,
        pattern.length,
        weight=pattern.weight,
        stays=raises,
        wins=flush_wins,
        pushes=result.identical,
    )
    run_length, sf_wins, sf_pushes = _straight_flush_rows(pattern, rows, result)
    for line in np.unique(run_length):
        on_line = run_length == line
        _record_contest(
            solution.straight_flush_contest,
            int(line),
            weight=pattern.weight,
            stays=raises[on_line],
            wins=sf_wins[on_line],
            pushes=sf_pushes[on_line],
        )


def solve_raise_fold(
    game: str,
    max_raise_by_length: Mapping[int, int],
    *,
    contests: bool = False,
    progress: ProgressFn | None = None,
) -> RaiseFoldSolution:
    """The exact optimal raise/fold strategy and its figures over every player and banker hand.

    With ``contests`` also the designated player's contested bonus wagers (flush and straight flush),
    with the player following the base game's optimal strategy (a fold forfeits them). ``progress`` is
    told after each suit-size pattern of the player's hand (11 of them).
    """
    solution = RaiseFoldSolution(game, dict(max_raise_by_length))
    patterns = suit_size_patterns()
    for done, sizes in enumerate(patterns):
        if progress is not None:
            progress("player hands by suit sizes", done, len(patterns))
        pattern = _pattern(sizes)
        weight = pattern.weight
        length = pattern.length
        max_raise = max_raise_by_length[length]
        flush_masks = pattern.flush_masks
        other_sizes = (sizes[1], sizes[2], sizes[3])
        for rows in _index_rows(sizes):
            result = _evaluate_rows(pattern, rows, max_raise)
            raises = result.raises
            flush_index = result.flush_index
            solution.total_value += weight * int(result.value.sum())
            solution.total_raise += weight * int(np.where(raises, result.raise_size, 0).sum())
            solution.exact_ties += weight * int(np.count_nonzero(result.raise_value == -BANKER_HANDS))
            solution.qualifying_hands += weight * int(np.count_nonzero(pattern.flush_qualifies[flush_index]))
            folds = int(np.count_nonzero(~raises))
            _add(solution.hands_by_decision, "fold", weight * folds)
            for size in (1, max_raise) if max_raise > 1 else (1,):
                _add(
                    solution.hands_by_decision,
                    f"raise_{size}x",
                    weight * int(np.count_nonzero(raises & (result.raise_size == size))),
                )
            _add(solution.deals_by_outcome, "fold", weight * folds * BANKER_HANDS)
            _add(
                solution.deals_by_outcome,
                "banker_not_qualifying",
                weight * int(result.not_qualifying[raises].sum()),
            )
            _add(solution.deals_by_outcome, "win", weight * int(result.wins[raises].sum()))
            _add(solution.deals_by_outcome, "push", weight * int(result.ties[raises].sum()))
            _add(solution.deals_by_outcome, "loss", weight * int(result.losses[raises].sum()))

            raised_per_flush = np.bincount(flush_index, weights=raises, minlength=len(flush_masks))
            hands_per_flush = np.bincount(flush_index, minlength=len(flush_masks))
            for index in np.flatnonzero(hands_per_flush):
                key = (length, int(flush_masks[index]))
                _add(solution.raised_by_flush, key, weight * int(raised_per_flush[index]))
                _add(solution.hands_by_flush, key, weight * int(hands_per_flush[index]))
                if length <= 4:
                    pattern_key = (length, int(flush_masks[index]), other_sizes)
                    _add(
                        solution.raised_by_flush_and_pattern,
                        pattern_key,
                        weight * int(raised_per_flush[index]),
                    )
                    _add(
                        solution.hands_by_flush_and_pattern, pattern_key, weight * int(hands_per_flush[index])
                    )
            if contests:
                _record_contests(solution, pattern, rows, result)
    if progress is not None:
        progress("player hands by suit sizes", len(patterns), len(patterns))
    return solution

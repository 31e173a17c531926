"""Chase the Flush, exact: the optimal check / all-in / fold play over all three streets.

The player's three hole cards H, the 2-card flop F, the 2-card turn and river T (together the
community C = F + T) and the dealer's three hole cards D from the other 45. Working backwards:

- river: for every (H, C), count the dealer hands D by outcome (qualifies or not; player wins, ties,
  loses) with the same per-suit generating functions as High Card Flush (the dealer's 3 cards are the
  t^3 coefficient of a product over the suits), and take max(all-in 1x, fold): chase_river.py, a
  board suit pattern at a time;
- flop: for every (H, F), sum over the 1,081 turn-river pairs: max(all-in 2x now, the river's value);
- preflop: for every H, max(all-in 3x now, the sum of the flop values).

The EV of an all-in of a antes is linear in a (a * S1 + S0 summed over the dealer hands), so each
(H, C) keeps just two integers. Hole hands are visited once per class of suit renamings (1,755 classes
for 22,100 hands), 16 classes of one suit shape at a time (the grids' last axis), and the batches are
shared between worker processes.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Mapping
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from fractions import Fraction
from functools import cache
from math import comb
from typing import Any

import numpy as np

from controller.gamemath import chase_river
from controller.gamemath.hand_counts import flush_length_counts, poly_product_coefficient
from controller.gamemath.progress import ProgressFn
from controller.gamemath.tables import FULL_SUIT, POPCOUNT_NP, SUIT_STRENGTH_NP, IntArray
from controller.rules.cards import RANKS, SUITS
from controller.rules.paytables import Paytable, default_paytable

HOLE = 3
DEALER_HANDS = comb(45, 3)  # 14,190 per (hole, community)
FLOPS = comb(49, 2)  # 1,176
TURN_RIVERS = comb(47, 2)  # 1,081
DEALS_PER_HOLE = FLOPS * TURN_RIVERS * DEALER_HANDS
_TOP_RANK = np.array([max(mask.bit_length() - 1, 0) for mask in range(1 << 13)], dtype=np.int32)
_FLUSH_KEYS = 8 << 4  # flush length << 4 | top rank


def qualifying_hands() -> int:
    """Seven-card hands that qualify (the dealer's 3 hole + 4 community are a uniform 7-card hand):
    every hand with a 4+ card flush, and the 3-card-flush hands not all of whose 3-card suits are
    below the 9."""
    counts = flush_length_counts()
    up_to_three = [comb(13, k) for k in range(4)]
    low_threes = [comb(13, 0), comb(13, 1), comb(13, 2), comb(7, 3)]
    max_two = poly_product_coefficient([up_to_three[:3]] * 4, 7)
    all_low = poly_product_coefficient([low_threes] * 4, 7) - max_two
    return sum(count for length, count in counts.items() if length >= 4) + counts[3] - all_low


@dataclass(frozen=True)
class _HoleClass:
    cards: tuple[int, int, int]
    weight: int


@cache
def hole_classes() -> tuple[_HoleClass, ...]:
    """The 3-card hole hands up to renaming the suits, each with how many hands it stands for."""
    weights: dict[tuple[int, ...], int] = {}
    representative: dict[tuple[int, ...], tuple[int, int, int]] = {}
    for cards in itertools.combinations(range(52), HOLE):
        masks = [0, 0, 0, 0]
        for card in cards:
            masks[card // 13] |= 1 << (card % 13)
        key = tuple(sorted(masks, key=lambda m: (int(POPCOUNT_NP[m]), m), reverse=True))
        weights[key] = weights.get(key, 0) + 1
        if key not in representative:
            canon = [
                suit * 13 + rank for suit, mask in enumerate(key) for rank in range(13) if mask >> rank & 1
            ]
            representative[key] = (canon[0], canon[1], canon[2])
    return tuple(_HoleClass(representative[key], weights[key]) for key in sorted(weights))


def river_terms(
    cards: tuple[int, int, int], xtra_lines: tuple[tuple[int, int], ...]
) -> tuple[IntArray, IntArray, IntArray, IntArray]:
    """For one hole hand: every community set (as cards, shape (211876, 4)), and for each, summed over
    the dealer's 14,190 hands, the all-in's result per ante of all-in (S1) and the rest (S0): going all
    in for a antes returns a * S1 + S0 in antes; and the player's 7-card flush (length << 4 | top rank)."""
    terms = chase_river.river_terms([cards], xtra_lines)
    hole = chase_river.hole_masks(cards)
    rows = chase_river.layout(chase_river.suit_sizes(hole))
    return rows.cards(hole)[rows.quad_ids], terms.slope[:, 0], terms.base[:, 0], terms.flush_key[:, 0]


@dataclass
class _HoleResult:
    all_in_3x: int  # summed over every deal of this hole hand, in antes
    check_value: int
    # Indexed by the player's flush as length << 4 | top rank:
    flops_by_flush: IntArray  # flops seen after a preflop check, by the 5-card flush
    flop_bets_by_flush: IntArray  # of those, where the player goes all in 2x
    rivers_by_flush: IntArray  # (flop, turn-river) after two checks, by the 7-card flush
    river_calls_by_flush: IntArray  # of those, where the player goes all in 1x (else folds)
    cards: tuple[int, int, int]


def _solve_holes(
    holes: list[tuple[int, int, int]], xtra_lines: tuple[tuple[int, int], ...]
) -> list[_HoleResult]:
    """Several hole hands of one suit shape at once (the columns of every array below)."""
    incidence = chase_river.layout(chase_river.suit_sizes(chase_river.hole_masks(holes[0])))
    batch = len(holes)
    terms = chase_river.street_terms(holes, xtra_lines)
    # Each flop's sums over its 1,081 turn-rivers (all in 2x now; the river's value): one sparse
    # product over the community sets.
    # Each flop's sums over its 1,081 turn-rivers (all in 2x now; the river's value): one sparse
    # product over the compact community sets, one flop per orbit.
    orbit_sums = np.rint(incidence.flop_by_compact @ terms.flop_values).astype(np.int64)  # below 2**53
    flop_sums = orbit_sums[incidence.flop_orbit]
    flop_bets, flop_checks = flop_sums[:, :batch], flop_sums[:, batch:]
    bets_on_flop = flop_bets > flop_checks
    all_in_3x = 6 * terms.all_in_3x  # each community set is 6 (flop, turn-river) orders
    # A river is reached after a checked flop: each community set, as many times as it has checked
    # flops (a compact row's images have as many: the suits renamed do not change the hole hand).
    checked_flops = incidence.compact_by_flop @ (~bets_on_flop).astype(np.float32)
    reached = np.bincount(
        terms.river_codes.ravel(),
        weights=(checked_flops * incidence.compact_weight[:, None]).ravel(),
        minlength=chase_river.CODES_PER_HOLE * batch,
    )
    # Exact: numpy's weighted bincount is float, exact below 2**53 (these totals are at most 6 * 211,876).
    reached_by_code = np.rint(reached).astype(np.int64).reshape(batch, _FLUSH_KEYS, 2)
    rivers_by_flush = reached_by_code.sum(axis=2)
    river_calls_by_flush = reached_by_code[:, :, 1]

    results = []
    for column, cards in enumerate(holes):
        flop_cards = incidence.cards(chase_river.hole_masks(cards))[incidence.pair_ids]
        five = np.concatenate(
            [np.tile(np.array(cards, dtype=np.int64), (len(flop_cards), 1)), flop_cards], axis=1
        )
        five_bits = np.left_shift(np.int64(1), five).sum(axis=1)
        five_strength = np.maximum.reduce(
            [SUIT_STRENGTH_NP[(five_bits >> (13 * s)) & FULL_SUIT] for s in range(4)]
        )
        flop_flush = ((five_strength >> 13) << 4) | _TOP_RANK[five_strength & FULL_SUIT]
        bets = bets_on_flop[:, column]
        results.append(
            _HoleResult(
                all_in_3x=int(all_in_3x[column]),
                check_value=int(np.maximum(flop_bets[:, column], flop_checks[:, column]).sum()),
                flops_by_flush=np.bincount(flop_flush, minlength=_FLUSH_KEYS),
                flop_bets_by_flush=np.bincount(flop_flush[bets], minlength=_FLUSH_KEYS),
                rivers_by_flush=rivers_by_flush[column],
                river_calls_by_flush=river_calls_by_flush[column],
                cards=cards,
            )
        )
    return results


def _solve_hole(cards: tuple[int, int, int], xtra_lines: tuple[tuple[int, int], ...]) -> _HoleResult:
    return _solve_holes([cards], xtra_lines)[0]


def _solve_holes_star(
    args: tuple[list[tuple[int, int, int]], tuple[tuple[int, int], ...]],
) -> list[_HoleResult]:
    return _solve_holes(*args)


_BATCH = 16  # hole hands per numpy grid: enough to spread each call's overhead, small enough for the cache


def _batches(classes: tuple[_HoleClass, ...]) -> list[list[int]]:
    """The classes' indices in batches of one suit shape (the classes come sorted by shape)."""
    batches: list[list[int]] = []
    shape_of_last: tuple[int, ...] | None = None
    for index, hole in enumerate(classes):
        shape = chase_river.suit_sizes(chase_river.hole_masks(hole.cards))
        if shape != shape_of_last or len(batches[-1]) == _BATCH:
            batches.append([])
            shape_of_last = shape
        batches[-1].append(index)
    return batches


@dataclass
class ChaseSolution:
    xtra: Paytable
    total_value: int = 0  # over every deal, in antes (the X-tra Bonus's result included)
    total_all_in: int = 0  # antes put in all-in, over every deal
    deals_by_decision: dict[str, int] = field(default_factory=dict)
    preflop: list[tuple[str, int, Fraction, Fraction]] = field(default_factory=list)  # hand, hands, 3x, check
    class_rows: list[dict[str, Any]] = field(default_factory=list)  # exact per-class sums (see class_row)
    # Weighted by deals: flops seen after a preflop check by 5-card flush length, and bets among them;
    # rivers seen after two checks by 7-card flush length, and calls among them.
    flops_by_flush: dict[int, int] = field(default_factory=dict)  # keys: length << 4 | top rank
    flop_bets_by_flush: dict[int, int] = field(default_factory=dict)
    rivers_by_flush: dict[int, int] = field(default_factory=dict)
    river_calls_by_flush: dict[int, int] = field(default_factory=dict)

    @property
    def deals(self) -> int:
        return comb(52, 3) * DEALS_PER_HOLE

    @property
    def expected_value(self) -> Fraction:
        """The player's expected result per ante (ante, X-tra Bonus and all-in together)."""
        return Fraction(self.total_value, self.deals)

    @property
    def average_wager(self) -> Fraction:
        """Expected total staked per ante: ante + X-tra Bonus + all-in."""
        return 2 + Fraction(self.total_all_in, self.deals)


def _hole_text(cards: tuple[int, int, int]) -> str:
    return " ".join(RANKS[c % 13] + SUITS[c // 13] for c in sorted(cards, key=lambda c: (-(c % 13), c)))


def _accumulate(counter: dict[int, int], by_key: IntArray, scale: int) -> None:
    for key in np.flatnonzero(by_key):
        counter[int(key)] = counter.get(int(key), 0) + int(by_key[key]) * scale


_PROGRESS_STAGE = "hole-hand classes"


def _collect(
    results: list[_HoleResult], batch: list[_HoleResult], classes: int, progress: ProgressFn | None
) -> None:
    """Keep a batch's results, telling ``progress`` of each class (it is in steps of classes)."""
    for result in batch:
        results.append(result)
        if progress is not None:
            progress(_PROGRESS_STAGE, len(results), classes)


def solve_chase(
    xtra: Paytable | None = None,
    *,
    workers: int | None = None,
    only: int | None = None,
    progress: ProgressFn | None = None,
) -> ChaseSolution:
    """The exact optimal three-street strategy and its expected value. ``only`` solves just the first
    that many hole-hand classes (for tests of the bookkeeping; the totals then cover those alone).
    ``progress`` is told after each hole-hand class (the long part: minutes)."""
    table = xtra or default_paytable("chase-the-flush", "house", "xtra_bonus")
    classes = hole_classes()[:only] if only is not None else hole_classes()
    batches = _batches(classes)
    jobs = [([classes[index].cards for index in batch], table.odds_by_length) for batch in batches]
    processes = workers if workers is not None else min(2, os.cpu_count() or 1)
    results: list[_HoleResult] = []
    if progress is not None:
        progress(_PROGRESS_STAGE, 0, len(classes))
    if processes > 1:
        with ProcessPoolExecutor(max_workers=processes) as pool:
            # map() yields in order as results arrive: progress is reported as the work goes.
            for batch_results in pool.map(_solve_holes_star, jobs):
                _collect(results, batch_results, len(classes), progress)
    else:
        for job in jobs:
            _collect(results, _solve_holes_star(job), len(classes), progress)
    solution = ChaseSolution(table)
    decisions = {"all_in_3x_preflop": 0, "all_in_2x_flop": 0, "all_in_1x_river": 0, "fold": 0}
    for hole, result in zip(classes, results, strict=True):
        weight = hole.weight
        bets_preflop = result.all_in_3x > result.check_value
        solution.class_rows.append(class_row(hole, result))
        solution.preflop.append(
            (
                _hole_text(result.cards),
                weight,
                Fraction(result.all_in_3x, DEALS_PER_HOLE),
                Fraction(result.check_value, DEALS_PER_HOLE),
            )
        )
        if bets_preflop:
            solution.total_value += weight * result.all_in_3x
            solution.total_all_in += weight * 3 * DEALS_PER_HOLE
            decisions["all_in_3x_preflop"] += weight * DEALS_PER_HOLE
            continue
        solution.total_value += weight * result.check_value
        per_flop = TURN_RIVERS * DEALER_HANDS
        flop_bets = int(result.flop_bets_by_flush.sum())
        river_calls = int(result.river_calls_by_flush.sum())
        river_seen = int(result.rivers_by_flush.sum())
        solution.total_all_in += weight * (2 * flop_bets * per_flop + river_calls * DEALER_HANDS)
        decisions["all_in_2x_flop"] += weight * flop_bets * per_flop
        decisions["all_in_1x_river"] += weight * river_calls * DEALER_HANDS
        decisions["fold"] += weight * (river_seen - river_calls) * DEALER_HANDS
        _accumulate(solution.flops_by_flush, result.flops_by_flush, weight * per_flop)
        _accumulate(solution.flop_bets_by_flush, result.flop_bets_by_flush, weight * per_flop)
        _accumulate(solution.rivers_by_flush, result.rivers_by_flush, weight * DEALER_HANDS)
        _accumulate(solution.river_calls_by_flush, result.river_calls_by_flush, weight * DEALER_HANDS)
    solution.deals_by_decision = decisions
    assert sum(decisions.values()) == sum(hole.weight for hole in classes) * DEALS_PER_HOLE
    return solution


def class_row(hole: _HoleClass, result: _HoleResult) -> dict[str, Any]:
    """One hole-hand class's exact sums over its deals: what the par sheet is added up from."""
    return {
        "hole": _hole_text(hole.cards),
        "weight": hole.weight,
        "all_in_3x": result.all_in_3x,
        "check": result.check_value,
        "flop_bets": int(result.flop_bets_by_flush.sum()),
        "river_seen": int(result.rivers_by_flush.sum()),
        "river_calls": int(result.river_calls_by_flush.sum()),
    }


def totals_from_rows(rows: list[dict[str, Any]]) -> tuple[Fraction, Fraction]:
    """(expected value per ante, average total wager per ante) from the per-class rows."""
    value = 0
    all_in = 0
    for row in rows:
        weight = row["weight"]
        if row["all_in_3x"] > row["check"]:
            value += weight * row["all_in_3x"]
            all_in += weight * 3 * DEALS_PER_HOLE
        else:
            value += weight * row["check"]
            all_in += weight * (2 * row["flop_bets"] * TURN_RIVERS + row["river_calls"]) * DEALER_HANDS
    deals = comb(52, 3) * DEALS_PER_HOLE
    return Fraction(value, deals), 2 + Fraction(all_in, deals)


def solve_class(hole_text: str, xtra: Paytable | None = None) -> dict[str, Any]:
    """The exact row of one hole-hand class, given as its cards (e.g. "Ac Kc Qd")."""
    cards = [RANKS.index(text[0]) + 13 * SUITS.index(text[1]) for text in hole_text.split()]
    table = xtra or default_paytable("chase-the-flush", "house", "xtra_bonus")
    hole = next(h for h in hole_classes() if sorted(h.cards) == sorted(cards))
    return class_row(hole, _solve_hole(hole.cards, table.odds_by_length))


def hole_hand_values(cards: tuple[int, int, int]) -> tuple[Fraction, Fraction]:
    """(EV of all in 3x preflop, EV of checking and playing on optimally) per ante for one hole hand."""
    result = _solve_hole(cards, default_paytable("chase-the-flush", "house", "xtra_bonus").odds_by_length)
    return Fraction(result.all_in_3x, DEALS_PER_HOLE), Fraction(result.check_value, DEALS_PER_HOLE)


def _hole_kind(hand: str) -> str:
    suits = {card[1] for card in hand.split()}
    return {1: "three suited", 2: "two suited", 3: "rainbow"}[len(suits)]


def _suited_pair(hand: str) -> str:
    """The two suited cards of a two-suited hole hand, e.g. "Q-9 suited"."""
    cards = hand.split()
    for suit in {card[1] for card in cards}:
        same = [card[0] for card in cards if card[1] == suit]
        if len(same) == 2:
            return f"{same[0]}-{same[1]} suited"
    return hand


def _shares(bets: Mapping[int, int], seen: Mapping[int, int], street: str) -> list[str]:
    """One line per flush length: the share played, and by top card where it is not all or nothing."""
    lines = []
    for length in sorted({key >> 4 for key in seen}):
        keys = sorted((key for key in seen if key >> 4 == length), reverse=True)
        total_seen = sum(seen[key] for key in keys)
        total_bet = sum(bets.get(key, 0) for key in keys)
        share = total_bet / total_seen
        text = f"{length}-card flush: {street} {share:.1%}"
        if 0 < total_bet < total_seen:
            by_top = [f"{RANKS[key & 15]}-high {bets.get(key, 0) / seen[key]:.0%}" for key in keys]
            text += " (" + ", ".join(by_top) + ")"
        lines.append(text)
    return lines


def chase_strategy(solution: ChaseSolution) -> list[dict[str, Any]]:
    """The strategy as a dealer trainer reads it: preflop by hole-hand type, then flop and river."""
    chart: list[dict[str, Any]] = []
    by_kind: dict[str, list[tuple[str, int, Fraction, Fraction]]] = {}
    for entry in solution.preflop:
        by_kind.setdefault(_hole_kind(entry[0]), []).append(entry)
    for kind in ("three suited", "two suited", "rainbow"):
        entries = by_kind.get(kind, [])
        if not entries:
            continue
        hands = sum(weight for _, weight, _, _ in entries)
        betting = [entry for entry in entries if entry[2] > entry[3]]
        bet_hands = sum(weight for _, weight, _, _ in betting)
        notes: list[str]
        if kind == "two suited":
            # By the suited pair: always, never, or depending on the third card.
            pairs: dict[str, list[tuple[str, bool]]] = {}
            for hand, _, ev3, check in entries:
                pairs.setdefault(_suited_pair(hand), []).append((hand, ev3 > check))
            always = [pair for pair, hands_ in pairs.items() if all(bet for _, bet in hands_)]
            sometimes = {
                pair: [hand for hand, bet in hands_ if bet]
                for pair, hands_ in pairs.items()
                if any(bet for _, bet in hands_) and not all(bet for _, bet in hands_)
            }
            notes = [f"always with {', '.join(always)}"] if always else []
            notes += [f"{pair}: only {', '.join(hands_)}" for pair, hands_ in sorted(sometimes.items())]
        else:
            notes = [
                f"{hand}: 3x {float(ev3):+.4f}, check {float(check):+.4f}"
                for hand, _, ev3, check in sorted(betting, key=lambda e: e[2] - e[3])
            ]
        chart.append(
            {
                "title": f"Preflop, {kind}",
                "rule": f"all in 3x with {bet_hands / hands:.2%} of these hands "
                f"({len(betting)} of {len(entries)} classes)",
                "bet_classes": [hand for hand, _, _, _ in betting],
                "notes": notes if len(betting) < len(entries) else [],
            }
        )
    chart.append(
        {
            "title": "Flop (after a check)",
            "rule": "all in 2x, by the player's 5-card flush (share of hands, by top card):",
            "notes": _shares(solution.flop_bets_by_flush, solution.flops_by_flush, "bet"),
        }
    )
    chart.append(
        {
            "title": "River (after two checks)",
            "rule": "all in 1x or fold, by the player's 7-card flush (share of hands, by top card):",
            "notes": _shares(solution.river_calls_by_flush, solution.rivers_by_flush, "call"),
        }
    )
    return chart


def chase_base_game(paytables: Mapping[str, Paytable], progress: ProgressFn | None = None) -> dict[str, Any]:
    """The base game's figures for the par sheet (the X-tra Bonus's paytable from ``paytables``)."""
    solution = solve_chase(paytables.get("xtra_bonus"), progress=progress)
    edge = -solution.expected_value
    return {
        "expected_value": float(solution.expected_value),
        "house_edge": float(edge),
        "element_of_risk": float(edge / solution.average_wager),
        "average_wager": float(solution.average_wager),
        "xtra_bonus_paytable": solution.xtra.to_json(),
        "decision_frequencies": {k: v / solution.deals for k, v in solution.deals_by_decision.items()},
        "strategy": chase_strategy(solution),
        "exact": {
            "expected_value": f"{solution.expected_value.numerator}/{solution.expected_value.denominator}",
            "average_wager": f"{solution.average_wager.numerator}/{solution.average_wager.denominator}",
            "decision_deal_counts": solution.deals_by_decision,
            "deals": solution.deals,
        },
    }


def main(argv: list[str]) -> int:
    """``python -m controller.gamemath.chase [--write FILE]``: solve the game, print its figures and
    optionally write the per-class rows (JSON lines) the tests check samples of."""
    import json  # noqa: PLC0415
    import sys  # noqa: PLC0415
    import time  # noqa: PLC0415

    started = time.perf_counter()
    solution = solve_chase()
    elapsed_s = time.perf_counter() - started
    if len(argv) == 2 and argv[0] == "--write":
        with open(argv[1], "w", encoding="utf-8") as out:
            out.writelines(json.dumps(row) + "\n" for row in solution.class_rows)
    ev, wager = totals_from_rows(solution.class_rows)
    assert ev == solution.expected_value
    assert wager == solution.average_wager
    json.dump(
        {
            "seconds": round(elapsed_s, 1),
            "expected_value": float(ev),
            "expected_value_exact": f"{ev.numerator}/{ev.denominator}",
            "average_wager": float(wager),
            "decisions": {k: v / solution.deals for k, v in solution.deals_by_decision.items()},
        },
        sys.stdout,
        indent=2,
    )
    print()
    return 0


if __name__ == "__main__":
    import sys

    sys.exit(main(sys.argv[1:]))

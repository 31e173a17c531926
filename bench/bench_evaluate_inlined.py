"""The hand evaluator's inlining, measured: `evaluate` as shipped (the card set handed to `evaluate_bits`)
against the same with evaluate_bits' body inlined, as it was up to 02c289d (one Python call fewer a
hand), interleaved, CPU time.

Prints one JSON object. Not a timed test: the figure says what the inlining would buy for its second
copy of the lookup (docs/engine.md "Duplicates kept, and why").

Usage: python bench/bench_evaluate_inlined.py [--hands N] [--runs R] [--seed S]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import time
from collections.abc import Callable, Sequence

from controller.rules import hands
from controller.rules.cards import Card, shuffled_deck
from controller.rules.hands import Hand, evaluate

# The evaluator's own tables, bound here as module globals, as the shipped code reads them.
_CARD_BIT = hands._CARD_BIT
_KEY_CLUBS, _KEY_DIAMONDS = hands._KEY_CLUBS, hands._KEY_DIAMONDS
_KEY_HEARTS, _KEY_SPADES = hands._KEY_HEARTS, hands._KEY_SPADES


def evaluate_inlined(cards: Sequence[Card]) -> Hand:
    """``evaluate`` as it was up to 02c289d: evaluate_bits' body inlined (the same tables)."""
    bit = _CARD_BIT
    card_set = 0
    for card in cards:
        card_set |= bit[card]
    best = _KEY_CLUBS[card_set & 0x1FFF]
    other = _KEY_DIAMONDS[(card_set >> 13) & 0x1FFF]
    if other > best:  # noqa: PLR1730 - as it was
        best = other
    hearts = _KEY_HEARTS[(card_set >> 26) & 0x1FFF]
    other = _KEY_SPADES[card_set >> 39]
    if other > hearts:  # noqa: PLR1730 - as it was
        hearts = other
    return Hand(best if best > hearts else hearts, card_set)


def hands_per_cpu_s(evaluator: Callable[[Sequence[Card]], Hand], deals: list[tuple[Card, ...]]) -> float:
    started = time.process_time()
    checksum = 0
    for hand in deals:
        checksum += evaluator(hand).strength
    spent = time.process_time() - started
    assert checksum  # the results are used
    return len(deals) / spent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hands", type=int, default=200_000)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--seed", type=int, default=2026)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    hands = [tuple(shuffled_deck(rng)[:7]) for _ in range(args.hands)]
    for hand in hands[:1000]:  # the two give the same hand
        assert evaluate(hand) == evaluate_inlined(hand)
    runs: dict[str, list[int]] = {"inlined": [], "through_evaluate_bits": []}
    for _ in range(args.runs):  # interleaved: the machine's load falls on both alike
        runs["inlined"].append(round(hands_per_cpu_s(evaluate_inlined, hands)))
        runs["through_evaluate_bits"].append(round(hands_per_cpu_s(evaluate, hands)))
    median = {name: sorted(figures)[len(figures) // 2] for name, figures in runs.items()}
    print(
        json.dumps(
            {
                "hands": args.hands,
                "hands_per_cpu_s_median": median,
                "through_evaluate_bits_over_inlined": round(
                    median["through_evaluate_bits"] / median["inlined"], 3
                ),
                "runs": runs,
                "load_average_1m": round(os.getloadavg()[0], 2),
            }
        )
    )


if __name__ == "__main__":
    main()

"""7-card hands evaluated per second through the public API (`evaluate`), one hand at a time, one core.

Prints one JSON object. Not a timed test: CI never fails on a slow machine; the figure is reported.
Usage: python bench/bench_evaluate.py [--hands N] [--repeats R] [--seed S]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import time

from controller.rules.cards import shuffled_deck
from controller.rules.hands import evaluate

TARGET_HANDS_PER_S = 500_000


def deal_hands(count: int, seed: int) -> list[tuple[int, ...]]:
    rng = random.Random(seed)
    return [tuple(shuffled_deck(rng)[:7]) for _ in range(count)]


def measure(hands: list[tuple[int, ...]]) -> float:
    """Seconds to evaluate every hand once, one call per hand, touching the result."""
    started = time.perf_counter()
    checksum = 0
    for hand in hands:
        checksum += evaluate(hand).strength
    elapsed = time.perf_counter() - started
    if checksum < 0:  # keeps the result alive; strengths are never negative
        raise AssertionError(checksum)
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--hands", type=int, default=200_000)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--seed", type=int, default=2026)
    args = parser.parse_args()
    hands = deal_hands(args.hands, args.seed)
    measure(hands[:10_000])  # warm up
    timings = [measure(hands) for _ in range(args.repeats)]
    rates = sorted(len(hands) / seconds for seconds in timings)
    print(
        json.dumps(
            {
                "benchmark": "evaluate_7_card_hands",
                "api": "controller.rules.hands.evaluate",
                "hands_per_run": len(hands),
                "runs": args.repeats,
                "hands_per_s_best": round(rates[-1]),
                "hands_per_s_median": round(rates[len(rates) // 2]),
                "hands_per_s_worst": round(rates[0]),
                "target_hands_per_s": TARGET_HANDS_PER_S,
                "meets_target": rates[len(rates) // 2] >= TARGET_HANDS_PER_S,
                "python": platform.python_version(),
                "cpu_count": os.cpu_count(),
                "load_average_1m": os.getloadavg()[0],
            }
        )
    )


if __name__ == "__main__":
    main()

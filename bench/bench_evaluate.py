"""7-card hands evaluated per second through the public API (`evaluate`), one hand at a time, one core.

Prints one JSON object. Not a timed test: CI never fails on a slow machine; the figure is reported.
Both clocks are reported because the machine is shared: `hands_per_s_*` is wall-clock time (what a
caller sees on an idle core), `hands_per_cpu_s_*` is this process's CPU time (what the code costs,
less disturbed by other processes). `load_average_1m` says how busy the machine was.

Usage: python bench/bench_evaluate.py [--hands N] [--runs R] [--seed S]
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
    """``count`` random 7-card hands, each a tuple of card numbers, as the table hands them over."""
    rng = random.Random(seed)
    return [tuple(shuffled_deck(rng)[:7]) for _ in range(count)]


def measure(hands: list[tuple[int, ...]]) -> tuple[float, float]:
    """(wall seconds, CPU seconds) to evaluate every hand once, one call per hand, using the result."""
    wall_started = time.perf_counter()
    cpu_started = time.process_time()
    checksum = 0
    for hand in hands:
        checksum += evaluate(hand).strength
    cpu = time.process_time() - cpu_started
    wall = time.perf_counter() - wall_started
    if checksum <= 0:  # keeps the result alive; every hand has a positive strength
        raise AssertionError(checksum)
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hands", type=int, default=200_000)
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--seed", type=int, default=2026)
    args = parser.parse_args()
    hands = deal_hands(args.hands, args.seed)
    measure(hands[:20_000])  # warm up
    timings = [measure(hands) for _ in range(args.runs)]
    wall_rates = sorted(len(hands) / wall for wall, _ in timings)
    cpu_rates = sorted(len(hands) / cpu for _, cpu in timings if cpu > 0)
    print(
        json.dumps(
            {
                "benchmark": "evaluate_7_card_hands",
                "api": "controller.rules.hands.evaluate",
                "hands_per_run": len(hands),
                "runs": args.runs,
                "hands_per_s_best": round(wall_rates[-1]),
                "hands_per_s_median": round(wall_rates[len(wall_rates) // 2]),
                "hands_per_cpu_s_best": round(cpu_rates[-1]),
                "hands_per_cpu_s_median": round(cpu_rates[len(cpu_rates) // 2]),
                "target_hands_per_s": TARGET_HANDS_PER_S,
                "meets_target_wall_best": wall_rates[-1] >= TARGET_HANDS_PER_S,
                "python": platform.python_version(),
                "cpu_count": os.cpu_count(),
                "load_average_1m": round(os.getloadavg()[0], 2),
            }
        )
    )


if __name__ == "__main__":
    main()

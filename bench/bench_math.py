"""Time each game's complete exact par sheet and print the figures as JSON.

Usage: python bench/bench_math.py [GAME ...]   (default: every game and banking mode)
"""

from __future__ import annotations

import json
import os
import platform
import sys
import time

from controller.gamemath.parsheet import build_request, par_sheet

CASES: tuple[tuple[str, str], ...] = (
    ("high-card-flush", "house"),
    ("high-card-flush", "designated-player"),
    ("top-flush", "house"),
    ("chase-the-flush", "house"),
)


def main(argv: list[str]) -> int:
    wanted = set(argv)
    results = []
    for game, banking in CASES:
        if wanted and game not in wanted:
            continue
        started = time.perf_counter()
        sheet = par_sheet(build_request(game, banking, {}))
        elapsed_s = time.perf_counter() - started
        results.append(
            {
                "game": game,
                "banking": banking,
                "par_sheet_s": round(elapsed_s, 2),
                "house_edge": sheet["base_game"]["house_edge"],
                "element_of_risk": sheet["base_game"]["element_of_risk"],
            }
        )
    print(
        json.dumps(
            {
                "benchmark": "math",
                "cpu_count": os.cpu_count(),
                "python": platform.python_version(),
                "results": results,
            },
            indent=2,
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

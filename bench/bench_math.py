"""Time each game's complete exact par sheet and print the figures as JSON.

Usage: python bench/bench_math.py [GAME ...]   (default: every game and banking mode)
       python bench/bench_math.py --chase-vs-head [--workers N] [--new-only]

``--chase-vs-head``: Chase the Flush's solve by this engine and by the one issue 28 replaced, side by
side in one run. The replaced engine is controller/gamemath/chase.py as it was at HEAD_COMMIT (`git
show`, imported from a temporary directory), so this needs the repository's history. Both run the whole
solve (every hole-hand class, with the same worker processes), one after the other, and the figures
they produce must agree to the last digit: every class row, the exact EV, the average wager, the
decision counts, the flush tables behind the strategy chart, and the chart. Prints JSON: wall and CPU
seconds of each (CPU including the worker processes), the ratios, whether every figure matches, and
the load average (the machine may be shared: the ratio is the figure that survives load). Exit 1 if
any figure differs.
"""

from __future__ import annotations

import importlib.util
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType
from typing import Any

from controller.gamemath import chase
from controller.gamemath.parsheet import build_request, par_sheet

CASES: tuple[tuple[str, str], ...] = (
    ("high-card-flush", "house"),
    ("high-card-flush", "designated-player"),
    ("top-flush", "house"),
    ("chase-the-flush", "house"),
)


HEAD_COMMIT = "2140c17c956f843eb0e80b579cd921fe86fdfcb7"  # main before issue 28: the row-by-row engine
_REPO = Path(__file__).resolve().parent.parent


def _head_engine(directory: Path) -> ModuleType:
    source = subprocess.run(
        ["git", "-C", str(_REPO), "show", f"{HEAD_COMMIT}:controller/gamemath/chase.py"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    path = directory / "chase_head.py"
    path.write_text(source, encoding="utf-8")
    sys.path.insert(0, str(directory))  # the worker processes pickle its functions by module name
    spec = importlib.util.spec_from_file_location("chase_head", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["chase_head"] = module
    spec.loader.exec_module(module)
    return module


def _cpu_s() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _timed(solve: Any, workers: int) -> tuple[Any, dict[str, float]]:
    started_cpu = _cpu_s()
    started = time.perf_counter()
    solution = solve(workers=workers)
    return solution, {
        "wall_s": round(time.perf_counter() - started, 2),
        "cpu_s": round(_cpu_s() - started_cpu, 2),
    }


def _figures(solution: Any) -> dict[str, Any]:
    ev = solution.expected_value
    wager = solution.average_wager
    return {
        "expected_value": f"{ev.numerator}/{ev.denominator}",
        "average_wager": f"{wager.numerator}/{wager.denominator}",
        "deals_by_decision": solution.deals_by_decision,
        "class_rows": solution.class_rows,
        "flops_by_flush": solution.flops_by_flush,
        "flop_bets_by_flush": solution.flop_bets_by_flush,
        "rivers_by_flush": solution.rivers_by_flush,
        "river_calls_by_flush": solution.river_calls_by_flush,
    }


def chase_vs_head(argv: list[str]) -> int:
    """Chase the Flush: this engine and the one it replaced, side by side (see the module's text)."""
    workers = int(argv[argv.index("--workers") + 1]) if "--workers" in argv else min(2, os.cpu_count() or 1)
    load_before = os.getloadavg()
    new_solution, new_times = _timed(chase.solve_chase, workers)
    new = _figures(new_solution)
    report: dict[str, Any] = {
        "benchmark": "chase_par_sheet",
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
        "workers": workers,
        "new": new_times,
        "expected_value": new["expected_value"],
        "expected_value_float": float(new_solution.expected_value),
        "average_wager": new["average_wager"],
        "deals_by_decision": new["deals_by_decision"],
    }
    if "--new-only" not in argv:
        with tempfile.TemporaryDirectory() as directory:
            head = _head_engine(Path(directory))
            head_solution, head_times = _timed(head.solve_chase, workers)
        old = _figures(head_solution)
        report["head"] = {"commit": HEAD_COMMIT, **head_times}
        report["ratio_wall"] = round(new_times["wall_s"] / head_times["wall_s"], 3)
        report["ratio_cpu"] = round(new_times["cpu_s"] / head_times["cpu_s"], 3)
        report["figures_match"] = {name: new[name] == old[name] for name in new}
        report["all_figures_match"] = all(report["figures_match"].values()) and (
            chase.chase_strategy(new_solution) == head.chase_strategy(head_solution)
        )
    report["load_average_before_after"] = [round(load_before[0], 2), round(os.getloadavg()[0], 2)]
    print(json.dumps(report, indent=2))
    return 0 if report.get("all_figures_match", True) else 1


def main(argv: list[str]) -> int:
    if "--chase-vs-head" in argv:
        return chase_vs_head(argv)
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

"""The floor service's profile (a cProfile file of ``floor serve``, e.g. from ``bench_floor_cpu.py
--profile-dir``) cut into its parts, as JSON: for each file given, the process CPU seconds under the
profiler of each part (cumulative; the calls counted) and the function calls in all.

    python bench/profile_parts.py BEFORE.prof AFTER.prof ...

cProfile counts each resumption of a coroutine as a call: a batch's ``_handle`` is several "calls".
"""

from __future__ import annotations

import json
import pstats
import sys

# (part, the file the function is in (its path's end), the function's name)
PARTS: tuple[tuple[str, str, str], ...] = (
    ("the batches (_handle)", "floor/service.py", "_handle"),
    ("wire.decode", "uplink/wire.py", "decode"),
    ("the checks and the fold (_take_next_entry)", "floor/service.py", "_take_next_entry"),
    ("the chain hash (chain_problem)", "floor/checks.py", "chain_problem"),
    ("the fold (fold_entry)", "floor/checks.py", "fold_entry"),
    ("the writes (write_batch)", "floor/store.py", "write_batch"),
    ("the tables' and rounds' upserts (_upsert)", "floor/store.py", "_upsert"),
    ("the COPY of entries and private parts (_copy)", "floor/store.py", "_copy"),
    ("nats-py's protocol parser (parse)", "protocol/parser.py", "parse"),
    ("the intake's deliveries (_process_msg)", "floor/intake.py", "_process_msg"),
    ("the surveillance publisher (publish_pending)", "floor/surveillance.py", "publish_pending"),
    ("start-up: the command line's imports (build_parser)", "controller/cli.py", "build_parser"),
)


def parts(path: str) -> dict[str, object]:
    stats: dict[tuple[str, int, str], tuple[int, int, float, float, object]] = pstats.Stats(path).stats  # type: ignore[attr-defined]

    def part(file_end: str, function: str) -> dict[str, float | int]:
        found = [(v[3], v[1]) for (f, _line, n), v in stats.items() if f.endswith(file_end) and n == function]
        seconds, calls = max(found, default=(0.0, 0))
        return {"cpu_s": round(seconds, 3), "calls": calls}

    figures: dict[str, object] = {
        "process_cpu_s": round(sum(v[2] for v in stats.values()), 3),
        "function_calls": sum(v[1] for v in stats.values()),
    }
    for name, file_end, function in PARTS:
        figures[name] = part(file_end, function)
    return figures


def main() -> None:
    if len(sys.argv) < 2:
        raise SystemExit("usage: profile_parts.py FILE.prof ...")
    print(json.dumps({path: parts(path) for path in sys.argv[1:]}, indent=2))


if __name__ == "__main__":
    main()

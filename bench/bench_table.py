"""Accelerated rounds per second through the whole table — simulated devices over pseudo-terminals,
drivers, the engine, the SQLite journal (WAL, synchronous=FULL) — and the latency from a device event
reaching the controller to its journal entry being committed (p50, p99).

    python bench/bench_table.py [--rounds 300] [--time-scale 1000] [--log-level warning]
                                [--commit-delay-ms MS] [--devices-process] [--profile]

By default the simulated devices run on the daemon's own event loop, so the daemon's core also pays the
devices' half of every frame: the conservative figure. ``--devices-process`` runs them in a process of
their own (sim_devices/remote.py), as real devices run on their own processors.

Prints JSON (with the process's CPU per round, user + system over every thread, from the table running).
Targets: >= 50 rounds/s; event-to-commit p99 <= 2 ms. Not a test: the figures vary with the
machine and its load (report what was measured, with the load average).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import cProfile
import io
import json
import os
import pstats
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

from controller.config import load_config
from controller.daemon import RunOptions
from controller.logs import configure_logging
from controller.simulation.table import SimulatedTable, SimulationOptions


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--time-scale", type=float, default=1000.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--log-level", default="warning", choices=("debug", "info", "warning", "error"))
    parser.add_argument("--config", type=Path, default=None, help="default: the embedded table")
    parser.add_argument(
        "--commit-delay-ms",
        type=float,
        default=None,
        help="group commit: how long records that release no command may wait (default: the config's)",
    )
    parser.add_argument(
        "--devices-process",
        action="store_true",
        help="the simulated devices in a process of their own (as real devices run on their own "
        "processors); default: on the daemon's event loop",
    )
    parser.add_argument("--profile", action="store_true", help="print the top of a cProfile to stderr")
    args = parser.parse_args()
    # Log lines go nowhere measurable but are still formatted: the cost of the JSON logging is counted.
    configure_logging(level=args.log_level, json_lines=True, stream=open(os.devnull, "w"))  # noqa: SIM115
    config = load_config(args.config)
    with tempfile.TemporaryDirectory(prefix="bench_table-") as directory:
        journal_path = Path(directory) / "journal.sqlite"
        ready: dict[str, float] = {}  # rounds per second count from the table running, not from start-up
        options = RunOptions(journal_path=journal_path, rounds=args.rounds, print_rounds=False)
        simulation = SimulationOptions(
            seed=args.seed,
            autoplay=True,
            time_scale=args.time_scale,
            devices_process=args.devices_process,
            walk_away_rate=0.03,  # as before the demo's default went to 0: figures stay comparable
        )
        table = SimulatedTable(
            config,
            options,
            simulation,
            out=io.StringIO(),
            # Both clocks from the table running: the wall for rounds/s, the process's CPU (user +
            # system, every thread: the journal's writer and checkpoint threads too) for CPU per round.
            on_ready=lambda _: ready.update(s=time.perf_counter(), cpu_s=time.process_time()),
            commit_delay_s=None if args.commit_delay_ms is None else args.commit_delay_ms / 1000,
        )
        profiler = cProfile.Profile() if args.profile else None
        if profiler is not None:
            profiler.enable()
        started_s = time.perf_counter()
        started_cpu_s = time.process_time()
        asyncio.run(table.run())
        ended_s = time.perf_counter()
        ended_cpu_s = time.process_time()
        if profiler is not None:
            profiler.disable()
            stream = io.StringIO()
            pstats.Stats(profiler, stream=stream).sort_stats(
                os.environ.get("BENCH_SORT", "cumulative")
            ).print_stats(45)
            print(stream.getvalue(), file=sys.stderr)
        summary = table.summary
        playing_s = ended_s - ready.get("s", started_s)
        playing_cpu_s = ended_cpu_s - ready.get("cpu_s", started_cpu_s)
        latencies_ms = [value * 1000 for value in summary.commit_latencies_s]
        print(
            json.dumps(
                {
                    "benchmark": "table",
                    "game": config.game,
                    "rounds": summary.rounds_closed,
                    "settled": summary.rounds_settled,
                    "dead": summary.rounds_dead,
                    "voided": summary.rounds_voided,
                    "time_scale": args.time_scale,
                    "log_level": args.log_level,
                    "devices": "own process" if args.devices_process else "daemon's process",
                    "commit_delay_ms": config.journal_commit_delay_ms
                    if args.commit_delay_ms is None
                    else args.commit_delay_ms,
                    "seconds": round(playing_s, 2),
                    "rounds_per_s": round(summary.rounds_closed / playing_s, 2),
                    "cpu_ms_per_round": round(1000 * playing_cpu_s / max(1, summary.rounds_closed), 2),
                    "journal_entries": _count_entries(journal_path),
                    "journal_transactions": _count_entries(journal_path, "DISTINCT time_utc"),
                    "commits_measured": len(latencies_ms),
                    "event_to_commit_ms": {
                        "p50": round(percentile(latencies_ms, 0.50), 3),
                        "p99": round(percentile(latencies_ms, 0.99), 3),
                        "max": round(max(latencies_ms), 3) if latencies_ms else None,
                        "mean": round(statistics.fmean(latencies_ms), 3) if latencies_ms else None,
                    },
                    "targets": {"rounds_per_s": 50, "p99_ms": 2},
                    "load_average": [round(value, 2) for value in os.getloadavg()],
                }
            )
        )


def _count_entries(journal_path: Path, what: str = "*") -> int:
    """Entries, or (DISTINCT time_utc: one time per append_many) the transactions that wrote them."""
    with contextlib.closing(sqlite3.connect(journal_path)) as db:
        return int(db.execute(f"SELECT count({what}) FROM journal").fetchone()[0])


if __name__ == "__main__":
    main()

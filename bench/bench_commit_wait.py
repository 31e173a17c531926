"""What an event waits for between reaching the daemon and its journal entry being committed (issue 28:
"an event never waits more than the one commit in flight plus its own").

    python bench/bench_commit_wait.py [--rounds 150] [--devices-process] [--passes 1]

Runs bench_table.py's table (the default configuration: synchronous=FULL, the group commit as the daemon
runs it) with two observers wrapped around the product's own code, nothing changed in what it does:
``GroupCommit.commit`` (each commit's start and end on the monotonic clock, and each call it covered:
when its event was stamped, when the engine handled it) and ``TableDaemon._publish`` (the loop thread's
CPU when an event was stamped). For every event whose records were committed it splits the wait into
the time before its own commit started and its own commit, and counts the commits that ran in between
(the rule: at most one, the one in flight when the event arrived). For the waits before the own commit
longer than 2 ms it compares the loop thread's CPU with the wall time: CPU much smaller than the wall
means the loop was ready and not running (the machine's other work), not busy with this table.

Prints one JSON line per pass. Not a test: the figures move with the machine's load and the disk.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import controller.daemon as daemon_module
import controller.journal.group_commit as group_commit_module
from controller.config import load_config
from controller.daemon import RunOptions
from controller.logs import configure_logging
from controller.simulation.table import SimulatedTable, SimulationOptions

SLOW_WAIT_S = 0.002


class Call(NamedTuple):
    """One engine call with records, as its commit saw it (monotonic seconds)."""

    received_s: float
    handled_s: float
    commit_started_s: float
    commit_ended_s: float


class Observed:
    """What the wrappers saw during one table run."""

    def __init__(self) -> None:
        self.calls: list[Call] = []
        self.commits: list[tuple[float, float, int]] = []  # start, end, records (0: effects alone)
        self.stamp_cpu_s: dict[float, float] = {}  # received_s -> the loop thread's CPU then
        self.commit_cpu_s: dict[float, float] = {}  # commit start -> the loop thread's CPU then


def observe(observed: Observed) -> Callable[[], None]:
    """Wrap the two methods; returns what undoes it."""
    group_commit = group_commit_module.GroupCommit
    original_commit = group_commit.commit
    original_publish = daemon_module.TableDaemon._publish

    def commit(self: Any) -> Any:
        batch = list(self._waiting)
        started_s = time.monotonic()
        observed.commit_cpu_s[started_s] = time.thread_time()
        done = original_commit(self)
        ended_s = time.monotonic()
        observed.commits.append((started_s, ended_s, sum(len(call.records) for call in batch)))
        for call in batch:
            if call.received_s is not None and call.records:
                observed.calls.append(Call(call.received_s, call.added_s, started_s, ended_s))
        return done

    def publish(self: Any, event: Any) -> None:
        original_publish(self, event)
        received_s = self._event_received_mono_s.get(id(event))
        if received_s is not None:
            observed.stamp_cpu_s[received_s] = time.thread_time()

    group_commit.commit = commit  # type: ignore[method-assign]
    daemon_module.TableDaemon._publish = publish  # type: ignore[method-assign]

    def undo() -> None:
        group_commit.commit = original_commit  # type: ignore[method-assign]
        daemon_module.TableDaemon._publish = original_publish  # type: ignore[method-assign]

    return undo


def percentile_ms(values_s: list[float], fraction: float) -> float:
    ordered = sorted(values_s)
    if not ordered:
        return float("nan")
    return round(1000 * ordered[min(len(ordered) - 1, int(fraction * len(ordered)))], 3)


def commits_between(commits: list[tuple[float, float, int]], since_s: float, until_s: float) -> int:
    """Commits with records that ran (in part) after ``since_s`` and started before ``until_s``."""
    return sum(1 for started, ended, records in commits if records and ended > since_s and started < until_s)


def figures(observed: Observed) -> dict[str, Any]:
    calls = observed.calls
    latencies_s = [call.commit_ended_s - call.received_s for call in calls]
    before_s = [call.commit_started_s - call.received_s for call in calls]
    own_s = [call.commit_ended_s - call.commit_started_s for call in calls]
    with_records = [ended - started for started, ended, records in observed.commits if records]
    p99_s = sorted(latencies_s)[min(len(calls) - 1, int(0.99 * len(calls)))]
    slowest = [call for call in calls if call.commit_ended_s - call.received_s >= p99_s]
    # Commits between the event's arrival and its own: the one in flight is allowed, and with the
    # commit on the loop's thread even that one is finished before the event is read.
    between = [commits_between(observed.commits, c.received_s, c.commit_started_s) for c in calls]
    slow_waits = [call for call in calls if call.commit_started_s - call.received_s > SLOW_WAIT_S]
    cpu_in_slow_waits_ms = [
        1000 * (observed.commit_cpu_s[call.commit_started_s] - observed.stamp_cpu_s[call.received_s])
        for call in slow_waits
        if call.received_s in observed.stamp_cpu_s and call.commit_started_s in observed.commit_cpu_s
    ]
    return {
        "events_committed": len(calls),
        "event_to_commit_ms": {
            "p50": percentile_ms(latencies_s, 0.5),
            "p99": percentile_ms(latencies_s, 0.99),
        },
        "before_own_commit_ms": {"p50": percentile_ms(before_s, 0.5), "p99": percentile_ms(before_s, 0.99)},
        "own_commit_ms": {"p50": percentile_ms(own_s, 0.5), "p99": percentile_ms(own_s, 0.99)},
        "table_commits_with_records": len(with_records),
        "table_commit_ms": {
            "p50": percentile_ms(with_records, 0.5),
            "p99": percentile_ms(with_records, 0.99),
        },
        "most_commits_between_arrival_and_own": max(between, default=0),
        "events_with_a_commit_between": sum(1 for count in between if count),
        "slowest_1pc": {
            "events": len(slowest),
            "before_own_commit_ms_median": round(
                1000 * statistics.median(c.commit_started_s - c.received_s for c in slowest), 3
            ),
            "own_commit_ms_median": round(
                1000 * statistics.median(c.commit_ended_s - c.commit_started_s for c in slowest), 3
            ),
        },
        "waits_over_2ms_before_own_commit": {
            "events": len(slow_waits),
            "wall_ms_mean": round(
                1000 * statistics.fmean(c.commit_started_s - c.received_s for c in slow_waits), 3
            )
            if slow_waits
            else None,
            "loop_thread_cpu_ms_mean": round(statistics.fmean(cpu_in_slow_waits_ms), 3)
            if cpu_in_slow_waits_ms
            else None,
        },
    }


def run_table(args: argparse.Namespace) -> Observed:
    observed = Observed()
    undo = observe(observed)
    try:
        config = load_config(None)
        with tempfile.TemporaryDirectory(prefix="bench_commit_wait-") as directory:
            table = SimulatedTable(
                config,
                RunOptions(
                    journal_path=Path(directory) / "journal.sqlite", rounds=args.rounds, print_rounds=False
                ),
                SimulationOptions(
                    seed=args.seed,
                    autoplay=True,
                    time_scale=1000.0,
                    devices_process=args.devices_process,
                    walk_away_rate=0.03,  # bench_table.py's table
                ),
                out=io.StringIO(),
            )
            asyncio.run(table.run())
    finally:
        undo()
    return observed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=150)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--passes", type=int, default=1)
    parser.add_argument(
        "--devices-process", action="store_true", help="the devices in a process of their own"
    )
    args = parser.parse_args()
    configure_logging(level="warning", json_lines=True, stream=open(os.devnull, "w"))  # noqa: SIM115
    for number in range(1, args.passes + 1):
        result = figures(run_table(args))
        print(
            json.dumps(
                {
                    "pass": number,
                    "rounds": args.rounds,
                    "devices": "own process" if args.devices_process else "daemon's process",
                    **result,
                    "load_average": [round(value, 2) for value in os.getloadavg()],
                }
            ),
            flush=True,
        )


if __name__ == "__main__":
    main()

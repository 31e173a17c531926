"""Accelerated rounds per second through the whole table — simulated devices over pseudo-terminals,
drivers, the engine, the SQLite journal (WAL, synchronous=FULL) — and the latency from a device event
reaching the controller to its journal entry being committed (p50, p99).

    python bench/bench_table.py [--rounds 300] [--time-scale 1000] [--log-level warning]
                                [--commit-delay-ms MS] [--devices-process] [--profile [--profile-out FILE]]
                                [--compare N [--slices K]]

By default the simulated devices run on the daemon's own event loop, so the daemon's core also pays the
devices' half of every frame: the conservative figure. ``--devices-process`` runs them in a process of
their own (sim_devices/remote.py), as real devices run on their own processors.

Prints JSON (with the process's CPU per round, user + system over every thread, from the table running).
Not a test: the figures vary with the machine and its load (report what was measured, with the load
average).

``--compare N`` (issue 28) runs, N times in turn in this one process, the whole table, the engine core
alone on the same game (bench/bench_engine.py's rounds, its CPU per round) and the bare journal
(bench/bench_checkpoints.py's deferred-checkpoint appends, its commit p99), so each ratio meets the
same load: whole-stack CPU per round over the engine core's (target at most 2.5), and event-to-commit
p99 over the bare journal's commit p99 (target at most 1.5). One JSON line per pass, then the medians.
Each pass also prints the floor under the table's CPU a round: the engine core's plus the bare
journal's CPU for as many entries as the table journaled a round (``floor_ratio``: that over the
engine core's alone; the whole stack cannot go below it without a cheaper journal). With ``--slices
K`` each pass also measures the commit ratio with the table and the bare journal alternating in K
slices, each p99 over its pooled samples (``interleaved_commit_p99_ratio``): the same minutes of the
shared disk for both.
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
import random
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

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
    parser.add_argument(
        "--profile", action="store_true", help="print the top of a CPU-time cProfile to stderr"
    )
    parser.add_argument(
        "--profile-out",
        type=Path,
        default=None,
        metavar="FILE",
        help="with --profile: also save the whole profile (pstats) there, to read by caller and layer",
    )
    parser.add_argument(
        "--compare",
        type=int,
        default=0,
        metavar="N",
        help="N passes of table, engine core and bare journal in turn, with their ratios",
    )
    parser.add_argument(
        "--slices",
        type=int,
        default=0,
        metavar="K",
        help="with --compare: also, each pass, the table and the bare journal in K alternating slices "
        "(the rounds and the commits split in K), their p99s pooled: the two meet the same minutes",
    )
    args = parser.parse_args()
    # Log lines go nowhere measurable but are still formatted: the cost of the JSON logging is counted.
    configure_logging(level=args.log_level, json_lines=True, stream=open(os.devnull, "w"))  # noqa: SIM115
    if args.compare:
        compare(args)
        return
    print(json.dumps(table_figures(args)))


def compare(args: argparse.Namespace) -> None:
    """The table, the engine core and the bare journal in turn, ``args.compare`` times."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import bench_checkpoints  # noqa: PLC0415 - bench helpers beside this file
    import bench_engine  # noqa: PLC0415
    import bench_journal  # noqa: PLC0415

    from controller.engine import TableConfig  # noqa: PLC0415

    game = load_config(args.config).game
    engine_config = TableConfig(
        game=game, seats=tuple(range(1, 8)) if game == "chase-the-flush" else (1, 2, 3, 4, 5, 6)
    )
    journal_args = argparse.Namespace(pace_ms=2.0, every=50, dir=Path(tempfile.gettempdir()))
    rounds = bench_journal.engine_rounds("BENCH", 40)
    batches = bench_checkpoints.commits(rounds, 15)
    passes: list[dict[str, float]] = []
    for _ in range(args.compare):
        table = table_figures(args)
        cpu_started_s = time.process_time()
        bench_engine.play(engine_config, bench_engine.ROUNDS_PER_GAME, random.Random(args.seed))
        engine_cpu_ms = 1000 * (time.process_time() - cpu_started_s) / bench_engine.ROUNDS_PER_GAME
        bare = bench_checkpoints.run("deferred", batches, journal_args)
        # The floor under the table's CPU a round, measured in this pass: the engine's own work plus the
        # bare journal's (typing, serialising, hashing, sealing and inserting the same kinds of entries,
        # with their fsync'd commits) for as many entries as the table journaled a round.
        entries_per_round = table["journal_entries"] / max(1, table["rounds"])
        journal_ms_per_entry = 1000 * bare["cpu_s"] / bare["entries"]
        floor_ms = engine_cpu_ms + journal_ms_per_entry * entries_per_round
        figures = {
            "table_cpu_ms_per_round": table["cpu_ms_per_round"],
            "engine_cpu_ms_per_round": round(engine_cpu_ms, 3),
            "engine_rounds_per_s": round(1000 / engine_cpu_ms, 1),
            "cpu_ratio": round(table["cpu_ms_per_round"] / engine_cpu_ms, 2),
            "event_to_commit_p99_ms": table["event_to_commit_ms"]["p99"],
            "bare_commit_p99_ms": bare["append_ms"]["p99"],
            "commit_p99_ratio": round(table["event_to_commit_ms"]["p99"] / bare["append_ms"]["p99"], 2),
            "bare_journal_cpu_ms_per_entry": round(journal_ms_per_entry, 4),
            "journal_entries_per_round": round(entries_per_round, 1),
            "engine_plus_bare_journal_cpu_ms_per_round": round(floor_ms, 3),
            "floor_ratio": round(floor_ms / engine_cpu_ms, 2),
            "table_rounds_per_s": table["rounds_per_s"],
            "journal_transactions_per_round": round(
                table["journal_transactions"] / max(1, table["rounds"]), 2
            ),
        }
        if args.slices > 1:
            figures.update(interleaved(args, rounds, journal_args))
        passes.append(figures)
        print(json.dumps({"pass": len(passes), **figures, "load_average": table["load_average"]}), flush=True)
    medians = {key: round(statistics.median(p[key] for p in passes), 3) for key in passes[0]}
    print(
        json.dumps(
            {
                "benchmark": "table vs engine core vs bare journal",
                "game": game,
                "passes": len(passes),
                "medians": medians,
                "targets": {"cpu_ratio": 2.5, "commit_p99_ratio": 1.5},
                "load_average": [round(value, 2) for value in os.getloadavg()],
            }
        )
    )


def interleaved(
    args: argparse.Namespace, rounds: list[list[Any]], journal_args: argparse.Namespace
) -> dict[str, Any]:
    """Event-to-commit p99 over the bare journal's commit p99 with both measured in ``args.slices``
    alternating slices (a slice of the table's rounds, then a slice of the bare journal's commits, and
    so on), each p99 over its pooled samples. In one pass the table runs for minutes and the bare
    journal for seconds after it; on a disk and two cores that other work shares, the two p99s then
    meet different moments (docs/operations.md "Issue 28: what an event waits for before its commit").
    Sliced, both sample the same minutes."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import bench_checkpoints  # noqa: PLC0415 - bench helpers beside this file

    slices = args.slices
    slice_args = argparse.Namespace(**{**vars(args), "rounds": max(1, args.rounds // slices)})
    # The bare journal's rounds split whole (a journal refuses a round's entries without its start),
    # each slice appended in 15-entry commits as the whole pass's are.
    per_slice = max(1, len(rounds) // slices)
    table_ms: list[float] = []
    bare_ms: list[float] = []
    for number in range(slices):
        table_figures(slice_args, table_ms)
        part = bench_checkpoints.commits(rounds[number * per_slice : (number + 1) * per_slice], 15)
        bench_checkpoints.run("deferred", part, journal_args, bare_ms)
    table_p99_ms = percentile(table_ms, 0.99)
    bare_p99_ms = percentile(bare_ms, 0.99)
    return {
        "interleaved_slices": slices,
        "interleaved_event_to_commit_p99_ms": round(table_p99_ms, 3),
        "interleaved_bare_commit_p99_ms": round(bare_p99_ms, 3),
        "interleaved_commit_p99_ratio": round(table_p99_ms / bare_p99_ms, 2),
    }


def table_figures(args: argparse.Namespace, samples_ms: list[float] | None = None) -> dict[str, Any]:
    """One run of the whole table, its figures. ``samples_ms``: each event-to-commit latency is added
    to it too (``interleaved`` pools them across slices)."""
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
        # CPU time by function (the process's clock: a wait on the disk or the loop is not counted).
        profiler = cProfile.Profile(time.process_time) if args.profile else None
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
            if getattr(args, "profile_out", None) is not None:
                profiler.dump_stats(args.profile_out)
            layers_ms = cpu_by_layer(pstats.Stats(profiler))
            print(json.dumps({"cpu_ms_by_layer": layers_ms}), file=sys.stderr)
        summary = table.summary
        playing_s = ended_s - ready.get("s", started_s)
        playing_cpu_s = ended_cpu_s - ready.get("cpu_s", started_cpu_s)
        latencies_ms = [value * 1000 for value in summary.commit_latencies_s]
        if samples_ms is not None:
            samples_ms.extend(latencies_ms)
        return {
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
            "load_average": [round(value, 2) for value in os.getloadavg()],
        }


# Where a function's file lies -> the layer it belongs to (the first match wins).
LAYERS: tuple[tuple[str, str], ...] = (
    ("firmware_protocol/framing", "framing"),
    ("firmware_protocol/messages", "protocol messages"),
    # Split out of messages.py (issue 29): still the protocol's messages.
    ("firmware_protocol/field_codecs", "protocol messages"),
    ("firmware_protocol/vocabulary", "protocol messages"),
    ("firmware_protocol/crypto", "protocol messages"),
    ("firmware_protocol/runner", "link runner (asyncio)"),
    ("firmware_protocol/", "link"),
    ("drivers/", "drivers"),
    ("sim_devices/", "simulated devices"),
    ("controller/simulated_players", "simulated devices"),
    ("controller/simulation/", "simulated devices"),
    ("controller/engine/", "engine"),
    ("controller/rules/", "engine"),
    ("controller/journal/", "journal"),
    ("sqlite3", "journal"),
    ("controller/daemon", "daemon"),
    ("asyncio/queues", "daemon queue"),
    ("controller/one_queue", "daemon queue"),  # the daemon's own queue since issue 28
    ("structlog", "logging"),
    ("logging/", "logging"),
    ("controller/logs", "logging"),
    ("asyncio/", "event loop and pty I/O"),
    ("selectors", "event loop and pty I/O"),
    ("posix.read", "event loop and pty I/O"),
    ("posix.write", "event loop and pty I/O"),
    ("select.epoll", "event loop and pty I/O"),
    ("serial/", "event loop and pty I/O"),
)


def _layer(key: tuple[str, int, str]) -> str | None:
    where = f"{key[0]}:{key[2]}"
    for fragment, layer in LAYERS:
        if fragment in where:
            return layer
    return None


def cpu_by_layer(stats: pstats.Stats) -> dict[str, float]:
    """CPU milliseconds by layer: each function's own time to its file's layer; a function of no layer
    (a builtin, the standard library's json or hashlib) to its callers' layers, in proportion to the
    time each caller spent in it, up to a few calls up."""
    table: dict[tuple[str, int, str], Any] = stats.stats  # type: ignore[attr-defined]
    totals: dict[str, float] = {}

    def charge(key: tuple[str, int, str], seconds: float, depth: int) -> None:
        layer = _layer(key)
        if layer is not None or depth >= 4:
            name = layer or "other"
            totals[name] = totals.get(name, 0.0) + seconds
            return
        callers: dict[tuple[str, int, str], tuple[Any, ...]] = table[key][4] if key in table else {}
        spent = sum(caller[2] for caller in callers.values())
        if not callers or spent <= 0:
            totals["other"] = totals.get("other", 0.0) + seconds
            return
        for caller, figures in callers.items():
            charge(caller, seconds * figures[2] / spent, depth + 1)

    for key, figures in table.items():
        charge(key, figures[2], 0)
    return {name: round(seconds * 1000, 1) for name, seconds in sorted(totals.items(), key=lambda kv: -kv[1])}


def _count_entries(journal_path: Path, what: str = "*") -> int:
    """Entries, or (DISTINCT time_utc: one time per append_many) the transactions that wrote them."""
    with contextlib.closing(sqlite3.connect(journal_path)) as db:
        return int(db.execute(f"SELECT count({what}) FROM journal").fetchone()[0])


if __name__ == "__main__":
    main()

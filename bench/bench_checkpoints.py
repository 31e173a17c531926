"""The journal's WAL checkpoints inside the commits or beside them (docs/journal.md "Checkpoints"),
printed as JSON: each append's time (p50, p90, p99, p99.9, max), the process's CPU and the WAL's
largest size, with SQLite's automatic checkpoint ("sqlite") and with it deferred and a thread
catching up every ``--every`` commits on a connection of its own and the writer finishing between two
commits when the thread could not, as the daemon runs them ("deferred").

    python bench/bench_checkpoints.py [--rounds 40] [--per-commit 15] [--pace-ms 2] [--every 50]
                                      [--repeat 2] [--dir DIR]

The appends are the round engine's own records (autoplay sessions of every game with faults, as
bench/bench_journal.py makes them), cut into commits of ``--per-commit`` entries (about what the
daemon's group commit writes at the default delay), ``--pace-ms`` apart as the daemon commits them.
The journal is written under DIR (default: the current directory, a real disk: the fsyncs are the
point). Not a test: the figures move with the disk's other writers; report the load average.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_journal import engine_rounds

from controller.daemon_checkpoints import catch_up
from controller.journal import Journal
from controller.logs import configure_logging


def percentile_ms(samples_s: list[float], fraction: float) -> float:
    ordered = sorted(samples_s)
    return round(ordered[min(len(ordered) - 1, int(fraction * len(ordered)))] * 1000, 3)


def commits(rounds: list[list[Any]], per_commit: int) -> list[list[Any]]:
    return [
        batch[start : start + per_commit] for batch in rounds for start in range(0, len(batch), per_commit)
    ]


def run(
    mode: str, batches: list[list[Any]], args: argparse.Namespace, samples_ms: list[float] | None = None
) -> dict[str, Any]:
    """The batches appended one commit each; its figures. ``samples_ms``: each commit's time is added
    to it too (bench_table.py pools them across slices)."""
    with tempfile.TemporaryDirectory(prefix="bench-checkpoints-", dir=args.dir) as directory:
        path = Path(directory) / "journal.sqlite"
        wal = path.with_name(path.name + "-wal")
        journal = Journal.open(path, "BENCH")
        checkpointer: Journal | None = None
        thread = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="checkpoints")
        if mode == "deferred":
            journal.wal.defer_checkpoints()
            checkpointer = Journal.open_existing(path, readonly=False)
        samples_s: list[float] = []
        wal_bytes = 0
        catching_up: concurrent.futures.Future[bool] | None = None
        cpu_started_s = time.process_time()
        for number, batch in enumerate(batches, start=1):
            started_s = time.perf_counter()
            journal.append_many(batch)
            samples_s.append(time.perf_counter() - started_s)
            if catching_up is not None and catching_up.done():
                if not catching_up.result():  # as the daemon does: the writer copies the rest
                    journal.wal.checkpoint()
                catching_up = None
            if checkpointer is not None and catching_up is None and number % args.every == 0:
                catching_up = thread.submit(catch_up, checkpointer)
            wal_bytes = max(wal_bytes, wal.stat().st_size if wal.exists() else 0)
            time.sleep(args.pace_ms / 1000)
        thread.shutdown(wait=True)
        cpu_s = time.process_time() - cpu_started_s
        if samples_ms is not None:
            samples_ms.extend(1000 * sample_s for sample_s in samples_s)
        if checkpointer is not None:
            checkpointer.close()
        journal.close()
    return {
        "mode": mode,
        "commits": len(samples_s),
        "entries": sum(len(batch) for batch in batches),
        "append_ms": {
            "p50": percentile_ms(samples_s, 0.50),
            "p90": percentile_ms(samples_s, 0.90),
            "p99": percentile_ms(samples_s, 0.99),
            "p99.9": percentile_ms(samples_s, 0.999),
            "max": round(max(samples_s) * 1000, 3),
            "mean": round(statistics.fmean(samples_s) * 1000, 3),
        },
        "cpu_s": round(cpu_s, 3),
        "wal_largest_mb": round(wal_bytes / 1e6, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=40, help="rounds of each game")
    parser.add_argument("--per-commit", type=int, default=15, help="entries a commit")
    parser.add_argument("--pace-ms", type=float, default=2.0, help="pause between commits")
    parser.add_argument("--every", type=int, default=50, help="deferred: commits between catch-ups")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--dir", type=Path, default=Path.cwd())
    args = parser.parse_args()
    configure_logging(level="warning", json_lines=True, stream=open(os.devnull, "w"))  # noqa: SIM115
    batches = commits(engine_rounds("BENCH", args.rounds), args.per_commit)
    for _ in range(args.repeat):
        for mode in ("sqlite", "deferred"):
            figures = run(mode, batches, args)
            figures["load_average"] = [round(value, 2) for value in os.getloadavg()]
            print(json.dumps(figures), flush=True)


if __name__ == "__main__":
    main()

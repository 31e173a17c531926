"""Journal figures, printed as JSON: the commit latency of one append (WAL, synchronous=FULL: each
commit fsyncs), of a batch, and how fast the chain verifies and the state rebuilds.

The daemon's target is device-event-to-commit p99 <= 10 ms; the append is most of that path.

    python bench/bench_journal.py [--appends N] [--dir DIR]

The journal is written on the disk under DIR (default: a temporary directory under the current one,
so the fsyncs reach a real disk, not a tmpfs)."""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

from controller.journal import Journal, PendingEntry
from controller.journal.meters import compute_meters
from controller.journal.recall import recall_from
from controller.journal.recovery import rebuild_state
from controller.journal.verify import verify_chain
from controller.logs import configure_logging

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.journal.scripted import play_round


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def figures_ms(samples_s: list[float]) -> dict[str, float]:
    return {
        "p50_ms": round(percentile(samples_s, 0.50) * 1000, 3),
        "p99_ms": round(percentile(samples_s, 0.99) * 1000, 3),
        "max_ms": round(max(samples_s) * 1000, 3),
        "mean_ms": round(statistics.fmean(samples_s) * 1000, 3),
    }


def raw_sqlite_commits(directory: Path, count: int) -> list[float]:
    """The floor under any journal on this disk: a bare INSERT + COMMIT with the same settings, no
    Python work around it (no hashing, JSON, triggers or logging)."""
    connection = sqlite3.connect(directory / "raw.sqlite", isolation_level=None)
    connection.execute("PRAGMA journal_mode = WAL")
    connection.execute("PRAGMA synchronous = FULL")
    connection.execute("CREATE TABLE t (seq INTEGER PRIMARY KEY, payload TEXT)")
    samples: list[float] = []
    for _ in range(count):
        started = time.perf_counter()
        connection.execute("BEGIN IMMEDIATE")
        connection.execute("INSERT INTO t (payload) VALUES (?)", ('{"card":"As","index":3,"position":1}',))
        connection.execute("COMMIT")
        samples.append(time.perf_counter() - started)
    connection.close()
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--appends", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=300, help="rounds journaled for the read figures")
    parser.add_argument("--dir", type=Path, default=Path.cwd())
    args = parser.parse_args()
    # Logs as the daemon writes them (JSON lines), to /dev/null: their cost is part of an append.
    sink = open(os.devnull, "w")  # noqa: SIM115  (open for the whole run)
    configure_logging(json_lines=True, stream=sink)
    workdir = Path(tempfile.mkdtemp(prefix="bench-journal-", dir=args.dir))
    try:
        path = workdir / "journal.sqlite"
        journal = Journal.open(path, "BENCH")
        single: list[float] = []
        for index in range(args.appends):
            payload = {"position": index % 7, "index": index % 7, "card": "As"}
            started = time.perf_counter()
            journal.append("card_dealt", payload, round_id="RBENCH-20261129-000001", source="shuffler")
            single.append(time.perf_counter() - started)
        batch_size = 10
        batches: list[float] = []
        for index in range(max(1, args.appends // batch_size)):
            items = [
                PendingEntry(
                    "bet_changed",
                    {
                        "seat": s,
                        "wager": "ante",
                        "amount_cents": 500 + index,
                        "chip_count": 1,
                        "locked": False,
                    },
                    None,
                    "sensors",
                )
                for s in range(batch_size)
            ]
            started = time.perf_counter()
            journal.append_many(items)
            batches.append(time.perf_counter() - started)

        rng = random.Random(1)
        started = time.perf_counter()
        for _ in range(args.rounds):
            play_round(journal, rng, game=rng.choice(("high-card-flush", "top-flush", "chase-the-flush")))
        rounds_s = time.perf_counter() - started
        entries = journal.last_entry().seq  # type: ignore[union-attr]

        started = time.perf_counter()
        result = verify_chain(path)
        verify_s = time.perf_counter() - started
        assert result.ok, result.summary()
        started = time.perf_counter()
        rebuild_state(journal)
        rebuild_s = time.perf_counter() - started
        started = time.perf_counter()
        recall_from(journal, last=10)
        recall_s = time.perf_counter() - started
        started = time.perf_counter()
        compute_meters(journal)
        meters_s = time.perf_counter() - started
        journal.close()
        raw = raw_sqlite_commits(workdir, args.appends)
        print(
            json.dumps(
                {
                    "benchmark": "journal",
                    "settings": {"journal_mode": "wal", "synchronous": "FULL", "dir": str(args.dir)},
                    "append_one_entry": {"count": len(single), **figures_ms(single)},
                    f"append_batch_of_{batch_size}": {"count": len(batches), **figures_ms(batches)},
                    "bare_sqlite_commit_same_disk": {"count": len(raw), **figures_ms(raw)},
                    "load_average_1min": round(os.getloadavg()[0], 2),
                    "rounds_journaled_in_one_batch_each": {
                        "rounds": args.rounds,
                        "rounds_per_s": round(args.rounds / rounds_s, 1),
                    },
                    "journal_entries": entries,
                    "verify_entries_per_s": round(entries / verify_s),
                    "rebuild_state_ms": round(rebuild_s * 1000, 1),
                    "recall_last_10_ms": round(recall_s * 1000, 1),
                    "meters_ms": round(meters_s * 1000, 1),
                    "target": "append p99 <= 10 ms (device event to journal commit)",
                },
                indent=2,
            )
        )
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
        sink.close()


if __name__ == "__main__":
    main()

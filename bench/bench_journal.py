"""Journal figures, printed as JSON: append throughput and latency (WAL, synchronous=FULL: each commit
fsyncs), the reducer's replay of a whole journal (entries/s on one core), verify, recall and meters.

    python bench/bench_journal.py [--appends N] [--rounds N] [--dir DIR]

Targets (issue "the journal as a typed contract"): replay >= 200,000 entries/s on one core; append no
more than 10% slower than the untyped journal before it. To measure "before", run this same script
from a checkout of the earlier commit (`git worktree add /tmp/before 82ac310`, copy this file there):
it uses only what both versions have (``Journal.append``/``append_many`` with the writer's fields as a
dict) and, where the one reducer does not exist yet, replays with what the panel used then (its own
fold of every entry, ``TableView.apply``) — the "replay" figure's ``reader`` field says which.

The workloads are the same in both: one card dealt per commit; ten bet changes per commit; and whole
rounds as the round engine records them (an autoplay session of every game with faults, its records
appended one round per commit, as the daemon appends them: the engine's own records, typed where the
engine types its entries). The journal is written on the disk under DIR (default: the current
directory, so the fsyncs reach a real disk, not a tmpfs). A bare SQLite INSERT + COMMIT on the same
disk is timed alongside: the floor under any journal.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import msgspec

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from controller.journal import Journal, PendingEntry
from controller.journal.meters import compute_meters
from controller.journal.recall import recall_from
from controller.journal.verify import verify_chain
from controller.logs import configure_logging
from tests.engine.test_autoplay import CONFIGS, play_session


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
    """The floor under any journal on this disk: a bare INSERT + COMMIT with the same settings."""
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


def engine_rounds(table_id: str, rounds_per_game: int) -> list[list[Any]]:
    """Whole rounds as the round engine records them (faulted autoplay sessions of every game), each
    round's records as one list: the engine's own records, as the daemon hands them to the journal
    (typed entries where the engine types them; the writer's dicts before that)."""
    batches: list[list[Any]] = []
    for game_index, (name, config) in enumerate(sorted(CONFIGS.items())):
        table = play_session(
            dataclasses.replace(config, table_id=table_id),
            rounds=rounds_per_game,
            seed=sum(map(ord, name)),
            fault_rate=0.1,
        )
        current: list[Any] = []
        start = len(batches)
        for record in table.journal():
            current.append(record)
            if record.kind in ("round_settled", "round_dead", "round_voided"):
                batches.append(current)
                current = []
        if current:
            batches.append(current)
        batches[start:] = retagged(batches[start:], f"G{game_index}")
    return batches


def retagged(batches: Iterable[list[Any]], tag: str) -> list[list[Any]]:
    """The rounds with their ids made unique for this copy (a journal starts each round once)."""
    out: list[list[Any]] = []
    for batch in batches:
        records: list[Any] = []
        for record in batch:
            new_id = f"{record.round_id}{tag}" if record.round_id is not None else None
            changes: dict[str, Any] = {"round_id": new_id}
            if record.kind == "round_started":
                if hasattr(record, "entry"):  # a typed entry
                    changes["entry"] = msgspec.structs.replace(record.entry, round_id=new_id)
                else:
                    changes["payload"] = {**record.payload, "round_id": new_id}
            records.append(dataclasses.replace(record, **changes))
        out.append(records)
    return out


def append_rounds(journal: Journal, batches: Iterable[list[Any]]) -> tuple[int, float]:
    entries = 0
    started = time.perf_counter()
    for batch in batches:
        journal.append_many(batch)
        entries += len(batch)
    return entries, time.perf_counter() - started


def replayer() -> tuple[str, Callable[[Journal], int]]:
    """The one reducer where it exists; before it, the panel's fold of every entry (the widest reader
    of the untyped journal)."""
    # The import depends on which version of the code this runs against (see the module docstring).
    try:
        from controller.journal.state import TableState  # noqa: PLC0415
    except ImportError:
        from controller.panel.view import TableView  # noqa: PLC0415

        def old_fold(journal: Journal) -> int:
            view = TableView(journal.table_id)
            count = 0
            for entry in journal.entries():
                view.apply(entry)
                count += 1
            return count

        return "panel TableView.apply over Journal.entries (before the one reducer)", old_fold

    def fold(journal: Journal) -> int:
        state = TableState(journal.table_id)
        count = 0
        for stored in journal.replay():
            state.apply(stored)
            count += 1
        return count

    return "TableState.apply over Journal.replay (typed entries)", fold


def timed(run: Callable[[], Any]) -> float:
    started = time.perf_counter()
    run()
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--appends", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=60, help="rounds of each game for the round figures")
    parser.add_argument(
        "--replay-copies", type=int, default=20, help="copies of the rounds in the replay journal"
    )
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
        journal.close()

        # Whole rounds, one commit each, into a journal of their own (durable, as the daemon writes).
        rounds = engine_rounds("BENCH", args.rounds)
        rounds_path = workdir / "rounds.sqlite"
        with Journal.open(rounds_path, "BENCH") as rounds_journal:
            round_entries, rounds_s = append_rounds(rounds_journal, rounds)

        # The replay journal: the same rounds many times over, written without fsyncs (its reading is
        # what is measured here, not its writing).
        replay_path = workdir / "replay.sqlite"
        with Journal.open(replay_path, "BENCH", synchronous="OFF") as replay_journal:
            for copy in range(args.replay_copies):
                append_rounds(replay_journal, retagged(rounds, f"C{copy}"))
        with Journal.open_existing(replay_path) as reading:
            reader, fold = replayer()
            fold(reading)  # warm the page cache: the figure is the reducer's, not the disk's
            replay_samples = []
            replayed = 0
            for _ in range(3):
                started = time.perf_counter()
                replayed = fold(reading)
                replay_samples.append(time.perf_counter() - started)
            replay_s = min(replay_samples)
            recall_s = timed(lambda: recall_from(reading, last=10))
            meters_s = timed(lambda: compute_meters(reading))
        verify_s = timed(lambda: verify_chain(replay_path))
        raw = raw_sqlite_commits(workdir, args.appends)
        print(
            json.dumps(
                {
                    "benchmark": "journal",
                    "settings": {"journal_mode": "wal", "synchronous": "FULL", "dir": str(args.dir)},
                    "append_one_entry": {
                        "count": len(single),
                        "entries_per_s": round(len(single) / sum(single)),
                        **figures_ms(single),
                    },
                    f"append_batch_of_{batch_size}": {
                        "count": len(batches),
                        "entries_per_s": round(batch_size * len(batches) / sum(batches)),
                        **figures_ms(batches),
                    },
                    "append_engine_rounds_one_commit_each": {
                        "rounds": len(rounds),
                        "entries": round_entries,
                        "rounds_per_s": round(len(rounds) / rounds_s, 1),
                        "entries_per_s": round(round_entries / rounds_s),
                    },
                    "bare_sqlite_commit_same_disk": {"count": len(raw), **figures_ms(raw)},
                    "replay": {
                        "reader": reader,
                        "entries": replayed,
                        "entries_per_s_one_core": round(replayed / replay_s),
                        "seconds": round(replay_s, 3),
                    },
                    "verify_entries_per_s": round(replayed / verify_s),
                    "recall_last_10_ms": round(recall_s * 1000, 1),
                    "meters_ms": round(meters_s * 1000, 1),
                    "load_average_1min": round(os.getloadavg()[0], 2),
                    "targets": {"replay_entries_per_s": 200_000, "append_vs_before": "<= 10% slower"},
                },
                indent=2,
            )
        )
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
        sink.close()


if __name__ == "__main__":
    main()

"""The floor under the table's CPU a round (issue 28 item 3): what the journal's durable write of a
round's entries costs, measured alone, against what the whole journal append costs. Prints JSON.

    python bench/bench_journal_floor.py [--rounds 40] [--per-commit 10] [--entries-per-round 95]
                                        [--engine-ms-per-round MS] [--dir DIR] [--journal-only]

The same entries (the round engine's own records of seeded faulted autoplay sessions of every game, as
bench/bench_journal.py makes them), cut into commits of ``--per-commit`` entries (the table commits a
round's ~95 entries in ~10 commits: bench_table's ``journal_transactions_per_round``), written four
ways on the same disk, each a fresh file in WAL mode with synchronous=FULL (every COMMIT fsyncs the
WAL), checkpoints deferred as the daemon defers them, CPU of the process (user + system) per entry:

- ``journal``: ``Journal.append_many``, the product: typing, canonical JSON, the private part sealed,
  the chain hash, the INSERT with the schema's triggers and indexes, the totals, the COMMIT;
- ``sql_as_journal``: the rows ``journal`` wrote (their exact bytes, read back) inserted with the
  writer's own statements (BEGIN IMMEDIATE, the last entry read, the multi-row INSERT into the
  journal's schema with its triggers and indexes, COMMIT), no Python work per entry: the SQLite half;
- ``plain_table``: the same rows into a table of the same columns with no index and no trigger, BEGIN /
  INSERT / COMMIT: the fsync'd write of the round's bytes alone, the floor under any journal;
- ``commit_only``: one empty-payload row a commit, as many commits: the fsync'd commit's own cost.

``--engine-ms-per-round`` (the engine core's CPU a round, bench_table --compare's
``engine_cpu_ms_per_round``; default: measured here with bench_engine's rounds) turns each figure into a
ratio: (engine + that write for ``--entries-per-round`` entries) / engine, the lowest whole-stack
ratio that write leaves. Not a test: the figures move with the disk and the load (report both).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_checkpoints import commits
from bench_journal import engine_rounds

from controller.journal import Journal
from controller.journal.schema import COLUMNS, ROW_PLACEHOLDERS
from controller.logs import configure_logging

_BACKSTOP_PAGES = 10_000  # as WalControl.defer_checkpoints: no checkpoint inside the measured commits


def _connect(path: Path) -> sqlite3.Connection:
    connection = sqlite3.connect(path, isolation_level=None)
    connection.execute("PRAGMA journal_mode = WAL")
    connection.execute("PRAGMA synchronous = FULL")
    connection.execute(f"PRAGMA wal_autocheckpoint = {_BACKSTOP_PAGES}")
    return connection


def _cpu_s(work: Callable[[], object]) -> float:
    started_s = time.process_time()
    work()
    return time.process_time() - started_s


def journal_cpu_s(path: Path, batches: Sequence[Sequence[Any]]) -> float:
    """The product's append of every batch, one commit each."""
    with Journal.open(path, "BENCH") as journal:
        journal.wal.defer_checkpoints()

        def work() -> None:
            for batch in batches:
                journal.append_many(batch)

        return _cpu_s(work)


def _insert_sql(rows: int) -> str:
    return f"INSERT INTO journal ({COLUMNS}) VALUES {', '.join([ROW_PLACEHOLDERS] * rows)}"


def _write_in_commits(
    connection: sqlite3.Connection, rows: list[tuple[Any, ...]], sizes: Sequence[int], *, read_head: bool
) -> None:
    """The rows in one fsync'd commit per size, in order; ``read_head``: each commit first reads the
    journal's last entry, as the writer does to chain the batch."""
    start = 0
    for size in sizes:
        chunk = rows[start : start + size]
        start += size
        connection.execute("BEGIN IMMEDIATE")
        if read_head:
            connection.execute("SELECT seq, hash, time_utc FROM journal ORDER BY seq DESC LIMIT 1").fetchone()
        connection.execute(_insert_sql(len(chunk)), [value for row in chunk for value in row])
        connection.execute("COMMIT")


def sql_as_journal_cpu_s(path: Path, rows: list[tuple[Any, ...]], sizes: Sequence[int]) -> float:
    """The written rows again, into a fresh journal file (its schema, triggers and indexes), with the
    writer's statements and nothing else."""
    Journal.open(path, "BENCH").close()  # the schema, as the product creates it
    connection = _connect(path)

    try:
        return _cpu_s(lambda: _write_in_commits(connection, rows, sizes, read_head=True))
    finally:
        connection.close()


def plain_table_cpu_s(path: Path, rows: list[tuple[Any, ...]], sizes: Sequence[int]) -> float:
    """The same rows' bytes into a bare table: the fsync'd write alone."""
    connection = _connect(path)
    connection.execute(
        "CREATE TABLE journal (seq INTEGER PRIMARY KEY, time_utc TEXT, table_id TEXT, round_id TEXT, "
        "source TEXT, kind TEXT, version INTEGER, payload TEXT, private TEXT, private_digest TEXT, "
        "prev_hash TEXT, hash TEXT)"
    )

    try:
        return _cpu_s(lambda: _write_in_commits(connection, rows, sizes, read_head=False))
    finally:
        connection.close()


def commit_only_cpu_s(path: Path, count: int) -> float:
    """``count`` fsync'd commits of one tiny row each."""
    connection = _connect(path)
    connection.execute("CREATE TABLE t (seq INTEGER PRIMARY KEY, payload TEXT)")

    def work() -> None:
        for _ in range(count):
            connection.execute("BEGIN IMMEDIATE")
            connection.execute("INSERT INTO t (payload) VALUES ('')")
            connection.execute("COMMIT")

    try:
        return _cpu_s(work)
    finally:
        connection.close()


def engine_ms_per_round(game_seed: int) -> float:
    """The engine core's CPU a round (bench_engine's rounds of the default High Card Flush table)."""
    import bench_engine  # noqa: PLC0415 - a bench helper beside this file

    from controller.engine import TableConfig  # noqa: PLC0415

    config = TableConfig(game="high-card-flush", seats=(1, 2, 3, 4, 5, 6))
    rounds = bench_engine.ROUNDS_PER_GAME
    cpu_s = _cpu_s(lambda: bench_engine.play(config, rounds, random.Random(game_seed)))
    return 1000 * cpu_s / rounds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=40, help="rounds of each game")
    parser.add_argument("--per-commit", type=int, default=10)
    parser.add_argument("--entries-per-round", type=float, default=95.0)
    parser.add_argument("--engine-ms-per-round", type=float, default=None)
    parser.add_argument("--dir", type=Path, default=Path.cwd(), help="where the files go (a real disk)")
    parser.add_argument(
        "--journal-only",
        action="store_true",
        help="only the product's append (to compare two checkouts: run this file from each, in turn)",
    )
    args = parser.parse_args()
    configure_logging(level="warning", json_lines=True, stream=open(os.devnull, "w"))  # noqa: SIM115
    batches = commits(engine_rounds("BENCH", args.rounds), args.per_commit)
    sizes = [len(batch) for batch in batches]
    entries = sum(sizes)
    with tempfile.TemporaryDirectory(prefix="bench-journal-floor-", dir=args.dir) as directory:
        root = Path(directory)
        cpu_s = {"journal": journal_cpu_s(root / "journal.sqlite", batches)}
        if not args.journal_only:
            with contextlib.closing(sqlite3.connect(root / "journal.sqlite")) as written:
                rows = written.execute(f"SELECT {COLUMNS} FROM journal ORDER BY seq").fetchall()
            cpu_s["sql_as_journal"] = sql_as_journal_cpu_s(root / "sql.sqlite", rows, sizes)
            cpu_s["plain_table"] = plain_table_cpu_s(root / "plain.sqlite", rows, sizes)
            cpu_s["commit_only"] = commit_only_cpu_s(root / "commits.sqlite", len(sizes))
    engine_ms = args.engine_ms_per_round if args.engine_ms_per_round is not None else engine_ms_per_round(1)
    per_entry_us = {name: 1e6 * seconds / entries for name, seconds in cpu_s.items()}
    per_round_ms = {name: us * args.entries_per_round / 1000 for name, us in per_entry_us.items()}
    print(
        json.dumps(
            {
                "benchmark": "journal floor",
                "entries": entries,
                "commits": len(sizes),
                "entries_per_commit": round(entries / len(sizes), 2),
                "cpu_us_per_entry": {name: round(us, 2) for name, us in per_entry_us.items()},
                "entries_per_round": args.entries_per_round,
                "cpu_ms_per_round": {name: round(ms, 3) for name, ms in per_round_ms.items()},
                "engine_cpu_ms_per_round": round(engine_ms, 3),
                "ratio_floor_engine_plus": {
                    name: round((engine_ms + ms) / engine_ms, 2) for name, ms in per_round_ms.items()
                },
                "target_ratio": 2.5,
                "load_average": [round(value, 2) for value in os.getloadavg()],
            }
        )
    )


if __name__ == "__main__":
    main()

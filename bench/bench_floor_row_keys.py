"""The cost of checking the entries of floor_locked_wagers and floor_day_figures (migrations 15 and 16) on
the floor's batch COPY, printed as JSON.

    nice -n 10 python bench/bench_floor_row_keys.py [--batches 20] [--entries 500] [--turns 5]

One PostgreSQL cluster (started here, in a temporary directory), three databases at today's schema, one a
variant: as migrated (a statement trigger a COPY checks its rows' entries exist: one anti-join), with no
check, with a FOREIGN KEY (table_id, seq) REFERENCES floor_entries instead (a check and a row lock a row).
Batches like the floor service's (controller/floor/store.py ``write_batch``: the entries' COPY, then the
wagers', then the figures', one transaction): each batch half bets_locked (two wagers each), half
round_settled (two figures each). The databases take turns; each turn reports the PostgreSQL
backend's CPU ms per 1,000 rows (from /proc, the machine's load counts less than in wall time) and the
wall ms per batch, median over its batches.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from controller.floor import schema
from controller.floor.store import _COPY_ENTRIES, _COPY_LOCKED_WAGERS, COPY_DAY_FIGURES
from controller.simulation.floor.servers import PostgresCluster, free_port

_TICKS_PER_S = os.sysconf("SC_CLK_TCK")
_TIME = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
_LOCK = '{"wagers":{"1":{"main":500,"progressive":100}}}'
_SETTLED = '{"settlement":{"game":"top-flush"}}'


# The variants: as migrated (a statement trigger a COPY, its anti-join), neither check, a FOREIGN KEY.
_DROP_CHECKS = (
    "DROP TRIGGER floor_locked_wagers_of_entries ON floor_locked_wagers",
    "DROP TRIGGER floor_day_figures_of_entries ON floor_day_figures",
)
_FOREIGN_KEYS = tuple(
    f"ALTER TABLE {table} ADD FOREIGN KEY (table_id, seq) REFERENCES floor_entries (table_id, seq)"
    for table in ("floor_locked_wagers", "floor_day_figures")
)
_VARIANTS: dict[str, tuple[str, ...]] = {
    "statement_check": (),
    "no_check": _DROP_CHECKS,
    "foreign_key": (*_DROP_CHECKS, *_FOREIGN_KEYS),
}


def _backend_cpu_s(pid: int) -> float:
    """utime + stime of a PostgreSQL backend (this machine's /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICKS_PER_S


def _batch(table_id: str, first_seq: int, entries: int) -> tuple[list[Any], list[Any], list[Any]]:
    rows: list[Any] = []
    wagers: list[Any] = []
    figures: list[Any] = []
    for seq in range(first_seq, first_seq + entries):
        locking = seq % 2 == 0
        rows.append((table_id, seq, _TIME, "2026-01-02T03:04:05.000000Z", "R1", "engine",
                     "bets_locked" if locking else "round_settled", 1, _LOCK if locking else _SETTLED, None,
                     "0" * 64, "1" * 64, seq, *(None,) * 11, 2))  # fmt: skip
        if locking:
            wagers += [
                (table_id, seq, "R1", "1", "main", 500),
                (table_id, seq, "R1", "1", "progressive", 100),
            ]
        else:
            figures += [(table_id, seq, _TIME, "rounds_settled", "", 1, 1),
                        (table_id, seq, _TIME, "game", "top-flush", 1, 1)]  # fmt: skip
    return rows, wagers, figures


def _turn(
    connection: psycopg.Connection[Any], pid: int, turn: int, batches: int, entries: int
) -> dict[str, float]:
    """One database's turn: the backend's CPU over all its batches (/proc counts in ticks of 10 ms: a
    batch alone is too short to read), the wall time a batch (median)."""
    wall_ms: list[float] = []
    rows_written = 0
    cpu_before = _backend_cpu_s(pid)
    for number in range(batches):
        rows, wagers, figures = _batch(f"T{turn}-{number}", 1, entries)
        wall_before = time.perf_counter()
        with connection.transaction(), connection.cursor() as cursor:
            for statement, part in ((_COPY_ENTRIES, rows), (_COPY_LOCKED_WAGERS, wagers),
                                    (COPY_DAY_FIGURES, figures)):  # fmt: skip
                with cursor.copy(statement) as copy:
                    for row in part:
                        copy.write_row(row)
        wall_ms.append((time.perf_counter() - wall_before) * 1000)
        rows_written += len(rows) + len(wagers) + len(figures)
    cpu_ms = (_backend_cpu_s(pid) - cpu_before) * 1000
    return {
        "backend_cpu_ms_per_1000_rows": round(cpu_ms / rows_written * 1000, 3),
        "wall_ms_per_batch": round(statistics.median(wall_ms), 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, default=20)
    parser.add_argument("--entries", type=int, default=500)
    parser.add_argument("--turns", type=int, default=5)
    args = parser.parse_args()
    directory = Path(tempfile.mkdtemp(prefix="bench-row-keys-"))
    cluster = PostgresCluster(directory, free_port())
    cluster.start()
    try:
        connections: dict[str, psycopg.Connection[Any]] = {}
        for name, statements in _VARIANTS.items():
            schema.create_database(cluster.superuser_dsn, name)
            dsn = cluster.dsn("postgres", cluster.superuser_password, name)
            connection = psycopg.connect(dsn, autocommit=True)
            schema.migrate(connection)
            for statement in statements:
                connection.execute(statement.encode())
            connections[name] = connection
        turns: list[dict[str, Any]] = []
        for turn in range(args.turns):
            for name, connection in connections.items():
                pid = int(connection.execute("SELECT pg_backend_pid()").fetchone()[0])  # type: ignore[index]
                figures = _turn(connection, pid, turn, args.batches, args.entries)
                turns.append({"turn": turn, "database": name, **figures, "load_1min": os.getloadavg()[0]})
        summary = {
            name: statistics.median(t["backend_cpu_ms_per_1000_rows"] for t in turns if t["database"] == name)
            for name in connections
        }
        report: dict[str, Any] = {"entries_per_batch": args.entries, "batches_per_turn": args.batches,
                   "median_backend_cpu_ms_per_1000_rows": summary, "turns": turns}  # fmt: skip
        print(json.dumps(report, indent=1))
        for connection in connections.values():
            connection.close()
    finally:
        cluster.stop()
        shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    main()

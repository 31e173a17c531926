"""How long the floor's backfilling migrations (15: floor_locked_wagers, 16: floor_day_figures) take on a
floor with history, and what they cost in WAL, disk and memory; printed as JSON.

    nice -n 10 python bench/bench_floor_migrations.py --entries 1000000 --tables 200

One PostgreSQL cluster (started here, in a temporary directory, removed at the end), one database at
schema 14 (the version before the two), filled with ``--entries`` entries spread over ``--tables`` tables:
a template of whole rounds as the round engine records them (bench/bench_journal.py ``engine_rounds``:
every game, faults included, written through the real journal), each table's history that template
repeated, its round ids made unique a copy, a round_started's payload naming its copy's round, the times
spread over a year, the typed columns as the schema-14 writer wrote them (controller/floor/store.py
``entry_columns``). The rows are made by PostgreSQL itself (one INSERT .. SELECT from the template a
table), then VACUUM ANALYZE and a CHECKPOINT, as a floor that has been running is.

Then a child process (its peak RSS is the migrating process's) applies 15 and 16 through
controller/floor/schema.py ``migrate``, as ``flushtable floor init-db`` does, one migration a call so each
is timed (init-db applies both in one transaction: its downtime is their sum). Per migration: seconds, rows
backfilled, entries/s, WAL bytes (pg_current_wal_lsn before and after), and the sizes of the tables
before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from controller.floor import schema
from controller.simulation.floor.servers import PostgresCluster, free_port

# The schema before migrations 15 and 16, and the two.
BEFORE_BACKFILLS = 14
BACKFILLED = (15, 16)
# A year of history: each table's entries spread evenly over it, the last a day before this start.
HISTORY_END = datetime(2026, 12, 1, tzinfo=UTC)
HISTORY = timedelta(days=365)
# What a table's bigger tables are, to report sizes of (pg_total_relation_size: heap, indexes, TOAST).
SIZED_TABLES = ("floor_entries", "floor_locked_wagers", "floor_day_figures")
# The migrating child's bound (a stuck migration ends the bench, not the machine's night).
MIGRATION_TIMEOUT_S = 6 * 3600

_TEMPLATE_TABLE = """
CREATE UNLOGGED TABLE bench_template (
    position integer PRIMARY KEY, round_id text, source text NOT NULL, kind text NOT NULL,
    version integer NOT NULL, payload jsonb NOT NULL, private_digest text,
    seat integer, state_to text, software_release text, software_release_digest text,
    software_development boolean, clock_offset_us bigint, clock_within_bound boolean, clock_bound_us bigint,
    progressive_settled boolean, progressive_wagers bigint, progressive_unit_cents bigint
)"""
_TEMPLATE_COLUMNS = (
    "position, round_id, source, kind, version, payload, private_digest, seat, state_to, software_release, "
    "software_release_digest, software_development, clock_offset_us, clock_within_bound, clock_bound_us, "
    "progressive_settled, progressive_wagers, progressive_unit_cents"
)
# Every table's history at once, in time order as the floor's service writes it (the heap interleaves the
# tables, as on a floor, rather than holding each table's entries together): table k is the template
# rotated to start at a round (its offset), repeated; copy c of the entry at rotated position p is seq
# c*L+p+1; a round's id gains the table and the copy; times spread evenly over the year.
_FILL = """
INSERT INTO floor_entries (table_id, seq, time_utc, time_text, round_id, source, kind, version, payload,
    private_digest, prev_hash, hash, stream_seq, seat, state_to, software_release, software_release_digest,
    software_development, clock_offset_us, clock_within_bound, clock_bound_us, progressive_settled,
    progressive_wagers, progressive_unit_cents, typed_columns)
SELECT k.table_id, n.seq, n.at, to_char(n.at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
       n.round_id, t.source, t.kind, t.version,
       CASE WHEN t.kind = 'round_started' THEN jsonb_set(t.payload, '{round_id}', to_jsonb(n.round_id))
            ELSE t.payload END,
       t.private_digest, md5(k.table_id || (n.seq - 1)) || md5((n.seq - 1) || k.table_id),
       md5(k.table_id || n.seq) || md5(n.seq || k.table_id), row_number() OVER (ORDER BY n.at, k.table_id),
       t.seat, t.state_to, t.software_release, t.software_release_digest, t.software_development,
       t.clock_offset_us, t.clock_within_bound, t.clock_bound_us, t.progressive_settled,
       t.progressive_wagers, t.progressive_unit_cents, 1
FROM bench_tables k
CROSS JOIN generate_series(0, %(copies)s - 1) AS c
CROSS JOIN bench_template t
CROSS JOIN LATERAL (
    SELECT c * %(length)s + (t.position + %(length)s - k.offset_position) %% %(length)s + 1 AS seq
) s
CROSS JOIN LATERAL (
    SELECT s.seq,
           %(start)s::timestamptz
               + (s.seq - 1)::bigint * %(spacing_us)s::bigint * interval '1 microsecond' AS at,
           CASE WHEN t.round_id IS NOT NULL THEN t.round_id || '-' || k.table_id || 'C' || c END AS round_id
) n
WHERE n.seq <= k.entries
ORDER BY n.at, k.table_id
"""


def _template_rows(rounds_per_game: int) -> list[tuple[Any, ...]]:
    """Whole rounds of every game as the journal stores them, each as a floor_entries row's parts."""
    from bench_journal import engine_rounds  # noqa: PLC0415 - the benches' own module, beside this one

    from controller.floor.store import entry_columns  # noqa: PLC0415
    from controller.journal import Journal  # noqa: PLC0415
    from controller.journal.chain import canonical_json  # noqa: PLC0415

    directory = Path(tempfile.mkdtemp(prefix="bench-migrations-template-"))
    try:
        journal = Journal.open(directory / "journal.sqlite", "T000", synchronous="OFF")
        try:
            written = [
                entry
                for batch in engine_rounds("T000", rounds_per_game)
                for entry in journal.append_many(batch)
            ]
        finally:
            journal.close()
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    return [
        (position, entry.round_id, entry.source, entry.kind, entry.version, canonical_json(entry.public),
         entry.private_digest, *entry_columns(entry.kind, entry.entry))
        for position, entry in enumerate(written)
    ]  # fmt: skip


def _sizes(connection: psycopg.Connection[Any]) -> dict[str, int]:
    sizes: dict[str, int] = {}
    for table in SIZED_TABLES:
        row = connection.execute(
            "SELECT COALESCE(pg_total_relation_size(to_regclass(%s)), 0)", (table,)
        ).fetchone()
        sizes[table] = int(row[0]) if row else 0
    row = connection.execute("SELECT pg_database_size(current_database())").fetchone()
    sizes["database"] = int(row[0]) if row else 0
    return sizes


def _fill(dsn: str, entries: int, tables: int, rounds_per_game: int) -> dict[str, Any]:
    """The floor at schema 14 with ``entries`` entries over ``tables`` tables; what was made."""
    template = _template_rows(rounds_per_game)
    round_starts = [row[0] for row in template if row[3] == "round_started"]
    per_table = -(-entries // tables)
    table_rows = [
        (
            f"T{number:04d}",
            min(per_table, entries - number * per_table),
            round_starts[number % len(round_starts)],
        )
        for number in range(tables)
        if entries - number * per_table > 0
    ]
    started = time.perf_counter()
    with psycopg.connect(dsn, autocommit=True) as connection:
        schema.migrate(connection, through=BEFORE_BACKFILLS)
        connection.execute(_TEMPLATE_TABLE)
        connection.execute(
            "CREATE UNLOGGED TABLE bench_tables "
            "(table_id text PRIMARY KEY, entries bigint, offset_position integer)"
        )
        with connection.cursor() as cursor:
            with cursor.copy(f"COPY bench_template ({_TEMPLATE_COLUMNS}) FROM STDIN") as copy:
                for row in template:
                    copy.write_row(row)
            with cursor.copy("COPY bench_tables FROM STDIN") as copy:
                for row in table_rows:
                    copy.write_row(row)
        connection.execute("ANALYZE bench_template, bench_tables")
        connection.execute(
            _FILL,
            {"copies": -(-per_table // len(template)), "length": len(template),
             "start": HISTORY_END - HISTORY, "spacing_us": HISTORY // timedelta(microseconds=1) // per_table},
        )  # fmt: skip
        connection.execute("DROP TABLE bench_template, bench_tables")
        connection.execute("VACUUM ANALYZE")
        connection.execute("CHECKPOINT")
        kinds = connection.execute(
            "SELECT kind, count(*) FROM floor_entries GROUP BY kind ORDER BY count(*) DESC"
        ).fetchall()
    return {
        "template_entries": len(template),
        "fill_s": round(time.perf_counter() - started, 1),
        "entries_by_kind": {str(kind): int(count) for kind, count in kinds},
    }


def _backend_cpu_s(pid: int) -> float | None:
    """utime + stime of a PostgreSQL backend, where /proc shows it: on a loaded machine less noisy than
    the wall time (each figure is reported beside it)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _backend_peak_rss_kib(pid: int) -> int | None:
    """The PostgreSQL backend's peak resident set (VmHWM), where /proc shows it."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def migrate_child(dsn: str) -> dict[str, Any]:
    """In the child process: 15, then 16, each through ``schema.migrate``; what each cost."""
    figures: dict[str, Any] = {}
    with psycopg.connect(dsn, autocommit=True) as connection:
        row = connection.execute("SELECT pg_backend_pid()").fetchone()
        backend_pid = int(row[0]) if row else 0
        for version in BACKFILLED:
            sizes_before = _sizes(connection)
            lsn_row = connection.execute("SELECT pg_current_wal_lsn()").fetchone()
            backend_cpu_before = _backend_cpu_s(backend_pid)
            cpu_before = time.process_time()
            started = time.perf_counter()
            applied = schema.migrate(connection, through=version)
            seconds = time.perf_counter() - started
            cpu_s = time.process_time() - cpu_before
            backend_cpu_after = _backend_cpu_s(backend_pid)
            wal_row = connection.execute(
                "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), %s)", (lsn_row[0] if lsn_row else None,)
            ).fetchone()
            table = "floor_locked_wagers" if version == 15 else "floor_day_figures"
            rows_row = connection.execute(f"SELECT count(*) FROM {table}").fetchone()  # a constant of two
            entries_row = connection.execute("SELECT count(*) FROM floor_entries").fetchone()
            entries = int(entries_row[0]) if entries_row else 0
            figures[str(version)] = {
                "applied": applied,
                "seconds": round(seconds, 2),
                "migrating_process_cpu_s": round(cpu_s, 2),
                "postgres_backend_cpu_s": (
                    round(backend_cpu_after - backend_cpu_before, 2)
                    if backend_cpu_before is not None and backend_cpu_after is not None
                    else None
                ),
                "table": table,
                "rows_backfilled": int(rows_row[0]) if rows_row else 0,
                "entries_per_s": round(entries / seconds) if seconds else None,
                "wal_bytes": int(wal_row[0]) if wal_row else 0,
                "sizes_before_bytes": sizes_before,
                "sizes_after_bytes": _sizes(connection),
            }
        figures["backend_peak_rss_kib"] = _backend_peak_rss_kib(backend_pid)
    figures["process_peak_rss_kib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=1_000_000)
    parser.add_argument("--tables", type=int, default=200)
    parser.add_argument("--rounds-per-game", type=int, default=20, help="the template's rounds of each game")
    parser.add_argument("--child-dsn", help=argparse.SUPPRESS)  # the migrating child's own run
    args = parser.parse_args()
    from controller.logs import configure_logging  # noqa: PLC0415

    configure_logging(level="error")  # the template's journal logs each entry at info
    if args.child_dsn:
        print(json.dumps(migrate_child(args.child_dsn)))
        return
    if not 0 < args.tables <= args.entries:
        parser.error("--tables: at least 1 and at most --entries")
    load_before = round(os.getloadavg()[0], 2)
    directory = Path(tempfile.mkdtemp(prefix="bench-migrations-"))
    os.chmod(directory, 0o755)  # the cluster runs as the postgres user
    cluster = PostgresCluster(directory, free_port())
    cluster.start()
    try:
        schema.create_database(cluster.superuser_dsn, "floor")
        dsn = cluster.dsn("postgres", cluster.superuser_password, "floor")
        made = _fill(dsn, args.entries, args.tables, args.rounds_per_game)
        child = subprocess.run(
            [sys.executable, __file__, "--child-dsn", dsn],
            capture_output=True, text=True, timeout=MIGRATION_TIMEOUT_S, check=False,
        )  # fmt: skip
        if child.returncode != 0:
            raise SystemExit(f"the migrating child failed ({child.returncode}):\n{child.stderr}")
        migrated = json.loads(child.stdout)
        with psycopg.connect(dsn) as connection:
            server = connection.execute("SHOW server_version").fetchone()
        report = {
            "entries": args.entries,
            "tables": args.tables,
            **made,
            "migrations": {v: migrated[v] for v in map(str, BACKFILLED)},
            "total_seconds": round(sum(migrated[str(v)]["seconds"] for v in BACKFILLED), 2),
            "total_wal_bytes": sum(migrated[str(v)]["wal_bytes"] for v in BACKFILLED),
            "migrating_process_peak_rss_kib": migrated["process_peak_rss_kib"],
            "postgres_backend_peak_rss_kib": migrated["backend_peak_rss_kib"],
            "postgres": server[0] if server else None,
            "load_1min_before": load_before,
            "load_1min_after": round(os.getloadavg()[0], 2),
            "cpus": os.cpu_count(),
        }
        print(json.dumps(report, indent=1))
    finally:
        cluster.stop()
        shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    main()

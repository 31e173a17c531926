"""The floor's figures, printed as JSON: 500 simulated tables' journals through NATS JetStream into
PostgreSQL on this machine.

    python bench/bench_floor.py [--tables 500] [--rounds 2] [--live-rounds 1] [--dir DIR]

Phases (every server real, started here under DIR: nats-server with TLS and 500 table users, a
PostgreSQL cluster; the floor service is `flushtable floor serve` in a child process, on its own core):

1. **outage**: the tables have played ``--rounds`` rounds each (the real engine, simulated players) while
   the floor service was down; their uplinks publish everything to the stream (``publish``: entries/s
   through 500 uplinks, each waiting for its acks);
2. **catch-up**: the floor service starts and drains the stream into PostgreSQL (``catch_up``: entries/s
   committed, the floor's sustained write rate, target >= 5,000/s);
3. **live**: every table plays ``--live-rounds`` more rounds, paced at ``--live-rate`` rounds a second
   across the floor (25/s: about 1,600 entries/s, three times a busy real floor of 500 tables dealing a
   round a minute each), while everything runs (``live``: entries/s and the lag from each entry's
   commit at its table (its ``time_utc``) to its commit on the floor (``floor_committed_utc``),
   p50/p99/max, target p99 <= 1 s).

Everything is checked after: every entry on the floor exactly once, every chain verified. Each phase
also reports the CPU seconds of each part (this process: the tables and their uplinks; the floor
service; nats-server; PostgreSQL), and the live lag split at the stream's own timestamp of each message
(table -> stream, stream -> floor): on a shared machine the wall clock alone says little.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from controller.floor.config import write_floor_config
from controller.floor.verify import verify_table
from controller.journal.store import Journal
from controller.logs import configure_logging
from controller.simulation.floor.embedded import EmbeddedFloor
from controller.simulation.floor_tables import MIXED_GAMES, SimTable
from controller.uplink.uplink import Uplink


def _count(dsn: str) -> int:
    with psycopg.connect(dsn) as connection:
        row = connection.execute("SELECT count(*) FROM floor_entries").fetchone()
        return int(row[0]) if row else 0


def _alerts(dsn: str) -> list[str]:
    with psycopg.connect(dsn) as connection:
        query = "SELECT message FROM floor_alerts WHERE origin = 'floor' LIMIT 5"
        rows = connection.execute(query).fetchall()
        return [str(row[0]) for row in rows]


async def _wait_count(dsn: str, target: int, timeout_s: float) -> float:
    started = time.perf_counter()
    while await asyncio.to_thread(_count, dsn) < target:
        if time.perf_counter() - started > timeout_s:
            held = await asyncio.to_thread(_count, dsn)
            alerts = await asyncio.to_thread(_alerts, dsn)
            raise SystemExit(
                f"bench_floor: the floor holds {held}, not {target} entries, after {timeout_s} s; "
                f"its alerts: {alerts}"
            )
        await asyncio.sleep(0.05)
    return time.perf_counter() - started


def _journal_total(journals: dict[str, Journal]) -> int:
    total = 0
    for journal in journals.values():
        last = journal.last_entry()
        total += 0 if last is None else last.seq
    return total


async def _stream_count(floor: EmbeddedFloor) -> int:
    admin = await floor.connect_admin()
    try:
        info = await admin.jetstream().stream_info("FLUSHTABLE")
        return int(info.state.messages)
    finally:
        await admin.close()


_TICKS_PER_S = os.sysconf("SC_CLK_TCK")


def _stat_fields(pid: int) -> list[str] | None:
    """/proc/<pid>/stat's fields after "pid (comm) " (state first), or None if the process is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text[text.rindex(")") + 2 :].split()


def _user_system_s(pid: int) -> tuple[float, float]:
    """(user, system) CPU seconds of a live process, its own, not its children's; (0, 0) if it is gone."""
    fields = _stat_fields(pid)
    return (int(fields[11]) / _TICKS_PER_S, int(fields[12]) / _TICKS_PER_S) if fields else (0.0, 0.0)


def _proc_cpu_s(pid: int) -> tuple[float, int]:
    """(user + system CPU seconds of a live process, its parent's pid); (0, 0) if it is gone."""
    fields = _stat_fields(pid)
    if fields is None:
        return 0.0, 0
    return (int(fields[11]) + int(fields[12])) / _TICKS_PER_S, int(fields[1])


def _tree_cpu_s(root_pid: int) -> float:
    """CPU seconds of a process and its live children (PostgreSQL's backends are the postmaster's)."""
    total = _proc_cpu_s(root_pid)[0]
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != root_pid:
            cpu_s, parent = _proc_cpu_s(int(entry.name))
            if parent == root_pid:
                total += cpu_s
    return total


class CpuMeter:
    """CPU seconds spent by each part (this process: the tables and their uplinks; the floor service;
    nats-server; PostgreSQL) between two readings: on a shared machine, wall clock alone says little."""

    def __init__(self, floor: EmbeddedFloor) -> None:
        self.floor = floor
        self.floor_pids: list[int] = []

    def read(self) -> dict[str, float]:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        nats_process = self.floor.nats.process if self.floor.nats else None
        pg_process = self.floor.postgres.process if self.floor.postgres else None
        return {
            "tables_and_uplinks": usage.ru_utime + usage.ru_stime,
            "floor_service": sum(_tree_cpu_s(pid) for pid in self.floor_pids),
            "nats_server": _proc_cpu_s(nats_process.pid)[0] if nats_process else 0.0,
            "postgres": _tree_cpu_s(pg_process.pid) if pg_process else 0.0,
        }

    @staticmethod
    def spent(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
        return {name: round(after[name] - before[name], 2) for name in before}


async def _stream_times(floor: EmbeddedFloor, stream_seqs: list[int]) -> dict[int, float]:
    """When the stream stored each of these messages (epoch seconds): splits the lag in two."""
    admin = await floor.connect_admin()
    times: dict[int, float] = {}
    try:
        js = admin.jetstream()
        for seq in stream_seqs:
            raw = await js.get_msg("FLUSHTABLE", seq=seq, direct=True)
            if raw.time is not None:
                times[seq] = raw.time.timestamp()
    finally:
        await admin.close()
    return times


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 3) if ordered else 0.0


def _lag_figures(values: list[float]) -> dict[str, float]:
    return {"p50": _quantile(values, 0.5), "p99": _quantile(values, 0.99), "max": _quantile(values, 1.0)}


def _floor_command(args: argparse.Namespace, config_path: Path) -> list[str]:
    command = ["-m", "controller.cli", "floor", "serve", "--config", str(config_path)]
    if args.floor_profile:  # cProfile writes its file when the service stops (SIGTERM is a clean stop)
        command = ["-m", "cProfile", "-o", args.floor_profile, *command]
    return [sys.executable, *command]


async def bench(args: argparse.Namespace, base: Path) -> dict[str, Any]:
    ids = [f"T{n:03d}" for n in range(1, args.tables + 1)]
    floor = EmbeddedFloor(base / "floor", ids)
    started = time.perf_counter()
    await asyncio.to_thread(floor.start)  # it runs its own loop to set the stream up
    setup_s = time.perf_counter() - started
    meter = CpuMeter(floor)
    rng = random.Random(args.seed)
    journals = {t: Journal.open(base / "tables" / f"{t}.sqlite", t, synchronous="OFF") for t in ids}
    sims = [SimTable(journals[t], MIXED_GAMES[i % 3], random.Random(rng.random())) for i, t in enumerate(ids)]
    started = time.perf_counter()
    for _ in range(args.rounds):
        for sim in sims:
            sim.play_round()
    play_s = time.perf_counter() - started
    outage_entries = _journal_total(journals)
    config_path = write_floor_config(base / "floor-config", floor.floor_config())
    process: subprocess.Popen[bytes] | None = None
    try:
        stop = asyncio.Event()
        # The bench wakes each uplink when its table appends (as the daemon does): a table's uplink polls
        # its journal only as a fallback, and 500 of them polling 10 times a second in this one process
        # would take the floor's CPU (at a table, the uplink has the table's machine).
        uplinks = {
            t: Uplink(floor.uplink_config(t, poll_interval_s=args.uplink_poll_s), journals[t].path, t)
            for t in ids
        }
        # 1. The outage: the floor service is down, the uplinks fill the stream.
        cpu_publish = meter.read()
        started = time.perf_counter()
        tasks = [asyncio.create_task(u.run(stop)) for u in uplinks.values()]
        while sum(u.status.acked.entry_seq for u in uplinks.values()) < outage_entries:
            if time.perf_counter() - started > 600:
                raise SystemExit("bench_floor: the uplinks did not publish everything in 600 s")
            await asyncio.sleep(0.05)
        publish_s = time.perf_counter() - started
        messages = await _stream_count(floor)
        # 2. Catch-up: the floor service starts and drains the stream into PostgreSQL.
        cpu_catch_up = meter.read()
        env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
        with (base / "floor-service.log").open("ab") as service_log:
            process = subprocess.Popen(
                _floor_command(args, config_path), env=env, stdout=service_log, stderr=subprocess.STDOUT
            )
        meter.floor_pids = [process.pid]
        first_commit_s = await _wait_count(floor.reporting_dsn, 1, 60)
        cpu_first_commit = meter.read()  # the service's start-up (imports, connections) left out
        catch_up_s = first_commit_s + await _wait_count(floor.reporting_dsn, outage_entries, 900)
        cpu_live = meter.read()
        with psycopg.connect(floor.reporting_dsn) as connection:
            span = connection.execute(
                "SELECT extract(epoch FROM max(floor_committed_utc) - min(floor_committed_utc)) "
                "FROM floor_entries"
            ).fetchone()
        commit_span_s = float(span[0]) if span and span[0] else catch_up_s
        # 3. Live: the tables play on at a steady pace (--live-rate rounds/s across the floor; a real
        # floor of 500 tables deals about 8 a second) while everything runs.
        live_from = outage_entries
        started = time.perf_counter()

        def play_live() -> None:
            interval_s = 1.0 / args.live_rate
            next_s = time.perf_counter()
            for _ in range(args.live_rounds):
                for sim in sims:
                    next_s += interval_s
                    time.sleep(max(0.0, next_s - time.perf_counter()))
                    sim.play_round()
                    loop.call_soon_threadsafe(uplinks[sim.journal.table_id].notify)

        loop = asyncio.get_running_loop()
        await asyncio.to_thread(play_live)
        total = _journal_total(journals)
        await _wait_count(floor.reporting_dsn, total, args.live_timeout_s)
        live_s = time.perf_counter() - started
        cpu_end = meter.read()
        stop.set()
        await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), 60)
        with psycopg.connect(floor.reporting_dsn) as connection:
            rows = connection.execute(
                "SELECT stream_seq, extract(epoch FROM time_utc), extract(epoch FROM floor_committed_utc) "
                "FROM floor_entries WHERE stream_seq > %s ORDER BY stream_seq",
                (messages,),
            ).fetchall()
            doubled_row = connection.execute(
                "SELECT count(*) - count(DISTINCT (table_id, seq)) FROM floor_entries"
            ).fetchone()
            verified = sum(1 for t in ids if verify_table(connection, t).ok)
        lags = [float(floor_s) - float(table_s) for _, table_s, floor_s in rows]
        # Where the lag is spent: from the table's commit to the stream, and from the stream to the
        # floor's commit (a sample: the stream's time of each message is one direct get).
        sample = rows[:: max(1, len(rows) // 2000)]
        stored_s = await _stream_times(floor, [int(seq) for seq, _, _ in sample])
        to_stream = [stored_s[int(q)] - float(t) for q, t, _ in sample if int(q) in stored_s]
        to_floor = [float(f) - stored_s[int(q)] for q, _, f in sample if int(q) in stored_s]
    finally:
        if process is not None:
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=60)
        for journal in journals.values():
            journal.close()
        floor.stop()

    catch_up_cpu = CpuMeter.spent(cpu_catch_up, cpu_live)
    committing_cpu = CpuMeter.spent(cpu_first_commit, cpu_live)
    return {
        "tables": len(ids),
        "cpus": os.cpu_count(),
        "load_average_1m": round(os.getloadavg()[0], 2),
        "setup_s": round(setup_s, 1),
        "outage": {"rounds_per_table": args.rounds, "entries": outage_entries, "play_s": round(play_s, 1)},
        "publish": {
            "messages_on_stream": messages,
            "seconds": round(publish_s, 2),
            "messages_per_s": round(messages / publish_s),
            "cpu_s": CpuMeter.spent(cpu_publish, cpu_catch_up),
        },
        "catch_up": {
            "entries": outage_entries,
            "seconds": round(catch_up_s, 2),  # from the service's start
            "entries_per_s": round(outage_entries / catch_up_s),
            "first_commit_after_s": round(first_commit_s, 2),
            # From the floor's first commit to its last (the service's start-up left out).
            "commit_span_s": round(commit_span_s, 2),
            "entries_per_s_committing": round(outage_entries / commit_span_s),
            "cpu_s": catch_up_cpu,
            # CPU per 1000 messages from the first commit to the last: what one core buys.
            "cpu_ms_per_1000_messages_committing": {
                name: round(1_000_000 * spent / messages) for name, spent in committing_cpu.items()
            },
        },
        "live": {
            "rounds_per_table": args.live_rounds,
            "rounds_per_s_offered": args.live_rate,
            "entries": total - live_from,
            "seconds": round(live_s, 2),
            "entries_per_s": round((total - live_from) / live_s),
            "lag_s": _lag_figures(lags),
            "lag_table_to_stream_s": _lag_figures(to_stream),
            "lag_stream_to_floor_s": _lag_figures(to_floor),
            "cpu_s": CpuMeter.spent(cpu_live, cpu_end),
        },
        "entries_in_journals": total,
        "doubled": int(doubled_row[0]) if doubled_row else -1,
        "chains_verified": verified,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--tables", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--live-rounds", type=int, default=1)
    parser.add_argument("--live-rate", type=float, default=25.0, help="rounds a second across the floor")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--live-timeout-s", type=float, default=300.0)
    parser.add_argument("--uplink-poll-s", type=float, default=2.0, help="each uplink's fallback poll")
    parser.add_argument("--floor-profile", default=None, help="run the floor service under cProfile, to FILE")
    parser.add_argument("--out", default="floor.json", help="the file under bench/results/")
    parser.add_argument(
        "--dir", default=None, help="where the servers and journals live (default: a temp dir)"
    )
    args = parser.parse_args()
    configure_logging(level="warning")  # the journal logs every entry at info
    base = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="flushtable-bench-floor-"))
    base.mkdir(parents=True, exist_ok=True)
    os.chmod(base, 0o755)  # the cluster runs as the postgres user
    try:
        figures = asyncio.run(bench(args, base))
        print(json.dumps(figures))
        results = Path(__file__).resolve().parent / "results" / args.out
        results.write_text(json.dumps(figures, indent=2) + "\n")
    finally:
        if not args.dir:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()

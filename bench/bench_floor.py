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

Everything is checked after: every entry on the floor exactly once, every chain verified.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
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
from controller.floor.embedded import EmbeddedFloor
from controller.floor.verify import verify_table
from controller.journal.store import Journal
from controller.logs import configure_logging
from controller.simulation.floor_tables import MIXED_GAMES, SimTable
from controller.uplink.uplink import Uplink


def _count(dsn: str) -> int:
    with psycopg.connect(dsn) as connection:
        row = connection.execute("SELECT count(*) FROM floor_entries").fetchone()
        return int(row[0]) if row else 0


async def _wait_count(dsn: str, target: int, timeout_s: float) -> float:
    started = time.perf_counter()
    while await asyncio.to_thread(_count, dsn) < target:
        if time.perf_counter() - started > timeout_s:
            raise SystemExit(f"bench_floor: the floor did not reach {target} entries in {timeout_s} s")
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


async def bench(args: argparse.Namespace, base: Path) -> dict[str, Any]:
    ids = [f"T{n:03d}" for n in range(1, args.tables + 1)]
    floor = EmbeddedFloor(base / "floor", ids)
    started = time.perf_counter()
    await asyncio.to_thread(floor.start)  # it runs its own loop to set the stream up
    setup_s = time.perf_counter() - started
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
        uplinks = {t: Uplink(floor.uplink_config(t), journals[t].path, t) for t in ids}
        # 1. The outage: the floor service is down, the uplinks fill the stream.
        started = time.perf_counter()
        tasks = [asyncio.create_task(u.run(stop)) for u in uplinks.values()]
        while sum(u.status.acked.entry_seq for u in uplinks.values()) < outage_entries:
            if time.perf_counter() - started > 600:
                raise SystemExit("bench_floor: the uplinks did not publish everything in 600 s")
            await asyncio.sleep(0.05)
        publish_s = time.perf_counter() - started
        messages = await _stream_count(floor)
        # 2. Catch-up: the floor service starts and drains the stream into PostgreSQL.
        env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
        process = subprocess.Popen(
            [sys.executable, "-m", "controller.cli", "floor", "serve", "--config", str(config_path)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        catch_up_s = await _wait_count(floor.reporting_dsn, outage_entries, 900)
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
        await _wait_count(floor.reporting_dsn, total, 600)
        live_s = time.perf_counter() - started
        stop.set()
        await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), 60)
        with psycopg.connect(floor.reporting_dsn) as connection:
            lags = [
                float(lag)
                for (lag,) in connection.execute(
                    "SELECT extract(epoch FROM floor_committed_utc - time_utc) FROM floor_entries "
                    "WHERE stream_seq > %s ORDER BY 1",
                    (messages,),
                )
            ]
            doubled_row = connection.execute(
                "SELECT count(*) - count(DISTINCT (table_id, seq)) FROM floor_entries"
            ).fetchone()
            verified = sum(1 for t in ids if verify_table(connection, t).ok)
    finally:
        if process is not None:
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=30)
        for journal in journals.values():
            journal.close()
        floor.stop()

    def quantile(values: list[float], q: float) -> float:
        return round(values[min(len(values) - 1, int(q * len(values)))], 3) if values else 0.0

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
        },
        "catch_up": {
            "entries": outage_entries,
            "seconds": round(catch_up_s, 2),
            "entries_per_s": round(outage_entries / catch_up_s),
        },
        "live": {
            "rounds_per_table": args.live_rounds,
            "rounds_per_s_offered": args.live_rate,
            "entries": total - live_from,
            "seconds": round(live_s, 2),
            "entries_per_s": round((total - live_from) / live_s),
            "lag_s": {
                "p50": quantile(lags, 0.5),
                "p99": quantile(lags, 0.99),
                "max": quantile(lags, 1.0),
            },
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
        results = Path(__file__).resolve().parent / "results" / "floor.json"
        results.write_text(json.dumps(figures, indent=2) + "\n")
    finally:
        if not args.dir:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()

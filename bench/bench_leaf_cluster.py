"""A site's leaf node on a three-node cluster hub, its hub node killed again and again: figures as JSON.

    python bench/bench_leaf_cluster.py [--site-tables 40] [--hub-tables 8] [--kills 4] [--live-s 12]
                                       [--round-every-s 1] [--dir DIR] [--out FILE]

Every server real, under DIR (a temporary directory by default): the hub's three nats-servers (R3
stream, routes over TLS, a leaf listener each), the site's nats-server as their leaf node (given every
node's leaf URL), one PostgreSQL; the tables (the real engine, the demo's mixed games), their uplinks and
the floor service in this process (docs/floor.md "Deploying the floor").

Each kill: each table deals a round every ``--round-every-s``; the hub stream's leadership is moved
off the node the site's leaf is connected to (even kills) or onto it (odd kills: the worst case, the
new stream leader sources the site afresh while the leaf dials); that node is SIGKILLed. Stated: how
long until the site's leaf is connected to another node (its /leafz), the floor's backlog at the kill,
the largest gap between successive floor commits of the site's tables and of the hub's tables from
the kill until the floor holds everything, and how long that took. The node is started again and its
replicas caught up before the next kill. At the end: every journal entry on the floor exactly once,
every chain verified.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from controller.floor.service import FloorService
from controller.floor.verify import verify_table
from controller.journal.store import Journal
from controller.logs import configure_logging
from controller.simulation.floor.embedded import EmbeddedFloor
from controller.simulation.floor.site import EmbeddedSite
from controller.simulation.floor_tables import MIXED_GAMES, SimTable
from controller.uplink.uplink import Uplink
from controller.uplink.wire import STREAM_NAME

SITE = "east"
WAIT_S = 300.0  # the longest any step is waited for (bounded; a loaded machine)


def _floor_total(dsn: str) -> int:
    with psycopg.connect(dsn) as connection:
        row = connection.execute("SELECT coalesce(sum(last_seq), 0) FROM floor_tables").fetchone()
        return int(row[0]) if row else 0


def _last_seq(journal: Journal) -> int:
    last = journal.last_entry()
    return 0 if last is None else last.seq


def _db_now(dsn: str) -> Any:
    with psycopg.connect(dsn) as connection:
        row = connection.execute("SELECT clock_timestamp()").fetchone()
        assert row is not None
        return row[0]


def _largest_gap_s(dsn: str, tables: Sequence[str], since: Any, until: Any) -> float:
    """The largest gap between successive floor commits of ``tables`` in [since, until] (counting from
    ``since`` itself: a floor stopped right at the kill shows as a gap from the kill)."""
    query = """
        SELECT coalesce(max(gap), 0) FROM (
            SELECT extract(epoch FROM floor_committed_utc - lag(floor_committed_utc, 1, %(since)s)
                           OVER (ORDER BY floor_committed_utc)) AS gap
            FROM floor_entries
            WHERE table_id = ANY(%(tables)s) AND floor_committed_utc BETWEEN %(since)s AND %(until)s
        ) AS gaps"""
    with psycopg.connect(dsn) as connection:
        row = connection.execute(query, {"since": since, "until": until, "tables": list(tables)}).fetchone()
        return round(float(row[0]), 2) if row else 0.0


async def _until(what: str, predicate: Any, timeout_s: float = WAIT_S) -> float:
    started = time.monotonic()
    while not await predicate():
        if time.monotonic() - started > timeout_s:
            raise SystemExit(f"bench_leaf_cluster: {what}: not within {timeout_s} s")
        await asyncio.sleep(0.1)  # a poll of the servers' state, bounded above
    return round(time.monotonic() - started, 2)


async def _stream_info(floor: EmbeddedFloor) -> Any:
    admin = await floor.connect_admin()
    try:
        return await admin.jetstream().stream_info(STREAM_NAME)
    finally:
        await admin.close()


async def _place_leader(floor: EmbeddedFloor, node: str, *, there: bool) -> None:
    assert floor.cluster is not None
    names = [n.server_name for n in floor.cluster.nodes]
    preferred = node if there else next(n for n in names if n != node)

    async def placed() -> bool:
        info = await _stream_info(floor)
        leader = info.cluster.leader if info.cluster is not None else None
        if leader is not None and (leader == node) == there:
            return True
        admin = await floor.connect_admin()
        try:
            body = json.dumps({"placement": {"preferred": preferred}}).encode()
            await admin.request(f"$JS.API.STREAM.LEADER.STEPDOWN.{STREAM_NAME}", body, timeout=10)
        finally:
            await admin.close()
        await asyncio.sleep(0.5)  # the election's own time before it is asked again (bounded above)
        return False

    await _until(f"the stream's leader {'on' if there else 'off'} {node}", placed, 60)


async def _replicas_current(floor: EmbeddedFloor) -> bool:
    try:
        info = await _stream_info(floor)
    except Exception:  # a node still starting: asked again (bounded by _until)
        return False
    cluster = info.cluster
    return bool(
        cluster is not None
        and cluster.leader is not None
        and len(cluster.replicas or []) == 2
        and all(r.current for r in cluster.replicas or [])
    )


def _deal(sims: list[SimTable], uplinks: dict[str, Uplink], loop: asyncio.AbstractEventLoop,
          seconds: float, every_s: float = 1.0) -> None:  # fmt: skip
    """A round a table about every ``every_s`` for ``seconds`` (each uplink told on its own loop)."""
    end = time.monotonic() + seconds
    for _ in range(int(seconds / every_s) + 1):  # bounded
        started = time.monotonic()
        for sim in sims:
            sim.play_round()
            loop.call_soon_threadsafe(uplinks[sim.journal.table_id].notify)
        if time.monotonic() >= end:
            return
        threading.Event().wait(max(0.0, every_s - (time.monotonic() - started)))  # the dealing's pace


async def bench(args: argparse.Namespace, base: Path) -> dict[str, Any]:
    hub_ids = [f"H{n:03d}" for n in range(1, args.hub_tables + 1)]
    site_ids = [f"E{n:03d}" for n in range(1, args.site_tables + 1)]
    ids = hub_ids + site_ids
    floor = EmbeddedFloor(base / "floor", hub_ids, sites=[SITE], nodes=3)
    site = EmbeddedSite(base / f"site-{SITE}", floor, SITE, site_ids)
    await asyncio.to_thread(floor.start)
    await asyncio.to_thread(site.start)
    assert floor.cluster is not None
    journals = {t: Journal.open(base / "tables" / f"{t}.sqlite", t, synchronous="OFF") for t in ids}
    rng = random.Random(args.seed)
    sims = [
        SimTable(journals[t], MIXED_GAMES[i % len(MIXED_GAMES)], random.Random(rng.random()))
        for i, t in enumerate(ids)
    ]
    stop = asyncio.Event()
    uplinks = {
        t: Uplink((site if t in site_ids else floor).uplink_config(t, backoff_max_s=1.0), journals[t].path, t)
        for t in ids
    }
    tasks = [asyncio.create_task(u.run(stop)) for u in uplinks.values()]
    service = FloorService(floor.floor_config(backoff_max_s=1.0))
    tasks.append(asyncio.create_task(service.run(stop)))
    loop = asyncio.get_running_loop()

    def in_journals() -> int:
        return sum(_last_seq(j) for j in journals.values())

    async def all_on_floor() -> bool:
        return await asyncio.to_thread(_floor_total, floor.reporting_dsn) == in_journals()

    kills: list[dict[str, Any]] = []
    try:
        await asyncio.to_thread(_deal, sims, uplinks, loop, 0)
        warm_s = await _until("the first round on the floor", all_on_floor)
        for number in range(args.kills):
            leading = number % 2 == 1
            connected = await asyncio.to_thread(site.hub_node)
            assert connected is not None
            victim = floor.cluster.nodes[connected].server_name
            assert victim is not None
            await _place_leader(floor, victim, there=leading)
            dealing = asyncio.create_task(
                asyncio.to_thread(_deal, sims, uplinks, loop, args.live_s, args.round_every_s)
            )
            await asyncio.sleep(2.0)  # dealing for 2 s before the kill: mid-stream (the bench's own pace)
            since = await asyncio.to_thread(_db_now, floor.reporting_dsn)
            backlog = in_journals() - await asyncio.to_thread(_floor_total, floor.reporting_dsn)
            floor.cluster.kill(connected)
            killed = time.monotonic()

            async def elsewhere(connected: int = connected) -> bool:
                node = await asyncio.to_thread(site.hub_node)
                return node is not None and node != connected

            leaf_s = await _until("the leaf on another node", elsewhere, 60)
            await dealing
            dealt_s = round(time.monotonic() - killed, 2)
            await _until("everything on the floor", all_on_floor)
            complete_s = round(time.monotonic() - killed, 2)
            until = await asyncio.to_thread(_db_now, floor.reporting_dsn)
            dsn = floor.reporting_dsn
            kills.append({
                "killed": victim,
                "it_led_the_stream": leading,
                "kill_to_leaf_on_another_node_s": leaf_s,
                "floor_backlog_at_kill_entries": backlog,
                "largest_site_commit_gap_s": _largest_gap_s(dsn, site_ids, since, until),
                "largest_hub_commit_gap_s": _largest_gap_s(dsn, hub_ids, since, until),
                "kill_to_dealing_done_s": dealt_s,
                "kill_to_floor_complete_s": complete_s,
            })  # fmt: skip
            floor.cluster.start_node(connected)
            await _until("the restarted node's replicas current", lambda: _replicas_current(floor))
        info = await _stream_info(floor)
    finally:
        stop.set()
        await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), 60)
    expected = {t: _last_seq(journals[t]) for t in ids}
    with psycopg.connect(floor.reporting_dsn) as connection:
        rows = connection.execute(
            "SELECT count(*), count(DISTINCT (table_id, seq)) FROM floor_entries"
        ).fetchone()
        assert rows is not None
        checks = [verify_table(connection, t) for t in ids]
    for journal in journals.values():
        journal.close()
    site.stop()
    floor.stop()
    return {
        "bench": "leaf_cluster",
        "hub_tables": len(hub_ids),
        "site_tables": len(site_ids),
        "load_1min_at_end": round(os.getloadavg()[0], 1),
        "first_round_on_floor_s": warm_s,
        "kills": kills,
        "entries_in_journals": sum(expected.values()),
        "entries_on_floor": int(rows[0]),
        "exactly_once": int(rows[0]) == int(rows[1]) == sum(expected.values()),
        "chains_verified": len([c for c in checks if c.ok and c.entries == expected[c.table_id]]),
        "hub_stream_messages": info.state.messages,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--site-tables", type=int, default=40)
    parser.add_argument("--hub-tables", type=int, default=8)
    parser.add_argument("--kills", type=int, default=4)
    parser.add_argument("--live-s", type=float, default=12.0, help="dealing after each kill starts, s")
    parser.add_argument("--round-every-s", type=float, default=1.0, help="each table deals a round so often")
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--dir", default=None)
    parser.add_argument("--out", default=None, help="also write the JSON to bench/results/FILE")
    args = parser.parse_args()
    configure_logging(level="error")
    base = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="flushtable-bench-leaf-"))
    base.mkdir(parents=True, exist_ok=True)
    os.chmod(base, 0o755)  # PostgreSQL runs as the postgres user
    try:
        figures = asyncio.run(bench(args, base))
    finally:
        if not args.dir:
            shutil.rmtree(base, ignore_errors=True)
    text = json.dumps(figures, indent=2)
    print(text)
    if args.out:
        (Path(__file__).resolve().parent / "results" / args.out).write_text(text + "\n")


if __name__ == "__main__":
    main()

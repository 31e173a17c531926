"""The floor on the three-node JetStream cluster with partitioned workers, figures printed as JSON.

    python bench/bench_floor_workers.py [--tables 150] [--rounds 2] [--nodes 3] [--workers 2]
        [--partitions 8] [--kill] [--kill-node stream-leader|bucket-leader|consumer-leader|no-leader|last]
        [--live-rounds 3] [--dir DIR] [--out FILE]

Every server real, started here (bench/bench_floor.py's EmbeddedFloor, with ``--nodes`` nats-server
nodes and the stream R3); every floor process a `flushtable floor serve` child.

1. **outage**: the tables play ``--rounds`` rounds while no floor process runs; their uplinks fill the
   stream (one stream, read twice below).
2. **catch-up, side by side on the same stream**: today's single floor service (`floor serve`, the
   consumer ``floor``) drains it into one database; then ``--workers`` workers (`floor serve --worker W
   --partitions P`, the partitions' consumers) drain the same messages into a second database of the
   same PostgreSQL. Each: entries/s from the first commit to the last, and CPU ms per 1,000 messages per
   worker process (from /proc). ``ratio`` = workers' entries/s over the single service's.
3. **kill** (``--kill``): on the workers' database, the tables play ``--live-rounds`` more rounds, paced;
   mid-stream one nats node is SIGKILLed, then (commits seen again) one worker; then both are started
   again. Stated: the largest gap between successive commits on the floor (PostgreSQL's
   ``floor_committed_utc``) from each kill to the next step; every journal entry on the floor exactly
   once; every chain verified; and the partitions' owners as a poller of ``floor_partition_leases``
   saw them (every 0.2 s): each (partition, epoch) held by one worker only, and each partition's epochs
   only rising. A commit is fenced by that row's epoch (controller/floor/workers.py), so one worker per
   epoch means no partition committed by two workers; the poller can miss an epoch held for less than
   its interval (said in ``lease_observations``).
4. **the node's kill, decomposed** (``kill.node_kill_decomposed``): the surviving nodes' ``/jsz`` polled
   from the kill (``LeaderWatch``) say when each raft group the killed node led got a new leader and
   when the stream stored, and each partition consumer delivered, again; beside them each partition's
   first commit after the elections it waited for, and the uplinks' and workers' retries logged
   meanwhile. The worker is killed only once the cluster is whole again. ``--kill-node
   consumer-leader`` and ``no-leader`` first move leaderships off the node to kill (JetStream's leader
   stepdown to a named node), so that it leads a partition consumer only, or nothing the floor uses
   (the cluster's metadata is not moved: ``killed_node_led_the_metadata`` says).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_floor import _count, _journal_total, _proc_cpu_s, _stream_count

from controller.engine import JournalRecord
from controller.floor.config import write_floor_config
from controller.floor.verify import verify_table
from controller.floor.workers import ensure_partitions, partition_consumer, partition_of
from controller.journal.store import AppendItem, Journal, JournalEntry
from controller.logs import configure_logging
from controller.simulation.floor.embedded import EmbeddedFloor
from controller.simulation.floor_tables import MIXED_GAMES, SimTable
from controller.uplink.uplink import Uplink
from controller.uplink.wire import LEASE_BUCKET, STREAM_NAME

LEASE_TTL_S = 6.0
# The --kill-node choices whose leaderships are moved first (leader stepdowns, each to a named node), so
# that the node killed leads what the case says whatever the cluster's own placement drew.
ARRANGED_KILLS = ("consumer-leader", "no-leader")
# What the uplinks' and workers' logs say while a node is down, counted in the node's window.
LOGGED_WORDS = (
    "uplink_retry", "NoStreamResponseError", "floor_retry", "floor_pull_unavailable",
    "floor_consumer_check_unanswered", "floor_lease_retaken", "floor_lease_lost",
)  # fmt: skip
# Every wait's bound: at a load of 38 the tables' uplinks published ~150 entries/s (1,000 tables).
WAIT_BOUND_S = 2400.0


class _RecordingJournal(Journal):
    """A template table's journal: each round's records kept as the engine appended them."""

    rounds: list[list[JournalRecord]]

    def append_many(self, items: Iterable[AppendItem]) -> list[JournalEntry]:
        records = list(items)
        self.rounds.append([r for r in records if isinstance(r, JournalRecord)])
        return super().append_many(records)


def _template_rounds(
    base: Path, templates: int, rounds: int, seed: int
) -> list[tuple[str, list[list[JournalRecord]]]]:
    """``templates`` tables (games mixed as the floor's) play ``rounds`` rounds each through the real
    engine (SimTable); each template's table id and rounds, record by record."""
    rng = random.Random(seed)
    made: list[tuple[str, list[list[JournalRecord]]]] = []
    for index in range(templates):
        table_id = f"X{index + 1:04d}"  # as long as the floor's ids: a retagged round id keeps its length
        journal = _RecordingJournal.open(
            base / "templates" / f"{table_id}.sqlite", table_id, synchronous="OFF"
        )
        assert isinstance(journal, _RecordingJournal)  # Journal.open builds its cls
        journal.rounds = []
        sim = SimTable(journal, MIXED_GAMES[index % len(MIXED_GAMES)], random.Random(rng.random()))
        for _ in range(rounds):
            sim.play_round()
        made.append((table_id, journal.rounds))
        journal.close()
    return made


def _retagged(records: list[JournalRecord], template_id: str, table_id: str) -> list[JournalRecord]:
    """A template's round as table ``table_id``'s: its round ids (``R<table>-<day>-<n>``) renamed; every
    other field as the engine decided it. Built again through the typed entries (``JournalRecord.of``)."""
    old, new = f"R{template_id}-", f"R{table_id}-"
    return [
        JournalRecord.of(
            r.kind,
            json.loads(json.dumps(r.payload).replace(old, new)),
            r.round_id.replace(old, new) if r.round_id else None,
            r.source,
        )
        for r in records
    ]


class ReplayTable:
    """A floor table whose rounds are a template's, retagged: appended to its own real journal (its
    own seq, hash chain and times), as ``SimTable.play_round`` would."""

    def __init__(self, journal: Journal, template_id: str, rounds: list[list[JournalRecord]]) -> None:
        self.journal = journal
        self.template_id = template_id
        self.rounds = rounds
        self.played = 0

    def play_round(self) -> int:
        if self.played >= len(self.rounds):
            raise SystemExit("bench_floor_workers: a table ran out of its template's rounds")
        records = _retagged(self.rounds[self.played], self.template_id, self.journal.table_id)
        self.played += 1
        self.journal.append_many(records)
        return len(records)


async def _start_in_waves(uplinks: list[Uplink], stop: asyncio.Event, wave: int) -> list[asyncio.Task[None]]:
    """The uplinks started ``wave`` at a time, each wave once connected (bounded): 1,000 TLS handshakes
    begun at once in this one process outran nats-server's TLS timeout (5 s) at a load of 12, and the
    retries kept the storm going for minutes. A table daemon is one process per table: it never does."""
    tasks: list[asyncio.Task[None]] = []
    for first in range(0, len(uplinks), wave):
        batch = uplinks[first : first + wave]
        tasks += [asyncio.create_task(u.run(stop)) for u in batch]
        deadline = time.perf_counter() + 60
        while not all(u.status.connected for u in batch) and time.perf_counter() < deadline:
            await asyncio.sleep(0.05)  # a poll of the uplinks' own status, bounded by the deadline
    return tasks


class UplinkFleet:
    """The tables' uplinks: in this process (``processes`` 0, each woken by ``notify``), or spread over
    ``processes`` child processes of this script (``--uplink-child``), each polling its tables' journals
    every ``poll_interval_s``. A table daemon runs its own uplink; 1,000 of them in this one process (one
    event loop, one core at most, a nice'd share of a loaded machine) published ~480 messages/s and
    made the run's length the uplinks' own. Each child reports its uplinks' acked entries in a file."""

    def __init__(
        self, floor: EmbeddedFloor, journals: dict[str, Journal], base: Path, *, processes: int, wave: int
    ) -> None:
        self.processes = processes
        self.wave = wave
        self.local: dict[str, Uplink] = {}
        self.children: list[tuple[subprocess.Popen[bytes], Path]] = []
        self.tasks: list[asyncio.Task[None]] = []
        poll_s = 0.5 if processes else 2.0  # a child's uplinks are not woken: they poll
        self._configs = {t: floor.uplink_config(t, poll_interval_s=poll_s) for t in journals}
        self._journals = journals
        self._base = base

    async def start(self, stop: asyncio.Event) -> None:
        if not self.processes:
            self.local = {t: Uplink(c, self._journals[t].path, t) for t, c in self._configs.items()}
            self.tasks = await _start_in_waves(list(self.local.values()), stop, self.wave)
            return
        ids = list(self._configs)
        for k in range(self.processes):
            mine = ids[k :: self.processes]
            spec = self._base / f"uplinks-{k}.json"
            spec.touch(mode=0o600)  # the tables' NATS passwords: this user's only
            spec.write_text(json.dumps([
                {"table_id": t, "journal": str(self._journals[t].path),
                 "config": {**self._configs[t].to_json(), "password": self._configs[t].password}}
                for t in mine
            ]))  # fmt: skip
            status = self._base / f"uplinks-{k}.status"
            command = [sys.executable, str(Path(__file__).resolve()), "--uplink-child", str(spec),
                       "--connect-wave", str(self.wave)]  # fmt: skip
            with (self._base / f"uplinks-{k}.log").open("ab") as log:
                child = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
            self.children.append((child, status))

    def notify(self, table_id: str) -> None:
        if table_id in self.local:
            self.local[table_id].notify()

    def acked_total(self) -> int:
        if not self.processes:
            return sum(u.status.acked.entry_seq for u in self.local.values())
        total = 0
        for child, status in self.children:
            if child.poll() is not None:
                raise SystemExit(
                    f"bench_floor_workers: an uplink child exited ({child.returncode}): {status}"
                )
            # Not written yet: its first report comes once its uplinks are started.
            with contextlib.suppress(OSError, ValueError, KeyError):
                total += int(json.loads(status.read_text())["acked"])
        return total

    async def stop(self) -> None:
        for child, _ in self.children:
            if child.poll() is None:
                child.send_signal(signal.SIGTERM)
        await asyncio.wait_for(asyncio.gather(*self.tasks, return_exceptions=True), 120)
        for child, _ in self.children:
            try:
                await asyncio.to_thread(child.wait, 120)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait(timeout=10)


def uplink_child(spec_path: Path, wave: int) -> None:
    """``--uplink-child SPEC``: run the uplinks SPEC lists until SIGTERM, their acked entries written to
    SPEC's ``.status`` file every 0.5 s (replaced whole: the parent never reads half of one)."""
    from controller.config import UplinkConfig  # noqa: PLC0415 - the child's own

    specs = json.loads(spec_path.read_text())
    status_path = spec_path.with_suffix(".status")

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGTERM, stop.set)
        uplinks = []
        for spec in specs:
            fields = dict(spec["config"])
            fields["servers"] = tuple(fields["servers"])
            fields["ca_file"] = Path(fields["ca_file"])
            uplinks.append(Uplink(UplinkConfig(**fields), Path(spec["journal"]), spec["table_id"]))

        async def report() -> None:
            while not stop.is_set():
                acked = sum(u.status.acked.entry_seq for u in uplinks)
                connected = sum(1 for u in uplinks if u.status.connected)
                temporary = status_path.with_suffix(".tmp")
                temporary.write_text(json.dumps({"acked": acked, "connected": connected}))
                temporary.replace(status_path)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), 0.5)  # the report's period

        reporter = asyncio.create_task(report())
        tasks = await _start_in_waves(uplinks, stop, wave)
        await stop.wait()
        await asyncio.wait_for(asyncio.gather(*tasks, reporter, return_exceptions=True), 100)

    asyncio.run(main())


class FloorProgress:
    """The floor's entries so far, cheaply: the sum of ``floor_tables.last_seq`` (each table's chain head,
    written in the same transaction as its entries), over one connection. ``count(*)`` of
    ``floor_entries`` every 50 ms cost PostgreSQL a scan of up to 300,000 rows each time at 1,000 tables;
    the final exactly-once check still counts the rows."""

    def __init__(self, dsn: str) -> None:
        self.dsn = dsn
        self._connection: psycopg.Connection[Any] | None = None

    def total(self) -> int:
        if self._connection is None or self._connection.closed:
            self._connection = psycopg.connect(self.dsn, autocommit=True)
        row = self._connection.execute("SELECT coalesce(sum(last_seq), 0) FROM floor_tables").fetchone()
        return int(row[0]) if row else 0

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()

    async def wait(self, target: int, timeout_s: float) -> float:
        """Seconds until the floor holds ``target`` entries (bounded by ``timeout_s``)."""
        started = time.perf_counter()
        while (held := await asyncio.to_thread(self.total)) < target:
            if time.perf_counter() - started > timeout_s:
                raise SystemExit(
                    f"bench_floor_workers: the floor holds {held}, not {target} entries, after {timeout_s} s"
                )
            await asyncio.sleep(0.1)  # a poll of PostgreSQL, bounded by the timeout
        return time.perf_counter() - started


def _serve(config_path: Path, log_path: Path, worker: str | None, partitions: int) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "controller.cli", "floor", "serve", "--config", str(config_path)]
    if worker is not None:
        command += ["--worker", worker, "--partitions", str(partitions), "--lease-ttl", str(LEASE_TTL_S)]
        # The takeover's timeline (lease taken, consumer synced, first delivery, first commit) is logged
        # at info: kept in the workers' logs under --dir (docs/floor.md "A worker's takeover, timed").
        command += ["--log-level", "info"]
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    with log_path.open("ab") as log:
        return subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)


def _stop(processes: list[subprocess.Popen[bytes]]) -> None:
    for process in processes:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
    for process in processes:
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


def _commit_span_s(dsn: str) -> float:
    with psycopg.connect(dsn) as connection:
        row = connection.execute(
            "SELECT extract(epoch FROM max(floor_committed_utc) - min(floor_committed_utc)) "
            "FROM floor_entries"
        ).fetchone()
    return float(row[0]) if row and row[0] else 0.0


def _commit_times(dsn: str, after_s: float, tables: list[str] | None = None) -> list[float]:
    """Each distinct commit time (PostgreSQL's clock, this machine's) since ``after_s``: of ``tables``
    only when given."""
    with psycopg.connect(dsn) as connection:
        rows = connection.execute(
            "SELECT DISTINCT extract(epoch FROM floor_committed_utc) FROM floor_entries "
            "WHERE floor_committed_utc >= to_timestamp(%s) AND (%s::text[] IS NULL OR table_id = ANY(%s)) "
            "ORDER BY 1",
            (after_s, tables, tables),
        ).fetchall()
    return [float(row[0]) for row in rows]


def _commit_times_by_partition(
    dsn: str, after_s: float, tables: list[str], partitions: int
) -> dict[int, list[float]]:
    """Each partition's distinct commit times since ``after_s`` (its tables' commits)."""
    partition = {t: partition_of(t, partitions) for t in tables}
    with psycopg.connect(dsn) as connection:
        rows = connection.execute(
            "SELECT DISTINCT table_id, extract(epoch FROM floor_committed_utc) FROM floor_entries "
            "WHERE floor_committed_utc >= to_timestamp(%s)",
            (after_s,),
        ).fetchall()
    times: dict[int, set[float]] = {p: set() for p in range(partitions)}
    for table_id, at_s in rows:
        times[partition[str(table_id)]].add(float(at_s))
    return {p: sorted(t) for p, t in times.items()}


def _holders(dsn: str) -> dict[int, str]:
    """partition -> the worker PostgreSQL names for it now."""
    with psycopg.connect(dsn) as connection:
        rows = connection.execute("SELECT partition, worker FROM floor_partition_leases").fetchall()
    return {int(p): str(w) for p, w in rows}


async def _wait_shared(dsn: str, workers: list[str], partitions: int, timeout_s: float) -> dict[int, str]:
    """Until every partition is held and every worker holds at least one (bounded); the holders then.
    The worker kill must take some partitions from a worker while another holds the rest, or the lease's
    move under load is not measured (the 1,000-table run of the fifth stop killed a worker holding both)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        holders = await asyncio.to_thread(_holders, dsn)
        if len(holders) == partitions and set(holders.values()) == set(workers):
            return holders
        await asyncio.sleep(0.2)  # a poll of PostgreSQL, bounded by the deadline
    raise SystemExit(f"bench_floor_workers: the workers did not share the partitions in {timeout_s} s")


async def _wait_held_by(dsn: str, worker: str, partitions: int, timeout_s: float) -> None:
    """Until ``worker`` holds every partition (bounded)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with psycopg.connect(dsn) as connection:
            rows = connection.execute("SELECT worker FROM floor_partition_leases").fetchall()
        if len(rows) == partitions and all(str(row[0]) == worker for row in rows):
            return
        await asyncio.sleep(0.1)  # a poll of PostgreSQL, bounded by the deadline
    raise SystemExit(f"bench_floor_workers: {worker} did not take every partition in {timeout_s} s")


def _largest_gap_s(times: list[float], start_s: float, end_s: float) -> float:
    """The longest stretch without a commit from ``start_s`` (a kill) to ``end_s`` (the next step)."""
    marks = [start_s, *(t for t in times if start_s <= t <= end_s)]
    if marks[-1] < end_s and not any(t > end_s for t in times):
        marks.append(end_s)
    nxt = [t for t in times if t > marks[-1]]
    if nxt:
        marks.append(nxt[0])  # the gap that spans the window's end
    return round(max((b - a for a, b in itertools.pairwise(marks)), default=0.0), 2)


class LeasePoller:
    """Samples floor_partition_leases every ``interval_s`` in a thread: (partition, epoch) -> workers."""

    def __init__(self, dsn: str, interval_s: float = 0.2) -> None:
        self.dsn = dsn
        self.interval_s = interval_s
        self.seen: dict[tuple[int, int], set[str]] = {}
        self.order: dict[int, list[int]] = {}
        self.samples = 0
        self.stop_event = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        with psycopg.connect(self.dsn, autocommit=True) as connection:
            while not self.stop_event.is_set():
                rows = connection.execute(
                    "SELECT partition, epoch, worker FROM floor_partition_leases"
                ).fetchall()
                self.samples += 1
                for partition, epoch, worker in rows:
                    self.seen.setdefault((int(partition), int(epoch)), set()).add(str(worker))
                    epochs = self.order.setdefault(int(partition), [])
                    if not epochs or epochs[-1] != int(epoch):
                        epochs.append(int(epoch))
                self.stop_event.wait(self.interval_s)  # the sampling period, not a synchronisation

    def figures(self) -> dict[str, Any]:
        return {
            "samples": self.samples,
            "interval_s": self.interval_s,
            "epochs_seen": len(self.seen),
            "epochs_with_two_workers": sorted(f"p{p}@{e}" for (p, e), w in self.seen.items() if len(w) > 1),
            "partitions_with_falling_epoch": sorted(
                p for p, epochs in self.order.items() if epochs != sorted(epochs)
            ),
            "holders": {f"p{p}@{e}": sorted(w) for (p, e), w in sorted(self.seen.items())},
        }


class LeaderWatch:
    """The node's loss decomposed from the cluster's side: the surviving nodes' monitoring (``/jsz``,
    nats-server's own view) polled every ``interval_s`` in a thread, from just before the kill until
    every raft group the floor uses (the metadata, the stream, the lease bucket's stream, each partition
    consumer) has a leader that is not the killed node, the stream has stored a message, and each
    partition consumer has delivered one, after it (bounded by ``bound_s``). Each time is this machine's
    clock at the poll's answer: the figures are late by up to one poll (``slowest_poll_s`` says how long
    a poll took under the run's load)."""

    def __init__(
        self, monitor_ports: list[int], killed_name: str, consumers: list[str], *,
        interval_s: float = 0.1, bound_s: float = 60.0,
    ) -> None:  # fmt: skip
        self.monitor_ports = monitor_ports
        self.killed_name = killed_name
        self.consumers = consumers
        self.interval_s = interval_s
        self.bound_s = bound_s
        self.killed_s = 0.0  # set once the node is killed; polls before it only set the baselines
        self.leader_before: dict[str, str] = {}  # group -> its leader as the survivors named it before
        # a group the killed node led -> when a survivor first named another leader for it
        self.new_leader_s: dict[str, float] = {}
        self.new_leader_name: dict[str, str] = {}
        self.first_store_s: float | None = None
        self.first_delivery_s: dict[str, float] = {}
        self.polls = 0
        self.slowest_poll_s = 0.0
        self.errors = 0
        self._stream_seq = 0  # the stream's last sequence seen so far (any survivor)
        self._delivered: dict[str, int] = {}  # consumer -> its delivered stream sequence seen so far
        self.stop_event = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _jsz(self, port: int) -> dict[str, Any]:
        url = f"http://127.0.0.1:{port}/jsz?accounts=true&consumers=true&config=false"
        with urllib.request.urlopen(url, timeout=2) as answer:
            document: dict[str, Any] = json.loads(answer.read())
        return document

    def _groups(self, document: dict[str, Any]) -> dict[str, tuple[str, int]]:
        """group -> (the leader this node names, the group's sequence: the stream's last stored, a
        consumer's last delivered; 0 for the metadata and the bucket)."""
        groups = {"metadata": (str((document.get("meta_cluster") or {}).get("leader") or ""), 0)}
        for account in document.get("account_details") or []:
            for stream in account.get("stream_detail") or []:
                name = str(stream.get("name"))
                leader = str((stream.get("cluster") or {}).get("leader") or "")
                if name == STREAM_NAME:
                    groups["stream"] = (leader, int((stream.get("state") or {}).get("last_seq") or 0))
                elif name == f"KV_{LEASE_BUCKET}":
                    groups["lease_bucket"] = (leader, 0)
                for consumer in stream.get("consumer_detail") or []:
                    if consumer.get("name") in self.consumers:
                        delivered = int((consumer.get("delivered") or {}).get("stream_seq") or 0)
                        leader = str((consumer.get("cluster") or {}).get("leader") or "")
                        groups[str(consumer["name"])] = (leader, delivered)
        return groups

    def led(self) -> list[str]:
        """The groups the killed node led (as the survivors named their leaders before the kill)."""
        return sorted(g for g, leader in self.leader_before.items() if leader == self.killed_name)

    def _live(self, group: str) -> bool:
        return group not in self.led() or group in self.new_leader_s

    def baseline(self) -> None:
        """Before the kill: each group's leader and sequences as the survivors name them (every group
        named, bounded), so that what the kill changes is told from what was."""
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            for port in self.monitor_ports:
                with contextlib.suppress(OSError, ValueError):
                    self._note(self._groups(self._jsz(port)), time.time())
            if len(self.leader_before) >= 3 + len(self.consumers):
                return
            time.sleep(self.interval_s)  # a poll of the servers' state, bounded by the deadline
        raise SystemExit(
            f"bench_floor_workers: the survivors named no leader for some of {self.leader_before}"
        )

    def _done(self) -> bool:
        return (
            all(g in self.new_leader_s for g in self.led())
            and self.first_store_s is not None
            and len(self.first_delivery_s) == len(self.consumers)
        )

    def _run(self) -> None:
        while not self.stop_event.is_set():
            if self.killed_s and (self._done() or time.time() - self.killed_s > self.bound_s):
                return
            asked_s = time.time()
            for port in self.monitor_ports:
                try:
                    groups = self._groups(self._jsz(port))
                except (OSError, ValueError):
                    self.errors += 1  # a survivor too busy to answer in 2 s: the next poll asks again
                    continue
                self._note(groups, time.time())
            self.polls += 1
            self.slowest_poll_s = max(self.slowest_poll_s, time.time() - asked_s)
            self.stop_event.wait(self.interval_s)  # the sampling period, not a synchronisation

    def _note(self, groups: dict[str, tuple[str, int]], at_s: float) -> None:
        stream_seq = groups.get("stream", ("", 0))[1]
        if not self.killed_s:
            self.leader_before.update({g: leader for g, (leader, _) in groups.items() if leader})
            self._stream_seq = max(self._stream_seq, stream_seq)
            for name in self.consumers:
                self._delivered[name] = max(self._delivered.get(name, 0), groups.get(name, ("", 0))[1])
            return
        for group, (leader, _) in groups.items():
            if group not in self.led():
                continue  # its leader lives: no election
            if leader and leader != self.killed_name and group not in self.new_leader_s:
                self.new_leader_s[group] = at_s
                self.new_leader_name[group] = leader
        # A store or a delivery counts once its group has a live leader: a follower applying, after the
        # kill, what the killed leader had replicated before it is not the stream moving again.
        if self._live("stream"):
            if self.first_store_s is None and stream_seq > self._stream_seq:
                self.first_store_s = at_s
            self._stream_seq = max(self._stream_seq, stream_seq)
        for name in self.consumers:
            delivered = groups.get(name, ("", 0))[1]
            if self._live(name):
                if name not in self.first_delivery_s and delivered > self._delivered.get(name, 0):
                    self.first_delivery_s[name] = at_s
                self._delivered[name] = max(self._delivered.get(name, 0), delivered)

    def figures(self) -> dict[str, Any]:
        def after(at_s: float | None) -> float | None:
            return round(at_s - self.killed_s, 2) if at_s is not None else None

        return {
            "killed_node": self.killed_name,
            "groups_it_led": self.led(),
            "leader_after_kill_s": {g: after(self.new_leader_s.get(g)) for g in self.led()},
            "leader_after_kill": dict(sorted(self.new_leader_name.items())),
            "stream_first_store_after_kill_s": after(self.first_store_s),
            "consumer_first_delivery_after_kill_s": {
                c: after(self.first_delivery_s.get(c)) for c in self.consumers
            },
            "polls": self.polls,
            "poll_interval_s": self.interval_s,
            "slowest_poll_s": round(self.slowest_poll_s, 2),
            "unanswered_polls": self.errors,
        }


def _largest_gap_window(times: list[float], start_s: float, end_s: float) -> tuple[float, float]:
    """Where ``_largest_gap_s``'s gap lies: (its last commit before, or ``start_s``; its next commit)."""
    marks = [start_s, *(t for t in times if start_s <= t <= end_s)]
    nxt = [t for t in times if t > marks[-1]]
    if nxt:
        marks.append(nxt[0])
    elif marks[-1] < end_s:
        marks.append(end_s)
    return max(itertools.pairwise(marks), key=lambda pair: pair[1] - pair[0], default=(start_s, start_s))


def _log_counts(paths: list[Path], words: tuple[str, ...]) -> dict[str, int]:
    """How many lines of the processes' logs name each of ``words`` (their retries, their elections)."""
    counts = dict.fromkeys(words, 0)
    for path in paths:
        with contextlib.suppress(OSError), path.open(errors="replace") as lines:
            for line in lines:
                for word in words:
                    if word in line:
                        counts[word] += 1
    return counts


def _decomposed(
    watch: LeaderWatch, killed_led: list[str], times_by_partition: dict[int, list[float]], *,
    partitions: int, killed_s: float, until_s: float,
) -> dict[str, Any]:  # fmt: skip
    """The node's gap, taken apart: what the cluster took (the elections of the groups the killed node
    led, the stream's first store after its own), what the floor took after it (each partition's first
    commit after its consumer's first delivery), per partition and for the floor as a whole."""
    cluster = watch.figures()
    leaders = cluster["leader_after_kill_s"]
    all_times = sorted(t for times in times_by_partition.values() for t in times)
    gap_from, gap_to = _largest_gap_window(all_times, killed_s, until_s)
    per_partition: dict[str, Any] = {}
    for partition in range(partitions):
        consumer = partition_consumer(partition, partitions)
        times = times_by_partition.get(partition, [])
        p_from, p_to = _largest_gap_window(times, killed_s, until_s)
        # What this partition's commits had to wait for: the elections of the groups on its path that
        # the killed node led (the stream for new messages, its consumer for any delivery).
        needed = [g for g in ("stream", consumer) if g in killed_led]
        waited_s = max((leaders.get(g) or 0.0 for g in needed), default=0.0)
        delivered_s = cluster["consumer_first_delivery_after_kill_s"].get(consumer)
        per_partition[f"p{partition}"] = {
            "consumer": consumer,
            "elections_waited_for": needed,
            "elections_done_after_kill_s": round(waited_s, 2),
            "first_delivery_after_kill_s": delivered_s,
            "largest_gap_s": round(p_to - p_from, 2),
            "largest_gap_from_to_after_kill_s": [round(p_from - killed_s, 2), round(p_to - killed_s, 2)],
            # The floor's own part: from the last election this partition needed to its first commit
            # after it (a pull answered, a batch, a transaction; the worker's re-pull after a leader
            # change). A commit before it was of messages already stored and delivered.
            "first_commit_after_its_elections_s": next(
                (round(t - killed_s - waited_s, 2) for t in times if t >= killed_s + waited_s), None
            ),
        }
    stream_s = leaders.get("stream") if "stream" in killed_led else None
    first_store_s = cluster["stream_first_store_after_kill_s"]
    return {
        **cluster,
        "largest_gap_s": round(gap_to - gap_from, 2),
        "largest_gap_from_to_after_kill_s": [round(gap_from - killed_s, 2), round(gap_to - killed_s, 2)],
        # The uplinks' part: the stream's new leader to its first message stored (their backoff, their
        # reconnection and sync, the publish); only when the killed node led the stream.
        "uplinks_stream_leader_to_first_store_s": (
            round(first_store_s - stream_s, 2) if stream_s is not None and first_store_s is not None else None
        ),
        # The floor's gap against the stream's election: how long the commits went on after it.
        "largest_gap_end_after_stream_leader_s": (
            round(gap_to - killed_s - stream_s, 2) if stream_s is not None else None
        ),
        "partitions": per_partition,
    }


async def _catch_up(
    floor: EmbeddedFloor, base: Path, name: str, *, workers: list[str | None], partitions: int,
    entries: int, messages: int,
) -> tuple[dict[str, Any], list[subprocess.Popen[bytes]]]:  # fmt: skip
    config_path = write_floor_config(base / f"config-{name}", floor.floor_config(batch_size=500))
    dsn = floor.reporting_dsn
    processes = [_serve(config_path, base / f"{name}-{w or 'single'}.log", w, partitions) for w in workers]
    progress = FloorProgress(dsn)
    started = time.perf_counter()
    try:
        first_s = await progress.wait(1, 120)
        cpu_first = [_proc_cpu_s(p.pid)[0] for p in processes]
        await progress.wait(entries, 1800)
    finally:
        progress.close()
    total_s = time.perf_counter() - started
    cpu_last = [_proc_cpu_s(p.pid)[0] for p in processes]
    span_s = await asyncio.to_thread(_commit_span_s, dsn) or total_s
    return {
        "floor_processes": len(processes),
        "entries": entries,
        "seconds_from_start": round(total_s, 2),
        "first_commit_after_s": round(first_s, 2),
        "commit_span_s": round(span_s, 2),
        "entries_per_s_committing": round(entries / span_s),
        # Each process's CPU from the floor's first commit to its last, per 1,000 stream messages (each
        # worker's consumers read every message and ack another partition's unread: nats-server 2.9).
        "cpu_ms_per_1000_messages_per_process": [
            round(1_000_000 * (b - a) / messages) for a, b in zip(cpu_first, cpu_last, strict=True)
        ],
    }, processes


async def bench(args: argparse.Namespace, base: Path) -> dict[str, Any]:
    ids = [f"T{n:04d}" for n in range(1, args.tables + 1)]
    floor = EmbeddedFloor(base / "floor", ids, nodes=args.nodes, ack_wait_s=5)
    started = time.perf_counter()
    await asyncio.to_thread(floor.start)
    setup_s = time.perf_counter() - started
    assert floor.cluster is not None or args.nodes == 1
    rng = random.Random(args.seed)
    started = time.perf_counter()
    journals = {t: Journal.open(base / "tables" / f"{t}.sqlite", t, synchronous="OFF") for t in ids}
    sims: list[SimTable | ReplayTable]
    if args.templates:
        # Each table's rounds are a template's, played once through the engine and retagged per table
        # (docs/floor.md "Measured: workers on the cluster"): the floor's load is the same, the bench's
        # own engine work is templates x rounds instead of tables x rounds.
        templates = _template_rounds(
            base, min(args.templates, len(ids)), args.rounds + args.live_rounds, args.seed
        )
        sims = [ReplayTable(journals[t], *templates[i % len(templates)]) for i, t in enumerate(ids)]
    else:
        sims = [
            SimTable(journals[t], MIXED_GAMES[i % 3], random.Random(rng.random())) for i, t in enumerate(ids)
        ]
    for _ in range(args.rounds):
        for sim in sims:
            sim.play_round()
    outage_entries = _journal_total(journals)
    figures: dict[str, Any] = {
        "tables": len(ids), "nodes": args.nodes, "workers": args.workers, "partitions": args.partitions,
        "cpus": os.cpu_count(), "load_average_1m_at_start": round(os.getloadavg()[0], 2),
        "setup_s": round(setup_s, 1), "outage_entries": outage_entries,
        "templates": args.templates, "outage_play_s": round(time.perf_counter() - started, 1),
    }  # fmt: skip
    processes: list[subprocess.Popen[bytes]] = []
    stop = asyncio.Event()
    fleet: UplinkFleet | None = None
    try:
        admin = await floor.connect_admin()
        try:
            # The partition consumers' ack_wait at its default (partition_ack_wait_s: the lease TTL).
            await ensure_partitions(admin, args.partitions, lease_ttl_s=LEASE_TTL_S,
                                    replicas=min(args.nodes, 3))  # fmt: skip
        finally:
            await admin.close()
        fleet = UplinkFleet(floor, journals, base, processes=args.uplink_processes, wave=args.connect_wave)
        started = time.perf_counter()
        await fleet.start(stop)
        figures["uplink_processes"] = args.uplink_processes
        while fleet.acked_total() < outage_entries:
            if time.perf_counter() - started > WAIT_BOUND_S:
                raise SystemExit(f"bench_floor_workers: the uplinks did not publish in {WAIT_BOUND_S:g} s")
            await asyncio.sleep(0.05)
        messages = await _stream_count(floor)
        figures["publish"] = {
            "messages_on_stream": messages,
            "seconds": round(time.perf_counter() - started, 2),
        }
        # 2a. Today's single floor service, into the first database.
        counts = {"partitions": args.partitions, "entries": outage_entries, "messages": messages}
        single, single_processes = await _catch_up(floor, base, "single", workers=[None], **counts)
        _stop(single_processes)
        # 2b. N workers on the same stream, into a second database of the same PostgreSQL.
        floor.dbname = floor.dbname + "_workers"
        floor.setup_database()
        names = [chr(ord("A") + i) for i in range(args.workers)]
        workers, processes = await _catch_up(floor, base, "workers", workers=list(names), **counts)
        figures["catch_up"] = {
            "single_service": single,
            "workers": workers,
            "ratio_workers_over_single": round(
                workers["entries_per_s_committing"] / single["entries_per_s_committing"], 2
            ),
            "load_average_1m_after": round(os.getloadavg()[0], 2),
        }
        if args.kill:
            figures["kill"] = await _kill_scenario(
                args,
                floor,
                base,
                sims=sims,
                journals=journals,
                fleet=fleet,
                processes=processes,
                names=names,
            )
        total = _journal_total(journals)
        progress = FloorProgress(floor.reporting_dsn)
        try:
            await progress.wait(total, WAIT_BOUND_S)
        finally:
            progress.close()
        with psycopg.connect(floor.reporting_dsn) as connection:
            verified = sum(1 for t in ids if verify_table(connection, t).ok)
        figures["entries_in_journals"] = total
        figures["entries_on_floor"] = await asyncio.to_thread(_count, floor.reporting_dsn)
        # Exactly once: nothing missing, and no row can be doubled since (table_id, seq) is
        # floor_entries' primary key (a count of duplicates of it could only ever read 0: not given).
        figures["missing"] = total - figures["entries_on_floor"]
        figures["exactly_once"] = "missing == 0 and the primary key (table_id, seq) of floor_entries"
        figures["chains_verified"] = verified
        figures["load_average_1m_at_end"] = round(os.getloadavg()[0], 2)
    finally:
        stop.set()
        if fleet is not None:
            await fleet.stop()
        _stop(processes)
        for journal in journals.values():
            journal.close()
        floor.stop()
    return figures


async def _kill_scenario(
    args: argparse.Namespace, floor: EmbeddedFloor, base: Path, *, sims: list[SimTable | ReplayTable],
    journals: dict[str, Journal], fleet: UplinkFleet, processes: list[subprocess.Popen[bytes]],
    names: list[str],
) -> dict[str, Any]:  # fmt: skip
    assert floor.cluster is not None, "--kill needs --nodes 3"
    cluster = floor.cluster
    dsn = floor.reporting_dsn
    poller = LeasePoller(dsn)
    poller.thread.start()
    loop = asyncio.get_running_loop()
    scenario_from_s = time.time()

    def play_live() -> None:
        interval_s = 1.0 / args.live_rate
        next_s = time.perf_counter()
        for _ in range(args.live_rounds):
            for sim in sims:
                next_s += interval_s
                time.sleep(max(0.0, next_s - time.perf_counter()))  # the pace of play, not a wait
                sim.play_round()
                loop.call_soon_threadsafe(fleet.notify, sim.journal.table_id)

    progress = FloorProgress(dsn)

    async def moved_by(count: int) -> None:
        await progress.wait(await asyncio.to_thread(progress.total) + count, WAIT_BOUND_S)

    playing = asyncio.create_task(asyncio.to_thread(play_live))
    await moved_by(args.kill_step)  # the workers committing mid-stream
    holders_before_node_kill = await _wait_shared(dsn, names, args.partitions, 300)
    leaders = await _leaders(floor, args.partitions)
    arranged: list[str] = []
    if args.kill_node in ARRANGED_KILLS:
        leaders, arranged = await _arrange_leaders(floor, args.partitions, args.kill_node, leaders)
        if arranged:
            await moved_by(max(1, args.kill_step // 4))  # the workers committing again after the moves
    killed_node = _node_to_kill(args.kill_node, leaders, args.nodes)
    consumers = [partition_consumer(p, args.partitions) for p in range(args.partitions)]
    watch = LeaderWatch(
        [n.monitor_port for i, n in enumerate(cluster.nodes) if i != killed_node and n.monitor_port],
        cluster.nodes[killed_node].server_name or "",
        consumers,
    )
    logs = [base / f"uplinks-{k}.log" for k in range(args.uplink_processes)]
    logs += [base / f"workers-{name}.log" for name in names]
    logs_before = await asyncio.to_thread(_log_counts, logs, LOGGED_WORDS)
    await asyncio.to_thread(watch.baseline)
    node_killed_s = time.time()
    node_process = cluster.nodes[killed_node].process
    if args.kill_signal == "stop":
        # SIGSTOP: the node silent with its sockets open, as a machine that lost its power or its network
        # looks to its clients (no RST: only their own pings or timeouts tell them).
        assert node_process is not None
        node_process.send_signal(signal.SIGSTOP)
    else:
        cluster.kill(killed_node)
    watch.killed_s = node_killed_s
    watch.thread.start()
    await moved_by(args.kill_step)  # commits with a node down
    # The worker is killed only once the cluster is whole again (every group led, the stream and each
    # consumer moving: the watch's end, bounded by its own 60 s), so the node's gap is the node's alone.
    await asyncio.to_thread(watch.thread.join, watch.bound_s + 10)
    node_window_end_s = time.time()
    logs_after = await asyncio.to_thread(_log_counts, logs, LOGGED_WORDS)
    # A node's loss must move no partition off a live worker (docs/floor.md "The lease loop through a
    # node's loss"): the holders now, against before the kill, stated.
    holders_after_node_kill = await asyncio.to_thread(_holders, dsn)
    # The worker killed is one holding some partitions while another holds the rest: waited for (the
    # leases shared again, if the node's loss moved any), then the victim picked by the leases.
    holders = await _wait_shared(dsn, names, args.partitions, 300)
    victim_name = names[0]
    survivor = next(n for n in names if n != victim_name) if len(names) > 1 else victim_name
    victim_partitions = sorted(p for p, w in holders.items() if w == victim_name)
    victim_tables = [t for t in journals if partition_of(t, args.partitions) in victim_partitions]
    worker_killed_s = time.time()
    victim = processes[0]
    victim.send_signal(signal.SIGKILL)
    victim.wait(timeout=30)
    # The survivor takes the dead worker's partitions once their keys expire (the lease's bound).
    await _wait_held_by(dsn, survivor, args.partitions, 300)
    moved_s = time.time()
    await moved_by(args.kill_step)  # commits with a worker down
    restarted_s = time.time()
    live_done = playing.done()
    if args.kill_signal == "stop":
        assert node_process is not None
        node_process.send_signal(signal.SIGCONT)
    else:
        cluster.start_node(killed_node)
    config_path = base / "config-workers" / "floor.toml"  # write_floor_config's file
    processes[0] = _serve(
        config_path, base / f"workers-{victim_name}-restarted.log", victim_name, args.partitions
    )
    await playing
    for table_id in journals:
        fleet.notify(table_id)
    await progress.wait(_journal_total(journals), WAIT_BOUND_S)
    progress.close()
    all_s = time.time()
    poller.stop_event.set()
    poller.thread.join(timeout=10)
    times = await asyncio.to_thread(_commit_times, dsn, scenario_from_s - 1)
    by_partition = await asyncio.to_thread(
        _commit_times_by_partition, dsn, node_killed_s - 1, list(journals), args.partitions
    )
    killed_led = sorted(what for what, node in leaders.items() if node == killed_node)
    decomposition = _decomposed(
        watch, killed_led, by_partition, partitions=args.partitions, killed_s=node_killed_s,
        until_s=node_window_end_s,
    )  # fmt: skip
    # The processes' own retries while the node was down (the kill to the cluster whole again).
    decomposition["logged_after_kill"] = {w: logs_after[w] - logs_before[w] for w in LOGGED_WORDS}
    return {
        "live_rounds_per_table": args.live_rounds,
        "rounds_per_s_offered": args.live_rate,
        "play_still_running_at_restart": not live_done,
        "killed_node": f"n{killed_node + 1}",
        "node_killed_unix_s": round(node_killed_s, 3),  # beside the nodes' logs (their elections)
        "kill_signal": "SIGSTOP (then SIGCONT)" if args.kill_signal == "stop" else "SIGKILL (then started)",
        # What the killed node led (stream, lease bucket, consumers): its elections are the node gap.
        "killed_node_led": killed_led,
        "killed_node_led_the_metadata": "metadata" in watch.led(),
        "leaderships_moved_before_the_kill": arranged,
        "node_kill_decomposed": decomposition,
        "largest_commit_gap_after_node_kill_s": _largest_gap_s(times, node_killed_s, worker_killed_s),
        "holders_before_node_kill": {str(p): w for p, w in sorted(holders_before_node_kill.items())},
        "holders_after_node_kill": {str(p): w for p, w in sorted(holders_after_node_kill.items())},
        "partitions_moved_by_node_kill": sorted(
            p for p, w in holders_before_node_kill.items() if holders_after_node_kill.get(p) != w
        ),
        "killed_worker": victim_name,
        "killed_workers_partitions": victim_partitions,
        "survivors_partitions_at_worker_kill": sorted(p for p, w in holders.items() if w == survivor),
        "largest_commit_gap_after_worker_kill_s": _largest_gap_s(times, worker_killed_s, restarted_s),
        # The killed worker's own tables: their commits stop until the survivor holds their partitions.
        "killed_workers_tables": len(victim_tables),
        "largest_commit_gap_of_killed_workers_tables_s": _largest_gap_s(
            await asyncio.to_thread(_commit_times, dsn, worker_killed_s - 1, victim_tables),
            worker_killed_s,
            restarted_s,
        ),
        "partitions_moved_after_s": round(moved_s - worker_killed_s, 2),
        "largest_commit_gap_after_restart_s": _largest_gap_s(times, restarted_s, all_s),
        "node_kill_to_worker_kill_s": round(worker_killed_s - node_killed_s, 2),
        "worker_kill_to_restart_s": round(restarted_s - worker_killed_s, 2),
        "restart_to_all_on_floor_s": round(all_s - restarted_s, 2),
        "lease_ttl_s": LEASE_TTL_S,
        "lease_observations": poller.figures(),
    }


async def _leaders(floor: EmbeddedFloor, partitions: int) -> dict[str, int]:
    """What each node leads: the stream, the lease bucket's stream, each partition consumer (node
    index from the server name ``...n<i>``)."""
    admin = await floor.connect_admin()
    try:
        js = admin.jetstream()
        infos: dict[str, Any] = {
            "stream": (await js.stream_info(STREAM_NAME)).cluster,
            "lease_bucket": (await js.stream_info(f"KV_{LEASE_BUCKET}")).cluster,
        }
        for partition in range(partitions):
            name = partition_consumer(partition, partitions)
            infos[name] = (await js.consumer_info(STREAM_NAME, name)).cluster
    finally:
        await admin.close()
    return {
        what: int(cluster.leader.rsplit("n", 1)[1]) - 1
        for what, cluster in infos.items()
        if cluster is not None and cluster.leader
    }


def _node_to_kill(choice: str, leaders: dict[str, int], nodes: int) -> int:
    """``stream-leader``: the node leading the stream (the hardest to lose, as test_failures.py kills);
    ``bucket-leader``: the lease bucket's; ``consumer-leader``: one leading a partition consumer and
    neither the stream nor the bucket; ``no-leader``: one leading none of them (both arranged first by
    ``_arrange_leaders``); ``last``: the last node, whatever it leads."""
    if choice == "stream-leader" and "stream" in leaders:
        return leaders["stream"]
    if choice == "bucket-leader" and "lease_bucket" in leaders:
        return leaders["lease_bucket"]
    if choice in ARRANGED_KILLS:
        for node in range(nodes):
            led = {what for what, n in leaders.items() if n == node}
            if choice == "no-leader" and not led:
                return node
            if choice == "consumer-leader" and led and not led & {"stream", "lease_bucket"}:
                return node
        raise SystemExit(f"bench_floor_workers: no node for --kill-node {choice} (leaders {leaders})")
    return nodes - 1


async def _arrange_leaders(
    floor: EmbeddedFloor, partitions: int, choice: str, leaders: dict[str, int]
) -> tuple[dict[str, int], list[str]]:
    """Leaderships moved so that a node leads what ``choice`` needs: ``no-leader``, none of the
    stream, the bucket and the partition consumers; ``consumer-leader``, the first partition consumer
    and neither the stream nor the bucket. Each move is JetStream's leader stepdown with a preferred
    node (``$JS.API.STREAM|CONSUMER.LEADER.STEPDOWN``, nats-server 2.11+), asked of the live leader
    before any kill. The metadata's leader is not moved (its stepdown is the system account's).
    The leaders then, and the moves made (``group -> node``)."""
    assert floor.cluster is not None
    nodes = floor.cluster.size
    if choice == "consumer-leader":
        target = leaders[partition_consumer(0, partitions)]
    else:  # the node leading the fewest: the fewest moves
        target = min(range(nodes), key=lambda n: sum(1 for node in leaders.values() if node == n))
    others = [n for n in range(nodes) if n != target]
    wanted: dict[str, int] = {}
    for index, (what, node) in enumerate(sorted(leaders.items())):
        if node == target and (choice == "no-leader" or what in ("stream", "lease_bucket")):
            wanted[what] = others[index % len(others)]
    moves: list[str] = []
    admin = await floor.connect_admin()
    try:
        for what, node in wanted.items():
            preferred = json.dumps({"placement": {"preferred": f"flushtable-n{node + 1}"}}).encode()
            if what in ("stream", "lease_bucket"):
                stream = STREAM_NAME if what == "stream" else f"KV_{LEASE_BUCKET}"
                subject = f"$JS.API.STREAM.LEADER.STEPDOWN.{stream}"
            else:
                subject = f"$JS.API.CONSUMER.LEADER.STEPDOWN.{STREAM_NAME}.{what}"
            answer = json.loads((await admin.request(subject, preferred, timeout=10)).data)
            if not answer.get("success"):
                raise SystemExit(f"bench_floor_workers: the stepdown of {what} was refused: {answer}")
            moves.append(f"{what} -> n{node + 1}")
    finally:
        await admin.close()
    deadline = time.monotonic() + 60
    while True:  # until every move shows in the leaders' own answers, bounded
        now = await _leaders(floor, partitions)
        if all(now.get(what) != target for what in wanted):
            return now, moves
        if time.monotonic() > deadline:
            raise SystemExit(f"bench_floor_workers: the leaderships did not move off n{target + 1}: {now}")
        await asyncio.sleep(0.2)  # a poll of the cluster's state, bounded by the deadline


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--tables", type=int, default=150)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--nodes", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--partitions", type=int, default=2)
    parser.add_argument("--kill", action="store_true")
    parser.add_argument("--live-rounds", type=int, default=3)
    parser.add_argument("--live-rate", type=float, default=20.0, help="rounds a second across the floor")
    parser.add_argument("--kill-step", type=int, default=200, help="entries committed between kill steps")
    parser.add_argument(
        "--kill-node", choices=["stream-leader", "bucket-leader", *ARRANGED_KILLS, "last"],
        default="stream-leader",
        help="which nats node --kill kills",
    )  # fmt: skip
    parser.add_argument(
        "--kill-signal", choices=["kill", "stop"], default="kill",
        help="kill: SIGKILL the node (its sockets reset at once); stop: SIGSTOP it (silent, sockets open)",
    )  # fmt: skip
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--connect-wave", type=int, default=25, help="uplinks started at a time")
    parser.add_argument(
        "--uplink-processes", type=int, default=4, help="child processes running the uplinks (0: this one)"
    )
    parser.add_argument("--uplink-child", default=None, help=argparse.SUPPRESS)
    parser.add_argument(
        "--templates", type=int, default=12,
        help="tables played by the engine; the others replay their rounds retagged (0: every table plays)",
    )  # fmt: skip
    parser.add_argument("--out", default="floor_workers.json", help="the file under bench/results/")
    parser.add_argument(
        "--dir", default=None, help="where the servers and journals live (default: a temp dir)"
    )
    args = parser.parse_args()
    configure_logging(level="warning")
    if args.uplink_child:
        uplink_child(Path(args.uplink_child), args.connect_wave)
        return
    base = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="flushtable-bench-workers-"))
    base.mkdir(parents=True, exist_ok=True)
    os.chmod(base, 0o755)  # the PostgreSQL cluster runs as the postgres user
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

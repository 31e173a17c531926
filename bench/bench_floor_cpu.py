"""The floor service's CPU per message, side by side: one stream of simulated tables' journals drained
into a fresh PostgreSQL database by each given version of the floor service in turn, in one run.

    python bench/bench_floor_cpu.py [--tables 300] [--rounds 2] [--code DIR ...] [--repeat 2]
                                    [--profile-dir DIR] [--workers N --partitions P] [--batch-size N ...]

Every server real, started here (nats-server with TLS, PostgreSQL); the tables play ``--rounds``
rounds each (the real engine) and their uplinks publish everything while no floor service runs. Then,
for each ``--code`` directory (a checkout of this repository: e.g. ``git archive main | tar -x -C
/tmp/before``; default: this checkout), ``--repeat`` times, alternating (so that the machine's load
falls on each alike): the database dropped and made again, the floor's consumer deleted and made again,
and ``flushtable floor serve`` run from that directory in a child process until the floor holds every
entry. Printed as JSON for each run: the service's CPU from its first commit to its last per 1,000
messages (its start-up left out), PostgreSQL's and nats-server's, and the entries/s committed; each run
ends with every entry on the floor exactly once and every chain verified, or the bench fails.

``--workers N``: each turn also drains the same stream with N partitioned workers (``floor serve --worker
W --partitions P``, each partition's consumer filtered to its own tables) into a fresh database, right
after the single service: entries/s from the first commit to the last, each worker's CPU, and the ratio
of the workers' entries/s to the single service's of the same turn. With several ``--code`` directories
the workers run from each in turn too, each right after that directory's single service (their label
names the directory): before and after of the workers' own code, side by side in one run.

``--before-filter`` (with ``--workers``): each turn drains with the workers once more first, their
consumers filtered ``flushtable.>`` as before the partition tokens (each worker delivered every message,
the others' acked unread): before and after on one stream, in one run.

``--batch-size N`` (repeatable): each ``--code`` also run with the service's ``batch_size`` N and its
consumers' ``max_ack_pending`` N (kept equal, as the product keeps them), labelled with it: what a batch's
size does to the CPU per message, side by side in one run. Without it, the defaults (1000).

``--wrap KIND`` (repeatable; each ``--code`` run with each): the service run under a tool, started or
attached at its first commit and stopped at its last (the catch-up, its start-up left out), the tool's
output in ``--wrap-dir``: ``strace`` (``strace -c -f -p``: the system calls by kind), ``callgrind``
(valgrind's instruction counts, deterministic whatever the machine's load; instrumentation switched on
at the first commit, dumped at the last), ``callgrind-marked`` (the same, the service's parts marked,
bench/account_parts.py), ``own-core`` (no tool: the service alone on the machine's last core, started under
``taskset``, and every other process of the run, PostgreSQL, the nats-servers and the bench, moved to the
other cores for the catch-up: the service's CPU without its neighbours in its core's caches),
``none`` (as without the option). A tool's own cost is in that run's CPU figures: runs under a tool are
for counts, not for the CPU. Every run records the service's user and system
CPU apart, and the catch-up's wall-clock seconds (what its timers' wakeups scale with).

``--profile-dir``: each run's service under cProfile on the process's CPU clock
(bench/profile_process_clock.py), its file there (the profile's own cost is in that run's figures:
profile runs are for where the time goes, not for the figures; bench/profile_parts.py cuts them into
parts). Every run records the machine's load average (1, 5, 15 minutes) at its start and end.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
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
from psycopg import sql

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_floor import (
    CpuMeter,
    _journal_total,
    _stream_count,
    _tree_cpu_s,
    _user_system_s,
    _wait_count,
)

from controller.floor.config import write_floor_config
from controller.floor.stream import MAX_ACK_PENDING, ensure_stream
from controller.floor.verify import verify_table
from controller.floor.workers import ensure_partitions, partition_consumer
from controller.journal.store import Journal
from controller.logs import configure_logging
from controller.simulation.floor.embedded import EmbeddedFloor
from controller.simulation.floor.processes import descendants
from controller.simulation.floor_tables import MIXED_GAMES, SimTable
from controller.uplink.uplink import Uplink
from controller.uplink.wire import STREAM_NAME, SUBJECT_ROOT

_HERE = Path(__file__).resolve().parents[1]
LEASE_TTL_S = 6.0
WRAPS = ("none", "strace", "callgrind", "callgrind-marked", "own-core")
UNTOOLED_WRAPS = ("none", "own-core")  # runs whose CPU figures are the service's own (no tool inside)
# ``--wrap own-core``: the service alone on the last core, every other process of the run on the others.
ALL_CORES = frozenset(os.sched_getaffinity(0))
SERVICE_CORE = max(ALL_CORES)


def _threads(pid: int) -> list[int]:
    """The thread ids of ``pid`` (none if it is gone): a process's affinity is each thread's own."""
    try:
        return [int(thread) for thread in os.listdir(f"/proc/{pid}/task")]
    except OSError:
        return []


def _cores_of(pid: int) -> set[int]:
    """The cores any thread of ``pid`` may run on (none if it is gone)."""
    cores: set[int] = set()
    for thread in _threads(pid):
        with contextlib.suppress(OSError):  # a thread that ended meanwhile
            cores |= os.sched_getaffinity(thread)
    return cores


def _others(service_pid: int | None) -> list[int]:
    """This process and every one below it (PostgreSQL, the nats-servers), the service's tree aside."""
    service_tree = set(descendants(service_pid)) if service_pid is not None else set()
    return [pid for pid in descendants(os.getpid()) if pid not in service_tree]


def _pin_others(cores: frozenset[int], service_pid: int | None) -> None:
    """Every process below this one (PostgreSQL, the nats-servers, their threads) and this one put on
    ``cores``, but for the service at ``service_pid`` and what runs below it. Processes started later
    (PostgreSQL's backends, forked by its postmaster) inherit it."""
    for pid in _others(service_pid):
        for thread in _threads(pid):
            with contextlib.suppress(OSError):  # a thread that ended meanwhile
                os.sched_setaffinity(thread, cores)


def _wrap_prefix(wrap: str, wrap_dir: Path, label: str) -> list[str]:
    """The command the service runs under for ``wrap`` (before its python)."""
    if wrap.startswith("callgrind"):
        out = wrap_dir / f"callgrind-{label}.%p"
        return ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}"]
    if wrap == "own-core":
        return ["taskset", "-c", str(SERVICE_CORE)]
    return []


async def _fill(floor: EmbeddedFloor, ids: list[str], base: Path, rounds: int, seed: int) -> int:
    """The tables play, their uplinks publish everything; returns the entries in the journals."""
    rng = random.Random(seed)
    journals = {t: Journal.open(base / "tables" / f"{t}.sqlite", t, synchronous="OFF") for t in ids}
    try:
        sims = [
            SimTable(journals[t], MIXED_GAMES[i % 3], random.Random(rng.random())) for i, t in enumerate(ids)
        ]
        for _ in range(rounds):
            for sim in sims:
                sim.play_round()
        total = _journal_total(journals)
        stop = asyncio.Event()
        uplinks = [Uplink(floor.uplink_config(t, poll_interval_s=2.0), journals[t].path, t) for t in ids]
        tasks = [asyncio.create_task(u.run(stop)) for u in uplinks]
        started = time.perf_counter()
        while sum(u.status.acked.entry_seq for u in uplinks) < total:
            if time.perf_counter() - started > 900:
                raise SystemExit("bench_floor_cpu: the uplinks did not publish everything in 900 s")
            await asyncio.sleep(0.1)
        stop.set()
        await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), 60)
        return total
    finally:
        for journal in journals.values():
            journal.close()


def _load() -> list[float]:
    """The machine's load average (1, 5, 15 minutes): the machine is shared, its figures depend on it."""
    return [round(value, 2) for value in os.getloadavg()]


async def _reset(
    floor: EmbeddedFloor,
    partitions: int = 0,
    max_ack_pending: int = MAX_ACK_PENDING,
    *,
    every_message: bool = False,
) -> None:
    """A fresh floor database and fresh consumers: the next service (or the next ``partitions``'
    workers) drains the whole stream again. ``every_message``: each partition's consumer filtered
    ``flushtable.>`` as before the partition tokens (every message delivered to every worker, another
    partition's acked unread): the figures before, on the same stream."""
    assert floor.postgres is not None
    with psycopg.connect(floor.postgres.superuser_dsn, autocommit=True) as connection:
        connection.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(floor.dbname))
        )
    floor.setup_database()
    admin = await floor.connect_admin()
    try:
        js = admin.jetstream()
        for consumer in await js.consumers_info(STREAM_NAME):
            await js.delete_consumer(STREAM_NAME, consumer.name)
        await ensure_stream(admin, ack_wait_s=floor.ack_wait_s, max_ack_pending=max_ack_pending)
        if partitions:
            await ensure_partitions(
                admin, partitions, lease_ttl_s=LEASE_TTL_S, max_ack_pending=max_ack_pending
            )
        for partition in range(partitions if every_message else 0):
            name = partition_consumer(partition, partitions)
            config = (await js.consumer_info(STREAM_NAME, name)).config
            await js.delete_consumer(STREAM_NAME, name)
            await js.add_consumer(
                STREAM_NAME, dataclasses.replace(config, filter_subject=f"{SUBJECT_ROOT}.>")
            )
    finally:
        await admin.close()


def _floor_figures(floor: EmbeddedFloor, entries: int, what: str) -> tuple[float, int]:
    """(seconds from the first commit to the last, chains verified); fails unless every entry is on the
    floor exactly once and every chain verifies."""
    with psycopg.connect(floor.reporting_dsn) as connection:
        row = connection.execute(
            "SELECT count(*) - count(DISTINCT (table_id, seq)), count(*), "
            "extract(epoch FROM max(floor_committed_utc) - min(floor_committed_utc)) FROM floor_entries"
        ).fetchone()
        assert row is not None
        tables = [str(t) for (t,) in connection.execute("SELECT table_id FROM floor_tables").fetchall()]
        verified = sum(1 for t in tables if verify_table(connection, t).ok)
    doubled, held, span_s = int(row[0]), int(row[1]), float(row[2] or 0.0)
    if doubled or held != entries or verified != len(tables):
        raise SystemExit(
            f"bench_floor_cpu: {what}: doubled {doubled}, held {held}/{entries}, verified {verified}"
        )
    return span_s, verified


async def _drain_workers(  # noqa: PLR0917 - one run's context
    floor: EmbeddedFloor,
    config_path: Path,
    entries: int,
    messages: int,
    workers: int,
    partitions: int,
    max_ack_pending: int,
    *,
    every_message: bool = False,
    code: Path = _HERE,
    label_code: bool = False,
) -> dict[str, Any]:
    """The same stream drained by ``workers`` partitioned workers run from ``code`` into a fresh
    database (``label_code``: the run's label names ``code``)."""
    await _reset(floor, partitions, max_ack_pending, every_message=every_message)
    load_at_start = _load()
    meter = CpuMeter(floor)
    names = [chr(ord("A") + n) for n in range(workers)]
    processes: list[subprocess.Popen[bytes]] = []
    env = {**os.environ, "PYTHONPATH": str(code)}
    with (config_path.parent / "floor-workers.log").open("ab") as service_log:
        for name in names:
            command = [sys.executable, "-m", "controller.cli", "floor", "serve", "--config", str(config_path)]
            command += ["--worker", name, "--partitions", str(partitions), "--lease-ttl", str(LEASE_TTL_S)]
            processes.append(
                subprocess.Popen(command, env=env, stdout=service_log, stderr=subprocess.STDOUT, cwd=code)
            )
    meter.floor_pids = [process.pid for process in processes]
    try:
        await _wait_count(floor.reporting_dsn, 1, 120)
        at_first = meter.read()
        each_first = [_tree_cpu_s(process.pid) for process in processes]
        await _wait_count(floor.reporting_dsn, entries, 900)
        at_last = meter.read()
        each_last = [_tree_cpu_s(process.pid) for process in processes]
    finally:
        for process in processes:
            process.send_signal(signal.SIGTERM)
        for process in processes:
            process.wait(timeout=60)
    span_s, verified = _floor_figures(floor, entries, f"{workers} workers")
    spent = CpuMeter.spent(at_first, at_last)
    return {
        "code": _workers_label(
            workers, partitions, every_message=every_message, code=code if label_code else None
        ),
        "load_average_1m": round(os.getloadavg()[0], 2),
        "load_average_1_5_15m_at_start": load_at_start,
        "load_average_1_5_15m_at_end": _load(),
        "commit_span_s": round(span_s, 2),
        "entries_per_s_committing": round(entries / span_s) if span_s else None,
        "max_ack_pending": max_ack_pending,
        "cpu_s": spent,
        "cpu_ms_per_1000_messages": {
            name: round(1_000_000 * cpu_s / messages, 1)
            for name, cpu_s in spent.items()
            if name != "tables_and_uplinks"
        },
        "worker_cpu_ms_per_1000_messages": {
            name: round(1_000_000 * (last - first) / messages, 1)
            for name, first, last in zip(names, each_first, each_last, strict=True)
        },
        "doubled": 0,
        "chains_verified": verified,
    }


def _label(code: Path, size: int | None, wrap: str = "none") -> str:
    """A run's label: its checkout, its batch size when several were asked for, its tool if any."""
    label = str(code) if size is None else f"{code}, batch {size}"
    return label if wrap == "none" else f"{label}, {wrap}"


def _workers_label(workers: int, partitions: int, *, every_message: bool, code: Path | None = None) -> str:
    shape = ", every message delivered (the filter before the partition tokens)" if every_message else ""
    where = f", {code}" if code is not None else ""
    return f"{workers} workers, {partitions} partitions{shape}{where}"


async def _drain(  # noqa: PLR0917 - one run's context
    floor: EmbeddedFloor,
    code: Path,
    config_path: Path,
    entries: int,
    messages: int,
    profile: Path | None,
    max_ack_pending: int,
    label: str | None = None,
    wrap: str = "none",
    wrap_dir: Path | None = None,
) -> dict[str, Any]:
    await _reset(floor, 0, max_ack_pending)
    load_at_start = _load()
    meter = CpuMeter(floor)
    wrapped = wrap not in UNTOOLED_WRAPS  # a tool: its slower bounds
    tag = f"{len(list(wrap_dir.iterdir())) if wrap_dir else 0}-{wrap}"
    command = _wrap_prefix(wrap, wrap_dir or Path(), tag)
    command += [sys.executable]
    if profile is not None:
        # On the process's CPU clock: a wall-clock profile on a loaded machine counts waits for a core.
        command += [str(Path(__file__).resolve().parent / "profile_process_clock.py"), str(profile)]
    if wrap == "callgrind-marked":
        command += [str(Path(__file__).resolve().parent / "account_parts.py")]
    command += ["-m", "controller.cli", "floor", "serve", "--config", str(config_path)]
    env = {**os.environ, "PYTHONPATH": str(code)}
    with (config_path.parent / "floor-service.log").open("ab") as service_log:
        process = subprocess.Popen(command, env=env, stdout=service_log, stderr=subprocess.STDOUT, cwd=code)
    meter.floor_pids = [process.pid]
    tracer: subprocess.Popen[bytes] | None = None
    if wrap == "own-core":
        _pin_others(ALL_CORES - {SERVICE_CORE}, process.pid)
    try:
        # A tool slows the service tens of times: its bounds are the tool's.
        await _wait_count(floor.reporting_dsn, 1, 1200 if wrapped else 120)
        if wrap == "strace" and wrap_dir is not None:
            out = wrap_dir / f"strace-{tag}.txt"
            tracer = subprocess.Popen(["strace", "-c", "-f", "-o", str(out), "-p", str(process.pid)])
        elif wrap.startswith("callgrind"):
            subprocess.run(
                ["callgrind_control", "-i", "on", str(process.pid)], check=True, capture_output=True
            )
        at_first = meter.read()
        # Where the service and its neighbours ran (own-core: apart), read once it works.
        cores = {
            "service": sorted(os.sched_getaffinity(process.pid)),
            "others": sorted({core for pid in _others(process.pid) for core in _cores_of(pid)}),
        }
        user_system_first = _user_system_s(process.pid)
        wall_first = time.perf_counter()
        await _wait_count(floor.reporting_dsn, entries, 7200 if wrapped else 900)
        wall_s = time.perf_counter() - wall_first
        at_last = meter.read()
        user_system_last = _user_system_s(process.pid)
        if tracer is not None:
            tracer.send_signal(signal.SIGINT)  # detaches, writes its table
            tracer.wait(timeout=120)
        elif wrap.startswith("callgrind"):
            subprocess.run(
                ["callgrind_control", "-d", "catch-up", str(process.pid)], check=True, capture_output=True
            )
    finally:
        if tracer is not None and tracer.poll() is None:
            tracer.send_signal(signal.SIGINT)
            tracer.wait(timeout=120)
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=600 if wrapped else 60)
        if wrap == "own-core":
            _pin_others(ALL_CORES, None)
    span_s, verified = _floor_figures(floor, entries, str(code))
    doubled = 0
    spent = CpuMeter.spent(at_first, at_last)
    user_s = user_system_last[0] - user_system_first[0]
    system_s = user_system_last[1] - user_system_first[1]
    return {
        "code": label or str(code),
        "wrap": wrap,
        "cores": cores,
        "load_average_1m": round(os.getloadavg()[0], 2),
        "load_average_1_5_15m_at_start": load_at_start,
        "load_average_1_5_15m_at_end": _load(),
        "commit_span_s": round(span_s, 2),
        "catch_up_wall_s": round(wall_s, 2),
        "entries_per_s_committing": round(entries / span_s) if span_s else None,
        "max_ack_pending": max_ack_pending,
        "cpu_s": spent,
        "cpu_ms_per_1000_messages": {
            name: round(1_000_000 * cpu_s / messages, 1)
            for name, cpu_s in spent.items()
            if name != "tables_and_uplinks"
        },
        "floor_service_user_system_s": [round(user_s, 2), round(system_s, 2)],
        "floor_service_user_system_ms_per_1000_messages": [
            round(1_000_000 * user_s / messages, 1),
            round(1_000_000 * system_s / messages, 1),
        ],
        "doubled": doubled,
        "chains_verified": verified,
    }


async def bench(args: argparse.Namespace, base: Path) -> dict[str, Any]:
    load_at_start = _load()
    ids = [f"T{n:03d}" for n in range(1, args.tables + 1)]
    floor = EmbeddedFloor(base / "floor", ids)
    await asyncio.to_thread(floor.start)
    try:
        entries = await _fill(floor, ids, base, args.rounds, args.seed)
        messages = await _stream_count(floor)
        # Each batch size asked for: its own config (``batch_size``) and the consumers' max_ack_pending
        # equal to it, as the product keeps them (docs/configuration.md "[floor]"); none: the defaults.
        sizes: list[int | None] = list(args.batch_size) or [None]
        config_paths = {
            size: write_floor_config(
                base / f"floor-config-{size or 'default'}",
                floor.floor_config(**({"batch_size": size} if size else {})),
            )
            for size in sizes
        }
        codes = [Path(c).resolve() for c in args.code] or [_HERE]
        wraps: list[str] = list(args.wrap) or ["none"]
        wrap_dir = Path(args.wrap_dir).resolve() if args.wrap_dir else None
        if wrap_dir is not None:
            wrap_dir.mkdir(parents=True, exist_ok=True)
        elif set(wraps) - set(UNTOOLED_WRAPS):
            raise SystemExit("bench_floor_cpu: --wrap strace or callgrind needs --wrap-dir")
        shapes = [(code, size, wrap) for code in codes for size in sizes for wrap in wraps]
        labels = [_label(code, size, wrap) for code, size, wrap in shapes]
        runs: list[dict[str, Any]] = []
        for turn in range(args.repeat):
            for index, (code, size, wrap) in enumerate(shapes):
                config_path = config_paths[size]
                max_ack_pending = size or args.max_ack_pending
                profile = Path(args.profile_dir) / f"floor-{index}-{turn}.prof" if args.profile_dir else None
                runs.append(
                    await _drain(
                        floor,
                        code,
                        config_path,
                        entries,
                        messages,
                        profile,
                        max_ack_pending,
                        _label(code, size, wrap),
                        wrap,
                        wrap_dir,
                    )
                )
                print(json.dumps(runs[-1]), file=sys.stderr)
                if not args.workers:
                    continue
                single = runs[-1]["entries_per_s_committing"]
                # One directory: the workers from this checkout after its single service, as before.
                # Several: each directory's workers from it, right after its single service.
                for worker_code in [code] if len(codes) > 1 else [_HERE]:
                    for every_message in [True, False] if args.before_filter else [False]:
                        runs.append(
                            await _drain_workers(
                                floor,
                                config_path,
                                entries,
                                messages,
                                args.workers,
                                args.partitions,
                                max_ack_pending,
                                every_message=every_message,
                                code=worker_code,
                                label_code=len(codes) > 1,
                            )
                        )
                        workers_rate = runs[-1]["entries_per_s_committing"]
                        runs[-1]["ratio_to_single_service"] = (
                            round(workers_rate / single, 2) if single and workers_rate else None
                        )
                        print(json.dumps(runs[-1]), file=sys.stderr)
    finally:
        floor.stop()
    by_code = {
        str(code): {
            "service_cpu_ms_per_1000_messages": [
                r["cpu_ms_per_1000_messages"]["floor_service"] for r in runs if r["code"] == str(code)
            ],
            "entries_per_s_committing": [
                r["entries_per_s_committing"] for r in runs if r["code"] == str(code)
            ],
        }
        for code in [
            *labels,
            *(
                [
                    _workers_label(
                        args.workers,
                        args.partitions,
                        every_message=every,
                        code=code if len(codes) > 1 else None,
                    )
                    for code in codes
                    for every in ([True, False] if args.before_filter else [False])
                ]
                if args.workers
                else []
            ),
        ]
    }
    return {
        "tables": len(ids),
        "entries": entries,
        "messages_on_stream": messages,
        "cpus": os.cpu_count(),
        "load_average_1_5_15m_at_start": load_at_start,
        "load_average_1_5_15m_at_end": _load(),
        "by_code": by_code,
        "runs": runs,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--tables", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--code", action="append", default=[], help="a checkout to run the service from")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--profile-dir", default=None)
    parser.add_argument("--workers", type=int, default=0, help="also drain with N partitioned workers")
    parser.add_argument("--partitions", type=int, default=2)
    parser.add_argument(
        "--before-filter",
        action="store_true",
        help="each turn also drains with the workers' consumers filtered flushtable.> (the figures before)",
    )
    parser.add_argument(
        "--max-ack-pending", type=int, default=MAX_ACK_PENDING, help="the consumers' (default: the product's)"
    )
    parser.add_argument(
        "--batch-size",
        type=int,
        action="append",
        default=[],
        help="the service's batch_size and the consumers' max_ack_pending (repeatable: each code with each)",
    )
    parser.add_argument(
        "--wrap",
        choices=WRAPS,
        action="append",
        default=[],
        help="run the service under a tool over its catch-up (repeatable: each code with each)",
    )
    parser.add_argument("--wrap-dir", default=None, help="where the tools write (needed with --wrap)")
    parser.add_argument("--out", default=None, help="also write the JSON to bench/results/FILE")
    args = parser.parse_args()
    # Checked before the runs (minutes of them), so a bad --out is one line at the start, not the end.
    out = Path(__file__).resolve().parent / "results" / Path(args.out).name if args.out else None
    if args.out and Path(args.out).name != args.out:
        parser.error(f"--out {args.out}: a file name, written in bench/results/ (not a path)")
    configure_logging(level="warning")
    base = Path(tempfile.mkdtemp(prefix="flushtable-bench-floor-cpu-"))
    os.chmod(base, 0o755)  # the cluster runs as the postgres user
    try:
        figures = asyncio.run(bench(args, base))
        print(json.dumps(figures))
        if out is not None:
            out.write_text(json.dumps(figures, indent=2) + "\n")
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()

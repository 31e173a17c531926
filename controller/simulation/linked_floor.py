"""A linked progressive on a whole floor on this machine, for bench/bench_progressive.py and
tests/floor/test_linked_progressive.py: the real servers (controller/simulation/floor/embedded.py), the floor
service and the linked progressive in a child process (so it can be SIGKILLed), simulated tables
(controller/simulation/linked_tables.py) with their real uplinks and link clients, the kills, and the
check of the books to the cent (:func:`check_books`).

The child process is the product's own `flushtable floor serve --config floor.toml`, its file with a
``[progressive]`` link over the simulated tables (:func:`write_spec`)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg
from nats.aio.client import Client

from controller.errors import UserError
from controller.floor.config import load_floor_config, write_floor_config
from controller.floor.progressive import LinkedConfig
from controller.floor.progressive_config import load_linked_config
from controller.progressive import linked
from controller.progressive.model import Hit, ProgressiveParameters, parse_parameters
from controller.rules.progressive import PROGRESSIVE_PRESETS
from controller.simulation.floor.embedded import EmbeddedFloor
from controller.simulation.floor.processes import end_child
from controller.simulation.floor.servers import NatsServer, PostgresCluster
from controller.simulation.linked_books import LINK_ID, check_books, journal_wagers
from controller.simulation.linked_tables import LinkedTable
from controller.uplink.uplink import Uplink


def default_parameters() -> ProgressiveParameters:
    """A $1 unit, $10,000 base, $12,000 reset... at the scale of a bench: base 100.00, reset 120.00,
    increment 20%, hidden 5%, limit 2,000.00 (so the overflow is exercised), the default paytable."""
    return parse_parameters(
        {
            "unit_cents": 100,
            "base_cents": 10_000,
            "reset_cents": 12_000,
            "increment_percent": 20,
            "hidden_percent": 5,
            "limit_cents": 200_000,
            "paytable": "progressive",
        }
    )


# --- the child process ---------------------------------------------------------------------------------
def write_spec(path: Path, floor: EmbeddedFloor, tables: Sequence[str], parameters: dict[str, Any]) -> Path:
    """The floor's file for `flushtable floor serve`: ``[floor]`` (write_floor_config) and the
    ``[progressive]`` of one link over ``tables`` (controller/floor/progressive_config.py), its
    secrets beside it (mode 0600). ``path``'s directory holds them all; the file's path is returned."""
    directory = path.parent / path.stem
    config_path = write_floor_config(directory, floor.floor_config(batch_size=500, backoff_max_s=1.0))
    secret = directory / "nats-progressive.pw"
    secret.touch(mode=0o600)
    secret.write_text(floor.passwords["nats:progressive"] + "\n", encoding="utf-8")
    lines = [
        "",
        "[progressive]",
        'user = "floor-progressive"',
        'password_file = "nats-progressive.pw"',
        "broadcast_interval_s = 0.5",
        "",
        f"[progressive.links.{LINK_ID}]",
        f"tables = {json.dumps(list(tables))}",
    ]
    for key, value in parameters.items():
        if key == "paytable" and value is None:
            continue
        if key == "paytable" and parameters.get("paytable_name") in PROGRESSIVE_PRESETS:
            lines.append(f"paytable = {json.dumps(parameters['paytable_name'])}")
        elif value is not None and key != "paytable_name":
            lines.append(f"{key} = {_toml_value(value)}")
    with config_path.open("a", encoding="utf-8") as out:
        out.write("\n".join(lines) + "\n")
    return config_path


def _toml_value(value: object) -> str:
    if isinstance(value, dict):
        return "{ " + ", ".join(f'"{key}" = {_toml_value(item)}' for key, item in value.items()) + " }"
    return json.dumps(value)


def linked_config_of(path: Path) -> LinkedConfig:
    """The file's linked progressive, as `flushtable floor serve` reads it."""
    linked_config = load_linked_config(path, load_floor_config(path))
    assert linked_config is not None
    return linked_config


@dataclass
class FloorProcess:
    spec_path: Path
    process: subprocess.Popen[bytes] | None = None
    log_path: Path | None = None

    def start(self) -> None:
        root = Path(__file__).resolve().parents[2]
        env = {**os.environ, "PYTHONPATH": str(root)}
        self.log_path = self.spec_path.with_suffix(".log")
        with self.log_path.open("ab") as out:
            self.process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "controller.cli",
                    "floor",
                    "serve",
                    "--config",
                    str(self.spec_path),
                    "--log-level",
                    "warning",
                ],
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
            )

    def kill(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=30)

    def stop(self) -> None:
        if self.process is not None:
            end_child(self.process, grace_s=30, kill_wait_s=30)


def kill_postgres(cluster: PostgresCluster) -> None:
    """SIGKILL the postmaster and every backend of it (a crash, as a power cut leaves it), then wait for
    them to be gone. ``cluster.start()`` brings it back through crash recovery."""
    assert cluster.process is not None
    pid = cluster.process.pid
    children = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                children.append(int(entry.name))
    for victim in (pid, *children):
        with contextlib.suppress(ProcessLookupError):
            os.kill(victim, signal.SIGKILL)
    cluster.process.wait(timeout=30)
    deadline = time.monotonic() + 60
    while any(Path(f"/proc/{child}").exists() for child in children):
        if time.monotonic() > deadline:
            raise AssertionError("PostgreSQL's backends outlived a SIGKILL for 60 s")
        time.sleep(0.05)


# --- the tables ----------------------------------------------------------------------------------------
# A real table is one process with two connections to the floor (its uplink and its link client); this
# simulation runs every table's in ONE process. After nats-server's restart its 100 clients would all
# start their TLS handshakes at once on one event loop: on a loaded machine none finished within the
# server's 5 s TLS timeout, so all failed together and tried again together, for as long as the load
# lasted (a bench's link down for ten minutes). The simulation lets a few handshake at a time.
CONNECTS_AT_ONCE = 4


class _GatedLinkClient(linked.LinkClient):
    gate: asyncio.Semaphore | None = None

    async def _connect(self) -> Client:
        assert self.gate is not None
        async with self.gate:
            return await super()._connect()


class _GatedUplink(Uplink):
    gate: asyncio.Semaphore | None = None

    async def _connect(self) -> Client:
        assert self.gate is not None
        async with self.gate:
            return await super()._connect()


@dataclass
class LinkedTables:
    floor: EmbeddedFloor
    directory: Path
    ids: list[str]
    parameters: ProgressiveParameters
    link_timeout_s: float = 2.0
    tables: dict[str, LinkedTable] = field(default_factory=dict)
    clients: dict[str, linked.LinkClient] = field(default_factory=dict)
    stop: asyncio.Event = field(default_factory=asyncio.Event)
    tasks: list[asyncio.Task[None]] = field(default_factory=list)

    def start(self) -> None:
        assert self.floor.nats is not None
        assert self.floor.tls is not None
        self.directory.mkdir(parents=True, exist_ok=True)
        gate = asyncio.Semaphore(CONNECTS_AT_ONCE)
        for table_id in self.ids:
            # The link reaches the floor as the table's uplink does (its servers, user, CA, backoff).
            uplink_config = self.floor.uplink_config(table_id, backoff_max_s=1.0)
            client = _GatedLinkClient(
                linked.LinkConfig(LINK_ID, table_id, uplink_config, link_timeout_s=self.link_timeout_s)
            )
            client.gate = gate
            self.clients[table_id] = client
            self.tables[table_id] = LinkedTable.open(self.directory, table_id, client, self.parameters)
            uplink = _GatedUplink(uplink_config, self.directory / f"{table_id}.sqlite", table_id)
            uplink.gate = gate
            self.tasks.append(asyncio.create_task(uplink.run(self.stop)))
            self.tasks.append(asyncio.create_task(client.run(self.stop)))

    async def close(self) -> None:
        self.stop.set()
        await asyncio.wait_for(asyncio.gather(*self.tasks, return_exceptions=True), 60)
        for table in self.tables.values():
            table.close()

    def all_up(self) -> bool:
        return all(client.link_state().up for client in self.clients.values())

    def none_up(self) -> bool:
        return not any(client.link_state().up for client in self.clients.values())

    def pending(self) -> int:
        return sum(len(client.pending) for client in self.clients.values())


async def wait_for(predicate: Any, timeout_s: float, what: str) -> None:
    """Poll ``predicate`` (sync or async) until true; fail naming ``what`` after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = predicate()
        if asyncio.iscoroutine(value):
            value = await value
        if value:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")
        await asyncio.sleep(0.1)


def floor_holds_journals(floor: EmbeddedFloor, tables: LinkedTables) -> bool:
    return floor_behind(floor, tables) == 0


def floor_behind(floor: EmbeddedFloor, tables: LinkedTables) -> int:
    """How many entries the floor (its tables' rows and the link's contribution marks) is behind the
    tables' journals: 0 when it holds every journal."""
    with psycopg.connect(floor.reporting_dsn) as connection:
        rows: dict[str, int] = dict(
            connection.execute("SELECT table_id, last_seq FROM floor_tables").fetchall()
        )
        marks: dict[str, int] = dict(
            connection.execute(
                "SELECT table_id, through_seq FROM floor_progressive_marks WHERE link_id = %s", (LINK_ID,)
            ).fetchall()
        )
    behind = 0
    for table_id, table in tables.tables.items():
        last = table.journal.last_entry()
        seq = 0 if last is None else last.seq
        behind += abs(seq - rows.get(table_id, 0)) + abs(seq - marks.get(table_id, 0))
    return behind


async def wait_while_progressing(remaining: Any, stall_s: float, what: str) -> None:
    """Wait until ``remaining()`` (what is left to do: entries behind, claims unanswered) is 0, however
    long that takes while it is still falling (a backlog of a million entries on a loaded machine takes
    longer than any fixed bound): fail only when ``stall_s`` passes with nothing done."""
    best = remaining()
    progress_at = time.monotonic()
    while best > 0:
        await asyncio.sleep(0.5)
        left = remaining()
        if left < best:
            best, progress_at = left, time.monotonic()
        elif time.monotonic() - progress_at > stall_s:
            raise AssertionError(f"no progress for {stall_s} s waiting for {what} ({left} left)")


async def confirm_all(
    floor: EmbeddedFloor, tables: LinkedTables, by: str = "supervisor-1", timeout_s: float = 120.0
) -> int:
    """A supervisor confirms every pending award, in the order the controller recorded them, each from
    its own table's link; each confirmation sent twice (the second must be a replay). An award is then
    paid exactly once (one ``progressive_award_paid`` event in PostgreSQL), whichever answer came first.

    The first answer is ``paid``, or ``replayed`` when the confirmation had to be asked again: an
    attempt whose answer was lost ("link is down" at the table) may still have been committed by the
    floor, which then answers the same request again with ``replayed`` (the award was paid by it)."""
    with psycopg.connect(floor.reporting_dsn) as connection:
        pending = connection.execute(
            "SELECT award_id, table_id FROM floor_progressive_awards "
            "WHERE link_id = %s AND status = 'pending' "
            "ORDER BY claim_number",
            (LINK_ID,),
        ).fetchall()
    for award_id, table_id in pending:
        first, retried = await _confirmed(tables.clients[table_id], award_id, by, timeout_s)
        again, _ = await _confirmed(tables.clients[table_id], award_id, by, timeout_s)
        assert first["status"] == "paid" or (retried and first["status"] == "replayed"), (award_id, first)
        assert again["status"] == "replayed", (award_id, again)
        paid = paid_events(floor, award_id)
        assert paid == 1, f"award {award_id} paid {paid} times"
    return len(pending)


def paid_events(floor: EmbeddedFloor, award_id: str) -> int:
    """How many ``progressive_award_paid`` events PostgreSQL holds for ``award_id`` (exactly 1: paid once)."""
    with psycopg.connect(floor.reporting_dsn) as connection:
        row = connection.execute(
            "SELECT count(*) FROM floor_progressive_events "
            "WHERE link_id = %s AND kind = 'progressive_award_paid' AND award_id = %s",
            (LINK_ID, award_id),
        ).fetchone()
    return 0 if row is None else int(row[0])


async def _confirmed(
    client: linked.LinkClient, award_id: str, by: str, timeout_s: float = 120.0
) -> tuple[dict[str, Any], bool]:
    """A supervisor's confirmation, asked again (the same) while no answer comes within the link's
    bound (a loaded machine, a server restarting), up to ``timeout_s``: the floor's first answer heard,
    and whether it was asked more than once (then ``replayed`` is a right first answer: the floor
    committed an attempt whose answer did not reach the table)."""
    deadline = time.monotonic() + timeout_s
    retried = False
    while True:
        try:
            return await client.confirm_paid(award_id, by=by), retried
        except UserError as error:
            if "link is down" not in str(error) or time.monotonic() > deadline:
                raise
        retried = True
        await asyncio.sleep(0.1)


# --- the scenario --------------------------------------------------------------------------------------
@dataclass
class Scenario:
    """``rounds`` rounds over ``tables`` tables (round robin), with presets that force hits: every
    ``several_every`` rounds one table's round has several hits (two 7-card runs sharing the meter, a
    6-card run, a 5-card and a 3-card run), every ``pair_every`` rounds two tables hit the 7-card level
    one after the other (within the same second); otherwise a fixed award now and then. ``kills``: the
    floor process, nats-server and PostgreSQL are each SIGKILLed (at 1/4, 1/2 and 3/4 of the rounds)
    while ``down_rounds`` rounds are played, and started again."""

    tables: int
    rounds: int
    several_every: int = 97
    pair_every: int = 151
    kills: bool = True
    down_rounds: int = 20
    seed: int = 23
    link_timeout_s: float = 2.0
    timeout_s: float = 300.0
    # Every this many rounds a supervisor confirms the meter awards pending so far, in the order recorded
    # (None: all at the end). On a floor they are confirmed as they happen; left for the end, the link's
    # pending awards (every table's, in every broadcast) grew to 80 KB a broadcast, 50 tables' worth
    # twice a second decoded by this one process, which then could not read them (nats-server: "slow
    # consumer") and lost its links.
    confirm_every: int | None = None
    # Rounds a second across the floor (None: as fast as this process writes them). A bench's pace: the
    # tables' link clients share this process's loop with the journal writes, and an unpaced loop
    # starves them of the meter broadcasts (their link then counts lost and refuses the wagers).
    rate_per_s: float | None = None


def _preset(scenario: Scenario, number: int, rng: random.Random) -> list[Hit]:
    if number % scenario.several_every == scenario.several_every - 1:
        return [Hit(1, 7), Hit(2, 7), Hit(3, 6), Hit(4, 5), Hit(5, 3)]
    draw = rng.random()
    if draw < 0.01:
        return [Hit(rng.randint(1, 7), 3)]
    if draw < 0.012:
        return [Hit(rng.randint(1, 7), 4)]
    return []


async def run_scenario(directory: Path, floor: EmbeddedFloor, scenario: Scenario) -> dict[str, Any]:  # noqa: PLR0915 - the scenario's steps in order, read as a script
    """Play the scenario on ``floor`` (started, its table ids the scenario's), then check the books."""
    rng = random.Random(scenario.seed)
    parameters = default_parameters()
    spec = write_spec(directory / "floor-process.json", floor, floor.table_ids, parameters.to_json())
    process = FloorProcess(spec)
    process.start()
    tables = LinkedTables(
        floor, directory / "tables", list(floor.table_ids), parameters, scenario.link_timeout_s
    )
    tables.start()
    ids = tables.ids
    kills_at = (
        {scenario.rounds // 4: "floor", scenario.rounds // 2: "nats", 3 * scenario.rounds // 4: "postgres"}
        if scenario.kills
        else {}
    )
    outcome: dict[str, Any] = {"kills": [], "claims_during_loss": 0, "refused_at_lock_rounds": 0}
    confirmed = 0
    started_s = time.monotonic()
    try:
        await wait_for(tables.all_up, scenario.timeout_s, "every table's link up")
        number = 0
        paced_from_s, paced = time.monotonic(), 0
        while number < scenario.rounds:
            table = tables.tables[ids[number % len(ids)]]
            if number in kills_at:
                what = kills_at.pop(number)
                # A hit just before the kill, claimed while the link is lost: pending, paid once after.
                claim = table.play_round(7, [Hit(1, 7), Hit(2, 4)])
                await asyncio.to_thread(_kill, what, floor, process)
                await wait_for(tables.none_up, scenario.timeout_s, f"every link lost ({what} killed)")
                if claim is not None:
                    tables.clients[table.table_id].submit(
                        claim.round_id, claim.hits, through_seq=claim.through_seq
                    )
                    outcome["claims_during_loss"] += 1
                for down in range(scenario.down_rounds):  # played while down: the wagers refused at the lock
                    tables.tables[ids[(number + down) % len(ids)]].play_round(rng.randint(1, 7))
                    await asyncio.sleep(0)
                await asyncio.to_thread(_restart, what, floor, process)
                await wait_for(tables.all_up, scenario.timeout_s, f"every link up again after {what}")
                outcome["kills"].append(what)
                paced_from_s, paced = time.monotonic(), 0  # the pace starts again after the outage
                number += 1
                continue
            hits = _preset(scenario, number, rng)
            claims = [table.play_round(7 if hits else rng.randint(1, 7), hits)]
            if number % scenario.pair_every == scenario.pair_every - 1:
                other = tables.tables[ids[(number + 1) % len(ids)]]
                claims.append(other.play_round(7, [Hit(3, 7)]))  # two tables' 7-card hits, the same second
            for claim, owner in zip(claims, (table.table_id, ids[(number + 1) % len(ids)]), strict=False):
                if claim is not None:
                    tables.clients[owner].submit(claim.round_id, claim.hits, through_seq=claim.through_seq)
            number += 1
            if scenario.confirm_every and number % scenario.confirm_every == 0:
                confirmed += await confirm_all(floor, tables, timeout_s=scenario.timeout_s)
                paced_from_s, paced = time.monotonic(), 0  # the pace starts again after the supervisor
            if scenario.rate_per_s is None:
                await asyncio.sleep(0)  # the uplinks and link clients run between rounds
            else:  # paced (a bench): this round's slot
                paced += 1
                await asyncio.sleep(max(0.0, paced_from_s + paced / scenario.rate_per_s - time.monotonic()))
        played_s = time.monotonic() - started_s
        await wait_while_progressing(
            lambda: floor_behind(floor, tables), scenario.timeout_s, "the floor holding every journal"
        )
        await wait_while_progressing(tables.pending, scenario.timeout_s, "every claim answered")
        outcome["confirmed"] = confirmed + await confirm_all(floor, tables, timeout_s=scenario.timeout_s)
        outcome["replayed_claims"] = await replay_claims(floor, tables, scenario.timeout_s)
        outcome["refused_at_lock_rounds"] = sum(t.refused_rounds for t in tables.tables.values())
        outcome["rounds_played"] = sum(t.rounds for t in tables.tables.values())
        outcome["play_s"] = round(played_s, 1)
        outcome["total_s"] = round(time.monotonic() - started_s, 1)
        outcome.update(check_books(floor, tables))
    finally:
        await tables.close()
        process.stop()
    return outcome


_Part = FloorProcess | NatsServer | PostgresCluster


def _part(what: str, floor: EmbeddedFloor, process: FloorProcess) -> _Part:
    """The part a scenario's kill names: the floor service, its nats-server, or PostgreSQL."""
    if what == "floor":
        return process
    part = floor.nats if what == "nats" else floor.postgres
    assert part is not None
    return part


def _kill(what: str, floor: EmbeddedFloor, process: FloorProcess) -> None:
    part = _part(what, floor, process)
    if isinstance(part, PostgresCluster):
        kill_postgres(part)  # the postmaster and its backends, as a power cut leaves them
    else:
        part.kill()


def _restart(what: str, floor: EmbeddedFloor, process: FloorProcess) -> None:
    _part(what, floor, process).start()


async def replay_claims(floor: EmbeddedFloor, tables: LinkedTables, timeout_s: float = 120.0) -> int:
    """Every claim sent again, the same request: each answer must be the first answer (its awards'
    amounts and order), and nothing recorded anew."""
    with psycopg.connect(floor.reporting_dsn) as connection:
        before = connection.execute("SELECT count(*) FROM floor_progressive_events").fetchone()
    replayed = 0
    for table in tables.tables.values():
        client = tables.clients[table.table_id]
        for claim in table.claims:
            first = client.answers[claim.round_id]
            del client.answers[claim.round_id]
            again = await client.claim(claim.round_id, claim.hits, through_seq=claim.through_seq)
            if again.pending:  # no answer within the bound (a loaded machine): asked again by the client
                answers, round_id = client.answers, claim.round_id
                await wait_for(lambda a=answers, r=round_id: r in a, timeout_s, "the replay answered")
                again = client.answers[claim.round_id]
            assert again.status == "replayed", (claim, first, again.status)
            assert first.answer is not None
            assert again.answer is not None
            assert [a.claimed for a in again.answer.awards] == [a.claimed for a in first.answer.awards]
            replayed += 1
    with psycopg.connect(floor.reporting_dsn) as connection:
        after = connection.execute("SELECT count(*) FROM floor_progressive_events").fetchone()
    assert before == after, (before, after)
    return replayed


__all__ = [
    "LINK_ID",
    "FloorProcess",
    "LinkedTables",
    "check_books",
    "confirm_all",
    "journal_wagers",
    "kill_postgres",
    "paid_events",
    "write_spec",
]

"""`flushtable floor demo`: a whole floor on this machine (docs/floor.md "The demo").

A NATS server and a PostgreSQL cluster under D (child processes, stopped on Ctrl-C), N simulated tables
of mixed games with their journals in D/tables/ and their uplinks, the floor service, and the floor
panel. With ``--rounds R`` each table plays R rounds; the demo waits until the floor holds everything,
prints one JSON line counted from the journals and from PostgreSQL, stops everything and exits 0 (1 if
anything is missing, doubled, or a chain does not verify).

With ``--site NAME`` the second half of the tables are at a site: their uplinks publish to the site's own
nats-server, a leaf node of the hub, whose stream the hub's stream sources (docs/floor.md "Sites").
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import secrets
import signal
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import psycopg

from controller.errors import UserError
from controller.floor.config import write_floor_config
from controller.floor.panel import FloorPanelSettings, serve_panel
from controller.floor.service import FloorService
from controller.floor.tiles import PitLayout
from controller.floor.users import (
    FLOOR_USERS_FILE_NAME,
    FloorRole,
    FloorUser,
    FloorUserFile,
    read_users,
    write_users,
)
from controller.floor.verify import verify_table
from controller.journal.store import Journal
from controller.locale import DEFAULT_PROPERTY, PropertySettings
from controller.simulation.floor.embedded import EmbeddedFloor
from controller.simulation.floor.servers import ServerError
from controller.simulation.floor.site import EmbeddedSite
from controller.simulation.floor_tables import MIXED_GAMES, SimTable
from controller.uplink.uplink import Uplink
from controller.waits import wait_event

TABLES_PER_PIT = 8
WAIT_FOR_FLOOR_S = 300.0
# PostgreSQL unreachable this long while the demo waits for the floor: it ends, in one line (issue 30).
POSTGRES_DOWN_GIVE_UP_S = 10.0
POSTGRES_CONNECT_TIMEOUT_S = 5


def demo_table_ids(count: int) -> list[str]:
    return [f"T{n:03d}" for n in range(1, count + 1)]


def run_demo(  # noqa: PLR0913 - keyword-only: the demo's command-line options
    *,
    tables: int,
    rounds: int | None,
    directory: str,
    port: int,
    seed: int | None,
    site: str | None = None,
    nodes: int = 1,
) -> int:
    base = Path(directory).resolve()
    _check_traversable(base)
    ids = demo_table_ids(tables)
    site_ids = ids[len(ids) // 2 :] if site is not None else []
    floor = EmbeddedFloor(
        base, [t for t in ids if t not in site_ids], sites=[site] if site else [], nodes=nodes
    )
    leaf = EmbeddedSite(base / f"site-{site}", floor, site, site_ids) if site is not None else None
    try:
        floor.start()
        if leaf is not None:
            leaf.start()
    except ServerError:
        if leaf is not None:
            leaf.stop()
        floor.stop()
        raise
    try:
        _configure_pits(floor, ids)
        return asyncio.run(_run(floor, base, ids, rounds, port=port, rng=random.Random(seed), site=leaf))
    finally:
        if leaf is not None:
            leaf.stop()
        floor.stop()


def _check_traversable(base: Path) -> None:
    """The cluster runs as the postgres user, who must reach D through every directory above it."""
    if os.geteuid() != 0:
        return
    base.mkdir(parents=True, exist_ok=True)
    for parent in base.parents:
        if not os.stat(parent).st_mode & 0o001:
            raise UserError(f"--dir {base}: {parent} is not searchable by others (the postgres user)")


def demo_pits(ids: list[str]) -> tuple[PitLayout, ...]:
    """The demo's pits as the map lays them out: each pit's tables around its stand, half on the near
    side and half on the far side (floor_table_config's pits, the meters', are the same)."""
    pits = []
    for start in range(0, len(ids), TABLES_PER_PIT):
        tables = ids[start : start + TABLES_PER_PIT]
        half = (len(tables) + 1) // 2
        rows = (tuple(tables[:half]), tuple(reversed(tables[half:]))) if len(tables) > 1 else (tuple(tables),)
        pits.append(PitLayout(f"pit {start // TABLES_PER_PIT + 1}", tuple(row for row in rows if row)))
    return tuple(pits)


def _configure_pits(floor: EmbeddedFloor, ids: list[str]) -> None:
    with psycopg.connect(floor.owner_dsn) as connection:
        connection.cursor().executemany(
            "INSERT INTO floor_table_config (table_id, pit, label) VALUES (%s, %s, %s) "
            "ON CONFLICT DO NOTHING",
            [(t, f"pit {i // TABLES_PER_PIT + 1}", t) for i, t in enumerate(ids)],
        )


def sim_tables(
    journals: Mapping[str, Journal],
    ids: list[str],
    rng: random.Random,
    *,
    clock: Callable[[], float],
    prop: PropertySettings = DEFAULT_PROPERTY,
) -> list[SimTable]:
    """The demo's simulated tables on the demo's wall clock (injected): their rounds' times and ids are
    the gaming day the demo runs in, not a fixed date."""
    rngs = [random.Random(rng.random()) for _ in ids]
    return [
        SimTable(journals[t], MIXED_GAMES[i % len(MIXED_GAMES)], rngs[i], property_settings=prop, clock=clock)
        for i, t in enumerate(ids)
    ]


async def _run(  # noqa: PLR0913 - keyword-only: the demo's command-line options and its servers
    floor: EmbeddedFloor,
    base: Path,
    ids: list[str],
    rounds: int | None,
    *,
    port: int,
    rng: random.Random,
    site: EmbeddedSite | None = None,
    clock: Callable[[], float] = time.time,
) -> int:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for number in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(number, stop.set)
    journals = {t: Journal.open(base / "tables" / f"{t}.sqlite", t, synchronous="FULL") for t in ids}
    sims = sim_tables(journals, ids, rng, clock=clock)
    at_site = set(site.table_ids) if site is not None else set()
    uplinks = {
        t: Uplink(
            (site if site is not None and t in at_site else floor).uplink_config(t), journals[t].path, t
        )
        for t in ids
    }
    service = FloorService(floor.floor_config())
    tasks = [asyncio.create_task(u.run(stop)) for u in uplinks.values()]
    tasks.append(asyncio.create_task(service.run(stop)))
    panel = await _start_panel(floor, base, port, ids)
    try:
        if rounds is None:
            tasks.append(asyncio.create_task(_play_forever(sims, uplinks, stop)))
            await stop.wait()
            return 0
        for _ in range(rounds):
            for sim in sims:
                await asyncio.to_thread(sim.play_round)
                uplinks[sim.journal.table_id].notify()
        expected = {t: _last_seq(journals[t]) for t in ids}
        await _wait_for_floor(floor, expected, stop)
        try:
            report = _report(floor, ids, expected)
        except psycopg.OperationalError as error:
            raise UserError(f"the floor's PostgreSQL does not answer: {_first_line(error)}") from None
        print(json.dumps(report), flush=True)
        return (
            0
            if report["missing"] == 0 and report["doubled"] == 0 and report["chains_verified"] == len(ids)
            else 1
        )
    finally:
        stop.set()
        if panel is not None:
            await panel.stop()
        await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), 30)
        for journal in journals.values():
            journal.close()


# The demo's logins (docs/floor.md "The demo"): a pit supervisor, and a table-games manager, who alone may
# release a quarantined table, so every documented action can be tried. Fresh passwords at each start.
DEMO_LOGINS: tuple[tuple[str, FloorRole], ...] = (("floor", "supervisor"), ("manager", "manager"))


def write_demo_config(
    floor: EmbeddedFloor, base: Path, port: int, ids: list[str] | None = None
) -> tuple[Path, dict[str, str]]:
    """D/floor.toml (with its secret files, 0600) for `flushtable floor release|report|panel|user
    --config` against the running demo, and D/floor-users.json with the demo's logins, their fresh
    passwords returned. Users added with `floor user add --config D/floor.toml` are kept."""
    path = write_floor_config(
        base,
        floor.floor_config(),
        reporting_dsn=floor.reporting_dsn,
        panel_port=port,
        pits=demo_pits(ids or []),
    )
    users_file = base / FLOOR_USERS_FILE_NAME
    users = read_users(users_file)
    passwords = {}
    for name, role in DEMO_LOGINS:
        passwords[name] = secrets.token_urlsafe(12)
        users[name] = FloorUser.with_password(name, role, passwords[name])
    write_users(users_file, users)
    return path, passwords


async def _start_panel(floor: EmbeddedFloor, base: Path, port: int, ids: list[str]) -> Any:
    """The floor panel on 127.0.0.1 (its users: D/floor-users.json, read as they change), with the
    demo's logins and its floor file printed to standard error."""
    config_path, passwords = await asyncio.to_thread(write_demo_config, floor, base, port, ids)
    settings = FloorPanelSettings(
        floor.reporting_dsn,
        floor.writer_dsn,
        FloorUserFile(base / FLOOR_USERS_FILE_NAME),
        pits=demo_pits(ids),
    )
    print(f"floor file: {config_path}  (flushtable floor release|report|user ... --config {config_path})",
          file=sys.stderr, flush=True)  # fmt: skip
    try:
        server = await serve_panel(settings, port=port)
    except UserError as error:  # the port is taken: the demo runs on without its panel
        print(f"floor panel: not started: {error}", file=sys.stderr, flush=True)
        return None
    logins = "  ".join(f"{name} / {passwords[name]} ({role})" for name, role in DEMO_LOGINS)
    print(f"floor panel: {server.url}/  logins: {logins}", file=sys.stderr, flush=True)
    return server


async def _play_forever(sims: list[SimTable], uplinks: dict[str, Uplink], stop: asyncio.Event) -> None:
    """Each table deals a round about every 2 s (a busy table deals one a minute)."""
    while not stop.is_set():
        started = time.monotonic()
        for sim in sims:
            await asyncio.to_thread(sim.play_round)
            uplinks[sim.journal.table_id].notify()
        await wait_event(stop, max(0.0, 2.0 - (time.monotonic() - started)))


def _last_seq(journal: Journal) -> int:
    last = journal.last_entry()
    return 0 if last is None else last.seq


async def _wait_for_floor(floor: EmbeddedFloor, expected: dict[str, int], stop: asyncio.Event) -> None:
    """Until the floor holds every entry the tables wrote, WAIT_FOR_FLOOR_S passes, or a stop. PostgreSQL
    unreachable meanwhile is waited for (a restart is seen through) for POSTGRES_DOWN_GIVE_UP_S, then the
    demo ends with one line (it printed a traceback: issue 30 item 4)."""
    deadline = time.monotonic() + WAIT_FOR_FLOOR_S
    down_since: float | None = None
    while time.monotonic() < deadline and not stop.is_set():  # bounded by the deadline
        try:
            heads = await asyncio.to_thread(_floor_heads, floor)
        except psycopg.OperationalError as error:
            now = time.monotonic()
            down_since = now if down_since is None else down_since
            if now - down_since >= POSTGRES_DOWN_GIVE_UP_S:
                raise UserError(
                    f"the floor's PostgreSQL did not answer for {POSTGRES_DOWN_GIVE_UP_S:g} s while the demo "
                    f"waited for the floor: {_first_line(error)}"
                ) from None
        else:
            down_since = None
            if heads == expected:
                return
        await wait_event(stop, 0.2)


def _first_line(error: Exception) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def _floor_heads(floor: EmbeddedFloor) -> dict[str, int]:
    with psycopg.connect(floor.reporting_dsn, connect_timeout=POSTGRES_CONNECT_TIMEOUT_S) as connection:
        rows = connection.execute("SELECT table_id, max(seq) FROM floor_entries GROUP BY table_id").fetchall()
    return {str(t): int(s) for t, s in rows}


def _report(floor: EmbeddedFloor, ids: list[str], expected: dict[str, int]) -> dict[str, int]:
    with psycopg.connect(floor.reporting_dsn, connect_timeout=POSTGRES_CONNECT_TIMEOUT_S) as connection:
        on_floor = connection.execute("SELECT count(*) FROM floor_entries").fetchone()
        distinct = connection.execute(
            "SELECT count(*) FROM (SELECT DISTINCT table_id, seq FROM floor_entries) AS d"
        ).fetchone()
        per_table: dict[str, int] = {
            str(t): int(n)
            for t, n in connection.execute(
                "SELECT table_id, count(DISTINCT seq) FROM floor_entries GROUP BY table_id"
            ).fetchall()
        }
        checks = [verify_table(connection, t) for t in ids]
    assert on_floor is not None
    assert distinct is not None
    in_journals = sum(expected.values())
    missing = sum(max(0, expected[t] - int(per_table.get(t, 0))) for t in ids)
    return {
        "tables": len(ids),
        "entries_in_journals": in_journals,
        "entries_on_floor": int(on_floor[0]),
        "missing": missing,
        "doubled": int(on_floor[0]) - int(distinct[0]),
        "chains_verified": len([c for c in checks if c.ok and c.entries == expected[c.table_id]]),
    }

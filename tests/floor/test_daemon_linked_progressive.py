"""`flushtable run` on a linked progressive (docs/floor.md "Linked progressive"): the real table daemon
(a child process, simulated devices) with ``[uplink]`` and ``[progressive] link``, the floor service and
the linked progressive over the real servers. The table sends no contribution and keeps no meter of its
own: the floor counts its settled Progressive wagers from its journal, exactly the journal's count."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path

import psycopg

from controller.floor.progressive import LinkedProgressive
from controller.floor.service import FloorService
from controller.journal.store import Journal
from controller.simulation import linked_floor as lf
from controller.simulation.floor.embedded import EmbeddedFloor
from controller.uplink.uplink import Uplink
from tests.floor.conftest import MakeFloor
from tests.floor.helpers import floor_count, last_seq, wait_until, write_linked_table


def test_a_linked_table_daemon(tmp_path: Path, make_floor: MakeFloor) -> None:
    floor = make_floor(["SIM1"], ack_wait_s=2)
    journal_path = tmp_path / "var" / "journal.sqlite"
    config_path, floor_file = write_linked_table(floor, tmp_path, journal_path)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}

    async def scenario() -> None:
        stop = asyncio.Event()
        progressive = LinkedProgressive(lf.linked_config_of(floor_file))
        tasks = [
            asyncio.create_task(FloorService(floor.floor_config()).run(stop)),
            asyncio.create_task(progressive.run(stop)),
        ]
        await wait_until(_ready(progressive), 60, "the linked progressive serving")
        completed = await asyncio.to_thread(
            subprocess.run,
            [sys.executable, "-m", "controller.cli", "run", "--config", str(config_path), "--rounds", "3",
             "--seed", "7", "--no-panel", "--log-level", "warning"],
            capture_output=True, text=True, timeout=300, env=env, check=False,
        )  # fmt: skip
        assert completed.returncode == 0, completed.stderr[-2000:]
        uplink = Uplink(floor.uplink_config("SIM1"), journal_path, "SIM1")  # whatever was left unsent
        tasks.append(asyncio.create_task(uplink.run(stop)))
        with Journal.open_existing(journal_path) as journal:
            total = last_seq(journal)
            kinds = {stored.kind for stored in journal.entries()}
        assert not {"progressive_contribution", "progressive_parameters_changed"} & kinds  # no meter here

        async def counted() -> bool:
            return floor_count(floor) == total and _marks(floor) == total

        await wait_until(counted, 120, "the journal on the floor and counted")
        stop.set()
        await asyncio.gather(*tasks)

    asyncio.run(scenario())
    wagers = lf.journal_wagers(journal_path)
    assert wagers > 0  # the link was up at the locks: the table took Progressive wagers
    with psycopg.connect(floor.reporting_dsn) as connection:
        row = connection.execute(
            "SELECT COALESCE(sum((entry->>'wagers')::bigint), 0) FROM floor_progressive_events "
            "WHERE kind = 'progressive_contribution'"
        ).fetchone()
    assert row is not None
    assert int(row[0]) == wagers


def _ready(progressive: LinkedProgressive) -> Callable[[], Awaitable[bool]]:
    async def ready() -> bool:
        return progressive.ready.is_set()

    return ready


def _marks(floor: EmbeddedFloor) -> int:
    with psycopg.connect(floor.reporting_dsn) as connection:
        row = connection.execute(
            "SELECT COALESCE(max(through_seq), 0) FROM floor_progressive_marks"
        ).fetchone()
    return 0 if row is None else int(row[0])

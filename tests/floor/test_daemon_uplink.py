"""`flushtable run` with an ``[uplink]`` table in its configuration streams its journal to the floor as
it plays (a child process, the simulated table, the real servers); the floor's copy is exact once the
uplink has caught up."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import psycopg

from controller.config import DEFAULT_CONFIG_TOML
from controller.floor.service import FloorService
from controller.journal.store import Journal
from controller.uplink.uplink import Uplink, read_high_water_mark
from tests.floor.conftest import MakeFloor
from tests.floor.helpers import (
    expected_messages,
    floor_count,
    floor_problems,
    last_seq,
    private_count,
    wait_until,
)


def test_run_with_uplink_streams_the_journal(tmp_path: Path, make_floor: MakeFloor) -> None:
    floor = make_floor(["SIM1"], ack_wait_s=2)
    assert floor.tls is not None
    assert floor.nats is not None
    journal_path = tmp_path / "var" / "journal.sqlite"
    (tmp_path / "nats.pw").write_text(floor.passwords["nats:table:SIM1"] + "\n")
    config = DEFAULT_CONFIG_TOML.replace('path = "var/journal.sqlite"', f'path = "{journal_path}"') + (
        "\n[uplink]\n"
        f'servers = ["{floor.nats.url}"]\n'
        'site = "main"\n'
        'user = "table-SIM1"\n'
        'password_file = "nats.pw"\n'
        f'ca_file = "{floor.tls.ca_cert}"\n'
    )
    config_path = tmp_path / "table.toml"
    config_path.write_text(config)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}

    async def scenario() -> None:
        stop = asyncio.Event()
        service = FloorService(floor.floor_config())
        service_task = asyncio.create_task(service.run(stop))
        # Real time (no --time-scale): three rounds take seconds, ample for the uplink's TLS connect and
        # first acks; at 50x the table could finish before the uplink had connected (failed once in CI).
        completed = await asyncio.to_thread(
            subprocess.run,
            [sys.executable, "-m", "controller.cli", "run", "--config", str(config_path), "--rounds", "3",
             "--seed", "3", "--no-panel", "--log-level", "warning"],
            capture_output=True, text=True, timeout=180, env=env, check=False,
        )  # fmt: skip
        assert completed.returncode == 0, completed.stderr[-2000:]
        # The daemon's uplink published while the table played, and recorded the floor's acks.
        mark = read_high_water_mark(journal_path)
        assert mark is not None
        assert mark.position.entry_seq > 0
        assert floor_count(floor) > 0
        # Whatever its last moments left unsent, an uplink started again sends (nothing twice).
        uplink = Uplink(floor.uplink_config("SIM1"), journal_path, "SIM1")
        uplink_task = asyncio.create_task(uplink.run(stop))
        with Journal.open_existing(journal_path) as journal:
            total = last_seq(journal)

        privates = len(expected_messages(journal_path, "SIM1")[1])

        async def all_there() -> bool:
            return floor_count(floor) == total and private_count(floor) == privates

        await wait_until(all_there, 60, "the table's journal on the floor")
        stop.set()
        await asyncio.gather(service_task, uplink_task)

    asyncio.run(scenario())
    assert floor_problems(floor, {"SIM1": journal_path}) == []
    # The real engine's rounds, tails included: no round's entry judged out of its round.
    with psycopg.connect(floor.reporting_dsn) as connection:
        judged = connection.execute(
            "SELECT seq, kind, message FROM floor_alerts "
            "WHERE kind IN ('entry_after_close', 'entry_without_start')"
        ).fetchall()
    assert judged == []

"""A table linked to the floor's progressive seals its journal while it runs (docs/journal.md "Sealing
while the table runs", docs/floor.md "Linked progressive"): `flushtable run` as a child process with
[uplink] and a [progressive] link, the real floor (nats-server, PostgreSQL) and its linked progressive
serving, a tiny ``segment_entries``. The link's lookup of a settled round in the journal opens its
connection per read: one held for the daemon's life kept SQLite from leaving WAL mode, so every seal
waited for the next start."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

from controller.config import DEFAULT_CONFIG_TOML
from controller.floor.progressive import LinkedProgressive
from controller.floor.service import FloorService
from controller.journal.seals import read_seal, seal_numbers
from controller.journal.segments import verify_segments
from controller.journal.store import Journal
from controller.simulation import linked_floor as lf
from tests.floor.conftest import MakeFloor

PROGRESSIVE = {"unit_cents": 100, "base_cents": 100_000, "reset_cents": 100_000, "increment_percent": 20,
               "hidden_percent": 5}  # fmt: skip
SEGMENT_ENTRIES = 300
ROUNDS = 10


def test_a_linked_table_seals_while_it_runs(tmp_path: Path, make_floor: MakeFloor) -> None:
    floor = make_floor(["SIM1"], ack_wait_s=2)
    assert floor.tls is not None
    assert floor.nats is not None
    journal_path = tmp_path / "tables" / "SIM1.sqlite"
    (tmp_path / "nats.pw").write_text(floor.passwords["nats:table:SIM1"] + "\n")
    config = DEFAULT_CONFIG_TOML.replace(
        'path = "var/journal.sqlite"',
        f'path = "{journal_path}"\nsegment_entries = {SEGMENT_ENTRIES}\nsegment_per_gaming_day = false',
    ).replace('game = "high-card-flush"', 'game = "top-flush"') + (
        "\n[uplink]\n"
        f'servers = ["{floor.nats.url}"]\n'
        'site = "main"\nuser = "table-SIM1"\npassword_file = "nats.pw"\n'
        f'ca_file = "{floor.tls.ca_cert}"\n'
        "\n[progressive]\n" + "".join(f"{key} = {value}\n" for key, value in PROGRESSIVE.items())
        + 'link = "L1"\nlink_timeout_s = 3\n'
    )  # fmt: skip
    config_path = tmp_path / "table.toml"
    config_path.write_text(config)
    floor_file = lf.write_spec(tmp_path / "floor.toml", floor, ["SIM1"], {**PROGRESSIVE, "paytable": None})
    linked_config = lf.linked_config_of(floor_file)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}

    async def scenario() -> subprocess.CompletedProcess[str]:
        stop = asyncio.Event()
        service = asyncio.create_task(FloorService(floor.floor_config()).run(stop))
        progressive = LinkedProgressive(linked_config)
        progressive_task = asyncio.create_task(progressive.run(stop))
        await lf.wait_for(progressive.ready.is_set, 60, "the linked progressive serving")
        completed = await asyncio.to_thread(
            subprocess.run,
            [sys.executable, "-m", "controller.cli", "run", "--config", str(config_path), "--rounds",
             str(ROUNDS), "--seed", "5", "--no-panel", "--log-level", "warning"],
            capture_output=True, text=True, timeout=300, env=env, check=False,
        )  # fmt: skip
        stop.set()
        await asyncio.gather(progressive_task, service)
        return completed

    completed = asyncio.run(scenario())
    assert completed.returncode == 0, completed.stderr[-2000:]
    # A new journal: nothing is due at its start, so every seal was made while the table ran.
    numbers = seal_numbers(journal_path)
    deferred = [line for line in completed.stderr.splitlines() if "seal" in line]
    assert len(numbers) >= 2, (numbers, deferred[:5])
    first = read_seal(journal_path, numbers[0])
    assert first is not None
    with Journal.open_existing(journal_path) as journal:
        opened = list(journal.entries(kinds=["table_opened"]))
        last = journal.last_entry()
    assert len(opened) == 1  # one start: the seals were not made by a second one
    assert last is not None
    assert last.seq > first.last_seq
    assert "journal_seal_deferred" not in completed.stderr or "round is open" in completed.stderr
    verdicts = verify_segments(journal_path, key=None)
    assert verdicts
    assert all(verdict.ok for verdict in verdicts), [verdict.line for verdict in verdicts]

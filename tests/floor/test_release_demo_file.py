"""`flushtable floor release --config D/floor.toml` on the floor file the demo writes (docs/floor.md "The
demo" and "Releasing a quarantined table"), end to end: the demo's own writer (`write_demo_config`, what
`flushtable floor demo` calls at start) writes the file for a real floor (nats-server, PostgreSQL, the
floor service, the table's uplink), a forged gap quarantines the table, and the command, run as a user
runs it (a child process), releases it once the real entries have come; the floor projects them.

Cheaper than running `flushtable floor demo` itself (which starts servers of its own): the file is the
demo's, the servers the suite's fixtures."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from controller.simulation.floor.demo import demo_table_ids, write_demo_config
from controller.simulation.floor.servers import free_port
from tests.floor.conftest import MakeFloor
from tests.floor.helpers import Tables, floor_in_a_thread, floor_problems, last_seq
from tests.floor.test_release import _floor_last, _forge_gap, _holds, _quarantined_at, until

ROOT = Path(__file__).resolve().parents[2]


def _flushtable(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "controller.cli", *args],
        capture_output=True, text=True, timeout=120, env=env, check=False,
    )  # fmt: skip


def test_floor_release_with_the_demo_s_floor_file(tmp_path: Path, make_floor: MakeFloor) -> None:
    ids = demo_table_ids(1)
    (table_id,) = ids
    floor = make_floor(ids, ack_wait_s=2)
    floor_file, _passwords = write_demo_config(floor, tmp_path / "demo", free_port(), ids)
    assert floor_file == tmp_path / "demo" / "floor.toml"
    tables = Tables(tmp_path / "tables", ids)
    tables.play(table_id, 1)
    # The floor runs on a loop of its own; the command is a child process meanwhile.
    with floor_in_a_thread(floor, tables) as served:
        until(
            lambda: _floor_last(floor, table_id) == last_seq(tables.journals[table_id]),
            "the table on the floor",
        )
        good = last_seq(tables.journals[table_id])
        _forge_gap(floor, tables, table_id, ahead=2)
        until(lambda: _quarantined_at(floor, table_id) == good, "the table quarantined")

        # The table plays on; the floor holds its real entries; the demo's file releases it.
        tables.play(table_id, 1)
        served.notify(table_id)
        end = last_seq(tables.journals[table_id])
        until(lambda: _holds(floor, table_id, end), "the floor to hold the real entries")
        released = _flushtable(
            "floor", "release", table_id, "--reason", "forged entry set aside", "--by", "manager",
            "--config", str(floor_file),
        )  # fmt: skip
        assert released.returncode == 0, released.stderr[-2000:]
        assert "Traceback" not in released.stderr
        assert (
            f"table {table_id} released (release 1): the chain verifies from entry {good} through entry {end}"
            in released.stdout
        ), released.stdout
        until(lambda: _floor_last(floor, table_id) == end, "the held entries projected")
        until(lambda: _quarantined_at(floor, table_id) is None, "the quarantine lifted")
    assert floor_problems(floor, tables) == []
    tables.close()

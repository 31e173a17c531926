"""`flushtable floor demo --rounds R` end to end as a user runs it (a child process): its own NATS server
and PostgreSQL cluster, mixed games, one JSON line counted from the journals and from PostgreSQL, exit 0.
And `flushtable uplink status` on one of its journals."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from controller.floor.config import load_floor_config, load_floor_panel_config
from controller.floor.users import read_users
from controller.journal.store import Journal
from controller.simulation.floor.servers import free_port


def test_floor_demo_rounds_prints_the_counts_and_exits_0() -> None:
    base = Path(tempfile.mkdtemp(prefix="flushtable-floor-demo-"))
    os.chmod(base, 0o755)  # the cluster runs as the postgres user
    try:
        port = free_port()
        env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
        result = subprocess.run(
            [sys.executable, "-m", "controller.cli", "floor", "demo", "--tables", "5", "--rounds", "3",
             "--dir", str(base / "floor"), "--seed", "3", "--port", str(port)],
            capture_output=True, text=True, timeout=240, env=env, check=False,
        )  # fmt: skip
        assert result.returncode == 0, result.stderr[-2000:]
        lines = result.stdout.strip().splitlines()
        assert len(lines) == 1, lines
        report = json.loads(lines[0])
        journals = sorted((base / "floor" / "tables").glob("*.sqlite"))
        assert len(journals) == 5
        in_journals = 0
        for path in journals:
            with Journal.open_existing(path) as journal:
                last = journal.last_entry()
                assert last is not None
                in_journals += last.seq
                assert len(list(journal.entries(kinds=["round_settled"]))) == 3
        assert report == {
            "tables": 5,
            "entries_in_journals": in_journals,
            "entries_on_floor": in_journals,
            "missing": 0,
            "doubled": 0,
            "chains_verified": 5,
        }
        # The demo's floor file (for `floor release|report|panel|user --config`) and its two logins,
        # a supervisor's and a manager's (who alone may release a quarantined table), printed.
        floor_file = base / "floor" / "floor.toml"
        assert f"floor file: {floor_file}" in result.stderr
        panel = load_floor_panel_config(floor_file)
        assert (panel.bind, panel.port) == ("127.0.0.1", port)
        assert load_floor_config(floor_file).dsn == panel.writer_dsn
        assert {(u.name, u.role) for u in read_users(panel.users_file).values()} == {
            ("floor", "supervisor"),
            ("manager", "manager"),
        }
        logins = next(line for line in result.stderr.splitlines() if line.startswith("floor panel: http"))
        assert re.search(r"logins: floor / \S+ \(supervisor\)  manager / \S+ \(manager\)$", logins), logins
        status = subprocess.run(
            [sys.executable, "-m", "controller.cli", "uplink", "status", "--json",
             "--journal", str(journals[0])],
            capture_output=True, text=True, timeout=60, env=env, check=False,
        )  # fmt: skip
        assert status.returncode == 0, status.stderr
        figures = json.loads(status.stdout)
        assert figures["behind"] == 0
        assert figures["acked_seq"] == figures["journal_seq"] > 0
    finally:
        shutil.rmtree(base, ignore_errors=True)

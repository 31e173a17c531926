"""`flushtable floor demo --rounds R` end to end as a user runs it (a child process): its own NATS server
and PostgreSQL cluster, mixed games, one JSON line counted from the journals and from PostgreSQL, exit 0.
And `flushtable uplink status` on one of its journals."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from controller.journal.store import Journal


def test_floor_demo_rounds_prints_the_counts_and_exits_0() -> None:
    base = Path(tempfile.mkdtemp(prefix="flushtable-floor-demo-"))
    os.chmod(base, 0o755)  # the cluster runs as the postgres user
    try:
        env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
        result = subprocess.run(
            [sys.executable, "-m", "controller.cli", "floor", "demo", "--tables", "5", "--rounds", "3",
             "--dir", str(base / "floor"), "--seed", "3"],
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

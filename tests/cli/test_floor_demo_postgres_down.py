"""`flushtable floor demo` whose PostgreSQL dies while it waits for the floor: one line, exit 2, no
traceback (issue 30 item 4). The demo's own cluster is killed (SIGKILL of its postmaster, found by its
pid file under the demo's --dir) as soon as the tables' journals exist, so the rounds are played with
no database and the wait for the floor meets PostgreSQL down."""

from __future__ import annotations

import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
START_WITHIN_S = 120.0
END_WITHIN_S = 120.0


def _limits() -> None:
    limit = 3 * 1024**3
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def _postmaster_pid(base: Path) -> int | None:
    # The pid file's known place (the demo's floor is at --dir, its cluster under postgres/data): a walk
    # of --dir races nats-server, which makes and removes its store's directories while the walk reads.
    pid_file = base / "postgres" / "data" / "postmaster.pid"
    try:
        first = pid_file.read_text().split("\n", 1)[0].strip()
    except FileNotFoundError:
        return None
    return int(first) if first.isdigit() else None


def test_postgres_down_while_the_demo_waits_is_one_line() -> None:
    # The cluster runs as the postgres user, who must reach the directory: not under pytest's tmp_path.
    base = Path(tempfile.mkdtemp(prefix="flushtable-demo-pg-down-"))
    base.chmod(0o755)
    demo = subprocess.Popen(
        [
            *(sys.executable, "-m", "controller.cli", "floor", "demo", "--tables", "1", "--rounds", "40"),
            *("--dir", str(base), "--port", "0", "--seed", "1"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        preexec_fn=_limits,  # noqa: PLW1509 - only setrlimit, before exec
    )
    try:
        deadline = time.monotonic() + START_WITHIN_S
        pid = None
        while time.monotonic() < deadline and demo.poll() is None:  # bounded by the deadline
            pid = _postmaster_pid(base)
            if pid is not None and (base / "tables" / "T001.sqlite").exists():
                break
            time.sleep(0.05)
        assert pid is not None, "the demo did not start its database"
        assert demo.poll() is None, "the demo ended before its tables started"
        os.kill(pid, signal.SIGKILL)  # the demo's own database, started by this test's child
        _, stderr = demo.communicate(timeout=END_WITHIN_S)
    finally:
        if demo.poll() is None:
            demo.kill()
            demo.communicate()
    shutil.rmtree(base, ignore_errors=True)
    lines = stderr.strip().splitlines()
    assert "Traceback" not in stderr, stderr[-3000:]
    assert demo.returncode == 2, stderr[-3000:]
    assert lines[-1].startswith("flushtable floor: the floor's PostgreSQL "), lines[-1]

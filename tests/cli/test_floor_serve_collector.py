"""`flushtable floor serve` tunes its process's garbage collector before its loop starts
(controller/floor/collector.py): a real child process, its log read for the settings it says it runs
with. Its floor's servers lead nowhere (nothing listens on port 1): the service retries, which is all
this test needs of it."""

from __future__ import annotations

import json
import os
import selectors
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from controller.floor.collector import OLDER_THRESHOLD, YOUNG_THRESHOLD
from tests.cli.test_floor_postgresql_unreachable import floor_file  # noqa: F401 (a fixture)

LOG_LINE_BOUND_S = 60.0  # the child's start on a loaded machine, then its first log lines
REPO = Path(__file__).resolve().parents[2]


def _first_event(process: subprocess.Popen[bytes], event: str, bound_s: float) -> dict[str, Any]:
    """The first JSON log line naming ``event`` on the child's output, read within ``bound_s``."""
    assert process.stdout is not None
    selector = selectors.DefaultSelector()
    selector.register(process.stdout, selectors.EVENT_READ)
    deadline = time.monotonic() + bound_s
    lines: list[bytes] = []
    while time.monotonic() < deadline:
        if not selector.select(timeout=max(0.0, deadline - time.monotonic())):
            break
        line = process.stdout.readline()
        if not line:
            break  # the child ended
        lines.append(line)
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict) and entry.get("event") == event:
            return entry
    raise AssertionError(f"no {event!r} within {bound_s} s; the child said: {b''.join(lines)[-2000:]!r}")


def test_floor_serve_runs_with_the_tuned_collector(floor_file: Path) -> None:  # noqa: F811
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    command = [sys.executable, "-m", "controller.cli", "floor", "serve", "--log-level", "info"]
    process = subprocess.Popen(
        [*command, "--config", str(floor_file)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, cwd=floor_file.parent,
    )  # fmt: skip
    try:
        said = _first_event(process, "floor_collector", LOG_LINE_BOUND_S)
    finally:
        process.terminate()
        process.wait(timeout=30)
    assert said["thresholds"] == [YOUNG_THRESHOLD, OLDER_THRESHOLD, OLDER_THRESHOLD]
    assert said["frozen_objects"] > 10_000  # the modules and the configuration, out of the collector's walks

"""The crash test's driver: `flushtable run` in a subprocess on one journal, killed with SIGKILL at
random moments and restarted each time (tests/daemon/test_crash.py; also runnable alone:
`python -m tests.daemon.crash --kills 60`, which prints its figures as JSON)."""

from __future__ import annotations

import argparse
import contextlib
import json
import random
import signal
import sqlite3
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from tests.daemon.harness import FLUSHTABLE

READY_TIMEOUT_S = 30.0  # a restart that never opens the table fails the test, it does not hang it


@dataclass(slots=True)
class CrashReport:
    kills: int = 0
    kills_before_ready: int = 0  # during start-up: recovery, devices, imports
    rounds_started_at_kills: list[int] = field(default_factory=list)
    elapsed_s: float = 0.0


def journal_kinds_count(journal_path: Path, kind: str) -> int:
    """How many entries of ``kind`` the journal holds now (read-only; 0 before it exists)."""
    if not journal_path.exists():
        return 0
    with contextlib.closing(sqlite3.connect(f"file:{journal_path}?mode=ro", uri=True, timeout=5)) as db:
        try:
            return int(db.execute("SELECT count(*) FROM journal WHERE kind = ?", (kind,)).fetchone()[0])
        except sqlite3.OperationalError:
            return 0  # the schema is being created by the process we are about to kill


def daemon_command(
    journal_path: Path, seed: int, time_scale: float, rounds: int | None = None, config: Path | None = None
) -> list[str]:
    command = [
        FLUSHTABLE,
        "run",
        *(["--config", str(config)] if config is not None else []),
        "--journal",
        str(journal_path),
        "--seed",
        str(seed),
        "--time-scale",
        str(time_scale),
        "--no-panel",
        "--log-level",
        "warning",
        # The players' old walk-away rate: a walk-away keeps a round open with decided raises on the
        # felt for a decision timeout, where the kills must land for the void check to prove anything.
        "--sim-walk-away-rate",
        "0.03",
    ]
    return command + (["--rounds", str(rounds)] if rounds is not None else [])


def crash_repeatedly(
    journal_path: Path,
    *,
    kills: int,
    seed: int,
    time_scale: float = 50.0,
    max_after_ready_s: float = 1.2,
    before_ready_rate: float = 0.1,
    config: Path | None = None,
) -> CrashReport:
    """Start the daemon, SIGKILL it at a random moment, restart; ``kills`` times. Most kills land a
    uniform random time (0..max_after_ready_s) after the table opened (mid-round, mid-commit, between
    rounds); ``before_ready_rate`` of them during start-up (imports, recovery, devices)."""
    rng = random.Random(seed)
    report = CrashReport()
    started_s = time.monotonic()
    for attempt in range(kills):
        opened_before = journal_kinds_count(journal_path, "table_opened")
        process = subprocess.Popen(
            daemon_command(journal_path, seed + attempt, time_scale, config=config),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        try:
            if rng.random() < before_ready_rate:
                time.sleep(rng.uniform(0.2, 2.5))
                if journal_kinds_count(journal_path, "table_opened") == opened_before:
                    report.kills_before_ready += 1
            else:
                deadline_s = time.monotonic() + READY_TIMEOUT_S
                while journal_kinds_count(journal_path, "table_opened") == opened_before:
                    if process.poll() is not None:
                        stderr = process.stderr.read().decode() if process.stderr else ""
                        raise AssertionError(f"the daemon exited {process.returncode} at start: {stderr}")
                    if time.monotonic() > deadline_s:
                        raise AssertionError(f"the daemon did not open the table in {READY_TIMEOUT_S} s")
                    time.sleep(0.02)
                time.sleep(rng.uniform(0.0, max_after_ready_s))
            if process.poll() is not None:
                stderr = process.stderr.read().decode() if process.stderr else ""
                raise AssertionError(f"the daemon exited early: {process.returncode}: {stderr[-3000:]}")
            process.send_signal(signal.SIGKILL)
        finally:
            if process.poll() is None:
                process.kill()
            process.wait(timeout=10)
            if process.stderr is not None:
                process.stderr.close()
        report.kills += 1
        report.rounds_started_at_kills.append(journal_kinds_count(journal_path, "round_started"))
    report.elapsed_s = time.monotonic() - started_s
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--kills", type=int, default=30)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--journal", type=Path, default=Path("var/crash/journal.sqlite"))
    parser.add_argument("--config", type=Path, default=None, help="default: the embedded table")
    args = parser.parse_args()
    args.journal.parent.mkdir(parents=True, exist_ok=True)
    report = crash_repeatedly(args.journal, kills=args.kills, seed=args.seed, config=args.config)
    print(
        json.dumps(
            {
                "kills": report.kills,
                "before_ready": report.kills_before_ready,
                "rounds_started": report.rounds_started_at_kills[-1],
                "elapsed_s": round(report.elapsed_s, 1),
            }
        )
    )


if __name__ == "__main__":
    main()

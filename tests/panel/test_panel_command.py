"""`flushtable panel` in a subprocess: first start prints a one-time password once (or takes
FLUSHTABLE_SUPERVISOR_PASSWORD), serves over loopback, and stops cleanly on SIGTERM."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import httpx

from controller.journal import Journal
from controller.panel.auth import UserStore


def _start(journal: Path, users: Path, env: dict[str, str]) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "controller.cli",
            "panel",
            "--journal",
            str(journal),
            "--panel",
            "127.0.0.1:0",
            "--users-file",
            str(users),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    match = re.search(r"(http://127\.0\.0\.1:\d+)", line)
    assert match, line
    return process, match.group(1)


def _env(**extra: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if "proxy" not in k.lower() and k != "FLUSHTABLE_SUPERVISOR_PASSWORD"
    }
    env.update(extra)
    return env


def test_first_start_prints_a_one_time_password_once_and_sigterm_stops(tmp_path: Path) -> None:
    journal = tmp_path / "journal.sqlite"
    Journal.open(journal, "T9").close()
    users = tmp_path / "users.json"
    process, url = _start(journal, users, _env())
    try:
        assert httpx.get(f"{url}/healthz", timeout=5).json()["status"] == "ok"
        assert httpx.get(f"{url}/api/table", timeout=5).status_code == 401
    finally:
        process.send_signal(signal.SIGTERM)
        _out, err = process.communicate(timeout=15)
    assert process.returncode == 0
    match = re.search(r"one-time password (\S+)", err)
    assert match, err
    assert UserStore(users).authenticate("supervisor", match.group(1)) is not None
    # A second start prints none.
    process, url = _start(journal, users, _env())
    process.send_signal(signal.SIGTERM)
    _out, err = process.communicate(timeout=15)
    assert process.returncode == 0
    assert "one-time password" not in err


def test_first_supervisor_password_from_the_environment(tmp_path: Path) -> None:
    journal = tmp_path / "journal.sqlite"
    Journal.open(journal, "T9").close()
    users = tmp_path / "users.json"
    process, _url = _start(journal, users, _env(FLUSHTABLE_SUPERVISOR_PASSWORD="env-pass-2026"))
    process.send_signal(signal.SIGTERM)
    _out, err = process.communicate(timeout=15)
    assert process.returncode == 0
    assert "one-time password" not in err
    assert UserStore(users).authenticate("supervisor", "env-pass-2026") is not None


def test_missing_journal_is_one_line_and_exit_2(tmp_path: Path) -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "controller.cli",
            "panel",
            "--journal",
            str(tmp_path / "none.sqlite"),
            "--users-file",
            str(tmp_path / "u.json"),
        ],
        capture_output=True,
        text=True,
        timeout=30,
        env=_env(),
        check=False,
    )
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1
    assert "none.sqlite" in result.stderr

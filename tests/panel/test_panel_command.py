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


def test_the_read_only_panel_journals_nothing_and_refuses_an_acknowledgement(tmp_path: Path) -> None:
    """`flushtable panel` opens the journal read-only: a supervisor's login and acknowledgement there
    leave the journal as it was (issue 17: it wrote login and fault_acknowledged before)."""
    journal_path = tmp_path / "journal.sqlite"
    with Journal.open(journal_path, "T9") as journal:
        journal.append(
            "fault_raised",
            {
                "fault_id": "FT9-000001",
                "kind": "red_light",
                "severity": "latching",
                "device": "shuffler",
                "reason": {"code": "red_light", "message": "red light"},
            },
            round_id=None,
            source="engine",
        )
        before = [(e.seq, e.kind) for e in journal.entries()]
    users = tmp_path / "users.json"
    process, url = _start(journal_path, users, _env(FLUSHTABLE_SUPERVISOR_PASSWORD="env-pass-2026"))
    try:
        with httpx.Client(base_url=url, timeout=5) as client:
            client.get("/login")
            form = {
                "user": "supervisor",
                "password": "env-pass-2026",
                "csrf_token": client.cookies.get("ft_login_csrf") or "",
            }
            assert client.post("/login", data=form).status_code in (200, 303)
            csrf = client.get("/api/session").json()["csrf_token"]
            answer = client.post("/api/alerts/FT9-000001/acknowledge", headers={"X-CSRF-Token": csrf})
            assert answer.status_code == 503
            assert "read-only" in answer.json()["detail"]
            assert client.get("/api/table").json()["read_only"] is True
    finally:
        process.send_signal(signal.SIGTERM)
        process.communicate(timeout=15)
    with Journal.open_existing(journal_path) as journal:
        assert [(e.seq, e.kind) for e in journal.entries()] == before

"""One rule for where the panel's users live (controller.panel.auth.users_file_for): the daemon,
`flushtable user` and `flushtable panel` all find the same file. The daemon runs for real: `flushtable
run` in a process of its own, on its simulated table, its panel on 127.0.0.1."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import httpx

from controller.panel.auth import USERS_FILE_ENV, users_file_for

WAIT_S = 60.0


def _env(**extra: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if "proxy" not in k.lower() and k not in {USERS_FILE_ENV, "FLUSHTABLE_SUPERVISOR_PASSWORD"}
    }
    env.update(extra)
    return env


def _flushtable(
    *args: str, env: dict[str, str], cwd: Path, stdin: str = ""
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "controller.cli", *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=WAIT_S,
        check=False,
    )


def test_the_rule_env_then_config_then_beside_the_journal(tmp_path: Path) -> None:
    class PanelSection:
        users_file = tmp_path / "from-config.json"

    journal = tmp_path / "var" / "journal.sqlite"
    env_file = str(tmp_path / "from-env.json")
    assert users_file_for(journal, PanelSection(), {USERS_FILE_ENV: env_file}) == Path(env_file)
    assert users_file_for(journal, PanelSection(), {}) == tmp_path / "from-config.json"
    assert users_file_for(journal, None, {}) == tmp_path / "var" / "panel-users.json"


def test_user_add_without_a_file_writes_beside_the_default_journal(
    tmp_path: Path,
) -> None:
    added = _flushtable(
        "user", "add", "olga", "--role", "viewer", env=_env(), cwd=tmp_path, stdin="olga-pass-123\n"
    )
    assert added.returncode == 0, added.stderr
    assert (tmp_path / "var" / "panel-users.json").exists()  # the embedded config's journal is var/
    listed = _flushtable("user", "--journal", "var/journal.sqlite", "list", env=_env(), cwd=tmp_path)
    assert listed.stdout == "olga\tviewer\n", listed.stderr
    elsewhere = _flushtable("user", "--journal", "other/j.sqlite", "list", env=_env(), cwd=tmp_path)
    assert elsewhere.stdout == ""  # beside another journal: another (empty) file


def test_a_user_added_with_the_environments_file_logs_into_the_daemons_panel(tmp_path: Path) -> None:
    users = tmp_path / "elsewhere" / "staff.json"
    env = _env(**{USERS_FILE_ENV: str(users)})
    added = _flushtable(
        "user", "add", "erin", "--role", "supervisor", env=env, cwd=tmp_path, stdin="erin-pass-2026\n"
    )
    assert added.returncode == 0, added.stderr
    assert str(users) in added.stderr
    daemon = subprocess.Popen(
        [
            *(sys.executable, "-m", "controller.cli", "run", "--journal", str(tmp_path / "j.sqlite")),
            *("--no-autoplay", "--panel", "127.0.0.1:0", "--log-level", "warning"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    try:
        assert daemon.stdout is not None
        url = ""
        for line in daemon.stdout:  # bounded: the daemon prints its panel's URL once it listens
            match = re.search(r"panel: (http://127\.0\.0\.1:\d+)", line)
            if match:
                url = match.group(1)
                break
        assert url, "the daemon printed no panel URL"
        with httpx.Client(base_url=url, timeout=WAIT_S) as client:
            client.get("/login")
            answer = client.post(
                "/login",
                data={
                    "user": "erin",
                    "password": "erin-pass-2026",
                    "csrf_token": client.cookies["ft_login_csrf"],
                },
            )
            assert answer.status_code == 303, answer.text[:300]
            assert client.get("/api/session").json()["user"] == "erin"
    finally:
        daemon.send_signal(signal.SIGTERM)
        _out, err = daemon.communicate(timeout=WAIT_S)
    # A supervisor existed in the file the daemon read: no bootstrap user, no one-time password.
    assert "one-time password" not in err
    assert not (tmp_path / "panel-users.json").exists()
    assert '"erin"' in users.read_text()
    assert '"supervisor"' not in users.read_text().replace('"role": "supervisor"', "")

"""`[panel] bind` is where `flushtable run` listens; --panel overrides it only when given (issue 30 item 5:
the bind was echoed by `flushtable config` and `run` listened on 127.0.0.1:8080 whatever it said)."""

from __future__ import annotations

import argparse
import contextlib
import os
import resource
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from controller.commands.run import add_arguments, panel_address
from controller.config import DEFAULT_CONFIG_TOML, load_config

# Of this pytest-xdist worker's slice: the other worker's probes never name the port our child binds.
from controller.simulation.floor.processes import free_port

ROOT = Path(__file__).resolve().parents[2]
REACH_WITHIN_S = 60.0


def config_binding(directory: Path, port: int) -> Path:
    path = directory / "table.toml"
    path.write_text(DEFAULT_CONFIG_TOML.replace('bind = "127.0.0.1:8080"', f'bind = "127.0.0.1:{port}"'))
    return path


def _limits() -> None:
    limit = 3 * 1024**3
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def answers_http(port: int) -> int | None:
    """The HTTP status the panel answers / with, or None when nothing listens."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as response:
            return int(response.status)
    except urllib.error.HTTPError as error:
        return int(error.code)
    except OSError:
        return None


def test_run_listens_where_the_configuration_says(tmp_path: Path) -> None:
    port = free_port()
    config = config_binding(tmp_path, port)
    table = subprocess.Popen(
        [
            *(sys.executable, "-m", "controller.cli", "run", "--config", str(config), "--no-autoplay"),
            *("--journal", str(tmp_path / "j.sqlite"), "--log-level", "warning"),
        ],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT), "NOTIFY_SOCKET": ""},
        preexec_fn=_limits,  # noqa: PLW1509 - only setrlimit, before exec
    )
    try:
        deadline = time.monotonic() + REACH_WITHIN_S
        status = None
        while status is None and time.monotonic() < deadline and table.poll() is None:  # bounded
            status = answers_http(port)
            if status is None:
                time.sleep(0.1)
        assert status is not None, f"nothing answered on 127.0.0.1:{port} (exit {table.poll()})"
        assert status < 500
    finally:
        table.send_signal(signal.SIGINT)
        try:
            table.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            table.kill()
            table.communicate()


def _args(*words: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return parser.parse_args(list(words))


def test_the_command_line_overrides_only_when_given(tmp_path: Path) -> None:
    port = free_port()
    config = load_config(config_binding(tmp_path, port))
    assert panel_address(_args(), config) == ("127.0.0.1", port)
    assert panel_address(_args("--panel", "127.0.0.1:9999"), config) == ("127.0.0.1", 9999)
    assert panel_address(_args("--no-panel"), config) is None
    assert panel_address(_args(), load_config(None)) == ("127.0.0.1", 8080)  # the embedded default's


def test_a_configured_bind_that_is_taken_is_named_as_the_configuration(tmp_path: Path) -> None:
    with contextlib.closing(socket.socket()) as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = int(taken.getsockname()[1])
        config = config_binding(tmp_path, port)
        done = subprocess.run(
            [sys.executable, "-m", "controller.cli", "run", "--config", str(config), "--rounds", "1"],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
            env={**os.environ, "PYTHONPATH": str(ROOT), "NOTIFY_SOCKET": ""},
            preexec_fn=_limits,
        )
    assert done.returncode == 2
    where = f"table.toml: panel.bind 127.0.0.1:{port}"
    assert done.stderr.strip().splitlines() == [
        f"flushtable run: {where}: cannot listen there: Address already in use"
    ]
    assert not (tmp_path / "var").exists()  # nothing journaled


def test_the_read_only_panel_listens_where_the_configuration_says(tmp_path: Path) -> None:
    from controller.journal import Journal

    Journal.open(tmp_path / "j.sqlite", "SIM1").close()
    port = free_port()
    config = config_binding(tmp_path, port)
    panel = subprocess.Popen(
        [sys.executable, "-m", "controller.cli", "panel", "--journal", "j.sqlite", "--config", str(config)],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT), "FLUSHTABLE_USERS_FILE": ""},
        preexec_fn=_limits,  # noqa: PLW1509 - only setrlimit, before exec
    )
    try:
        deadline = time.monotonic() + REACH_WITHIN_S
        status = None
        while status is None and time.monotonic() < deadline and panel.poll() is None:  # bounded
            status = answers_http(port)
            if status is None:
                time.sleep(0.1)
        assert status is not None, f"nothing answered on 127.0.0.1:{port} (exit {panel.poll()})"
    finally:
        panel.send_signal(signal.SIGINT)
        try:
            panel.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            panel.kill()
            panel.communicate()

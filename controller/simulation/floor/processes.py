"""The harness's child processes, what every server here shares: a free port on 127.0.0.1, a bounded wait
until a child listens (its log's last lines in the one-line error when it does not), and a child's end:
asked first, killed when it does not go in time."""

from __future__ import annotations

import contextlib
import signal
import socket
import subprocess
import time
from pathlib import Path

from controller.errors import ServerError


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nobody listens on now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        port: int = sock.getsockname()[1]
        return port


def wait_port(host: str, port: int, process: subprocess.Popen[bytes], timeout_s: float, log: Path) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise ServerError(f"{process.args!r} exited with {process.returncode}: {log_tail(log)}")
        with contextlib.suppress(OSError), socket.create_connection((host, port), timeout=0.2):
            return
        time.sleep(0.05)
    process.kill()
    raise ServerError(f"{process.args!r} did not listen on {host}:{port} in {timeout_s} s: {log_tail(log)}")


def log_tail(log: Path, lines: int = 5) -> str:
    try:
        return " | ".join(log.read_text(errors="replace").strip().splitlines()[-lines:])
    except OSError:
        return "(no log)"


def end_child(
    process: subprocess.Popen[bytes],
    *,
    ask: signal.Signals = signal.SIGTERM,
    grace_s: float,
    kill_wait_s: float = 10.0,
) -> None:
    """Ask a running child to end (``ask``: SIGTERM, or the server's own stop signal) and give it
    ``grace_s``; a child still there then is SIGKILLed and waited for ``kill_wait_s``. A child that has
    already exited is left alone, so a server stopped after a crash of its own stops quietly."""
    if process.poll() is not None:
        return
    process.send_signal(ask)
    try:
        process.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=kill_wait_s)

"""The harness's child processes, what every server here shares: a free port on 127.0.0.1, a bounded wait
until a child listens (its log's last lines in the one-line error when it does not), and a child's end:
asked first, killed when it does not go in time."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from collections import deque
from pathlib import Path

from controller.errors import ServerError

_TCP_LISTEN = "0A"  # a socket's state in /proc/net/tcp: listening


# Processes that probe ports at the same time on one machine (pytest-xdist's workers: tests/conftest.py
# sets it in each) each take a slice of the ports, "K/N": free_port() then returns only ports of slice K
# of N, so two of them never name the same port (a port probed free is closed again, and a server
# binds it later: in between, another process probing could be handed it too). Unset: any free port.
PORT_SLICE_ENV = "FLUSHTABLE_PORT_SLICE"
_SLICE_TRIES = 1000  # bounded: a slice of N is one port the kernel picks in N, on average
# The ports this process named last: not named again while they may still be waiting for their server
# (two probes before either binds: a floor's client and leaf ports).
_RECENT_PORTS: deque[int] = deque(maxlen=64)


def port_slice(port: int, slices: int) -> int:
    """Which of ``slices`` slices ``port`` is in. Over port // 2: Linux hands bind(..., 0) odd ports first
    (connect() takes the even ones first), so port % 2 would put nearly every port in one slice."""
    return (port // 2) % slices


def _own_slice() -> tuple[int, int] | None:
    """(K, N) from PORT_SLICE_ENV; None when it is unset or empty."""
    text = os.environ.get(PORT_SLICE_ENV, "")
    if not text:
        return None
    own, _, slices = text.partition("/")
    if not (own.isdecimal() and slices.isdecimal() and int(own) < int(slices)):
        raise ServerError(f"{PORT_SLICE_ENV}={text!r}: expected K/N with 0 <= K < N, like 0/2")
    return int(own), int(slices)


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nobody listens on now (the OS picks it), of this process's slice when it has one, and
    none of the last ones this process named."""
    own_slice = _own_slice()
    recent_in_slice: int | None = None
    for _ in range(_SLICE_TRIES):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.bind((host, 0))
            port: int = sock.getsockname()[1]
        if own_slice is not None and port_slice(port, own_slice[1]) != own_slice[0]:
            continue
        if port not in _RECENT_PORTS:
            _RECENT_PORTS.append(port)
            return port
        recent_in_slice = port
    if recent_in_slice is not None:
        # A range so small that every free port of the slice was named lately: a recent one (free now)
        # rather than none at all.
        return recent_in_slice
    wanted = f" of slice {os.environ[PORT_SLICE_ENV]}" if own_slice is not None else ""
    raise ServerError(f"no free port{wanted} on {host} in {_SLICE_TRIES} tries")


def _listeners(port: int) -> list[tuple[str, str]]:
    """(user id, socket inode) of every TCP socket on this machine listening on ``port`` (any address),
    from /proc/net/tcp and tcp6: readable without reading anyone's descriptors."""
    found: list[tuple[str, str]] = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError), open(table) as lines:
            next(lines)
            for line in lines:
                fields = line.split()
                if fields[3] == _TCP_LISTEN and int(fields[1].rsplit(":", 1)[1], 16) == port:
                    found.append((fields[7], fields[9]))
    return found


def _listening_inodes(port: int) -> set[str]:
    return {inode for _, inode in _listeners(port)}


def _socket_inodes(pid: int) -> set[str] | None:
    """The inodes of the sockets process ``pid`` holds; None: its descriptors cannot be read here."""
    inodes: set[str] = set()
    try:
        names = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return None
    for name in names:
        with contextlib.suppress(OSError):
            target = os.readlink(f"/proc/{pid}/fd/{name}")
            if target.startswith("socket:["):
                inodes.add(target[len("socket:[") : -1])
    return inodes


def descendants(pid: int) -> list[int]:
    """``pid`` and every process below it (a wrapper's server: a script named by
    FLUSHTABLE_NATS_SERVER that runs the server without exec), from the kernel's list of each thread's
    children (/proc/<pid>/task/<tid>/children): a few reads a poll, not a read of every process's stat."""
    found = [pid]
    for each in found:  # grows as it is walked: breadth first, each process once (a tree has no cycle)
        with contextlib.suppress(OSError):
            for task in os.listdir(f"/proc/{each}/task"):
                with contextlib.suppress(OSError):
                    found.extend(map(int, Path(f"/proc/{each}/task/{task}/children").read_text().split()))
    return found


def _uid(pid: int) -> str | None:
    """The real user id of ``pid`` as /proc/net/tcp writes it (decimal), or None."""
    with contextlib.suppress(OSError, IndexError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("Uid:"):
                return line.split()[1]
    return None


def _listens(host: str, port: int, process: subprocess.Popen[bytes]) -> bool:
    """Whether ``process``, or a process below it, listens on ``port``. A connection to host:port is not
    enough: another process that took the port first (a port probed free here and bound by another test
    run's server before ours, under pytest-xdist's workers) answers it while ours fails to bind and
    exits."""
    tree = descendants(process.pid)
    held: set[str] = set()
    for pid in tree:
        inodes = _socket_inodes(pid)
        if inodes is None:
            break
        held |= inodes
    else:
        return bool(held & _listening_inodes(port))
    # A descriptor table this process may not read (root without CAP_SYS_PTRACE, the server another
    # user's): weaker, a listener there owned by the server's user (not a panel or a nats-server of
    # this user's), and answering. Two servers of that one user (two workers' PostgreSQL) are not told
    # apart this way: docs/operations.md "The test suite on two workers".
    uids = {uid for uid in map(_uid, tree) if uid is not None}
    if uids and not uids & {uid for uid, _ in _listeners(port)}:
        return False
    with contextlib.suppress(OSError), socket.create_connection((host, port), timeout=0.2):
        return True
    return False


def wait_port(host: str, port: int, process: subprocess.Popen[bytes], timeout_s: float, log: Path) -> None:
    """Until ``process`` listens on host:``port``, bounded; a child that exits first (its port taken:
    "address already in use" in its log) or is not listening in time is a ServerError with its log."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            # Ten lines: PostgreSQL follows its "Address already in use" with four or more of its own.
            raise ServerError(f"{process.args!r} exited with {process.returncode}: {log_tail(log, 10)}")
        if _listens(host, port, process):
            return
        time.sleep(0.05)
    process.kill()
    taken = " (another process listens there)" if _listening_inodes(port) else ""
    raise ServerError(
        f"{process.args!r} did not listen on {host}:{port} in {timeout_s} s{taken}: {log_tail(log)}"
    )


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

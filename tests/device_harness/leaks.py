"""Find what a test left open: threads, asyncio tasks, file descriptors, sockets and their ports.

Used by the autouse fixtures in tests/drivers/conftest.py and tests/sim/conftest.py (pymodbus' habit:
a test that leaves anything running fails, so leaks are found where they are made).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Snapshot:
    threads: frozenset[int]
    fds: dict[int, str]


def _fd_targets() -> dict[int, str]:
    targets: dict[int, str] = {}
    for name in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):
            targets[int(name)] = os.readlink(f"/proc/self/fd/{name}")
    return targets


def snapshot() -> Snapshot:
    return Snapshot(frozenset(thread.ident or 0 for thread in threading.enumerate()), _fd_targets())


def _socket_ports() -> dict[str, str]:
    """socket inode -> "127.0.0.1:PORT STATE" for this machine's TCP sockets."""
    states = {"0A": "LISTEN", "01": "ESTABLISHED", "06": "TIME_WAIT", "08": "CLOSE_WAIT"}
    found: dict[str, str] = {}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError), open(table) as lines:
            next(lines)
            for line in lines:
                fields = line.split()
                local, state, inode = fields[1], fields[3], fields[9]
                port = int(local.rsplit(":", 1)[1], 16)
                found[inode] = f"port {port} {states.get(state, state)}"
    return found


def leaks_since(before: Snapshot, *, settle_s: float = 2.0) -> list[str]:
    """What is open now that was not at ``before``; waits up to ``settle_s`` for things closing."""
    deadline = time.monotonic() + settle_s
    while True:
        now = snapshot()
        new_threads = [
            thread
            for thread in threading.enumerate()
            if (thread.ident or 0) not in before.threads and thread.is_alive()
        ]
        new_fds = {fd: target for fd, target in now.fds.items() if before.fds.get(fd) != target}
        if (not new_threads and not new_fds) or time.monotonic() >= deadline:
            break
        time.sleep(0.02)
    problems = [f"thread left running: {thread.name}" for thread in new_threads]
    ports = _socket_ports() if any(target.startswith("socket:") for target in new_fds.values()) else {}
    for fd, target in sorted(new_fds.items()):
        if target.startswith("socket:["):
            inode = target[len("socket:[") : -1]
            problems.append(f"socket left open: fd {fd} ({ports.get(inode, 'not TCP')})")
        else:
            problems.append(f"file descriptor left open: fd {fd} -> {target}")
    return problems


def run_async(make: Callable[[], Awaitable[T]], *, timeout_s: float = 30.0) -> T:
    """Run a test's coroutine on a fresh loop, bounded by ``timeout_s``; fail if it leaves a task."""

    async def guarded() -> T:
        async with asyncio.timeout(timeout_s):
            result = await make()
        current = asyncio.current_task()
        leftover = [task for task in asyncio.all_tasks() if task is not current and not task.done()]
        if leftover:
            names = ", ".join(sorted(task.get_name() for task in leftover))
            for task in leftover:
                task.cancel()
            await asyncio.gather(*leftover, return_exceptions=True)
            raise AssertionError(f"asyncio tasks left running: {names}")
        return result

    return asyncio.run(guarded())

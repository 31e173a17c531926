"""systemd's notify protocol (sd_notify), so `Type=notify` and `WatchdogSec=` work without a dependency.

systemd passes the socket in NOTIFY_SOCKET (a path, or an abstract name starting with "@"). Outside
systemd the variable is unset and every call is a no-op, so the daemon needs no special mode.
"""

from __future__ import annotations

import os
import socket


def notify(state: str) -> bool:
    """Send ``state`` (e.g. "READY=1", "WATCHDOG=1", "STOPPING=1"); False when not under systemd."""
    address = os.environ.get("NOTIFY_SOCKET")
    if not address:
        return False
    if address.startswith("@"):
        address = "\0" + address[1:]  # an abstract socket
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as sock:
            sock.connect(address)
            sock.sendall(state.encode())
    except OSError:
        # A watchdog ping that cannot be sent is systemd's to notice (it will restart us); never crash.
        return False
    return True


def watchdog_interval_s() -> float | None:
    """Half the watchdog timeout systemd asked for (WATCHDOG_USEC), or None when there is none."""
    usec = os.environ.get("WATCHDOG_USEC")
    pid = os.environ.get("WATCHDOG_PID")
    if not usec or (pid and pid != str(os.getpid())):
        return None
    try:
        return int(usec) / 1_000_000 / 2
    except ValueError:
        return None

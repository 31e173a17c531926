"""A tiny SNTP server on 127.0.0.1 for the clock tests: it answers each request with its own time
(``time.time()`` plus ``offset_s``), echoing the request's transmit time stamp as RFC 4330 says. A real
UDP socket and a real exchange; only the server's notion of time is the test's."""

from __future__ import annotations

import socket
import struct
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

NTP_EPOCH_OFFSET_S = 2_208_988_800


def _ntp(seconds: float) -> bytes:
    value = seconds + NTP_EPOCH_OFFSET_S
    whole = int(value)
    return struct.pack("!II", whole, int((value - whole) * 2**32) & 0xFFFFFFFF)


class SntpServer:
    def __init__(self, *, offset_s: float = 0.0, stratum: int = 2, leap: int = 0) -> None:
        self.offset_s = offset_s
        self.stratum = stratum
        self.leap = leap
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.settimeout(0.2)
        self.port: int = self.sock.getsockname()[1]
        self.answered = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, name="sntp", daemon=True)

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                request, peer = self.sock.recvfrom(512)
            except TimeoutError:
                continue
            except OSError:
                return
            received = time.time() + self.offset_s
            header = bytes([(self.leap << 6) | (4 << 3) | 4, self.stratum, 6, 0xEC]) + bytes(8) + b"LOCL"
            reply = (
                header + _ntp(received) + request[40:48] + _ntp(received) + _ntp(time.time() + self.offset_s)
            )
            self.sock.sendto(reply, peer)
            self.answered += 1

    def start(self) -> SntpServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)
        self.sock.close()


@contextmanager
def sntp_server(**options: float) -> Iterator[SntpServer]:
    server = SntpServer(**options).start()  # type: ignore[arg-type]
    try:
        yield server
    finally:
        server.stop()

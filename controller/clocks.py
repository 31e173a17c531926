"""The table's clock against the floor's time source (docs/operations.md "Clocks").

A small SNTP client (RFC 4330) over UDP: one request, one answer, the offset and round-trip delay
from the four time stamps. The table's side of the exchange is read from the table's own clock (the
daemon's ``TableClock``, injected in tests), so what is measured is the clock the table stamps with.

:class:`ClockWatch` measures at start and every ``[clock] check_interval_s`` (at most an hour),
journals a ``clock_offset`` entry each time and raises the ``clock`` alert when the offset passes
``max_offset_ms`` (or the source cannot be read), once per excursion: an alert every hour for the same
drift would teach the floor to ignore it; the journal still holds every measurement.

The journal's own times never go backwards whatever the wall clock does (controller/journal/store.py
keeps the last time and writes ``clock_stepped``).
"""

from __future__ import annotations

import asyncio
import os
import socket
import struct
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from controller.config import ClockSection, split_ntp_server
from controller.journal.chain import format_time_utc
from controller.journal.entries import ClockOffset

NTP_EPOCH_OFFSET_S = 2_208_988_800  # 1900-01-01 to 1970-01-01
PACKET_BYTES = 48
_CLIENT_MODE = 3
_SERVER_MODES = (4, 5)  # server, broadcast (RFC 4330 section 5)
_VERSION = 4
_UNSYNCHRONISED = 3  # leap indicator: the server's own clock is not set


class ClockSourceError(Exception):
    """The time source could not be read or its answer cannot be trusted: one line."""


@dataclass(frozen=True, slots=True)
class ClockReading:
    """One measurement: ``offset_s`` = the source's time minus the table's (positive: the table is
    behind), ``delay_s`` the round trip less the source's own time."""

    source: str
    offset_s: float
    delay_s: float
    table_time_s: float  # the table's clock when the answer came


def _to_ntp(seconds: float) -> bytes:
    ntp = seconds + NTP_EPOCH_OFFSET_S
    whole = int(ntp)
    fraction = int((ntp - whole) * 2**32) & 0xFFFFFFFF
    return struct.pack("!II", whole & 0xFFFFFFFF, fraction)


def _from_ntp(raw: bytes) -> float:
    whole, fraction = struct.unpack("!II", raw)
    return float(whole - NTP_EPOCH_OFFSET_S + fraction / 2**32)


def sntp_request(transmit_s: float) -> bytes:
    """A client's request: version 4, mode 3, the transmit time stamp set (the server echoes it as the
    originate time stamp: a reply that does not echo ours is not an answer to us)."""
    header = bytes([(_VERSION << 3) | _CLIENT_MODE]) + bytes(39)
    return header + _to_ntp(transmit_s)


def read_reply(reply: bytes, request: bytes, sent_s: float, received_s: float, source: str) -> ClockReading:
    """The reading from a server's reply, checked (RFC 4330 section 5): its size, mode, stratum (0 is a
    kiss-of-death), the leap indicator (3: the server is not synchronised) and the echoed time stamp."""
    if len(reply) < PACKET_BYTES:
        raise ClockSourceError(f"{source}: a reply of {len(reply)} bytes, not {PACKET_BYTES}")
    leap, mode, stratum = reply[0] >> 6, reply[0] & 0x7, reply[1]
    if mode not in _SERVER_MODES:
        raise ClockSourceError(f"{source}: the reply is not a server's (mode {mode})")
    if stratum == 0:
        code = reply[12:16].decode("ascii", "replace").strip("\x00")
        raise ClockSourceError(f"{source}: the server refused (kiss-of-death {code!r})")
    if leap == _UNSYNCHRONISED:
        raise ClockSourceError(f"{source}: the server's own clock is not synchronised")
    if reply[24:32] != request[40:48]:
        raise ClockSourceError(f"{source}: the reply does not answer our request (originate time differs)")
    server_received_s = _from_ntp(reply[32:40])
    server_sent_s = _from_ntp(reply[40:48])
    offset_s = ((server_received_s - sent_s) + (server_sent_s - received_s)) / 2
    delay_s = (received_s - sent_s) - (server_sent_s - server_received_s)
    return ClockReading(source, offset_s, max(delay_s, 0.0), received_s)


def sntp_query(host: str, port: int, *, now_s: Callable[[], float], timeout_s: float) -> ClockReading:
    """Ask ``host:port`` once (blocking: run it in a thread). ``now_s``: the table's clock."""
    source = f"sntp://{host}:{port}"
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_DGRAM)
    except OSError as error:
        raise ClockSourceError(f"{source}: cannot resolve {host!r}: {error.strerror or error}") from None
    family, kind, proto, _name, address = infos[0]
    with socket.socket(family, kind, proto) as sock:
        sock.settimeout(timeout_s)
        # A random transmit stamp's low bits would do as a nonce; the table's time is what RFC 4330
        # asks for, and the reply's echo of it is checked either way.
        sent_s = now_s()
        request = sntp_request(sent_s)[:-2] + os.urandom(2)  # the fraction's last bits: a nonce
        try:
            sock.sendto(request, address)
            while True:
                reply, peer = sock.recvfrom(512)
                if peer[:2] == address[:2]:
                    break  # anything from another address is not the server's answer
        except TimeoutError:
            raise ClockSourceError(f"{source}: no answer within {timeout_s:g} s") from None
        except OSError as error:
            raise ClockSourceError(f"{source}: {error.strerror or error}") from None
        received_s = now_s()
    return read_reply(reply, request, _from_ntp(request[40:48]), received_s, source)


def utc_text(seconds: float) -> str:
    return format_time_utc(datetime.fromtimestamp(seconds, UTC))


@dataclass(frozen=True, slots=True)
class ClockCheck:
    """What one check journals (its ``clock_offset`` entry) and whether it raises the alert."""

    entry: ClockOffset
    alert: str | None  # the alert's words, when this check starts an excursion


class ClockWatch:
    """Measures the table's clock against ``[clock] ntp_server``; ``now_s`` is the table's clock and
    ``query`` the SNTP exchange (a test may give another source). ``report`` journals a check and raises
    its alert (the daemon: on its one queue)."""

    def __init__(
        self,
        settings: ClockSection,
        *,
        now_s: Callable[[], float],
        report: Callable[[ClockCheck], Awaitable[None]],
        query: Callable[..., ClockReading] = sntp_query,
    ) -> None:
        if settings.ntp_server is None:
            raise ValueError("no [clock] ntp_server: nothing to measure against")
        server = split_ntp_server(settings.ntp_server)
        if server is None:  # the configuration refused it already
            raise ValueError(f"[clock] ntp_server: {settings.ntp_server!r}")
        self.host, self.port = server
        self.settings = settings
        self.now_s = now_s
        self._report = report
        self._query = query
        self.out_of_bound = False  # the last check was past the bound (or unreadable): alerted once
        self.last: ClockCheck | None = None

    @property
    def source(self) -> str:
        return f"sntp://{self.host}:{self.port}"

    @property
    def bound_us(self) -> int:
        return self.settings.max_offset_ms * 1000

    def judge(self, reading: ClockReading | None, error: str | None) -> ClockCheck:
        """The entry and the alert, if any, for one measurement (or its failure). Pure but for
        ``out_of_bound``, which it updates."""
        table_time_utc = utc_text(reading.table_time_s if reading is not None else self.now_s())
        if reading is None:
            unread = ClockOffset(
                source=self.source,
                offset_us=None,
                delay_us=None,
                bound_us=self.bound_us,
                within_bound=False,
                table_time_utc=table_time_utc,
                error=error or "no reading",
            )
            alert = None if self.out_of_bound else f"the time source cannot be read: {error}"
            self.out_of_bound = True
            return ClockCheck(unread, alert)
        offset_us = round(reading.offset_s * 1_000_000)
        within = abs(offset_us) <= self.bound_us
        measured = ClockOffset(
            source=self.source,
            offset_us=offset_us,
            delay_us=round(reading.delay_s * 1_000_000),
            bound_us=self.bound_us,
            within_bound=within,
            table_time_utc=table_time_utc,
        )
        alert = None
        if not within and not self.out_of_bound:
            ahead = "behind" if offset_us > 0 else "ahead of"
            alert = (
                f"the table's clock is {abs(offset_us) / 1_000_000:.3f} s {ahead} the floor's time source "
                f"{self.source} (bound {self.settings.max_offset_ms} ms)"
            )
        self.out_of_bound = not within
        return ClockCheck(measured, alert)

    async def check(self) -> ClockCheck:
        """One measurement, journaled (and alerted) through ``report``."""
        try:
            reading = await asyncio.to_thread(
                self._query, self.host, self.port, now_s=self.now_s, timeout_s=self.settings.timeout_s
            )
            result = self.judge(reading, None)
        except ClockSourceError as error:
            result = self.judge(None, str(error))
        self.last = result
        await self._report(result)
        return result

    async def run(self) -> None:
        """At start, then every check interval, for as long as the table runs."""
        while True:
            await self.check()
            await asyncio.sleep(self.settings.check_interval_s)

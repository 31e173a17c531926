"""Device URLs (docs/devices.md "Device URLs"): the one parser, used by the table configuration to check
them at start and by the transports to open them.

| form | parsed |
|---|---|
| ``/dev/ttyUSB0`` (any absolute path), ``COM3``, ``serial:///dev/ttyACM0?baudrate=57600`` | SerialUrl |
| ``socket://HOST:PORT`` | SocketUrl |
| ``usb://VID:PID?serial=SN`` (4 hex digits each) | UsbUrl |
| ``sim://NAME`` (in-process), ``sim+pty://NAME``, ``sim+usb://NAME``, ``sim+tcp://127.0.0.1:PORT`` | SimUrl |

A refusal is a ValueError whose one line starts with the URL as written and says why.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Literal
from urllib.parse import parse_qs, urlsplit

from table_names.records import FrozenRecord

DEFAULT_BAUDRATE = 115_200
MIN_BAUDRATE = 300
MAX_BAUDRATE = 4_000_000

SimTransportKind = Literal["sim", "pty", "tcp", "usb"]
SIM_SCHEMES: dict[str, SimTransportKind] = {
    "sim": "sim",
    "sim+pty": "pty",
    "sim+tcp": "tcp",
    "sim+usb": "usb",
}
URL_SCHEMES: tuple[str, ...] = ("serial", "socket", "usb", *SIM_SCHEMES)

# \Z, not $: `$` also matches before a final line break ("COM3\n" was a serial port).
_HEX4 = re.compile(r"^[0-9a-fA-F]{4}\Z")
_WINDOWS_PORT = re.compile(r"^COM\d+\Z")


class SerialUrl(FrozenRecord):
    __slots__ = ("baudrate", "path")
    path: str
    baudrate: int

    def __init__(self, path: str, baudrate: int) -> None:
        object.__setattr__(self, "path", path)
        object.__setattr__(self, "baudrate", baudrate)


class SocketUrl(FrozenRecord):
    __slots__ = ("host", "port")
    host: str
    port: int

    def __init__(self, host: str, port: int) -> None:
        object.__setattr__(self, "host", host)
        object.__setattr__(self, "port", port)


class UsbUrl(FrozenRecord):
    __slots__ = ("product_id", "serial_number", "vendor_id")
    vendor_id: int
    product_id: int
    serial_number: str | None

    def __init__(self, vendor_id: int, product_id: int, serial_number: str | None) -> None:
        object.__setattr__(self, "vendor_id", vendor_id)
        object.__setattr__(self, "product_id", product_id)
        object.__setattr__(self, "serial_number", serial_number)


class SimUrl(FrozenRecord):
    """A simulated device. ``sim://`` (transport "sim", in-process) is reached through a hub object;
    the others are served by the simulator (``flushtable sim`` or the daemon) over a pty, loopback TCP
    or a pyusb backend, and the driver is given the URL the simulator actually serves. The transport
    names are sim_devices.table's ``TransportKind``."""

    __slots__ = ("name", "tcp_port", "transport")
    name: str  # the device's name; for sim+tcp, the loopback host
    transport: SimTransportKind
    tcp_port: int | None

    def __init__(self, name: str, transport: SimTransportKind = "sim", tcp_port: int | None = None) -> None:
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "transport", transport)
        object.__setattr__(self, "tcp_port", tcp_port)


DeviceUrl = SerialUrl | SocketUrl | UsbUrl | SimUrl


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def refuse_control_characters(url: str) -> None:
    """ValueError ``'URL': ...`` (one line, naming the character) for a device path or URL holding a
    control character (below 0x20, or DEL), a final line break the likeliest. Checked on the text as
    written, before any parsing: a path takes it as part of the file's name, and urlsplit drops a tab or
    a line break anywhere and strips one at the start, so ``sim+pty://sensors\n`` parsed as the sensors
    while the configuration kept the text with its line break."""
    for char in url:
        if char < " " or char == "\x7f":
            raise ValueError(f"{url!r}: holds the control character {char!r}: {_PRINTABLE}")


_PRINTABLE = "a device path or URL is printable text"


def parse_device_url(url: str) -> DeviceUrl:  # noqa: PLR0912 - one branch per device URL scheme and field, each its own one-line error
    """Parse a device URL; ValueError ``'URL': reason`` (one line) when it is not one."""

    def bad(reason: str) -> ValueError:
        return ValueError(f"{url!r}: {reason}")

    if not url:
        raise bad("empty: a device URL is a device path or SCHEME://...")
    refuse_control_characters(url)
    if url.startswith("/") or _WINDOWS_PORT.match(url):
        return SerialUrl(url, DEFAULT_BAUDRATE)
    parts = urlsplit(url)
    if parts.scheme not in URL_SCHEMES or "://" not in url:
        raise bad(f"the scheme must be one of {', '.join(URL_SCHEMES)} (or a /dev/... path)")
    query = parse_qs(parts.query, keep_blank_values=True)

    def one(name: str) -> str | None:
        values = query.get(name)
        return values[-1] if values else None

    if parts.scheme == "serial":
        if not parts.path:
            raise bad(
                "a serial URL names the port (a device path), e.g. serial:///dev/ttyUSB0?baudrate=115200"
            )
        baud_text = one("baudrate")
        if baud_text is None:
            return SerialUrl(parts.path, DEFAULT_BAUDRATE)
        if not baud_text.isdigit() or not MIN_BAUDRATE <= int(baud_text) <= MAX_BAUDRATE:
            raise bad(f"baudrate {baud_text!r} is not a rate from {MIN_BAUDRATE} to {MAX_BAUDRATE}")
        return SerialUrl(parts.path, int(baud_text))
    if parts.scheme in ("socket", "sim+tcp"):
        try:
            host, port = parts.hostname, parts.port
        except ValueError as error:
            raise bad(f"bad port: {error} (a TCP URL is socket://HOST:PORT)") from None
        if not host or not port:
            raise bad("a TCP URL is socket://HOST:PORT with a port from 1 to 65535")
        if parts.scheme == "socket":
            return SocketUrl(host, port)
        if not is_loopback(host):
            raise bad("a simulated device listens on loopback only (sim+tcp://127.0.0.1:PORT)")
        return SimUrl(host, "tcp", port)
    if parts.scheme == "usb":
        ids = parts.netloc.split(":")
        if len(ids) != 2 or not all(_HEX4.match(part) for part in ids):
            raise bad("a USB URL is usb://VID:PID with 4 hex digits each, e.g. usb://1d50:6018?serial=S1")
        return UsbUrl(int(ids[0], 16), int(ids[1], 16), one("serial"))
    if not parts.netloc:
        raise bad(f"a simulated device URL names it, e.g. {parts.scheme}://shuffler")
    return SimUrl(parts.netloc, SIM_SCHEMES[parts.scheme])


__all__ = [
    "DEFAULT_BAUDRATE",
    "SIM_SCHEMES",
    "URL_SCHEMES",
    "DeviceUrl",
    "SerialUrl",
    "SimTransportKind",
    "SimUrl",
    "SocketUrl",
    "UsbUrl",
    "is_loopback",
    "parse_device_url",
    "refuse_control_characters",
]

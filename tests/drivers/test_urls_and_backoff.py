from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from drivers.backoff import Backoff
from drivers.transports import make_transport
from drivers.urls import SerialUrl, SimUrl, SocketUrl, UsbUrl, parse_device_url
from firmware_protocol.crypto import device_id_for_key


@pytest.mark.parametrize(
    ("url", "parsed"),
    [
        ("/dev/ttyUSB0", SerialUrl("/dev/ttyUSB0", 115200)),
        (
            "/dev/serial/by-id/usb-flushtable_shoe-if00",
            SerialUrl("/dev/serial/by-id/usb-flushtable_shoe-if00", 115200),
        ),
        ("serial:///dev/ttyACM1?baudrate=57600", SerialUrl("/dev/ttyACM1", 57600)),
        ("socket://127.0.0.1:7001", SocketUrl("127.0.0.1", 7001)),
        ("usb://1209:0001?serial=SHOE-1", UsbUrl(0x1209, 0x0001, "SHOE-1")),
        ("usb://1d50:6018", UsbUrl(0x1D50, 0x6018, None)),
        ("sim://shuffler", SimUrl("shuffler")),
        ("sim+pty://sensors", SimUrl("sensors", "pty")),
        ("sim+usb://display", SimUrl("display", "usb")),
        ("sim+tcp://127.0.0.1:7002", SimUrl("127.0.0.1", "tcp", 7002)),
    ],
)
def test_every_url_form_parses(url: str, parsed: object) -> None:
    assert parse_device_url(url) == parsed


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("", "empty"),
        ("serial://", "device path"),
        ("serial:///dev/ttyS0?baudrate=fast", "baudrate"),
        ("serial:///dev/ttyS0?baudrate=100", "from 300 to 4000000"),
        ("socket://127.0.0.1", "socket://HOST:PORT"),
        ("socket://127.0.0.1:notaport", "bad port"),
        ("usb://12:34", "4 hex digits"),
        ("usb://shuffler", "4 hex digits"),
        ("sim://", "names it"),
        ("sim+tcp://10.0.0.5:4000", "loopback only"),
        ("http://example", "the scheme must be one of"),
        # A control character anywhere, refused before parsing (urlsplit drops a line break or a tab).
        ("COM3\n", "holds the control character '\\\\n'"),  # a Windows port's name ends at its digits
        ("/dev/ttyUSB0\n", "holds the control character '\\\\n'"),
        ("usb://1d50:6018\n", "holds the control character '\\\\n'"),
        ("sim+pty://sensors\n", "holds the control character '\\\\n'"),
        ("sim+pty://sen\tsors", "holds the control character '\\\\t'"),
        ("\x00/dev/ttyUSB0", "holds the control character '\\\\x00'"),
        ("/dev/tty\x7fUSB0", "holds the control character '\\\\x7f'"),
    ],
)
def test_a_bad_url_is_refused_in_one_line_naming_the_reason(url: str, reason: str) -> None:
    with pytest.raises(ValueError, match=reason) as refused:
        parse_device_url(url)
    assert "\n" not in str(refused.value)


EVERY_FORM = [
    "/dev/ttyUSB0",
    "COM3",
    "serial:///dev/ttyACM1?baudrate=57600",
    "socket://127.0.0.1:7001",
    "usb://1209:0001?serial=SHOE-1",
    "sim://shuffler",
    "sim+pty://sensors",
    "sim+usb://display",
    "sim+tcp://127.0.0.1:7002",
]
CONTROL_CHARACTERS = [chr(code) for code in range(0x20)] + ["\x7f"]


@pytest.mark.parametrize("url", EVERY_FORM)
def test_a_control_character_anywhere_in_a_url_that_parses_is_refused(url: str) -> None:
    """Each control character (below 0x20, and DEL) at the start, in the middle or at the end of a URL
    that parses without it: refused in one line naming it (urlsplit drops a tab or a line break, strips
    one at the start, and a device path took it as part of the path)."""
    assert parse_device_url(url)
    middle = len(url) // 2
    for char in CONTROL_CHARACTERS:
        for text in (char + url, url[:middle] + char + url[middle:], url + char):
            with pytest.raises(ValueError, match="holds the control character") as refused:
                parse_device_url(text)
            assert str(refused.value) == f"{text!r}: holds the control character {char!r}: " + (
                "a device path or URL is printable text"
            ), text


def test_sim_urls_need_a_hub() -> None:
    with pytest.raises(ValueError, match="sim hub"):
        make_transport("sim://shuffler")


@given(st.integers(0, 2**32), st.floats(0.01, 1.0), st.floats(1.0, 30.0), st.floats(0.0, 0.5))
@settings(max_examples=200, deadline=None)
def test_backoff_grows_within_its_jitter_never_passes_the_cap_and_resets(
    seed: int, initial_s: float, cap_s: float, jitter: float
) -> None:
    backoff = Backoff(
        initial_s=initial_s, max_s=max(cap_s, initial_s), jitter=jitter, rng=random.Random(seed)
    )
    delays = [backoff.next_delay_s() for _ in range(40)]
    for attempt, delay in enumerate(delays):
        base = min(backoff.max_s, initial_s * 2**attempt)
        assert base * (1 - jitter) - 1e-9 <= delay <= min(backoff.max_s, base * (1 + jitter)) + 1e-9
    assert delays[-1] >= backoff.max_s * (1 - jitter) - 1e-9  # it did reach the cap
    backoff.reset()
    assert backoff.next_delay_s() <= initial_s * (1 + jitter) + 1e-9


def test_sim_urls_served_by_the_simulator_are_not_opened_by_a_driver() -> None:
    with pytest.raises(ValueError, match="the simulator serves this device"):
        make_transport("sim+pty://shuffler")


def test_the_device_id_of_a_key() -> None:
    """Known answers of docs/devices.md's derivation (one function, firmware_protocol.crypto, serves the
    drivers and the simulated firmware alike)."""
    assert device_id_for_key(bytes(32)) == 0x3E1E5702
    assert device_id_for_key(bytes(range(32))) == 0x1702C2D2

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from drivers.backoff import Backoff
from drivers.identity import device_id_for_key
from drivers.transports import SerialUrl, SimUrl, SocketUrl, UsbUrl, make_transport, parse_device_url
from sim_devices.firmware import device_id_for_key as firmware_device_id_for_key


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
        ("socket://127.0.0.1", "host:port"),
        ("socket://127.0.0.1:notaport", "host:port"),
        ("usb://12:34", "4 hex digits"),
        ("usb://shuffler", "4 hex digits"),
        ("sim://", "device name"),
        ("http://example", "unknown scheme"),
    ],
)
def test_a_bad_url_is_refused_in_one_line_naming_the_reason(url: str, reason: str) -> None:
    with pytest.raises(ValueError, match=reason) as refused:
        parse_device_url(url)
    assert "\n" not in str(refused.value)


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


def test_driver_and_firmware_derive_the_same_device_id() -> None:
    for key in (bytes(32), bytes(range(32)), b"\xff" * 32):
        assert device_id_for_key(key) == firmware_device_id_for_key(key)
        assert 1 <= device_id_for_key(key) <= 0xFFFF_FFFF

"""Shared helpers for the protocol tests: keys, seeded nonces, and a pair of linked Links."""

from __future__ import annotations

import random
from collections.abc import Callable

from firmware_protocol import DeviceIdentity, Link, LinkEvent

DEVICE_ID = 0x0000_1234
DEVICE_KEY = bytes.fromhex("000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f")
OTHER_KEY = bytes(range(100, 132))
IDENTITY = DeviceIdentity(
    device_kind="shuffler", model="FT-Shoe 2", serial_number="SN-000042", firmware_version="2.1.0"
)


def seeded_random_bytes(seed: int) -> Callable[[int], bytes]:
    rng = random.Random(seed)
    return rng.randbytes


def make_pair(seed: int = 1) -> tuple[Link, Link]:
    controller = Link.controller({DEVICE_ID: DEVICE_KEY}, random_bytes=seeded_random_bytes(seed))
    device = Link.device(DEVICE_ID, DEVICE_KEY, IDENTITY, random_bytes=seeded_random_bytes(seed + 1000))
    return controller, device


def exchange(controller: Link, device: Link, now_s: float, rounds: int = 6) -> None:
    """Pass bytes both ways until both sides are quiet (a perfect wire)."""
    for _ in range(rounds):
        to_device = controller.bytes_to_send()
        device.receive_data(to_device, now_s)
        to_controller = device.bytes_to_send()
        controller.receive_data(to_controller, now_s)
        if not to_device and not to_controller:
            return


def drain(link: Link) -> list[LinkEvent]:
    return list(link.events())


def connected_pair(seed: int = 1, now_s: float = 0.0) -> tuple[Link, Link]:
    controller, device = make_pair(seed)
    controller.connect(now_s)
    exchange(controller, device, now_s)
    assert controller.is_up
    assert device.is_up
    drain(controller)
    drain(device)
    return controller, device

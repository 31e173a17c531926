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


def make_pair(
    seed: int = 1,
    *,
    controller_versions: tuple[int, ...] = (1, 2),
    device_versions: tuple[int, ...] = (1, 2),
    window: int = 8,
) -> tuple[Link, Link]:
    """A controller and a device Link (v2 by default; pass versions=(1,) for a v1 side)."""
    controller = Link.controller(
        {DEVICE_ID: DEVICE_KEY},
        random_bytes=seeded_random_bytes(seed),
        versions=controller_versions,
        window=window,
    )
    device = Link.device(
        DEVICE_ID,
        DEVICE_KEY,
        IDENTITY,
        random_bytes=seeded_random_bytes(seed + 1000),
        versions=device_versions,
        window=window,
    )
    return controller, device


def make_v1_pair(seed: int = 1) -> tuple[Link, Link]:
    """A v2 controller and a v1 device: the session runs v1."""
    return make_pair(seed, device_versions=(1,))


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


def connected_pair(
    seed: int = 1, now_s: float = 0.0, *, version: int = 2, window: int = 8
) -> tuple[Link, Link]:
    controller, device = make_v1_pair(seed) if version == 1 else make_pair(seed, window=window)
    controller.connect(now_s)
    exchange(controller, device, now_s)
    assert controller.is_up
    assert device.is_up
    assert controller.version == device.version == version
    drain(controller)
    drain(device)
    return controller, device

"""The daemon's device side (controller/daemon_devices.py, ``DaemonDevices``) on its own: the table
daemon drives real devices only (a simulated device's URL without a link from a wrapper is refused in
one line, before any driver starts), and a command for a device the table does not have is logged,
never sent. The embedded default configuration (all its devices simulated); no device is started."""

from __future__ import annotations

import asyncio

import pytest
from structlog.testing import capture_logs

from controller.config import load_config
from controller.daemon_devices import DaemonDevices, DeviceLinks
from controller.errors import UserError
from drivers.events import DomainEvent, ShowText


def test_a_simulated_device_without_a_link_is_refused_in_one_line() -> None:
    devices = DaemonDevices()
    published: list[DomainEvent] = []
    with pytest.raises(UserError) as refused:
        asyncio.run(devices.start(load_config(None), DeviceLinks(), published.append))
    assert "is a simulated device: `flushtable run` serves simulated devices itself" in str(refused.value)
    assert "\n" not in str(refused.value)
    assert devices.drivers == {}
    assert devices.senders == []
    assert published == []


def test_a_command_for_an_unknown_device_is_logged_and_not_sent() -> None:
    devices = DaemonDevices()
    with capture_logs() as logs:
        devices.send(ShowText("nowhere", "place your bets"))
    assert [(line["event"], line["device"], line["command"]) for line in logs] == [
        ("command_for_unknown_device", "nowhere", "ShowText")
    ]
    assert devices.health() == []

"""The daemon's device side (controller/daemon_devices.py, ``DaemonDevices``) on its own: the table
daemon drives real devices only (a simulated device's URL without a link from a wrapper is refused in
one line, before any driver starts), a command for a device the table does not have is logged, never
sent, and commands queued together go out together over v2 (one at a time over v1). The embedded
default configuration (all its devices simulated); where devices run, the simulated firmware over real
pseudo-terminals with the real drivers."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from controller.config import load_config
from controller.daemon_devices import DaemonDevices, DeviceLinks
from controller.errors import UserError
from drivers.events import DomainEvent, ShowSeatResult, ShowText
from firmware_protocol import SUPPORTED_VERSIONS, Heartbeat, decode_message
from firmware_protocol.constants import KIND_DATA
from firmware_protocol.framing import DecodedFrame, FrameDecoder
from sim_devices.table import SimDeviceSpec, SimTable


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


DISPLAY = "display"  # the embedded configuration's dealer display


@contextlib.asynccontextmanager
async def _devices_on_a_sim_table(
    tmp_path: Path, versions: tuple[int, ...] = SUPPORTED_VERSIONS
) -> AsyncIterator[tuple[DaemonDevices, SimTable]]:
    """The default configuration's devices simulated over real ptys, speaking ``versions``, and the
    daemon's devices started on them; senders, drivers and devices stopped after."""
    config = load_config(None)
    specs = [
        SimDeviceSpec(name=d.name, kind=d.kind, key=bytes([i + 1]) * 32, protocol_versions=versions)
        for i, d in enumerate(config.devices.values())
    ]
    table = SimTable(specs, run_dir=tmp_path / "devices", seed=3)
    await table.start()
    devices = DaemonDevices()
    links = DeviceLinks(
        urls={spec.name: table.url(spec.name) for spec in specs},
        keys={spec.name: spec.key for spec in specs},
    )
    try:
        await devices.start(config, links, lambda _: None)
        yield devices, table
    finally:
        for sender in devices.senders:
            sender.cancel()
        await asyncio.gather(*devices.senders, return_exceptions=True)
        await devices.stop()
        await table.stop()


def _commands_per_write(written: list[bytes]) -> list[int]:
    """For each write the driver made, how many of the application's messages it carried (not ACKs,
    not heartbeats)."""
    counts = []
    for data in written:
        frames = [item.frame for item in FrameDecoder().feed(data) if isinstance(item, DecodedFrame)]
        messages = [decode_message(frame.payload) for frame in frames if frame.kind == KIND_DATA]
        counts.append(sum(1 for message in messages if not isinstance(message, Heartbeat)))
    return [count for count in counts if count]


@pytest.mark.parametrize(
    ("versions", "expected_per_write"), [((1, 2), [5]), ((1,), [1, 1, 1, 1, 1])], ids=["v2", "v1"]
)
def test_commands_queued_together_leave_in_one_write_over_v2_and_one_at_a_time_over_v1(
    tmp_path: Path, versions: tuple[int, ...], expected_per_write: list[int]
) -> None:
    """Five commands for the display queued in one go (as the engine's step queues a round's results):
    a v2 link takes them in one write, the device acknowledges them and shows the last; a v1 device
    (window 1) still gets them one at a time, each acknowledged before the next leaves."""

    async def main() -> list[int]:
        async with _devices_on_a_sim_table(tmp_path, versions) as (devices, table):
            driver = devices.drivers[DISPLAY]
            assert driver.link.version == max(versions)
            written: list[bytes] = []
            transport = driver._transport
            assert transport is not None
            write = transport.write

            def counting_write(data: bytes) -> None:
                written.append(data)
                write(data)

            transport.write = counting_write  # type: ignore[method-assign]
            display = table.dealer_display(DISPLAY)
            for seat in (1, 2, 3):
                devices.send(ShowSeatResult(DISPLAY, seat, "win", 100 * seat))
            devices.send(ShowText(DISPLAY, "Pay and collect"))
            devices.send(ShowText(DISPLAY, "Press next"))
            async with asyncio.timeout(5):  # bounded wait on the condition
                while display.text != "Press next" or driver.link.pending_count:
                    await asyncio.sleep(0.01)
            assert display.seat_results == {1: ("win", 100), 2: ("win", 200), 3: ("win", 300)}
            return _commands_per_write(written)

    with capture_logs() as logs:
        assert asyncio.run(main()) == expected_per_write
    assert not [line for line in logs if line["event"] == "command_not_delivered"]


def test_a_command_the_protocol_cannot_carry_is_logged_and_the_next_still_goes_out(tmp_path: Path) -> None:
    """A command with a field out of the protocol's range (a controller defect) is logged as
    command_not_encodable; the device's sender goes on, so the display still shows what comes after."""

    async def main() -> str:
        async with _devices_on_a_sim_table(tmp_path) as (devices, table):
            display = table.dealer_display(DISPLAY)
            devices.send(ShowSeatResult(DISPLAY, 99, "win", 100))  # seat 99: no such seat on the wire
            devices.send(ShowText(DISPLAY, "Press next"))
            async with asyncio.timeout(5):  # bounded wait on the condition
                while display.text != "Press next":
                    await asyncio.sleep(0.01)
            assert all(not sender.done() for sender in devices.senders)
            return display.text

    with capture_logs() as logs:
        assert asyncio.run(main()) == "Press next"
    refused = [line for line in logs if line["event"] == "command_not_encodable"]
    assert len(refused) == 1
    assert refused[0]["command"] == "ShowSeatResult"

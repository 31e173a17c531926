"""Each driver transport moves raw bytes both ways to a device port (no protocol): the serial:// form
and a plain path on a pty, socket:// on TCP, usb:// on the virtual bus, sim:// in process."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from drivers.events import DeviceReady, SecurityEvent
from drivers.factory import make_driver
from drivers.supervisor import DriverTiming
from drivers.transports import Transport, TransportClosed, TransportError, make_transport
from firmware_protocol.runner import LinkTiming
from sim_devices.ports import DevicePort, PtyPort, SimHub, SimPort, TcpPort
from sim_devices.usb import UsbPort, VirtualUsbBackend
from tests.device_harness.leaks import run_async
from tests.device_harness.rig import TEST_KEYS, TEST_TIME_SCALE, EventLog, table_rig


class Echo:
    """A device that answers every chunk with the same bytes, upper-cased."""

    def __init__(self, port: DevicePort) -> None:
        self.port = port
        self.ups = 0

    def wire_up(self) -> None:
        self.ups += 1

    def wire_bytes(self, data: bytes) -> None:
        self.port.send(data.upper())

    def wire_down(self) -> None:
        pass


async def read_exactly(transport: Transport, count: int) -> bytes:
    received = b""
    async with asyncio.timeout(5):
        while len(received) < count:
            received += await transport.read()
    return received


async def drain_until_closed(transport: Transport) -> None:
    async with asyncio.timeout(5):
        while True:
            await transport.read()


@pytest.mark.parametrize("form", ["serial-url", "path", "socket", "usb", "sim"])
def test_bytes_cross_every_transport_both_ways_and_an_unplug_closes_the_line(
    tmp_path: Path, form: str
) -> None:
    async def body() -> None:
        backend = VirtualUsbBackend()
        hub = SimHub()
        port: DevicePort
        if form in ("serial-url", "path"):
            port = PtyPort(link_path=tmp_path / "device")
        elif form == "socket":
            port = TcpPort()
        elif form == "usb":
            port = UsbPort(backend, vendor_id=0x1209, product_id=0x0001, serial_number="ECHO-1")
        else:
            port = SimPort()
            hub.add("echo", port)
        echo = Echo(port)
        port.attach(echo)
        await port.start()
        url = f"serial://{port.url}?baudrate=115200" if form == "serial-url" else port.url
        transport = make_transport(url, usb_backend=backend, sim_hub=hub)
        try:
            await transport.open()
            payload = bytes(range(97, 123)) * 40  # 1,040 bytes: more than one USB packet or pty chunk
            transport.write(payload)
            assert await read_exactly(transport, len(payload)) == payload.upper()
            await port.unplug()
            with pytest.raises(TransportClosed):
                await drain_until_closed(transport)
        finally:
            await transport.close()
            await port.stop()
        reopened = make_transport(url, usb_backend=backend, sim_hub=hub)
        with pytest.raises(TransportError):
            await reopened.open()  # still unplugged: refused, in one line
        await reopened.close()

    run_async(body, timeout_s=20)


def test_a_device_of_another_kind_on_the_port_is_refused(tmp_path: Path) -> None:
    async def body() -> None:
        async with table_rig("sim", tmp_path / "run", names=("display",)) as rig:
            log = EventLog()
            wrong = make_driver(
                "shuffler",
                "shuffler",
                rig.table.url("display"),
                TEST_KEYS["display"],  # the display's own key: it authenticates, but it is no shoe
                publish=log,
                timing=DriverTiming(
                    link=LinkTiming(TEST_TIME_SCALE), backoff_initial_s=0.05, backoff_max_s=0.1
                ),
                sim_hub=rig.table.sim_hub,
            )
            wrong.start()
            try:
                alert = await log.wait_for(SecurityEvent)
                assert alert.reason == "wrong_device_kind"
                assert "dealer_display" in alert.detail
                assert not log.of(DeviceReady)
                assert wrong.state != "ready"
            finally:
                await wrong.stop()

    run_async(body, timeout_s=20)

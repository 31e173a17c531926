"""A simulated table: its devices, each on its own port, started and stopped together.

Used by ``flushtable sim``, the tests and the benchmarks. Each device is served over one transport:
``pty`` (a raw pseudo-terminal, with a stable symlink in ``run_dir``), ``tcp`` (127.0.0.1), ``usb``
(the VirtualUsbBackend given) or ``sim`` (the SimHub given).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from firmware_protocol.vocabulary import DeviceKind
from sim_devices.bet_sensors import SimulatedBetSensors
from sim_devices.dealer_display import SimulatedDealerDisplay
from sim_devices.firmware import DeviceOptions, LinkTiming, SimulatedDevice
from sim_devices.noise import NoiseManipulator, NoiseRates
from sim_devices.ports import DevicePort, PtyPort, SimHub, SimPort, TcpPort
from sim_devices.shuffler import SimulatedShuffler
from sim_devices.usb import UsbPort, VirtualUsbBackend

TransportKind = Literal["pty", "tcp", "usb", "sim"]
DeviceKindName = DeviceKind  # the wire's device kinds (firmware_protocol.messages)
TRANSPORT_KINDS: tuple[TransportKind, ...] = ("pty", "tcp", "usb", "sim")
# pid.codes' test VID/PIDs: for simulations only, never for a product.
SIM_USB_VENDOR_ID = 0x1209
SIM_USB_PRODUCT_IDS: dict[str, int] = {"shuffler": 0x0001, "bet_sensors": 0x0002, "dealer_display": 0x0003}


@dataclass(frozen=True, slots=True)
class SimDeviceSpec:
    name: str
    kind: DeviceKindName
    key: bytes
    transport: TransportKind = "pty"
    serial_number: str = ""
    tcp_port: int = 0  # 0: any free port
    seats: int = 6
    spots: int = 4
    card_interval_s: float = 0.0
    protocol_versions: tuple[int, ...] = (1, 2)  # (1,): the v1 firmware, kept to test v1 interop


@dataclass(slots=True)
class SimTable:
    specs: list[SimDeviceSpec]
    run_dir: Path
    timing: LinkTiming = field(default_factory=LinkTiming)
    seed: int | None = None
    noise: NoiseRates | None = None  # the same rates on every device, both directions
    usb_backend: VirtualUsbBackend = field(default_factory=VirtualUsbBackend)
    sim_hub: SimHub = field(default_factory=SimHub)
    devices: dict[str, SimulatedDevice] = field(default_factory=dict)
    ports: dict[str, DevicePort] = field(default_factory=dict)

    def _make_device(self, spec: SimDeviceSpec, index: int) -> SimulatedDevice:
        seed = None if self.seed is None else self.seed + index
        serial = spec.serial_number or f"SIM-{spec.name.upper()}-{index + 1:04d}"
        options = DeviceOptions(
            serial_number=serial, timing=self.timing, seed=seed, protocol_versions=spec.protocol_versions
        )
        if spec.kind == "shuffler":
            return SimulatedShuffler(key=spec.key, card_interval_s=spec.card_interval_s, **options)
        if spec.kind == "bet_sensors":
            return SimulatedBetSensors(key=spec.key, seats=spec.seats, spots=spec.spots, **options)
        return SimulatedDealerDisplay(key=spec.key, **options)

    def _noise(self, index: int, direction: int) -> NoiseManipulator | None:
        if self.noise is None or self.noise.clean:
            return None
        seed = None if self.seed is None else self.seed * 1000 + index * 10 + direction
        return NoiseManipulator(self.noise, seed=seed)

    def _make_port(self, spec: SimDeviceSpec, index: int, device: SimulatedDevice) -> DevicePort:
        noise_out, noise_in = self._noise(index, 0), self._noise(index, 1)
        if spec.transport == "pty":
            return PtyPort(link_path=self.run_dir / spec.name, noise_out=noise_out, noise_in=noise_in)
        if spec.transport == "tcp":
            return TcpPort(port=spec.tcp_port, noise_out=noise_out, noise_in=noise_in)
        if spec.transport == "usb":
            return UsbPort(
                self.usb_backend,
                vendor_id=SIM_USB_VENDOR_ID,
                product_id=SIM_USB_PRODUCT_IDS[spec.kind],
                serial_number=device.identity.serial_number,
                product=f"flushtable simulated {spec.kind}",
                noise_out=noise_out,
                noise_in=noise_in,
            )
        port = SimPort(noise_out=noise_out, noise_in=noise_in)
        self.sim_hub.add(spec.name, port)
        return port

    async def start(self) -> None:
        self.run_dir.mkdir(parents=True, exist_ok=True)
        try:
            for index, spec in enumerate(self.specs):
                device = self._make_device(spec, index)
                port = self._make_port(spec, index, device)
                self.devices[spec.name] = device
                self.ports[spec.name] = port
                await device.serve(port)
        except BaseException:
            await self.stop()
            raise

    async def stop(self) -> None:
        await asyncio.gather(*(device.stop() for device in self.devices.values()), return_exceptions=True)

    def url(self, name: str) -> str:
        return self.ports[name].url

    def shuffler(self, name: str = "shuffler") -> SimulatedShuffler:
        device = self.devices[name]
        assert isinstance(device, SimulatedShuffler)
        return device

    def bet_sensors(self, name: str = "sensors") -> SimulatedBetSensors:
        device = self.devices[name]
        assert isinstance(device, SimulatedBetSensors)
        return device

    def dealer_display(self, name: str = "display") -> SimulatedDealerDisplay:
        device = self.devices[name]
        assert isinstance(device, SimulatedDealerDisplay)
        return device

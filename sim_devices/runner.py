"""``flushtable sim``: serve a simulated table's devices until stopped, playing a scenario.

With no configuration the table is the embedded default: a shuffler, bet sensors for 6 seats x 4 spots
and a dealer display, each on its own pseudo-terminal (a stable symlink in the run directory), with
fixed development keys that are printed (never use them on a real table). With a table configuration,
every device whose URL is ``sim+pty://NAME`` or ``sim+tcp://127.0.0.1:PORT`` is served that way with its
configured key (a simulated device configured without a key gets a fresh random one, printed).
``sim+usb://`` devices exist only inside the daemon's process (a pyusb backend is an object, not a bus
other processes can see); ``flushtable sim`` refuses them with that reason.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import secrets
import signal
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from firmware_protocol.vocabulary import DEVICE_KINDS
from sim_devices.bet_sensors import SimulatedBetSensors
from sim_devices.dealer_display import SimulatedDealerDisplay
from sim_devices.firmware import LinkTiming, SimulatedDevice
from sim_devices.ports import PtyPort
from sim_devices.scenario import Scenario, Step, play
from sim_devices.shuffler import SimulatedShuffler
from sim_devices.table import DeviceKindName, SimDeviceSpec, SimTable

DEFAULT_SEATS = 6
DEFAULT_SPOTS = 4


def development_key(name: str) -> bytes:
    """The fixed key of the default table's device ``name``: public, for development only."""
    return hashlib.sha256(b"flushtable development key, never for a real table: " + name.encode()).digest()


def default_specs() -> list[SimDeviceSpec]:
    return [
        SimDeviceSpec("shuffler", "shuffler", development_key("shuffler")),
        SimDeviceSpec(
            "sensors", "bet_sensors", development_key("sensors"), seats=DEFAULT_SEATS, spots=DEFAULT_SPOTS
        ),
        SimDeviceSpec("display", "dealer_display", development_key("display")),
    ]


@dataclass(frozen=True, slots=True)
class ConfiguredDevice:
    """What ``flushtable sim`` needs of a configured device. The controller parses the URL (its one
    parser, drivers/urls.py) and says how a simulated device is served: ``transport`` "pty", "tcp"
    (on ``tcp_port``), "usb" or "sim" (in-process): sim_devices.table's TransportKind; None for a real
    device."""

    name: str
    kind: str
    url: str
    key: bytes | None
    transport: str | None = None
    tcp_port: int | None = None


def specs_from_devices(
    devices: Iterable[ConfiguredDevice], *, seats: int = DEFAULT_SEATS, spots: int = DEFAULT_SPOTS
) -> list[SimDeviceSpec]:
    """The simulated devices of a configuration; ValueError naming the device and the reason."""
    specs: list[SimDeviceSpec] = []
    for device in devices:
        if device.transport is None:
            continue  # a real device: nothing to simulate
        if device.kind not in DEVICE_KINDS:
            raise ValueError(f"devices.{device.name}.kind: {device.kind!r} is not a device kind")
        kind: DeviceKindName = device.kind
        key = device.key if device.key is not None else secrets.token_bytes(32)
        if device.transport == "pty":
            specs.append(SimDeviceSpec(device.name, kind, key, transport="pty", seats=seats, spots=spots))
        elif device.transport == "tcp" and device.tcp_port is not None:
            specs.append(
                SimDeviceSpec(
                    device.name,
                    kind,
                    key,
                    transport="tcp",
                    tcp_port=device.tcp_port,
                    seats=seats,
                    spots=spots,
                )
            )
        else:
            raise ValueError(
                f"devices.{device.name}.url: {device.url!r}: only the daemon itself can host "
                f"{device.url.partition('://')[0]}:// devices (in its own process); "
                "flushtable sim serves sim+pty:// and sim+tcp://"
            )
    if not specs:
        raise ValueError("devices: no simulated device (sim+pty:// or sim+tcp://) in the configuration")
    return specs


def describe(table: SimTable, specs: list[SimDeviceSpec]) -> list[str]:
    lines: list[str] = []
    for spec in specs:
        device = table.devices[spec.name]
        port = table.ports[spec.name]
        where = port.url
        if isinstance(port, PtyPort):
            where = f"{port.url} -> {port.slave_name}"
        lines.append(
            f"{spec.name}: {spec.kind} {device.identity.serial_number} listening on {where}"
            f" (device_id {device.device_id:#010x})"
        )
    lines.append("")
    lines.append("# For the controller's table configuration (these keys are for this simulation only):")
    for spec in specs:
        lines += [
            f"[devices.{spec.name}]",
            f'kind = "{spec.kind}"',
            f'url = "{table.ports[spec.name].url}"',
            f'key = "{spec.key.hex()}"',
            "",
        ]
    return lines


async def serve_table(  # noqa: PLR0913 - keyword-only options of `flushtable sim`, each a command-line option
    specs: list[SimDeviceSpec],
    run_dir: Path,
    *,
    out: TextIO,
    scenario: Scenario | None = None,
    seed: int | None = None,
    time_scale: float = 1.0,
    duration_s: float | None = None,
) -> None:
    """Serve until SIGINT/SIGTERM (or ``duration_s``), playing ``scenario`` (checked whole by the caller,
    against ``firmware_classes``: controller/simulation/scenario.py reads the file)."""
    table = SimTable(specs, run_dir=run_dir, timing=LinkTiming(time_scale), seed=seed)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signal_number in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(signal_number, stop.set)
    await table.start()
    player: asyncio.Task[None] | None = None
    try:
        for line in describe(table, specs):
            print(line, file=out)
        print(
            "serving; Ctrl-C stops" if duration_s is None else f"serving for {duration_s:g} s",
            file=out,
            flush=True,
        )

        def report(step: Step, error: str | None) -> None:
            values = " ".join(f"{key}={value}" for key, value in step.fields.items())
            outcome = f"  REFUSED: {error}" if error else ""
            print(
                f"t={step.at_s:.2f}s {step.device} {step.action} {values}{outcome}".rstrip(),
                file=out,
                flush=True,
            )

        if scenario is not None:
            player = loop.create_task(play(scenario, table.devices, on_step=report), name="scenario")
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(duration_s):
                await stop.wait()
    finally:
        if player is not None:
            player.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await player
        await table.stop()
        for signal_number in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.remove_signal_handler(signal_number)
        print("stopped", file=out, flush=True)


def firmware_class(kind: str) -> type[SimulatedDevice]:
    classes: dict[str, type[SimulatedDevice]] = {
        "shuffler": SimulatedShuffler,
        "bet_sensors": SimulatedBetSensors,
        "dealer_display": SimulatedDealerDisplay,
    }
    return classes[kind]

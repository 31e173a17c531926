"""A simulated table and its drivers, wired together over one transport kind, for tests and benches."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from drivers.events import DomainEvent
from drivers.factory import make_driver
from drivers.supervisor import DeviceDriver, DriverTiming
from sim_devices.firmware import LinkTiming
from sim_devices.noise import NoiseRates
from sim_devices.table import DeviceKindName, SimDeviceSpec, SimTable, TransportKind

E = TypeVar("E")
# Tests run the protocol's clock 8x fast: heartbeat every 125 ms, link down after 375 ms of silence.
TEST_TIME_SCALE = 8.0
TEST_KEYS = {
    "shuffler": bytes(range(32)),
    "sensors": bytes(range(32, 64)),
    "display": bytes(range(64, 96)),
}
# The default bound on every wait for an event or a ready driver: only a failing test waits this long,
# and a loaded 2-core machine can take seconds for what takes milliseconds on a quiet one.
WAIT_S = 30.0
KIND_OF: dict[str, DeviceKindName] = {
    "shuffler": "shuffler",
    "sensors": "bet_sensors",
    "display": "dealer_display",
}


class EventLog:
    """Collects published domain events; awaits them with a bound, never by sleeping."""

    def __init__(self) -> None:
        self.events: list[DomainEvent] = []
        self._changed = asyncio.Event()

    def __call__(self, event: DomainEvent) -> None:
        self.events.append(event)
        self._changed.set()

    def of(self, kind: type[E]) -> list[E]:
        return [event for event in self.events if isinstance(event, kind)]

    async def wait_for(
        self,
        kind: type[E],
        predicate: Callable[[E], bool] | None = None,
        *,
        timeout_s: float = WAIT_S,
        since: int = 0,
    ) -> E:
        """The first event of ``kind`` (from index ``since``) that satisfies ``predicate``."""
        async with asyncio.timeout(timeout_s):
            while True:
                for event in self.events[since:]:
                    if isinstance(event, kind) and (predicate is None or predicate(event)):
                        return event
                self._changed.clear()
                await self._changed.wait()

    async def wait_count(self, kind: type[E], count: int, *, timeout_s: float = WAIT_S) -> list[E]:
        async with asyncio.timeout(timeout_s):
            while len(self.of(kind)) < count:
                self._changed.clear()
                await self._changed.wait()
        return self.of(kind)


@dataclass
class Rig:
    table: SimTable
    drivers: dict[str, DeviceDriver] = field(default_factory=dict)
    log: EventLog = field(default_factory=EventLog)


@contextlib.asynccontextmanager
async def table_rig(
    transport: TransportKind,
    run_dir: Path,
    *,
    names: tuple[str, ...] = ("shuffler", "sensors", "display"),
    seed: int = 7,
    time_scale: float = TEST_TIME_SCALE,
    noise: NoiseRates | None = None,
    card_interval_s: float = 0.0,
    driver_timing: DriverTiming | None = None,
    protocol_versions: tuple[int, ...] = (1, 2),
) -> AsyncIterator[Rig]:
    """``protocol_versions=(1,)`` serves the v1 firmware (the drivers speak v1 and v2 always)."""
    specs = [
        SimDeviceSpec(
            name=name,
            kind=KIND_OF[name],
            key=TEST_KEYS[name],
            transport=transport,
            card_interval_s=card_interval_s,
            protocol_versions=protocol_versions,
        )
        for name in names
    ]
    table = SimTable(specs, run_dir=run_dir, timing=LinkTiming(time_scale), seed=seed, noise=noise)
    rig = Rig(table)
    timing = driver_timing or DriverTiming(
        link=LinkTiming(time_scale),
        backoff_initial_s=0.02,
        backoff_max_s=0.2,
        connect_timeout_s=2.0,
        # A v2 command accepted before its device went silent is delivered after the reconnect, within
        # this of its send (test_back_to_back: 1.5 s of silence, then a handshake): 3 s left a loaded
        # machine 1.5 s for the reconnect; only a failing send waits the whole bound.
        request_timeout_s=10.0,
    )
    await table.start()
    try:
        for name in names:
            rig.drivers[name] = make_driver(
                name,
                KIND_OF[name],
                table.url(name),
                TEST_KEYS[name],
                publish=rig.log,
                timing=timing,
                usb_backend=table.usb_backend,
                sim_hub=table.sim_hub,
            )
            rig.drivers[name].start()
        for driver in rig.drivers.values():
            await driver.wait_ready(timeout_s=WAIT_S)
        yield rig
    finally:
        for driver in rig.drivers.values():
            await driver.stop()
        await table.stop()

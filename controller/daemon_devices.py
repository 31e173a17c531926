"""The table daemon's device side (controller/daemon.py): a driver for each configured device
(drivers/), the per-device send queues the engine's commands go out on, and the devices' health for
the panel. The drivers' domain events go to the daemon's one queue through ``publish``; their forged
and replayed frames within a noise budget (``DeviceNoise``)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import structlog

from controller.config import TableConfig
from controller.engine import JournalRecord
from controller.errors import UserError
from controller.journal.noise import (
    FORGED_FRAME,
    OTHER_SOURCES,
    NoiseBudget,
    NoiseSummary,
    utc_text,
)
from drivers.events import DomainCommand, DomainEvent, SecurityEvent
from drivers.factory import make_driver
from drivers.supervisor import (
    DeviceDriver,
    DeviceHealth,
    DeviceUnavailable,
    DriverTiming,
    PendingCommand,
)

log = structlog.get_logger("flushtable.daemon")

DEVICE_READY_TIMEOUT_S = 15.0


@dataclass(frozen=True, slots=True)
class DeviceLinks:
    """Devices served by someone else than their configuration says (the simulation harness): the URL
    and key each device's driver uses instead, and the in-process hubs its transports reach."""

    urls: Mapping[str, str] = field(default_factory=dict)
    keys: Mapping[str, bytes] = field(default_factory=dict)
    usb_backend: Any = None
    sim_hub: Any = None


class DaemonDevices:
    """The table's devices while it runs: their drivers, each with a queue of commands sent in the
    engine's order (those queued together, together: see ``_command_sender``)."""

    def __init__(self) -> None:
        self.drivers: dict[str, DeviceDriver] = {}
        self._command_queues: dict[str, asyncio.Queue[DomainCommand]] = {}
        self.senders: list[asyncio.Task[None]] = []  # one per device; the daemon cancels them

    async def start(
        self, config: TableConfig, links: DeviceLinks, publish: Callable[[DomainEvent], None]
    ) -> None:
        """Start every configured device's driver and sender; wait (bounded) until they are ready."""
        for device in config.devices.values():
            url = links.urls.get(device.name, device.url)
            key = links.keys.get(device.name, device.key)
            if device.simulated and device.name not in links.urls:
                raise UserError(
                    f"devices.{device.name}: {device.url} is a simulated device: `flushtable run` serves "
                    "simulated devices itself; a table daemon alone drives real devices only"
                )
            if key is None:
                raise UserError(f"devices.{device.name}: no key")
            driver = make_driver(
                device.name,
                device.kind,
                url,
                key,
                publish=publish,
                timing=DriverTiming(),
                usb_backend=links.usb_backend,
                sim_hub=links.sim_hub,
            )
            self.drivers[device.name] = driver
            queue: asyncio.Queue[DomainCommand] = asyncio.Queue()
            self._command_queues[device.name] = queue
            driver.start()
            self.senders.append(
                asyncio.get_running_loop().create_task(
                    self._command_sender(driver, queue), name=f"send {device.name}"
                )
            )
            log.info("device_listening", device=device.name, kind=device.kind, url=url)
        try:
            await asyncio.gather(
                *(driver.wait_ready(DEVICE_READY_TIMEOUT_S) for driver in self.drivers.values())
            )
        except TimeoutError:
            missing = [name for name, driver in self.drivers.items() if not driver.ready]
            # Not fatal: a device may come later. The engine starts no round while one is lost.
            log.warning("devices_not_ready", devices=missing, timeout_s=DEVICE_READY_TIMEOUT_S)

    def send(self, command: DomainCommand) -> None:
        """A committed command onto its device's send queue."""
        queue = self._command_queues.get(command.device)
        if queue is None:
            log.error("command_for_unknown_device", device=command.device, command=type(command).__name__)
        else:
            queue.put_nowait(command)

    async def _command_sender(self, driver: DeviceDriver, queue: asyncio.Queue[DomainCommand]) -> None:
        """Commands to one device go out in the engine's order, each acknowledged. What queued up
        meanwhile goes out together, up to the link's window: the link delivers in order and exactly
        once, so a command need not wait for the one before it to be acknowledged, and the commands of
        one engine step (a seat's lamps, the results shown) leave in one write and come back acknowledged
        by one ACK instead of a round trip each. A v1 link (window 1) still sends one at a time."""
        while True:
            batch = [await queue.get()]
            while len(batch) < driver.link.window and not queue.empty():
                batch.append(queue.get_nowait())
            submitted: list[tuple[DomainCommand, PendingCommand]] = []
            for command in batch:
                try:
                    submitted.append((command, driver.submit(command)))
                except DeviceUnavailable as error:
                    self._not_delivered(driver, command, error)
                except ValueError as error:
                    # A field the protocol cannot carry is the controller's own defect, not the device's:
                    # said loudly, and the commands after it still go out (the sender must not die).
                    log.error(
                        "command_not_encodable",
                        device=driver.name,
                        command=type(command).__name__,
                        error=str(error),
                    )
            for command, pending in submitted:
                try:
                    await driver.wait_acknowledged(pending)
                except DeviceUnavailable as error:
                    self._not_delivered(driver, command, error)

    @staticmethod
    def _not_delivered(driver: DeviceDriver, command: DomainCommand, error: DeviceUnavailable) -> None:
        # The driver has published DeviceLost; the engine holds the round if it matters.
        log.error(
            "command_not_delivered", device=driver.name, command=type(command).__name__, error=str(error)
        )

    def health(self) -> list[DeviceHealth]:
        """The panel's view of the links."""
        return [driver.health for driver in self.drivers.values()]

    async def stop(self) -> None:
        for driver in self.drivers.values():
            await driver.stop()


class DeviceNoise:
    """Forged and replayed frames (security events) per device within a budget (journal/noise.py): past
    its budget a device's are only counted, and journaled as a noise_suppressed summary. Its doors:
    ``journal`` (the daemon's ledger, records to commit) and ``clock`` (the budget's, monotonic)."""

    def __init__(self, journal: Callable[[list[JournalRecord]], None], clock: Callable[[], float]) -> None:
        self._journal = journal
        self._clock = clock
        self.budget = NoiseBudget()

    def admit(self, event: SecurityEvent) -> bool:
        """Whether a forged or replayed frame goes to the engine (a security_event entry and an alert):
        within its device's noise budget, yes; past it, it is only counted for a noise_suppressed
        summary (journaled where the entry would have been, with the device as its source)."""
        now = utc_text(datetime.now(UTC))
        verdict = self.budget.admit(FORGED_FRAME, event.device, self._clock(), now)
        self.journal_summaries(verdict.summaries)
        return verdict.journal

    def tick(self) -> None:
        """The summaries that are due."""
        self.journal_summaries(self.budget.due(self._clock()))

    def flush(self) -> None:
        """Every summary, due or not (the shutdown: nothing counted is left behind)."""
        self.journal_summaries(self.budget.flush())

    def journal_summaries(self, summaries: Sequence[NoiseSummary]) -> None:
        if summaries:
            self._journal(
                [
                    JournalRecord.typed(
                        summary.entry(), None, "engine" if summary.source == OTHER_SOURCES else summary.source
                    )
                    for summary in summaries
                ]
            )

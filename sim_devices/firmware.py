"""The firmware core every simulated device shares: the device-side protocol Link on a port.

This is the same ``firmware_protocol.Link`` the controller runs, in its device role, driven by the same
``firmware_protocol.runner.LinkRunner`` the drivers use: the simulated device is real firmware logic,
not canned replies. The class here owns an outbox of application messages emitted while the link is
not up (they go out in order once it is), the answer to the controller's StatusQuery, and the two
misbehaviours every device can show: going silent and being unplugged.

A v2 device (the default) keeps one Link for life, so its stream survives every reconnect: the Link
resends exactly what the controller lacks, and the firmware never resends anything itself.
``protocol_versions=(1,)`` makes the v1 firmware kept for interoperability: it speaks v1 only, and, as
v1 firmware did, puts what the link handed back unacknowledged at the front of its outbox again (so a
v1 device may repeat a message across a reconnect; v1 has no way to know).
``power_cycle()`` is the other kind of loss: a new Link (a new stream), and the device's state gone.

Subclasses (shuffler, bet sensors, dealer display) implement ``on_message`` and ``on_link_up``, and
may add to ``status_report`` (the shoe reports its deal there).
"""

from __future__ import annotations

import asyncio
import random
import secrets
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypedDict

from firmware_protocol import (
    SUPPORTED_VERSIONS,
    DeviceIdentity,
    ErrorReport,
    Link,
    LinkDown,
    LinkEvent,
    LinkUp,
    Message,
    MessageAcked,
    MessageReceived,
    MessageRejected,
    SecurityAlert,
    Status,
    StatusQuery,
    StatusReport,
)
from firmware_protocol.constants import DEFAULT_WINDOW, MAX_SEND_QUEUE
from firmware_protocol.crypto import device_id_for_key
from firmware_protocol.runner import LinkRunner, LinkTiming
from firmware_protocol.vocabulary import DeviceKind, DeviceState, LampColour
from sim_devices.ports import DevicePort

__all__ = ["LinkTiming", "SimulatedDevice"]

# How many application messages the firmware lets the link hold (queued + in flight) at once; the rest
# wait in the outbox. Under the link's MAX_SEND_QUEUE, so send() is never refused.
LINK_QUEUE_MESSAGES = MAX_SEND_QUEUE // 2
_LAMP_FOR_STATE: dict[DeviceState, LampColour] = {"ready": "green", "busy": "amber", "fault": "red"}


@dataclass(slots=True)
class FirmwareCounters:
    sessions: int = 0
    messages_received: int = 0
    messages_sent: int = 0
    messages_dropped: int = 0  # given up by the link at a handshake (LinkUp.dropped)
    security_alerts: list[SecurityAlert] = field(default_factory=list)
    links_down: list[str] = field(default_factory=list)


class DeviceOptions(TypedDict, total=False):
    """The options every simulated device takes besides its key (``SimulatedDevice``'s keywords): a
    kind of device names only its own, and passes these on whole."""

    serial_number: str
    device_id: int | None
    firmware_version: str
    timing: LinkTiming | None
    seed: int | None
    protocol_versions: tuple[int, ...]
    window: int


class SimulatedDevice:
    """Device-side firmware: a Link on a DevicePort, driven by a LinkRunner."""

    KIND: DeviceKind = "shuffler"
    MODEL = "SIM"
    SERIAL_NUMBER = "SIM-0001"  # a kind's serial number when the scenario names none

    def __init__(  # noqa: PLR0913 - keyword-only options of a simulated device, each a scenario knob
        self,
        *,
        key: bytes,
        serial_number: str | None = None,
        device_id: int | None = None,
        firmware_version: str = "1.0.0",
        timing: LinkTiming | None = None,
        seed: int | None = None,
        protocol_versions: tuple[int, ...] = SUPPORTED_VERSIONS,
        window: int = DEFAULT_WINDOW,
    ) -> None:
        self.key = key
        self.device_id = device_id if device_id is not None else device_id_for_key(key)
        self.identity = DeviceIdentity(
            device_kind=self.KIND,
            model=self.MODEL,
            serial_number=self.SERIAL_NUMBER if serial_number is None else serial_number,
            firmware_version=firmware_version,
        )
        self.timing = timing or LinkTiming()
        self.protocol_versions = protocol_versions
        self.window = window
        # Seeded nonces make a test reproducible; without a seed the OS's CSPRNG makes them.
        self._nonce_rng = random.Random(seed) if seed is not None else None
        self.port: DevicePort | None = None
        self.outbox: deque[Message] = deque()
        self.counters = FirmwareCounters()
        self.silent = False
        self.state: DeviceState = "ready"
        self.fault_code = 0
        self.lamp: LampColour = "green"
        self._tasks: set[asyncio.Task[None]] = set()
        self.on_link_event: Callable[[object], None] | None = None  # for tests that watch the firmware
        self.link, self.runner = self._new_link()

    def _new_link(self) -> tuple[Link, LinkRunner]:
        link = Link.device(
            self.device_id,
            self.key,
            self.identity,
            random_bytes=self._random_bytes,
            versions=self.protocol_versions,
            window=self.window,
        )
        runner = LinkRunner(link, self.timing, on_event=self._on_link_event, before_write=self._fill_link)
        return link, runner

    def _random_bytes(self, count: int) -> bytes:
        if self._nonce_rng is not None:
            return self._nonce_rng.randbytes(count)
        return secrets.token_bytes(count)

    # --- life ---------------------------------------------------------------------------------------
    async def serve(self, port: DevicePort) -> None:
        """Attach to ``port`` and plug it in."""
        self.port = port
        port.attach(self)
        self.runner.attach(self._write)
        await port.start()

    async def stop(self) -> None:
        """Unplug and cancel every timer and task of this device."""
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        self.runner.close()
        if self.port is not None:
            await self.port.stop()

    def spawn(self, coro: object, name: str) -> asyncio.Task[None]:
        """Run a firmware activity (a deal, a script step) as a task this device owns and cancels."""
        task: asyncio.Task[None] = asyncio.get_running_loop().create_task(coro, name=name)  # type: ignore[arg-type]
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def now_s(self) -> float:
        """The link's clock: the loop's monotonic clock, scaled."""
        return self.runner.now_s()

    def _write(self, data: bytes) -> None:
        if self.port is not None:
            self.port.send(data)  # lost when unplugged, as on a real cable

    # --- misbehaviour every device can show -------------------------------------------------------------
    def go_silent(self, duration_s: float) -> asyncio.Task[None]:
        """Firmware hangs from now: nothing in, nothing out, for ``duration_s``; then it carries on.
        Returns the task that ends the silence (await it to wait for the device to come back)."""
        self.silent = True
        self.runner.pause()
        return self.spawn(self._end_silence_after(duration_s), "device-silence")

    async def _end_silence_after(self, duration_s: float) -> None:
        try:
            await asyncio.sleep(duration_s)
        finally:
            self.silent = False
            self.runner.resume()

    async def unplug_for(self, duration_s: float) -> None:
        """The cable is pulled for ``duration_s`` (the device keeps its power and its state)."""
        assert self.port is not None
        await self.port.unplug()
        await asyncio.sleep(duration_s)
        await self.port.plug()

    async def power_off_for(self, duration_s: float) -> None:
        """The cable is pulled and the power cut for ``duration_s``: back with nothing remembered."""
        assert self.port is not None
        await self.port.unplug()
        self.power_cycle()
        await asyncio.sleep(duration_s)
        await self.port.plug()

    def power_cycle(self) -> None:
        """The device loses power and boots again: a new Link (a new stream: nothing it sent before is
        resent, nothing the controller sent before is known), the outbox gone. Subclasses also forget
        what they were doing (``on_power_cycle``)."""
        self.runner.close()
        self.outbox.clear()
        self.on_power_cycle()
        self.link, self.runner = self._new_link()
        if self.port is not None:
            self.runner.attach(self._write)

    # --- WireListener -------------------------------------------------------------------------------
    def wire_up(self) -> None:
        pass  # the controller speaks first (AuthChallenge); nothing to do until it does

    def wire_bytes(self, data: bytes) -> None:
        self.runner.feed(data)

    def wire_down(self) -> None:
        if not self.silent:
            self.runner.connection_lost("port_closed")

    # --- sending ------------------------------------------------------------------------------------
    def emit(self, message: Message) -> None:
        """Send an application message: now if the link has room, else when it has (even after a
        reconnect). Nothing emitted is ever dropped by the firmware."""
        self.outbox.append(message)
        self.runner.pump()

    def set_status(self, state: DeviceState, fault_code: int = 0, lamp: LampColour | None = None) -> None:
        self.state = state
        self.fault_code = fault_code if state == "fault" else 0
        if lamp is not None:
            self.lamp = lamp
        else:
            self.lamp = _LAMP_FOR_STATE[state]
        self.emit(Status(state=self.state, fault_code=self.fault_code, lamp=self.lamp))

    def refuse(self, seq: int, code: int, detail: str) -> None:
        self.emit(ErrorReport(code=code, refused_seq=seq, detail=detail[:64]))

    # --- the runner's callbacks -------------------------------------------------------------------------
    def _on_link_event(self, event: LinkEvent) -> None:
        if self.on_link_event is not None:
            self.on_link_event(event)
        if isinstance(event, LinkUp):
            self.counters.sessions += 1
            # What the link gave up was for a controller that is gone (it restarted and does not know
            # our stream) or that speaks only v1: it describes a past the new session does not share,
            # so it is not sent again (the controller asks for our state instead).
            self.counters.messages_dropped += len(event.dropped)
            self.on_link_up()
        elif isinstance(event, MessageReceived):
            self.counters.messages_received += 1
            if isinstance(event.message, StatusQuery):
                self.emit(self.status_report())
            else:
                self.on_message(event.message, event.seq)
        elif isinstance(event, LinkDown):
            self.counters.links_down.append(event.reason)
            # v1 only (v2 keeps them in the link): what the controller never acknowledged goes out
            # again, first and in order, next session. v1 cannot tell whether the first of them arrived.
            self.outbox.extendleft(message for _, message in reversed(event.unacknowledged))
        elif isinstance(event, SecurityAlert):
            self.counters.security_alerts.append(event)
        elif isinstance(event, MessageRejected | MessageAcked):
            pass

    def _fill_link(self) -> None:
        link = self.link
        if not link.is_up:
            return
        now_s = self.runner.now_s()
        while self.outbox and link.pending_count < LINK_QUEUE_MESSAGES:
            link.send(self.outbox.popleft(), now_s)
            self.counters.messages_sent += 1

    # --- for subclasses --------------------------------------------------------------------------------
    def on_link_up(self) -> None:
        """A controller authenticated. A v1 controller learns our state from a Status now; a v2
        controller asks (StatusQuery) and gets a StatusReport."""
        if self.link.version == 1:
            self.emit(Status(state=self.state, fault_code=self.fault_code, lamp=self.lamp))

    def status_report(self) -> StatusReport:
        """The answer to a StatusQuery (the shoe adds its deal)."""
        return StatusReport(state=self.state, fault_code=self.fault_code, lamp=self.lamp)

    def on_power_cycle(self) -> None:
        """Forget what a power cut forgets (subclasses)."""
        self.state, self.fault_code, self.lamp = "ready", 0, "green"

    def on_message(self, message: Message, seq: int) -> None:
        raise NotImplementedError

"""The firmware core every simulated device shares: the device-side protocol Link on a port.

This is the same ``firmware_protocol.Link`` the controller runs, in its device role: the simulated
device is real firmware logic, not canned replies. The class here owns the link's clock and timers
(asyncio callbacks), an outbox of application messages that outlives a session (what was not
acknowledged when the link went down is sent again after the next handshake, in order), and the two
misbehaviours every device can show: going silent and being unplugged.

Subclasses (shuffler, bet sensors, dealer display) implement ``on_message`` and ``on_link_up``.
"""

from __future__ import annotations

import asyncio
import hashlib
import random
import secrets
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from firmware_protocol import (
    DeviceIdentity,
    ErrorReport,
    Link,
    LinkDown,
    LinkUp,
    Message,
    MessageAcked,
    MessageReceived,
    MessageRejected,
    SecurityAlert,
    Status,
)
from firmware_protocol.messages import DeviceKind, DeviceState, LampColour
from sim_devices.ports import DevicePort

# How many application messages the firmware lets the link hold (queued + in flight) at once; the rest
# wait in the outbox. Well under the link's MAX_SEND_QUEUE, so send() is never refused.
LINK_WINDOW_MESSAGES = 8
DEVICE_ID_INFO = b"flushtable/1 device id"
_LAMP_FOR_STATE: dict[DeviceState, LampColour] = {"ready": "green", "busy": "amber", "fault": "red"}


def device_id_for_key(key: bytes) -> int:
    """The device_id a device provisioned with ``key`` and no explicit id uses (docs/devices.md;
    drivers.identity derives the same, and tests/sim/test_firmware.py checks they agree)."""
    value = int.from_bytes(hashlib.sha256(DEVICE_ID_INFO + key).digest()[:4], "big")
    return value or 1


@dataclass(frozen=True, slots=True)
class LinkTiming:
    """``time_scale`` runs the protocol's clock faster than the wall clock: every protocol timer
    (heartbeat, ACK timeout, silence timeout, handshake retry) is divided by it. Production uses 1;
    tests use 5-10 so a missed heartbeat is noticed in a fraction of a second. Both ends of a line
    must use the same scale."""

    time_scale: float = 1.0

    def __post_init__(self) -> None:
        if not self.time_scale > 0:
            raise ValueError(f"time_scale {self.time_scale} must be positive")


@dataclass(slots=True)
class FirmwareCounters:
    sessions: int = 0
    messages_received: int = 0
    messages_sent: int = 0
    security_alerts: list[SecurityAlert] = field(default_factory=list)
    links_down: list[str] = field(default_factory=list)


class SimulatedDevice:
    """Device-side firmware: a Link on a DevicePort, timers on the event loop."""

    KIND: DeviceKind = "shuffler"
    MODEL = "SIM"

    def __init__(
        self,
        *,
        key: bytes,
        serial_number: str,
        device_id: int | None = None,
        firmware_version: str = "1.0.0",
        timing: LinkTiming | None = None,
        seed: int | None = None,
    ) -> None:
        self.key = key
        self.device_id = device_id if device_id is not None else device_id_for_key(key)
        self.identity = DeviceIdentity(
            device_kind=self.KIND,
            model=self.MODEL,
            serial_number=serial_number,
            firmware_version=firmware_version,
        )
        self.timing = timing or LinkTiming()
        # Seeded nonces make a test reproducible; without a seed the OS's CSPRNG makes them.
        self._nonce_rng = random.Random(seed) if seed is not None else None
        self.link = Link.device(self.device_id, key, self.identity, random_bytes=self._random_bytes)
        self.port: DevicePort | None = None
        self.outbox: deque[Message] = deque()
        self.counters = FirmwareCounters()
        self.silent = False
        self.state: DeviceState = "ready"
        self.fault_code = 0
        self.lamp: LampColour = "green"
        self._timer: asyncio.TimerHandle | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        self.on_link_event: Callable[[object], None] | None = None  # for tests that watch the firmware

    def _random_bytes(self, count: int) -> bytes:
        if self._nonce_rng is not None:
            return self._nonce_rng.randbytes(count)
        return secrets.token_bytes(count)

    # --- life ---------------------------------------------------------------------------------------
    async def serve(self, port: DevicePort) -> None:
        """Attach to ``port`` and plug it in."""
        self._loop = asyncio.get_running_loop()
        self.port = port
        port.attach(self)
        await port.start()

    async def stop(self) -> None:
        """Unplug and cancel every timer and task of this device."""
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        self._cancel_timer()
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
        loop = self._loop or asyncio.get_running_loop()
        return loop.time() * self.timing.time_scale

    # --- misbehaviour every device can show -------------------------------------------------------------
    def go_silent(self, duration_s: float) -> asyncio.Task[None]:
        """Firmware hangs from now: nothing in, nothing out, for ``duration_s``; then it carries on.
        Returns the task that ends the silence (await it to wait for the device to come back)."""
        self.silent = True
        self._cancel_timer()
        return self.spawn(self._end_silence_after(duration_s), "device-silence")

    async def _end_silence_after(self, duration_s: float) -> None:
        try:
            await asyncio.sleep(duration_s)
        finally:
            self.silent = False
            self._after_link_activity()

    async def unplug_for(self, duration_s: float) -> None:
        """The cable is pulled for ``duration_s`` (the device keeps its power and its state)."""
        assert self.port is not None
        await self.port.unplug()
        await asyncio.sleep(duration_s)
        await self.port.plug()

    # --- WireListener -------------------------------------------------------------------------------
    def wire_up(self) -> None:
        pass  # the controller speaks first (AuthChallenge); nothing to do until it does

    def wire_bytes(self, data: bytes) -> None:
        if self.silent:
            return
        self.link.receive_data(data, self.now_s())
        self._after_link_activity()

    def wire_down(self) -> None:
        self.link.connection_lost("port_closed")
        self._after_link_activity()

    # --- sending ------------------------------------------------------------------------------------
    def emit(self, message: Message) -> None:
        """Send an application message: now if the link has room, else when it has (even after a
        reconnect). Nothing emitted is ever dropped by the firmware."""
        self.outbox.append(message)
        self._after_link_activity()

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

    # --- the loop around the Link -------------------------------------------------------------------
    def _after_link_activity(self) -> None:
        if self.silent:
            return
        link = self.link
        for event in link.events():
            if self.on_link_event is not None:
                self.on_link_event(event)
            if isinstance(event, LinkUp):
                self.counters.sessions += 1
                self.on_link_up()
            elif isinstance(event, MessageReceived):
                self.counters.messages_received += 1
                self.on_message(event.message, event.seq)
            elif isinstance(event, LinkDown):
                self.counters.links_down.append(event.reason)
                # What the controller never acknowledged goes out again, first and in order, next session.
                self.outbox.extendleft(message for _, message in reversed(event.unacknowledged))
            elif isinstance(event, SecurityAlert):
                self.counters.security_alerts.append(event)
            elif isinstance(event, MessageRejected | MessageAcked):
                pass
        if link.is_up:
            now_s = self.now_s()
            while self.outbox and link.pending_count < LINK_WINDOW_MESSAGES:
                link.send(self.outbox.popleft(), now_s)
                self.counters.messages_sent += 1
        data = link.bytes_to_send()
        if data and self.port is not None:
            self.port.send(data)
        self._schedule_timer()

    def _schedule_timer(self) -> None:
        deadline_s = self.link.next_deadline_s()
        if deadline_s is None or self._loop is None or self._loop.is_closed():
            self._cancel_timer()
            return
        when = deadline_s / self.timing.time_scale
        if self._timer is not None and self._timer.when() <= when:
            return  # due no later than needed: firing early is harmless (the Link re-says when)
        self._cancel_timer()
        self._timer = self._loop.call_at(when, self._on_timer)

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _on_timer(self) -> None:
        self._timer = None
        if self.silent:
            return
        self.link.handle_timers(self.now_s())
        self._after_link_activity()

    # --- for subclasses --------------------------------------------------------------------------------
    def on_link_up(self) -> None:
        """A controller authenticated: report our status (and whatever state it needs)."""
        self.emit(Status(state=self.state, fault_code=self.fault_code, lamp=self.lamp))

    def on_message(self, message: Message, seq: int) -> None:
        raise NotImplementedError

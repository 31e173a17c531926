"""One supervisor per device: connect, handshake and authenticate, run, notice loss, reconnect.

States: disconnected -> connecting -> handshaking -> ready, and back to connecting (after a backoff)
whenever the line closes, the handshake fails, or heartbeats stop (the protocol Link declares the link
down after LINK_SILENCE_TIMEOUT_S of silence). Reconnection waits follow an exponential backoff with
jitter and a cap, reset after every good handshake. A request waiting for its acknowledgement fails
with DeviceUnavailable the moment a v1 link drops; with a v2 device it waits for the resumed session
(up to ``request_timeout_s``). Health (state, last frame heard, frames, errors, reconnects) is kept in
``health`` and pushed to ``on_health`` on every change of state.

The protocol is ``firmware_protocol.Link`` in its controller role, driven by the same
``firmware_protocol.runner.LinkRunner`` the simulated firmware uses (the clock, the timers, the
events); this module adds the transport, the reconnection and the health. The device drivers
(shuffler.py, bet_sensors.py, dealer_display.py) map its messages to drivers.events and back.

Exactly once is the Link's job, and nobody else's: with a v2 device one Link lives as long as the
driver, so its stream survives every reconnect and the handshake resends exactly what each side lacks.
A command accepted by ``send`` and not yet acknowledged when the line drops stays queued and is
delivered after the next handshake (its ``send`` keeps waiting, up to ``request_timeout_s``). After
every handshake with a v2 device the driver asks for its state (StatusQuery); the StatusReport answer
becomes DeviceStatusChanged and, for the shoe, DealStateReported. A v1 device is driven in v1: what the
line took unacknowledged fails its ``send`` with DeviceUnavailable, as v1 always did.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, Literal

import structlog

from drivers.backoff import Backoff
from drivers.events import (
    DeviceLost,
    DeviceReady,
    DeviceStatusChanged,
    DomainCommand,
    DomainEvent,
    ResetDevice,
    SecurityEvent,
)
from drivers.transports import SimConnector, Transport, TransportClosed, TransportError, make_transport
from firmware_protocol import (
    PROTOCOL_V2,
    SUPPORTED_VERSIONS,
    ErrorReport,
    Link,
    LinkDown,
    LinkError,
    LinkEvent,
    LinkUp,
    Message,
    MessageAcked,
    MessageReceived,
    MessageRejected,
    Reset,
    SecurityAlert,
    Status,
    StatusQuery,
    StatusReport,
)
from firmware_protocol.constants import DEFAULT_WINDOW
from firmware_protocol.crypto import device_id_for_key
from firmware_protocol.runner import LinkRunner, LinkTiming

log = structlog.get_logger("drivers")

SupervisorState = Literal["disconnected", "connecting", "handshaking", "ready", "stopped"]


class DeviceUnavailable(Exception):
    """A command could not be delivered: the device is not ready, or the link dropped before it
    acknowledged the command."""


# Refusals that are the protocol working, not errors: an ACK for a frame already acknowledged (the ACK
# crossed a retransmission, or a v2 cumulative ACK already covered it) is ignored by design
# (docs/protocol.md 6). Counting it made "Errors 1" show on a clean start.
BENIGN_REFUSALS: frozenset[str] = frozenset({"stale_ack"})


def link_errors(refused: Mapping[str, int]) -> int:
    """The link's refusals that are errors (noise, bad tags, bad messages), not BENIGN_REFUSALS."""
    return sum(count for code, count in refused.items() if code not in BENIGN_REFUSALS)


@dataclass(frozen=True, slots=True)
class DriverTiming:
    """Every timer of a driver. ``link`` is the protocol's timing (the same LinkTiming the device runs:
    its ``time_scale`` speeds up heartbeats and loss detection alike); the rest is the supervisor's."""

    link: LinkTiming = field(default_factory=LinkTiming)
    connect_timeout_s: float = 3.0
    request_timeout_s: float = 3.0
    backoff_initial_s: float = 0.1
    backoff_max_s: float = 5.0
    backoff_multiplier: float = 2.0
    backoff_jitter: float = 0.2


@dataclass(frozen=True, slots=True)
class DeviceHealth:
    """What the status panel shows for one device."""

    device: str
    kind: str
    url: str
    state: SupervisorState = "disconnected"
    last_heard_unix_s: float | None = None  # wall-clock time of the last authenticated frame
    frames_sent: int = 0
    frames_received: int = 0
    errors: int = 0  # frames refused (noise, bad tags, replays) and messages rejected
    retransmissions: int = 0
    reconnects: int = 0  # sessions re-established after a loss
    connect_attempts: int = 0
    security_events: int = 0
    last_error: str = ""


@dataclass(frozen=True, slots=True)
class PendingCommand:
    """A command on the link, waiting for the device's acknowledgement (``DeviceDriver.submit``)."""

    seq: int
    acknowledged: asyncio.Future[None]
    deadline_s: float  # on the loop's clock: when waiting for the acknowledgement gives up


class DeviceDriver:
    """Base of the three device drivers: the supervisor and the plumbing; subclasses translate."""

    KIND: ClassVar[str] = ""

    def __init__(  # noqa: PLR0913 - keyword-only injection points (timing, backend, hub, rng) the tests set
        self,
        name: str,
        url: str,
        key: bytes,
        *,
        publish: Callable[[DomainEvent], None],
        device_id: int | None = None,
        timing: DriverTiming | None = None,
        usb_backend: Any = None,
        sim_hub: SimConnector | None = None,
        on_health: Callable[[DeviceHealth], None] | None = None,
        rng: random.Random | None = None,
        protocol_versions: tuple[int, ...] = SUPPORTED_VERSIONS,
        window: int = DEFAULT_WINDOW,
    ) -> None:
        self.name = name
        self.url = url
        self.device_id = device_id if device_id is not None else device_id_for_key(key)
        self.timing = timing or DriverTiming()
        self._publish = publish
        self._on_health = on_health
        self._usb_backend = usb_backend
        self._sim_hub = sim_hub
        make_transport(url, usb_backend=usb_backend, sim_hub=sim_hub)  # refuse a bad URL now, not later
        self.link = Link.controller({self.device_id: key}, versions=protocol_versions, window=window)
        self.runner = LinkRunner(self.link, self.timing.link, on_event=self._on_link_event)
        self._backoff = Backoff(
            initial_s=self.timing.backoff_initial_s,
            max_s=self.timing.backoff_max_s,
            multiplier=self.timing.backoff_multiplier,
            jitter=self.timing.backoff_jitter,
            rng=rng or random.Random(),
        )
        self._health = DeviceHealth(device=name, kind=self.KIND, url=url)
        self._task: asyncio.Task[None] | None = None
        self._transport: Transport | None = None
        self._session_done: asyncio.Future[str] | None = None
        self._pending: dict[int, asyncio.Future[None]] = {}
        self._last_heard_unix_s: float | None = None  # kept apart from _health: it changes every frame
        self._ready_event = asyncio.Event()
        self._ever_ready = False
        self._was_ready_this_session = False
        self._last_status: DeviceStatusChanged | None = None
        self.setup()

    # --- public API -------------------------------------------------------------------------------------
    @property
    def health(self) -> DeviceHealth:
        stats = self.link.stats
        return replace(
            self._health,
            last_heard_unix_s=self._last_heard_unix_s,
            frames_sent=stats.frames_sent,
            frames_received=stats.frames_accepted,
            errors=link_errors(stats.refused) + self._health.errors,
            retransmissions=stats.retransmissions,
        )

    @property
    def state(self) -> SupervisorState:
        return self._health.state

    @property
    def ready(self) -> bool:
        return self._health.state == "ready"

    def start(self) -> None:
        """Start supervising (a task on the running loop)."""
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._supervise(), name=f"driver {self.name}")

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._set_state("stopped")

    async def wait_ready(self, timeout_s: float) -> None:
        """Wait until the device is ready (authenticated); TimeoutError otherwise."""
        async with asyncio.timeout(timeout_s):
            while not self.ready:
                self._ready_event.clear()
                await self._ready_event.wait()

    async def send(self, command: DomainCommand) -> None:
        """Deliver a command and wait for the device to acknowledge it.

        Raises DeviceUnavailable when the device is not ready or the link drops first, ValueError when
        the command's fields are out of range for the protocol."""
        await self.wait_acknowledged(self.submit(command))

    def submit(self, command: DomainCommand) -> PendingCommand:
        """Put a command on the link now, without waiting for its acknowledgement (``send`` is this and
        ``wait_acknowledged``). Commands submitted in one turn of the loop leave in one write, in the
        order submitted, and the device answers them with one ACK (v2; a v1 link sends one at a time).

        Raises DeviceUnavailable when the device is not ready, ValueError when the command's fields are
        out of range for the protocol."""
        # Every device takes a reset the same way (a soft Reset); the rest is the driver's own.
        message = Reset(hard=False) if isinstance(command, ResetDevice) else self.encode(command)
        if not self.link.is_up or self._health.state != "ready":
            raise DeviceUnavailable(f"{self.name}: device is {self._health.state}")
        loop = asyncio.get_running_loop()
        try:
            seq = self.runner.send(message)
        except LinkError as error:
            raise DeviceUnavailable(f"{self.name}: {error}") from error
        future: asyncio.Future[None] = loop.create_future()
        self._pending[seq] = future
        self.command_sent(command)
        return PendingCommand(seq, future, loop.time() + self.timing.request_timeout_s)

    async def wait_acknowledged(self, pending: PendingCommand) -> None:
        """Wait until the device acknowledged a submitted command, up to ``request_timeout_s`` from its
        submission; DeviceUnavailable otherwise (or when the link dropped it first)."""
        try:
            async with asyncio.timeout_at(pending.deadline_s):
                await pending.acknowledged
        except TimeoutError:
            self._pending.pop(pending.seq, None)
            raise DeviceUnavailable(
                f"{self.name}: no acknowledgement within {self.timing.request_timeout_s} s"
            ) from None

    # --- for subclasses ------------------------------------------------------------------------------------
    def setup(self) -> None:
        """Initialise the subclass's own state (called at the end of __init__)."""

    def encode(self, command: DomainCommand) -> Message:
        """The protocol message for a domain command other than ``ResetDevice``, which every device takes
        as a soft Reset (``submit``); ValueError if it is not for this device."""
        raise NotImplementedError

    def translate(self, message: Message) -> Iterable[DomainEvent]:
        """The domain events a device message means (none for some)."""
        raise NotImplementedError

    def refused(self, report: ErrorReport) -> Iterable[DomainEvent]:
        """Domain events for a command the device refused (kept in health.last_error in any case)."""
        return ()

    def command_sent(self, command: DomainCommand) -> None:
        """A command went to the device (the shuffler driver remembers what deal it asked for)."""

    def session_started(self) -> None:
        """A new session authenticated (subclasses may reset per-session state)."""

    # --- the supervisor ----------------------------------------------------------------------------------
    def _set_state(self, state: SupervisorState, **changes: Any) -> None:
        self._health = replace(self._health, state=state, **changes)
        if state == "ready":
            self._ready_event.set()
        if self._on_health is not None:
            self._on_health(self.health)

    async def _supervise(self) -> None:
        try:
            while True:
                self._set_state("connecting", connect_attempts=self._health.connect_attempts + 1)
                transport = make_transport(self.url, usb_backend=self._usb_backend, sim_hub=self._sim_hub)
                try:
                    async with asyncio.timeout(self.timing.connect_timeout_s):
                        await transport.open()
                except (TransportError, TimeoutError) as error:
                    await transport.close()
                    self._health = replace(self._health, last_error=str(error) or "connect timeout")
                    self._set_state("disconnected")
                    await asyncio.sleep(self._backoff.next_delay_s())
                    continue
                reason = await self._session(transport)
                self._set_state("disconnected", last_error=reason)
                await asyncio.sleep(self._backoff.next_delay_s())
        finally:
            self.runner.detach()
            if self._transport is not None:
                transport, self._transport = self._transport, None
                await transport.close()
            self._fail_pending("driver stopped")

    async def _session(self, transport: Transport) -> str:
        loop = asyncio.get_running_loop()
        self._transport = transport
        self._session_done = loop.create_future()
        self._was_ready_this_session = False
        self._set_state("handshaking")
        self.runner.attach(self._write)
        self.runner.connect()
        reader = loop.create_task(self._read_loop(transport), name=f"driver {self.name} reader")
        try:
            reason = await self._session_done
        finally:
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reader
            self.runner.detach()
            self._transport = None
            await transport.close()
            # The link may still think it is up (we ended the session ourselves): make it agree.
            self.runner.connection_lost("session_ended")
        if self.link.version != PROTOCOL_V2:
            # v1 hands back what was never acknowledged: the device may or may not have it.
            self._fail_pending(reason)
        if self._was_ready_this_session:
            self._publish(DeviceLost(device=self.name, reason=reason))
            log.warning("device_lost", device=self.name, reason=reason)
        return reason

    def _end_session(self, reason: str) -> None:
        if self._session_done is not None and not self._session_done.done():
            self._session_done.set_result(reason)

    def _write(self, data: bytes) -> None:
        transport = self._transport
        if transport is None:
            return
        try:
            transport.write(data)
        except TransportClosed as closed:
            self.runner.connection_lost(str(closed))
            self._end_session(str(closed))

    async def _read_loop(self, transport: Transport) -> None:
        try:
            while True:
                data = await transport.read()
                before = self.link.stats.frames_accepted
                self.runner.feed(data)
                if self.link.stats.frames_accepted != before:
                    self._last_heard_unix_s = time.time()
        except TransportClosed as closed:
            self.runner.connection_lost(str(closed))
            self._end_session(str(closed))

    def _on_link_event(self, event: LinkEvent) -> None:
        """Act on one thing the link has to say (the LinkRunner calls this for every event)."""
        if isinstance(event, MessageReceived):
            self._on_message(event.message)
        elif isinstance(event, MessageAcked):
            future = self._pending.pop(event.seq, None)
            if future is not None and not future.done():
                future.set_result(None)
        elif isinstance(event, LinkUp):
            self._on_link_up(event)
        elif isinstance(event, LinkDown):
            self._end_session(event.reason)
        elif isinstance(event, SecurityAlert):
            self._health = replace(self._health, security_events=self._health.security_events + 1)
            self._publish(SecurityEvent(device=self.name, reason=event.reason, detail=event.detail))
            log.warning("security_event", device=self.name, reason=event.reason, detail=event.detail)
        elif isinstance(event, MessageRejected):
            self._health = replace(self._health, errors=self._health.errors + 1)
            log.warning("message_rejected", device=self.name, seq=event.seq, reason=event.reason)

    def _on_link_up(self, event: LinkUp) -> None:
        hello = event.hello
        if hello.device_kind != self.KIND:
            # The right key but the wrong kind of device on this port: refuse to drive it.
            self._publish(
                SecurityEvent(
                    device=self.name,
                    reason="wrong_device_kind",
                    detail=f"expected a {self.KIND}, a {hello.device_kind} answered",
                )
            )
            self._end_session("wrong_device_kind")
            return
        for seq, message in event.dropped:
            # Given up by the link: the device restarted (it did not know our stream) or the session
            # fell back to v1. Never delivered; the StatusQuery below tells the engine where it stands.
            future = self._pending.pop(seq, None)
            if future is not None and not future.done():
                future.set_exception(
                    DeviceUnavailable(f"{self.name}: {message.NAME} not delivered (the device restarted)")
                )
        reconnects = self._health.reconnects + (1 if self._ever_ready else 0)
        self._ever_ready = True
        self._was_ready_this_session = True
        self._backoff.reset()
        self.session_started()
        self._set_state("ready", reconnects=reconnects, last_error="")
        self._publish(
            DeviceReady(
                device=self.name,
                kind=hello.device_kind,
                model=hello.model,
                serial_number=hello.serial_number,
                firmware_version=hello.firmware_version,
            )
        )
        log.info(
            "device_ready",
            device=self.name,
            serial_number=hello.serial_number,
            protocol_version=event.version,
            window=event.window,
            resumed=event.resumed,
        )
        if event.version >= PROTOCOL_V2:
            # What did the device do while the line was down? Ask, rather than wait and guess: the
            # answer follows everything it sent before it, in the same stream.
            self.runner.send(StatusQuery())

    def _on_message(self, message: Message) -> None:
        if isinstance(message, Status | StatusReport):
            status = DeviceStatusChanged(
                device=self.name, state=message.state, fault_code=message.fault_code, lamp=message.lamp
            )
            if status != self._last_status:
                self._last_status = status
                self._publish(status)
            if isinstance(message, StatusReport):
                for domain_event in self.translate(message):
                    self._publish(domain_event)
            return
        if isinstance(message, ErrorReport):
            # The device's own words (``detail``) are data from outside: a shoe's may name a card
            # ("jam: card 4d at seat 1"). They never go to a public channel raw: the health row (the
            # panel's devices table, /api/devices) and the log line say only that the device refused
            # which command and its code. The shoe's words reach the journal through ``refused`` (a
            # ShufflerFault, whose text is the fault's private part: shown once the round is revealed).
            self._health = replace(
                self._health,
                last_error=f"device refused seq {message.refused_seq} (code {message.code})",
            )
            for domain_event in self.refused(message):
                self._publish(domain_event)
            log.warning(
                "device_refused",
                device=self.name,
                code=message.code,
                seq=message.refused_seq,
                detail_chars=len(message.detail),
            )
            return
        for domain_event in self.translate(message):
            self._publish(domain_event)

    def _fail_pending(self, reason: str) -> None:
        pending, self._pending = self._pending, {}
        for future in pending.values():
            if not future.done():
                future.set_exception(
                    DeviceUnavailable(f"{self.name}: link lost before acknowledgement ({reason})")
                )

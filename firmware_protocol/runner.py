"""The asyncio shell around a sans-I/O ``Link``: the one place where bytes, events and the link's timers
meet an event loop, shared by the controller's drivers and the simulated firmware.

The Link decides everything; this class only carries it out. It feeds what the port read to the Link
with the time, hands every event the Link produces to ``on_event``, writes what the Link wants written,
and keeps one loop timer armed at the Link's next deadline. The Link's clock is the loop's monotonic
clock multiplied by ``LinkTiming.time_scale`` (both ends of a line must run the same scale), so a
test can make every protocol timer ten times faster without touching the protocol.

    runner = LinkRunner(link, LinkTiming(), on_event=handle)
    runner.attach(port.write)        # the port is open: bytes may be written, timers run
    runner.connect()                 # controller: start the handshake
    runner.feed(data)                # whatever the port read, in any pieces
    seq = runner.send(message)       # queued on the Link; MessageAcked(seq) comes to on_event
    runner.detach()                  # the port closed: no writes, no timers
    runner.close()

What the Link produces in one turn of the loop is written with one call (``call_soon``), not frame by
frame. ``on_event`` may call ``send`` (or anything else here) re-entrantly: events raised meanwhile are
handled in order after the current one. ``before_write`` (optional) runs after the events and before
the bytes are taken: the simulated firmware moves messages from its outbox into the Link there.

This module imports asyncio and so is not imported by ``firmware_protocol/__init__.py``: the protocol
core stays free of I/O, and a test of the core needs no event loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass

from firmware_protocol.constants import HEARTBEAT_INTERVAL_S, LINK_SILENCE_TIMEOUT_S
from firmware_protocol.events import LinkEvent
from firmware_protocol.link import Link
from firmware_protocol.messages import Message


@dataclass(frozen=True, slots=True)
class LinkTiming:
    """The one timing configuration of a link's shell, for drivers and simulated devices alike.

    ``time_scale`` runs the protocol's clock faster than the wall clock: every protocol timer (ACK
    timeout, heartbeat, silence timeout, handshake retry) is divided by it in wall time. Production
    uses 1; tests use 5-10 so a missed heartbeat is noticed in a fraction of a second. Both ends of a
    line must use the same scale."""

    time_scale: float = 1.0

    def __post_init__(self) -> None:
        if not self.time_scale > 0:
            raise ValueError(f"time_scale {self.time_scale} must be positive")

    @property
    def heartbeat_interval_s(self) -> float:
        """Wall seconds between heartbeats on an idle link."""
        return HEARTBEAT_INTERVAL_S / self.time_scale

    @property
    def heartbeat_window_s(self) -> float:
        """Wall seconds of silence before the link is declared down (the loss-detection bound)."""
        return LINK_SILENCE_TIMEOUT_S / self.time_scale


class LinkRunner:
    """Drives one Link on the running event loop. See the module docstring."""

    def __init__(
        self,
        link: Link,
        timing: LinkTiming,
        *,
        on_event: Callable[[LinkEvent], None],
        before_write: Callable[[], None] | None = None,
    ) -> None:
        self.link = link
        self.timing = timing
        self._on_event = on_event
        self._before_write = before_write
        self._write: Callable[[bytes], None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._pumping = False
        self._again = False
        self._paused = False
        self._unwritten = bytearray()  # bytes of this loop turn, written together (one syscall)
        self._flush_scheduled = False

    # --- the port ---------------------------------------------------------------------
    @property
    def attached(self) -> bool:
        return self._write is not None

    def attach(self, write: Callable[[bytes], None]) -> None:
        """The port is open: ``write`` takes the Link's bytes (it reports its own failure by calling
        connection_lost). Must be called on the loop that will run the timers."""
        self._loop = asyncio.get_running_loop()
        self._write = write
        self.pump()

    def detach(self) -> None:
        """The port is gone: nothing more is written and no timer runs until the next attach."""
        self._write = None
        self._unwritten.clear()
        self._cancel_timer()

    def close(self) -> None:
        self.detach()

    # --- the clock ---------------------------------------------------------------------
    def now_s(self) -> float:
        """The Link's clock: the loop's monotonic clock, scaled."""
        loop = self._loop or asyncio.get_running_loop()
        return loop.time() * self.timing.time_scale

    # --- what the owner does ---------------------------------------------------------------------
    def feed(self, data: bytes) -> None:
        """Bytes the port read."""
        if self._paused:
            return  # a hung firmware reads nothing
        self.link.receive_data(data, self.now_s())
        self.pump()

    def send(self, message: Message) -> int:
        """Queue ``message`` on the Link (LinkError if it is not up) and write what that produced."""
        seq = self.link.send(message, self.now_s())
        self.pump()
        return seq

    def connect(self) -> None:
        """Controller: start a handshake."""
        self.link.connect(self.now_s())
        self.pump()

    def connection_lost(self, reason: str) -> None:
        self.link.connection_lost(reason)
        self.pump()

    def pause(self) -> None:
        """Stop reading, writing and running timers (a firmware that hangs)."""
        self._paused = True
        self._cancel_timer()

    def resume(self) -> None:
        self._paused = False
        self.pump()

    def pump(self) -> None:
        """Hand every event to on_event, write what the Link wants written, re-arm the timer.
        Re-entrant calls (from on_event) only ask the running pump to go round once more."""
        if self._paused:
            return
        if self._pumping:
            self._again = True
            return
        self._pumping = True
        try:
            while True:
                self._again = False
                for event in self.link.events():
                    self._on_event(event)
                if self._before_write is not None:
                    self._before_write()
                data = self.link.bytes_to_send()
                if data and self._write is not None:
                    self._queue_write(data)
                if not self._again:
                    break
        finally:
            self._pumping = False
        self._arm_timer()

    def _queue_write(self, data: bytes) -> None:
        # Everything the Link produces in one turn of the loop (a shoe's cards, the ACKs of one read) goes
        # out in one write: a write to a pty or a socket costs a system call, the bytes cost nothing.
        self._unwritten += data
        if self._flush_scheduled:
            return
        loop = self._loop
        if loop is None or loop.is_closed():
            self.flush()
            return
        self._flush_scheduled = True
        loop.call_soon(self.flush)

    def flush(self) -> None:
        """Write what is waiting now (a failed write calls connection_lost, which pumps again)."""
        self._flush_scheduled = False
        if not self._unwritten or self._write is None:
            self._unwritten.clear()
            return
        data = bytes(self._unwritten)
        self._unwritten.clear()
        self._write(data)

    # --- the timer ---------------------------------------------------------------------
    def _arm_timer(self) -> None:
        deadline_s = self.link.next_deadline_s()
        loop = self._loop
        if deadline_s is None or self._write is None or loop is None or loop.is_closed():
            self._cancel_timer()
            return
        when = deadline_s / self.timing.time_scale
        # A timer due no later than the new deadline may stay: firing early only makes the Link look
        # at its clock and say when to come back. Not re-arming on every frame keeps the loop's timer
        # heap small at a thousand frames a second.
        if self._timer is not None and self._timer.when() <= when:
            return
        self._cancel_timer()
        self._timer = loop.call_at(when, self._on_timer)

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _on_timer(self) -> None:
        self._timer = None
        if self._paused or self._write is None:
            return
        self.link.handle_timers(self.now_s())
        self.pump()

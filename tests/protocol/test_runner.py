"""The LinkRunner: the asyncio shell the drivers and the simulated firmware share. Two runners joined
by an in-memory wire (each write is fed to the peer on the next loop iteration). Waits are bounded
and on conditions; the protocol's clock runs 20 times faster than the wall clock."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TypeVar

import pytest

from firmware_protocol import (
    DealerKey,
    Link,
    LinkDown,
    LinkEvent,
    LinkUp,
    MessageAcked,
    MessageReceived,
    ShowText,
)
from firmware_protocol.runner import LinkRunner, LinkTiming
from tests.device_harness.leaks import run_async
from tests.protocol.helpers import make_pair

TIMING = LinkTiming(time_scale=20.0)
E = TypeVar("E", bound=LinkEvent)


class Side:
    def __init__(self, link: Link, on_event: Callable[[Side, LinkEvent], None] | None = None) -> None:
        self.events: list[LinkEvent] = []
        self.changed = asyncio.Event()
        self._react = on_event
        self.runner = LinkRunner(link, TIMING, on_event=self._on_event)

    def _on_event(self, event: LinkEvent) -> None:
        self.events.append(event)
        self.changed.set()
        if self._react is not None:
            self._react(self, event)

    def of(self, kind: type[E]) -> list[E]:
        return [event for event in self.events if isinstance(event, kind)]

    async def wait(self, kind: type[LinkEvent], count: int = 1) -> None:
        async with asyncio.timeout(5):
            while len(self.of(kind)) < count:
                self.changed.clear()
                await self.changed.wait()


def join(a: Side, b: Side) -> Callable[[bool], None]:
    """Attach both runners to a wire; returns a switch that cuts or restores it."""
    loop = asyncio.get_running_loop()
    plugged = [True]

    def writer(to: Side) -> Callable[[bytes], None]:
        def write(data: bytes) -> None:
            if plugged[0]:
                loop.call_soon(to.runner.feed, data)

        return write

    a.runner.attach(writer(b))
    b.runner.attach(writer(a))

    def switch(on: bool) -> None:
        plugged[0] = on

    return switch


def test_two_runners_handshake_deliver_and_acknowledge() -> None:
    async def main() -> None:
        controller_link, device_link = make_pair()
        controller, device = Side(controller_link), Side(device_link)
        join(controller, device)
        controller.runner.connect()
        await controller.wait(LinkUp)
        await device.wait(LinkUp)
        seq = controller.runner.send(ShowText(text="hello"))
        await device.wait(MessageReceived)
        await controller.wait(MessageAcked)
        assert controller.of(MessageAcked) == [MessageAcked(seq)]
        controller.runner.close()
        device.runner.close()

    run_async(main, timeout_s=10)


def test_on_event_may_send_re_entrantly_and_events_stay_in_order() -> None:
    """The device answers every message from inside on_event (as the firmware does)."""

    def answer(side: Side, event: LinkEvent) -> None:
        if isinstance(event, MessageReceived):
            side.runner.send(DealerKey(key="next"))
            side.runner.send(DealerKey(key="confirm"))

    async def main() -> None:
        controller_link, device_link = make_pair()
        controller, device = Side(controller_link), Side(device_link, answer)
        join(controller, device)
        controller.runner.connect()
        await device.wait(LinkUp)
        for index in range(3):
            controller.runner.send(ShowText(text=f"{index}"))
        await controller.wait(MessageReceived, 6)
        keys = [event.message for event in controller.of(MessageReceived)]
        assert keys == [DealerKey(key="next"), DealerKey(key="confirm")] * 3
        controller.runner.close()
        device.runner.close()

    run_async(main, timeout_s=10)


def test_the_timers_find_a_cut_wire_and_a_detached_runner_runs_none() -> None:
    async def main() -> None:
        controller_link, device_link = make_pair()
        controller, device = Side(controller_link), Side(device_link)
        cut = join(controller, device)
        controller.runner.connect()
        await device.wait(LinkUp)
        cut(False)
        await controller.wait(LinkDown)  # heartbeats unanswered: the runner's timer found it
        assert controller.of(LinkDown)[0].reason in ("heartbeat_missed", "no_ack")
        device.runner.detach()
        assert device.runner._timer is None  # nothing runs on a detached runner
        controller.runner.close()

    run_async(main, timeout_s=10)


def test_a_paused_runner_reads_nothing_and_resumes() -> None:
    async def main() -> None:
        controller_link, device_link = make_pair()
        controller, device = Side(controller_link), Side(device_link)
        join(controller, device)
        controller.runner.connect()
        await device.wait(LinkUp)
        device.runner.pause()
        controller.runner.send(ShowText(text="while paused"))
        await asyncio.sleep(0)  # (one loop turn: the bytes are fed, and ignored)
        await asyncio.sleep(0)
        assert not device.of(MessageReceived)
        device.runner.resume()
        await device.wait(MessageReceived)  # the controller's retransmission gets through
        controller.runner.close()
        device.runner.close()

    run_async(main, timeout_s=10)


def test_timing_must_be_positive_and_scales_the_windows() -> None:
    with pytest.raises(ValueError, match="must be positive"):
        LinkTiming(0)
    assert LinkTiming(10).heartbeat_window_s == pytest.approx(0.3)
    assert LinkTiming(10).heartbeat_interval_s == pytest.approx(0.1)

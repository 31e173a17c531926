"""Waiting on an ``asyncio.Event`` with a bound, and loops that end when cancelled.

``asyncio.wait_for(event.wait(), timeout_s)`` runs the wait as a task of its own and, on Python 3.11,
when the waiting task is cancelled in the loop turn in which that inner wait finishes (the event was
set just then), returns the inner result and drops the cancellation. A loop around it (an uplink's
poll, the floor service's backoff) then goes on as if nothing was asked, and whatever cancelled it
(``asyncio.run``'s cleanup after an error, a task group) waits for ever. ``asyncio.timeout`` waits in
the task itself, where a cancellation is always delivered."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import random


async def wait_event(event: asyncio.Event, timeout_s: float) -> bool:
    """Whether ``event`` was set within ``timeout_s`` seconds (at once if it already is)."""
    try:
        async with asyncio.timeout(timeout_s):
            await event.wait()
    except TimeoutError:
        return False
    return True


async def close_quietly(*closings: Awaitable[object] | None, timeout_s: float = 2.0) -> None:
    """Await each close in turn (None: nothing to close), each within ``timeout_s`` and its failure
    ignored: a connection to a server that is gone may hang or raise on close, and the retry loop that
    closes it must go on."""
    for closing in closings:
        if closing is None:
            continue
        with contextlib.suppress(Exception):
            async with asyncio.timeout(timeout_s):
                await closing


def raise_if_cancelled() -> None:
    """Raise ``CancelledError`` when the current task was asked to stop and the request was swallowed
    on the way: ``asyncio.wait_for`` drops it when its awaitable finishes in the same loop turn, and
    nats-py waits for every request's reply (a JetStream publish's ack, an API call) that way. The
    task's ``cancelling()`` count keeps the request; a loop that checks it each turn still ends."""
    task = asyncio.current_task()
    if task is not None and task.cancelling():
        raise asyncio.CancelledError


# How a wait is waited: ``wait_event``, or a test's recorder of the delays asked (it returns whether
# ``stop`` was set, as ``wait_event`` does).
Waiter = Callable[[asyncio.Event, float], Awaitable[bool]]


class BackoffSettings(Protocol):
    """A configuration's two reconnection knobs (docs/configuration.md: ``[uplink]``, ``[floor]``)."""

    @property
    def backoff_initial_s(self) -> float: ...
    @property
    def backoff_max_s(self) -> float: ...


class ReconnectDelay:
    """A network client's wait between attempts to reach its servers (the uplink, the linked
    progressive's table and floor ends, the floor service's consumer and its workers' lease loop):
    ``initial_s`` at first, doubled after each attempt up to ``max_s``; each wait spread over half to
    one and a half times itself, so that a floor's tables do not all come back at once, and never past
    ``max_s``. ``reset()`` after a good connection."""

    def __init__(self, *, initial_s: float, max_s: float, rng: random.Random) -> None:
        self._initial_s = initial_s
        self._max_s = max_s
        self._rng = rng
        self.next_s = initial_s
        self.waiter: Waiter = wait_event  # how a wait is waited (a test's waiter records the delays)

    @classmethod
    def of(
        cls, settings: BackoffSettings, rng: random.Random, *, waiter: Waiter = wait_event
    ) -> ReconnectDelay:
        """The delay a configuration's ``backoff_initial_s`` and ``backoff_max_s`` give."""
        delay = cls(initial_s=settings.backoff_initial_s, max_s=settings.backoff_max_s, rng=rng)
        delay.waiter = waiter
        return delay

    def reset(self) -> None:
        self.next_s = self._initial_s

    async def wait(self, stop: asyncio.Event) -> None:
        """Wait the jittered delay, or less when ``stop`` is set; the next attempt's delay doubles."""
        await self.waiter(stop, min(self.next_s * (0.5 + self._rng.random()), self._max_s))
        self.next_s = min(self.next_s * 2, self._max_s)

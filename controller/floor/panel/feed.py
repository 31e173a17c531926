"""The floor panel's live streams (GET /api/events, a progressive link's /api/progressive/<link>/events):
one reader a feed, however many streams are open, each stream sent through the table panel's bounded
response (controller/panel/streaming.py: its send timeout and its slot given back once)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator

from controller.panel.streaming import KEEP_ALIVE, LOGOUT, retry_frame

SSE_UNAVAILABLE = "unavailable"


def unavailable_frame(error: str) -> bytes:
    """The frame a stream shows while its feed cannot be read (the map then says why)."""
    return f"event: {SSE_UNAVAILABLE}\ndata: {json.dumps({'error': error})}\n\n".encode()


class FloorFeed:
    """A live frame for every open stream (the floor map's, or a progressive link's meter): read once a
    tick while at least one stream is open, whatever the number of tabs, and handed to each as the same
    encoded frame."""

    def __init__(self, read: Callable[[], Awaitable[bytes]], interval_s: float) -> None:
        self.read = read
        self.interval_s = interval_s
        self.frame = b""  # the last tick's frame: event floor, or event unavailable
        self.version = 0  # moves when the frame changes: a stream sends what it has not sent yet
        self.tick = 0
        self.subscribers = 0
        self.parked = False  # True while no stream is open: nothing is read then
        self._ticked = asyncio.Condition()
        self._wanted = asyncio.Event()

    @contextlib.contextmanager
    def subscribe(self) -> Iterator[None]:
        self.subscribers += 1
        self._wanted.set()
        try:
            yield
        finally:
            self.subscribers -= 1

    async def run(self) -> None:
        """The app's one reader (a task of its lifespan)."""
        while True:
            if self.subscribers == 0:
                self.frame = b""  # nobody looked: a stream that opens later waits for a fresh map
                self._wanted.clear()
                self.parked = True
                await self._wanted.wait()
                self.parked = False
            frame = await self.read()
            async with self._ticked:
                if frame != self.frame:
                    self.frame, self.version = frame, self.version + 1
                self.tick += 1
                self._ticked.notify_all()
            await asyncio.sleep(self.interval_s)

    async def after(self, seen: int, timeout_s: float) -> int:
        """The tick after ``seen`` once it comes, or the current one after ``timeout_s``."""
        async with self._ticked:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(timeout_s):
                    await self._ticked.wait_for(lambda: self.tick > seen)
            return self.tick


async def live_frames(
    feed: FloorFeed, still_logged_in: Callable[[], bool], *, keepalive_s: float
) -> AsyncIterator[bytes]:
    """One open stream of ``feed``'s frames; it says ``event: logout`` and ends once
    ``still_logged_in`` says no (a sign opened by its key: always yes, it ends when the sign goes
    away)."""
    yield retry_frame()
    with feed.subscribe():
        tick, sent_version, sent_s = -1, 0, time.monotonic()
        while True:
            # The feed's next frame (one read for all streams), or a tick's time without one (the
            # database slow): either way the session is looked at again.
            tick = await feed.after(tick, 2 * feed.interval_s)
            if not still_logged_in():  # expired or logged out
                yield LOGOUT
                return
            if feed.frame and feed.version != sent_version:
                sent_version, sent_s = feed.version, time.monotonic()
                yield feed.frame
            elif time.monotonic() - sent_s >= keepalive_s:
                sent_s = time.monotonic()
                yield KEEP_ALIVE

"""The live stream's response, shared by the table panel (controller/panel/sse.py) and the floor panel
(controller/floor/panel/feed.py): Server-Sent Events whose every send is bounded and whose subscriber
slot is given back once, however the stream ends.

Starlette's StreamingResponse ends the stream when the client goes away; :class:`BoundedStream` adds a
bound on each send, so a client that reads nothing for ``send_timeout_s`` (a tablet asleep with the page
open) is dropped instead of holding its task, and gives its slot back (controller/panel/limits.py
``take_stream_slot``) whether the frames ran out (a logout), the client went away, the server stops, or
the stream failed before its first frame (then a generator's own ``finally`` would never run).

Kept free of the table's backend and the floor's database, so each panel imports only this.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

from starlette.responses import Response, StreamingResponse
from starlette.types import Message, Receive, Scope, Send

SSE_RETRY_MS = 2000  # how long a browser waits before it reconnects a dropped stream
KEEP_ALIVE = b": keep-alive\n\n"
LOGOUT = b"event: logout\ndata: {}\n\n"
SSE_HEADERS = {"Cache-Control": "no-store", "X-Accel-Buffering": "no"}


def retry_frame() -> bytes:
    """A stream's first frame: the browser's reconnection delay."""
    return f"retry: {SSE_RETRY_MS}\n\n".encode()


def logout_stream() -> Response:
    """The answer to a stream opened without a session: said on a 200 stream, for EventSource gives up
    for good on any other answer and the open page would freeze unwarned; the page goes to the login."""
    return Response(
        retry_frame() + LOGOUT, media_type="text/event-stream", headers={"Cache-Control": "no-store"}
    )


class ClientStalled(Exception):
    """The client read nothing for the send timeout."""


class BoundedStream(StreamingResponse):
    """An event stream whose every send waits at most ``send_timeout_s``; ``release`` is called once
    when it ends, however it ends."""

    def __init__(
        self, content: AsyncIterator[bytes], *, send_timeout_s: float, release: Callable[[], None]
    ) -> None:
        super().__init__(content, media_type="text/event-stream", headers=SSE_HEADERS)
        self.send_timeout_s = send_timeout_s
        self._release: Callable[[], None] | None = release

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def bounded_send(message: Message) -> None:
            # uvicorn's send waits while the socket's buffer is full: that wait is what is bounded.
            try:
                async with asyncio.timeout(self.send_timeout_s):
                    await send(message)
            except TimeoutError:
                raise ClientStalled from None

        try:
            await super().__call__(scope, receive, bounded_send)
        except* ClientStalled:
            pass  # dropped: its browser, once awake, reconnects (and resumes where the stream can)
        finally:
            release, self._release = self._release, None
            if release is not None:
                release()

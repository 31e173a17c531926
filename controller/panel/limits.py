"""Bounds on what one request may make the panel hold, enforced while it arrives.

The panel runs in the table's own process: memory a client makes it buffer is memory the table loses.

- The body: FastAPI's own limit (``max_body_size``, Starlette's RequestBodyLimitMiddleware) counts the
  bytes as they are received and answers 413 the moment they pass the limit — or at once, from the
  Content-Length — never buffering first and measuring after (controller/panel/app.py sets it: the
  forms' limit on the auth router, the API's on the app).
- The headers: :class:`HeaderLimit` below, 431 past ``max_header_bytes`` in all (uvicorn's parser has
  its own, larger bound on one line).
- Connections: uvicorn's ``limit_concurrency`` (503 past it, controller/panel/server.py); event streams
  per user: the live stream (controller/panel/routes/live.py, 429 past it).
"""

from __future__ import annotations

import json
from collections.abc import Callable

from starlette.types import ASGIApp, Receive, Scope, Send


def take_stream_slot(open_streams: dict[str, int], user: str, cap: int) -> Callable[[], None] | None:
    """One of ``user``'s at most ``cap`` open live streams (``open_streams`` counts them per user): the
    function that gives it back (call it once, when the stream ends), or None when all are open (the
    panels answer 429). Shared by the table panel's and the floor panel's streams."""
    if open_streams.get(user, 0) >= cap:
        return None
    open_streams[user] = open_streams.get(user, 0) + 1

    def release() -> None:
        left = open_streams.get(user, 0) - 1
        if left > 0:
            open_streams[user] = left
        else:
            open_streams.pop(user, None)

    return release


class HeaderLimit:
    """ASGI middleware: a request whose headers (names and values together) pass ``max_header_bytes``
    is answered 431 before the app sees it."""

    def __init__(self, app: ASGIApp, *, max_header_bytes: int) -> None:
        self.app = app
        self.max_header_bytes = max_header_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            headers: list[tuple[bytes, bytes]] = scope["headers"]
            if sum(len(name) + len(value) for name, value in headers) > self.max_header_bytes:
                await _refuse(send, 431, f"request headers over {self.max_header_bytes} bytes")
                return
        await self.app(scope, receive, send)


async def _refuse(send: Send, status: int, message: str) -> None:
    body = json.dumps({"detail": message}).encode("ascii")
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"connection", b"close"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})

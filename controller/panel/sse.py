"""The live stream: journal entries as Server-Sent Events.

Each entry (card-safe, from the backend's gate) is one event whose id is the journal seq; a browser that
reconnects sends Last-Event-ID and the backend replays from there. The backend yields ``None`` after
``keepalive_s`` without an entry: the keep-alive comment goes out then, after the session is checked
again. The response is controller/panel/streaming.py's :class:`BoundedStream`, the floor panel's too: a
bound on each send, so a client that reads nothing for ``send_timeout_s`` (a tablet asleep with the
page open) is dropped instead of holding its queue and task, and its subscriber's slot given back
however the stream ends.

(sse-starlette was tried here and left out: it starts a process-wide shutdown watcher task on the
event loop that outlives the app — on the daemon's own loop, beside the table — and decides shutdown
from uvicorn's signal handlers, which the embedded panel does not install. What it would add, the
disconnect and the send timeout, is these few lines.)

The fan-out hands every subscriber the same entry object: :class:`FrameCache` encodes it once for all.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable
from typing import Any

from starlette.responses import StreamingResponse

from controller.panel.backend import PanelBackend
from controller.panel.streaming import KEEP_ALIVE, LOGOUT, BoundedStream, retry_frame

SSE_FRAME_CACHE = 512


class FrameCache:
    """The encoded frame of each recent entry. A replayed entry is a new object (gated anew), so it
    never takes another's frame."""

    def __init__(self, size: int = SSE_FRAME_CACHE, time_text: Callable[[object], str] | None = None) -> None:
        self.size = size
        # The entry's time as the server writes it (``08:05:31 EST``: the property's zone, its
        # abbreviation from the zone database): the page shows it as it is, for a browser's Intl names
        # some zones otherwise ("GMT-5"), and a live row must read as the rows the server rendered.
        self.time_text = time_text
        self._frames: OrderedDict[int, tuple[dict[str, Any], bytes]] = OrderedDict()

    def frame(self, item: dict[str, Any]) -> bytes:
        seq = int(item["seq"])
        cached = self._frames.get(seq)
        if cached is not None and cached[0] is item:
            return cached[1]
        event = "reload" if item.get("kind") == "reload" else "journal"
        sent = item
        if self.time_text is not None and "time_utc" in item:
            sent = {**item, "time_text": self.time_text(item["time_utc"])}  # the shared entry untouched
        data = json.dumps(sent, separators=(",", ":"), ensure_ascii=False)
        try:
            frame = f"id: {seq}\nevent: {event}\ndata: {data}\n\n".encode()
        except UnicodeEncodeError:  # text UTF-8 cannot carry (a lone surrogate): escaped instead
            data = json.dumps(sent, separators=(",", ":"), ensure_ascii=True)
            frame = f"id: {seq}\nevent: {event}\ndata: {data}\n\n".encode()
        self._frames[seq] = (item, frame)
        while len(self._frames) > self.size:
            self._frames.popitem(last=False)
        return frame


def resume_seq(since: int | None, last_event_id: str) -> int | None:
    """Where to resume: Last-Event-ID (a browser's reconnect) over ``?since=``; None: from now."""
    text = last_event_id.strip()
    if text.isdigit() and len(text) <= 18:
        return int(text)
    return since


def event_stream(  # noqa: PLR0913 - keyword-only stream settings, each a bound of the stream
    backend: PanelBackend,
    frames: FrameCache,
    since_seq: int | None,
    *,
    keepalive_s: float,
    still_logged_in: Callable[[], bool],
    send_timeout_s: float,
    release: Callable[[], None],
) -> StreamingResponse:
    """The response for one subscriber; ``release`` is called once when it ends, however it ends."""

    async def stream() -> AsyncIterator[bytes]:
        yield retry_frame()
        async for item in backend.subscribe(since_seq, idle_s=keepalive_s):
            if not still_logged_in():
                yield LOGOUT
                return
            yield KEEP_ALIVE if item is None else frames.frame(item)

    return BoundedStream(stream(), send_timeout_s=send_timeout_s, release=release)

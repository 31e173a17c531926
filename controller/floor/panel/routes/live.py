"""The live streams: the floor map's (GET /api/events) and a progressive link's meter
(GET /api/progressive/<link>/events), each through the table panel's bounded stream
(controller/panel/streaming.py) with its send timeout, its user's slot given back once however it ends.

Neither touches the session, not even when opened: EventSource reconnects by itself, and a reconnect is
the page's doing, not the user's. Without a session (the panel restarted: sessions live in its memory;
or it ended while the stream reconnected) the answer is ``event: logout`` on a 200 stream.
"""

# No `from __future__ import annotations`: FastAPI reads the routes' annotations at run time.
from collections.abc import Callable

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response

from controller.floor.panel.context import FloorDep, FloorPanel
from controller.floor.panel.feed import FloorFeed, live_frames
from controller.floor.panel.settings import MAX_LINK_ID_CHARS, MAX_SIGN_FEEDS, SESSION_COOKIE
from controller.panel.limits import take_stream_slot
from controller.panel.streaming import BoundedStream, logout_stream

router = APIRouter(include_in_schema=False)
SIGNS = "\x00signs"  # the keyed signs' one budget ("\x00" is in no user's name)


def _stream(
    floor: FloorPanel, feed_of: Callable[[], FloorFeed], token: str | None, *, user: str, cap: int, hint: str
) -> Response:
    """``user``'s stream of the feed (token None: a sign's, opened by its key), or 429 past ``cap``
    (then no feed is started)."""
    release = take_stream_slot(floor.streams, user, cap)
    if release is None:
        return JSONResponse(
            {"error": f"{cap} live streams are open for {user.strip(chr(0))}: {hint}"},
            429,
            headers={"Retry-After": "5", "Cache-Control": "no-store"},
        )

    def still_logged_in() -> bool:
        return token is None or floor.current_session(token, touch=False) is not None

    frames = live_frames(feed_of(), still_logged_in, keepalive_s=floor.settings.sse_keepalive_s)
    return BoundedStream(frames, send_timeout_s=floor.settings.sse_send_timeout_s, release=release)


@router.get("/api/events")
async def events(request: Request, floor: FloorDep) -> Response:
    """The floor map, live: one frame a change (the feed reads once a tick for every stream)."""
    token = request.cookies.get(SESSION_COOKIE)
    session = floor.current_session(token, touch=False)
    if session is None:
        return logout_stream()
    cap = floor.settings.max_streams_per_user
    return _stream(floor, lambda: floor.feed, token, user=session.user, cap=cap, hint="close a tab first")


@router.get("/api/progressive/{link_id}/events")
async def progressive_events(link_id: str, request: Request, floor: FloorDep, key: str = "") -> Response:
    """The link's meter, live (the map's stream: the same session rules, slots and frames; or a
    sign's, by the sign key: no session, one shared cap)."""
    token = request.cookies.get(SESSION_COOKIE)
    session = floor.current_session(token, touch=False)
    keyed = session is None and floor.sign_key_ok(key)
    if session is None and not keyed:
        return logout_stream()
    if "\x00" in link_id or len(link_id) > MAX_LINK_ID_CHARS:
        return JSONResponse({"error": "no such progressive link"}, 404)
    if link_id not in floor.sign_feeds and len(floor.sign_feeds) >= MAX_SIGN_FEEDS:
        return JSONResponse({"error": "too many progressive links shown at once"}, 429)

    def feed() -> FloorFeed:
        return floor.sign_feed(link_id)

    if session is None:
        cap = floor.settings.max_sign_streams
        return _stream(floor, feed, None, user=SIGNS, cap=cap, hint="close one first")
    cap = floor.settings.max_streams_per_user
    return _stream(floor, feed, token, user=session.user, cap=cap, hint="close one first")

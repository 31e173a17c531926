"""The live stream route: GET /api/events (controller/panel/sse.py carries the stream)."""

# No `from __future__ import annotations`: FastAPI reads the routes' annotations at run time.
from typing import Annotated

from fastapi import APIRouter, HTTPException, Query, Request
from fastapi.responses import StreamingResponse

from controller.panel.context import MAX_SEQ, ApiSession, PanelDep
from controller.panel.limits import take_stream_slot
from controller.panel.sse import event_stream, resume_seq

router = APIRouter()


@router.get("/api/events", tags=["journal"], response_class=StreamingResponse)
async def api_events(
    request: Request,
    panel: PanelDep,
    session: ApiSession,
    since: Annotated[
        int | None,
        Query(ge=0, le=MAX_SEQ, description="resume after this seq (else Last-Event-ID, else now)"),
    ] = None,
) -> StreamingResponse:
    """Server-Sent Events: each journal entry (card-safe) with the journal seq as its event id."""
    user = session.user
    release = take_stream_slot(panel.streams, user, panel.settings.max_streams_per_user)
    if release is None:
        raise HTTPException(
            429,
            f"{panel.settings.max_streams_per_user} live streams are open for {user}: close a tab first",
            headers={"Retry-After": "5"},
        )

    token = session.token
    return event_stream(
        panel.backend,
        panel.frames,
        resume_seq(since, request.headers.get("last-event-id", "")),
        keepalive_s=panel.settings.sse_keepalive_s,
        still_logged_in=lambda: panel.sessions.get(token, touch=False) is not None,
        send_timeout_s=panel.settings.sse_send_timeout_s,
        release=release,
    )

"""The alert queue, acknowledging alerts (one, or in bulk) and releasing a quarantined table
(controller/floor/release.py: the same check and record as ``flushtable floor release``)."""

# No `from __future__ import annotations`: FastAPI reads the routes' annotations at run time.
from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from controller.floor.panel.context import FloorDep, FloorPanel, FormSession, FormText, PageSession, log
from controller.floor.panel.settings import ACKNOWLEDGING_ROLES, FloorSession
from controller.floor.queries import QueryFailed, QueryRefused
from controller.floor.release import RELEASING_ROLES, ReleaseRefused

router = APIRouter(include_in_schema=False)
MAX_ACK_FIELD_CHARS = 24  # ``ack_`` and an id: a longer name names no alert


async def alerts_view(
    floor: FloorPanel, session: FloorSession, *, message: str = "", status: int = 200
) -> Response:
    alerts = await floor.queries.alerts()
    quarantined = await floor.queries.quarantined_tables()
    releases = await floor.queries.releases()
    can_ack = session.role in ACKNOWLEDGING_ROLES and floor.writable
    can_release = session.role in RELEASING_ROLES and floor.writable
    response = await floor.page("alerts.html", session, alerts=alerts, can_ack=can_ack,
                            quarantined=quarantined, releases=releases, can_release=can_release,
                            message=message)  # fmt: skip
    response.status_code = status
    return response


def _cannot_acknowledge(floor: FloorPanel, session: FloorSession) -> Response | None:
    if session.role not in ACKNOWLEDGING_ROLES or not floor.writable:
        return HTMLResponse(f"A {session.role} cannot acknowledge alerts.", 403)
    return None


@router.get("/alerts", response_class=HTMLResponse)
async def alerts_page(floor: FloorDep, session: PageSession) -> Response:
    return await alerts_view(floor, session)


@router.post("/alerts/{alert_id}/acknowledge")
async def acknowledge(alert_id: int, floor: FloorDep, session: FormSession) -> Response:
    refused = _cannot_acknowledge(floor, session)
    if refused is not None:
        return refused
    try:
        await floor.queries.acknowledge(session.user, [alert_id], open_only=False)
    except QueryRefused:  # an id past bigint
        return await alerts_view(floor, session, message="Nothing acknowledged: no such alert.", status=400)
    return RedirectResponse("/alerts", status_code=303)


@router.post("/alerts/acknowledge")
async def acknowledge_many(request: Request, floor: FloorDep, session: FormSession) -> Response:
    """Bulk: the alerts the form names (``ack_<id>`` fields: the ticked ones, or every open one the
    page listed), each acknowledged under the user's name unless it already was or has cleared."""
    refused = _cannot_acknowledge(floor, session)
    if refused is not None:
        return refused
    form = await request.form()  # already read, within the body limit, by FastAPI for the CSRF token
    ids = sorted(
        {
            int(k[4:])
            for k in form
            if k.startswith("ack_") and k[4:].isdigit() and len(k) < MAX_ACK_FIELD_CHARS
        }
    )
    if not ids:
        return await alerts_view(
            floor, session, message="Nothing acknowledged: no alert was selected.", status=400
        )
    try:
        done = await floor.queries.acknowledge(session.user, ids)
    except QueryRefused:  # an id past bigint
        return await alerts_view(floor, session, message="Nothing acknowledged: no such alert.", status=400)
    log.info("floor_alerts_acknowledged", user=session.user, alerts=done, asked=len(ids))
    skipped = len(ids) - done
    message = f"Acknowledged {done} alert{'s' if done != 1 else ''} as {session.user}" + (
        f"; {skipped} already acknowledged or cleared." if skipped else "."
    )
    return await alerts_view(floor, session, message=message)


@router.post("/tables/{table_id}/release")
async def release(table_id: str, floor: FloorDep, session: FormSession, reason: FormText = "") -> Response:
    """Release a quarantined table: a manager's, with a reason; refused in one line otherwise."""
    if session.role not in RELEASING_ROLES or not floor.writable:
        return HTMLResponse(f"A {session.role} cannot release a table (a manager can).", 403)
    if "\x00" in table_id:  # PostgreSQL's text holds no NUL: no table has such a name
        return HTMLResponse("No such table on the floor.", 404)
    if "\x00" in reason:
        return HTMLResponse("Release refused: the reason holds a NUL byte.", 422)
    try:
        await floor.queries.release(table_id[:64], reason=reason, by=session.user)
    except ReleaseRefused as error:
        return await alerts_view(floor, session, message=f"Release refused: {error}", status=409)
    except QueryRefused as error:  # any other text PostgreSQL cannot store: bad input, one line
        return HTMLResponse(f"Release refused: {error}.", 422)
    except QueryFailed as error:
        return await alerts_view(floor, session, message=f"Release failed: {error}", status=503)
    return RedirectResponse("/alerts", status_code=303)

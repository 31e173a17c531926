"""Meters (by table, pit, game and shift), the round search, a round's page, its CSV and JSON, and the
auditor's disclosure of a closed round's withheld private parts (docs/floor.md "The floor panel")."""

# No `from __future__ import annotations`: FastAPI reads the routes' annotations at run time.
from fastapi import APIRouter
from fastapi.responses import HTMLResponse, JSONResponse, Response

from controller.floor import export
from controller.floor.panel.context import ApiSession, FloorDep, FormSession, FormText, PageSession, log
from controller.floor.panel.settings import (
    DISCLOSING_ROLES,
    MAX_REASON_CHARS,
    PRIVATE_BLIND_ROLES,
    search_moment,
)
from controller.floor.panel.views import CLOSED_STATUSES, MEASURES, meters_rows, round_detail
from controller.floor.queries import Disclosure, QueryRefused
from controller.journal import entries as typed
from controller.journal.chain import canonical_json

router = APIRouter(include_in_schema=False)
NO_SUCH_ROUND = "No such round on the floor."


@router.get("/meters", response_class=HTMLResponse)
async def meters_page(floor: FloorDep, session: PageSession, by: str = "table") -> Response:
    by, rows = await meters_rows(floor, by)
    top = max([abs(int(r["house_win_cents"] or 0)) for r in rows] +
              [abs(int(r["theoretical_win_cents"] or 0)) for r in rows] + [1])  # fmt: skip
    return await floor.page("meters.html", session, rows=rows, by=by, measures=MEASURES, scale=top)


@router.get("/meters/csv")
async def meters_csv(floor: FloorDep, _session: PageSession, by: str = "table") -> Response:
    """The meters page's rows as CSV (controller/floor/export.py), behind the page's login."""
    by, rows = await meters_rows(floor, by)
    prop = floor.settings.property_settings
    return export.csv_response(export.meters_csv(by, rows, prop), f"floor-meters-by-{by}.csv")


@router.get("/rounds", response_class=HTMLResponse)
async def rounds_page(
    *, floor: FloorDep, session: PageSession, q: str = "", table: str = "", since: str = "", until: str = ""
) -> Response:
    searched = {"q": q, "table": table, "since": since, "until": until}
    prop = floor.settings.property_settings
    try:
        since_utc = search_moment(since, prop) if since.strip() else None
        until_utc = search_moment(until, prop) if until.strip() else None
    except ValueError as error:
        return await floor.page(
            "rounds.html", session, rounds=[], message=f"Search refused: {error}", **searched
        )
    try:
        rounds = await floor.queries.search_rounds(q.strip()[:64], table.strip()[:32], since_utc, until_utc)
        message = ""
    except QueryRefused as error:
        rounds, message = [], f"Search refused: {error}"
    return await floor.page("rounds.html", session, rounds=rounds, message=message, **searched)


def _show_private(role: str) -> bool:
    return role not in PRIVATE_BLIND_ROLES


@router.get("/tables/{table_id}/rounds/{round_id}", response_class=HTMLResponse)
async def round_page(table_id: str, round_id: str, floor: FloorDep, session: PageSession) -> Response:
    detail = await round_detail(floor, table_id, round_id, show_private=_show_private(session.role))
    if detail is None:
        return HTMLResponse(NO_SUCH_ROUND, 404)
    can_disclose = (
        session.role in DISCLOSING_ROLES
        and floor.writable
        and detail["status"] in CLOSED_STATUSES
        and any(e["withheld"] for e in detail["events"])
    )
    return await floor.page("round.html", session, **detail, can_disclose=can_disclose, message="")


@router.get("/tables/{table_id}/rounds/{round_id}/csv")
async def round_csv(table_id: str, round_id: str, floor: FloorDep, session: PageSession) -> Response:
    """The round page as the CLI's recall CSV: what the page shows (its events, their private parts
    only where the page shows them), nothing more."""
    detail = await round_detail(floor, table_id, round_id, show_private=_show_private(session.role))
    if detail is None:
        return HTMLResponse(NO_SUCH_ROUND, 404)
    record = export.round_record(round_id, detail["events"])
    if record is None:
        return HTMLResponse("The round is not closed yet: its CSV comes once it is.", 409)
    return export.csv_response(
        export.round_csv(record, floor.settings.property_settings), f"round-{table_id}-{round_id}.csv"
    )


@router.get("/api/tables/{table_id}/rounds/{round_id}")
async def round_json(table_id: str, round_id: str, floor: FloorDep, session: ApiSession) -> Response:
    detail = await round_detail(floor, table_id, round_id, show_private=_show_private(session.role))
    return JSONResponse(detail or {"error": "no such round"}, 200 if detail else 404)


@router.post("/tables/{table_id}/rounds/{round_id}/disclose", response_class=HTMLResponse)
async def disclose(
    table_id: str, round_id: str, floor: FloorDep, session: FormSession, reason: FormText = ""
) -> Response:
    """An auditor is shown a closed round's withheld private parts, for a stated reason recorded first
    (floor_private_disclosures); a reload shows them withheld again."""
    if session.role not in DISCLOSING_ROLES or not floor.writable:
        return HTMLResponse(f"A {session.role} cannot be shown withheld private parts (an auditor can).", 403)
    reason = " ".join(reason.split())
    detail = await round_detail(floor, table_id, round_id)
    if detail is None:
        return HTMLResponse(NO_SUCH_ROUND, 404)
    if not reason or len(reason) > MAX_REASON_CHARS:
        why = "a reason is required" if not reason else f"the reason is over {MAX_REASON_CHARS} characters"
        return await floor.page(
            "round.html", session, **detail, can_disclose=True, message=f"Not shown: {why}."
        )
    if detail["status"] not in CLOSED_STATUSES:
        return await floor.page("round.html", session, **detail, can_disclose=False,
                                message="Not shown: the round is not closed.")  # fmt: skip
    withheld = {e["seq"] for e in detail["events"] if e["withheld"]}
    shown = Disclosure(table_id, round_id, detail["status"], session.user, session.role, reason)
    parts = await floor.queries.disclose(shown, withheld)
    log.warning("floor_private_disclosed", user=session.user, table_id=table_id, round_id=round_id,
                parts=len(parts), reason=reason)  # fmt: skip
    for event in detail["events"]:
        if event["seq"] in parts:
            event["disclosed"] = canonical_json(typed.open_private(parts[event["seq"]]))
    message = (
        f"Shown to {session.user} for: {reason} (recorded in floor_private_disclosures; "
        f"{len(parts)} part(s) the floor holds). A reload shows them withheld again."
    )
    return await floor.page("round.html", session, **detail, can_disclose=False, message=message)

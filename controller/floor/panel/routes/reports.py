"""The gaming day's report and its CSV (controller/floor/gaming_day.py), and the Surveillance page
(controller/floor/surveillance.py)."""

# No `from __future__ import annotations`: FastAPI reads the routes' annotations at run time.
from datetime import UTC, datetime

from fastapi import APIRouter
from fastapi.responses import HTMLResponse, Response

from controller.errors import UserError
from controller.floor import export, gaming_day, surveillance
from controller.floor.panel.context import FloorDep, PageSession
from controller.floor.panel.views import day_report, default_day

router = APIRouter(include_in_schema=False)
MAX_PIT_CHARS = 64


@router.get("/reports", response_class=HTMLResponse)
async def reports_page(floor: FloorDep, session: PageSession, day: str = "", pit: str = "") -> Response:
    settings = floor.settings
    day = day.strip()[:10] or default_day(floor)
    try:
        report = await day_report(floor, day, pit.strip()[:MAX_PIT_CHARS])
    except UserError as error:
        return await floor.page("report.html", session, report=None, day=day, pit=pit, message=str(error))
    rows = [
        {"scope": r.scope, "key": r.key, "pit": r.pit, "games": ", ".join(sorted(r.figures.games)),
         "measures": dict(gaming_day.measures(r.figures)), "figures": r.figures}
        for r in report.rows
    ]  # fmt: skip
    printed = settings.time_text(datetime.fromtimestamp(settings.wall_clock(), UTC), with_date=True)
    return await floor.page("report.html", session, report=report, rows=rows, day=day, pit=pit, message="",
                            printed_utc=printed)  # fmt: skip


@router.get("/reports/csv")
async def reports_csv(floor: FloorDep, _session: PageSession, day: str = "", pit: str = "") -> Response:
    """The report's CSV: its last line the SHA-256 of every byte before it, which is also the
    ``X-Report-SHA256`` header and the figure the printed page shows."""
    day = day.strip()[:10] or default_day(floor)
    try:
        report = await day_report(floor, day, pit.strip()[:MAX_PIT_CHARS])
    except UserError as error:
        return HTMLResponse(str(error), 400)
    suffix = f"-pit-{pit}" if pit else ""
    response = export.csv_response(report.csv_text(), f"gaming-day-{day}{suffix}.csv")
    response.headers["X-Report-SHA256"] = report.digest
    return response


@router.get("/surveillance", response_class=HTMLResponse)
async def surveillance_page(floor: FloorDep, session: PageSession, table: str = "") -> Response:
    """The last significant events, newest first: the events the floor service publishes on
    surveillance.<table>, made from the same entries by the same function."""
    settings = floor.settings
    rows = await floor.queries.newest_entries(
        surveillance.EVENT_COLUMNS, surveillance.EVENT_ENTRY_KINDS, table.strip()[:32]
    )
    events = surveillance.events_of_rows(rows, settings.surveillance_big_win_cents, settings.money_format)[
        :200
    ]
    return await floor.page("surveillance.html", session, events=events, table=table,
                            threshold=settings.surveillance_big_win_cents)  # fmt: skip

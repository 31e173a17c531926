"""The pages staff look at, rendered on the server (Jinja2, autoescaped), and the fragments the page's
script swaps in when the live stream says the journal moved."""

# No `from __future__ import annotations`: FastAPI reads the routes' annotations at run time.
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Annotated, Any

from fastapi import APIRouter, Depends, HTTPException
from fastapi.responses import HTMLResponse

from controller.errors import UserError
from controller.locale import PropertySettings, time_text
from controller.names import GAME_TITLES
from controller.panel.auth import Session, role_allows
from controller.panel.context import PageSession, Panel, PanelDep
from controller.panel.diagram import state_diagram
from controller.panel.shift_meters import day_range, shift_range

router = APIRouter(include_in_schema=False)
NO_STORE = {"Cache-Control": "no-store"}


def _page(panel: Panel, name: str, session: Session, active: str, **context: Any) -> HTMLResponse:
    snapshot = panel.backend.snapshot()
    html = panel.render(
        name,
        session=session,
        active=active,
        table=snapshot,
        alert_count=snapshot["active_alerts"],
        can_supervise=role_allows(session.role, "supervisor"),
        can_manage=role_allows(session.role, "manager"),
        **context,
    )
    return HTMLResponse(html, headers=NO_STORE)


def _table_context(panel: Panel) -> dict[str, Any]:
    snapshot = panel.backend.snapshot()
    return {
        "table": snapshot,
        "diagram": state_diagram(snapshot["game"], snapshot["phase"]),
        "devices": panel.backend.devices(),
    }


@router.get("/", response_class=HTMLResponse)
async def table_page(panel: PanelDep, session: PageSession) -> HTMLResponse:
    context = _table_context(panel)
    context.pop("table")
    return _page(panel, "table.html", session, "table", **context)


@router.get("/partials/table", response_class=HTMLResponse)
async def table_partial(panel: PanelDep, session: PageSession) -> HTMLResponse:
    html = panel.render(
        "_table.html",
        session=session,
        can_supervise=role_allows(session.role, "supervisor"),
        **_table_context(panel),
    )
    return HTMLResponse(html, headers=NO_STORE)


@router.get("/alerts", response_class=HTMLResponse)
async def alerts_page(panel: PanelDep, session: PageSession, show: str = "open") -> HTMLResponse:
    alerts = panel.backend.alerts(include_cleared=show == "all")
    read_only = panel.backend.snapshot().get("read_only", False)
    return _page(panel, "alerts.html", session, "alerts", alerts=alerts, show=show, table_read_only=read_only)


@router.get("/partials/alerts", response_class=HTMLResponse)
async def alerts_partial(panel: PanelDep, session: PageSession, show: str = "open") -> HTMLResponse:
    html = panel.render(
        "_alerts.html",
        alerts=panel.backend.alerts(include_cleared=show == "all"),
        can_supervise=role_allows(session.role, "supervisor"),
        session=session,
        table_read_only=panel.backend.snapshot().get("read_only", False),
    )
    return HTMLResponse(html, headers=NO_STORE)


RECALL_STATUSES = ("settled", "dead", "void")


def listed_rounds(
    records: list[dict[str, Any]], *, status: str, game: str, faults: str
) -> list[dict[str, Any]]:
    """The recall page's filters (its list and its CSV, controller/panel/routes/export.py)."""
    return [
        r
        for r in records
        if (not status or r["status"] == status)
        and (not game or (r.get("settlement") or {}).get("game") == game)
        and (faults != "yes" or r.get("faults"))
    ]


@dataclass(frozen=True, slots=True)
class RecallQuery:
    """The recall page's filters, as query parameters (its CSV takes the same)."""

    status: str = ""
    game: str = ""
    last: int = 20
    faults: str = ""

    @property
    def rounds(self) -> int:
        """How many of the last rounds the filters apply to: 1 to 50."""
        return max(1, min(self.last, 50))


RecallFilters = Annotated[RecallQuery, Depends()]


def recall_listing(
    panel: Panel, query: RecallQuery
) -> tuple[list[dict[str, Any]], str, list[dict[str, Any]]]:
    """The recall page's rounds (and its CSV's): the last ``query.rounds`` recalled, the status filter
    as understood (an unknown one is no filter), and the rounds the filters keep."""
    records = panel.backend.recall(last=query.rounds)
    status = query.status if query.status in RECALL_STATUSES else ""
    return records, status, listed_rounds(records, status=status, game=query.game, faults=query.faults)


@router.get("/recall", response_class=HTMLResponse)
async def recall_page(*, panel: PanelDep, session: PageSession, query: RecallFilters) -> HTMLResponse:
    """The last rounds, newest first, with their times and game titles; filtered by status, game and
    whether a fault was raised in them (the filters apply to the last ``last`` rounds, at most 50)."""
    records, status, shown = recall_listing(panel, query)
    games = sorted({str((r.get("settlement") or {}).get("game")) for r in records if r.get("settlement")})
    filters = {"status": status, "game": query.game, "last": query.rounds, "faults": query.faults == "yes"}
    return _page(
        panel,
        "recall.html",
        session,
        "recall",
        records=shown,
        record=None,
        filters=filters,
        games=[(g, GAME_TITLES.get(g, g)) for g in games],
        statuses=RECALL_STATUSES,
    )


@router.get("/recall/{round_id}", response_class=HTMLResponse)
async def recall_round_page(panel: PanelDep, session: PageSession, round_id: str) -> HTMLResponse:
    records = panel.backend.recall(round_id=round_id[:80])
    if not records:
        raise HTTPException(404, f"no round {round_id[:80]!r} in the journal")
    return _page(
        panel,
        "recall.html",
        session,
        "recall",
        records=[],
        record=records[0],
        # The dispute file's print time (panel.js sets it again when the page is printed later).
        printed_utc=time_text(datetime.now(UTC), panel.settings.property_settings),
        filters={},
        games=[],
        statuses=(),
    )


@router.get("/log", response_class=HTMLResponse)
async def log_page(
    *,
    panel: PanelDep,
    session: PageSession,
    kind: str = "",
    round_id: str = "",
    source: str = "",
    limit: int = 200,
) -> HTMLResponse:
    kinds = [k for k in kind[:400].split(",") if k] or None
    entries = panel.backend.journal_entries(
        limit=max(1, min(limit, 1000)),
        kinds=kinds,
        round_id=round_id[:80] or None,
        source=source[:80] or None,
    )
    return _page(
        panel,
        "log.html",
        session,
        "log",
        entries=entries,
        filters={"kind": kind[:400], "round_id": round_id[:80], "source": source[:80]},
    )


def _meters_range(
    date: str, shift: str, first: str, last: str, prop: PropertySettings
) -> tuple[str | None, str | None, str]:
    """The page's choice as a UTC range: a shift of a gaming day, whole days from/to (the property's
    zone), or the whole journal."""
    if shift and date:
        start, end = shift_range(date[:10], shift[:10], prop)
        return (
            start,
            end,
            f"{shift} shift of {date[:10]} ({time_text(start, prop)} to {time_text(end, prop)})",
        )
    if first or last:
        start, end = day_range(first[:10] or last[:10], last[:10] or first[:10], prop)
        return start, end, f"{first[:10] or last[:10]} to {last[:10] or first[:10]} ({prop.time_zone})"
    return None, None, "the whole journal"


@router.get("/meters", response_class=HTMLResponse)
async def meters_page(
    *, panel: PanelDep, session: PageSession, date: str = "", shift: str = "", first: str = "", last: str = ""
) -> HTMLResponse:
    try:
        start, end, label = _meters_range(date, shift, first, last, panel.settings.property_settings)
    except UserError as error:
        raise HTTPException(422, str(error)) from None
    return _page(
        panel,
        "meters.html",
        session,
        "meters",
        meters=panel.backend.meters(start_utc=start, end_utc=end),
        range_label=label,
        choice={"date": date[:10], "shift": shift[:10], "first": first[:10], "last": last[:10]},
        shifts=panel.settings.property_settings.shifts,
    )


@router.get("/partials/meters", response_class=HTMLResponse)
async def meters_partial(panel: PanelDep, _session: PageSession) -> HTMLResponse:
    return HTMLResponse(panel.render("_meters.html", meters=panel.backend.meters()), headers=NO_STORE)

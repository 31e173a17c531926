"""The pages staff look at, rendered on the server (Jinja2, autoescaped), and the fragments the page's
script swaps in when the live stream says the journal moved."""

# No `from __future__ import annotations`: FastAPI reads the routes' annotations at run time.
from typing import Any

from fastapi import APIRouter, HTTPException
from fastapi.responses import HTMLResponse

from controller.panel.auth import Session, role_allows
from controller.panel.context import PageSession, Panel, PanelDep
from controller.panel.diagram import state_diagram

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
    return _page(panel, "alerts.html", session, "alerts", alerts=alerts, show=show)


@router.get("/partials/alerts", response_class=HTMLResponse)
async def alerts_partial(panel: PanelDep, session: PageSession, show: str = "open") -> HTMLResponse:
    html = panel.render(
        "_alerts.html",
        alerts=panel.backend.alerts(include_cleared=show == "all"),
        can_supervise=role_allows(session.role, "supervisor"),
        session=session,
    )
    return HTMLResponse(html, headers=NO_STORE)


@router.get("/recall", response_class=HTMLResponse)
async def recall_page(panel: PanelDep, session: PageSession) -> HTMLResponse:
    return _page(panel, "recall.html", session, "recall", records=panel.backend.recall(last=10), record=None)


@router.get("/recall/{round_id}", response_class=HTMLResponse)
async def recall_round_page(panel: PanelDep, session: PageSession, round_id: str) -> HTMLResponse:
    records = panel.backend.recall(round_id=round_id[:80])
    if not records:
        raise HTTPException(404, f"no round {round_id[:80]!r} in the journal")
    return _page(panel, "recall.html", session, "recall", records=[], record=records[0])


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


@router.get("/meters", response_class=HTMLResponse)
async def meters_page(panel: PanelDep, session: PageSession) -> HTMLResponse:
    return _page(panel, "meters.html", session, "meters", meters=panel.backend.meters())


@router.get("/partials/meters", response_class=HTMLResponse)
async def meters_partial(panel: PanelDep, _session: PageSession) -> HTMLResponse:
    return HTMLResponse(panel.render("_meters.html", meters=panel.backend.meters()), headers=NO_STORE)

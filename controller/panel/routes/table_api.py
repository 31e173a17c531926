"""The table API: what a logged-in user of any role may read, as JSON. No card before its reveal
(every entry leaves through the backend's gate)."""

# No `from __future__ import annotations`: FastAPI reads the routes' annotations at run time.
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse

from controller.panel.context import MAX_SEQ, ApiSession, PanelDep

router = APIRouter()


@router.get("/healthz", tags=["monitoring"])
async def healthz(panel: PanelDep) -> dict[str, Any]:
    """Liveness for monitoring; answers without a login and shows no table detail."""
    health = panel.backend.health()
    return {"status": health["status"], "last_seq": health["last_seq"]}


@router.get("/openapi.json", include_in_schema=False)
async def openapi(request: Request, _session: ApiSession) -> JSONResponse:
    return JSONResponse(request.app.openapi())


@router.get("/api/session", tags=["session"])
async def api_whoami(session: ApiSession) -> dict[str, Any]:
    """Who is logged in, the role, and the CSRF token for state-changing requests."""
    return {"user": session.user, "role": session.role, "csrf_token": session.csrf_token}


@router.get("/api/table", tags=["table"])
async def api_table(panel: PanelDep, _session: ApiSession) -> dict[str, Any]:
    """The table at a glance. No card leaves before its reveal."""
    return panel.backend.snapshot()


@router.get("/api/devices", tags=["table"])
async def api_devices(panel: PanelDep, _session: ApiSession) -> list[dict[str, Any]]:
    return panel.backend.devices()


@router.get("/api/alerts", tags=["alerts"])
async def api_alerts(
    panel: PanelDep, _session: ApiSession, include_cleared: bool = False
) -> list[dict[str, Any]]:
    return panel.backend.alerts(include_cleared=include_cleared)


@router.get("/api/recall", tags=["recall"])
async def api_recall(
    panel: PanelDep,
    _session: ApiSession,
    last: Annotated[int, Query(ge=1, le=50)] = 10,
    round_id: Annotated[str | None, Query(max_length=80)] = None,
) -> list[dict[str, Any]]:
    """Recall records (docs/journal.md "Recall") of the last rounds, or of one round."""
    return panel.backend.recall(last=last, round_id=round_id)


@router.get("/api/journal", tags=["journal"])
async def api_journal(
    *,
    panel: PanelDep,
    _session: ApiSession,
    since_seq: Annotated[int, Query(ge=0, le=MAX_SEQ)] = 0,
    limit: Annotated[int, Query(ge=1, le=1000)] = 200,
    kind: Annotated[str | None, Query(max_length=400, description="comma-separated kinds")] = None,
    round_id: Annotated[str | None, Query(max_length=80)] = None,
    source: Annotated[str | None, Query(max_length=80)] = None,
) -> list[dict[str, Any]]:
    """Journal entries, card-safe: since_seq > 0 reads forward from there, else the newest first."""
    kinds = [k for k in kind.split(",") if k] if kind else None
    return panel.backend.journal_entries(
        since_seq=since_seq,
        limit=limit,
        kinds=kinds,
        round_id=round_id,
        source=source,
        newest_first=since_seq == 0,
    )


@router.get("/api/meters", tags=["meters"])
async def api_meters(panel: PanelDep, _session: ApiSession) -> dict[str, Any]:
    return panel.backend.meters()

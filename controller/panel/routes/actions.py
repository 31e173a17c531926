"""Operator actions: every declared action (controller/panel/actions.py) at POST /api/actions/{name},
made by one function, and acknowledging an alert (the panel's own record, not an engine action)."""

# No `from __future__ import annotations`: FastAPI reads the routes' annotations at run time.
from typing import Annotated

from fastapi import APIRouter, Depends
from fastapi import Path as PathParam
from pydantic import BaseModel

from controller.panel.actions import PANEL_ACTIONS, PanelAction
from controller.panel.auth import Session
from controller.panel.context import PanelDep, needs

router = APIRouter(tags=["actions"])


class Done(BaseModel):
    ok: bool = True


FaultId = Annotated[str, PathParam(min_length=1, max_length=80)]


@router.post("/api/alerts/{fault_id}/acknowledge", tags=["alerts"])
async def api_acknowledge(
    fault_id: FaultId,
    panel: PanelDep,
    session: Annotated[Session, Depends(needs("supervisor", "acknowledge_fault"))],
) -> Done:
    panel.backend.acknowledge_alert(fault_id, session.user)
    return Done()


def _serve(declared: PanelAction) -> None:
    """The route of one declared action: its body validated into the action's dataclass."""
    body_model = declared.body
    allowed = needs(declared.role, declared.name)

    async def perform(
        body: body_model,  # type: ignore[valid-type]
        panel: PanelDep,
        session: Annotated[Session, Depends(allowed)],
    ) -> Done:
        await panel.backend.perform(declared.build(body, session.user))
        return Done()

    router.post(
        declared.url,
        name=declared.name,
        summary=declared.label,
        description=f"{declared.action.__doc__ or declared.label} Needs role {declared.role}.",
    )(perform)


for _declared in PANEL_ACTIONS:
    _serve(_declared)

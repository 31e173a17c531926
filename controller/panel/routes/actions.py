"""Operator actions: every declared action (controller/panel/actions.py) at POST /api/actions/{name},
made by one function, and acknowledging an alert (the panel's own record, not an engine action)."""

# No `from __future__ import annotations`: FastAPI reads the routes' annotations at run time.
from typing import Annotated

from fastapi import APIRouter, Depends, HTTPException
from fastapi import Path as PathParam
from pydantic import BaseModel, ConfigDict, Field

from controller.engine.actions import ClearFault
from controller.errors import UserError
from controller.journal.entries import PanelRequest
from controller.panel.actions import PANEL_ACTIONS, PanelAction, Reason
from controller.panel.auth import Session
from controller.panel.context import PanelDep, needs

router = APIRouter(tags=["actions"])


class Done(BaseModel):
    ok: bool = True
    change_id: str | None = None  # a money setting's proposal (two-person control): its id


FaultId = Annotated[str, PathParam(min_length=1, max_length=80)]


@router.post("/api/alerts/{fault_id}/acknowledge", tags=["alerts"])
async def api_acknowledge(
    fault_id: FaultId,
    panel: PanelDep,
    session: Annotated[Session, Depends(needs("supervisor", "acknowledge_fault"))],
) -> Done:
    panel.backend.acknowledge_alert(fault_id, session.user)
    return Done()


class BulkAlerts(BaseModel):
    """Several alerts at once, one reason for all: each acknowledged (if still active) and, with
    ``clear``, each latched one cleared through the ClearFault declaration, as one by one would."""

    model_config = ConfigDict(extra="forbid")
    fault_ids: list[Annotated[str, Field(min_length=1, max_length=80)]] = Field(min_length=1, max_length=100)
    reason: Reason
    clear: bool = False


class BulkDone(BaseModel):
    acknowledged: list[str]
    cleared: list[str]
    refused: dict[str, str]


_CLEAR = next(declared for declared in PANEL_ACTIONS if declared.action is ClearFault)


@router.post("/api/alerts/bulk", tags=["alerts"])
async def api_bulk_alerts(
    body: BulkAlerts,
    panel: PanelDep,
    session: Annotated[Session, Depends(needs("supervisor", "bulk_alerts"))],
) -> BulkDone:
    """Acknowledge (and with ``clear``, clear) the chosen alerts with one reason. Each fault is done
    or refused on its own (the answer says which); the reason is journaled with the request."""
    backend = panel.backend
    if getattr(backend, "read_only", False):
        raise HTTPException(503, "this panel is read-only: it acknowledges and clears nothing")
    by_id = {a["fault_id"]: a for a in backend.alerts(include_cleared=True)}
    done = BulkDone(acknowledged=[], cleared=[], refused={})
    for fault_id in dict.fromkeys(body.fault_ids):
        alert = by_id.get(fault_id)
        if alert is None:
            done.refused[fault_id] = "no such fault"
            continue
        if alert["state"] in ("cleared", "resolved"):
            done.refused[fault_id] = f"already {alert['state']}"
            continue
        try:
            if alert["state"] == "active":
                backend.acknowledge_alert(fault_id, session.user)
                done.acknowledged.append(fault_id)
            if body.clear and alert["severity"] == "latching":
                clear = _CLEAR.body(fault_id=fault_id, reason=body.reason)
                await backend.perform(_CLEAR.build(clear, session.user))
                done.cleared.append(fault_id)
        except UserError as error:
            done.refused[fault_id] = str(error)
    request = PanelRequest(
        action="bulk_alerts",
        by=session.user,
        request={"fault_ids": list(body.fault_ids), "reason": body.reason, "clear": body.clear},
        outcome=f"acknowledged {len(done.acknowledged)}, cleared {len(done.cleared)}, "
        f"refused {len(done.refused)}",
    )
    backend.record(request.kind, request, source=f"operator:{session.user}")
    return done


def _serve(declared: PanelAction) -> None:
    """The route of one declared action: its body validated into the action's dataclass."""
    body_model = declared.body
    allowed = needs(declared.role, declared.name)

    async def perform(
        body: body_model,  # type: ignore[valid-type]
        panel: PanelDep,
        session: Annotated[Session, Depends(allowed)],
    ) -> Done:
        if declared.controlled is not None:  # never applied here: proposed, for a second manager
            change_id = await panel.backend.propose_action(  # type: ignore[attr-defined]
                declared.build(body, session.user), declared.controlled
            )
            return Done(change_id=change_id)
        await panel.backend.perform(declared.build(body, session.user))
        return Done()

    router.post(
        declared.url,
        name=declared.name,
        response_model_exclude_none=True,  # {"ok": true}, with the change_id of a proposal
        summary=declared.label,
        description=f"{declared.action.__doc__ or declared.label} Needs role {declared.role}.",
    )(perform)


for _declared in PANEL_ACTIONS:
    _serve(_declared)

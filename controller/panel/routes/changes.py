"""Two-person control of the money settings (controller/changes.py; docs/panel.md "Changes"): a
manager proposes, a second, different manager approves (or any manager rejects). Every step is
journaled with the names; a refusal (self-approval, a lapsed proposal, a round in play) answers 409
with its reason, journaled as change_refused. `flushtable change` speaks to these routes."""

# No `from __future__ import annotations`: FastAPI reads the routes' annotations at run time.
from typing import Annotated, Any

from fastapi import APIRouter, Depends
from fastapi import Path as PathParam
from pydantic import BaseModel, ConfigDict, Field

from controller.changes import CHANGE_KINDS
from controller.panel.actions import Reason
from controller.panel.auth import Session
from controller.panel.context import ApiSession, PanelDep, needs

router = APIRouter(tags=["changes"])

ChangeId = Annotated[str, PathParam(min_length=1, max_length=80, pattern=r"^[A-Za-z0-9_.-]+$")]


class Proposal(BaseModel):
    model_config = ConfigDict(extra="forbid")
    change_kind: Annotated[str, Field(min_length=1, max_length=40)]
    params: dict[str, Any]
    reason: Annotated[str, Field(max_length=200)] = ""


class Rejection(BaseModel):
    model_config = ConfigDict(extra="forbid")
    reason: Reason


class Proposed(BaseModel):
    ok: bool = True
    change_id: str


class Done(BaseModel):
    ok: bool = True


@router.get("/api/changes")
async def api_changes(panel: PanelDep, _session: ApiSession) -> list[dict[str, Any]]:
    """Every proposal: pending first, then the most recent, with who proposed and who closed it."""
    return panel.backend.change_list()  # type: ignore[no-any-return, attr-defined]


@router.get("/api/changes/kinds")
async def api_change_kinds(_session: ApiSession) -> dict[str, Any]:
    """The kinds of controlled change and the JSON Schema of each one's parameters."""
    return {
        name: {
            "label": kind.label,
            "params": kind.params.model_json_schema(),
            "applies": kind.apply is not None,
        }
        for name, kind in sorted(CHANGE_KINDS.items())
    }


@router.post("/api/changes")
async def api_propose(
    body: Proposal,
    panel: PanelDep,
    session: Annotated[Session, Depends(needs("manager", "propose_change"))],
) -> Proposed:
    """Propose a change (any registered kind); nothing applies until a second manager approves."""
    change_id = await panel.backend.propose_change(  # type: ignore[attr-defined]
        body.change_kind, body.params, session.user, body.reason
    )
    return Proposed(change_id=change_id)


@router.post("/api/changes/{change_id}/approve")
async def api_approve(
    change_id: ChangeId,
    panel: PanelDep,
    session: Annotated[Session, Depends(needs("manager", "approve_change"))],
) -> Done:
    """Approve another manager's proposal: it applies now (between rounds only)."""
    await panel.backend.approve_change(change_id, session.user)  # type: ignore[attr-defined]
    return Done()


@router.post("/api/changes/{change_id}/reject")
async def api_reject(
    change_id: ChangeId,
    body: Rejection,
    panel: PanelDep,
    session: Annotated[Session, Depends(needs("manager", "reject_change"))],
) -> Done:
    """Reject a proposal (the proposer's own too: a withdrawal); it never applies."""
    await panel.backend.reject_change(change_id, session.user, body.reason)  # type: ignore[attr-defined]
    return Done()

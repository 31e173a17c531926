"""The two-person changes' state as the journal leaves it (docs/operations.md "Two-person control"):
one :class:`Proposal` per ``change_proposed``, closed by its ``change_approved``, ``change_lapsed`` or a
closing ``change_refused``. Folded by the one reducer (controller/journal/state.py) and by the change
control as it writes (controller/changes.py); nothing here loads more than the entries."""

from __future__ import annotations

from collections.abc import MutableMapping
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from controller.journal import entries as e

Status = Literal["pending", "approved", "lapsed", "rejected"]
CHANGE_ENTRY_KINDS = ("change_proposed", "change_approved", "change_lapsed", "change_refused")
MAX_KEPT = 200  # proposals kept in the state (every pending one, and the most recent closed ones)


@dataclass(slots=True)
class Proposal:
    change_id: str
    change_kind: str
    params: dict[str, Any]
    summary: str
    proposed_by: str
    reason: str
    proposed_utc: str
    lapses_utc: str
    status: Status = "pending"
    closed_by: str | None = None  # the approver, or the manager who rejected it
    closed_utc: str | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)  # params copied: the caller may change its copy


def fold(proposals: MutableMapping[str, Proposal], entry: e.Entry, time_utc: str) -> None:
    """One change_* entry into ``proposals`` (change_id -> Proposal, in order of proposal). The entry is
    typed (the change kinds have no view: controller/journal/entry_view.py), so its classes are loaded."""
    from controller.journal import entries as e  # noqa: PLC0415 - loaded by the entry given

    if isinstance(entry, e.ChangeProposed):
        proposals[entry.change_id] = Proposal(
            entry.change_id,
            entry.change_kind,
            dict(entry.params),
            entry.summary,
            entry.by,
            entry.reason,
            time_utc,
            entry.lapses_utc,
        )
        closed = [cid for cid, p in proposals.items() if p.status != "pending"]
        for change_id in closed[: max(0, len(proposals) - MAX_KEPT)]:
            del proposals[change_id]
        return
    closing_id: object = getattr(entry, "change_id", None)
    proposal = proposals.get(closing_id) if isinstance(closing_id, str) else None
    if proposal is None or proposal.status != "pending":
        return
    if isinstance(entry, e.ChangeApproved):
        proposal.status, proposal.closed_by, proposal.closed_utc = "approved", entry.by, time_utc
    elif isinstance(entry, e.ChangeLapsed):
        proposal.status, proposal.closed_utc = "lapsed", time_utc
    elif isinstance(entry, e.ChangeRefused) and entry.closed:
        proposal.status, proposal.closed_by, proposal.closed_utc = "rejected", entry.by, time_utc

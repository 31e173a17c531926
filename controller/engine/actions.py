"""Operator actions as plain data: the engine's API. The shell puts them on the same queue as the
devices' events and feeds everything through ``TableEngine.handle(item, now_s)`` in arrival order (one
event queue). Each is handled by one handler in the part of the engine that owns it (docs/engine.md
"How to add an action"); ``by`` is the operator's name (the panel's logged-in supervisor, or "dealer" for
the dealer's own actions).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class StartRound:
    by: str = "dealer"


@dataclass(frozen=True, slots=True)
class NoMoreBets:
    by: str = "dealer"


@dataclass(frozen=True, slots=True)
class ConfirmDecisions:
    by: str = "dealer"


@dataclass(frozen=True, slots=True)
class FoldSeat:
    seat: int
    by: str = "dealer"


@dataclass(frozen=True, slots=True)
class PayoutsDone:
    by: str = "dealer"


@dataclass(frozen=True, slots=True)
class DpAccepts:
    funds_cents: int
    by: str = "dealer"
    seat: int | None = None


@dataclass(frozen=True, slots=True)
class DpWaives:
    by: str = "dealer"


@dataclass(frozen=True, slots=True)
class MoveButton:
    seat: int
    by: str


@dataclass(frozen=True, slots=True)
class ClearFault:
    fault_id: str
    by: str
    reason: str


@dataclass(frozen=True, slots=True)
class HoldTable:
    """A supervisor holds the table, with a reason: a latched ``supervisor_hold`` fault, so no round
    starts and the round in play stops where it stands until a supervisor clears it (ClearFault), or
    voids the round. The hold a dispute needs before a void: rounds end faster than a reason is typed."""

    reason: str
    by: str


@dataclass(frozen=True, slots=True)
class VoidRound:
    reason: str
    by: str


@dataclass(frozen=True, slots=True)
class KillSeat:
    """A supervisor kills one seat's hand before the decisions close (an exposed or fouled hand): its
    wagers are returned, the round goes on. While betting is open: the seat is left out of the round."""

    seat: int
    reason: str
    by: str


@dataclass(frozen=True, slots=True)
class RequestKillSeat:
    """The dealer's ``kill_seat`` key: the dealer asks a supervisor to kill one seat's hand. It kills
    nothing: the request is journaled, the display says it waits for a supervisor, and the panel offers
    the supervisor ConfirmKillSeat or RejectKillSeat. It lapses when the decisions close or the round
    ends (docs/engine.md "Kill one seat")."""

    seat: int
    by: str = "dealer"


@dataclass(frozen=True, slots=True)
class ConfirmKillSeat:
    """A supervisor confirms the dealer's pending kill request: the request named by its round
    ``round_id`` and its number in that round ``request_number`` (1, 2, ...), and its ``seat`` named
    again, as the panel's banner showed them, so that a confirmation can only ever answer the request
    the supervisor saw: a late confirmation of a request that lapsed (another round) or was rejected
    (an earlier number, the same seat asked again) is refused, never applied to the later request.
    With the reason: the KillSeat it stands for is performed with the supervisor as ``by`` and the
    dealer's request recorded."""

    seat: int
    round_id: str
    request_number: int
    reason: str
    by: str


@dataclass(frozen=True, slots=True)
class RejectKillSeat:
    """A supervisor rejects the dealer's pending kill request (named by ``round_id``, ``request_number``
    and ``seat``, as for ConfirmKillSeat): journaled, the display cleared, the hand plays on."""

    seat: int
    round_id: str
    request_number: int
    reason: str
    by: str


@dataclass(frozen=True, slots=True)
class SetLimits:
    """A manager changes the ante limits (between rounds only). A bonus wager with a maximum of its own
    keeps it; one without follows the ante's maximum, the new one (docs/engine.md "The manager's
    settings")."""

    min_ante_cents: int
    max_ante_cents: int
    by: str


@dataclass(frozen=True, slots=True)
class SetBonusLimit:
    """A manager changes one bonus wager's posted maximum (between rounds only). Journaled as the
    ``set_limits`` it is, with every limit before and after (docs/engine.md "The manager's settings")."""

    wager: str
    max_cents: int
    by: str


@dataclass(frozen=True, slots=True)
class SetPaytable:
    """A manager changes a bonus wager's paytable: a preset's name or custom lines {"7": 300, ...}."""

    wager: str
    spec: object
    by: str


@dataclass(frozen=True, slots=True)
class OpenTable:
    by: str


@dataclass(frozen=True, slots=True)
class CloseTable:
    """A manager closes the table between rounds: no round starts until it is opened again."""

    by: str
    reason: str


@dataclass(frozen=True, slots=True)
class AcceptDifference:
    """A supervisor accepts, with a reason, that a past-posted spot still reads other than its locked
    wager, and clears the hold: the round goes on with the locked wager (the chips beyond it take no
    part). Journaled as an operator_action naming the spot, both amounts and the reason (recall shows
    it); a plain ClearFault is refused while the spot reads other than the locked amount."""

    fault_id: str
    by: str
    reason: str


@dataclass(frozen=True, slots=True)
class AdoptClear:
    """A ``fault_cleared`` another process already journaled (`flushtable clear` while the daemon runs):
    the same effect as ``ClearFault`` without journaling the clearing a second time. A fault no longer
    latched (cleared here already) gives no output at all."""

    fault_id: str
    by: str
    reason: str


@dataclass(frozen=True, slots=True)
class RaiseAlert:
    """An outside watcher (the daemon's integrity watch) raises an alert on the panel: a ``fault_raised``
    of severity "alert", the table's and not a round's. ``kind``: one of docs/journal.md's fault kinds."""

    kind: str
    detail: str
    by: str = "integrity"


@dataclass(frozen=True, slots=True)
class Tick:
    """Time passes (deal and decision timeouts)."""


@dataclass(frozen=True, slots=True)
class ConfirmProgressiveAward:
    """A supervisor confirms a pending Progressive award was paid (docs/rules.md "Progressive: the
    controller"): recorded once; a second confirmation is refused, nothing is paid twice."""

    award_id: str
    by: str


@dataclass(frozen=True, slots=True)
class SetProgressiveParameters:
    """A manager's change of the progressive's parameters, between rounds (role: the panel's, checked
    again by controller/progressive/parameters.py's one function)."""

    parameters: Mapping[str, object]
    by: str
    role: str
    reason: str = ""


OperatorAction = (
    StartRound
    | NoMoreBets
    | ConfirmDecisions
    | FoldSeat
    | PayoutsDone
    | DpAccepts
    | DpWaives
    | MoveButton
    | ClearFault
    | AcceptDifference
    | HoldTable
    | VoidRound
    | KillSeat
    | RequestKillSeat
    | ConfirmKillSeat
    | RejectKillSeat
    | SetLimits
    | SetBonusLimit
    | SetPaytable
    | OpenTable
    | CloseTable
    | AdoptClear
    | RaiseAlert
    | Tick
    | ConfirmProgressiveAward
    | SetProgressiveParameters
)

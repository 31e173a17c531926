"""The operator actions the panel offers: one declaration each, and the one path that performs them.

Each :class:`PanelAction` names an action dataclass of controller/engine/actions.py, the least role
allowed, the button's label, the fields the operator fills in (pydantic-annotated types: the body's
validation and the dialog's inputs both come from them), where the button sits and when it is offered.
The panel serves every declaration at ``POST /api/actions/{name}`` (controller.panel.routes.actions):
the JSON body is validated by pydantic (unknown fields refused with 422), the dataclass is built with
the logged-in user as ``by``, and the backend performs it (journaling a panel_request around it).

Adding an action: its dataclass (controller/engine/actions.py), its handler in the engine, and one
declaration here. docs/panel.md says so.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model

from controller.engine.actions import (
    AcceptDifference,
    ClearFault,
    CloseTable,
    ConfirmKillSeat,
    ConfirmProgressiveAward,
    DpAccepts,
    DpWaives,
    HoldTable,
    KillSeat,
    MoveButton,
    OpenTable,
    OperatorAction,
    RejectKillSeat,
    SetBonusLimit,
    SetLimits,
    SetPaytable,
    VoidRound,
)
from controller.names import DESIGNATED_PLAYER
from controller.panel.auth import Role, role_allows
from controller.panel.backend import action_name
from controller.rules.amounts import MAX_AMOUNT_CENTS
from controller.rules.settle import MAX_SEAT

Place = Literal["table", "alert", "progressive"]
Offered = Callable[[Mapping[str, Any]], bool]

# --- the fields an operator fills in: the constraint is the body's check, the title the dialog's label
Reason = Annotated[str, Field(min_length=1, max_length=200, title="Reason (journaled with your name)")]
Seat = Annotated[int, Field(ge=1, le=MAX_SEAT, title=f"Seat number (1–{MAX_SEAT})")]
FaultId = Annotated[str, Field(min_length=1, max_length=80, title="Fault id")]
MinAnte = Annotated[int, Field(ge=1, le=MAX_AMOUNT_CENTS, title="Minimum ante (cents)")]
MaxAnte = Annotated[int, Field(ge=1, le=MAX_AMOUNT_CENTS, title="Maximum ante (cents)")]
Wager = Annotated[str, Field(min_length=1, max_length=40, pattern=r"^[a-z_]+$", title="Wager (e.g. flush)")]
Bank = Annotated[int, Field(ge=1, le=MAX_AMOUNT_CENTS, title="The bank the player posts (cents)")]
MaxBonus = Annotated[int, Field(ge=1, le=MAX_AMOUNT_CENTS, title="Maximum of that bonus wager (cents)")]
AwardId = Annotated[str, Field(min_length=1, max_length=200, title="Progressive award")]
RoundId = Annotated[str, Field(min_length=1, max_length=64, title="Round of the request")]
RequestNumber = Annotated[int, Field(ge=1, le=1_000_000, title="The request's number in its round")]
Preset = Annotated[
    str, Field(min_length=1, max_length=60, pattern=r"^[A-Za-z0-9_.-]+$", title="Paytable preset name")
]


def _round_in_play(table: Mapping[str, Any]) -> bool:
    """A round open, or bets being taken for one (the engine voids either). Offering is a convenience:
    the engine decides, and refuses (409) what the table's state does not allow."""
    round_ = table.get("round")
    open_round = isinstance(round_, Mapping) and round_.get("status") == "in_progress"
    return open_round or table.get("phase") == "betting"


def _kill_requested(table: Mapping[str, Any]) -> bool:
    """The dealer's kill_seat key waits for a supervisor (the round's ``kill_request``)."""
    round_ = table.get("round")
    return isinstance(round_, Mapping) and bool(round_.get("kill_request"))


def _kill_request_named(table: Mapping[str, Any]) -> dict[str, Any]:
    """The waiting kill request's round and number in it, as the banner shows them: the Confirm and
    Reject buttons carry both, so a dialog opened for one request can never answer a later one (of a
    later round, or of the same seat asked again in this round after a rejection)."""
    round_ = table.get("round")
    request = round_.get("kill_request") if isinstance(round_, Mapping) else None
    if not isinstance(request, Mapping):
        return {}
    return {"round_id": request.get("round_id"), "request_number": request.get("request_number")}


def _seats_in_play(table: Mapping[str, Any]) -> dict[str, list[int]]:
    """The seats a kill may name: those in the round, not already dead (a seat the table does not have,
    or one with no wager in this round, is never offered)."""
    round_ = table.get("round")
    seats = round_.get("seats") if isinstance(round_, Mapping) else None
    return {
        "seat": [
            seat["seat"]
            for seat in seats or []
            if isinstance(seat, Mapping) and isinstance(seat.get("seat"), int) and not seat.get("dead")
        ]
    }


def _between_rounds(table: Mapping[str, Any]) -> bool:
    return not _round_in_play(table)


def _designated_player(table: Mapping[str, Any]) -> bool:
    return table.get("banking_mode") == "designated-player"


def _always(_where: Mapping[str, Any]) -> bool:
    return True


def _not_on_hold(table: Mapping[str, Any]) -> bool:
    """No supervisor's hold stands (one at a time: clear it to hold again)."""
    holds = table.get("holds") or []
    return not any(isinstance(h, Mapping) and h.get("kind") == "supervisor_hold" for h in holds)


def _button_movable(table: Mapping[str, Any]) -> bool:
    """The button is the designated player's: a house-banked table has none to move (the engine would
    accept the move and change nothing a player sees), and it moves only between rounds."""
    return table.get("banking_mode") == DESIGNATED_PLAYER and _between_rounds(table)


class _Body(BaseModel):
    """Every action's body: unknown fields refused. (pydantic refuses text UTF-8 cannot carry, such as
    a lone surrogate "\\ud800", which JSON allows: errors.py answers that 422 without failing.)"""

    model_config = ConfigDict(extra="forbid", strict=False)


@dataclass(frozen=True)
class PanelAction:
    """One operator action as the panel offers it (see the module's doc)."""

    action: type[OperatorAction]
    role: Role
    label: str
    asks: Mapping[str, Any] = field(default_factory=dict)  # field name -> annotated type, in dialog order
    place: Place = "table"  # on the table page's action card, or on each open alert
    offered: Offered = _always  # given the table snapshot (or the alert's row, for place "alert")
    confirm: str = ""  # asked before the request (a void returns every wager)
    filled: tuple[str, ...] = ()  # fields the button carries from where it sits (the alert's fault_id)
    # The filled fields' values read from where the button sits (the table snapshot), when the template
    # does not pass them (the kill request's round and number).
    fill_from: Callable[[Mapping[str, Any]], Mapping[str, Any]] | None = None
    # The values a field may take where the button sits (the seats in the round): the dialog offers
    # only those, as a list to pick from. The body's own check still bounds what is sent.
    choices_from: Callable[[Mapping[str, Any]], Mapping[str, list[int]]] | None = None
    style: str = ""  # the button's CSS class ("warn" for what cannot be undone)
    # A money setting under two-person control: the kind of change (controller/changes.py) this button
    # proposes; the body is its parameters, and nothing applies until a second manager approves.
    controlled: str | None = None
    body: type[BaseModel] = field(init=False)

    def __post_init__(self) -> None:
        expected = {f.name for f in fields(self.action)} - {"by"}
        if set(self.asks) != expected:
            raise TypeError(f"{self.name}: asks {sorted(self.asks)} but the dataclass has {sorted(expected)}")
        definitions: dict[str, Any] = {name: (annotation, ...) for name, annotation in self.asks.items()}
        body = create_model(f"{self.action.__name__}Body", __base__=_Body, **definitions)
        object.__setattr__(self, "body", body)

    @property
    def name(self) -> str:
        return action_name(self.action)

    @property
    def url(self) -> str:
        return f"/api/actions/{self.name}"

    def build(self, body: BaseModel, by: str) -> OperatorAction:
        """The engine's dataclass from a validated body, with the logged-in user as ``by``."""
        make: Callable[..., OperatorAction] = self.action
        return make(**dict(body), by=by)

    def form_fields(self, choices: Mapping[str, list[int]] | None = None) -> list[dict[str, Any]]:
        """The dialog's inputs (those the button does not carry), from the body's JSON schema; a field
        with ``choices`` is picked from them."""
        properties: dict[str, Any] = self.body.model_json_schema()["properties"]
        out = []
        for name, schema in properties.items():
            if name in self.filled:
                continue
            number = schema.get("type") == "integer"
            out.append(
                {
                    "name": name,
                    # Picked from choices, the label drops the schema's general range ("(1–7)").
                    "label": str(schema.get("title", name)).split(" (")[0]
                    if choices and name in choices
                    else schema.get("title", name),
                    "type": "number" if number else "text",
                    **({"min": schema["minimum"]} if "minimum" in schema else {}),
                    **({"max": schema["maximum"]} if "maximum" in schema else {}),
                    **({"maxlength": schema["maxLength"]} if "maxLength" in schema else {}),
                    **({"choices": list(choices[name])} if choices and name in choices else {}),
                }
            )
        return out

    def button(
        self, fill: Mapping[str, Any] | None = None, choices: Mapping[str, list[int]] | None = None
    ) -> dict[str, str]:
        """What a template needs to draw this action's button (panel.js sends the request)."""
        return {
            "name": self.name,
            "url": self.url,
            "label": self.label + ("…" if self.form_fields() or self.confirm else ""),
            "fields": json.dumps(self.form_fields(choices), ensure_ascii=False),
            "fill": json.dumps(dict(fill or {}), ensure_ascii=False),
            "confirm": self.confirm,
            "style": self.style,
        }


def _answer_to_kill_request(
    action: type[ConfirmKillSeat | RejectKillSeat], label: str, *, confirm: str = "", style: str = ""
) -> PanelAction:
    """Confirm or reject: the same body and the same waiting request named (its round and number)."""
    return PanelAction(
        action,
        "supervisor",
        label,
        {"seat": Seat, "round_id": RoundId, "request_number": RequestNumber, "reason": Reason},
        offered=_kill_requested,
        filled=("round_id", "request_number"),
        fill_from=_kill_request_named,
        confirm=confirm,
        style=style,
    )


PANEL_ACTIONS: tuple[PanelAction, ...] = (
    PanelAction(
        ClearFault,
        "supervisor",
        "Clear",
        {"fault_id": FaultId, "reason": Reason},
        place="alert",
        offered=lambda alert: alert.get("state") != "cleared",
        filled=("fault_id",),
        style="warn",
    ),
    PanelAction(
        AcceptDifference,
        "supervisor",
        "Accept the difference",
        {"fault_id": FaultId, "reason": Reason},
        place="alert",
        # Past posting only: the spot still reads other than its locked wager (the engine refuses the
        # plain Clear meanwhile); the round goes on with the locked wager, the reason journaled.
        offered=lambda alert: alert.get("kind") == "past_posting" and alert.get("state") != "cleared",
        filled=("fault_id",),
        confirm="Play on with the locked wager while the spot reads otherwise? Your reason is journaled.",
        style="warn",
    ),
    PanelAction(
        HoldTable,
        "supervisor",
        "Hold table",
        {"reason": Reason},
        offered=_not_on_hold,
        style="warn",
    ),
    PanelAction(
        VoidRound,
        "supervisor",
        "Void round",
        {"reason": Reason},
        offered=_round_in_play,
        confirm="Void the round in progress? Every wager is returned.",
        style="warn",
    ),
    PanelAction(
        KillSeat,
        "supervisor",
        "Kill one seat",
        {"seat": Seat, "reason": Reason},
        offered=lambda table: _round_in_play(table) and bool(_seats_in_play(table)["seat"]),
        choices_from=_seats_in_play,
        confirm="Kill this seat's hand? Its wagers are returned; the round goes on.",
        style="warn",
    ),
    _answer_to_kill_request(
        ConfirmKillSeat,
        "Confirm the dealer's kill request",
        confirm="Kill the hand of the seat the dealer named? Its wagers are returned; the round goes on.",
        style="warn",
    ),
    _answer_to_kill_request(RejectKillSeat, "Reject the dealer's kill request"),
    PanelAction(MoveButton, "supervisor", "Move button", {"seat": Seat}, offered=_button_movable),
    PanelAction(
        DpAccepts,
        "supervisor",
        "Accept the button for a seat",
        {"funds_cents": Bank, "seat": Seat},
        offered=lambda table: _designated_player(table) and _between_rounds(table),
    ),
    PanelAction(
        DpWaives,
        "supervisor",
        "Waive the button for the offered seat",
        offered=lambda table: _designated_player(table) and _between_rounds(table),
    ),
    PanelAction(OpenTable, "manager", "Open table", offered=lambda table: table.get("table_open") is False),
    PanelAction(
        CloseTable,
        "manager",
        "Close table",
        {"reason": Reason},
        offered=lambda table: table.get("table_open") is not False and _between_rounds(table),
        style="warn",
    ),
    # The money settings: proposals under two-person control (docs/operations.md "Two-person control"),
    # offered at any time; a second manager's approval applies them, between rounds.
    PanelAction(
        SetLimits,
        "manager",
        "Propose limits",
        {"min_ante_cents": MinAnte, "max_ante_cents": MaxAnte},
        controlled="limits",
    ),
    PanelAction(
        SetBonusLimit,
        "manager",
        "Propose a bonus limit",
        {"wager": Wager, "max_cents": MaxBonus},
        controlled="bonus_limit",
    ),
    PanelAction(
        SetPaytable, "manager", "Propose paytable", {"wager": Wager, "spec": Preset}, controlled="paytable"
    ),
    # On each pending Progressive award (the table page's Progressive card): the supervisor confirms the
    # award was paid to the player; recorded once with their name, a second confirmation refused.
    PanelAction(
        ConfirmProgressiveAward,
        "supervisor",
        "Confirm paid",
        {"award_id": AwardId},
        place="progressive",
        offered=lambda award: award.get("status") == "pending",
        filled=("award_id",),
        confirm="Confirm this Progressive award was paid to the player? It is recorded with your name.",
    ),
)


def buttons(role: str, place: Place, where: Mapping[str, Any], **fill: Any) -> list[dict[str, str]]:
    """The buttons a user of ``role`` is offered at ``place`` (the table snapshot, or an alert's row)."""
    return [
        declared.button(
            {**(declared.fill_from(where) if declared.fill_from else {}), **fill},
            declared.choices_from(where) if declared.choices_from else None,
        )
        for declared in PANEL_ACTIONS
        if declared.place == place and role_allows(role, declared.role) and declared.offered(where)
    ]

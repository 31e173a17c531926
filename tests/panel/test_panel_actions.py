"""The panel's action declarations (controller/panel/actions.py): one per action, each served at
POST /api/actions/{name} with its body validated by pydantic into the engine's dataclass, and its
button offered by role and by the table's state."""

from __future__ import annotations

import json
from typing import Any

import pytest
from fastapi.testclient import TestClient

from controller.engine.actions import MoveButton, SetLimits
from controller.panel.actions import PANEL_ACTIONS, buttons
from tests.panel.conftest import PanelRig, api_routes, login
from tests.panel.table_script import ScriptedRound

DP = "designated-player"
BETWEEN_ROUNDS: dict[str, Any] = {"table_open": True, "round": None, "banking_mode": DP}
IN_PLAY: dict[str, Any] = {
    "table_open": True,
    "round": {"status": "in_progress", "seats": [{"seat": 1}, {"seat": 3}]},
    "banking_mode": DP,
}
CLOSED: dict[str, Any] = {"table_open": False, "round": None, "banking_mode": DP}
HOUSE_BETWEEN_ROUNDS: dict[str, Any] = {"table_open": True, "round": None, "banking_mode": "house"}
ON_HOLD: dict[str, Any] = {**IN_PLAY, "holds": [{"kind": "supervisor_hold", "fault_id": "FT1-000001"}]}


def _names(role: str, table: dict[str, Any]) -> list[str]:
    return [b["name"] for b in buttons(role, "table", table)]


def test_every_declared_action_is_one_route_with_its_own_body(rig: PanelRig) -> None:
    served = {route.path for route in api_routes(rig.app) if route.path.startswith("/api/actions/")}
    assert served == {declared.url for declared in PANEL_ACTIONS}
    assert len(served) == len(PANEL_ACTIONS)
    for declared in PANEL_ACTIONS:
        assert declared.url == f"/api/actions/{declared.name}"
        assert declared.body.model_config.get("extra") == "forbid"
        assert "by" not in declared.body.model_fields  # the operator is the session's user


def test_buttons_are_offered_by_role_and_by_the_tables_state() -> None:
    assert _names("viewer", BETWEEN_ROUNDS) == []
    dp_between = ["hold_table", "move_button", "dp_accepts", "dp_waives"]
    assert _names("supervisor", BETWEEN_ROUNDS) == dp_between
    assert _names("supervisor", IN_PLAY) == ["hold_table", "void_round", "kill_seat"]
    # One supervisor's hold at a time; a seat may still be killed before the decisions close.
    assert _names("supervisor", ON_HOLD) == ["void_round", "kill_seat"]
    # A house-banked table has no designated player's button to move, accept or waive: not offered.
    assert _names("supervisor", HOUSE_BETWEEN_ROUNDS) == ["hold_table"]
    # The money settings are proposals (two-person control): offered at any time; they apply only
    # when a second manager approves, between rounds.
    manager_settings = ["set_limits", "set_bonus_limit", "set_paytable"]
    assert _names("manager", BETWEEN_ROUNDS) == [*dp_between, "close_table", *manager_settings]
    assert _names("manager", IN_PLAY) == ["hold_table", "void_round", "kill_seat", *manager_settings]
    assert _names("manager", CLOSED) == [*dp_between, "open_table", *manager_settings]
    # The dealer's kill_seat key waits for a supervisor: Confirm and Reject are offered, to a supervisor.
    asked = {
        **IN_PLAY,
        "round": {
            "status": "in_progress",
            "seats": [{"seat": 3}],
            "kill_request": {
                "seat": 3,
                "round_id": "RT1-20270115-000007",
                "request_number": 2,
                "requested_by": "dealer",
            },
        },
    }
    kill_answers = ["confirm_kill_seat", "reject_kill_seat"]
    assert _names("supervisor", asked) == ["hold_table", "void_round", "kill_seat", *kill_answers]
    # Their buttons carry the request's round and number (not asked): a dialog opened for this request
    # sends them, and the engine refuses it once another request waits (of another round, or the same
    # seat asked again in this round after a rejection).
    for answer in buttons("supervisor", "table", asked)[-2:]:
        assert json.loads(answer["fill"]) == {"round_id": "RT1-20270115-000007", "request_number": 2}
        assert '"name": "round_id"' not in answer["fields"]
        assert '"name": "request_number"' not in answer["fields"]
        assert '"name": "seat"' in answer["fields"]
    assert _names("viewer", asked) == []
    alert = {"state": "active"}
    (clear,) = buttons("supervisor", "alert", alert, fault_id="FT1-000001")
    assert clear["url"] == "/api/actions/clear_fault"
    assert '"fault_id": "FT1-000001"' in clear["fill"]
    assert '"name": "fault_id"' not in clear["fields"]  # carried by the button, not asked
    assert buttons("supervisor", "alert", {"state": "cleared"}) == []
    assert buttons("viewer", "alert", alert) == []


def test_a_declared_action_reaches_the_engine_as_its_dataclass(rig: PanelRig, client: TestClient) -> None:
    csrf = login(client, "max")
    headers = {"X-CSRF-Token": csrf}
    assert client.post("/api/actions/move_button", json={"seat": 2}, headers=headers).status_code == 200
    limits = {"min_ante_cents": 500, "max_ante_cents": 20_000}
    proposed = client.post("/api/actions/set_limits", json=limits, headers=headers)
    assert proposed.json() == {"ok": True, "change_id": "CT1-0001"}
    assert rig.actions.calls == [MoveButton(2, "max")]  # a money setting is only proposed
    done = [e.payload for e in rig.journal.entries(kinds=["panel_request"]) if e.payload["by"] == "max"]
    assert [(p["action"], p["request"], p["outcome"]) for p in done] == [
        ("move_button", {"seat": 2}, "done"),
        ("set_limits", limits, "proposed CT1-0001: applies when a second manager approves it"),
    ]
    client.cookies.clear()
    headers = {"X-CSRF-Token": login(client, "mia")}
    assert client.post("/api/changes/CT1-0001/approve", headers=headers).json() == {"ok": True}
    assert rig.actions.calls == [MoveButton(2, "max"), SetLimits(500, 20_000, "mia")]


@pytest.mark.parametrize(("user", "expected"), [("vera", []), ("sam", ["Hold table…", "Void round…"])])
def test_the_table_page_draws_the_offered_buttons(
    rig: PanelRig, client: TestClient, user: str, expected: list[str]
) -> None:
    script = ScriptedRound(rig.journal)
    steps = script.steps()
    next(steps)  # betting: a round in play
    rig.backend.refresh()
    login(client, user)
    page = client.get("/partials/table").text
    labels = ("Hold table…", "Void round…", "Move button…", "Close table…")
    drawn = [label for label in labels if label in page]
    assert drawn == expected

"""The panel over the real round engine: controller.engine.TableEngine fed the drivers' domain events
(tests/engine/table.py's stacked shoe), its journal records appended to a real journal as the daemon's
shell does, and the panel's actions carried out by EngineTableActions. No stand-in anywhere."""

from __future__ import annotations

import html
import json
import re
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from controller.engine import JournalRecord, Output, TableConfig
from controller.journal import Journal
from controller.panel import JournalPanelBackend, PanelSettings, UserStore, create_panel_app
from controller.panel.engine_actions import EngineTableActions
from controller.rules.settle import settle_round_json
from tests.engine.table import Table, stack, the_round
from tests.engine.test_rounds import HCF_DEALER, HCF_SEAT1, HCF_SEAT3
from tests.engine.test_table_behaviour import red_light_at
from tests.panel.conftest import login

CARDS = set(HCF_SEAT1) | set(HCF_SEAT3) | set(HCF_DEALER)


class JournaledTable(Table):
    """The engine tests' table, with every journal record appended to a real journal (the shell's job)."""

    def __init__(self, journal: Journal, config: TableConfig, deck: Sequence[int]) -> None:
        super().__init__(config, deck)
        self.journal_file = journal
        self.flushed = 0

    def perform(self, outputs: Sequence[Output]) -> None:
        for output in outputs:
            if isinstance(output, JournalRecord):
                self.journal_file.append(
                    output.kind, output.payload, round_id=output.round_id, source=output.source
                )

    def flush(self) -> None:
        self.perform(self.outputs[self.flushed :])
        self.flushed = len(self.outputs)


@pytest.fixture
def engine_rig(
    tmp_path: Path, users_file: Path
) -> Iterator[tuple[JournaledTable, JournalPanelBackend, TestClient]]:
    journal = Journal.open(tmp_path / "journal.sqlite", "T1")
    table = JournaledTable(journal, TableConfig(), stack(HCF_SEAT1, HCF_SEAT3, HCF_DEALER))
    actions = EngineTableActions(table.engine, now_s=lambda: table.now_s, perform=table.perform)
    backend = JournalPanelBackend(journal, actions=actions)
    app = create_panel_app(backend, users=UserStore(users_file), settings=PanelSettings())
    with TestClient(app, base_url="http://127.0.0.1") as client:
        yield table, backend, client
    journal.close()


def _cards_in(text: str) -> set[str]:
    return set(re.findall(r'"([2-9TJQKA][cdhs])"', text)) & CARDS


def _everything(client: TestClient) -> str:
    routes = ["/api/table", "/api/journal?limit=1000", "/api/alerts?include_cleared=true", "/api/recall", "/"]
    return "\n".join(client.get(route).text for route in routes)


def test_a_real_engine_round_shows_no_card_before_the_reveal_then_recalls_and_settles(
    engine_rig: tuple[JournaledTable, JournalPanelBackend, TestClient],
) -> None:
    table, backend, client = engine_rig
    login(client, "vera")

    def play(step: int) -> None:
        if step == 0:
            table.start()
        elif step == 1:
            table.bet(1, "ante", 500)
            table.bet(1, "flush", 100)
            table.bet(3, "ante", 1000)
        elif step == 2:
            table.lock()  # the shoe deals here
        elif step == 3:
            table.bet(1, "raise", 1000)
        else:
            table.key("fold_seat", 3)

    for step in range(5):
        play(step)
        table.flush()
        backend.refresh()
        snapshot = client.get("/api/table").json()
        assert _cards_in(_everything(client)) == set(), snapshot["phase"]
    dealt = client.get("/api/journal", params={"kind": "card_dealt", "limit": 100}).json()
    assert len(dealt) == 21
    # A card entry goes out face down: its private part (which card, where) withheld whole.
    assert all(entry["hidden"] and entry["payload"] == {} for entry in dealt)
    table.key("confirm")  # decisions closed: reveal, settle
    table.flush()
    backend.refresh()
    snapshot = client.get("/api/table").json()
    assert snapshot["phase"] == "paying"
    seat1 = next(seat for seat in snapshot["round"]["seats"] if seat["seat"] == 1)
    assert seat1["cards"] == HCF_SEAT1
    assert seat1["result"]["net_cents"] > 0
    record = client.get("/api/recall").json()[0]
    assert record["status"] == "settled"
    assert settle_round_json(record["round"]) == record["settlement"]


def test_a_red_light_from_the_shoe_is_an_alert_a_supervisor_clears_through_the_engine(
    engine_rig: tuple[JournaledTable, JournalPanelBackend, TestClient],
) -> None:
    table, backend, client = engine_rig
    table.tamper = red_light_at(3, 0)  # the shoe deals nothing more after its red light
    table.start()
    table.bet(1, "ante", 500)
    table.bet(3, "ante", 1000)
    table.lock()
    table.flush()
    backend.refresh()
    csrf = login(client, "vera")
    alerts = client.get("/api/alerts").json()
    assert [(a["kind"], a["severity"], a["state"]) for a in alerts] == [("red_light", "latching", "active")]
    fault_id = alerts[0]["fault_id"]
    table_view = client.get("/api/table").json()
    assert table_view["held"] is True
    assert table_view["round"]["status"] == "dead"
    assert _cards_in(_everything(client)) == set()  # a dead round's cards, never
    assert (
        client.post(
            "/api/actions/clear_fault",
            json={"fault_id": fault_id, "reason": "x"},
            headers={"X-CSRF-Token": csrf},
        ).status_code
        == 403
    )
    client.cookies.clear()
    csrf = login(client, "sam")
    headers = {"X-CSRF-Token": csrf}
    assert client.post(f"/api/alerts/{fault_id}/acknowledge", headers=headers).status_code == 200
    answer = client.post(
        "/api/actions/clear_fault", json={"fault_id": "nope", "reason": "checked"}, headers=headers
    )
    assert answer.status_code == 404
    answer = client.post(
        "/api/actions/clear_fault", json={"fault_id": fault_id, "reason": "shoe cleaned"}, headers=headers
    )
    assert answer.status_code == 200, answer.text
    assert table.engine.view().state == "idle"
    assert not table.engine.view().held
    table_view = client.get("/api/table").json()
    assert table_view["held"] is False
    assert client.get("/api/alerts").json() == []
    # An action the engine refuses comes back as 409 with the engine's reason.
    answer = client.post("/api/actions/void_round", json={"reason": "no round"}, headers=headers)
    assert answer.status_code == 409
    assert answer.json()["detail"]
    # A manager's actions between rounds reach the engine and are journaled with the manager's name.
    client.cookies.clear()
    csrf = login(client, "max")
    headers = {"X-CSRF-Token": csrf}
    answer = client.post("/api/actions/close_table", json={"reason": "end of shift"}, headers=headers)
    assert answer.status_code == 200, answer.text
    assert table.engine.view().table_open is False
    assert table.engine.view().closed_reason == "end of shift"
    # The limits: proposed by one manager, applied when a second approves (two-person control).
    answer = client.post(
        "/api/actions/set_limits", json={"min_ante_cents": 1000, "max_ante_cents": 20000}, headers=headers
    )
    assert answer.status_code == 200, answer.text
    assert (table.engine.view().config.min_ante_cents, table.engine.view().config.max_ante_cents) != (
        1000,
        20000,
    )
    answer = client.post(
        "/api/actions/set_limits", json={"min_ante_cents": 3000, "max_ante_cents": 2000}, headers=headers
    )
    assert answer.status_code == 409  # a proposal that could never apply is refused at once
    assert "min_ante_cents" in answer.json()["detail"]
    client.cookies.clear()
    second = {"X-CSRF-Token": login(client, "mia")}
    answer = client.post("/api/changes/CT1-0001/approve", headers=second)
    assert answer.status_code == 200, answer.text
    assert (table.engine.view().config.min_ante_cents, table.engine.view().config.max_ante_cents) == (
        1000,
        20000,
    )
    client.cookies.clear()
    headers = {"X-CSRF-Token": login(client, "max")}
    answer = client.post("/api/actions/open_table", json={}, headers=headers)
    assert answer.status_code == 200, answer.text
    assert table.engine.view().table_open is True


def _button_fill(page: str, action: str) -> dict[str, object]:
    """What the page's button for ``action`` sends besides the dialog's inputs (its data-fill)."""
    found = re.search(rf'data-action="/api/actions/{action}"[^>]*data-fill="([^"]*)"', page)
    assert found is not None, f"no {action} button on the page"
    fill: dict[str, object] = json.loads(html.unescape(found.group(1)))
    return fill


def test_a_stale_pages_confirm_of_a_rejected_request_never_kills_the_same_seats_next_request(
    engine_rig: tuple[JournaledTable, JournalPanelBackend, TestClient],
) -> None:
    """The dealer asks to kill seat 3; a supervisor rejects it on the panel; the dealer asks for seat 3
    again in the same round. A Confirm sent from a page still showing the first request (its button
    carries that request's round and number) is refused with 409, journaled, and kills nothing; the
    page's new button carries the second request's number and its Confirm kills the seat."""
    table, backend, client = engine_rig
    table.start()
    table.bet(1, "ante", 500)
    table.bet(3, "ante", 1000)
    table.lock()
    table.key("kill_seat", 3)
    table.flush()
    backend.refresh()
    headers = {"X-CSRF-Token": login(client, "sam")}
    first = client.get("/api/table").json()["round"]["kill_request"]
    round_id = first["round_id"]
    assert (first["seat"], first["request_number"]) == (3, 1)
    first_page = client.get("/partials/table").text
    assert f"round {round_id}, request 1 of the round" in first_page
    stale_fill = _button_fill(first_page, "confirm_kill_seat")
    assert stale_fill == {"round_id": round_id, "request_number": 1}
    answer = client.post(
        "/api/actions/reject_kill_seat",
        json={**_button_fill(first_page, "reject_kill_seat"), "seat": 3, "reason": "not exposed"},
        headers=headers,
    )
    assert answer.status_code == 200, answer.text
    table.key("kill_seat", 3)
    table.flush()
    backend.refresh()
    second = client.get("/api/table").json()["round"]["kill_request"]
    assert (second["seat"], second["round_id"], second["request_number"]) == (3, round_id, 2)

    answer = client.post(
        "/api/actions/confirm_kill_seat", json={**stale_fill, "seat": 3, "reason": "exposed"}, headers=headers
    )
    assert answer.status_code == 409, answer.text
    why = (
        "the waiting kill request is request 2 of this round, not request 1: "
        "that request is no longer waiting"
    )
    assert why in answer.json()["detail"]
    assert table.engine.view().round is not None
    assert the_round(table.engine).seats[3].status == "live"
    backend.refresh()
    assert client.get("/api/table").json()["round"]["kill_request"]["request_number"] == 2
    refusals = client.get("/api/journal", params={"kind": "action_refused", "limit": 100}).json()
    assert any(
        entry["payload"]["action"] == "confirm_kill_seat"
        and entry["payload"]["by"] == "sam"
        and why in str(entry["payload"]["reason"])
        for entry in refusals
    ), refusals
    assert client.get("/api/journal", params={"kind": "dead_hand"}).json() == []
    # An answer that names no request is not an answer: the body is refused before the engine is asked.
    answer = client.post(
        "/api/actions/confirm_kill_seat",
        json={"round_id": round_id, "seat": 3, "reason": "exposed"},
        headers=headers,
    )
    assert answer.status_code == 422

    fresh_fill = _button_fill(client.get("/partials/table").text, "confirm_kill_seat")
    assert fresh_fill == {"round_id": round_id, "request_number": 2}
    answer = client.post(
        "/api/actions/confirm_kill_seat", json={**fresh_fill, "seat": 3, "reason": "exposed"}, headers=headers
    )
    assert answer.status_code == 200, answer.text
    assert the_round(table.engine).seats[3].status == "dead"
    backend.refresh()
    assert client.get("/api/table").json()["round"]["kill_request"] is None
    statuses = [
        (entry["payload"]["status"], entry["payload"]["request_number"])
        for entry in client.get("/api/journal", params={"kind": "kill_seat_request", "limit": 100}).json()
    ]
    assert sorted(statuses) == sorted([("requested", 1), ("rejected", 1), ("requested", 2), ("confirmed", 2)])

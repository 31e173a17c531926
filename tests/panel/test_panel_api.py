"""The panel's HTTP API: every role against every action, CSRF, sessions and their expiry, logins
rate-limited and journaled, every route closed to a visitor without a session, and no card in any
response before its reveal."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from controller.engine.actions import ClearFault, MoveButton
from controller.journal import Journal
from controller.panel import JournalPanelBackend, UserStore, create_panel_app
from controller.rules.cards import parse_card
from drivers.events import ShufflerFault
from tests.panel.conftest import PASSWORDS, PanelRig, api_routes, login
from tests.panel.table_script import ANTE_CENTS, HOLE_CARDS, ScriptedRound, all_cards, raise_red_light

# (method, path, json body, least role allowed)
ACTIONS: list[tuple[str, dict[str, Any] | None, str]] = [
    ("/api/alerts/FT1-000001/acknowledge", None, "supervisor"),
    (
        "/api/actions/clear_fault",
        {"fault_id": "FT1-000001", "reason": "shoe reset, deck checked"},
        "supervisor",
    ),
    ("/api/actions/void_round", {"reason": "dispute at seat 3"}, "supervisor"),
    ("/api/actions/move_button", {"seat": 4}, "supervisor"),
    ("/api/actions/open_table", {}, "manager"),
    ("/api/actions/close_table", {"reason": "end of shift"}, "manager"),
    ("/api/actions/set_limits", {"min_ante_cents": 500, "max_ante_cents": 50000}, "manager"),
    ("/api/actions/set_paytable", {"wager": "flush", "spec": "hcf-flush-a"}, "manager"),
]
RED_LIGHT = "FT1-000001"  # the engine's id of the first fault of table T1
RANK = {"viewer": 0, "supervisor": 1, "manager": 2}
USER_OF_ROLE = {"viewer": "vera", "supervisor": "sam", "manager": "max"}


def _seed_alert(rig: PanelRig) -> None:
    """The shoe's red light between rounds (through the engine): the journal's first fault."""
    assert raise_red_light(rig.journal) == RED_LIGHT
    rig.backend.refresh()


@pytest.mark.parametrize("role", ["viewer", "supervisor", "manager"])
@pytest.mark.parametrize("action", ACTIONS, ids=[a[0] for a in ACTIONS])
def test_every_role_against_every_action(
    rig: PanelRig, client: TestClient, role: str, action: tuple[str, dict[str, Any] | None, str]
) -> None:
    path, body, needed = action
    _seed_alert(rig)
    user = USER_OF_ROLE[role]
    csrf = login(client, user)
    before = rig.journal.last_entry()
    assert before is not None
    answer = client.post(path, json=body, headers={"X-CSRF-Token": csrf})
    new = list(rig.journal.entries(since_seq=before.seq))
    if RANK[role] >= RANK[needed]:
        # Allowed: done, or refused by the table itself (void with no round: 409), never a 403.
        assert answer.status_code in (200, 409), answer.text
        if path.endswith("/acknowledge"):
            assert [(e.kind, e.payload["by"]) for e in new] == [("fault_acknowledged", user)]
        else:
            audit = [e for e in new if e.kind == "panel_request"]
            assert len(audit) == 1
            assert audit[0].payload["by"] == user
            assert audit[0].source == f"operator:{user}"
            outcome = audit[0].payload["outcome"]
            if answer.status_code != 200:
                assert outcome.startswith("refused: ")
            elif path.endswith(("/set_limits", "/set_paytable")):  # money settings: proposals
                assert outcome.startswith("proposed CT1-0001: ")
                assert rig.actions.calls == []  # nothing applies before a second manager approves
            else:
                assert outcome == "done"
    else:
        assert answer.status_code == 403, answer.text
        assert needed in answer.json()["detail"]
        # The refusal is journaled with the user, and nothing else happened.
        assert [(e.kind, e.payload["by"], e.payload["outcome"][:8]) for e in new] == [
            ("panel_request", user, "refused:")
        ]
        assert rig.actions.calls == []


def test_engine_receives_the_action_with_the_user(rig: PanelRig, client: TestClient) -> None:
    _seed_alert(rig)
    csrf = login(client, "sam")
    assert (
        client.post("/api/actions/move_button", json={"seat": 5}, headers={"X-CSRF-Token": csrf}).status_code
        == 200
    )
    assert client.post(
        "/api/actions/clear_fault",
        json={"fault_id": "FT1-000001", "reason": "checked"},
        headers={"X-CSRF-Token": csrf},
    ).json() == {"ok": True}
    assert rig.actions.calls == [MoveButton(5, "sam"), ClearFault("FT1-000001", "sam", "checked")]
    table = client.get("/api/table").json()
    assert table["button_seat"] == 5
    assert table["held"] is False
    alerts = client.get("/api/alerts", params={"include_cleared": True}).json()
    assert alerts[0]["state"] == "cleared"
    assert alerts[0]["cleared_by"] == "sam"


@pytest.mark.parametrize("token", [None, "", "wrong-token"])
def test_state_changing_requests_need_the_csrf_token(
    rig: PanelRig, client: TestClient, token: str | None
) -> None:
    _seed_alert(rig)
    login(client, "max")
    headers = {} if token is None else {"X-CSRF-Token": token}
    for path, body, _needed in ACTIONS:
        answer = client.post(path, json=body, headers=headers)
        assert answer.status_code == 403, (path, answer.text)
        assert "CSRF" in answer.json()["detail"]
    assert rig.actions.calls == []
    assert not any(e.kind == "fault_acknowledged" for e in rig.journal.entries())


def test_csrf_token_of_another_session_is_refused(rig: PanelRig, client: TestClient) -> None:
    _seed_alert(rig)
    first_token = login(client, "sam")
    client.cookies.clear()
    second_token = login(client, "sam")
    assert second_token != first_token
    answer = client.post("/api/alerts/FT1-000001/acknowledge", headers={"X-CSRF-Token": first_token})
    assert answer.status_code == 403


def test_logout_needs_csrf_too(client: TestClient) -> None:
    csrf = login(client, "vera")
    assert client.post("/logout", data={"csrf_token": "nope"}, follow_redirects=False).status_code == 403
    assert client.get("/api/session").status_code == 200
    assert client.post("/logout", data={"csrf_token": csrf}, follow_redirects=False).status_code == 303
    assert client.get("/api/session").status_code == 401


def test_every_route_but_login_healthz_and_static_refuses_a_visitor(
    rig: PanelRig, client: TestClient
) -> None:
    raise_red_light(rig.journal)
    open_paths = {"/login", "/healthz"}
    checked = 0
    for route in api_routes(rig.app):
        if route.path in open_paths:
            continue
        path = route.path.replace("{fault_id}", "FT1-000001").replace("{round_id}", "RT1-20260101-000001")
        for method in sorted(route.methods or ()):
            answer = client.request(method, path, follow_redirects=False)
            if method == "POST" and path == "/logout":
                assert answer.status_code == 303  # logging out without a session just goes to the login
                continue
            assert answer.status_code in (401, 303), (method, path, answer.status_code)
            if answer.status_code == 303:
                assert answer.headers["location"] == "/login"
            checked += 1
    assert checked >= 20
    assert client.get("/healthz").json()["status"] == "ok"
    assert client.get("/static/panel.css").status_code == 200
    assert rig.actions.calls == []


def test_session_cookie_is_httponly_and_samesite_strict(client: TestClient) -> None:
    client.get("/login")
    token = client.cookies.get("ft_login_csrf")
    answer = client.post(
        "/login",
        data={"user": "vera", "password": PASSWORDS["vera"], "csrf_token": token or ""},
        follow_redirects=False,
    )
    cookie = next(
        v for k, v in answer.headers.multi_items() if k == "set-cookie" and v.startswith("ft_session=")
    )
    assert "HttpOnly" in cookie
    assert "SameSite=strict" in cookie or "SameSite=Strict" in cookie
    assert "Path=/" in cookie


def test_login_without_the_form_token_is_refused(rig: PanelRig, client: TestClient) -> None:
    answer = client.post(
        "/login", data={"user": "vera", "password": PASSWORDS["vera"]}, follow_redirects=False
    )
    assert answer.status_code == 403
    assert client.get("/api/session").status_code == 401


def test_session_expires_when_idle_and_at_the_absolute_limit(rig: PanelRig, client: TestClient) -> None:
    login(client, "sam")
    rig.clock.now_s += 599  # idle timeout 600 s in the rig
    assert client.get("/api/table").status_code == 200
    rig.clock.now_s += 601
    assert client.get("/api/table").status_code == 401
    assert client.get("/", follow_redirects=False).headers["location"] == "/login"
    # Kept busy, a session still ends at the absolute limit (12 h).
    login(client, "sam")
    for _ in range(75):  # 75 x 590 s > 12 h
        rig.clock.now_s += 590
        client.get("/api/session")
    assert client.get("/api/session").status_code == 401


def test_failed_logins_are_journaled_and_rate_limited(rig: PanelRig, client: TestClient) -> None:
    client.get("/login")
    token = client.cookies.get("ft_login_csrf") or ""
    statuses = []
    for _ in range(6):
        answer = client.post("/login", data={"user": "sam", "password": "guess", "csrf_token": token})
        statuses.append(answer.status_code)
        token = client.cookies.get("ft_login_csrf") or ""
    assert statuses == [401, 401, 401, 401, 401, 429]
    # Locked: even the right password waits, and the answer says how long.
    answer = client.post("/login", data={"user": "sam", "password": PASSWORDS["sam"], "csrf_token": token})
    assert answer.status_code == 429
    assert int(answer.headers["Retry-After"]) >= 1
    failed = [e.payload for e in rig.journal.entries(kinds=["login_failed"])]
    # The attempts refused unchecked while locked are failed logins too (within the address's budget).
    assert [f["reason"] for f in failed] == ["bad_credentials"] * 4 + ["rate_limited"] + ["locked_out"] * 2
    assert all(f["user"] == "sam" and "password" not in f for f in failed)
    assert not any("guess" in str(e.payload) for e in rig.journal.entries())
    rig.clock.now_s += 61
    token = client.cookies.get("ft_login_csrf") or ""
    login(client, "sam")
    logins = [e.payload for e in rig.journal.entries(kinds=["login"])]
    assert logins[-1]["user"] == "sam"
    assert logins[-1]["role"] == "supervisor"


def test_unknown_user_and_wrong_password_answer_alike(client: TestClient) -> None:
    client.get("/login")
    token = client.cookies.get("ft_login_csrf") or ""
    unknown = client.post("/login", data={"user": "nobody", "password": "x" * 10, "csrf_token": token})
    token = client.cookies.get("ft_login_csrf") or ""
    wrong = client.post("/login", data={"user": "vera", "password": "x" * 10, "csrf_token": token})
    assert unknown.status_code == wrong.status_code == 401
    assert "Wrong user name or password." in unknown.text
    assert "Wrong user name or password." in wrong.text


def test_bad_input_gets_a_clear_answer_and_no_5xx(rig: PanelRig, client: TestClient) -> None:
    _seed_alert(rig)
    csrf = login(client, "max")
    headers = {"X-CSRF-Token": csrf}
    assert client.post("/api/actions/move_button", json={"seat": 9}, headers=headers).status_code == 422
    assert (
        client.post(
            "/api/actions/clear_fault", json={"fault_id": "FT1-000001", "reason": ""}, headers=headers
        ).status_code
        == 422
    )
    answer = client.post("/api/alerts/nope/acknowledge", headers=headers)
    assert answer.status_code == 404
    assert "nope" in answer.json()["detail"]
    # Unknown fields are refused, not ignored (a typo must not perform a different action); the
    # operator's name comes from the session, never from the body. (The engine's own refusal of a
    # minimum above the maximum: tests/panel/test_panel_engine.py.)
    for body in (
        {"seat": 3, "by": "someone-else"},
        {"seat": 3, "sea": 4},
        {"seat": "three"},
        {"seat": 10**30},
        {},
    ):
        answer = client.post("/api/actions/move_button", json=body, headers=headers)
        assert answer.status_code == 422, (body, answer.text)
    assert client.post("/api/actions/no_such_action", json={}, headers=headers).status_code == 404
    assert rig.actions.calls == []
    assert client.get("/api/recall", params={"round_id": "RT1-19990101-000001"}).status_code == 404
    assert client.get("/recall/nope").status_code == 404


# --- hidden cards ---------------------------------------------------------------------------------
_CARD_TOKEN = re.compile(r"(?<![A-Za-z0-9])([2-9TJQKA][cdhs])(?![A-Za-z0-9])")


def _reading_routes(round_id: str) -> list[str]:
    return [
        "/",
        "/partials/table",
        "/alerts?show=all",
        "/partials/alerts?show=all",
        "/recall",
        f"/recall/{round_id}",
        "/log",
        f"/log?round_id={round_id}",
        "/log?kind=card_dealt",
        "/meters",
        "/api/table",
        "/api/devices",
        "/api/alerts?include_cleared=true",
        "/api/recall",
        f"/api/recall?round_id={round_id}",
        "/api/journal",
        "/api/journal?since_seq=1&limit=1000",
        f"/api/journal?round_id={round_id}",
        "/api/journal?kind=card_dealt",
        "/api/meters",
    ]


def _cards_shown(text: str) -> set[str]:
    """Cards the text shows: as JSON strings ("As") or as the page draws them (data-card="As")."""
    quoted = set(re.findall(r'"([2-9TJQKA][cdhs])"', text)) | set(
        re.findall(r"&#34;([2-9TJQKA][cdhs])&#34;", text)
    )
    drawn = set(re.findall(r'data-card="([2-9TJQKA][cdhs])"', text))
    return (quoted | drawn) & all_cards()


@pytest.mark.parametrize("role", ["viewer", "manager"])
def test_no_card_in_any_response_before_its_reveal(rig: PanelRig, client: TestClient, role: str) -> None:
    login(client, USER_OF_ROLE[role])
    # A card named in the shoe's own words, after the deal and before the reveal, must not leak either.
    misread = ShufflerFault("shuffler", "misread", 1, "misread near Ah", card=parse_card("Ah"), index=0)
    script = ScriptedRound(rig.journal, after_deal=[misread])
    seen_by_step: dict[str, set[str]] = {}
    for step in script.steps():
        rig.backend.refresh()
        shown: set[str] = set()
        for route in _reading_routes(script.round_id):
            answer = client.get(route)
            assert answer.status_code in (200, 404), (route, answer.status_code)
            shown |= _cards_shown(answer.text)
        seen_by_step[step] = shown
    for step in ("betting", "bets_locked", "dealt", "decisions"):
        assert seen_by_step[step] == set(), (step, seen_by_step[step])
    assert seen_by_step["reveal"] == all_cards()
    assert seen_by_step["settled"] == all_cards()
    assert set(HOLE_CARDS[1]) <= seen_by_step["reveal"]


def test_dead_round_cards_are_never_shown(rig: PanelRig, client: TestClient) -> None:
    """docs/rules.md: cards of a dead hand are never shown, even after the round closes."""
    login(client, "max")
    # The shoe's red light with the fourth card (seat 1's): the engine kills the round mid-deal.
    script = ScriptedRound(rig.journal, red_light_at=4)
    assert list(script.steps()) == ["betting", "bets_locked", "dead"]
    dealt = list(rig.journal.entries(round_id=script.round_id, kinds=["card_dealt"]))
    assert [e.private["card"] for e in dealt if e.private] == HOLE_CARDS[1][:4]
    rig.backend.refresh()
    shown: set[str] = set()
    for route in _reading_routes(script.round_id):
        shown |= _cards_shown(client.get(route).text)
    assert shown == set()
    record = client.get("/api/recall", params={"round_id": script.round_id}).json()[0]
    assert record["status"] == "dead"
    assert [seat["cards"] for seat in record["round"]["seats"]] == [[], [], []]
    assert record["round"]["dealer"] == []
    dealt_events = [e for e in record["events"] if e["kind"] == "card_dealt"]
    assert len(dealt_events) == 4
    assert all(e["hidden"] and e["private"] is None and "card" not in e["payload"] for e in dealt_events)


def test_healthz_answers_without_login_and_shows_nothing_of_the_table(client: TestClient) -> None:
    answer = client.get("/healthz")
    assert answer.status_code == 200
    assert set(answer.json()) == {"status", "last_seq"}


def test_openapi_schema_is_served_to_a_session(client: TestClient) -> None:
    assert client.get("/openapi.json").status_code == 401
    login(client, "vera")
    schema = client.get("/openapi.json").json()
    assert schema["openapi"].startswith("3.")
    assert "/api/actions/clear_fault" in schema["paths"]
    assert "/healthz" in schema["paths"]


def test_a_one_time_password_must_be_replaced_before_anything_else(tmp_path: Path) -> None:
    """The bootstrap supervisor's one-time password opens only the password page, once."""
    journal = Journal.open(tmp_path / "journal.sqlite", "T1")
    store = UserStore(tmp_path / "users.json")
    one_time = store.ensure_bootstrap_user({})
    assert one_time is not None
    app = create_panel_app(JournalPanelBackend(journal), users=store)
    with TestClient(app, base_url="http://127.0.0.1") as client:
        client.get("/login")
        answer = client.post(
            "/login",
            data={
                "user": "supervisor",
                "password": one_time,
                "csrf_token": client.cookies.get("ft_login_csrf") or "",
            },
            follow_redirects=False,
        )
        assert answer.status_code == 303
        assert client.get("/", follow_redirects=False).headers["location"] == "/account/password"
        assert client.get("/api/table").status_code == 403
        assert "one-time password" in client.get("/api/table").json()["detail"]
        csrf = client.get("/api/session").json()["csrf_token"]
        form = {
            "csrf_token": csrf,
            "current_password": one_time,
            "new_password": "mine-now-123",
            "repeat_password": "x",
        }
        assert client.post("/account/password", data=form).status_code == 422
        form["repeat_password"] = form["new_password"]
        assert client.post("/account/password", data={**form, "csrf_token": "no"}).status_code == 403
        answer = client.post("/account/password", data=form, follow_redirects=False)
        assert answer.status_code == 303
        assert client.get("/api/table").status_code == 200
        assert client.get("/", follow_redirects=False).status_code == 200
    assert store.authenticate("supervisor", one_time) is None
    user = store.authenticate("supervisor", "mine-now-123")
    assert user is not None
    assert not user.must_change_password
    changes = [e.payload for e in journal.entries(kinds=["panel_request"])]
    assert [(c["action"], c["by"]) for c in changes] == [("change_password", "supervisor")]
    assert "mine-now-123" not in str([e.payload for e in journal.entries()])
    journal.close()


def test_pages_show_a_dead_seat_with_chips_on_a_spot_its_result_does_not_name(
    rig: PanelRig, client: TestClient
) -> None:
    """Seat 2's hand is dead (the shoe miscounted it) while its raise chips are down: its result names
    the ante only. Every page still renders, and the dead hand's cards never show."""
    login(client, "vera")
    ScriptedRound(rig.journal, wrong_count={2: 6}).play_all()
    rig.backend.refresh()
    for route in ("/", "/partials/table", "/recall", "/log"):
        answer = client.get(route)
        assert answer.status_code == 200, (route, answer.text[:300])
    table = client.get("/api/table").json()
    seat = next(s for s in table["round"]["seats"] if s["seat"] == 2)
    assert seat["dead"]
    assert seat["wagers"] == {"ante": ANTE_CENTS, "raise": ANTE_CENTS}
    assert set(seat["result"]["wagers"]) == {"ante"}
    shown: set[str] = set()
    for route in _reading_routes(table["round"]["round_id"]):
        shown |= _cards_shown(client.get(route).text)
    assert shown == all_cards() - set(HOLE_CARDS[2])

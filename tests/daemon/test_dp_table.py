"""Must show (issue 13): a designated-player table run at the table, with no simulated players. Each
round is a scenario file (tests/daemon/dp_scenarios/*.toml: the dealer's keys and the chips on the bet
sensors, the bank spot included) played by the real daemon on its simulated devices over
pseudo-terminals, into a real journal; every recalled round re-settles identically with `settle`."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import httpx
from fastapi.testclient import TestClient

from controller.journal.store import Journal, JournalEntry
from controller.journal.verify import verify_chain
from controller.panel import JournalPanelBackend, create_panel_app
from controller.panel.auth import UserStore
from controller.rules.cards import parse_card
from controller.simulation.table import SimulatedTable
from sim_devices.table import SimTable
from tests.daemon.harness import (
    DEVICES_TOML,
    DP_BANKING_TOML,
    DP_RAKE_TOML,
    check_recall_settles,
    entries,
    flushtable,
    run_daemon,
    settle_with_cli,
    table_toml,
)

SUPERVISOR = ("sam", "supervisor-pass-1")
WAIT_S = 30.0  # the longest any one step of the scripted supervisor waits for what it looks for
POLL_S = 0.05

# Their own directory: tests/privacy plays every file of tests/daemon/scenarios on a house table.
SCENARIOS = Path(__file__).with_name("dp_scenarios")

DP_TABLE = (
    table_toml("HCF2", "high-card-flush", 7)
    + DP_BANKING_TOML
    + "\n[designated_player]\nmin_bank_cents = 20000\n"
    + DP_RAKE_TOML
)


def play(
    tmp_path: Path, scenario: str, *, dp_offer_s: float = 30.0, table: str = DP_TABLE, **options: Any
) -> list[JournalEntry]:
    journal_path = tmp_path / "journal.sqlite"
    config_path = tmp_path / "dp.toml"
    config_path.write_text(
        table
        + f"\n[timeouts]\ndecision_s = 30\ndp_offer_s = {dp_offer_s}\n"
        + f'\n[journal]\npath = "{journal_path}"\n'
        + DEVICES_TOML,
        encoding="utf-8",
    )
    run_daemon(
        config_path,
        journal_path,
        rounds=1,
        seed=5,
        autoplay=False,
        time_scale=1.0,
        card_interval_s=0.0,
        scenario_path=SCENARIOS / f"{scenario}.toml",
        timeout_s=40.0,
        **options,
    )
    assert verify_chain(journal_path).ok
    records = check_recall_settles(journal_path)
    assert [record["status"] for record in records] == ["settled"]
    return entries(journal_path)


def of_kind(journal: list[JournalEntry], kind: str) -> list[dict[str, Any]]:
    return [entry.payload for entry in journal if entry.kind == kind]


def refusals(journal: list[JournalEntry]) -> list[str]:
    return [f"refused: {payload['reason']}" for payload in of_kind(journal, "action_refused")]


def test_accept_with_the_bank_on_the_sensors_and_a_seat_dead_by_its_bonus(tmp_path: Path) -> None:
    journal = play(tmp_path, "dp_sensor_bank")
    banks = [(p["seat"], p["amount_cents"]) for p in of_kind(journal, "bet_changed") if p["wager"] == "bank"]
    assert set(banks) == {(1, 20_000)}  # the bank spot (re-reported after the lock)
    [moved] = of_kind(journal, "button_moved")
    assert (moved["to_seat"], moved["reason"]) == (1, "accepted, funds 200.00")
    [started] = of_kind(journal, "round_started")
    assert started["banking"] == {
        "mode": "designated-player",
        "seat": 1,
        "funds": 20_000,
        "bonus_cap": 2_000_000,
    }
    # Seat 2's straight-flush bonus could win 1,000.00: with its 20.00 of ante and raise it is not covered.
    [dead] = of_kind(journal, "dead_hand")
    assert dead["seat"] == 2
    assert dead["reason"]["code"] == "not_covered"
    [settled] = of_kind(journal, "round_settled")
    seats = {seat["seat"]: seat for seat in settled["settlement"]["seats"]}
    assert seats[2]["status"] == "dead"
    assert {name: w["result"] for name, w in seats[2]["wagers"].items()} == {
        "ante": "returned",
        "straight_flush": "returned",
    }
    assert seats[2]["rake"] == 0
    assert seats[3]["status"] == "live"
    assert settled["settlement"]["designated_player"]["shortfall"] == 0


def test_a_keyed_bank_after_a_bank_below_the_minimum_and_a_waive_by_key(tmp_path: Path) -> None:
    journal = play(tmp_path, "dp_keyed_bank")
    assert "refused: a bank of 1.00 is below the table's minimum bank 200.00" in refusals(journal)
    assert of_kind(journal, "dp_waived") == [{"seat": 1}]
    [moved] = of_kind(journal, "button_moved")
    assert (moved["to_seat"], moved["reason"]) == (2, "accepted, funds 500.00")
    keys = [(p["key"], p["seat"]) for p in of_kind(journal, "dealer_key")]
    assert keys[:3] == [("dp_accepts", 1), ("dp_waives", None), ("dp_accepts", 2)]
    [settled] = of_kind(journal, "round_settled")
    assert settled["round"]["banking"]["seat"] == 2
    assert sorted(seat["seat"] for seat in settled["settlement"]["seats"]) == [3, 4]


def test_an_unanswered_offer_is_waived_by_its_timeout(tmp_path: Path) -> None:
    journal = play(tmp_path, "dp_offer_timeout", dp_offer_s=3.0)
    [waived] = [entry for entry in journal if entry.kind == "dp_waived"]
    assert (waived.payload, waived.source) == ({"seat": 1}, "engine")
    [moved] = of_kind(journal, "button_moved")
    assert (moved["to_seat"], moved["reason"]) == (2, "accepted, funds 300.00")
    [settled] = of_kind(journal, "round_settled")
    assert settled["round"]["banking"]["funds"] == 30_000


# --- kill one seat by the dealer's key, confirmed by a supervisor on the panel ------------------------
class PanelSupervisor:
    """A supervisor at the daemon's real panel (uvicorn on 127.0.0.1): logs in through the form as a
    browser does, reads the table, and acts through POST /api/actions/{name} with the session's CSRF
    token. Synchronous httpx: called in a thread, off the daemon's loop."""

    def __init__(self, url: str) -> None:
        self.client = httpx.Client(base_url=url, timeout=WAIT_S)
        self.client.get("/login").raise_for_status()
        answer = self.client.post(
            "/login",
            data={
                "user": SUPERVISOR[0],
                "password": SUPERVISOR[1],
                "csrf_token": self.client.cookies.get("ft_login_csrf") or "",
            },
            follow_redirects=False,
        )
        assert answer.status_code == 303, answer.text
        self.csrf = str(self.client.get("/api/session").json()["csrf_token"])

    def table(self) -> dict[str, Any]:
        answer = self.client.get("/api/table")
        answer.raise_for_status()
        table: dict[str, Any] = answer.json()
        return table

    def act(self, name: str, body: dict[str, Any]) -> httpx.Response:
        return self.client.post(f"/api/actions/{name}", json=body, headers={"X-CSRF-Token": self.csrf})

    def close(self) -> None:
        self.client.close()


def wait_for(what: str, condition: Any) -> Any:
    """Poll ``condition()`` until it gives something true, at most WAIT_S (a bound, not a timing)."""
    deadline = time.monotonic() + WAIT_S
    while True:
        value = condition()
        if value:
            return value
        assert time.monotonic() < deadline, f"never saw {what}"
        time.sleep(POLL_S)


def test_the_dealers_kill_seat_key_rejected_asked_again_and_confirmed_on_the_panel(tmp_path: Path) -> None:
    """The simulated display presses kill_seat 3 (scenario dp_kill_seat); the panel shows the request;
    the supervisor rejects it through the panel's action path; the dealer presses kill_seat 3 again; a
    late Confirm naming the first request (a page still showing it: same round, same seat) is refused
    with 409 and kills nothing; the Confirm naming the second request kills seat 3: its wagers are
    returned and the rest settles; the journal and `flushtable recall` show it all."""
    store = UserStore(tmp_path / "panel-users.json")  # beside the journal: where the daemon looks
    store.add(SUPERVISOR[0], "supervisor", SUPERVISOR[1])
    seen: dict[str, Any] = {}

    def supervise(table: SimulatedTable) -> None:
        daemon = table.daemon
        devices = table.devices
        assert isinstance(devices, SimTable)
        wait_for("the panel", lambda: daemon.panel is not None)
        panel = PanelSupervisor(daemon.panel.url)
        try:

            def requested() -> dict[str, Any] | None:
                round_ = panel.table().get("round") or {}
                request: dict[str, Any] | None = round_.get("kill_request")
                return request

            seen["request"] = wait_for("the kill request on the panel", requested)
            partial = panel.client.get("/partials/table").text
            round_id = seen["request"]["round_id"]
            seen["banner"] = (
                "KILL SEAT 3?" in partial
                and f"round {round_id}, request 1 of the round" in partial
                and "confirm_kill_seat" in partial
            )
            # Not yet killed: the key only asked.
            seen["alive_before"] = not any(e.kind == "dead_hand" for e in entries(daemon.journal_path))
            # A confirm naming another round (a dialog opened for a request that lapsed) is refused.
            stale = panel.act(
                "confirm_kill_seat",
                {"seat": 3, "round_id": "RT1-00000000-000000", "request_number": 1, "reason": "x"},
            )
            seen["stale"] = (stale.status_code, stale.json())
            seen["alive_after_stale"] = not any(e.kind == "dead_hand" for e in entries(daemon.journal_path))
            first = {"seat": 3, "round_id": round_id, "request_number": seen["request"]["request_number"]}
            rejected = panel.act("reject_kill_seat", {**first, "reason": "not exposed"})
            seen["reject"] = (rejected.status_code, rejected.json())
            wait_for("the rejection on the panel", lambda: not requested())
            devices.dealer_display().press("kill_seat", 3)  # the dealer asks again, same seat
            seen["again_asked"] = wait_for("the second kill request on the panel", requested)
            # The first request's Confirm, sent late from a page that still shows it: refused.
            late = panel.act("confirm_kill_seat", {**first, "reason": "hand exposed"})
            seen["late"] = (late.status_code, late.json())
            seen["alive_after_late"] = not any(e.kind == "dead_hand" for e in entries(daemon.journal_path))
            seen["still_waiting"] = requested()
            body = {
                **first,
                "request_number": seen["again_asked"]["request_number"],
                "reason": "hand exposed",
            }
            answer = panel.act("confirm_kill_seat", body)
            seen["confirm"] = (answer.status_code, answer.json())
            again = panel.act("confirm_kill_seat", body)
            seen["again"] = (again.status_code, again.json())
            wait_for("no request left on the panel", lambda: not requested())
        finally:
            panel.close()
        # The dealer plays the round out at the simulated devices: seat 2 raises 1x, confirm, pay.
        devices.bet_sensors().place(2, 1, 500)
        live = daemon.engine.view().round
        assert live is not None
        # The engine has seen the raise chips (the dealer confirms what is on the felt).
        wait_for("seat 2's raise", lambda: live.seats[2].pending_cents == 500)
        devices.dealer_display().press("confirm")
        wait_for("the payout", lambda: daemon.engine.view().state == "paying")
        devices.dealer_display().press("next")

    async def supervisor(table: SimulatedTable) -> None:
        await asyncio.to_thread(supervise, table)

    journal = play(tmp_path, "dp_kill_seat", companions=[supervisor], panel_bind=("127.0.0.1", 0))
    assert seen["request"]["seat"] == 3
    assert seen["request"]["requested_by"] == "dealer"
    assert seen["banner"]
    assert seen["alive_before"]
    assert seen["stale"][0] == 409, seen["stale"]
    assert "not round RT1-00000000-000000" in json.dumps(seen["stale"][1])
    assert seen["alive_after_stale"]
    assert seen["request"]["request_number"] == 1
    assert seen["reject"][0] == 200, seen["reject"]
    assert (seen["again_asked"]["seat"], seen["again_asked"]["request_number"]) == (3, 2)
    assert seen["late"][0] == 409, seen["late"]
    assert "the waiting kill request is request 2 of this round, not request 1" in json.dumps(seen["late"][1])
    assert seen["alive_after_late"]
    assert seen["still_waiting"] == seen["again_asked"]
    assert seen["confirm"][0] == 200, seen["confirm"]
    assert seen["again"][0] == 409  # nothing waits any more
    assert "no kill request is waiting for a supervisor" in json.dumps(seen["again"][1])

    keys = [(p["key"], p["seat"]) for p in of_kind(journal, "dealer_key")]
    assert keys.count(("kill_seat", 3)) == 2
    statuses = [(p["status"], p["by"], p["request_number"]) for p in of_kind(journal, "kill_seat_request")]
    assert statuses == [
        ("requested", "dealer", 1),
        ("rejected", "sam", 1),
        ("requested", "dealer", 2),
        ("confirmed", "sam", 2),
    ]
    late_refusals = [r for r in refusals(journal) if "not request 1" in r]
    assert len(late_refusals) == 1
    [dead] = of_kind(journal, "dead_hand")
    assert dead["seat"] == 3
    assert dead["reason"]["message"] == "killed by a supervisor at the dealer's request: hand exposed"
    [settled] = of_kind(journal, "round_settled")
    seats = {seat["seat"]: seat for seat in settled["settlement"]["seats"]}
    assert seats[3]["status"] == "dead"
    assert {name: w["result"] for name, w in seats[3]["wagers"].items()} == {
        "ante": "returned",
        "flush": "returned",
    }
    assert (seats[3]["net"], seats[3]["rake"]) == (0, 0)
    assert seats[2]["status"] == "live"
    assert seats[2]["wagers"]["raise"]["stake"] == 500

    recalled = flushtable("recall", "--journal", str(tmp_path / "journal.sqlite"), "--json")
    assert recalled.returncode == 0, recalled.stderr
    [record] = json.loads(recalled.stdout)
    events = [(event["kind"], event["payload"].get("status")) for event in record["events"]]
    assert ("kill_seat_request", "requested") in events
    assert ("kill_seat_request", "rejected") in events
    assert ("kill_seat_request", "confirmed") in events
    text = flushtable("recall", "--journal", str(tmp_path / "journal.sqlite")).stdout
    assert "Kill request 1, seat 3: requested by dealer" in text
    assert "Kill request 1, seat 3: rejected by sam: not exposed" in text
    assert "Kill request 2, seat 3: requested by dealer" in text
    assert "Kill request 2, seat 3: confirmed by sam: hand exposed" in text
    assert record["settlement"] == settled["settlement"]


# --- a short bank paid seat by seat ----------------------------------------------------------------
SHORT_BANK_TABLE = DP_TABLE.replace(
    "aggregate_bonus_cap_cents = 2000000", "aggregate_bonus_cap_cents = 10000"
).replace("min_bank_cents = 20000", "min_bank_cents = 10000")
# The shoe deals seat 3, seat 4 (clockwise from the button's left; seat 2 is dead, not dealt), then the DP.
SEAT3_CARDS = ("2h", "3h", "4h", "5h", "6h", "7h", "8h")  # a 7-card straight flush
SEAT4_CARDS = ("As", "Ks", "Js", "9s", "7s", "5s", "3s")  # a 7-card flush, no run longer than 2
DP_CARDS = ("9c", "5c", "3c", "Td", "8d", "9h", "2s")  # a 9-high 3-card flush: qualifies, loses to both


def test_a_short_bank_covers_two_seats_in_order_and_pays_them_seat_by_seat(tmp_path: Path) -> None:
    """docs/rules.md's coverage and settlement live: the bank (140.00) covers seat 4 then seat 3 in settlement
    order and not seat 2 (dead, returned, unraked); both covered seats win their main wagers and their
    bonuses (cut by the 100.00 cap), paid seat by seat, the bank after each seat journaled, ending at the
    cap's rounding (0.01): the bank is spent, never overdrawn; `settle` re-settles the recalled round."""

    async def stack_the_shoe(table: SimulatedTable) -> None:
        devices = table.devices
        assert isinstance(devices, SimTable)
        devices.shuffler().preset_deck([parse_card(c) for c in (*SEAT3_CARDS, *SEAT4_CARDS, *DP_CARDS)])

    journal = play(tmp_path, "dp_short_bank", table=SHORT_BANK_TABLE, companions=[stack_the_shoe])
    [started] = of_kind(journal, "round_started")
    assert started["banking"] == {
        "mode": "designated-player",
        "seat": 1,
        "funds": 14_000,
        "bonus_cap": 10_000,
    }
    [dead] = of_kind(journal, "dead_hand")
    assert (dead["seat"], dead["reason"]["code"]) == (2, "not_covered")
    [settled] = of_kind(journal, "round_settled")
    settlement = settled["settlement"]
    assert settlement["designated_player"]["action_order"] == [4, 3, 2]
    assert settlement["designated_player"]["committed"] == 14_000
    seats = {seat["seat"]: seat for seat in settlement["seats"]}
    assert seats[2]["status"] == "dead"
    assert seats[2]["rake"] == 0
    assert seats[2]["wagers"] == {"ante": {"stake": 500, "result": "returned", "net": 0}}
    # Bonus wins 200 x 1.00 (seat 4's 7-card flush) and 1,000 x 1.00 (seat 3's 7-card straight flush):
    # 1,200.00 cut to the 100.00 cap in proportion, rounded down: 16.66 and 83.33, 0.01 of rounding.
    assert seats[4]["wagers"]["flush"] == {
        "stake": 100,
        "result": "win",
        "net": 1666,
        "odds": 200,
        "capped_from": 20_000,
    }
    assert seats[3]["wagers"]["straight_flush"] == {
        "stake": 100,
        "result": "win",
        "net": 8333,
        "odds": 1000,
        "capped_from": 100_000,
    }
    assert settlement["bonus_cap"] == {
        "cap": 10_000,
        "bonus_wins": 120_000,
        "applied": True,
        "paid": 9999,
        "rounding": 1,
    }
    for number in (3, 4):
        assert seats[number]["wagers"]["ante"]["net"] == 500
        assert seats[number]["wagers"]["raise"] == {"stake": 1500, "result": "win", "net": 1500}
    assert settlement["designated_player"]["shortfall"] == 0
    assert settlement["designated_player"]["paid"] == 13_999
    # Seat by seat, in settlement order: every win of seat 4, then every win of seat 3; the bank after each.
    assert settled["bank_by_seat"] == {
        "funds": 14_000,
        "collected": 0,
        "after_collecting": 14_000,
        "seats": [
            {"seat": 4, "paid": 500 + 1500 + 1666, "bank_after": 10_334},
            {"seat": 3, "paid": 500 + 1500 + 8333, "bank_after": 1},
        ],
        "bank_after_paying": 1,
    }
    # The recall shows the running bank too, and `flushtable settle` re-settles the round identically
    # (play() checked every recalled round; here through the command, whose output gains nothing).
    recalled = flushtable("recall", "--journal", str(tmp_path / "journal.sqlite"), "--json")
    assert recalled.returncode == 0, recalled.stderr
    [record] = json.loads(recalled.stdout)
    assert record["bank_by_seat"] == settled["bank_by_seat"]
    text = flushtable("recall", "--journal", str(tmp_path / "journal.sqlite")).stdout
    assert "DP bank: 140.00 posted, 0.00 collected -> 140.00; seat 4 paid 36.66 -> 103.34; " in text
    assert "seat 3 paid 103.33 -> 0.01" in text
    # The panel's recall page shows it too (the real app over the journal the daemon left).
    store = UserStore(tmp_path / "panel-users.json")
    store.add(SUPERVISOR[0], "supervisor", SUPERVISOR[1])
    with Journal.open_existing(tmp_path / "journal.sqlite", readonly=False) as opened:
        app = create_panel_app(JournalPanelBackend(opened), users=store)
        with TestClient(app, base_url="http://127.0.0.1") as client:
            client.get("/login")
            client.post(
                "/login",
                data={
                    "user": SUPERVISOR[0],
                    "password": SUPERVISOR[1],
                    "csrf_token": client.cookies.get("ft_login_csrf") or "",
                },
            )
            page = client.get(f"/recall/{record['round_id']}")
    assert page.status_code == 200
    assert "seat 4 paid 36.66 → 103.34; seat 3 paid 103.33 → 0.01" in page.text
    [again] = settle_with_cli([record["round"]])
    assert again == record["settlement"]
    assert "bank_by_seat" not in again

"""The floor panel's pit map, a table's page and a round's page in real Chromium, over a real floor
(nats-server, PostgreSQL, the floor service and the tables' uplinks running; docs/floor.md "The pit map",
"A table's page", "A round's page"):

- the map laid out as the floor file's ``[[pits]]`` says (tiles where they stand, measured in the page),
  each tile in words: the game's name, the phase, a hold's reason, a quarantine, the last time heard,
  the shift's rounds and win and hold against theoretical, amounts in the panel's currency;
- the Alerts badge's count on every page, not only the map;
- a round's page rendered by the table's own recall: the same hands in words and the same wagers, their
  amounts in money (not cents), the results, and the raw JSON one click away.

The shift is read from an injected clock (the last round's close): never the hour the test runs.
"""

from __future__ import annotations

import asyncio
import os
import re
import threading
import time
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import psycopg
import pytest
from playwright.sync_api import Browser, FloatRect, Page, expect

from controller.floor.panel import FloorPanelSettings, FloorUser, serve_panel
from controller.floor.service import FloorService
from controller.floor.tiles import PitLayout, current_shift
from controller.journal.recall import recall_records
from controller.journal.render import game_title, phase_words
from controller.locale import property_settings
from controller.money import MoneyFormat
from controller.panel.view import public_recall
from controller.simulation.floor.embedded import EmbeddedFloor
from controller.uplink.uplink import Uplink
from tests.chromium import CHROMIUM
from tests.floor.conftest import EXPECT_TIMEOUT_MS, MakeFloor
from tests.floor.helpers import Tables, expected_private_total, floor_count, journal_total, private_count
from tests.floor.test_floor_panel import _forge_bad_hash

pytestmark = pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Debian's chromium is not installed")

PASSWORD = "pit-boss-password"
EUR = MoneyFormat("EUR")
PITS = (
    PitLayout("Pit A", (("T1", "T2"), ("", "T3"))),
    PitLayout("Pit B", (("T4", "T9"),)),  # T9: placed, never heard by the floor
)
# The property's zone, shifts and currency for the pages ([property], controller/locale.py).
PARIS = ZoneInfo("Europe/Paris")
PARIS_EUR = property_settings(time_zone="Europe/Paris", currency="EUR")  # [property] as a floor file sets it
HEARD = re.compile(r"^heard \d+ (s|min) ago · \d{4}-\d\d-\d\d \d\d:\d\d:\d\d CES?T$")
# FLUSHTABLE_UPDATE_SCREENSHOT=1 writes the pages' screenshots into docs/img (docs/floor.md shows them).
DOCS_IMG = Path(__file__).resolve().parents[2] / "docs" / "img"


class PagesRig:
    """The floor service, the uplinks and the panel (with the pits, the euro, an injected clock) on one
    event loop in a thread of their own."""

    def __init__(
        self, floor: EmbeddedFloor, tables: Tables, users: dict[str, FloorUser] | None = None
    ) -> None:
        self.floor, self.tables = floor, tables
        self.users = users or {"pat": FloorUser.with_password("pat", "supervisor", PASSWORD)}
        self.now: datetime | None = None  # set once the floor holds the rounds: the shift's clock
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.stop = asyncio.Event()
        self.tasks: list[Any] = []
        self.url = self.call(self._start())

    def call(self, work: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(work, self.loop).result(timeout=60)

    def clock(self) -> datetime:
        assert self.now is not None
        return self.now

    async def _start(self) -> str:
        for table_id in self.tables.ids:
            uplink = Uplink(self.floor.uplink_config(table_id), self.tables.path(table_id), table_id)
            self.tasks.append(asyncio.create_task(uplink.run(self.stop)))
        self.tasks.append(asyncio.create_task(FloorService(self.floor.floor_config()).run(self.stop)))
        settings = FloorPanelSettings(
            self.floor.reporting_dsn,
            self.floor.writer_dsn,
            self.users,
            pits=PITS,
            property_settings=PARIS_EUR,
            now_utc=self.clock,
        )
        self.server = await serve_panel(settings, port=0)
        return str(self.server.url)

    async def _close(self) -> None:
        self.stop.set()
        await self.server.stop()
        await asyncio.wait_for(asyncio.gather(*self.tasks, return_exceptions=True), 30)

    def close(self) -> None:
        self.call(self._close())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=10)


def _wait(what: str, done: Any) -> None:
    deadline = time.monotonic() + 60
    while not done():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def _rows(floor: EmbeddedFloor, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    with psycopg.connect(floor.reporting_dsn) as connection:
        return connection.execute(sql, params).fetchall()


def _box(page: Page, table_id: str) -> FloatRect:
    box = page.locator(f'#floor-map [data-table="{table_id}"]').bounding_box()
    assert box is not None, table_id
    return box


def test_the_pit_map_a_table_and_a_round_in_chromium(
    tmp_path: Path, make_floor: MakeFloor, browser: Browser
) -> None:
    ids = ["T1", "T2", "T3", "T4"]
    floor = make_floor(ids, ack_wait_s=2)
    tables = Tables(tmp_path / "tables", ids)
    tables.play("T1", 2)
    tables.play("T2", 1, outcome="dead")  # the shoe's red light: a dead round, a latched fault: held
    tables.play("T3", 1)
    tables.play("T3", 1, outcome="open_mid_deal")
    tables.play("T4", 1)
    rig = PagesRig(floor, tables)
    shots = DOCS_IMG if os.environ.get("FLUSHTABLE_UPDATE_SCREENSHOT") == "1" else tmp_path
    try:
        _wait(
            "the floor to catch up",
            lambda: (
                floor_count(floor) == journal_total(tables)
                and private_count(floor) == expected_private_total(tables)
            ),
        )
        # The map's clock: when T1's last round closed. The journals are written at the wall clock's
        # time, so the rounds may straddle a shift's end (06:00, 14:00, 22:00 UTC); T1's figures below
        # are read for the shift this clock is in, as the page reads them, whatever the hour of the run.
        (last_close,) = _rows(floor, "SELECT max(closed_utc) FROM floor_rounds WHERE table_id = 'T1'")[0]
        rig.now = last_close
        _forge_bad_hash(floor, tables, "T4", rig.loop)
        _wait(
            "T4's quarantine",
            lambda: (
                _rows(floor, "SELECT quarantined_at_seq FROM floor_tables WHERE table_id = 'T4'")[0][0]
                is not None
            ),
        )
        context = browser.new_context(base_url=rig.url, viewport={"width": 1280, "height": 800})
        context.set_default_timeout(EXPECT_TIMEOUT_MS)
        page = context.new_page()
        page.goto("/login")
        page.fill("input[name=user]", "pat")
        page.fill("input[name=password]", PASSWORD)
        page.click("button[type=submit]")
        expect(page.locator("h1")).to_have_text("Floor map")
        expect(page.locator("#floor-map")).to_have_attribute("data-updated", re.compile(r"\d+"))

        # Laid out as the pits are: T1 and T2 side by side, T3 under T2 (its row's first place empty).
        pit_a = page.locator('section.pit[data-pit="Pit A"]')
        expect(pit_a.locator("h2")).to_have_text("Pit A")
        t1, t2, t3 = _box(page, "T1"), _box(page, "T2"), _box(page, "T3")
        assert abs(t1["y"] - t2["y"]) < 1, (t1, t2)
        assert t2["x"] > t1["x"] + t1["width"] / 2, (t1, t2)
        assert t3["y"] > t2["y"] + t2["height"] / 2, (t2, t3)
        assert abs(t3["x"] - t2["x"]) < 1, (t2, t3)
        expect(page.locator('section.pit[data-pit="Pit B"] .tile.missing[data-table="T9"]')).to_contain_text(
            "not heard"
        )

        # Each tile in words: the game's name and the phase as people say them, never the codes.
        states = {
            str(t): (str(g), str(p))
            for t, g, p in _rows(floor, "SELECT table_id, game, phase FROM floor_tables")
        }
        for table_id in ("T1", "T3"):
            game, phase = states[table_id]
            tile = page.locator(f'#floor-map a[data-table="{table_id}"]')
            expect(tile.locator(".game")).to_have_text(game_title(game))
            expect(tile.locator(".phase")).to_have_text(phase_words(phase))
            assert "-" not in game_title(game)
            assert "_" not in phase_words(phase)
            expect(tile.locator(".heard")).to_have_text(HEARD)
        # A hold's reason, from the table's latched fault; a quarantined tile says so, not its phase.
        t2_tile = page.locator('#floor-map a[data-table="T2"]')
        expect(t2_tile.locator(".state")).to_have_text("held")
        expect(t2_tile.locator(".phase")).to_have_text("no round starts until its fault is cleared")
        (fault_message,) = _rows(
            floor, "SELECT message FROM floor_alerts WHERE table_id = 'T2' AND severity = 'latching'"
        )[0]
        expect(t2_tile.locator(".reason")).to_have_text(str(fault_message))
        t4_tile = page.locator('#floor-map a[data-table="T4"]')
        expect(t4_tile.locator(".state")).to_have_text("quarantined")
        expect(t4_tile.locator(".phase")).to_have_text("the floor takes nothing after its bad entry")
        expect(t4_tile.locator(".reason")).not_to_be_empty()
        # The shift's rounds, win and hold against theoretical, in the panel's currency.
        shift = current_shift(rig.clock(), PARIS_EUR)
        (rounds, handle, win, theoretical) = _rows(
            floor,
            "SELECT count(*), COALESCE(sum(handle_cents), 0), COALESCE(sum(house_win_cents), 0), "
            "COALESCE(sum(theoretical_win_cents), 0) FROM floor_rounds WHERE table_id = 'T1' "
            "AND status = 'settled' AND closed_utc >= %s AND closed_utc < %s",
            shift.start,
            shift.end,
        )[0]
        t1_tile = page.locator('#floor-map a[data-table="T1"]')
        expect(t1_tile.locator(".shift")).to_have_text(
            f"{rounds} round{'' if rounds == 1 else 's'} · win {EUR(int(win), signed=True)} "
            f"(theo. {EUR(int(theoretical), signed=True)})"
        )
        handle = int(handle)
        expect(t1_tile.locator(".hold")).to_have_text(
            "hold — (theo. —)"
            if handle == 0
            else f"hold {100 * int(win) / handle:.1f}% (theo. {100 * int(theoretical) / handle:.1f}%)"
        )

        page.screenshot(path=str(shots / "floor-pit-map.png"), full_page=True)

        # The Alerts badge: the open alerts' count, on the map and on every other page.
        (open_alerts,) = _rows(
            floor,
            "SELECT count(*) FROM floor_alerts WHERE acknowledged_utc IS NULL AND cleared_utc IS NULL",
        )[0]
        assert open_alerts > 0
        expect(page.locator("#alert-count")).to_have_text(str(open_alerts))
        for path in ("/meters", "/rounds", "/reports", "/tables/T1"):
            page.goto(path)
            expect(page.locator("#alert-count")).to_have_text(str(open_alerts))

        # A table's page: its rounds, each a link; amounts in money.
        page.goto("/")
        t1_tile.click()
        expect(page.locator("h1")).to_have_text("Table T1")
        expect(page.locator("#table-summary .game")).to_have_text(game_title(states["T1"][0]))
        round_rows = page.locator("#table-rounds tbody tr")
        expect(round_rows).to_have_count(2)
        expect(round_rows.first.locator("td.money").first).to_have_text(re.compile(r"^EUR \d[\d,]*\.\d\d$"))

        page.screenshot(path=str(shots / "floor-table.png"), full_page=True)

        # A round's page: the table's recall of the same round, hand by hand and wager by wager.
        round_id = round_rows.first.get_attribute("data-round")
        assert round_id
        round_rows.first.locator("a").click()
        expect(page.locator("h1")).to_contain_text(f"round {round_id}")
        (record,) = recall_records(tables.path("T1"), round_id=round_id)
        view = public_recall(record, EUR)["view"]
        hands = page.locator("#recall-one table.recall-hands")
        expect(hands.locator("tr.dealer-row td.hand-words")).to_have_text(view["dealer_hand"])
        expect(hands.locator("tr.dealer-row .pcard")).to_have_count(len(view["dealer_cards"]))
        assert view["seats"]
        for seat in view["seats"]:
            row = hands.locator(f'tr[data-seat="{seat["seat"]}"]')
            expect(row.locator("td.hand-words")).to_have_text(seat["hand"])
            expect(row.locator(".pcard")).to_have_count(len(seat["cards"]))
            lines = row.locator(".wager-line")
            expect(lines).to_have_count(len(seat["wagers"]))
            for index, wager in enumerate(seat["wagers"]):
                net = "" if wager["net_cents"] is None else f" · {EUR(wager['net_cents'])}"
                odds = f" at {wager['odds']} to 1" if wager["odds"] else ""
                expect(lines.nth(index)).to_have_text(
                    f"{wager['name']} {EUR(wager['stake_cents'])} · {wager['result_words']}{odds}{net}"
                )
                assert wager["result_words"] in ("win", "lose", "push", "returned in full")
        expect(page.locator("#recall-one .recall-summary")).to_contain_text(EUR(view["banker_net_cents"]))
        page.screenshot(path=str(shots / "floor-round.png"), full_page=True)
        # The raw JSON one click away.
        href = page.locator("a.json-link").get_attribute("href")
        assert href is not None
        raw = page.request.get(href).json()
        assert (raw["round_id"], raw["status"]) == (round_id, "settled")
        assert raw["events"]
        context.close()
    finally:
        rig.close()
        tables.close()

"""The floor panel in real Chromium, over a real floor (nats-server, PostgreSQL, the floor service and
the tables' uplinks all running): the map (live over SSE), the one alert queue and its roles, the meters
chart of win against theoretical win, the round search and drill-down to a table's recall; no hole card
before the reveal and never a dead hand's."""

from __future__ import annotations

import asyncio
import json
import re
import threading
import time
from pathlib import Path
from typing import Any

import psycopg
import pytest
from playwright.sync_api import Browser, expect

from controller.floor.panel import FloorPanelSettings, FloorUser, serve_panel
from controller.floor.service import FloorService
from controller.journal.chain import entry_hash
from controller.simulation.floor.embedded import EmbeddedFloor
from controller.uplink import wire
from controller.uplink.uplink import Uplink
from tests.chromium import CHROMIUM
from tests.floor.conftest import EXPECT_TIMEOUT_MS, MakeFloor
from tests.floor.helpers import (
    ANSWER_TIMEOUT_S,
    Tables,
    expected_private_total,
    floor_count,
    journal_total,
    private_count,
)

PASSWORDS = {"sam": "surveillance-pw", "rita": "regulator-pw"}
pytestmark = pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Debian's chromium is not installed")


class FloorRig:
    """The floor service, the uplinks and the panel on one event loop in a thread of their own."""

    def __init__(self, floor: EmbeddedFloor, tables: Tables) -> None:
        self.floor, self.tables = floor, tables
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.stop = asyncio.Event()
        self.uplinks: dict[str, Uplink] = {}
        self.tasks: list[Any] = []
        self.url = self.call(self._start())

    def call(self, work: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(work, self.loop).result(timeout=60)

    async def _start(self) -> str:
        self.stop = asyncio.Event()
        for table_id in self.tables.ids:
            uplink = Uplink(self.floor.uplink_config(table_id), self.tables.path(table_id), table_id)
            self.uplinks[table_id] = uplink
            self.tasks.append(asyncio.create_task(uplink.run(self.stop)))
        self.tasks.append(asyncio.create_task(FloorService(self.floor.floor_config()).run(self.stop)))
        users = {
            "sam": FloorUser.with_password("sam", "surveillance", PASSWORDS["sam"]),
            "rita": FloorUser.with_password("rita", "regulator", PASSWORDS["rita"]),
        }
        settings = FloorPanelSettings(self.floor.reporting_dsn, self.floor.writer_dsn, users)
        self.server = await serve_panel(settings, port=0)
        return str(self.server.url)

    def notify(self, table_id: str) -> None:
        self.loop.call_soon_threadsafe(self.uplinks[table_id].notify)

    async def _close(self) -> None:
        self.stop.set()
        await self.server.stop()
        await asyncio.wait_for(asyncio.gather(*self.tasks, return_exceptions=True), 30)

    def close(self) -> None:
        self.call(self._close())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=10)


def _wait_floor(floor: EmbeddedFloor, tables: Tables) -> None:
    deadline = time.monotonic() + 60
    privates = expected_private_total(tables)
    while floor_count(floor) != journal_total(tables) or private_count(floor) != privates:
        assert time.monotonic() < deadline, "the floor did not catch up"
        time.sleep(0.1)


def _forge_bad_hash(
    floor: EmbeddedFloor, tables: Tables, table_id: str, loop: asyncio.AbstractEventLoop
) -> None:
    last = tables.journals[table_id].last_entry()
    assert last is not None
    document: dict[str, Any] = {
        "seq": last.seq + 1, "time_utc": last.time_utc, "table_id": table_id, "round_id": None,
        "source": "engine", "kind": "table_closed", "version": last.version,
        "payload": {"by": "mallory", "reason": "x"}, "private_digest": None, "prev_hash": last.hash,
    }  # fmt: skip
    document["hash"] = entry_hash(**document)
    document["payload"] = {"by": "mallory", "reason": "changed"}

    async def publish() -> None:
        client = await floor.connect_as(
            f"table-{table_id}", floor.passwords[f"nats:table:{table_id}"], inbox_prefix=f"_INBOX_{table_id}"
        )
        await client.jetstream(timeout=ANSWER_TIMEOUT_S).publish(
            f"flushtable.main.{table_id}.journal", wire.entry_body(document), headers={wire.MSG_ID: "forged"}
        )
        await client.close()

    asyncio.run_coroutine_threadsafe(publish(), loop).result(timeout=30)


def _login(browser: Browser, url: str, user: str) -> Any:
    context = browser.new_context(base_url=url)
    context.set_default_timeout(EXPECT_TIMEOUT_MS)
    page = context.new_page()
    page.goto("/login")
    page.fill("input[name=user]", user)
    page.fill("input[name=password]", PASSWORDS[user])
    page.click("button[type=submit]")
    expect(page.locator("h1")).to_have_text("Floor map")
    return page


def test_floor_panel_in_chromium(tmp_path: Path, make_floor: MakeFloor, browser: Browser) -> None:
    ids = ["T1", "T2", "T3", "T4"]
    floor = make_floor(ids, ack_wait_s=2)
    tables = Tables(tmp_path / "tables", ids)
    tables.play("T1", 2)
    tables.play("T2", 1, outcome="dead")  # the shoe's red light: a dead round, a latched fault
    tables.play("T3", 1)
    tables.play("T3", 1, outcome="open_mid_deal")  # cards dealt, not revealed
    tables.play("T4", 1)
    rig = FloorRig(floor, tables)
    try:
        _wait_floor(floor, tables)
        _forge_bad_hash(floor, tables, "T4", rig.loop)
        page = _login(browser, rig.url, "sam")
        # The map: every table, T2 held (its latched fault), T4 quarantined by the floor's alert.
        for table_id in ids:
            expect(page.locator(f'[data-table="{table_id}"]')).to_be_visible()
        expect(page.locator('[data-table="T2"] .state')).to_have_text("held")
        expect(page.locator('[data-table="T4"] .state')).to_have_text("quarantined")
        # Live: T1 plays a round; its tile shows the new round without a reload (SSE).
        before = page.locator('[data-table="T1"] .last').inner_text()
        tables.play("T1", 1)
        rig.notify("T1")
        expect(page.locator('[data-table="T1"] .last')).not_to_have_text(before)
        assert page.evaluate("document.getElementById('floor-map').dataset.updated") is not None

        # One alert queue across tables: the table's own fault and the floor's chain alert.
        page.click("#nav-alerts")
        rows = page.locator("#alerts tbody tr")
        expect(rows.filter(has_text="T2")).not_to_have_count(0)
        bad_hash = rows.filter(has_text="bad hash")
        expect(bad_hash).to_have_count(1)
        expect(bad_hash).to_contain_text("table T4 entry")
        bad_hash.locator("button").click()
        expect(page.locator("#alerts tbody tr").filter(has_text="bad hash")).to_contain_text(
            "acknowledged by sam"
        )

        # Meters: the chart of win against theoretical win, by table and by pit.
        page.click("#nav-meters")
        chart = page.locator("#win-chart")
        expect(chart.locator("rect.bar.win")).to_have_count(4)
        expect(chart.locator("rect.bar.theoretical")).to_have_count(4)
        theoretical_t1 = float(
            chart.locator('rect.bar.theoretical[data-key="T1"]').get_attribute("height") or 0
        )
        assert theoretical_t1 > 0
        page.goto("/meters?by=game")
        expect(page.locator("#meters tbody tr")).to_have_count(3)

        # Round search and drill-down: a settled round shows its cards (revealed) ...
        page.click("#nav-rounds")
        page.fill("input[name=table]", "T1")
        page.click("form.search button")
        expect(page.locator("#rounds tbody tr")).to_have_count(3)
        page.locator("#rounds tbody tr").filter(has_text="settled").first.locator("a").click()
        dealt = page.locator('#recall tr[data-kind="card_dealt"]')
        expect(dealt.first).to_contain_text('"card"')
        # ... the open round at T3 none: withheld until the reveal; nor T2's dead round, ever.
        for table_id, status in (("T3", "in_progress"), ("T2", "dead")):
            with psycopg.connect(floor.reporting_dsn) as connection:
                row = connection.execute(
                    "SELECT round_id FROM floor_rounds WHERE table_id = %s AND status = %s",
                    (table_id, status),
                ).fetchone()
            assert row is not None
            page.goto(f"/tables/{table_id}/rounds/{row[0]}")
            expect(page.locator("h1")).to_contain_text(status)
            cards = page.locator('#recall tr[data-kind="card_dealt"]')
            expect(cards.first).to_contain_text("withheld until the reveal")
            assert '"card"' not in page.content()
            api = page.request.get(f"/api/tables/{table_id}/rounds/{row[0]}").json()
            assert all(event["private"] is None for event in api["events"]), json.dumps(api)[:500]
        # Log out (the form carries the session's CSRF token): a second tab's live map, on the same
        # session, is told by its stream and goes to the login too.
        other_tab = page.context.new_page()
        other_tab.goto("/")
        expect(other_tab.locator("h1")).to_have_text("Floor map")
        expect(other_tab.locator("#floor-map")).to_have_attribute("data-updated", re.compile(r"\d+"))
        page.click("header form button")
        expect(page).to_have_url(re.compile(r"/login$"))
        expect(other_tab).to_have_url(re.compile(r"/login$"), timeout=20_000)
        page.context.close()

        # The regulator reads everything and acknowledges nothing.
        regulator = _login(browser, rig.url, "rita")
        regulator.goto("/alerts")
        expect(regulator.locator("#alerts button")).to_have_count(0)
        refused = regulator.request.post("/alerts/1/acknowledge", form={"csrf_token": "x"})
        assert refused.status == 403
        regulator.context.close()
        # A wrong password: refused.
        context = browser.new_context(base_url=rig.url)
        wrong = context.new_page()
        wrong.goto("/login")
        wrong.fill("input[name=user]", "sam")
        wrong.fill("input[name=password]", "nope")
        wrong.click("button[type=submit]")
        expect(wrong.locator(".error")).to_contain_text("Wrong user name or password")
        context.close()
    finally:
        rig.close()
        tables.close()


def test_an_open_map_goes_to_the_login_after_a_restart_of_the_panel(
    make_floor: MakeFloor, browser: Browser
) -> None:
    """Sessions live in the panel's memory: after a restart the open map's stream reconnects to a panel
    that knows no session. It is told so on a 200 stream (``event: logout``; EventSource gives up for
    good on a 401 and the map froze, stale, unwarned) and the page goes to the login."""
    floor = make_floor(["T1"])
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()

    def call(work: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(work, loop).result(timeout=60)

    users = {"sam": FloorUser.with_password("sam", "surveillance", PASSWORDS["sam"])}
    server = call(serve_panel(FloorPanelSettings(floor.reporting_dsn, None, users), port=0))
    try:
        page = _login(browser, server.url, "sam")
        expect(page.locator("#floor-map")).to_have_attribute("data-updated", re.compile(r"\d+"))
        port = server.port
        call(server.stop())
        server = call(serve_panel(FloorPanelSettings(floor.reporting_dsn, None, users), port=port))
        # EventSource reconnects by itself (retry: 2 s) and hears of the lost session.
        expect(page).to_have_url(re.compile(r"/login$"), timeout=20_000)
        page.context.close()
    finally:
        call(server.stop())
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)


def test_the_login_form_and_the_stream_cap_in_chromium(make_floor: MakeFloor, browser: Browser) -> None:
    """The real login form carries its CSRF token (a browser whose token cookie is gone is refused with
    a fresh form, which then logs in); with one stream allowed per user, a second tab's map says it is
    not live, and is live again once the first tab is closed (its stream's slot given back)."""
    floor = make_floor(["T1"])
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    users = {"sam": FloorUser.with_password("sam", "surveillance", PASSWORDS["sam"])}
    settings = FloorPanelSettings(
        floor.reporting_dsn, None, users, sse_interval_s=0.2, max_streams_per_user=1
    )
    server = asyncio.run_coroutine_threadsafe(serve_panel(settings, port=0), loop).result(timeout=60)
    try:
        context = browser.new_context(base_url=str(server.url))
        context.set_default_timeout(15_000)
        page = context.new_page()
        page.goto("/login")
        context.clear_cookies()  # the token's cookie gone (expired): the form alone is refused
        page.fill("input[name=user]", "sam")
        page.fill("input[name=password]", PASSWORDS["sam"])
        page.click("button[type=submit]")
        expect(page.locator(".error")).to_have_text("The login form expired; please try again.")
        expect(page.locator("input[name=user]")).to_have_value("sam")
        page.fill("input[name=password]", PASSWORDS["sam"])
        page.click("button[type=submit]")
        expect(page.locator("h1")).to_have_text("Floor map")
        expect(page.locator("#floor-map")).to_have_attribute("data-updated", re.compile(r"\d+"))
        assert server.app.state.streams == {"sam": 1}

        second = context.new_page()
        second.goto("/")
        expect(second.locator("#floor-status")).to_contain_text("the live map was refused")
        assert second.evaluate("document.getElementById('floor-map').dataset.updated") is None
        page.close()  # its stream ends with it: the slot comes back once the server sees it go
        deadline = time.monotonic() + 15
        while server.app.state.streams:
            assert time.monotonic() < deadline, "the closed tab's stream was not given back"
            time.sleep(0.05)
        second.reload()
        expect(second.locator("#floor-map")).to_have_attribute("data-updated", re.compile(r"\d+"))
        expect(second.locator("#floor-status")).to_be_hidden()
        context.close()
    finally:
        asyncio.run_coroutine_threadsafe(server.stop(), loop).result(timeout=60)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)

"""The floor panel's progressive page and its sign in real headless Chromium over a real PostgreSQL:
every 1.39A parameter and meter of the link, its levels' hits and wins, contributions by table, hits
with the winning table, seat and round, the reconciliation with a difference shown and alerted; the
sign's large digits following the meter live (server-sent events, no reload) with its pending prizes
and no controls. The screenshots in docs/img/ are this test's (FLUSHTABLE_UPDATE_SCREENSHOT=1)."""

from __future__ import annotations

import asyncio
import os
import re
import threading
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, expect

from controller.floor.panel import FloorPanelSettings, FloorUser, serve_panel
from tests.chromium import CHROMIUM
from tests.floor.conftest import EXPECT_TIMEOUT_MS, MakeFloor
from tests.floor.progressive_link import DAY, later, standard_link
from tests.floor.test_floor_progressive import _reconcile

DOCS_IMG = Path(__file__).resolve().parents[2] / "docs" / "img"
PASSWORD = "regulator-pw"
USERS = {"rita": FloorUser.with_password("rita", "regulator", PASSWORD)}
SIGN_KEY = "pit-sign-key-for-the-test"

pytestmark = pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Debian's chromium is not installed")


class PanelThread:
    """The floor panel on an event loop of its own thread (Playwright's sync API holds the test's)."""

    def __init__(self, settings: FloorPanelSettings) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.server = self.call(serve_panel(settings, port=0))
        self.url = str(self.server.url)

    def call(self, work: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(work, self.loop).result(timeout=60)

    def close(self) -> None:
        self.call(self.server.stop())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=10)


def _login(browser: Browser, url: str, *, width: int = 1280, height: int = 900) -> Page:
    context = browser.new_context(base_url=url, viewport={"width": width, "height": height})
    context.set_default_timeout(EXPECT_TIMEOUT_MS)
    page = context.new_page()
    page.goto("/login")
    page.fill("input[name=user]", "rita")
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")
    expect(page.locator("h1")).to_have_text("Floor map")
    return page


def _cells(page: Page, row: str) -> list[str]:
    return [text.strip() for text in page.locator(f"{row} td").all_inner_texts()]


def test_the_progressive_page_and_the_sign_in_chromium(
    tmp_path: Path, make_floor: MakeFloor, browser: Browser
) -> None:
    shots = DOCS_IMG if os.environ.get("FLUSHTABLE_UPDATE_SCREENSHOT") == "1" else tmp_path
    floor = make_floor(["T1", "T2", "T3"])
    data = standard_link(floor)
    settings = FloorPanelSettings(floor.reporting_dsn, None, USERS, sse_interval_s=0.2, sign_key=SIGN_KEY)
    panel = PanelThread(settings)
    contexts: list[Any] = []
    try:
        # The floor service's reconciliation, as it runs it (tests/floor/test_floor_progressive.py runs
        # the service itself): on the panel's loop, Playwright's sync API holding this thread's.
        assert panel.call(_reconcile(floor.writer_dsn)) == 1
        page = _login(browser, panel.url)
        contexts.append(page.context)
        page.click("#nav-progressive")
        expect(page.locator("h1")).to_have_text("Progressive links")
        expect(page.locator('#links tr[data-link="L1"] td').nth(2)).to_have_text("10,000.00")
        page.click('#links tr[data-link="L1"] a >> nth=0')
        expect(page.locator("h1")).to_contain_text("Progressive link L1")

        # Every parameter and meter of 1.39A, to the cent, as the real controller folded them.
        parameters = {
            "unit": "1.00", "base": "10,000.00", "reset": "10,000.00", "increment": "15%", "hidden": "5%",
            "limit": "200,000.00", "signoff": "meter awards only", "max_round_wagers": "7",
            "paytable": "progressive",
        }  # fmt: skip
        for field, text in parameters.items():
            expect(page.locator(f'#parameters tr[data-field="{field}"] td')).to_have_text(text)
        meters = {
            "display": "10,000.00", "in_meter": "9.00 (9 wagers)", "increments": "1.35", "reserve": "0.00",
            "hidden_total": "0.45", "overflow": "0.00",
            "resets": "1 (10,000.00: 0.45 from the reserve, 9,999.55 added by the house)",
            "awards": "10,001.35 from the meter, 500.00 fixed; 500.00 paid", "equations": "balance",
        }  # fmt: skip
        for field, text in meters.items():
            expect(page.locator(f'#meters tr[data-field="{field}"] td')).to_have_text(text)
        # Levels: hits and wins per level.
        assert _cells(page, '#levels tr[data-line="7"]') == ["7-card", "100% of the meter", "1", "10,001.35",
                                                             "1 (10,001.35)"]  # fmt: skip
        assert _cells(page, '#levels tr[data-line="5"]') == [
            "5-card",
            "500 for 1 (500.00)",
            "1",
            "500.00",
            "",
        ]
        assert _cells(page, '#levels tr[data-line="3"]')[2:4] == ["0", "0.00"]
        # Contributions by table.
        assert _cells(page, '#contributions tr[data-table="T1"]') == ["T1", "3", "5", "5.00", "0.75", "0.25",
                                                                      "0.00"]  # fmt: skip
        # Hits with the winning table, seat and round; the pending one says so.
        pending = _cells(page, '#hits tr[data-hit="2"]')
        assert pending[2:] == ["T2", "1", "R21", "7-card", "10,001.35", "meter", "10,001.35", "prize pending"]
        paid = _cells(page, '#hits tr[data-hit="1"]')
        assert paid[2:8] == ["T1", "3", "R12", "5-card", "500.00", "house"]
        # The time in the panel's one time format, its zone named (docs/floor.md "The floor panel").
        assert re.fullmatch(r"paid \d\d:\d\d:\d\d UTC \(by engine\)", paid[9]), paid
        # The reconciliation: T3's day shift differs, shown and alerted; the rest agree.
        expect(page.locator("#reconcile-alert")).to_be_visible()
        t3 = page.locator('#reconciliation tr[data-table="T3"]')
        expect(t3).to_have_class("differs")
        expect(t3.locator("td.difference")).to_have_text("-1.00")
        expect(t3.locator("td").nth(9)).to_have_text("R31")
        t2 = page.locator('#reconciliation tr[data-table="T2"] td')
        # T2: 3.00 locked, 2.00 counted (R22's seat 2 killed: returned), as the controller's 2.00.
        assert [t2.nth(i).inner_text().strip() for i in (3, 4, 7, 8)] == ["3.00", "2.00", "2.00", "agrees"]
        # The page's meter is live: a contribution at T1 (two wagers: 0.30 to the meter) shows by itself.
        data.table_round("T1", "R14", locked=[1, 2], counted=2, closed=later(DAY, 180))
        expect(page.locator("#meter-value")).to_have_text("10,000.30")
        expect(page.locator('#meters tr[data-field="display"] td')).to_have_text("10,000.30")
        page.reload()
        expect(page.locator('#meters tr[data-field="in_meter"] td')).to_have_text("11.00 (11 wagers)")
        page.screenshot(path=str(shots / "floor-progressive.png"), full_page=True)

        # The difference is a floor alert, in the one queue.
        page.click("#nav-alerts")
        alert = page.locator("#alerts tr", has_text="progressive reconciliation")
        expect(alert).to_have_count(1)
        expect(alert).to_contain_text("T3")
        expect(alert).to_contain_text("in-meter holds 2.00")

        # The sign over the pit: a screen of its own, 1920x1080, opened by the sign key (no login).
        screen = browser.new_context(base_url=panel.url, viewport={"width": 1920, "height": 1080})
        contexts.append(screen)
        sign = screen.new_page()
        sign.goto(f"/progressive/L1/sign?key={SIGN_KEY}")
        meter = sign.locator("#meter-value")
        expect(meter).to_have_text("10,000.30")
        # No controls on it: nothing to click, type or submit.
        assert sign.locator("a, button, input, form, select, textarea").count() == 0
        # Large digits, readable across a room: the figure's glyphs over 250 px high at 1080p.
        font_px = float(meter.evaluate("e => parseFloat(getComputedStyle(e).fontSize)"))
        assert font_px >= 250, font_px
        box = meter.bounding_box()
        assert box is not None
        assert box["width"] <= 1920  # the whole figure fits on the screen
        expect(sign.locator("#sign-pending li")).to_have_text(
            ["Prize pending · table T2 · seat 1 · 10,001.35"]
        )
        # Live, without a reload: a mark set on the page survives the meter's change.
        sign.evaluate("window.stillTheSamePage = true")
        data.table_round("T2", "R23", locked=[1, 2, 3, 4, 5, 6], counted=6, closed=later(DAY, 240))
        expect(meter).to_have_text("10,001.20")
        assert sign.evaluate("window.stillTheSamePage") is True
        # The supervisor confirms the 7-card award at T2: the sign's pending line goes.
        data.confirm("T2/R21/1", by="sue")
        expect(sign.locator("#sign-pending li")).to_have_count(0)
        data.claim("T1", "R14", 2, 7)
        expect(sign.locator("#sign-pending li")).to_have_text(
            ["Prize pending · table T1 · seat 2 · 10,001.20"]
        )
        expect(meter).to_have_text("10,000.00")
        sign.screenshot(path=str(shots / "floor-progressive-sign.png"))
    finally:
        for context in contexts:  # their live streams end before the panel stops
            context.close()
        panel.close()
        data.close()

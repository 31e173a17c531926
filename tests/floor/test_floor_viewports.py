"""Every floor page on a 10" tablet held upright (820x1180), and at 1280x800, in real Chromium, over a
real floor (nats-server, PostgreSQL, the floor service and the tables' uplinks; docs/floor.md "The floor
panel"): the page never scrolls sideways (``document.scrollingElement.scrollWidth <= innerWidth``), no
label is cut (no element clips its own text, none reaches past the screen's right edge but inside a
table's own scroll box) and every page is on the table panel's stylesheet (/static/panel.css), its layout
and its components (the top bar, the nav, the Alerts count badge, cards).

The property is Paris and the euro (a non-UTC zone, a non-dollar currency). With
FLUSHTABLE_UPDATE_SCREENSHOT=1 the pit map, a table's page and a round's page are written to docs/img at
820x1180 (tests/floor/test_floor_pages.py writes them at 1280x800).
"""

from __future__ import annotations

import os
import re
import time
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote

import psycopg
import pytest
from playwright.sync_api import Browser, Page, ViewportSize, expect

from controller.floor.panel import FloorUser
from controller.locale import gaming_day_of
from tests.chromium import CHROMIUM
from tests.floor.conftest import EXPECT_TIMEOUT_MS, MakeFloor
from tests.floor.helpers import Tables, expected_private_total, floor_count, journal_total, private_count
from tests.floor.test_floor_pages import DOCS_IMG, PARIS_EUR, PagesRig
from tests.floor.test_floor_panel import _forge_bad_hash

pytestmark = pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Debian's chromium is not installed")

PASSWORD = "pit-manager-password"
UPRIGHT = ViewportSize(width=820, height=1180)
LANDSCAPE = ViewportSize(width=1280, height=800)

# What is wrong with the page as laid out, as a list of lines (empty: nothing): the page scrolling
# sideways; an element that clips its own text (overflow hidden or an ellipsis with more text than box);
# a visible element with text reaching past the screen's right edge (a nav link half under the edge),
# unless it is in a wide table's or chart's own scroll box (it scrolls within its card by a finger).
LAYOUT_PROBLEMS_JS = """() => {
  const problems = [];
  const page = document.scrollingElement;
  if (page.scrollWidth > window.innerWidth) {
    problems.push(`the page scrolls sideways: ${page.scrollWidth} > ${window.innerWidth}`);
  }
  const scrolls = (el) => el.closest(".table-scroll, .chart-scroll") !== null;
  const name = (el) => el.tagName.toLowerCase() + (el.id ? "#" + el.id : "") +
    (typeof el.className === "string" && el.className ? "." + el.className.trim().replace(/ +/g, ".") : "");
  for (const el of document.body.querySelectorAll("*")) {
    const style = getComputedStyle(el);
    if (style.display === "none" || style.visibility === "hidden" || el.closest("[hidden]")) continue;
    const own = Array.from(el.childNodes).some((n) => n.nodeType === 3 && n.textContent.trim());
    if (!own) continue;
    const clips = style.overflowX === "hidden" || style.overflowX === "clip"
      || style.textOverflow === "ellipsis";
    if (clips && el.scrollWidth > el.clientWidth + 1) {
      problems.push(`${name(el)} cuts its text "${el.textContent.trim().slice(0, 40)}"`);
    }
    const box = el.getBoundingClientRect();
    if (box.width > 0 && box.right > window.innerWidth + 1 && !scrolls(el)) {
      const text = el.textContent.trim().slice(0, 40);
      problems.push(`${name(el)} "${text}" ends at ${Math.round(box.right)} px`);
    }
  }
  return problems;
}"""


def _wait(what: str, done: Any) -> None:
    deadline = time.monotonic() + 60
    while not done():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def _one(reporting_dsn: str, sql: str) -> Any:
    with psycopg.connect(reporting_dsn) as connection:
        row = connection.execute(sql).fetchone()
    assert row is not None
    return row[0]


def _on_the_table_panels_look(page: Page, path: str) -> None:
    """The page is the table panel's layout: its stylesheet, top bar, nav and count badge."""
    sheets = page.evaluate("() => Array.from(document.styleSheets, (s) => new URL(s.href).pathname)")
    assert "/static/panel.css" in sheets, (path, sheets)
    assert all(s in ("/static/panel.css", "/static/floor/floor.css") for s in sheets), (path, sheets)
    expect(page.locator("header.topbar nav a#nav-alerts .count#alert-count")).to_be_visible()
    expect(page.locator("main .card").first).to_be_visible()
    # The stylesheet applies: the table panel's dark background and its type, not the browser's.
    background = page.evaluate("() => getComputedStyle(document.body).backgroundColor")
    assert background == "rgb(14, 20, 32)", (path, background)


def test_every_floor_page_fits_a_tablet_upright_and_1280_on_the_table_panels_look(
    tmp_path: Path, make_floor: MakeFloor, browser: Browser
) -> None:
    ids = ["T1", "T2", "T3", "T4"]
    floor = make_floor(ids, ack_wait_s=2)
    tables = Tables(tmp_path / "tables", ids)
    tables.play("T1", 2)
    tables.play("T2", 1, outcome="dead")  # a latched fault: a held tile with its reason, an open alert
    tables.play("T3", 1)
    tables.play("T4", 1)
    users = {"mona": FloorUser.with_password("mona", "manager", PASSWORD)}
    rig = PagesRig(floor, tables, users)
    dsn = floor.reporting_dsn
    shots = DOCS_IMG if os.environ.get("FLUSHTABLE_UPDATE_SCREENSHOT") == "1" else tmp_path
    try:
        _wait(
            "the floor to catch up",
            lambda: (
                floor_count(floor) == journal_total(tables)
                and private_count(floor) == expected_private_total(tables)
            ),
        )
        rig.now = _one(dsn, "SELECT max(closed_utc) FROM floor_rounds WHERE table_id = 'T1'")
        # A quarantined table: the alerts page then shows the manager's release form (its widest row).
        _forge_bad_hash(floor, tables, "T4", rig.loop)
        _wait(
            "T4's quarantine",
            lambda: (
                _one(dsn, "SELECT quarantined_at_seq FROM floor_tables WHERE table_id = 'T4'") is not None
            ),
        )
        round_id = _one(
            dsn, "SELECT round_id FROM floor_rounds WHERE table_id = 'T1' AND status = 'settled' LIMIT 1"
        )
        day = gaming_day_of(_one(dsn, "SELECT min(closed_utc) FROM floor_rounds"), PARIS_EUR).isoformat()
        context = browser.new_context(base_url=rig.url, viewport=UPRIGHT)
        context.set_default_timeout(EXPECT_TIMEOUT_MS)
        page = context.new_page()

        # The login: the table panel's own page, under the floor's name.
        page.goto("/login")
        expect(page.locator("form.login h1")).to_have_text("♠ flushtable floor")
        assert "/static/panel.css" in page.evaluate(
            "() => Array.from(document.styleSheets, (s) => new URL(s.href).pathname)"
        )
        assert page.evaluate(LAYOUT_PROBLEMS_JS) == [], "/login"
        page.fill("input[name=user]", "mona")
        page.fill("input[name=password]", PASSWORD)
        page.click("button[type=submit]")
        expect(page.locator("h1")).to_have_text("Floor map")
        expect(page.locator("#floor-map")).to_have_attribute("data-updated", re.compile(r"\d+"))

        pages = [
            "/",
            "/tables/T1",
            f"/tables/T1/rounds/{round_id}",
            "/alerts",
            "/meters?by=table",
            "/meters?by=shift",
            "/rounds",
            "/rounds?since=2000-01-01+00:00",
            "/progressive",
            f"/reports?day={day}",
            "/surveillance",
            "/workers",
        ]
        problems: dict[str, list[str]] = {}
        for viewport in (UPRIGHT, LANDSCAPE):  # the tablet upright, and the 1280 px screen too
            page.set_viewport_size(viewport)
            for path in pages:
                page.goto(path)
                _on_the_table_panels_look(page, path)
                found = page.evaluate(LAYOUT_PROBLEMS_JS)
                if found:
                    problems[f"{viewport['width']} px {path}"] = found
        assert problems == {}, problems
        page.set_viewport_size(UPRIGHT)
        page.goto("/alerts")
        expect(page.locator("#quarantined form.release button")).to_have_text("Release")

        page.goto("/")
        expect(page.locator("#floor-map")).to_have_attribute("data-updated", re.compile(r"\d+"))
        page.screenshot(path=str(shots / "floor-pit-map-820.png"), full_page=True)
        page.goto("/tables/T1")
        page.screenshot(path=str(shots / "floor-table-820.png"), full_page=True)
        page.goto(f"/tables/T1/rounds/{round_id}")
        expect(page.locator("#recall-one table.recall-hands")).to_be_visible()
        page.screenshot(path=str(shots / "floor-round-820.png"), full_page=True)
        context.close()
    finally:
        rig.close()
        tables.close()


def test_the_round_search_and_surveillance_are_in_the_property_s_zone(
    tmp_path: Path, make_floor: MakeFloor, browser: Browser
) -> None:
    """The round search's From and To are the property's wall clock, labelled with its zone (Paris: an
    hour from UTC in December, so a bound read as UTC finds the wrong rounds); the surveillance page's
    time column names the zone; no page says "(UTC)"; a time that is no time is refused in one line."""
    floor = make_floor(["T1"], ack_wait_s=2)
    tables = Tables(tmp_path / "tables", ["T1"])
    tables.play("T1", 1)
    users = {"mona": FloorUser.with_password("mona", "manager", PASSWORD)}
    rig = PagesRig(floor, tables, users)
    dsn = floor.reporting_dsn
    try:
        _wait("the floor to catch up", lambda: floor_count(floor) == journal_total(tables))
        closed_utc = _one(dsn, "SELECT closed_utc FROM floor_rounds WHERE table_id = 'T1'")
        rig.now = closed_utc
        round_id = _one(dsn, "SELECT round_id FROM floor_rounds WHERE table_id = 'T1'")
        context = browser.new_context(base_url=rig.url, viewport=LANDSCAPE)
        context.set_default_timeout(EXPECT_TIMEOUT_MS)
        page = context.new_page()
        page.goto("/login")
        page.fill("input[name=user]", "mona")
        page.fill("input[name=password]", PASSWORD)
        page.click("button[type=submit]")
        expect(page.locator("h1")).to_have_text("Floor map")

        for path in ("/rounds", "/surveillance"):
            page.goto(path)
            assert "(UTC)" not in page.locator("main").inner_text(), path
        page.goto("/rounds")
        expect(page.locator("form.search label").nth(2)).to_have_text("From (Europe/Paris)")
        expect(page.locator("form.search label").nth(3)).to_have_text("To (Europe/Paris)")
        page.goto("/surveillance")
        expect(page.locator("#surveillance th").first).to_have_text("Time (Europe/Paris)")

        # Half an hour before the close on Paris's clock: the round is after it, and not before it.
        before = (closed_utc.astimezone(PARIS_EUR.zone) - timedelta(minutes=30)).strftime("%Y-%m-%d %H:%M")
        page.goto(f"/rounds?table=T1&since={quote(before)}")
        expect(page.locator("#rounds tbody tr a")).to_have_text(round_id)
        page.goto(f"/rounds?table=T1&until={quote(before)}")
        expect(page.locator("#rounds tbody tr")).to_have_text("No rounds.")
        page.goto("/rounds?since=yesterday")
        expect(page.locator("main p.error")).to_have_text(
            "Search refused: 'yesterday' is not a time like 2026-12-01 08:00 (Europe/Paris)"
        )
        context.close()
    finally:
        rig.close()
        tables.close()

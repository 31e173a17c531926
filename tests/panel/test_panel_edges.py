"""The table panel's edges a supervisor tripped on (issue 24, item 4), each over the real round engine
(controller.engine.TableEngine through tests/engine/table.py) writing a real journal file, read by the
panel's view (controller/panel/view.py) as the daemon's panel reads it."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, ViewportSize, expect

from controller.engine import TableConfig
from controller.engine import actions as engine_actions
from controller.journal import Journal
from controller.panel.actions import buttons
from controller.panel.view import TableView
from firmware_protocol.vocabulary import FAULT_CODES
from sim_devices.bet_sensors import SENSOR_FAULT_CODE
from sim_devices.shuffler import FAULT_CODES as SIM_SHOE_FAULT_CODES
from tests.engine.table import stack
from tests.engine.test_rounds import HCF_DEALER, HCF_SEAT1, HCF_SEAT3
from tests.panel.conftest import PanelRig
from tests.panel.test_panel_browser import browser  # noqa: F401  (the module's browser fixture)
from tests.panel.test_panel_floor import (  # noqa: F401  (the floor and browser fixtures)
    PORTRAIT,
    Floor,
    JournaledTable,
    _answer,
    _page,
    floor,
    log_in,
)

WIDE_1280x800: ViewportSize = {"width": 1280, "height": 800}


def _table(tmp_path: Path) -> tuple[Journal, JournaledTable]:
    journal = Journal.open(tmp_path / "journal.sqlite", "T1")
    return journal, JournaledTable(journal, TableConfig(), stack(HCF_SEAT1, HCF_SEAT3, HCF_DEALER))


def _snapshot(journal: Journal, table: JournaledTable) -> dict[str, Any]:
    table.flush()
    view = TableView("T1")
    for entry in journal.entries():
        view.apply(entry)
    return view.snapshot()


def test_after_a_void_the_hold_no_longer_offers_to_void_the_round(tmp_path: Path) -> None:
    journal, table = _table(tmp_path)
    table.start()
    table.bet(1, "ante", 500)
    table.lock()
    table.call(table.engine.handle, engine_actions.HoldTable(by="sam", reason="dispute"), table.now_s)
    (hold,) = _snapshot(journal, table)["holds"]
    assert hold["clears"] == "a supervisor clears the hold (Alerts, Clear) or voids the round"
    table.call(table.engine.handle, engine_actions.VoidRound(by="sam", reason="cards exposed"), table.now_s)
    snapshot = _snapshot(journal, table)
    assert snapshot["round"]["status"] == "void"
    (hold,) = snapshot["holds"]
    assert hold["clears"] == "a supervisor clears the hold (Alerts, Clear)"
    journal.close()


def test_chips_put_out_for_a_decision_are_not_flagged_as_past_posting(tmp_path: Path) -> None:
    journal, table = _table(tmp_path)
    table.start()
    table.bet(1, "ante", 500)
    table.bet(3, "ante", 1000)
    table.lock()
    assert table.engine.view().state == "decisions"
    table.bet(1, "raise", 1000)  # the player's raise on its spot, not yet confirmed by the dealer
    (seat1, _seat3) = _snapshot(journal, table)["round"]["seats"]
    rows = {row["name"]: row for row in seat1["wager_rows"]}
    assert not rows["raise"]["disagrees"]  # a decision, not past posting: no amber flag
    assert rows["raise"]["pending_cents"] == 1000  # said plainly: on the spot, not yet decided
    assert not rows["ante"]["disagrees"]
    # Chips added to a locked wager still are past posting, and flagged.
    table.bet(1, "ante", 5000, locked=True)
    (seat1, _seat3) = _snapshot(journal, table)["round"]["seats"]
    rows = {row["name"]: row for row in seat1["wager_rows"]}
    assert rows["ante"]["disagrees"]
    journal.close()


def test_kill_one_seat_offers_only_the_seats_in_the_round(browser: Browser, floor: Floor) -> None:  # noqa: F811
    table = floor.table
    table.start()
    table.bet(1, "ante", 500)
    table.bet(3, "ante", 500)
    table.lock()
    table.flush()
    (kill,) = [
        b for b in buttons("supervisor", "table", _snapshot(floor.journal, table)) if b["name"] == "kill_seat"
    ]
    (seat_field,) = [f for f in json.loads(kill["fields"]) if f["name"] == "seat"]
    assert seat_field["choices"] == [1, 3]
    page = _page(browser, floor.url)
    log_in(page, "sam")
    page.locator("section.actions").get_by_role("button", name="Kill one seat…").click()
    dialog = page.locator("dialog[open]")
    expect(dialog.locator("select[name=seat] option")).to_have_text(["1", "3"])
    expect(dialog).not_to_contain_text("1–7")
    dialog.locator("select[name=seat]").select_option("3")
    dialog.locator("input[name=reason]").fill("cards exposed at seat 3")
    dialog.locator("button[value=ok]").click()
    expect(page.locator("#toast")).to_contain_text("Done: Kill one seat")
    seats = _snapshot(floor.journal, table)["round"]["seats"]
    assert [s["seat"] for s in seats if s["dead"]] == [3]


def test_a_device_fault_code_is_said_in_words(rig: PanelRig) -> None:
    """The shoe's status with code 16: the row says what 16 is, as the protocol's table names it; a code
    the table does not name is said to be the maker's own."""
    for device, code in (("shuffler", SIM_SHOE_FAULT_CODES["red_light"]), ("sensors", 0x7F)):
        rig.journal.append(
            "device_status",
            {"device": device, "state": "fault", "fault_code": code, "lamp": "red"},
            round_id=None,
            source=device,
        )
    rig.backend.refresh()
    notes = {row["device"]: row["last_reason"] for row in rig.backend.devices()}
    assert notes["shuffler"] == "the device reports a fault: red light (code 16), lamp red"
    assert notes["sensors"] == (
        "the device reports a fault: device-specific fault (code 127, see the maker's manual), lamp red"
    )
    # Every code the simulated devices send is named by the protocol.
    assert {FAULT_CODES[code] for code in SIM_SHOE_FAULT_CODES.values()} == set(SIM_SHOE_FAULT_CODES)
    assert SENSOR_FAULT_CODE in FAULT_CODES


def test_a_past_posting_hold_is_cleared_only_as_locked_or_by_accepting_the_difference(
    browser: Browser,  # noqa: F811
    floor: Floor,  # noqa: F811
) -> None:
    table = floor.table
    table.start()
    table.bet(1, "ante", 500)
    table.bet(3, "ante", 500)
    table.lock()
    table.bet(1, "ante", 5000, locked=True)  # past posting: the round holds 5.00
    table.flush()
    page = _page(browser, floor.url)
    log_in(page, "sam")
    page.goto("/alerts")
    alert = page.locator("#alerts-live li.kind-past_posting")
    alert.get_by_role("button", name="Clear…").click()
    _answer(page, "looked at it")
    expect(page.locator("#toast")).to_contain_text(
        "seat 1 ante reads 50.00, the round holds 5.00: put the locked wager back as it was"
    )
    assert table.engine.view().state == "held"  # the round does not go on over the extra chips
    alert.get_by_role("button", name="Accept the difference…").click()
    _answer(page, "player's 45.00 set aside, not in play")
    expect(page.locator("#toast")).to_contain_text("Done: Accept the difference")
    assert table.engine.view().state == "decisions"
    # The round plays to its end; its recall shows the accepted difference among people's actions.
    table.bet(1, "raise", 1000)
    table.key("fold_seat", 3)
    table.key("confirm")
    table.flush()
    round_id = table.journal("round_settled")[0].round_id
    page.goto(f"/recall/{round_id}")
    expect(page.locator(".recall-actions")).to_contain_text(
        re.compile(r"accepted the difference \(FT1-\d+\): seat 1 ante reads 50\.00, the round holds 5\.00")
    )
    expect(page.locator(".recall-actions")).to_contain_text("player's 45.00 set aside, not in play")


def _pdf_pages(pdf: bytes) -> int:
    """The pages of a PDF Chromium printed: its page objects (``/Type /Page``, not ``/Pages``)."""
    return len(re.findall(rb"/Type\s*/Page(?![s\w])", pdf))


def test_the_printed_dispute_fits_the_file_with_its_print_time(
    browser: Browser,  # noqa: F811
    floor: Floor,  # noqa: F811
) -> None:
    table = floor.table
    table.start()
    table.bet(1, "ante", 500)
    table.bet(1, "flush", 100)
    table.bet(3, "ante", 1000)
    table.lock()
    table.bet(1, "raise", 1000)
    table.key("fold_seat", 3)
    table.key("confirm")
    table.flush()
    round_id = table.journal("round_settled")[0].round_id
    page = _page(browser, floor.url)
    log_in(page, "sam")
    page.goto(f"/recall/{round_id}")
    page.emulate_media(media="print")
    stamp = page.locator("#printed")
    expect(stamp).to_be_visible()
    expect(stamp).to_contain_text(re.compile(r"printed \d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} UTC"))
    pdf = page.pdf(format="A4", print_background=False)
    (floor.shots / "panel-recall-print.pdf").write_bytes(pdf)
    assert _pdf_pages(pdf) <= 2, _pdf_pages(pdf)


@pytest.mark.parametrize("viewport", [WIDE_1280x800, PORTRAIT], ids=["1280x800", "820x1180"])
def test_no_seat_label_is_cut_short(browser: Browser, floor: Floor, viewport: ViewportSize) -> None:  # noqa: F811
    """Six seats settled, each with every bonus wager and its result: every label reads in full."""
    table = floor.table
    table.start()
    for seat in range(1, 7):
        table.bet(seat, "ante", 2500)
        table.bet(seat, "flush", 2500)
        table.bet(seat, "straight_flush", 2500)
    table.lock()
    for seat in range(1, 7):
        table.bet(seat, "raise", 2500)
    table.key("confirm")
    assert table.engine.view().state == "paying", table.kinds()
    table.flush()
    page = _page(browser, floor.url, viewport)
    log_in(page, "sam")
    expect(page.locator("article.seat")).to_have_count(6)
    expect(page.locator("article.seat .stage").first).to_have_text("settled wagers")
    labels = "article.seat :is(dt, dd, .seat-no, .tag, .stage, .sensor-flag)"
    cut = page.evaluate(
        """(selector) => [...document.querySelectorAll(selector)]
              .filter((el) => el.scrollWidth > el.clientWidth + 1)
              .map((el) => el.closest('article').dataset.seat + ': ' + el.textContent)""",
        labels,
    )
    assert cut == []
    page.screenshot(path=str(floor.shots / f"panel-seats-{viewport['width']}.png"), full_page=True)

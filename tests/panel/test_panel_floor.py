"""What a floor supervisor sees and does (issue 17), in a real browser: Debian's Chromium driven by
Playwright, headless, against the panel served by uvicorn on 127.0.0.1 over a real journal file, with
the real round engine behind the actions (controller.engine.TableEngine through EngineTableActions, as
the daemon connects it; tests/engine/table.py feeds it the shoe's and sensors' events). No stand-in.

Each test saves its screenshot into docs/img/ when FLUSHTABLE_UPDATE_SCREENSHOT=1 (docs/panel.md shows
them), else into the test's temporary directory, so a plain test run leaves the work tree clean."""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, ViewportSize, expect

from controller.engine import JournalRecord, Output, TableConfig
from controller.engine import actions as engine_actions
from controller.journal import Journal
from controller.panel import DeviceHealth, JournalPanelBackend, PanelSettings, UserStore, create_panel_app
from controller.panel.engine_actions import EngineTableActions
from controller.rules.catalogue import theoretical_win_by_wager
from drivers.events import ShufflerFault
from tests.chromium import CHROMIUM
from tests.engine.table import Table, stack
from tests.engine.test_rounds import HCF_DEALER, HCF_SEAT1, HCF_SEAT3
from tests.panel.conftest import PASSWORDS, DeviceLinks, FakeClock, LiveServer, PanelRig
from tests.panel.table_script import JournalTableActions
from tests.panel.test_panel_browser import (  # noqa: F401  (the module's browser fixture)
    EXPECT_TIMEOUT_MS,
    browser,
)

DOCS_IMG = Path(__file__).resolve().parents[2] / "docs" / "img"
WIDE: ViewportSize = {"width": 1280, "height": 900}
PORTRAIT: ViewportSize = {"width": 820, "height": 1180}  # a 10.9" tablet held upright

pytestmark = pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="Debian's chromium is not installed")


class JournaledTable(Table):
    """The engine tests' table with every journal record appended to the real journal (the shell's job)."""

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


@dataclass
class Floor:
    table: JournaledTable
    rig: PanelRig
    backend: JournalPanelBackend
    shots: Path

    @property
    def journal(self) -> Journal:
        return self.rig.journal

    @property
    def url(self) -> str:
        return self.rig.url

    def kinds(self) -> list[str]:
        return [e.kind for e in self.journal.entries()]


def _serve(
    tmp_path: Path, users_file: Path, journal: Journal, backend: JournalPanelBackend, links: DeviceLinks
) -> tuple[PanelRig, LiveServer]:
    app = create_panel_app(backend, users=UserStore(users_file), settings=PanelSettings(idle_timeout_s=600))
    rig = PanelRig(
        journal, UserStore(users_file), JournalTableActions(journal), backend, app, FakeClock(), links
    )
    server = LiveServer(rig)
    rig.url = server.start()
    return rig, server


def _shots(tmp_path: Path) -> Path:
    return DOCS_IMG if os.environ.get("FLUSHTABLE_UPDATE_SCREENSHOT") == "1" else tmp_path


@pytest.fixture
def floor(tmp_path: Path, users_file: Path) -> Iterator[Floor]:
    journal = Journal.open(tmp_path / "var" / "journal.sqlite", "T1")
    table = JournaledTable(journal, TableConfig(), stack(HCF_SEAT1, HCF_SEAT3, HCF_DEALER))
    actions = EngineTableActions(table.engine, now_s=lambda: table.now_s, perform=table.perform)
    links = DeviceLinks()
    backend = JournalPanelBackend(journal, actions=actions, device_health=links, poll_interval_s=0.05)
    rig, server = _serve(tmp_path, users_file, journal, backend, links)
    yield Floor(table, rig, backend, _shots(tmp_path))
    server.stop()
    journal.close()


def _page(browser: Browser, url: str, viewport: ViewportSize = WIDE) -> Page:  # noqa: F811
    context = browser.new_context(viewport=viewport, base_url=url)
    context.set_default_timeout(EXPECT_TIMEOUT_MS)
    return context.new_page()


def log_in(page: Page, name: str) -> None:
    page.goto("/login")
    page.fill("input[name=user]", name)
    page.fill("input[name=password]", PASSWORDS[name])
    page.click("button[type=submit]")
    expect(page.locator(".who .user")).to_contain_text(name)
    # panel.js is deferred: the page shows its buttons before their handlers exist, and a click then
    # does nothing (a dialog that never opens). The load event comes after the script has run.
    page.wait_for_load_state("load")


def _answer(dialog_page: Page, reason: str) -> None:
    dialog = dialog_page.locator("dialog[open]")
    dialog.locator("input").first.fill(reason)
    dialog.locator("button[value=ok]").click()


def _devices(links: DeviceLinks) -> None:
    now = time.time()
    links.reports[:] = [
        DeviceHealth(name, kind, f"sim+pty://{name}", "ready", now - 0.4, 120, 118)
        for name, kind in (("shuffler", "shuffler"), ("sensors", "bet_sensors"), ("display", "display"))
    ]


# --- 2 and 4: the wager in action, the sensors' disagreement, the hold explained ------------------------
def test_a_past_posting_hold_shows_the_locked_wager_and_says_why_the_table_is_held(
    browser: Browser,  # noqa: F811
    floor: Floor,
) -> None:
    table = floor.table
    _devices(floor.rig.links)
    table.start()
    table.bet(1, "ante", 500)
    table.bet(1, "flush", 200)
    table.bet(1, "straight_flush", 200)
    table.bet(3, "ante", 500)
    table.lock()
    table.bet(1, "ante", 5000, locked=True)  # chips added after the lock: past posting
    table.flush()
    # The shoe's own status says fault with its lamp red, while its link is up and "ready".
    floor.journal.append(
        "device_status",
        {"device": "shuffler", "state": "fault", "fault_code": 7, "lamp": "red"},
        round_id=None,
        source="shuffler",
    )
    assert "past_posting" in floor.kinds()
    page = _page(browser, floor.url)
    log_in(page, "sam")
    seat = page.locator("article.seat[data-seat='1']")
    # The tile shows the wager the round holds (5.00), not the sensors' 50.00, and flags the difference.
    expect(seat.locator(".wagers div[data-wager='ante'] dd")).to_have_text("5.00")
    expect(seat.locator(".sensor-flag[data-flag='ante']")).to_have_text("⚠ sensors read 50.00")
    expect(seat.locator(".stage")).to_have_text("wagers in action")
    # The banner names each latched fault and what clears it.
    banner = page.locator("#held-banner")
    expect(banner.locator("li")).to_have_count(1)
    expect(banner).to_contain_text("past posting (sensors)")
    expect(banner).to_contain_text("seat 1 ante: 5.00 locked, 50.00 seen after the lock")
    expect(banner).to_contain_text("to clear: put the locked wager back as it was")
    # The sensors' row shows the fault, not their link's "ready"; the others stay ready.
    sensors = page.locator("tr[data-device='sensors']")
    expect(sensors.locator(".pill")).to_have_text("fault")
    expect(sensors.locator(".fault-note")).to_contain_text("past posting: seat 1 ante")
    shuffler = page.locator("tr[data-device='shuffler']")
    expect(shuffler.locator(".pill")).to_have_text("fault")
    expect(shuffler.locator(".fault-note")).to_have_text(
        "the device reports a fault: device-specific fault (code 7, see the maker's manual), lamp red"
    )
    expect(shuffler.locator("td").nth(3)).not_to_have_text("—")  # its last event moved
    expect(page.locator("tr[data-device='display'] .pill")).to_have_text("ready")
    # "Straight Flush" stays on one line at 1280 px: its label is no taller than the ante's.
    flush_box = seat.locator(".wagers div[data-wager='straight_flush']").bounding_box()
    ante_box = seat.locator(".wagers div[data-wager='ante']").bounding_box()
    assert flush_box is not None
    assert ante_box is not None
    assert flush_box["height"] <= ante_box["height"] + 1
    page.screenshot(path=str(floor.shots / "panel-held-past-posting.png"), full_page=True)
    # The same page upright on a tablet.
    upright = _page(browser, floor.url, PORTRAIT)
    log_in(upright, "sam")
    expect(upright.locator("#held-banner li")).to_have_count(1)
    upright.screenshot(path=str(floor.shots / "panel-tablet-portrait.png"), full_page=False)


def test_the_last_event_time_of_a_device_moves_with_its_entries(floor: Floor) -> None:
    """Not a browser test: the devices' rows read the reducer, whose device times follow every entry a
    device is the source of (the sensors' bet reports too, not only their ready and lost)."""
    floor.journal.append(
        "device_ready",
        {
            "device": "sensors",
            "kind": "bet_sensors",
            "model": "m",
            "serial_number": "s",
            "firmware_version": "1",
        },
        round_id=None,
        source="sensors",
    )
    floor.backend.refresh()
    first = next(d for d in floor.backend.devices() if d["device"] == "sensors")["last_event_utc"]
    time.sleep(0.002)  # journal times have microseconds: the next entry is later
    floor.journal.append(
        "bet_changed",
        {"seat": 1, "wager": "ante", "amount_cents": 500, "chip_count": 5, "locked": False},
        round_id=None,
        source="sensors",
    )
    floor.backend.refresh()
    second = next(d for d in floor.backend.devices() if d["device"] == "sensors")["last_event_utc"]
    assert second > first


# --- 3: a complete recall ----------------------------------------------------------------------------
def _settled_round(table: JournaledTable, *, over_limit_first: bool = False) -> str:
    table.start()
    table.bet(1, "ante", 500)
    table.bet(1, "flush", 200)
    table.bet(3, "ante", 500)
    table.lock()
    if over_limit_first:
        table.bet(1, "raise", 5000, locked=True)  # over the limit: refused, an alert
    table.bet(1, "raise", 500, locked=True)
    table.bet(3, "raise", 500, locked=True)
    table.confirm()
    table.call(table.engine.handle, engine_actions.PayoutsDone(), table.now_s)
    table.flush()
    return next(r.round_id for r in table.journal("round_started") if r.round_id)


def test_recall_shows_every_card_hand_and_wager_with_times_and_prints(
    browser: Browser,  # noqa: F811
    floor: Floor,
) -> None:
    round_id = _settled_round(floor.table, over_limit_first=True)
    page = _page(browser, floor.url)
    log_in(page, "vera")
    page.goto("/recall")
    row = page.locator(f".recall-list tr[data-round='{round_id}']")
    expect(row).to_contain_text("High Card Flush")  # the title, not the code
    # The date and time in the property's zone, the zone named ("2026-12-05 09:26:25 UTC").
    started = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d [A-Z+\-0-9]+$")
    expect(row.locator("td").nth(1)).to_have_text(started)
    page.select_option("select[name=status]", "void")
    page.click("#recall-filters button")
    expect(page.locator(".recall-list tr[data-round]")).to_have_count(0)
    page.select_option("select[name=status]", "settled")
    page.click("#recall-filters button")
    expect(page.locator(".recall-list tr[data-round]")).to_have_count(1)
    page.screenshot(path=str(floor.shots / "panel-recall-list.png"))
    page.locator(f".recall-list a[href='/recall/{round_id}']").click()
    one = page.locator("#recall-one")
    dealer = one.locator("tr.dealer-row")
    for card in HCF_DEALER:
        expect(dealer.locator(f"[data-card='{card}']")).to_have_count(1)
    expect(dealer).to_contain_text("4-card club flush, 6 high")
    expect(dealer).to_contain_text("Qualifies")
    seat1 = one.locator("tr[data-seat='1']")
    for card in HCF_SEAT1:
        expect(seat1.locator(f"[data-card='{card}']")).to_have_count(1)
    expect(seat1.locator(".hand-words")).to_contain_text("5-card spade flush, A high")
    expect(seat1.locator(".wager-line[data-wager='ante']")).to_contain_text("ante 5.00")
    expect(seat1.locator(".wager-line[data-wager='flush bonus']")).to_contain_text("2.00")
    # The refused raise's alert and its time; the sentence speaks money, not cents.
    expect(one.locator(".recall-faults li")).to_contain_text("raise of 50.00 refused (over the limit)")
    expect(one.locator(".recall-faults li b")).to_have_text(re.compile(r"^\d\d:\d\d:\d\d [A-Z+\-0-9]+$"))
    page.emulate_media(media="print")
    expect(page.locator("header.topbar")).to_be_hidden()
    expect(page.locator(".print-only")).to_be_visible()
    page.screenshot(path=str(floor.shots / "panel-recall-print.png"), full_page=True)
    pdf = page.pdf()  # the browser's own print to PDF: the dispute file
    assert pdf.startswith(b"%PDF")


def test_recall_shows_no_card_of_a_round_before_its_reveal(floor: Floor) -> None:
    """The recall list holds closed rounds only: an open round's cards stay off every page."""
    table = floor.table
    table.start()
    table.bet(1, "ante", 500)
    table.lock()
    table.flush()
    floor.backend.refresh()
    assert floor.backend.recall(last=10) == []
    shown = str(floor.backend.snapshot()) + str(floor.backend.journal_entries(limit=1000))
    dealt = [*HCF_SEAT1[:3], *HCF_SEAT3[:3], *HCF_DEALER[:3]]
    assert [card for card in dealt if f"'{card}'" in shown] == []


# --- 5: alerts that resolve themselves, and bulk acknowledge and clear ---------------------------------
def test_a_corrected_over_limit_raise_resolves_itself_and_a_supervisor_clears_several_at_once(
    browser: Browser,  # noqa: F811
    floor: Floor,
) -> None:
    table = floor.table
    _settled_round(table, over_limit_first=True)
    for _ in range(2):  # two red lights between rounds: latched, the table held
        table.event(ShufflerFault("shuffler", "red_light", None, "lamp"))
    table.flush()
    page = _page(browser, floor.url)
    log_in(page, "sam")
    page.goto("/alerts")
    alerts = page.locator("#alerts-live li.alert")
    expect(alerts).to_have_count(2)  # the corrected raise is no longer open
    expect(page.locator("#alerts-live li.kind-over_limit_raise")).to_have_count(0)
    page.goto("/alerts?show=all")
    resolved = page.locator("li.kind-over_limit_raise")
    expect(resolved.locator(".pill")).to_have_text("resolved")
    expect(resolved).to_contain_text("corrected: seat 1's raise was accepted")
    page.goto("/alerts")
    page.screenshot(path=str(floor.shots / "panel-alerts-bulk.png"))
    page.check("input[data-pick-all]")
    page.click("button[data-bulk=clear]")
    _answer(page, "shuffler lamp replaced, checked by sam")
    expect(page.locator("#toast")).to_contain_text("cleared 2")
    expect(page.locator("#alerts-live .all-clear")).to_be_visible()
    cleared = [e.payload for e in floor.journal.entries(kinds=["fault_cleared"])]
    assert [(c["by"], c["reason"]) for c in cleared] == [
        ("sam", "shuffler lamp replaced, checked by sam")
    ] * 2
    assert floor.table.engine.view().state == "idle"  # the engine released the hold


# --- 6: actions that fit; hold, then void ------------------------------------------------------------
def test_a_supervisor_holds_the_table_then_voids_the_round_and_refusals_are_in_words(
    browser: Browser,  # noqa: F811
    floor: Floor,
) -> None:
    table = floor.table
    table.start()
    table.bet(1, "ante", 500)
    table.bet(3, "ante", 500)
    table.lock()
    table.flush()
    page = _page(browser, floor.url)
    log_in(page, "sam")
    actions = page.locator("section.actions")
    expect(actions.locator("button")).to_have_text(
        ["Hold table…", "Void round…", "Kill one seat…"]
    )  # house-banked: no button move
    actions.get_by_role("button", name="Hold table…").click()
    _answer(page, "player disputes seat 3's cards")
    banner = page.locator("#held-banner")
    expect(banner).to_contain_text("supervisor hold")
    expect(banner).to_contain_text("held by sam: player disputes seat 3's cards")
    expect(actions.locator("button")).to_have_text(["Void round…", "Kill one seat…"])
    assert table.engine.view().state.startswith("held")
    page.screenshot(path=str(floor.shots / "panel-hold-table.png"))
    actions.get_by_role("button", name="Void round…").click()
    _answer(page, "dispute: cards exposed")
    expect(page.locator("#toast")).to_contain_text("Done: Void round")
    voided = list(floor.journal.entries(kinds=["round_voided"]))
    assert [(v.payload["by"], v.payload["reason"]) for v in voided] == [("sam", "dispute: cards exposed")]
    # A manager's refused action says why in words (and in money).
    manager = _page(browser, floor.url)
    log_in(manager, "max")
    entries = [e.payload for e in floor.journal.entries(kinds=["fault_raised"])]
    (hold,) = [p for p in entries if p["kind"] == "supervisor_hold"]
    manager.evaluate(
        """async (id) => {
          const csrf = document.querySelector('meta[name="csrf-token"]').content;
          await fetch('/api/actions/clear_fault', {method: 'POST',
            headers: {'Content-Type': 'application/json', 'X-CSRF-Token': csrf},
            body: JSON.stringify({fault_id: id, reason: 'dispute settled'})});
        }""",
        hold["fault_id"],
    )
    manager.goto("/")
    manager.get_by_role("button", name="Propose limits…").click()
    dialog = manager.locator("dialog[open]")
    dialog.locator("input[name=min_ante_cents]").fill("5000")
    dialog.locator("input[name=max_ante_cents]").fill("1000")
    dialog.locator("button[value=ok]").click()
    expect(manager.locator("#toast")).to_have_text(
        "Refused: min_ante_cents: 50.00 is above max_ante_cents 10.00"
    )


# --- 7: the read-only panel --------------------------------------------------------------------------
def test_the_read_only_panel_writes_nothing_and_says_the_table_is_stopped(
    browser: Browser,  # noqa: F811
    tmp_path: Path,
    users_file: Path,
) -> None:
    journal = Journal.open(tmp_path / "stopped.sqlite", "T1")
    table = JournaledTable(journal, TableConfig(), stack(HCF_SEAT1, HCF_SEAT3, HCF_DEALER))
    table.start()
    table.bet(1, "ante", 500)
    table.event(ShufflerFault("shuffler", "red_light", None, "lamp"))
    table.flush()
    last = datetime.fromisoformat(list(journal.entries())[-1].time_utc.replace("Z", "+00:00")).timestamp()
    backend = JournalPanelBackend(journal, read_only=True, wall_clock_s=lambda: last + 2 * 3600 + 5 * 60)
    rig, server = _serve(tmp_path, users_file, journal, backend, DeviceLinks())
    try:
        before = len(list(journal.entries()))
        page = _page(browser, rig.url)
        log_in(page, "sam")
        expect(page.locator("#live")).to_have_text("■ read-only")
        stopped = page.locator("#stopped-banner")
        expect(stopped).to_contain_text("READ-ONLY")
        expect(stopped).to_contain_text("(2 h 5 min ago): the table is stopped")
        expect(page.locator("#held-banner")).to_have_count(0)
        expect(page.locator("section.actions")).to_have_count(0)
        page.screenshot(path=str(floor_shots(tmp_path) / "panel-read-only.png"))
        page.goto("/alerts")
        expect(page.locator("li.alert")).to_have_count(1)
        expect(page.locator("li.alert button")).to_have_count(0)
        fault_id = next(e.payload["fault_id"] for e in journal.entries(kinds=["fault_raised"]))
        answer = page.evaluate(
            """async (id) => {
              const csrf = document.querySelector('meta[name="csrf-token"]').content;
              const r = await fetch('/api/alerts/' + id + '/acknowledge', {method: 'POST',
                headers: {'X-CSRF-Token': csrf}});
              return [r.status, (await r.json()).detail];
            }""",
            fault_id,
        )
        assert answer[0] == 503
        assert "read-only" in answer[1]
        assert len(list(journal.entries())) == before  # not even the login was journaled
    finally:
        server.stop()
        journal.close()


def floor_shots(tmp_path: Path) -> Path:
    return _shots(tmp_path)


# --- 8: the log for people, meters by shift with the theoretical win ----------------------------------
def test_the_event_log_reads_as_sentences_and_meters_show_a_shift_with_its_theoretical_win(
    browser: Browser,  # noqa: F811
    floor: Floor,
    tmp_path: Path,
) -> None:
    round_id = _settled_round(floor.table)
    page = _page(browser, floor.url)
    log_in(page, "vera")
    page.goto(f"/log?round_id={round_id}")
    rows = page.locator("#log-table tbody tr")
    locked = page.locator("#log-table tr.k-bets_locked")
    expect(locked.locator(".sentence")).to_have_text(
        "Bets locked — seat 1: ante 5.00, flush bonus 2.00; seat 3: ante 5.00"
    )
    raw = locked.locator("details.raw")
    expect(raw.locator("pre")).to_be_hidden()
    raw.locator("summary").click()
    expect(raw.locator("pre")).to_contain_text('"wagers"')
    expect(rows).not_to_have_count(0)
    expect(page.locator("#log-table tr.k-round_settled .sentence")).to_contain_text("banker net")
    page.screenshot(path=str(floor.shots / "panel-event-log.png"))
    settled_at = next(floor.journal.entries(kinds=["round_settled"])).time_utc
    hour = int(settled_at[11:13])
    shift = "day" if 6 <= hour < 14 else ("swing" if 14 <= hour < 22 else "grave")
    day = settled_at[:10]
    if shift == "grave" and hour < 6:  # the grave shift of a date starts that evening
        day = (
            datetime.fromisoformat(day)
            .date()
            .fromordinal(datetime.fromisoformat(day).toordinal() - 1)
            .isoformat()
        )
    page.goto("/meters")
    page.fill("#shift-form input[name=date]", day)
    page.select_option("#shift-form select[name=shift]", shift)
    page.click("#shift-form button")
    expect(page.locator("h2").first).to_contain_text(f"{shift} shift of {day}")
    # No par sheet cached: the catalogue's figures (tests/rules/test_catalogue.py checks them against
    # the math), the computation the floor's theoretical win uses too.
    edge = sum((theoretical_win_by_wager("high-card-flush", {"ante": 1000, "flush": 200}) or {}).values())
    expect(page.locator("#theo-win .value")).to_have_text(f"{round(edge) // 100}.{round(edge) % 100:02d}")
    expect(page.locator("#actual-win .value")).not_to_have_text("—")
    page.screenshot(path=str(floor.shots / "panel-meters-shift.png"), full_page=True)
    # Another day's range holds none of it.
    page.goto("/meters?first=2001-01-01&last=2001-01-02")
    expect(page.locator("#actual-win .value")).to_have_text("0.00")
    assert datetime.now(UTC).year > 2001

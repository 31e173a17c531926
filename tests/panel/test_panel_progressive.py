"""The table panel's Progressive card in real headless Chromium, over the real round engine with the
stand-alone progressive (its journal a real SQLite file, appended as the daemon's shell does): the meter,
the award a 7-card straight flush left pending, a supervisor's Confirm paid (recorded once, with their
name), and a viewer who is offered no button. The screenshot goes to docs/img/panel-progressive.png when
FLUSHTABLE_UPDATE_SCREENSHOT=1."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from controller.engine import TableConfig
from controller.journal import Journal
from controller.panel import JournalPanelBackend, PanelSettings, UserStore, create_panel_app
from controller.panel.engine_actions import EngineTableActions
from controller.progressive.model import parse_parameters
from drivers.events import BetChanged
from tests.chromium import CHROMIUM
from tests.engine.table import stack
from tests.panel.conftest import DeviceLinks, FakeClock, LiveServer, PanelRig
from tests.panel.test_panel_browser import TABLET, browser, log_in  # noqa: F401 (the fixture)
from tests.panel.test_panel_engine import JournaledTable

SCREENSHOT = Path(__file__).resolve().parents[2] / "docs" / "img" / "panel-progressive.png"
SEVEN_CARD_SF = ["9h", "8h", "7h", "6h", "5h", "4h", "3h"]
NOTHING = ["Ad", "Kh", "2c", "4d", "6c", "8d", "Ts"]
DEALER = ["As", "Ks", "Qs", "Js", "2h", "3d", "4c"]
PARAMETERS = parse_parameters(
    {
        "unit_cents": 100,
        "base_cents": 100_000,
        "reset_cents": 100_000,
        "increment_percent": 20,
        "hidden_percent": 5,
    }
)

pytestmark = pytest.mark.skipif(
    not os.path.exists(CHROMIUM) and not os.environ.get("CI"),
    reason="Debian's chromium is not installed (make test installs it)",
)


@pytest.fixture
def progressive_panel(tmp_path: Path, users_file: Path) -> Iterator[tuple[PanelRig, JournaledTable]]:
    journal = Journal.open(tmp_path / "journal.sqlite", "T1")
    table = JournaledTable(
        journal, TableConfig(game="top-flush", progressive=PARAMETERS), stack(SEVEN_CARD_SF, NOTHING, DEALER)
    )
    # One round: seat 1's 7-card straight flush hits the 100% level; seat 2 plays no progressive.
    table.start()
    for seat in (1, 2):
        table.bet(seat, "ante", 500)
    table.event(BetChanged("sensors", 1, 4, 100, 1, False))  # the progressive spot: the unit
    table.lock()
    for seat in (1, 2):
        table.bet(seat, "play", 500)
    table.key("confirm")
    table.flush()
    actions = EngineTableActions(table.engine, now_s=lambda: table.now_s, perform=table.perform)
    backend = JournalPanelBackend(journal, actions=actions, device_health=DeviceLinks(), poll_interval_s=0.05)
    clock = FakeClock()
    app = create_panel_app(
        backend, users=UserStore(users_file), settings=PanelSettings(clock=clock, idle_timeout_s=600)
    )
    rig = PanelRig(journal, UserStore(users_file), actions, backend, app, clock, DeviceLinks())  # type: ignore[arg-type]
    server = LiveServer(rig)
    rig.url = server.start()
    yield rig, table
    server.stop()
    journal.close()


def open_page(browser: Browser, rig: PanelRig) -> Page:  # noqa: F811 (the fixture's name)
    context = browser.new_context(viewport=TABLET, base_url=rig.url)
    context.set_default_timeout(30_000)
    return context.new_page()


def test_a_supervisor_confirms_a_pending_jackpot_on_the_table_panel(
    browser: Browser,  # noqa: F811 (the fixture)
    progressive_panel: tuple[PanelRig, JournaledTable],
    tmp_path: Path,
) -> None:
    rig, _table = progressive_panel
    (claimed,) = [e.payload for e in rig.journal.entries(kinds=["progressive_award_claimed"])]
    assert (claimed["seat"], claimed["amount_cents"], claimed["paid_from"]) == (1, 100_020, "meter")
    page = open_page(browser, rig)
    page.on("dialog", lambda dialog: dialog.accept())  # the confirmation the button asks for
    log_in(page, "sam")
    card = page.locator("#progressive")
    expect(card.locator("#progressive-meter")).to_have_text("1,000.00")  # re-seeded at once
    pending = card.locator(f'li[data-award="{claimed["award_id"]}"]')
    expect(pending).to_contain_text("Seat 1")
    expect(pending).to_contain_text("1,000.20")
    expect(pending).to_contain_text("pending")
    shot = SCREENSHOT if os.environ.get("FLUSHTABLE_UPDATE_SCREENSHOT") == "1" else tmp_path / "shot.png"
    card.screenshot(path=str(shot))
    pending.get_by_role("button", name="Confirm paid").click()
    expect(page.locator("#toast")).to_contain_text("Done: Confirm paid")
    expect(card.locator("#progressive-none-pending")).to_be_visible()
    (paid,) = list(rig.journal.entries(kinds=["progressive_award_paid"]))
    assert paid.payload["award_id"] == claimed["award_id"]
    assert paid.source == "operator:sam"
    page.context.close()


def test_a_viewer_sees_the_pending_award_but_no_confirm_button(
    browser: Browser,  # noqa: F811 (the fixture)
    progressive_panel: tuple[PanelRig, JournaledTable],
) -> None:
    rig, _table = progressive_panel
    page = open_page(browser, rig)
    log_in(page, "vera")
    card = page.locator("#progressive")
    expect(card.locator(".progressive-pending li")).to_have_count(1)
    expect(card.get_by_role("button", name="Confirm paid")).to_have_count(0)
    page.context.close()

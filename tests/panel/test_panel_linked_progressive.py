"""The table panel's Progressive card on a LINKED table, in real headless Chromium over the real round
engine with the linked controller (controller/progressive/linked.py): the link's meter as the floor last
broadcast it (the message's own shape, as ``LinkClient`` keeps it), "link lost" once the broadcast is
older than the link's timeout, only THIS table's pending awards of the link (another table's is not
shown), a supervisor's Confirm paid going through the engine's confirm path (queued for the floor and
journaled as sent, by the supervisor), and a viewer offered no button. No NATS server: the link client's
state is set as its listener sets it (the floor's side is tests/floor/test_daemon_linked_progressive.py)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from controller.config.resolved import UplinkConfig
from controller.engine import TableConfig
from controller.journal import Journal
from controller.panel import JournalPanelBackend, PanelSettings, UserStore, create_panel_app
from controller.panel.engine_actions import EngineTableActions
from controller.progressive.linked import LinkClient, LinkConfig, LinkedTableController
from controller.progressive.model import parse_parameters
from tests.chromium import CHROMIUM
from tests.engine.table import stack
from tests.panel.conftest import DeviceLinks, FakeClock, LiveServer, PanelRig
from tests.panel.test_panel_browser import TABLET, browser, log_in  # noqa: F401 (the fixture)
from tests.panel.test_panel_engine import JournaledTable

PARAMETERS = parse_parameters(
    {"unit_cents": 100, "base_cents": 10_000, "reset_cents": 10_000, "increment_percent": 10,
     "hidden_percent": 2}
)  # fmt: skip
LINK_TIMEOUT_S = 5.0


def _award(table_id: str, round_id: str, seat: int, amount_cents: int) -> dict[str, object]:
    """One pending award as the floor's broadcast carries it (AwardState.to_json)."""
    return {
        "meter_id": "MAIN",
        "award_id": f"MAIN/{table_id}/{round_id}/{seat}",
        "claim_number": 1,
        "table_id": table_id,
        "round_id": round_id,
        "seat": seat,
        "line": 7,
        "award": {"meter_share_percent": 100},
        "amount_cents": amount_cents,
        "paid_from": "meter",
        "needs_confirmation": True,
        "meter_before_cents": amount_cents,
        "meter_after_cents": 10_000,
        "shared_by": 1,
        "status": "pending",
        "paid_by": None,
    }


# The floor's meter broadcast (controller/floor/progressive.py ``broadcast``): every table of the link.
BROADCAST = json.dumps(
    {
        "link_id": "MAIN",
        "meter_id": "MAIN",
        "events": 42,
        "meter_cents": 12_345,
        "reserve_cents": 678,
        "unit_cents": 100,
        "pending": [_award("T1", "R7", 3, 25_000), _award("T2", "R9", 1, 31_000)],
    },
    separators=(",", ":"),
).encode()

pytestmark = pytest.mark.skipif(
    not os.path.exists(CHROMIUM) and not os.environ.get("CI"),
    reason="Debian's chromium is not installed (make test installs it)",
)


class LinkClock:
    """The link client's monotonic clock, moved by the test (no wall-clock window)."""

    def __init__(self) -> None:
        self.now_s = 1_000.0

    def __call__(self) -> float:
        return self.now_s


@pytest.fixture
def linked_panel(tmp_path: Path, users_file: Path) -> Iterator[tuple[PanelRig, LinkClient, LinkClock]]:
    journal = Journal.open(tmp_path / "journal.sqlite", "T1")
    table = JournaledTable(journal, TableConfig(game="top-flush", progressive=PARAMETERS), stack())
    link_clock = LinkClock()
    client = LinkClient(
        LinkConfig(
            "MAIN",
            "T1",
            UplinkConfig(("tls://127.0.0.1:1",), "S1", "table-T1", "pw", tmp_path / "ca.pem"),
            link_timeout_s=LINK_TIMEOUT_S,
        ),
        clock=link_clock,
    )
    controller = LinkedTableController(client, PARAMETERS, lambda _round_id: None)
    table.engine.set_progressive_controller(controller)  # as the daemon does
    # The broadcast heard, as LinkClient's listener keeps it.
    client.last_meter = json.loads(BROADCAST)
    client.last_meter_s = link_clock()
    actions = EngineTableActions(table.engine, now_s=lambda: table.now_s, perform=table.perform)
    backend = JournalPanelBackend(
        journal,
        actions=actions,
        device_health=DeviceLinks(),
        poll_interval_s=0.05,
        progressive_live=client.panel_view,  # as the daemon gives it (controller/daemon.py)
    )
    clock = FakeClock()
    app = create_panel_app(
        backend, users=UserStore(users_file), settings=PanelSettings(clock=clock, idle_timeout_s=600)
    )
    rig = PanelRig(journal, UserStore(users_file), actions, backend, app, clock, DeviceLinks())  # type: ignore[arg-type]
    server = LiveServer(rig)
    rig.url = server.start()
    yield rig, client, link_clock
    server.stop()
    journal.close()


def open_page(browser: Browser, rig: PanelRig) -> Page:  # noqa: F811 (the fixture's name)
    context = browser.new_context(viewport=TABLET, base_url=rig.url)
    context.set_default_timeout(30_000)
    return context.new_page()


def test_a_supervisor_confirms_this_tables_linked_award_on_the_panel(
    browser: Browser,  # noqa: F811 (the fixture)
    linked_panel: tuple[PanelRig, LinkClient, LinkClock],
) -> None:
    rig, client, _clock = linked_panel
    page = open_page(browser, rig)
    page.on("dialog", lambda dialog: dialog.accept())  # the confirmation the button asks for
    log_in(page, "sam")
    card = page.locator("#progressive")
    expect(card.locator("#progressive-meter")).to_have_text("123.45")  # the link's meter, not the base
    expect(card).to_contain_text("6.78")  # the reserve
    expect(card.locator("#progressive-link-lost")).to_have_count(0)
    # A new broadcast (no journal entry on this table): the open page follows it.
    client.last_meter = {**json.loads(BROADCAST), "meter_cents": 12_400}
    expect(card.locator("#progressive-meter")).to_have_text("124.00")
    expect(card.locator(".progressive-pending li")).to_have_count(1)  # T2's award is T2's to confirm
    mine = card.locator('li[data-award="MAIN/T1/R7/3"]')
    expect(mine).to_contain_text("Seat 3")
    expect(mine).to_contain_text("250.00")
    mine.get_by_role("button", name="Confirm paid").click()
    expect(page.locator("#toast")).to_contain_text("Done: Confirm paid")
    # The engine's confirm path: queued for the floor, journaled as sent by the supervisor.
    assert client.confirm_queue == [("MAIN/T1/R7/3", "sam")]
    # The engine's own entry (its detail says sent), beside the panel's record of the request (ok).
    (sent,) = [entry.payload for entry in rig.journal.entries(kinds=["linked_confirmation_sent"])]
    assert (sent["by"], sent["award_id"]) == ("sam", "MAIN/T1/R7/3")
    assert str(sent["message"]).startswith("progressive: award MAIN/T1/R7/3 is the linked meter's")
    requests = [
        entry.payload
        for entry in rig.journal.entries(kinds=["panel_request"])
        if entry.payload["action"] == "confirm_progressive_award" and entry.source == "operator:sam"
    ]
    assert [p["outcome"] for p in requests] == ["done"]
    page.context.close()


def test_link_lost_is_shown_and_a_viewer_sees_no_confirm_button(
    browser: Browser,  # noqa: F811 (the fixture)
    linked_panel: tuple[PanelRig, LinkClient, LinkClock],
) -> None:
    rig, _client, link_clock = linked_panel
    link_clock.now_s += LINK_TIMEOUT_S + 1  # no broadcast for longer than the link's timeout
    page = open_page(browser, rig)
    log_in(page, "vera")
    card = page.locator("#progressive")
    expect(card.locator("#progressive-link-lost")).to_contain_text("progressive link lost")
    expect(card.locator("#progressive-meter")).to_have_text("123.45")  # the last meter heard
    expect(card.locator(".progressive-pending li")).to_have_count(1)
    expect(card.get_by_role("button", name="Confirm paid")).to_have_count(0)
    page.context.close()

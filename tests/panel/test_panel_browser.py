"""The panel in a real browser: Python Playwright driving Debian's Chromium, headless, against the
panel served by uvicorn on 127.0.0.1. A supervisor logs in, watches a round progress live, sees a
red-light dead hand arrive as an alert, acknowledges and clears it; a viewer is refused the same; a
round's recall opens. The suite's screenshot of a live round goes to docs/img/panel.png."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from playwright.sync_api import (
    APIResponse,
    Browser,
    Page,
    Request,
    Response,
    Route,
    ViewportSize,
    expect,
    sync_playwright,
)

from controller.engine.actions import SetLimits
from controller.journal import Journal
from controller.panel import DeviceHealth
from tests.chromium import CHROMIUM, launch_chromium
from tests.panel.conftest import PASSWORDS, LiveServer, PanelRig
from tests.panel.table_script import HOLE_CARDS, ScriptedRound, raise_red_light

# The README's screenshot: rewritten when FLUSHTABLE_UPDATE_SCREENSHOT=1 (so a test run does not dirty the
# work tree with a new PNG each time); otherwise the same shot goes to the test's temporary directory.
README_SCREENSHOT = Path(__file__).resolve().parents[2] / "docs" / "img" / "panel.png"
TABLET: ViewportSize = {"width": 1280, "height": 800}  # a 10" tablet in landscape
# How long an ``expect`` waits for what the page shows (Playwright's default is 5 s, and
# ``set_default_timeout`` does not reach ``expect``): a page that waits on the server (an SSE event, a
# poll of the journal, a form's answer) may take longer than that on a loaded 2-core machine. Only a
# failing test waits this long.
EXPECT_TIMEOUT_MS = 30_000
# Where a test that runs the page's timers on Playwright's clock starts it (any fixed time).
CLOCK_START = datetime(2026, 12, 6, 12, 0, tzinfo=UTC)

pytestmark = pytest.mark.skipif(
    not os.path.exists(CHROMIUM) and not os.environ.get("CI"),
    reason="Debian's chromium is not installed (make test installs it)",
)


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    expect.set_options(timeout=EXPECT_TIMEOUT_MS)
    with sync_playwright() as playwright:
        launched = launch_chromium(playwright)
        yield launched
        launched.close()


@pytest.fixture
def page(browser: Browser, live: PanelRig) -> Iterator[Page]:
    context = browser.new_context(viewport=TABLET, base_url=live.url)
    context.set_default_timeout(EXPECT_TIMEOUT_MS)
    opened = context.new_page()
    # Nothing may leave the machine: every request goes to the panel itself.
    outside: list[str] = []
    opened.on(
        "request", lambda request: None if request.url.startswith(live.url) else outside.append(request.url)
    )
    yield opened
    context.close()
    assert outside == [], f"the page fetched from outside the panel: {outside}"


def log_in(page: Page, name: str) -> None:
    page.goto("/login")
    page.fill("input[name=user]", name)
    page.fill("input[name=password]", PASSWORDS[name])
    page.click("button[type=submit]")
    expect(page.locator("header.topbar")).to_be_visible()
    expect(page.locator(".who .user")).to_contain_text(name)
    expect(page.locator("#live")).to_have_text("● live")


def test_login_is_required_and_a_wrong_password_is_refused(page: Page, live: PanelRig) -> None:
    page.goto("/")
    expect(page).to_have_url(f"{live.url}/login")
    page.fill("input[name=user]", "sam")
    page.fill("input[name=password]", "not-the-password")
    page.click("button[type=submit]")
    expect(page.locator(".error")).to_have_text("Wrong user name or password.")


def test_supervisor_watches_a_round_live_then_acknowledges_and_clears_a_red_light(
    page: Page, live: PanelRig, tmp_path: Path
) -> None:
    now = time.time()
    for name, kind, model in [
        ("shuffler", "shuffler", "FS-7 shoe"),
        ("sensors", "bet_sensors", "BS-42"),
        ("display", "dealer_display", "DD-3"),
    ]:
        live.journal.append(
            "device_ready",
            {
                "device": name,
                "kind": kind,
                "model": model,
                "serial_number": f"SN-{name}",
                "firmware_version": "2.4.1",
            },
            round_id=None,
            source=name,
        )
        live.links.reports.append(
            DeviceHealth(name, kind, f"sim+pty://{name}", "ready", now - 0.4, 120, 118, reconnects=0)
        )
    live.journal.append(
        "device_status",
        {"device": "shuffler", "state": "ready", "fault_code": 0, "lamp": "green"},
        round_id=None,
        source="shuffler",
    )
    live.journal.append(
        "button_moved",
        {"from_seat": None, "to_seat": 2, "reason": "first round", "by": "engine"},
        round_id=None,
        source="engine",
    )
    log_in(page, "sam")
    expect(page.locator("tr[data-device='shuffler'] .pill")).to_have_text("ready")
    expect(page.locator(".seats")).to_have_count(0)
    script = ScriptedRound(live.journal)
    steps = script.steps()
    # The page was loaded before the round: everything below arrives over SSE.
    next(steps)
    expect(page.locator("#phase")).to_have_text("betting")
    expect(page.locator(".diagram .state.lit")).to_have_attribute("data-state", "betting")
    next(steps)
    expect(page.locator("#phase")).to_have_text("bets locked")
    expect(page.locator(".seat[data-seat='1'] .wagers")).to_contain_text("10.00")
    next(steps)  # dealt: seven face-down cards per seat, none shown
    expect(page.locator(".seat[data-seat='3'] .pcard.back")).to_have_count(7)
    expect(page.locator("[data-card]")).to_have_count(0)
    next(steps)  # decisions
    expect(page.locator("#phase")).to_have_text("decisions")
    expect(page.locator(".seat[data-seat='2'] .decision")).to_contain_text("raise")
    expect(page.locator("[data-card]")).to_have_count(0)
    next(steps)  # reveal: now the cards show
    expect(page.locator(".diagram .state.lit")).to_have_attribute("data-state", "reveal")
    expect(page.locator(".seat[data-seat='1'] [data-card]")).to_have_count(7)
    expect(page.locator(".seat[data-seat='1'] [data-card='Ah']")).to_be_visible()
    shot = (
        README_SCREENSHOT if os.environ.get("FLUSHTABLE_UPDATE_SCREENSHOT") == "1" else tmp_path / "panel.png"
    )
    shot.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(shot), full_page=True)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    next(steps)  # settled, paid: the engine is back to idle, the round's results stay on the page
    expect(page.locator("#phase")).to_have_text("idle")
    expect(page.locator(".seat[data-seat='2'] .net")).to_contain_text("-20.00")
    expect(page.locator(".seat[data-seat='3'] .net")).to_contain_text("20.00")

    # The next round: the shuffler's red light mid-deal kills it and holds the table.
    second = ScriptedRound(live.journal, red_light_at=1)  # with seat 1's first card, Ah
    assert list(second.steps()) == ["betting", "bets_locked", "dead"]
    (fault_id,) = second.fault_ids
    live.links.reports[0] = DeviceHealth(
        "shuffler", "shuffler", "sim+pty://shuffler", "ready", time.time(), 130, 128, errors=1
    )
    expect(page.locator("#alert-count")).to_have_text("1")
    expect(page.locator(".held-banner").first).to_contain_text("TABLE HELD")
    page.click("nav a[href='/alerts']")
    # To the alerts page's load: panel.js is deferred, and a click on a button before it has run does
    # nothing (the click returns once the navigation starts, the buttons show before the script runs).
    page.wait_for_url("**/alerts")
    alert = page.locator(f"li.alert[data-fault-id='{fault_id}']")
    expect(alert.locator(".alert-kind")).to_have_text("red light")
    expect(alert.locator(".pill")).to_have_text("active")
    alert.get_by_role("button", name="Acknowledge").click()
    expect(alert.locator(".pill")).to_have_text("acknowledged")
    expect(alert.locator(".alert-trail")).to_contain_text("Acknowledged by sam")
    alert.get_by_role("button", name="Clear…").click()
    page.fill("dialog input", "Shoe reset, deck counted, round returned")
    page.click("dialog button[value=ok]")
    expect(page.locator(".all-clear")).to_be_visible()
    expect(page.locator("#alert-count")).to_have_text("0")
    cleared = [e.payload for e in live.journal.entries(kinds=["fault_cleared"])]
    assert cleared == [
        {"fault_id": fault_id, "by": "sam", "reason": "Shoe reset, deck counted, round returned"}
    ]
    acknowledged = [e.payload for e in live.journal.entries(kinds=["fault_acknowledged"])]
    assert acknowledged == [{"fault_id": fault_id, "by": "sam"}]
    # The dead round's dealt card never reached the page (it showed in the first round's reveal).
    page.goto("/")
    expect(page.locator(".seat[data-seat='1'] .pcard.back")).to_have_count(1)
    expect(page.locator("[data-card='Ah']")).to_have_count(0)


def test_viewer_sees_the_alert_but_is_refused_acting_on_it(page: Page, live: PanelRig) -> None:
    fault_id = raise_red_light(live.journal)
    log_in(page, "vera")
    page.goto("/alerts")
    alert = page.locator(f"li.alert[data-fault-id='{fault_id}']")
    expect(alert.locator(".alert-kind")).to_have_text("red light")
    expect(alert.get_by_role("button")).to_have_count(0)
    # Forging the request from the viewer's own page, with the viewer's CSRF token, is refused too.
    statuses = page.evaluate(
        """async (faultId) => {
            const csrf = document.querySelector('meta[name="csrf-token"]').content;
            const out = [];
            for (const [path, body] of [
                [`/api/alerts/${faultId}/acknowledge`, {}],
                ['/api/actions/clear_fault', {fault_id: faultId, reason: 'viewer tries'}],
            ]) {
                const r = await fetch(path, {method: 'POST', headers: {'Content-Type': 'application/json',
                    'X-CSRF-Token': csrf}, body: JSON.stringify(body)});
                out.push([r.status, (await r.json()).detail]);
            }
            return out;
        }""",
        fault_id,
    )
    assert [status for status, _ in statuses] == [403, 403]
    assert all("needs supervisor" in detail for _, detail in statuses)
    assert not list(live.journal.entries(kinds=["fault_acknowledged", "fault_cleared"]))
    refused = [e.payload for e in live.journal.entries(kinds=["panel_request"])]
    assert [(r["by"], r["action"]) for r in refused] == [
        ("vera", "acknowledge_fault"),
        ("vera", "clear_fault"),
    ]
    page.reload()
    expect(alert.locator(".pill")).to_have_text("active")


def test_recall_of_a_round_opens_with_its_cards_and_results(page: Page, live: PanelRig) -> None:
    round_id = ScriptedRound(live.journal).play_all()
    log_in(page, "vera")
    page.click("nav a[href='/recall']")
    row = page.locator(".recall-list tr", has_text=round_id)
    expect(row.locator(".tag")).to_have_text("settled")
    row.get_by_role("link", name=round_id).click()
    expect(page.locator(".recall-one h2")).to_contain_text(round_id)
    for card in HOLE_CARDS[3]:
        expect(page.locator(f".recall-one [data-card='{card}']")).to_have_count(1)
    expect(page.locator(".recall-one table.log tr.k-round_settled")).to_have_count(1)
    expect(page.locator(".recall-one .dealer-row")).to_contain_text("ualifies")


def test_event_log_filters_and_meters_chart(page: Page, live: PanelRig) -> None:
    ScriptedRound(live.journal).play_all()
    ScriptedRound(live.journal).play_all()
    log_in(page, "vera")
    page.goto("/log?kind=round_settled")
    expect(page.locator("#log-table tbody tr")).to_have_count(2)
    expect(page.locator("#log-table tbody tr").first).to_contain_text("round_settled")
    other = live.journal.append("dealer_key", {"key": "next", "seat": None}, round_id=None, source="display")
    # A live entry of another kind does not enter the filtered table. Waited on: the page has taken the
    # entry (panel.js sets data-last-seq, then files the entry's row or not, in one go). A fixed 400 ms
    # wait passed on a loaded machine before the entry arrived, whatever the page did with it.
    expect(page.locator("body")).to_have_attribute("data-last-seq", str(other.seq))
    expect(page.locator("#log-table tbody tr")).to_have_count(2)
    page.click("nav a[href='/meters']")
    expect(page.locator(".chart rect.bar")).to_have_count(2)
    expect(page.locator(".tile", has_text="Rounds settled").locator(".value")).to_have_text("2")


def test_a_browser_that_loses_its_stream_resumes_without_a_gap(page: Page, live: PanelRig) -> None:
    """Chromium's EventSource reconnects with Last-Event-ID; the log shows every entry exactly once."""
    log_in(page, "vera")
    page.goto("/log")
    expect(page.locator("#live")).to_have_text("● live")
    first = live.journal.last_entry()
    assert first is not None
    for n in range(3):
        live.journal.append("dealer_key", {"key": "next", "seat": n}, round_id=None, source="display")
    newest_seq = page.locator("#log-table tbody tr:first-child td:first-child")
    expect(newest_seq).to_have_text(str(first.seq + 3))
    server = live.extra["server"]
    assert isinstance(server, LiveServer)
    # Cut every stream (as a network blip would) and write while the browser is away.
    ended = asyncio.run_coroutine_threadsafe(_end_streams(live), server.loop).result(5)
    assert ended == 1
    for n in range(5):
        live.journal.append("dealer_key", {"key": "confirm", "seat": n}, round_id=None, source="display")
    last = first.seq + 8
    expect(newest_seq).to_have_text(str(last))
    seqs = [int(text) for text in page.locator("#log-table tbody tr td:first-child").all_inner_texts()]
    assert seqs[: last - first.seq] == list(range(last, first.seq, -1))


async def _end_streams(rig: PanelRig) -> int:
    return rig.backend.end_streams()


def test_limits_need_two_managers_proposed_in_the_dialog_approved_by_another(
    browser: Browser, page: Page, live: PanelRig
) -> None:
    """Two-person control in the browser: a declared action with two fields proposes the limits (the
    one dialog built from its fields); nothing applies; the proposer's own approval is refused in
    words; a second manager, in a browser of her own, approves and the engine gets the limits."""
    page.on("dialog", lambda dialog: dialog.accept())  # the Approve button's confirm()
    log_in(page, "max")
    actions = page.locator("section.actions")
    expect(actions.get_by_role("button", name="Open table")).to_have_count(0)  # the table is open
    expect(actions.get_by_role("button", name="Void round…")).to_have_count(0)  # no round in play
    actions.get_by_role("button", name="Propose limits…").click()
    inputs = page.locator("dialog input")
    expect(inputs).to_have_count(2)
    expect(page.locator("dialog label").first).to_contain_text("Minimum ante (cents)")
    inputs.nth(0).fill("500")
    inputs.nth(1).fill("25000")
    page.click("dialog button[value=ok]")
    expect(page.locator("#toast")).to_contain_text("Done: Propose limits")
    pending = page.locator("#changes-pending tr[data-change-id=CT1-0001]")
    expect(pending).to_contain_text("ante limits 5.00 to 250.00")
    expect(pending).to_contain_text("max")
    assert live.actions.calls == []  # proposed: nothing applies
    pending.get_by_role("button", name="Approve CT1-0001").click()
    expect(page.locator("#toast")).to_have_text(
        "Refused: max proposed CT1-0001; a second, different manager must approve it"
    )
    assert live.actions.calls == []
    # The second manager, on her own tablet.
    context = browser.new_context(viewport=TABLET, base_url=live.url)
    try:
        other = context.new_page()
        other.on("dialog", lambda dialog: dialog.accept())
        log_in(other, "mia")
        other.wait_for_load_state("load")  # the page's script (its actions' handlers) has run
        other.locator("#changes-pending").get_by_role("button", name="Approve CT1-0001").click()
        expect(other.locator("#toast")).to_contain_text("Done: Approve CT1-0001")
        expect(other.locator("#changes-pending")).to_have_count(0)  # nothing awaits any more
    finally:
        context.close()
    assert live.actions.calls == [SetLimits(500, 25_000, "mia")]
    stored = [(e.kind, e.payload.get("by")) for e in live.journal.entries() if e.kind.startswith("change_")]
    assert stored == [("change_proposed", "max"), ("change_refused", "max"), ("change_approved", "mia")]


def test_recall_download_csv_gives_the_rounds_file(page: Page, live: PanelRig, tmp_path: Path) -> None:
    round_id = ScriptedRound(live.journal).play_all()
    log_in(page, "vera")
    page.goto(f"/recall/{round_id}")
    with page.expect_download() as download_info:
        page.get_by_role("link", name="Download CSV").click()
    download = download_info.value
    assert download.suggested_filename == f"round-{round_id}.csv"
    saved = tmp_path / download.suggested_filename
    download.save_as(saved)
    lines = saved.read_text(encoding="utf-8").splitlines()
    assert lines[0].startswith("round_id,status,started_utc,started,game,")
    assert all(line.startswith(f"{round_id},settled,") for line in lines[1:])
    assert len(lines) > 1


def refreshed_after(page: Page, change: Callable[[], object], fragment: str = "/partials/table") -> None:
    """``change`` made, and the page refreshed after it: a pass of panel.js's ``refreshPartials`` that
    fetched the page's ``fragment`` after the change (so it read what the change wrote), and then
    /api/table, which it reads once every fragment's swap is decided. A pass already under way when the
    change was made fetched its fragment before, so its /api/table does not count."""
    requests: list[Request] = []

    def record(request: Request) -> None:
        requests.append(request)

    page.on("request", record)

    def after_change(response: Response) -> bool:
        if not response.url.endswith("/api/table") or response.request not in requests:
            return False
        before = requests[: requests.index(response.request)]
        return any(fragment in request.url for request in before)

    try:
        with page.expect_response(after_change):
            change()
    finally:
        page.remove_listener("request", record)


def device_readied(journal: Journal, device: str, kind: str) -> int:
    """A device's first ``device_ready``: a row the table's fragment did not show, so the fragment
    changes (panel.js swaps a fragment only when what it shows changed). Its seq."""
    return journal.append(
        "device_ready",
        {
            "device": device,
            "kind": kind,
            "model": "M-1",
            "serial_number": f"SN-{device}",
            "firmware_version": "1",
        },
        round_id=None,
        source=device,
    ).seq


def test_a_button_held_down_while_the_panel_refreshes_still_acts(page: Page, live: PanelRig) -> None:
    """A journal entry that arrives while a finger is on a button swaps the partial the button is in;
    the press must still act once released (the swap waits for the release, then happens). Before,
    the button pressed was replaced under the finger, the release landed on its copy, and the browser
    sent the click to neither: the tap was lost (seen once in CI as a dialog that never opened)."""
    log_in(page, "max")
    button = page.locator("section.actions").get_by_role("button", name="Propose limits…")
    button.scroll_into_view_if_needed()  # the mouse presses at the box's point on the screen
    box = button.bounding_box()
    assert box is not None
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.mouse.down()
    # An entry while the button is held: the page refreshes its partials, then reads /api/table last.
    refreshed_after(page, lambda: device_readied(live.journal, "shuffler", "shuffler"))
    # The swap held back during the press is fetched again on the release: the entry is not lost.
    with page.expect_response(lambda response: "/partials/table" in response.url):
        page.mouse.up()
    inputs = page.locator("dialog input")
    expect(inputs).to_have_count(2)
    page.click("dialog button[value=cancel]")
    expect(page.locator("dialog")).to_have_count(0)
    assert live.actions.calls == []


def test_a_press_that_is_never_released_does_not_freeze_the_panel(page: Page, live: PanelRig) -> None:
    """A press holds a swap for a tap's length only: a release that never comes (a context menu, a
    switch to another window) must not leave the supervisor looking at a stale table. Held down past
    panel.js's PRESS_HOLDS_MS, the fragment is swapped in anyway; a right button's press holds nothing."""
    log_in(page, "max")
    button = page.locator("section.actions").get_by_role("button", name="Propose limits…")
    button.scroll_into_view_if_needed()
    box = button.bounding_box()
    assert box is not None
    button.evaluate("element => { element.dataset.before = 'the press'; }")
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.mouse.down(button="right")
    refreshed_after(page, lambda: device_readied(live.journal, "sensors", "bet_sensors"))
    # Swapped in that refresh, not held: panel.js swaps the fragments before it reads /api/table.
    assert page.locator("section.actions button[data-before]").count() == 0
    page.mouse.up(button="right")
    button.evaluate("element => { element.dataset.before = 'the press'; }")
    page.mouse.down()
    raise_red_light(live.journal)  # what the table shows changes: its fragment differs
    # Held, then swapped once the press outlasts a tap, the button still down.
    expect(page.locator("section.actions button[data-before]")).to_have_count(0)
    page.mouse.up()


def test_a_refresh_leaves_a_fragment_that_did_not_change_as_it_is(page: Page, live: PanelRig) -> None:
    """An entry that changes nothing a fragment shows leaves the fragment as it is: a box a supervisor
    ticked on the alerts page keeps its tick. Before, the first refresh after a page's load swapped
    every fragment, changed or not (a loaded page had no HTML "last swapped in" to compare with), and
    the ticks went at the first entry of any kind."""
    for _ in range(2):  # two open alerts: each has its box
        raise_red_light(live.journal)
    log_in(page, "sam")
    page.goto("/alerts")
    box = page.locator("#alerts-live input[data-pick]").first
    box.check()
    refreshed_after(
        page,
        lambda: live.journal.append(
            "dealer_key", {"key": "next", "seat": 1}, round_id=None, source="display"
        ),
        fragment="/partials/alerts",
    )
    assert box.is_checked()  # the refresh's swaps are decided before its /api/table, awaited above


def test_alerts_ticked_for_a_bulk_acknowledge_stay_ticked_when_their_fragment_changes(
    page: Page, live: PanelRig
) -> None:
    """A supervisor ticks alerts; another alert is raised before the bulk button is pressed: the alerts'
    fragment is swapped for one with three, and the alert ticked stays ticked (before, the swap unticked
    every box and the button said "Select the alerts first"). Nothing else is ticked for them."""
    first = raise_red_light(live.journal)
    raise_red_light(live.journal)  # two open alerts: each has its box
    log_in(page, "sam")
    page.goto("/alerts")
    page.locator(f"input[data-pick='{first}']").check()
    refreshed_after(page, lambda: raise_red_light(live.journal), fragment="/partials/alerts")
    boxes = page.locator("#alerts-live input[data-pick]")
    expect(boxes).to_have_count(3)  # swapped in: the third alert's box
    ticked = [box.get_attribute("data-pick") for box in boxes.all() if box.is_checked()]
    assert ticked == [first]  # the swap's ticks are set with it, before its /api/table, awaited above
    expect(page.locator("input[data-pick-all]")).not_to_be_checked()
    page.click("button[data-bulk=acknowledge]")
    expect(page.locator("dialog[open] p")).to_have_text("Acknowledge 1 alerts?")
    page.click("dialog button[value=cancel]")


# Each call of fetch for a fragment, counted by the page itself: the count is right once the timer that
# made the call has run, where the request's event reaches the test some time later.
COUNT_FRAGMENT_FETCHES = """(() => {
  const fetchAny = window.fetch;
  window.fragmentFetches = 0;
  window.fetch = (url, options) => {
    if (String(url).startsWith("/partials/")) window.fragmentFetches += 1;
    return fetchAny(url, options);
  };
})()"""


def test_an_older_fragment_is_never_swapped_in_after_a_newer_one(page: Page, live: PanelRig) -> None:
    """Two entries close together, the first one's fetch of the fragment answered last: the page ends on
    the newer fragment. Before, each entry's pass ran at once with any other under way, and the first
    pass, answered last, swapped the older fragment in after the newer: the page stayed a change behind
    until the next entry. The page's timers run on Playwright's clock, paused, so each pass starts when
    the test moves the clock; the test holds each fetch of the fragment (answered as the server had it
    then) and gives the answers newest first, the order that lost the change."""
    held: list[tuple[Route, APIResponse]] = []
    holding = [True]

    def hold(route: Route) -> None:
        if holding[0]:
            held.append((route, route.fetch()))
        else:
            route.continue_()

    page.add_init_script(COUNT_FRAGMENT_FETCHES)
    page.clock.install(time=CLOCK_START)
    log_in(page, "max")
    page.clock.pause_at(CLOCK_START + timedelta(hours=1))  # the page's timers run as the test says
    page.route("**/partials/table", hold)

    def held_every_fetch() -> None:
        """Every fetch the page has made so far is held (its route reached the test)."""
        made = page.evaluate("window.fragmentFetches")
        deadline = time.monotonic() + EXPECT_TIMEOUT_MS / 1000
        while len(held) < made:
            assert time.monotonic() < deadline, f"{len(held)} of {made} fetches reached the route"
            page.wait_for_timeout(20)

    body = page.locator("body")
    expect(body).to_have_attribute("data-last-seq", str(device_readied(live.journal, "shuffler", "shuffler")))
    page.clock.run_for(100)  # the first entry's pass: it fetches the fragment with the shuffler's row
    held_every_fetch()
    assert len(held) == 1
    expect(body).to_have_attribute(
        "data-last-seq", str(device_readied(live.journal, "sensors", "bet_sensors"))
    )
    page.clock.run_for(100)  # the second entry's pass, if one may start while the first is under way
    held_every_fetch()
    for route, answer in reversed(held):  # newest first: each pass runs to its end (/api/table)
        with page.expect_response(lambda response: response.url.endswith("/api/table")):
            route.fulfill(response=answer)
    holding[0] = False
    page.clock.run_for(100)  # a pass the second entry asked for after the first one's
    expect(page.locator("#table-live tr[data-device='sensors']")).to_have_count(1)


def test_a_press_holds_a_swap_its_own_2_s_with_no_refresh_left_over_from_an_earlier_press(
    page: Page, live: PanelRig
) -> None:
    """A press that held a swap, released; a second press holds the next swap: the second hold lasts its
    own PRESS_HOLDS_MS and the page fetches nothing more meanwhile. Before, the first hold's timer stayed
    set after its release and, at the first press's 2 s, started a pass that the second press held again:
    a fetch of the fragment for nothing. The page's timers run on Playwright's clock, paused: each time
    below is the page's, as the test moves it."""
    page.add_init_script(COUNT_FRAGMENT_FETCHES)
    page.clock.install(time=CLOCK_START)
    log_in(page, "max")
    page.clock.pause_at(CLOCK_START + timedelta(hours=1))  # 0 ms from here
    target = page.locator("#table-live #phase")  # in the fragment, and nothing happens on its click
    box = target.bounding_box()
    assert box is not None
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    body = page.locator("body")

    def entry_passes(device: str, kind: str) -> None:
        """An entry that changes the fragment, taken by the page, and the pass it starts, run to its end
        (/api/table): 100 ms on the page's clock."""
        expect(body).to_have_attribute("data-last-seq", str(device_readied(live.journal, device, kind)))
        with page.expect_response(lambda response: response.url.endswith("/api/table")):
            page.clock.run_for(100)

    page.mouse.down()  # at 0 ms
    entry_passes("shuffler", "shuffler")  # held at 100 ms: the hold would end at 2,000 ms
    with page.expect_response(lambda response: response.url.endswith("/api/table")):
        page.mouse.up()
        page.clock.run_for(100)  # the release's pass: the held swap made
    expect(page.locator("#table-live tr[data-device='shuffler']")).to_have_count(1)
    page.mouse.down()  # at 200 ms: its hold ends at 2,200 ms
    entry_passes("sensors", "bet_sensors")  # held at 300 ms
    fetched = page.evaluate("window.fragmentFetches")
    page.clock.run_for(1_850)  # to 2,150 ms: past the first press's 2 s, not the second's
    assert page.evaluate("window.fragmentFetches") == fetched
    expect(page.locator("#table-live tr[data-device='sensors']")).to_have_count(0)  # still held
    page.clock.run_for(200)  # to 2,350 ms: the second press's hold ends, its swap is made, still down
    expect(page.locator("#table-live tr[data-device='sensors']")).to_have_count(1)
    page.mouse.up()

"""The table panel in the property's time and money ([property], controller/locale.py): its shift
meters are the property's shifts in its zone, its times are written in the zone with the zone named and
its amounts in the property's currency, the meters CSV's and the recall CSV's too. A real journal file
whose clock is injected (a round at 05:30 UTC on 5 December 2026: 06:30 CET, Berlin's day shift of that
day, but the UTC grave shift of the 4th), the real app: nothing depends on the hour the test runs."""

from __future__ import annotations

import asyncio
import csv
import html
import io
import re
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace

import pytest
from fastapi.testclient import TestClient
from playwright.sync_api import Browser, expect

from controller.journal import Journal
from controller.locale import PropertySettings, property_settings
from controller.panel import JournalPanelBackend, PanelSettings, UserStore, create_panel_app
from controller.panel.embed import RunningPanel, start_panel
from tests.panel.conftest import FakeClock, LiveServer, login
from tests.panel.table_script import JournalTableActions, ScriptedRound
from tests.panel.test_panel_browser import browser, log_in  # noqa: F401  (the module's browser fixture)
from tests.panel.test_panel_live import http_login, sse_events

BERLIN = property_settings(time_zone="Europe/Berlin", currency="EUR", currency_symbol="€")
ROUND_AT = datetime(2026, 12, 5, 5, 30, tzinfo=UTC)
LOG_AT = datetime(2026, 12, 5, 13, 5, 31, tzinfo=UTC)


@pytest.fixture
def berlin_client(tmp_path: Path, users_file: Path) -> Iterator[tuple[TestClient, str]]:
    journal = Journal.open(tmp_path / "var" / "journal.sqlite", "T1", clock=lambda: ROUND_AT)
    played = ScriptedRound(journal)
    played.play_all()
    backend = JournalPanelBackend(
        journal, actions=JournalTableActions(journal), poll_interval_s=0.05, money_format=BERLIN.money
    )
    settings = PanelSettings(clock=FakeClock(), idle_timeout_s=600, property_settings=BERLIN)
    app = create_panel_app(backend, users=UserStore(users_file), settings=settings)
    with TestClient(app, base_url="http://127.0.0.1") as client:
        login(client, "vera")
        yield client, played.round_id
    journal.close()


def _meters_csv(client: TestClient, query: str) -> dict[str, str]:
    answer = client.get(f"/csv/meters?{query}")
    assert answer.status_code == 200, answer.text
    return {row["meter"]: row["amount"] or row["value"] for row in csv.DictReader(io.StringIO(answer.text))}


def test_the_table_panel_s_shifts_are_the_property_s(berlin_client: tuple[TestClient, str]) -> None:
    client, _round_id = berlin_client
    assert _meters_csv(client, "date=2026-12-05&shift=day")["rounds_settled"] == "1"
    assert _meters_csv(client, "date=2026-12-04&shift=grave")["rounds_settled"] == "0"
    handle = _meters_csv(client, "date=2026-12-05&shift=day")["handle_cents"]
    assert handle.startswith("€"), handle
    page = client.get("/meters?date=2026-12-05&shift=day")
    assert page.status_code == 200
    # The range in the property's zone, named; the shift chooser names the zone.
    assert "day shift of 2026-12-05 (2026-12-05 06:00:00 CET to 2026-12-05 14:00:00 CET)" in page.text
    assert "day (from 06:00 Europe/Berlin)" in page.text
    unknown = client.get("/meters?date=2026-12-05&shift=swingg")
    assert unknown.status_code == 422
    assert unknown.json()["detail"] == "shift: 'swingg' is not one of day, swing, grave"


def test_recall_shows_the_property_s_time_and_money(berlin_client: tuple[TestClient, str]) -> None:
    client, round_id = berlin_client
    page = client.get(f"/recall/{round_id}")
    assert page.status_code == 200, page.text
    assert "2026-12-05 06:30:00 CET" in page.text
    assert "€10.00" in page.text
    rows = list(csv.DictReader(io.StringIO(client.get(f"/csv/recall/{round_id}").text)))
    assert rows
    assert rows[0]["started"] == "2026-12-05T06:30:00+01:00"
    assert rows[0]["started_utc"].startswith("2026-12-05T05:30:00")
    assert rows[0]["stake"] == "€10.00"


# New York: the browser's Intl names the zone "GMT-5" (en-GB) where the server writes "EST"; the live
# row takes the server's words (the stream's time_text), so both read "08:05:31 EST".
NEW_YORK = property_settings(time_zone="America/New_York", currency="EUR", currency_symbol="€")


@pytest.mark.parametrize(
    ("prop", "shown"), [(BERLIN, "14:05:31 CET"), (NEW_YORK, "08:05:31 EST")], ids=["berlin", "new_york"]
)
def test_the_live_log_writes_its_times_in_the_property_s_zone_in_chromium(
    tmp_path: Path,
    users_file: Path,
    browser: Browser,  # noqa: F811
    prop: PropertySettings,
    shown: str,
) -> None:
    """A row the event stream adds (panel.js) reads as the rows the server wrote: 14:05:31 CET in
    Berlin, 08:05:31 EST in New York (not the browser's "GMT-5")."""
    journal = Journal.open(tmp_path / "journal.sqlite", "T1", clock=lambda: LOG_AT)
    backend = JournalPanelBackend(
        journal, actions=JournalTableActions(journal), poll_interval_s=0.05, money_format=prop.money
    )
    settings = PanelSettings(clock=FakeClock(), idle_timeout_s=600, property_settings=prop)
    app = create_panel_app(backend, users=UserStore(users_file), settings=settings)
    server = LiveServer(SimpleNamespace(app=app))  # type: ignore[arg-type]
    url = server.start()
    context = browser.new_context(base_url=url)
    try:
        page = context.new_page()
        log_in(page, "vera")
        page.goto("/log")
        first = page.locator("#log-table tbody tr").first
        expect(first).to_contain_text(shown)  # the server's rows (the login)
        count = page.locator("#log-table tbody tr").count()
        other = browser.new_context(base_url=url)
        log_in(other.new_page(), "sam")  # journaled: the stream brings its row to the first page
        other.close()
        expect(page.locator("#log-table tbody tr")).to_have_count(count + 1)
        expect(page.locator("#log-table tbody tr.fresh").first).to_contain_text(shown)
    finally:
        context.close()
        server.stop()
        journal.close()


# An amount as a sentence writes it (controller/money.py): digits, thousands commas, two decimals.
AMOUNT = re.compile(r"\d[\d,]*\.\d\d")


def _unpriced(sentences: list[str], symbol: str) -> list[str]:
    """The sentences with an amount not in the property's money (each amount right after its symbol)."""
    return [
        s
        for s in sentences
        if len(AMOUNT.findall(s)) != len(re.findall(re.escape(symbol) + AMOUNT.pattern, s))
    ]


class _StartedPanel:
    """The table panel as the daemon starts it (controller/panel/embed.py ``start_panel``, the property's
    settings given), served by uvicorn on 127.0.0.1 from a loop of its own so the test reads it over
    HTTP meanwhile."""

    def __init__(self, journal: Journal, users_file: Path, prop: PropertySettings) -> None:
        self.loop = asyncio.new_event_loop()
        self.running: RunningPanel | None = None
        self._args = (journal, users_file, prop)

    def __enter__(self) -> str:
        journal, users_file, prop = self._args
        # The loop runs in its own thread from the start: the test's thread may hold a running loop of its
        # own (Playwright's sync API, from the module's browser tests).
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        started = start_panel(
            journal, bind="127.0.0.1:0", users_file=users_file, property_settings=prop, environ={}
        )
        self.running = asyncio.run_coroutine_threadsafe(started, self.loop).result(timeout=60)
        return self.running.url

    def __exit__(self, *_exc: object) -> None:
        assert self.running is not None
        asyncio.run_coroutine_threadsafe(self.running.stop(), self.loop).result(timeout=30)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=30)
        self.loop.close()


def test_the_event_log_writes_amounts_in_the_property_s_money(tmp_path: Path, users_file: Path) -> None:
    """Every amount of the event log's sentences in euros: the rows the server renders (/log and
    /api/journal), the rows the live stream adds (/api/events, what panel.js writes) and recall's events
    — as the table's recall already wrote its stakes ("€10.00", not "ante 10.00")."""
    journal = Journal.open(tmp_path / "var" / "journal.sqlite", "T1", clock=lambda: ROUND_AT)
    round_id = ScriptedRound(journal).play_all()
    last = journal.last_entry()
    assert last is not None
    try:
        with _StartedPanel(journal, users_file, BERLIN) as url:
            client = http_login(url, "vera")
            page = client.get("/log", params={"limit": 1000})
            assert page.status_code == 200
            served = [html.unescape(s) for s in re.findall(r'<span class="sentence">(.*?)</span>', page.text)]
            api = [str(e["sentence"]) for e in client.get("/api/journal", params={"limit": 1000}).json()]
            live = [str(e["data"]["sentence"]) for e in sse_events(client, count=last.seq, since=0)]
            recall = client.get("/api/recall", params={"round_id": round_id}).json()
            recalled = [str(e["sentence"]) for record in recall for e in record["events"]]
            client.close()
    finally:
        journal.close()
    for channel, sentences in (
        ("/log", served),
        ("/api/journal", api),
        ("/api/events", live),
        ("recall", recalled),
    ):
        priced = [s for s in sentences if AMOUNT.search(s)]
        assert priced, f"{channel}: no sentence with an amount"
        assert _unpriced(sentences, "€") == [], channel
    assert "Bets locked — seat 1: ante €10.00; seat 2: ante €10.00; seat 3: ante €10.00" in served
    assert "Seat 1: raise €10.00" in live

"""Surveillance events, the floor panel's Reports and Surveillance pages and the auditor role, over a
real floor (nats-server, PostgreSQL, the floor service, the tables' uplinks) and real Chromium:

- every significant event of two tables' journals (recomputed here from the SQLite files with this
  test's own reading) is in the stream SURVEILLANCE exactly once, read by a surveillance system's own
  credentials, each with ``Nats-Msg-Id`` its event id and a body valid against
  docs/surveillance-event.schema.json that says what the table journaled; the publisher's marks
  deleted (a crash after publishing, before the marks moved): everything published again, still once;
- the Surveillance page lists them; the Reports page prints (print CSS: no navigation) with the CSV's
  digest; its CSV ends with the digest line;
- the auditor cannot acknowledge or release; is shown a voided round's private parts the floor holds
  (released by an older uplink, withheld from everyone) only with a reason, recorded in PostgreSQL
  (who, when, which round, why), and only on that answer; a regulator is refused.
"""

from __future__ import annotations

import asyncio
import csv
import hashlib
import io
import json
import random
import sqlite3
import threading
import time
from collections import Counter
from datetime import timedelta
from pathlib import Path
from typing import Any

import jsonschema
import psycopg
import pytest
from playwright.sync_api import Browser, Page, expect

from controller.floor.panel import FloorPanelSettings, FloorUser, serve_panel
from controller.floor.service import FloorService
from controller.journal.state import TableState
from controller.simulation.floor.embedded import EmbeddedFloor
from controller.uplink.uplink import Uplink
from tests.chromium import CHROMIUM
from tests.floor.conftest import EXPECT_TIMEOUT_MS, MakeFloor
from tests.floor.helpers import Tables, expected_private_total, floor_count, journal_total, private_count
from tests.floor.test_floor_privacy import old_private_visible
from tests.journal.scripted import play_round

SCHEMA = json.loads((Path(__file__).parents[2] / "docs" / "surveillance-event.schema.json").read_text())
BIG_WIN_CENTS = 2000
PASSWORDS = {"sam": "surveillance-pw", "ada": "auditor-pw", "rita": "regulator-pw"}
ROLES = {"sam": "surveillance", "ada": "auditor", "rita": "regulator"}
WAIT_S = 60.0

pytestmark = pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Debian's chromium is not installed")


def own_events(path: Path, table_id: str) -> Counter[tuple[str, int, str]]:
    """The significant events of a journal, read with sqlite3 by this test's own rules."""
    found: Counter[tuple[str, int, str]] = Counter()
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
        rows = db.execute("SELECT seq, kind, payload FROM journal ORDER BY seq").fetchall()
    simple = {"past_posting": "past_posting", "dead_hand": "dead_hand", "round_dead": "dead_round",
              "round_voided": "void", "security_event": "security"}  # fmt: skip
    for seq, kind, text in rows:
        payload = json.loads(text)
        if kind in simple:
            found[(table_id, seq, simple[kind])] += 1
        elif kind == "round_settled":
            for seat in payload["settlement"]["seats"]:
                if seat["net"] >= BIG_WIN_CENTS:
                    found[(table_id, seq, "big_win")] += 1
        elif kind == "seat_killed":
            found[(table_id, seq, "kill")] += 1
        elif kind == "difference_accepted":
            found[(table_id, seq, "override")] += 1
        elif kind == "fault_raised" and payload["kind"] not in ("past_posting", "dead_hand"):
            found[(table_id, seq, "alert")] += 1
    return found


class Rig:
    """Uplinks, the floor service and the panel on one event loop in a thread of their own."""

    def __init__(self, floor: EmbeddedFloor, tables: Tables) -> None:
        self.floor, self.tables = floor, tables
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.stop = asyncio.Event()
        self.tasks: list[Any] = []
        self.server: Any = None

    def call(self, work: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(work, self.loop).result(timeout=WAIT_S)

    async def _start(self, uplinks: bool, panel: bool) -> str:
        self.stop = asyncio.Event()
        if uplinks:
            for table_id in self.tables.ids:
                uplink = Uplink(self.floor.uplink_config(table_id), self.tables.path(table_id), table_id)
                self.tasks.append(asyncio.create_task(uplink.run(self.stop)))
        config = self.floor.floor_config(
            surveillance_big_win_cents=BIG_WIN_CENTS, surveillance_poll_interval_s=0.1
        )
        self.tasks.append(asyncio.create_task(FloorService(config).run(self.stop)))
        if not panel:
            return ""
        users = {name: FloorUser.with_password(name, ROLES[name], pw) for name, pw in PASSWORDS.items()}  # type: ignore[arg-type]
        settings = FloorPanelSettings(
            self.floor.reporting_dsn, self.floor.writer_dsn, users, surveillance_big_win_cents=BIG_WIN_CENTS
        )
        self.server = await serve_panel(settings, port=0)
        return str(self.server.url)

    def start(self, *, uplinks: bool, panel: bool) -> str:
        return str(self.call(self._start(uplinks, panel)))

    async def _close(self) -> None:
        self.stop.set()
        if self.server is not None:
            await self.server.stop()
            self.server = None
        await asyncio.wait_for(asyncio.gather(*self.tasks, return_exceptions=True), 30)
        self.tasks = []

    def close(self) -> None:
        self.call(self._close())

    def end(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=10)

    async def _stream(self) -> list[tuple[str, dict[str, Any]]]:
        """Every message of the stream SURVEILLANCE, read with the surveillance system's credentials."""
        client = await self.floor.connect_surveillance()
        try:
            js = client.jetstream(timeout=30)
            info = await js.stream_info("SURVEILLANCE")
            total = info.state.messages
            subscription = await js.pull_subscribe("surveillance.>", stream="SURVEILLANCE")
            out: list[tuple[str, dict[str, Any]]] = []
            while len(out) < total:
                for message in await subscription.fetch(min(500, total - len(out)), timeout=30):
                    out.append(((message.headers or {}).get("Nats-Msg-Id", ""), json.loads(message.data)))
                    await message.ack()
            return out
        finally:
            await client.close()

    def stream(self) -> list[tuple[str, dict[str, Any]]]:
        return list(self.call(self._stream()))


def _wait(predicate: Any, what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def _marks(floor: EmbeddedFloor) -> dict[str, int]:
    with psycopg.connect(floor.reporting_dsn) as connection:
        rows = connection.execute("SELECT table_id, last_seq FROM floor_surveillance_marks").fetchall()
    return {str(t): int(s) for t, s in rows}


def _login(browser: Browser, url: str, user: str) -> Page:
    context = browser.new_context(base_url=url)
    context.set_default_timeout(EXPECT_TIMEOUT_MS)
    page = context.new_page()
    page.goto("/login")
    page.fill("input[name=user]", user)
    page.fill("input[name=password]", PASSWORDS[user])
    page.click("button[type=submit]")
    expect(page.locator("h1")).to_have_text("Floor map")
    return page


def test_surveillance_events_reports_and_the_auditor(
    tmp_path: Path, make_floor: MakeFloor, browser: Browser, monkeypatch: pytest.MonkeyPatch
) -> None:
    ids = ["T1", "T2"]
    floor = make_floor(ids, ack_wait_s=2)
    tables = Tables(tmp_path / "tables", ids)
    rng = random.Random(6)
    for table_id, game in (("T1", "high-card-flush"), ("T2", "chase-the-flush")):
        journal = tables.journals[table_id]
        for number in range(1, 13):
            options: dict[str, Any] = {}
            if number in (2, 9):
                options["kill_request"] = True
            elif number == 4:
                options["outcome"] = "dead"  # the shoe's red light: a device alert and a dead round
            elif number == 6:
                options["outcome"] = "void"
            elif number == 7:
                options.update(past_post=True, accept_past_post=True)
            play_round(journal, rng, game=game, **options)
    expected = own_events(tables.path("T1"), "T1") + own_events(tables.path("T2"), "T2")
    assert {kind for _t, _s, kind in expected} >= {
        "big_win", "past_posting", "dead_hand", "dead_round", "void", "kill", "override", "alert"
    }  # fmt: skip
    heads = {t: tables.journals[t].last_entry().seq for t in ids}  # type: ignore[union-attr]

    # An older uplink (the gate before issue 22) sends the voided round's cards to the floor, which
    # holds them and shows them to nobody: what an auditor may ask to see.
    monkeypatch.setattr(TableState, "private_visible", old_private_visible)
    rig = Rig(floor, tables)
    try:
        rig.start(uplinks=True, panel=False)
        privates = expected_private_total(tables)
        _wait(lambda: floor_count(floor) == journal_total(tables), "every entry on the floor")
        _wait(lambda: _marks(floor) == heads, "the surveillance marks at every table's head")
        rig.close()
        monkeypatch.undo()
        assert privates > 0
        assert private_count(floor) < privates

        published = rig.stream()
        got = Counter((e["table_id"], e["seq"], e["type"]) for _id, e in published)
        assert got == expected
        assert len({msg_id for msg_id, _e in published}) == len(published)
        with sqlite3.connect(tables.path("T1")) as db:
            payloads = {seq: json.loads(text) for seq, text in db.execute("SELECT seq, payload FROM journal")}
            hashes = dict(db.execute("SELECT seq, hash FROM journal").fetchall())
        for msg_id, event in published:
            jsonschema.validate(event, SCHEMA)
            assert (
                msg_id
                == event["event_id"]
                == f"{event['table_id']}:{event['seq']}:{msg_id.rsplit(':', 1)[1]}"
            )
            if event["table_id"] != "T1":
                continue
            assert event["entry_hash"] == hashes[event["seq"]]  # the entry it is about, exactly
            payload = payloads[event["seq"]]
            if event["type"] == "past_posting":
                assert event["details"] == {
                    k: payload[k] for k in ("seat", "wager", "locked_cents", "seen_cents")
                }
            if event["type"] == "big_win":
                seat = next(
                    s for s in payload["settlement"]["seats"] if s["seat"] == event["details"]["seat"]
                )
                assert event["details"]["net_cents"] == seat["net"] >= BIG_WIN_CENTS

        # A crash after publishing, before the marks moved: everything is published again, and the
        # stream still holds each event once (its id is the entry's; the stream keeps the first).
        with psycopg.connect(floor.owner_dsn) as connection:
            connection.execute("DELETE FROM floor_surveillance_marks")
        url = rig.start(uplinks=False, panel=True)
        _wait(lambda: _marks(floor) == heads, "the marks back at every table's head")
        again = rig.stream()
        assert Counter((e["table_id"], e["seq"], e["type"]) for _id, e in again) == expected

        # The Surveillance page: the same events.
        sam = _login(browser, url, "sam")
        sam.goto("/surveillance")
        rows = sam.locator("#surveillance tbody tr")
        expect(rows).to_have_count(sum(expected.values()))
        for kind in ("big_win", "past_posting", "kill", "override", "void", "alert"):
            expect(sam.locator(f"#surveillance tr[data-type={kind}]").first).to_be_visible()
        sam.context.close()

        # The Reports page: printable, the CSV's digest on it.
        with psycopg.connect(floor.reporting_dsn) as connection:
            row = connection.execute("SELECT min(time_utc) FROM floor_entries").fetchone()
        assert row is not None
        first = row[0]
        day = (first - timedelta(hours=6)).date().isoformat()  # the gaming day it is in (06:00 UTC)
        rita = _login(browser, url, "rita")
        rita.goto(f"/reports?day={day}")
        digest = rita.locator("#report-digest").inner_text()
        answer = rita.request.get(f"/reports/csv?day={day}")
        assert answer.status == 200
        assert answer.headers["x-report-sha256"] == digest
        body, _, last = answer.text().rstrip("\n").rpartition("\n")
        assert (
            last == "# sha256," + hashlib.sha256((body + "\n").encode()).hexdigest() == "# sha256," + digest
        )
        floor_rows = [r for r in csv.DictReader(io.StringIO(body + "\n")) if r["scope"] == "floor"]
        kills = next(r["value"] for r in floor_rows if r["measure"] == "kills")
        expect(rita.locator("#report tr[data-key='floor:all'] td").nth(14)).to_have_text(kills)
        rita.emulate_media(media="print")
        expect(rita.locator("header")).to_be_hidden()
        expect(rita.locator("#report")).to_be_visible()
        rita.emulate_media(media="screen")

        # The regulator: no disclosure (403), nothing recorded.
        void_round = next(
            str(r) for (r,) in sqlite3.connect(tables.path("T1")).execute(
                "SELECT round_id FROM journal WHERE kind = 'round_voided'")
        )  # fmt: skip
        token = rita.evaluate("() => document.querySelector('input[name=csrf_token]').value")
        refused = rita.request.post(f"/tables/T1/rounds/{void_round}/disclose",
                                    form={"csrf_token": token, "reason": "curious"})  # fmt: skip
        assert refused.status == 403
        rita.context.close()

        # The auditor: read-only; a voided round's withheld parts only with a reason, recorded.
        ada = _login(browser, url, "ada")
        ada.goto("/alerts")
        expect(ada.locator("form[action$='/acknowledge']")).to_have_count(0)
        expect(ada.locator("form[action$='/release']")).to_have_count(0)
        token = ada.evaluate("() => document.querySelector('input[name=csrf_token]').value")
        assert ada.request.post("/alerts/1/acknowledge", form={"csrf_token": token}).status == 403
        ada.goto(f"/tables/T1/rounds/{void_round}")
        expect(ada.locator("#recall em", has_text="withheld").first).to_be_visible()
        expect(ada.locator(".disclosed")).to_have_count(0)
        ada.fill("#disclose-form input[name=reason]", "   ")
        ada.click("#disclose-form button[type=submit]")
        expect(ada.locator("#disclosure-message")).to_contain_text("a reason is required")
        expect(ada.locator(".disclosed")).to_have_count(0)
        ada.fill("#disclose-form input[name=reason]", "dispute 4411: the player's claim about seat 3")
        ada.click("#disclose-form button[type=submit]")
        expect(ada.locator("#disclosure-message")).to_contain_text("recorded")
        disclosed = ada.locator(".disclosed")
        expect(disclosed.first).to_be_visible()
        shown_parts = disclosed.count()
        assert shown_parts > 0
        ada.goto(f"/tables/T1/rounds/{void_round}")  # a reload: withheld again
        expect(ada.locator(".disclosed")).to_have_count(0)
        ada.context.close()
    finally:
        rig.close()
        rig.end()
        tables.close()

    with psycopg.connect(floor.reporting_dsn) as connection:
        records = connection.execute(
            "SELECT table_id, round_id, round_status, disclosed_to, role, reason, parts "
            "FROM floor_private_disclosures"
        ).fetchall()
    assert records == [
        (
            "T1",
            void_round,
            "void",
            "ada",
            "auditor",
            "dispute 4411: the player's claim about seat 3",
            shown_parts,
        )
    ]
    with psycopg.connect(floor.writer_dsn) as connection, pytest.raises(psycopg.errors.InsufficientPrivilege):
        connection.execute("DELETE FROM floor_private_disclosures")
    with psycopg.connect(floor.owner_dsn) as connection, pytest.raises(psycopg.errors.RaiseException):
        connection.execute("DELETE FROM floor_private_disclosures")  # append-only, even for its owner

"""The linked table's panel card end to end (docs/panel.md "The Progressive card", docs/floor.md
"Linked progressive"): a real `flushtable run` (a child process, simulated devices and players) with
``[uplink]`` and ``[progressive] link``, the floor service and the linked progressive in their own
process (`flushtable floor serve`) over the real nats-server and PostgreSQL, and the table's panel in
real headless Chromium. The card shows the link's live meter as the floor broadcasts it (it moves as
the daemon's rounds are counted), this table's pending award, and Confirm paid by a supervisor, which
the daemon sends to the floor: the floor records it paid once and the award leaves the card. When the
floor's progressive stops, the card says "link lost".

One part is not the table's own: the hit. A 7-card straight flush comes about once in millions of
hands, so the test makes the table's claim itself, on the table's own subject with the table's own NATS
credentials (the server lets nobody else), for a round the daemon settled with Progressive wagers, as
the daemon's engine claims a hit."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import psycopg
import pytest
from playwright.sync_api import Browser, expect, sync_playwright

from controller.floor.progressive import claim_subject
from controller.money import format_money
from controller.simulation import linked_floor as lf
from controller.simulation.floor.embedded import EmbeddedFloor
from controller.uplink.wire import table_inbox
from tests.chromium import CHROMIUM, launch_chromium
from tests.floor.conftest import MakeFloor
from tests.floor.helpers import write_linked_table
from tests.panel.conftest import PASSWORDS, _users

BOUND_S = 180.0  # the daemon's start, its TLS connects and the floor's counting, on a loaded machine

pytestmark = pytest.mark.skipif(
    not os.path.exists(CHROMIUM) and not os.environ.get("CI"),
    reason="Debian's chromium is not installed (make test installs it)",
)


@pytest.fixture
def browser() -> Iterator[Browser]:
    expect.set_options(timeout=int(BOUND_S * 1000))
    with sync_playwright() as playwright:
        launched = launch_chromium(playwright)
        yield launched
        launched.close()


def _wait(predicate: Callable[[], bool], what: str) -> None:
    """Until ``predicate()`` is true (bounded: a condition, never a window the test relies on)."""
    deadline = time.monotonic() + BOUND_S
    while not predicate():
        assert time.monotonic() < deadline, f"timed out after {BOUND_S} s waiting for {what}"
        time.sleep(0.1)


def _panel_url(log_path: Path) -> str | None:
    if not log_path.exists():
        return None
    for line in log_path.read_text(encoding="utf-8", errors="replace").splitlines():
        if '"panel_listening"' in line:
            return str(json.loads(line)["url"])
    return None


def _settled_with_wagers(journal_path: Path) -> tuple[str, int, int] | None:
    """A round the daemon settled with Progressive wagers and no hit of its own (so no claim of its own):
    (round, its settling entry, a seat with a wager)."""
    if not journal_path.exists():
        return None
    connection = sqlite3.connect(f"file:{journal_path}?mode=ro", uri=True)
    try:
        rows = connection.execute(
            "SELECT round_id, seq, payload FROM journal WHERE kind = 'round_settled' ORDER BY seq"
        ).fetchall()
    finally:
        connection.close()
    for round_id, seq, payload in rows:
        settlement = json.loads(payload).get("settlement", {})
        progressive = settlement.get("progressive")
        wagers = progressive.get("contributions", {}).get("wagers", 0) if isinstance(progressive, dict) else 0
        if wagers and isinstance(progressive, dict) and not progressive.get("awards"):  # no claim of its own
            for seat in settlement.get("seats", []):
                if "progressive" in seat.get("wagers", {}):
                    return str(round_id), int(seq), int(seat["seat"])
    return None


def _floor_one(floor: EmbeddedFloor, query: str, *args: object) -> object:
    with psycopg.connect(floor.reporting_dsn) as connection:
        row = connection.execute(query, args).fetchone()
    return None if row is None else row[0]


def test_the_daemons_linked_card_live_meter_pending_award_confirm_and_link_lost(
    tmp_path: Path, make_floor: MakeFloor, browser: Browser
) -> None:
    floor = make_floor(["SIM1"], ack_wait_s=2)
    journal_path = tmp_path / "var" / "journal.sqlite"
    users_path = tmp_path / "panel-users.json"
    _users(users_path)
    config_path, floor_file = write_linked_table(floor, tmp_path, journal_path, panel_users_file=users_path)
    floor_process = lf.FloorProcess(floor_file)
    floor_process.start()
    log_path = tmp_path / "daemon.log"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2]), "NOTIFY_SOCKET": ""}
    daemon = subprocess.Popen(
        [sys.executable, "-m", "controller.cli", "run", "--config", str(config_path), "--seed", "7",
         "--time-scale", "10", "--panel", "127.0.0.1:0", "--log-level", "info", "--log-file", str(log_path)],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        _wait(lambda: _panel_url(log_path) is not None or daemon.poll() is not None, "the daemon's panel")
        assert daemon.poll() is None, daemon.stderr.read() if daemon.stderr else ""
        url = _panel_url(log_path)
        assert url is not None
        context = browser.new_context(viewport={"width": 1280, "height": 900}, base_url=url)
        page = context.new_page()
        page.on("dialog", lambda dialog: dialog.accept())  # Confirm paid asks first
        page.goto("/login")
        page.fill("input[name=user]", "sam")
        page.fill("input[name=password]", PASSWORDS["sam"])
        page.click("button[type=submit]")
        card = page.locator("#progressive")
        expect(card.locator("#progressive-link-lost")).to_have_count(0)
        # The live meter: the base plus what the floor counted of the daemon's rounds, as it moves.
        digits = card.locator("#progressive-meter")
        expect(digits).to_have_text(re.compile(r"^1,0\d\d\.\d\d$"))
        first_shown = digits.inner_text()
        expect(digits).not_to_have_text(first_shown)  # the daemon plays on; the floor counts; it moves
        # A hit at this table: its claim, on its own subject with its own credentials.
        _wait(lambda: _settled_with_wagers(journal_path) is not None, "a round with Progressive wagers")
        found = _settled_with_wagers(journal_path)
        assert found is not None
        round_id, through_seq, seat = found
        with ThreadPoolExecutor(1) as pool:  # Playwright's sync API holds this thread's event loop
            answer = pool.submit(asyncio.run, _claim(floor, round_id, through_seq, seat)).result()
        assert answer["status"] == "recorded", answer
        (award,) = answer["awards"]
        award_id = str(award["award_id"])
        amount = format_money(int(str(award["amount_cents"])))
        row = card.locator(f'li[data-award="{award_id}"]')
        expect(row).to_contain_text(f"Seat {seat}")
        expect(row).to_contain_text(amount)
        row.get_by_role("button", name="Confirm paid").click()
        # The daemon sent it; the floor recorded it paid once, by the supervisor; it leaves the card.
        expect(row).to_have_count(0)
        paid = "SELECT count(*) FROM floor_progressive_events WHERE kind = 'progressive_award_paid' "
        assert _floor_one(floor, paid + "AND award_id = %s", award_id) == 1
        assert _floor_one(floor, "SELECT entry->>'by' FROM floor_progressive_events WHERE kind = "
                                 "'progressive_award_paid' AND award_id = %s", award_id) == "sam"  # fmt: skip
        # The floor's progressive stops: no broadcast within the link's bound, "link lost" on the card.
        floor_process.stop()
        expect(card.locator("#progressive-link-lost")).to_contain_text("progressive link lost")
        context.close()
    finally:
        daemon.send_signal(signal.SIGTERM)
        try:
            daemon.wait(timeout=BOUND_S)
        except subprocess.TimeoutExpired:
            daemon.kill()
            daemon.wait()
        floor_process.stop()


async def _claim(floor: EmbeddedFloor, round_id: str, through_seq: int, seat: int) -> dict[str, Any]:
    """The table's claim of a 7-card run at ``seat``, asked again while the floor says wait."""
    client = await floor.connect_as(
        "table-SIM1", floor.passwords["nats:table:SIM1"], inbox_prefix=table_inbox("SIM1")
    )
    body = json.dumps({"table_id": "SIM1", "round_id": round_id, "hits": [{"seat": seat, "run_length": 7}],
                       "through_seq": through_seq, "by": "engine"}).encode()  # fmt: skip
    try:
        deadline = time.monotonic() + BOUND_S
        while True:
            reply = json.loads((await client.request(claim_subject("L1", "SIM1"), body, timeout=30)).data)
            if reply.get("status") != "wait":
                return dict(reply)
            assert time.monotonic() < deadline, reply
            await asyncio.sleep(0.2)
    finally:
        await client.close()

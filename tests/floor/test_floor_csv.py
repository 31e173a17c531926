"""The floor panel's CSV downloads (docs/floor.md "CSV") over a real floor (nats-server, PostgreSQL, the
floor service and a table's uplink running) in real Chromium: a round's CSV is byte for byte the table's
own `flushtable recall --csv --round` (so a card is in it exactly where the table's recall shows one:
none of a dead round), holds no card the round's page does not show, an open round has none, the meters
CSV holds the meters page's rows in the CLI's columns, and a request without a login gets no CSV."""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

import psycopg
import pytest
from playwright.sync_api import Browser

from controller.cli import main
from controller.journal.render_csv import METERS_COLUMNS
from tests.chromium import CHROMIUM
from tests.floor.conftest import MakeFloor
from tests.floor.helpers import Tables
from tests.floor.test_floor_panel import FloorRig, _login, _wait_floor

CSV_CARD = re.compile(r"(?<![A-Za-z0-9])[2-9TJQKA][shdc](?![A-Za-z0-9])")
CARD_COLUMNS = ("dealer_cards", "community", "cards")

pytestmark = pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Debian's chromium is not installed")


def _cli_csv(path: Path, round_id: str, capsys: pytest.CaptureFixture[str]) -> str:
    capsys.readouterr()
    assert main(["recall", "--journal", str(path), "--csv", "--round", round_id]) == 0
    return capsys.readouterr().out


def test_floor_csv_of_rounds_and_meters(
    tmp_path: Path, make_floor: MakeFloor, browser: Browser, capsys: pytest.CaptureFixture[str]
) -> None:
    ids = ["T1", "T2"]
    floor = make_floor(ids, ack_wait_s=2)
    tables = Tables(tmp_path / "tables", ids)
    tables.play("T1", 2, kill_request=True)
    tables.play("T1", 1, outcome="dead")  # the shoe's red light: no card of it, ever
    tables.play("T2", 1)
    tables.play("T2", 1, outcome="open_mid_deal")  # cards dealt, not revealed: no CSV yet
    rig = FloorRig(floor, tables)
    try:
        _wait_floor(floor, tables)
        with psycopg.connect(floor.reporting_dsn) as connection:
            rounds = connection.execute(
                "SELECT table_id, round_id, status FROM floor_rounds ORDER BY table_id, started_utc"
            ).fetchall()
        assert {status for _t, _r, status in rounds} == {"settled", "dead", "in_progress"}
        page = _login(browser, rig.url, "rita")  # the regulator: reads everything
        seen_killed = 0
        for table_id, round_id, status in rounds:
            answer = page.request.get(f"/tables/{table_id}/rounds/{round_id}/csv")
            if status == "in_progress":
                assert answer.status == 409
                assert "text/csv" not in answer.headers["content-type"]
                continue
            assert answer.status == 200
            assert answer.headers["content-type"] == "text/csv; charset=utf-8"
            assert (
                answer.headers["content-disposition"]
                == f'attachment; filename="round-{table_id}-{round_id}.csv"'
            )
            text = answer.text()
            assert text == _cli_csv(tables.path(table_id), round_id, capsys)
            in_csv = {
                card
                for row in csv.DictReader(io.StringIO(text))
                for column in CARD_COLUMNS
                for card in CSV_CARD.findall(row[column])
            }
            shown = page.request.get(f"/tables/{table_id}/rounds/{round_id}").text()
            assert all(f"&#34;{card}&#34;" in shown or f'"{card}"' in shown for card in in_csv), round_id
            killed = [r for r in csv.DictReader(io.StringIO(text)) if r["seat_status"] == "dead"]
            assert all(r["cards"] == "" and r["hand"] == "" for r in killed)
            seen_killed += len({r["seat"] for r in killed}) if status == "settled" else 0
            if status == "dead":
                assert not in_csv
            else:
                assert in_csv

        assert seen_killed == 2  # T1's two settled rounds each had its last seat killed (a row a wager)
        # The meters page's rows, by table: every number of a row one line, in the CLI's columns.
        meters = page.request.get("/meters/csv?by=table")
        assert meters.status == 200
        assert meters.headers["content-disposition"] == 'attachment; filename="floor-meters-by-table.csv"'
        rows = list(csv.reader(io.StringIO(meters.text())))
        assert tuple(rows[0]) == METERS_COLUMNS
        assert {(meter, key) for meter, key, _v, _a in rows[1:]} >= {
            ("by_table.handle_cents", "T1"),
            ("by_table.house_win_cents", "T2"),
        }

        # The link on a round's page gives the file (Chromium's download).
        settled = next((t, r) for t, r, s in rounds if s == "settled")
        page.goto(f"/tables/{settled[0]}/rounds/{settled[1]}")
        with page.expect_download() as download_info:
            page.get_by_role("link", name="Download CSV").click()
        assert download_info.value.suggested_filename == f"round-{settled[0]}-{settled[1]}.csv"
        page.context.close()

        # Without a login: no CSV, the login page instead.
        context = browser.new_context(base_url=rig.url)
        for path in (f"/tables/{settled[0]}/rounds/{settled[1]}/csv", "/meters/csv"):
            anonymous = context.request.get(path, max_redirects=0)
            assert anonymous.status in (302, 303, 307, 401)
            assert "text/csv" not in anonymous.headers.get("content-type", "")
            assert "content-disposition" not in anonymous.headers
        context.close()
    finally:
        rig.close()
        tables.close()

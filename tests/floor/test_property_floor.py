"""The floor in the property's time and money ([property], controller/locale.py) over a real floor
(nats-server, PostgreSQL, the floor service and a table's uplink): the meters by shift and the
gaming-day report place each round by the property's zone, the shifts' bounds computed in Python and
given to SQL; the panel writes the report's period in the zone and the amounts in the currency.

The table's journal has an injected clock: a round at 04:30 UTC on 5 December 2026 (05:30 CET, Berlin's
grave shift of the 4th) and two at 05:30 UTC (06:30 CET, Berlin's day shift of the 5th). In UTC all
three are the grave shift of the 4th: the test cannot pass on UTC's shifts, whatever hour it runs."""

from __future__ import annotations

import asyncio
import csv
import io
from datetime import UTC, datetime
from pathlib import Path

import httpx
import psycopg

from controller.floor.gaming_day import read_floor_day
from controller.floor.panel import FloorPanelSettings, FloorUser, serve_panel
from controller.journal.store import Journal
from controller.locale import DEFAULT_PROPERTY, property_settings
from tests.floor.conftest import MakeFloor
from tests.floor.helpers import Tables
from tests.floor.test_floor_panel import FloorRig, _wait_floor
from tests.floor.test_floor_sessions import WAIT_S, login

BERLIN = property_settings(time_zone="Europe/Berlin", currency="EUR", currency_symbol="€")
PASSWORD = "manager-pw"


class StepClock:
    """The journal's wall clock, set by the test."""

    def __init__(self, moment: datetime) -> None:
        self.moment = moment

    def __call__(self) -> datetime:
        return self.moment


async def _panel_pages(reporting_dsn: str) -> tuple[str, str]:
    users = {"mo": FloorUser.with_password("mo", "manager", PASSWORD)}
    settings = FloorPanelSettings(reporting_dsn, None, users, property_settings=BERLIN)
    server = await serve_panel(settings, port=0)
    try:
        async with httpx.AsyncClient(base_url=server.url, timeout=WAIT_S) as client:
            await login(client, "mo", PASSWORD)
            meters = await client.get("/meters/csv?by=shift")
            assert meters.status_code == 200, meters.text
            report = await client.get("/reports?day=2026-12-05")
            assert report.status_code == 200, report.text
            return meters.text, report.text
    finally:
        await server.stop()


def test_the_floor_s_shifts_and_gaming_days_are_the_property_s(tmp_path: Path, make_floor: MakeFloor) -> None:
    floor = make_floor(["T1"], ack_wait_s=2)
    tables = Tables(tmp_path / "tables", ["T1"])
    clock = StepClock(datetime(2026, 12, 5, 4, 30, tzinfo=UTC))
    tables.journals["T1"].close()
    tables.journals["T1"] = Journal.open(tables.path("T1"), "T1", synchronous="OFF", clock=clock)
    tables.play("T1", 1)
    clock.moment = datetime(2026, 12, 5, 5, 30, tzinfo=UTC)
    tables.play("T1", 2)
    rig = FloorRig(floor, tables)
    try:
        _wait_floor(floor, tables)
        with psycopg.connect(floor.reporting_dsn) as connection:
            connection.read_only = True
            settled = {
                day: read_floor_day(connection, day, BERLIN).rows[0].figures
                for day in ("2026-12-04", "2026-12-05")
            }
            in_utc = read_floor_day(connection, "2026-12-04", DEFAULT_PROPERTY).rows[0].figures
        closed = {day: f.rounds_settled + f.rounds_dead + f.rounds_voided for day, f in settled.items()}
        assert closed == {"2026-12-04": 1, "2026-12-05": 2}
        assert in_utc.rounds_settled + in_utc.rounds_dead + in_utc.rounds_voided == 3
        meters_csv, report_html = asyncio.run(_panel_pages(floor.reporting_dsn))
        by_shift = {
            row["key"]: row
            for row in csv.DictReader(io.StringIO(meters_csv))
            if row["meter"] == "by_shift.handle_cents"
        }
        assert set(by_shift) == {"2026-12-04 grave", "2026-12-05 day"}, meters_csv
        assert all(row["amount"].startswith("€") for row in by_shift.values())
        # The report's period in the zone, named; its amounts in euros.
        assert "From 2026-12-05 06:00:00 CET to 2026-12-06 06:00:00 CET" in report_html
        assert "(the gaming day starts at 06:00, Europe/Berlin)" in report_html
        assert "€" in report_html
    finally:
        rig.close()
        tables.close()

"""Each table's clock on the floor (docs/floor.md "Clocks"): a table's clock_offset entries and its clock
alert stream over the real NATS JetStream into the real PostgreSQL, and the floor map shows the last
offset of every table, past its bound in words; the alert is on the floor's alerts page."""

from __future__ import annotations

import asyncio
from pathlib import Path

from controller.floor.panel import FloorPanelSettings, FloorUser, clock_text, serve_panel
from controller.floor.service import FloorService
from controller.journal.store import Journal
from controller.uplink.uplink import Uplink
from tests.floor.conftest import MakeFloor
from tests.floor.helpers import floor_count, wait_until
from tests.floor.test_floor_sessions import WAIT_S, login

PASSWORD = "manager-pw"
USERS = {"mo": FloorUser.with_password("mo", "manager", PASSWORD)}


def offset_entry(offset_us: int) -> dict[str, object]:
    return {
        "source": "sntp://10.0.0.1:123",
        "offset_us": offset_us,
        "delay_us": 200,
        "bound_us": 1_000_000,
        "within_bound": abs(offset_us) <= 1_000_000,
        "table_time_utc": "2026-12-05T04:00:00.000000Z",
    }


def write_journal(path: Path, table_id: str, offsets_us: list[int], *, alert: bool) -> int:
    with Journal.open(path, table_id) as journal:
        opened = {"game": "high-card-flush", "banking_mode": "house", "config_digest": "d", "by": "daemon"}
        journal.append("table_opened", opened, round_id=None, source="engine")
        for offset_us in offsets_us:
            journal.append("clock_offset", offset_entry(offset_us), round_id=None, source="clock")
        if alert:
            fault = {
                "fault_id": f"F{table_id}-000001",
                "kind": "clock",
                "severity": "alert",
                "reason": {
                    "code": "clock_offset",
                    "message": "the table's clock is 3.000 s ahead of the source",
                },
                "device": None,
                "by": "clock",
            }
            journal.append("fault_raised", fault, round_id=None, source="engine")
        last = journal.last_entry()
        assert last is not None
        return last.seq


def test_the_floor_map_shows_each_tables_clock_offset(tmp_path: Path, make_floor: MakeFloor) -> None:
    import httpx

    floor = make_floor(["T1", "T2", "T3"])
    paths = {table: tmp_path / f"{table}.sqlite" for table in ("T1", "T2", "T3")}
    totals = {
        "T1": write_journal(paths["T1"], "T1", [200, -3_000_000], alert=True),
        "T2": write_journal(paths["T2"], "T2", [-1_500_000, 42_000], alert=False),
        "T3": write_journal(paths["T3"], "T3", [], alert=False),
    }

    async def scenario() -> tuple[dict[str, dict[str, object]], str, str]:
        stop = asyncio.Event()
        service = asyncio.create_task(FloorService(floor.floor_config()).run(stop))
        uplinks = [
            asyncio.create_task(Uplink(floor.uplink_config(table), path, table).run(stop))
            for table, path in paths.items()
        ]

        async def all_there() -> bool:
            return floor_count(floor) == sum(totals.values())

        await wait_until(all_there, 60, "the three journals on the floor")
        stop.set()
        await asyncio.gather(service, *uplinks)
        server = await serve_panel(FloorPanelSettings(floor.reporting_dsn, None, USERS), port=0)
        client = httpx.AsyncClient(base_url=server.url, timeout=WAIT_S)
        try:
            await login(client, "mo", PASSWORD)
            tables = {t["table_id"]: t for t in (await client.get("/api/floor")).json()}
            page = (await client.get("/")).text
            alerts = (await client.get("/alerts")).text
        finally:
            await client.aclose()
            await server.stop()
        return tables, page, alerts

    tables, page, alerts = asyncio.run(scenario())
    assert (tables["T1"]["clock_offset_us"], tables["T1"]["clock_within_bound"]) == (-3_000_000, False)
    assert (tables["T2"]["clock_offset_us"], tables["T2"]["clock_within_bound"]) == (42_000, True)
    assert tables["T3"]["clock_offset_us"] is None
    assert [clock_text(tables[t]) for t in ("T1", "T2", "T3")] == [
        "clock -3.000 s PAST BOUND",
        "clock +0.042 s",
        "clock: not measured",
    ]
    for words in ("clock -3.000 s PAST BOUND", "clock +0.042 s", "clock: not measured"):
        assert words in page
    assert "clock is 3.000 s ahead of the source" in alerts  # the table's alert reached the floor

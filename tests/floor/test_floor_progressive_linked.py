"""The floor's progressive reconciliation over a running linked progressive (the link's own simulated
tables, controller/simulation/linked_tables.py: real journals, uplinks and link clients; the floor
process, nats-server and PostgreSQL real): every table's shift agrees, journals against the link's
in-meter, to the cent — a reconciliation that never cries wolf over a link that keeps its books, with
hits forced and the link's contribution path running as it runs (no alert while it catches up)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import psycopg

from controller.floor import progressive_view
from controller.simulation.linked_floor import LINK_ID, Scenario, run_scenario
from tests.floor.conftest import MakeFloor
from tests.floor.helpers import table_ids

TEN_YEARS_S = 10 * 366 * 86400.0  # the simulated tables' rounds carry a fixed date: all of them


def test_a_running_link_reconciles_with_its_tables_journals(tmp_path: Path, make_floor: MakeFloor) -> None:
    floor = make_floor(table_ids(3), ack_wait_s=2)
    scenario = Scenario(tables=3, rounds=60, several_every=17, pair_every=23, kills=False, timeout_s=120)
    outcome = asyncio.run(run_scenario(tmp_path, floor, scenario))
    assert outcome["problems"] == [], outcome

    async def reconcile() -> tuple[dict[str, Any] | None, int]:
        async def query(sql: str, params: progressive_view.Params = ()) -> list[dict[str, Any]]:
            async with await psycopg.AsyncConnection.connect(floor.reporting_dsn) as connection:
                cursor = await connection.execute(sql.encode(), params)
                names = [d.name for d in cursor.description or []]
                return [dict(zip(names, row, strict=True)) for row in await cursor.fetchall()]

        detail = await progressive_view.link_detail(query, LINK_ID, window_s=TEN_YEARS_S)
        async with await psycopg.AsyncConnection.connect(floor.writer_dsn, autocommit=True) as writer:
            raised = await progressive_view.raise_reconciliation_alerts(writer, window_s=TEN_YEARS_S)
        return detail, raised

    detail, raised = asyncio.run(reconcile())
    assert detail is not None
    rows = detail["reconciliation"]
    assert {r["table_id"] for r in rows} == set(table_ids(3))
    assert detail["differences"] == [], detail["differences"]
    assert raised == 0
    journal = sum(r["journal_cents"] for r in rows)
    assert journal == sum(r["controller_cents"] for r in rows) == detail["meters"]["in_meter_cents"] > 0
    assert sum(r["rounds"] for r in rows) >= scenario.rounds
    assert detail["equations_hold"] is True
    with psycopg.connect(floor.reporting_dsn) as connection:
        alerts = connection.execute(
            "SELECT count(*) FROM floor_alerts WHERE kind = %s", (progressive_view.RECONCILE_ALERT_KIND,)
        ).fetchone()
    assert alerts == (0,)

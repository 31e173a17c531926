"""The floor's progressive reconciliation over the real pipeline: a Top Flush table's engine takes
Progressive wagers and writes its real journal (SQLite), its uplink sends it over a real nats-server,
the floor service writes it to PostgreSQL, and the floor's link (controller/floor/progressive.py)
counts each settled round from the ``round_settled`` entries it finds there. The journals' locks, read by
the reconciliation from the ``bets_locked`` entries as the engine wrote them, agree with the link's
in-meter to the cent: no difference, no alert."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import psycopg

from controller.engine import JournalRecord, TableConfig
from controller.floor import progressive_view
from controller.floor.progressive import Link, LinkConfig, LinkedStatus
from controller.floor.service import FloorService
from controller.journal.store import Journal
from controller.uplink.uplink import Uplink
from drivers.events import BetChanged
from tests.engine.table import Table, stack
from tests.floor.conftest import MakeFloor
from tests.floor.helpers import wait_until
from tests.progressive.test_table_progressive import (
    DEALER,
    NOTHING,
    NOTHING_2,
    NOTHING_3,
    PARAMETERS,
    PROGRESSIVE_SPOT,
    play,
)


def _journal(table: Table, journal: Journal, flushed: int) -> int:
    """Append the engine's journal records since ``flushed`` to the real journal (the shell's job)."""
    for output in table.outputs[flushed:]:
        if isinstance(output, JournalRecord):
            journal.append(output.kind, output.payload, round_id=output.round_id, source=output.source)
    return len(table.outputs)


def test_the_engine_s_journal_and_the_link_s_in_meter_agree(tmp_path: Path, make_floor: MakeFloor) -> None:
    floor = make_floor(["T1"])
    journal = Journal.open(tmp_path / "T1.sqlite", "T1")
    table = Table(
        TableConfig(game="top-flush", progressive=PARAMETERS), stack(NOTHING, NOTHING_2, NOTHING_3, DEALER)
    )
    play(table, {1: 100, 2: 100, 3: 100})
    flushed = _journal(table, journal, 0)
    table.key("next")
    for seat in (1, 2, 3):  # the dealer collects and pays: the felt is clear
        for spot in range(PROGRESSIVE_SPOT + 1):
            table.event(BetChanged("sensors", seat, spot, 0, 0, False))
    table.deck = stack(NOTHING_2, NOTHING, NOTHING_3, DEALER)
    table.next_card = 0
    play(table, {2: 100})
    _journal(table, journal, flushed)
    last = journal.last_entry()
    assert last is not None
    kinds = [entry.kind for entry in journal.entries()]
    assert kinds.count("bets_locked") == 2
    assert kinds.count("round_settled") == 2

    async def scenario() -> None:
        stop = asyncio.Event()
        tasks = [
            asyncio.create_task(Uplink(floor.uplink_config("T1"), tmp_path / "T1.sqlite", "T1").run(stop)),
            asyncio.create_task(FloorService(floor.floor_config(reconcile_interval_s=0.2)).run(stop)),
        ]
        try:

            async def on_the_floor() -> bool:
                with psycopg.connect(floor.reporting_dsn) as connection:
                    row = connection.execute(
                        "SELECT max(seq) FROM floor_entries WHERE table_id = 'T1'"
                    ).fetchone()
                return row is not None and row[0] == last.seq

            await wait_until(on_the_floor, 60, "the table's journal on the floor")
        finally:
            stop.set()
            await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), 30)

    asyncio.run(scenario())
    journal.close()

    # The floor's link counts each settled round from the floor's round_settled entries.
    with psycopg.connect(floor.writer_dsn, autocommit=True) as connection:
        link = Link(LinkConfig("L1", ("T1",), PARAMETERS), connection)
        assert link.pump(LinkedStatus()) == 2
        link.store.publish_state(link.controller.meter_now())

    async def reconcile() -> tuple[dict[str, Any] | None, int]:
        async def query(sql: str, params: progressive_view.Params = ()) -> list[dict[str, Any]]:
            async with await psycopg.AsyncConnection.connect(floor.reporting_dsn) as connection:
                cursor = await connection.execute(sql.encode(), params)
                names = [d.name for d in cursor.description or []]
                return [dict(zip(names, row, strict=True)) for row in await cursor.fetchall()]

        detail = await progressive_view.link_detail(query, "L1")
        async with await psycopg.AsyncConnection.connect(floor.writer_dsn, autocommit=True) as writer:
            raised = await progressive_view.raise_reconciliation_alerts(writer)
        return detail, raised

    detail, raised = asyncio.run(reconcile())
    assert detail is not None
    assert [(r["table_id"], r["rounds"], r["locked_cents"], r["journal_cents"], r["controller_cents"])
            for r in detail["reconciliation"]] == [("T1", 2, 400, 400, 400)]  # fmt: skip
    assert detail["differences"] == []
    assert raised == 0
    assert (detail["meters"]["in_meter_cents"], detail["meters"]["wagers"]) == (400, 4)
    assert [(t["table_id"], int(t["wagers"])) for t in detail["tables"]] == [("T1", 4)]

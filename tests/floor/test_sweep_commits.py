"""The floor service keeps committing after an idle sweep (real servers). The sweep used to read
PostgreSQL outside a transaction block, which left a transaction open on the service's connection: every
later batch's block was then only a savepoint inside it, so nothing after the first sweep was committed,
though it was acked (found while testing the release of a quarantined table)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from controller.floor.service import FloorService
from tests.floor.conftest import MakeFloor
from tests.floor.helpers import Running, Tables, floor_count, floor_problems, journal_total, wait_until


def test_entries_after_an_idle_sweep_are_committed(tmp_path: Path, make_floor: MakeFloor) -> None:
    ids = ["SW1", "SW2"]
    floor = make_floor(ids, ack_wait_s=2)
    tables = Tables(tmp_path / "tables", ids)
    for table_id in ids:
        tables.play(table_id, 1)

    async def scenario() -> None:
        running = Running(floor, tables)
        running.start_uplinks()
        service = FloorService(floor.floor_config(sweep_interval_s=0.05, fetch_timeout_s=0.1))
        running.tasks.append(asyncio.create_task(service.run(running.stop)))

        async def all_there() -> bool:
            return floor_count(floor) == journal_total(tables)

        await wait_until(all_there, 60, "the first round on the floor")

        async def swept_twice() -> bool:
            return service.status.sweeps >= 2

        await wait_until(swept_twice, 60, "two idle sweeps")
        for table_id in ids:
            tables.play(table_id, 1)
            running.uplinks[table_id].notify()
        # Seen from another connection: committed, not only acked.
        await wait_until(all_there, 60, "the rounds played after the sweeps on the floor")
        await running.close()

    asyncio.run(scenario())
    assert floor_problems(floor, tables) == []
    tables.close()

"""The floor service commits each batch before it acks it, also after an idle sweep: the sweep's read
once left a PostgreSQL transaction open, so every later batch was a savepoint inside it, acked and
never committed (lost when the connection closed). Real nats-server and PostgreSQL; no mock."""

from __future__ import annotations

import asyncio
from pathlib import Path

from controller.floor.service import FloorService
from tests.floor.conftest import MakeFloor
from tests.floor.helpers import (
    Running,
    Tables,
    expected_private_total,
    floor_count,
    floor_problems,
    journal_total,
    private_count,
    wait_until,
)


def test_batches_after_an_idle_sweep_are_committed(tmp_path: Path, make_floor: MakeFloor) -> None:
    floor = make_floor(["T1", "T2"])
    tables = Tables(tmp_path / "tables", ["T1", "T2"])
    for table_id in tables.ids:
        tables.play(table_id, 1)

    async def scenario() -> None:
        running = Running(floor, tables)
        running.start_uplinks()
        service = FloorService(floor.floor_config(sweep_interval_s=0.2))
        running.tasks.append(asyncio.create_task(service.run(running.stop)))

        async def all_there() -> bool:
            # Read through another connection: only what the service committed is seen.
            privates = expected_private_total(tables)
            return floor_count(floor) == journal_total(tables) and private_count(floor) == privates

        await wait_until(all_there, 60, "the first round on the floor")
        sweeps = service.status.sweeps

        async def swept() -> bool:
            return service.status.sweeps > sweeps

        await wait_until(swept, 30, "an idle sweep")
        for table_id in tables.ids:
            tables.play(table_id, 1)
            running.uplinks[table_id].notify()
        await wait_until(all_there, 60, "the second round committed on the floor")
        await running.close()

    asyncio.run(scenario())
    assert floor_problems(floor, tables) == []
    tables.close()

"""The floor on a three-node JetStream cluster (controller/simulation/floor/cluster.py; docs/floor.md
"A JetStream cluster"): the stream R3, the uplinks and the floor service given every node's URL. One
node killed (SIGKILL) mid-stream, the one leading the stream: the floor keeps committing on the other
two, and after the node is back every journal entry is on the floor exactly once, every chain verified."""

from __future__ import annotations

import asyncio
from pathlib import Path

from controller.floor.service import FloorService
from tests.floor.conftest import MakeFloor
from tests.floor.helpers import (
    Running,
    Tables,
    floor_count,
    floor_problems,
    stream_leader,
    table_ids,
    wait_until,
)
from tests.floor.test_failures import CATCH_UP_TIMEOUT_S, _all_on_floor, _play_all, _play_past


def test_a_node_killed_mid_stream_loses_nothing_and_doubles_nothing(
    tmp_path: Path, make_floor: MakeFloor
) -> None:
    ids = table_ids(20)
    floor = make_floor(ids, ack_wait_s=2, nodes=3)
    assert floor.cluster is not None
    cluster = floor.cluster
    tables = Tables(tmp_path / "tables", ids)
    for table_id in ids:
        tables.play(table_id, 1)

    async def scenario() -> None:
        leader, info = await stream_leader(floor)
        assert info.config.num_replicas == 3
        running = Running(floor, tables)
        running.start_uplinks(backoff_max_s=1.0)
        service = FloorService(floor.floor_config(backoff_max_s=1.0))
        running.tasks.append(asyncio.create_task(service.run(running.stop)))

        async def some_on_floor() -> bool:
            return floor_count(floor) > 0

        await wait_until(some_on_floor, 120, "the first entries on the floor")
        # The tables play on; the stream's leader is killed while they do (a third of the way through
        # what they play, on the floor's own count: mid-stream whatever the machine's load).
        playing = asyncio.create_task(
            asyncio.to_thread(_play_all, tables, running, 4, asyncio.get_running_loop())
        )
        before = floor_count(floor)

        async def moving() -> bool:
            return floor_count(floor) > before + 200

        await wait_until(moving, CATCH_UP_TIMEOUT_S, "the floor committing the tables' new rounds")
        cluster.kill(leader)
        at_kill = floor_count(floor)
        await playing
        # Rounds played after the kill until the journals hold more than the wait below asks for: its
        # commits are then certain to exist. On a loaded machine the floor could have caught up on all
        # the tables played before the kill, and a wait on commits beyond the kill's count never ended
        # (as tests/floor/test_workers.py's in CI).
        await asyncio.to_thread(_play_past, tables, running, at_kill + 100, asyncio.get_running_loop())

        async def moving_without_it() -> bool:
            return floor_count(floor) > at_kill + 100

        # Nothing stops: the other two nodes elect new leaders and the floor commits on.
        await wait_until(moving_without_it, CATCH_UP_TIMEOUT_S, "the floor committing with a node down")
        cluster.start_node(leader)
        for uplink in running.uplinks.values():
            uplink.notify()
        await _all_on_floor(floor, tables, CATCH_UP_TIMEOUT_S)
        assert sum(u.status.reconnects for u in running.uplinks.values()) >= 1
        await running.close()

    asyncio.run(scenario())
    assert floor_problems(floor, tables) == []
    tables.close()

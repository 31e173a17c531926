"""An uplink through the stream's leader election (controller/uplink/wire.py STREAM_ELECTION_WAIT_S;
docs/floor.md "A node's loss, decomposed"): on the three-node cluster the node leading the stream is
SIGKILLed while a table's uplink is connected to another node. Its next publishes are answered "no
responders" until the two others elect a leader (nats-server's election, 4-9 s); the uplink publishes
again on the same connection, without ending it, and its table's round is acked once the stream has a
leader again."""

from __future__ import annotations

import asyncio
from pathlib import Path

from controller.config import UplinkConfig
from controller.uplink.uplink import Uplink
from tests.floor.conftest import MakeFloor
from tests.floor.helpers import Tables, last_seq, stream_leader, table_ids, wait_until

# Bounds of the waits below, far above what each takes on a quiet machine (the first ack: a second; the
# election: 4-9 s; a route's close after a SIGKILL: at once): conditions waited for, not durations.
ACKED_BOUND_S = 120.0
ROUTE_CLOSED_BOUND_S = 30.0


def test_an_uplink_waits_out_the_streams_election_on_its_own_connection(
    tmp_path: Path, make_floor: MakeFloor
) -> None:
    ids = table_ids(1)
    table_id = ids[0]
    floor = make_floor(ids, nodes=3)
    assert floor.cluster is not None
    cluster = floor.cluster
    tables = Tables(tmp_path / "tables", ids)
    tables.play(table_id, 1)

    async def scenario() -> None:
        leader, _info = await stream_leader(floor)
        survivor = cluster.nodes[(leader + 1) % cluster.size]
        # Given the survivor's URL alone: the kill does not end its connection, so any reconnection
        # below is the uplink's own doing.
        given = floor.uplink_config(table_id)
        config = UplinkConfig(
            (survivor.url,), given.site, given.user, given.password, given.ca_file, stream=given.stream
        )
        uplink = Uplink(config, tables.path(table_id), table_id)
        stop = asyncio.Event()
        running = asyncio.create_task(uplink.run(stop))

        async def all_acked() -> bool:
            return uplink.status.acked.entry_seq == last_seq(tables.journals[table_id])

        try:
            await wait_until(all_acked, ACKED_BOUND_S, "the first round acked")
            killed_name = cluster.nodes[leader].server_name
            cluster.kill(leader)

            async def route_closed() -> bool:
                return killed_name not in await asyncio.to_thread(survivor.routed_to)

            # A publish routed to the dead node before the survivor dropped its route would wait out its
            # ack's timeout: another error than the election's "no responders".
            await wait_until(
                route_closed, ROUTE_CLOSED_BOUND_S, "the survivor's route to the killed node closed"
            )
            tables.play(table_id, 1)
            uplink.notify()
            await wait_until(all_acked, ACKED_BOUND_S, "the second round acked after the stream's election")
            assert uplink.status.reconnects == 0, uplink.status.last_error
            assert uplink.status.unavailable >= 1  # the election was met: "no responders", published again
        finally:
            stop.set()
            await asyncio.wait_for(running, 30)
            tables.close()

    asyncio.run(scenario())

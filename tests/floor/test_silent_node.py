"""A node that goes silent with its sockets open (its machine's power or network lost: SIGSTOP here,
where SIGKILL resets every socket at once) is noticed by the floor's and the uplinks' connections within
seconds, by their own pings (docs/floor.md "A JetStream cluster: no single broker", the clients' pings).
With nats-py's defaults (a ping every 120 s, two unanswered allowed) a floor service kept pulling on
such a node for minutes. Real three-node cluster; the connections made as the floor's processes and the
uplink make theirs."""

from __future__ import annotations

import asyncio
import signal
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import nats
from nats.aio.client import Client

from controller.floor.service_settings import floor_nats_options
from controller.simulation.floor.embedded import EmbeddedFloor
from controller.uplink.uplink import Uplink
from tests.floor.conftest import MakeFloor
from tests.floor.helpers import Tables, table_ids

# What the test allows a connection to notice a silent node: the pings' bound (NATS_PING_INTERVAL_S x
# (NATS_MAX_OUTSTANDING_PINGS + 1) = 4 s) and a loaded machine's margin; nats-py's defaults take 360 s.
NOTICED_WITHIN_S = 20.0


async def _noticed_s(floor: EmbeddedFloor, connect: Callable[[], Awaitable[Client]]) -> float:
    """SIGSTOP the node ``connect``'s connection is on; how long until that connection is closed."""
    assert floor.cluster is not None
    client = await connect()
    stopped = None
    try:
        url = client.connected_url
        assert url is not None
        stopped = next(n for n in floor.cluster.nodes if n.port == url.port)
        assert stopped.process is not None
        stopped.process.send_signal(signal.SIGSTOP)
        stopped_s = time.monotonic()
        while not client.is_closed:
            if time.monotonic() - stopped_s > NOTICED_WITHIN_S:
                raise AssertionError(
                    f"still connected to the silent node {NOTICED_WITHIN_S} s after it stopped"
                )
            await asyncio.sleep(0.1)  # a poll of the client's state, bounded above
        return time.monotonic() - stopped_s
    finally:
        if stopped is not None and stopped.process is not None:
            stopped.process.send_signal(signal.SIGCONT)
        await client.close()


def test_a_silent_node_is_noticed_by_the_floors_and_the_uplinks_connections(
    tmp_path: Path, make_floor: MakeFloor
) -> None:
    """The floor's connection (``floor_nats_options``, as the service, the workers and the progressive
    connect) and an uplink's: each one's node SIGSTOPped; each connection is closed within
    NOTICED_WITHIN_S (printed), so its loop connects again to a live node. Before the clients' ping
    settings: `still connected to the silent node 20.0 s after it stopped`."""
    ids = table_ids(1)
    floor = make_floor(ids, nodes=3)
    tables = Tables(tmp_path / "tables", ids)
    uplink = Uplink(floor.uplink_config(ids[0]), tables.path(ids[0]), ids[0])

    async def scenario() -> None:
        floor_s = await _noticed_s(
            floor, lambda: _connect(floor_nats_options(floor.floor_config(), "flushtable-floor"))
        )
        uplink_s = await _noticed_s(floor, uplink._connect)
        print(f"silent node noticed: the floor's connection {floor_s:.1f} s, an uplink's {uplink_s:.1f} s")

    asyncio.run(scenario())
    tables.close()


async def _connect(options: dict[str, Any]) -> Client:
    return await nats.connect(**options)

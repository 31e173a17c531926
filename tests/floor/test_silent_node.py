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
from tests.floor.helpers import Tables, stream_leader, table_ids

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


# What the test allows the cluster's nodes to drop their routes to a silent peer: five times the routes'
# pings' own bound ((ping_max + 1) x ping_interval = 4 s, ClusterRoutes.silent_peer_dropped_within_s),
# for a loaded machine. nats-server's defaults (a ping every 30 s on a route, 2 unanswered) take 60-90 s
# on routes as quiet as this test's.
ROUTE_BOUND_FACTOR = 5
# Bounded waits for the cluster's own state (its routes formed, formed again after the SIGCONT).
ROUTES_FORMED_WITHIN_S = 60.0


def _wait_routes(floor: EmbeddedFloor, expected: dict[int, set[str]], within_s: float, what: str) -> float:
    """Poll the nodes' /routez until each node in ``expected`` routes to exactly those peers; the seconds
    it took, or AssertionError after ``within_s`` with what each node reported last."""
    assert floor.cluster is not None
    started_s = time.monotonic()
    seen: dict[int, set[str]] = {}
    while True:
        try:
            seen = {i: set(floor.cluster.nodes[i].routed_to()) for i in expected}
        except OSError as error:  # a node just SIGCONTed may not answer its monitoring yet
            seen = {-1: {f"{type(error).__name__}: {error}"}}
        if seen == expected:
            return time.monotonic() - started_s
        if time.monotonic() - started_s > within_s:
            raise AssertionError(f"{what}: not within {within_s:.0f} s; the nodes' /routez: {seen}")
        time.sleep(0.1)  # a poll of the servers' own state, bounded above


def test_the_cluster_drops_its_routes_to_a_silent_node_within_its_route_pings(
    make_floor: MakeFloor,
) -> None:
    """The node leading the stream SIGSTOPped (silent, its sockets open): the other two nodes' own
    /routez show the routes to it gone within ROUTE_BOUND_FACTOR x the routes' pings' bound, closed by
    those pings (their logs: `Stale Connection`), while they keep routing to each other; after SIGCONT
    the three route to each other again. Before the routes' ping settings (nats-server's 30 s and 2):
    `routes to the silent node dropped: not within 20 s`."""
    floor = make_floor(table_ids(1), nodes=3)
    assert floor.cluster is not None
    nodes = floor.cluster.nodes
    names = [str(node.server_name) for node in nodes]
    routes = nodes[0].cluster
    assert routes is not None
    bound_s = ROUTE_BOUND_FACTOR * routes.silent_peer_dropped_within_s
    everyone = {i: {n for n in names if n != names[i]} for i in range(len(nodes))}
    _wait_routes(floor, everyone, ROUTES_FORMED_WITHIN_S, "the cluster's routes formed")

    silent, _ = asyncio.run(stream_leader(floor))
    others = [i for i in range(len(nodes)) if i != silent]
    process = nodes[silent].process
    assert process is not None
    logs_before = {i: _log_size(nodes[i].directory / "nats.log") for i in others}
    process.send_signal(signal.SIGSTOP)
    try:
        dropped_s = _wait_routes(
            floor,
            {i: {names[j] for j in others if j != i} for i in others},
            bound_s,
            "routes to the silent node dropped",
        )
        print(f"routes to the silent node dropped after {dropped_s:.1f} s (bound {bound_s:.0f} s)")
        # Closed by the routes' pings (not by a write deadline or a reset: the node is silent).
        for i in others:
            log = (nodes[i].directory / "nats.log").read_bytes()[logs_before[i] :].decode(errors="replace")
            assert "Stale Connection" in log, f"{names[i]}'s log since the stop: {log[-2000:]}"
    finally:
        process.send_signal(signal.SIGCONT)
    _wait_routes(floor, everyone, ROUTES_FORMED_WITHIN_S, "the routes back after SIGCONT")


def _log_size(path: Path) -> int:
    return path.stat().st_size if path.exists() else 0

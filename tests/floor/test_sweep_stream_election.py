"""The idle sweep while the stream has no leader (controller/floor/sweep.py ``sweep``; docs/floor.md
"Tenth stop"): a service that does not know a table's site asks the stream's info for its subjects
(``StreamReads.learn_sites``), which only the stream's leader answers. Inside the stream's election that
request was never answered, and nats-py's 5 s timeout ended the service's connection (a `floor_retry`
raised in the consume loop, a reconnection and a backoff after the election). Now it waits
STREAM_INFO_TIMEOUT_S, the sweep is skipped on the same connection, and asked again at the next idle
turn; and the sites, not learnt, are asked again then (they were marked learnt before the request).

Real three-node cluster and PostgreSQL. The stream is kept leaderless for as long as the test needs
(tests/floor/test_service_stream_election.py): two nodes killed, the third kept, one that leads the
floor's consumer (so the consumer's info, which gates the sweep, is answered) and not the stream. The
sweep is the service's own (its ``IdleSweep``, its stream reads), called as its consume loop calls it
at an idle turn, on a connection to the kept node."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from pathlib import Path

import psycopg
import structlog.testing

from controller.floor.service import FloorService
from controller.simulation.floor.embedded import EmbeddedFloor
from controller.simulation.floor.nats_server import NatsServer
from controller.uplink.wire import FLOOR_CONSUMER, FLOOR_INBOX, STREAM_NAME
from tests.floor.conftest import MakeFloor
from tests.floor.helpers import Tables, all_sent_and_acked, floor_count, journal_total, table_ids, wait_until

ACKED_BOUND_S = 120.0
COMMITTED_BOUND_S = 180.0
MOVED_BOUND_S = 60.0
ELECTED_BOUND_S = 120.0
ANSWER_TIMEOUT_S = 10.0


def test_the_sweep_inside_a_stream_election_keeps_the_connection_and_learns_the_sites_later(
    tmp_path: Path, make_floor: MakeFloor
) -> None:
    """A service that started after the floor held every table (it knows no table's site) sweeps while
    the stream has no leader: the sweep returns, skipped, and the connection is kept. Once a node is
    back and the stream has a leader, the next sweep learns every table's site and completes. Before:
    the sweep raised nats-py's ``TimeoutError`` after 5 s (the service's connection ended there)."""
    ids = table_ids(3)
    floor = make_floor(ids, nodes=3)
    assert floor.cluster is not None
    cluster = floor.cluster
    tables = Tables.played(tmp_path / "tables", ids)

    async def scenario() -> None:
        await _every_entry_on_the_floor(floor, tables)
        kept = await _consumer_leader_apart_from_the_streams(floor)
        config = dataclasses.replace(floor.floor_config(), servers=(kept.url,))
        service = FloorService(config)  # a new service: it knows no table's site
        for index, node in enumerate(cluster.nodes):
            if node is not kept:
                cluster.kill(index)
        client = await floor.connect_as(
            config.user, config.password, inbox_prefix=FLOOR_INBOX, server=kept.url
        )
        connection = await psycopg.AsyncConnection.connect(config.dsn, autocommit=True)
        try:
            service._reads.js = client.jetstream()  # as the service's connection sets it
            with structlog.testing.capture_logs() as logs:
                await service._sweep.if_idle(client, connection)
            assert [e["event"] for e in logs if e["event"] == "floor_sweep_unanswered"] == [
                "floor_sweep_unanswered"
            ]
            assert client.is_connected
            assert service.status.sweeps == 0
            assert service.site_of == {}
            cluster.start_node(next(i for i, node in enumerate(cluster.nodes) if node is not kept))

            async def swept() -> bool:
                await service._sweep.if_idle(client, connection)
                return service.status.sweeps == 1

            await wait_until(swept, ELECTED_BOUND_S, "a sweep once the stream has a leader")
            assert set(service.site_of) == set(ids)
        finally:
            await connection.close()
            await client.close()
            tables.close()

    asyncio.run(scenario())


async def _every_entry_on_the_floor(floor: EmbeddedFloor, tables: Tables) -> None:
    """The tables' rounds sent, and committed by a floor service, then that service stopped with every
    delivery acked: the consumer has nothing pending (its info lets the sweep run)."""
    await all_sent_and_acked(floor, tables, ACKED_BOUND_S)
    stop = asyncio.Event()
    task = asyncio.create_task(FloorService(floor.floor_config()).run(stop))
    try:

        async def all_committed() -> bool:
            return floor_count(floor) == journal_total(tables)

        await wait_until(all_committed, COMMITTED_BOUND_S, "every entry on the floor")
        admin = await floor.connect_admin()
        try:

            async def nothing_pending() -> bool:
                info = await admin.jetstream(timeout=ANSWER_TIMEOUT_S).consumer_info(
                    STREAM_NAME, FLOOR_CONSUMER
                )
                return not info.num_pending and not info.num_ack_pending

            await wait_until(nothing_pending, COMMITTED_BOUND_S, "every delivery acked")
        finally:
            await admin.close()
    finally:
        stop.set()
        await asyncio.wait_for(task, 30)


async def _consumer_leader_apart_from_the_streams(floor: EmbeddedFloor) -> NatsServer:
    """The node that leads the floor's consumer, moved off the stream's leader if both were one node
    (JetStream's leader stepdown with a preferred node, nats-server 2.11+)."""
    assert floor.cluster is not None
    nodes = floor.cluster.nodes
    admin = await floor.connect_admin()
    try:
        js = admin.jetstream(timeout=ANSWER_TIMEOUT_S)

        async def leaders() -> tuple[str | None, str | None]:
            stream = await js.stream_info(STREAM_NAME)
            consumer = await js.consumer_info(STREAM_NAME, FLOOR_CONSUMER)
            stream_leader = stream.cluster.leader if stream.cluster else None
            consumer_leader = consumer.cluster.leader if consumer.cluster else None
            return stream_leader, consumer_leader

        async def apart() -> bool:
            stream_leader, consumer_leader = await leaders()
            if stream_leader is None or consumer_leader is None:
                return False  # an election under way: asked again
            if stream_leader != consumer_leader:
                return True
            other = next(n.server_name for n in nodes if n.server_name != stream_leader)
            preferred = json.dumps({"placement": {"preferred": other}}).encode()
            subject = f"$JS.API.CONSUMER.LEADER.STEPDOWN.{STREAM_NAME}.{FLOOR_CONSUMER}"
            await admin.request(subject, preferred, timeout=ANSWER_TIMEOUT_S)
            return False

        await wait_until(apart, MOVED_BOUND_S, "the consumer's leader apart from the stream's")
        _, consumer_leader = await leaders()
    finally:
        await admin.close()
    return next(n for n in nodes if n.server_name == consumer_leader)

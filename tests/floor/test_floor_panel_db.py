"""The floor panel's PostgreSQL, for real (uvicorn on 127.0.0.1, a real cluster): the live map read once
a tick for all open streams, not once per tab; PostgreSQL stopped under a running panel answers every
page with a one-line 503 within the pool's bound (no traceback, nothing hanging), the streams say the
map is not live, and the panel is back by itself once PostgreSQL is started again; the pool closes with
the app."""

from __future__ import annotations

import asyncio
import time

import httpx
import psycopg

from controller.floor.panel import (
    SESSION_COOKIE,
    FloorFeed,
    FloorPanelSettings,
    FloorUser,
    PanelStats,
    serve_panel,
)
from controller.floor.servers import PostgresCluster
from tests.floor.conftest import MakeFloor
from tests.floor.helpers import wait_until
from tests.floor.test_floor_sessions import WAIT_S, Events, login

PASSWORD = "manager-pw"
USERS = {"mo": FloorUser.with_password("mo", "manager", PASSWORD)}
POOL_TIMEOUT_S = 1.0


async def logged_in(url: str) -> httpx.AsyncClient:
    client = httpx.AsyncClient(base_url=url, timeout=WAIT_S)
    await login(client, "mo", PASSWORD)
    return client


def test_the_live_map_is_read_once_a_tick_for_every_open_stream(make_floor: MakeFloor) -> None:
    floor = make_floor(["T1", "T2"])

    async def scenario() -> None:
        settings = FloorPanelSettings(floor.reporting_dsn, None, USERS, sse_interval_s=0.05)
        server = await serve_panel(settings, port=0)
        stats: PanelStats = server.app.state.stats
        feed: FloorFeed = server.app.state.feed
        clients = [await logged_in(server.url) for _ in range(3)]
        try:
            async with (
                clients[0].stream("GET", "/api/events") as first,
                clients[1].stream("GET", "/api/events") as second,
                clients[2].stream("GET", "/api/events") as third,
            ):
                # (Each reader kept: a dropped one closes its connection when collected.)
                readers = [Events(response) for response in (first, second, third)]
                frames = [await reader.until("event: floor") for reader in readers]
                assert frames[0] == frames[1] == frames[2]  # one map, the same for every tab

                async def three_open() -> bool:
                    return feed.subscribers == 3

                await wait_until(three_open, WAIT_S, "three streams on the feed")
                reads, queries = stats.feed_reads, stats.queries

                async def ten_more_ticks() -> bool:
                    return stats.feed_reads >= reads + 10

                await wait_until(ten_more_ticks, WAIT_S, "ten more ticks")
                ticks, asked = stats.feed_reads - reads, stats.queries - queries
                # Two statements a tick (the map, the open alerts), whatever the number of tabs; one read
                # per tab would be three times that. (A tick may be mid-way when the figures are taken.)
                assert 2 * ticks - 2 <= asked <= 2 * ticks + 2, (ticks, asked)

            # All closed: the feed parks, reading nothing until a stream opens again.
            async def parked() -> bool:
                return feed.subscribers == 0 and feed.parked

            await wait_until(parked, WAIT_S, "the feed parked with the streams gone")
            reads = stats.feed_reads
            async with clients[0].stream("GET", "/api/events") as again:
                await Events(again).until("event: floor")
                assert stats.feed_reads > reads
        finally:
            for client in clients:
                await client.aclose()
            await server.stop()

    asyncio.run(scenario())


def test_postgres_down_answers_503_and_the_panel_recovers(
    make_floor: MakeFloor, own_pg_cluster: PostgresCluster
) -> None:
    floor = make_floor(["T1"], postgres=own_pg_cluster)

    async def scenario() -> None:
        settings = FloorPanelSettings(
            floor.reporting_dsn, floor.writer_dsn, USERS, sse_interval_s=0.1, pool_timeout_s=POOL_TIMEOUT_S
        )
        server = await serve_panel(settings, port=0)
        pool = server.app.state.pool
        client = await logged_in(server.url)
        try:
            assert (await client.get("/")).status_code == 200
            async with client.stream("GET", "/api/events") as response:
                events = Events(response)
                await events.until("event: floor")
                await asyncio.to_thread(own_pg_cluster.stop)

                for path in ("/", "/alerts", "/meters?by=pit", "/rounds?table=T1"):
                    started = time.monotonic()
                    page = await client.get(path)
                    took_s = time.monotonic() - started
                    assert page.status_code == 503, (path, page.status_code, page.text[:300])
                    assert page.headers["retry-after"] == "5"
                    assert "The floor database (PostgreSQL) is not answering" in page.text
                    assert "Traceback" not in page.text
                    # The pool's bound (a second here), with room for a loaded machine.
                    assert took_s < POOL_TIMEOUT_S + 5, (path, took_s)
                api = await client.get("/api/floor")
                assert api.status_code == 503
                assert api.json()["error"].startswith("The floor database (PostgreSQL) is not answering")
                # A write fails the same way (the writer connects for it).
                session = server.app.state.sessions.get(client.cookies.get(SESSION_COOKIE), touch=False)
                acknowledge = await client.post(
                    "/alerts/1/acknowledge", data={"csrf_token": session.csrf_token}
                )
                assert acknowledge.status_code == 503, acknowledge.text[:300]
                assert "The floor database (PostgreSQL) is not answering" in acknowledge.text
                # The live map says it is not live (and the stream stays open).
                unavailable = await events.until("event: unavailable")
                assert "not answering" in unavailable

                await asyncio.to_thread(own_pg_cluster.start)

                async def back() -> bool:
                    return (await client.get("/")).status_code == 200

                # The pool gives a failed reconnection up after 10 s and the next page starts afresh.
                await wait_until(back, 30, "the panel back with PostgreSQL")
                await events.until("event: floor")
            assert (await client.get("/api/floor")).status_code == 200
            with psycopg.connect(floor.reporting_dsn) as connection:
                row = connection.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE usename = current_user"
                ).fetchone()
            # The panel's own connections stay within the pool's bound (plus this one).
            assert row is not None
            assert row[0] <= settings.pool_max_size + 1, row
        finally:
            await client.aclose()
            await server.stop()
        assert pool.closed  # closed with the app (its lifespan)

    asyncio.run(scenario())

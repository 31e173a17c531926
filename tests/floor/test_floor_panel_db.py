"""The floor panel's PostgreSQL, for real (uvicorn on 127.0.0.1, a real cluster): the live map read once
a tick for all open streams, not once per tab; PostgreSQL stopped under a running panel answers every
page with a one-line 503 within the pool's bound (no traceback, nothing hanging), the streams say the
map is not live, and the panel is back by itself once PostgreSQL is started again; the pool closes with
the app."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import psycopg
from structlog.testing import capture_logs

from controller.floor.panel import (
    SESSION_COOKIE,
    FloorFeed,
    FloorPanelSettings,
    FloorUser,
    PanelStats,
    serve_panel,
)
from controller.simulation.floor.servers import PostgresCluster
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
                tick, reads, queries = feed.tick, stats.feed_reads, stats.queries

                async def ten_more_ticks() -> bool:
                    return feed.tick >= tick + 10

                # The ticks counted by the feed itself, the reads by the reader: one read a tick,
                # whatever the number of tabs (a read per tab would be three a tick).
                await wait_until(ten_more_ticks, WAIT_S, "ten more ticks")
                ticks, read, asked = feed.tick - tick, stats.feed_reads - reads, stats.queries - queries
                # (A read may be under way when the figures are taken: counted, its tick not yet.)
                assert ticks - 1 <= read <= ticks + 1, (ticks, read)
                # Two statements a read (the map, the open alerts).
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
                    # Bounded by the client's timeout (WAIT_S): a hang fails the test, how fast the
                    # answer comes is not measured.
                    page = await client.get(path)
                    assert page.status_code == 503, (path, page.status_code, page.text[:300])
                    assert page.headers["retry-after"] == "5"
                    assert "The floor database (PostgreSQL) is not answering" in page.text
                    assert "Traceback" not in page.text
                    # The driver's message names the host, port and role: for the log only.
                    assert f"port {own_pg_cluster.port}" not in page.text
                    assert "Details are in the panel log." in page.text
                    # A page's GET tries itself again.
                    assert '<meta http-equiv="refresh" content="10">' in page.text
                    assert '<a href="">Try again</a>' in page.text
                api = await client.get("/api/floor")
                assert api.status_code == 503
                assert api.json()["error"].startswith("The floor database (PostgreSQL) is not answering")
                assert api.json()["detail"] == "Details are in the panel log."
                # A write fails the same way (the writer connects for it).
                session = server.app.state.sessions.get(client.cookies.get(SESSION_COOKIE), touch=False)
                acknowledge = await client.post(
                    "/alerts/1/acknowledge", data={"csrf_token": session.csrf_token}
                )
                assert acknowledge.status_code == 503, acknowledge.text[:300]
                assert "The floor database (PostgreSQL) is not answering" in acknowledge.text
                # Its page tries the alerts again, not the form's URL (a reload of it is a GET: 405).
                assert '<meta http-equiv="refresh" content="10; url=/alerts">' in acknowledge.text
                assert '<a href="/alerts">Try again</a>' in acknowledge.text
                # The live map says it is not live (and the stream stays open).
                unavailable = await events.until("event: unavailable")
                assert "not answering" in unavailable
                assert str(own_pg_cluster.port) not in unavailable

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


def test_a_release_under_a_held_lock_answers_503_and_holds_no_thread(make_floor: MakeFloor) -> None:
    """A lock held on floor_tables (another session's ACCESS EXCLUSIVE) made a release wait for good,
    holding an executor thread: PostgreSQL now ends its wait at ``query_timeout_s`` and the release
    answers the one-line 503 of PostgreSQL down. The test's waits are bounded (WAIT_S): a hang fails
    it; how fast the answer comes is not measured."""
    floor = make_floor(["T1"])

    async def scenario() -> None:
        settings = FloorPanelSettings(
            floor.reporting_dsn, floor.writer_dsn, USERS, pool_timeout_s=POOL_TIMEOUT_S, query_timeout_s=1.0
        )
        server = await serve_panel(settings, port=0)
        client = await logged_in(server.url)
        session = server.app.state.sessions.get(client.cookies.get(SESSION_COOKIE), touch=False)
        locker: psycopg.Connection[tuple[Any, ...]] = await asyncio.to_thread(
            lambda: psycopg.connect(floor.owner_dsn)
        )
        try:
            await asyncio.to_thread(locker.execute, "LOCK TABLE floor_tables IN ACCESS EXCLUSIVE MODE")
            try:
                async with asyncio.timeout(WAIT_S):
                    release = await client.post(
                        "/tables/T1/release", data={"csrf_token": session.csrf_token, "reason": "checked"}
                    )
            except TimeoutError:
                raise AssertionError(f"the release hung for {WAIT_S} s under the lock") from None
            assert release.status_code == 503, release.text[:300]
            assert "The floor database (PostgreSQL) is not answering" in release.text
            assert "Traceback" not in release.text
            # A page reading floor_tables under the same lock: ended by PostgreSQL too (statement_timeout
            # on the pool's connections), and the pool's connection serves again once the lock is gone.
            async with asyncio.timeout(WAIT_S):
                assert (await client.get("/")).status_code == 503
            await asyncio.to_thread(locker.rollback)
            async with asyncio.timeout(WAIT_S):
                assert (await client.get("/")).status_code == 200
        finally:
            await asyncio.to_thread(locker.close)
            await client.aclose()
            await server.stop()

    asyncio.run(scenario())


def test_the_pools_connections_end_a_statement_at_the_query_bound(make_floor: MakeFloor) -> None:
    """PostgreSQL itself ends a page's statement at ``query_timeout_s`` (statement_timeout), so a
    statement past the bound costs no client-side cancellation (psycopg waits up to 10 s for one)."""
    floor = make_floor(["T1"])

    async def scenario() -> None:
        settings = FloorPanelSettings(floor.reporting_dsn, None, USERS, query_timeout_s=2.5)
        server = await serve_panel(settings, port=0)
        try:
            async with server.app.state.pool.connection() as connection:
                bounds = await (
                    await connection.execute(
                        "SELECT current_setting('statement_timeout'), current_setting('lock_timeout')"
                    )
                ).fetchone()
            assert bounds == ("2500ms", "2500ms")
        finally:
            await server.stop()

    asyncio.run(scenario())


def test_a_nul_in_an_id_is_no_such_table_or_round(make_floor: MakeFloor) -> None:
    """PostgreSQL's text holds no NUL byte (psycopg refuses it, DataError): an id with one names no
    table and no round — 404 in one line, not a 500 or a 503 "Release failed"."""
    floor = make_floor(["T1"])

    async def scenario() -> None:
        server = await serve_panel(FloorPanelSettings(floor.reporting_dsn, floor.writer_dsn, USERS), port=0)
        client = await logged_in(server.url)
        csrf = server.app.state.sessions.get(client.cookies.get(SESSION_COOKIE), touch=False).csrf_token
        try:
            page = await client.get("/tables/T1%00/rounds/x")
            assert (page.status_code, page.text) == (404, "No such round on the floor.")
            api = await client.get("/api/tables/T1/rounds/x%00")
            assert (api.status_code, api.json()) == (404, {"error": "no such round"})
            release = await client.post("/tables/T1%00/release", data={"csrf_token": csrf, "reason": "x"})
            assert (release.status_code, release.text) == (404, "No such table on the floor.")
            # A NUL in the reason: refused in one line, nothing recorded.
            reason = await client.post("/tables/T1/release", data={"csrf_token": csrf, "reason": "a\x00b"})
            assert (reason.status_code, reason.text) == (422, "Release refused: the reason holds a NUL byte.")
            with psycopg.connect(floor.reporting_dsn) as connection:
                assert connection.execute("SELECT count(*) FROM floor_releases").fetchone() == (0,)
        finally:
            await client.aclose()
            await server.stop()

    asyncio.run(scenario())


def test_a_failure_of_the_live_map_that_persists_is_logged_once(make_floor: MakeFloor) -> None:
    """A failure of the feed's read other than PostgreSQL down (here the map's table renamed away) is
    logged with its traceback when it starts or changes, not once a tick while it lasts."""
    floor = make_floor(["T1"])

    async def scenario() -> None:
        settings = FloorPanelSettings(floor.reporting_dsn, None, USERS, sse_interval_s=0.02)
        server = await serve_panel(settings, port=0)
        feed: FloorFeed = server.app.state.feed
        client = await logged_in(server.url)

        def owner(sql: str) -> None:
            with psycopg.connect(floor.owner_dsn, autocommit=True) as connection:
                connection.execute(sql.encode())

        async def ticks(count: int) -> None:
            start = feed.tick

            async def passed() -> bool:
                return feed.tick >= start + count

            await wait_until(passed, WAIT_S, f"{count} ticks")

        try:
            with capture_logs() as logs:
                async with client.stream("GET", "/api/events") as response:
                    events = Events(response)
                    await events.until("event: floor")
                    await asyncio.to_thread(owner, "ALTER TABLE floor_tables RENAME TO floor_tables_away")
                    unreadable = await events.until("event: unavailable")
                    assert "the floor map could not be read" in unreadable
                    await ticks(10)
                    failed = [entry for entry in logs if entry["event"] == "floor_panel_feed_failed"]
                    assert len(failed) == 1, len(failed)
                    # Back, then failing again: logged again.
                    await asyncio.to_thread(owner, "ALTER TABLE floor_tables_away RENAME TO floor_tables")
                    await events.until("event: floor")
                    await asyncio.to_thread(owner, "ALTER TABLE floor_tables RENAME TO floor_tables_away")
                    await events.until("event: unavailable")
                    await ticks(10)
                    failed = [entry for entry in logs if entry["event"] == "floor_panel_feed_failed"]
                    assert len(failed) == 2, len(failed)
        finally:
            await asyncio.to_thread(owner, "ALTER TABLE IF EXISTS floor_tables_away RENAME TO floor_tables")
            await client.aclose()
            await server.stop()

    asyncio.run(scenario())

"""The floor's progressive page, sign, CSV and reconciliation over a real PostgreSQL (and, for the alert
the floor service raises, a real nats-server and the floor service itself): the controller's in-meter
against the tables' journals' locked progressive wagers per table and shift, a difference raised as a
floor alert once, cleared when it is gone, raised afresh when it changes."""

from __future__ import annotations

import asyncio
import csv
import datetime as dt
import io
import json
from typing import Any

import httpx
import psycopg

from controller.floor import progressive_view
from controller.floor.panel import FloorPanelSettings, FloorUser, serve_panel
from controller.floor.progressive import record_refusal
from controller.floor.service import FloorService
from controller.simulation.floor.servers import PostgresCluster
from tests.floor.conftest import MakeFloor
from tests.floor.helpers import wait_until
from tests.floor.progressive_link import DAY, DAY_SHIFT, GRAVE_SHIFT, TODAY, later, standard_link
from tests.floor.test_floor_sessions import WAIT_S, Events, login

PASSWORD = "regulator-pw"
USERS = {"rita": FloorUser.with_password("rita", "regulator", PASSWORD)}


def _alerts(dsn: str) -> list[tuple[Any, ...]]:
    with psycopg.connect(dsn) as connection:
        return connection.execute(
            "SELECT table_id, message, cleared_utc IS NULL AS open FROM floor_alerts "
            "WHERE kind = %s ORDER BY alert_id",
            (progressive_view.RECONCILE_ALERT_KIND,),
        ).fetchall()


async def _reconcile(dsn: str) -> int:
    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as connection:
        return await progressive_view.raise_reconciliation_alerts(connection)


def test_reconciliation_per_table_and_shift_and_its_alert(make_floor: MakeFloor) -> None:
    floor = make_floor(["T1", "T2", "T3"])
    data = standard_link(floor)

    async def scenario() -> None:
        async def query(sql: str, params: progressive_view.Params = ()) -> list[dict[str, Any]]:
            async with await psycopg.AsyncConnection.connect(floor.reporting_dsn) as connection:
                cursor = await connection.execute(sql.encode(), params)
                names = [d.name for d in cursor.description or []]
                return [dict(zip(names, row, strict=True)) for row in await cursor.fetchall()]

        detail = await progressive_view.link_detail(query, "L1")
        assert detail is not None
        rows = {(r["table_id"], r["shift"]): r for r in detail["reconciliation"]}
        # T1's grave-shift round apart from its day-shift ones; every figure to the cent.
        assert set(rows) == {("T1", DAY_SHIFT), ("T1", GRAVE_SHIFT), ("T2", DAY_SHIFT),
                             ("T3", DAY_SHIFT)}  # fmt: skip

        def figures(row: dict[str, Any]) -> tuple[int, ...]:
            return tuple(row[k] for k in ("rounds", "locked_cents", "journal_wagers", "journal_cents",
                                          "controller_cents", "difference_cents"))  # fmt: skip

        # T1's dead round R13: its wager locked (1.00) and returned; the controller never counted it.
        assert figures(rows["T1", DAY_SHIFT]) == (3, 500, 4, 400, 400, 0)
        # T2's R22: seat 2 killed, its wager returned: counted by neither side.
        assert figures(rows["T2", DAY_SHIFT]) == (2, 300, 2, 200, 200, 0)
        assert figures(rows["T1", GRAVE_SHIFT]) == (1, 100, 1, 100, 100, 0)
        t3 = rows["T3", DAY_SHIFT]
        assert figures(t3) == (1, 300, 3, 300, 200, -100)
        assert t3["differing_rounds"] == ("R31",)
        assert [(d["table_id"], d["difference_cents"]) for d in detail["differences"]] == [("T3", -100)]
        # The meters as the real controller folded them: 9 wagers; 15% of each to the meter, 5% hidden;
        # the 7-card hit took the whole meter (10,001.35) and it re-seeded at 10,000.00 (0.45 from the
        # reserve, 9,999.55 added by the house).
        meters = detail["meters"]
        assert (meters["meter_cents"], meters["in_meter_cents"], meters["wagers"]) == (1_000_000, 900, 9)
        assert (meters["increments_cents"], meters["hidden_cents"], meters["reserve_cents"]) == (135, 45, 0)
        assert (
            meters["resets"],
            meters["resets_from_reserve_cents"],
            meters["resets_house_added_cents"],
        ) == (1, 45, 999_955)
        assert (meters["meter_awards_cents"], meters["fixed_awards_cents"], meters["paid_cents"]) == (
            1_000_135,
            50_000,
            50_000,
        )
        assert detail["equations_hold"] is True
        levels = {level["line"]: level for level in detail["levels"]}
        assert (levels[7]["hits"], levels[7]["pending_cents"], levels[7]["award"]) == (
            1,
            1_000_135,
            "100% of the meter",
        )
        assert (levels[5]["hits"], levels[5]["won_cents"], levels[5]["pending"]) == (1, 50_000, 0)
        assert levels[5]["award"] == "500 for 1 (500.00)"
        assert levels[3]["hits"] == 0

        # The floor service's part, run as it runs it (its writer connection): one alert, once.
        assert await _reconcile(floor.writer_dsn) == 1
        assert await _reconcile(floor.writer_dsn) == 0
        alerts = _alerts(floor.owner_dsn)
        assert [(t, is_open) for t, _m, is_open in alerts] == [("T3", True)]
        assert "in-meter holds 2.00" in alerts[0][1], alerts[0][1]
        assert "journal 3.00 (locked at the lock, less any returned) (-1.00)" in alerts[0][1], alerts[0][1]
        assert "rounds R31" in alerts[0][1]

        # The table's dead_hand for R31's seat 4 reaches the floor late: its wager was returned, the
        # counts agree, the alert is cleared and nothing new is raised.
        data.dead_hand("T3", "R31", 4)
        assert await _reconcile(floor.writer_dsn) == 0
        assert [is_open for _t, _m, is_open in _alerts(floor.owner_dsn)] == [False]
        # R32 settled on the floor, its two wagers not yet counted by the link, which has not read it
        # yet: no difference while the link catches up.
        data.table_round("T3", "R32", locked=[1, 2], counted=None, read_by_link=False)
        assert await _reconcile(floor.writer_dsn) == 0
        # The link reads past R32 without counting it: now a difference, a new alert.
        data.read_by_link("T3")
        assert await _reconcile(floor.writer_dsn) == 1
        assert [is_open for _t, _m, is_open in _alerts(floor.owner_dsn)] == [False, True]
        assert "(-2.00); rounds R32" in _alerts(floor.owner_dsn)[1][1]

    asyncio.run(scenario())


def test_a_controller_count_the_journals_never_locked_is_a_difference(make_floor: MakeFloor) -> None:
    floor = make_floor(["T1"])
    data = standard_link(floor)
    # The controller counted a round of T2 the floor holds no lock or round for.
    data.contribute("T2", "R29", 1)
    assert asyncio.run(_reconcile(floor.writer_dsn)) == 2  # T3's, and T2's phantom round
    messages = {t: m for t, m, _open in _alerts(floor.owner_dsn)}
    # R29 is the controller's alone, placed in the shift of the controller's time (now). The shift's
    # totals depend on the hour the test runs (now may share a shift with T2's rounds of the standard
    # link, or not): what is the same at any hour is the difference and the round it names.
    assert "(+1.00); rounds R29" in messages["T2"]


def test_the_floor_service_raises_the_reconciliation_alert(make_floor: MakeFloor) -> None:
    """The floor service runs the reconciliation by itself, as it applies releases."""
    floor = make_floor(["T1", "T2", "T3"])
    standard_link(floor)

    async def scenario() -> None:
        stop = asyncio.Event()
        service = FloorService(floor.floor_config(reconcile_interval_s=0.2))
        task = asyncio.create_task(service.run(stop))
        try:

            async def raised() -> bool:
                return len(_alerts(floor.owner_dsn)) == 1

            await wait_until(raised, WAIT_S, "the floor service's reconciliation alert")
            assert service.status.alerts >= 1
        finally:
            stop.set()
            await asyncio.wait_for(task, 30)

    asyncio.run(scenario())


def test_the_progressive_csv_and_pages_behind_the_login(make_floor: MakeFloor) -> None:
    floor = make_floor(["T1", "T2", "T3"])
    data = standard_link(floor)
    ten_days_ago = f"{(TODAY - dt.timedelta(days=10)).isoformat()}T10:00:00+00:00"
    data.table_round("T3", "R30", locked=[1], counted=None, closed=ten_days_ago)
    # A manager's reserve movement, and a claim the controller refused (as the linked service records it).
    data.controller.move_reserve_now(10_000, reason="seed the reserve", by="mo")
    data.publish()
    record_refusal(data.connection, "L1", "T2", "R99", "no contribution for that round", '{"hits": []}')

    async def scenario() -> None:
        settings = FloorPanelSettings(floor.reporting_dsn, None, USERS)
        server = await serve_panel(settings, port=0)
        try:
            async with httpx.AsyncClient(base_url=server.url, timeout=WAIT_S) as anonymous:
                for path in (
                    "/progressive",
                    "/progressive/L1",
                    "/progressive/L1/csv",
                    "/progressive/L1/sign",
                ):
                    response = await anonymous.get(path)
                    assert response.status_code == 303, path
                    assert response.headers["location"] == "/login", path
            async with httpx.AsyncClient(base_url=server.url, timeout=WAIT_S) as client:
                await login(client, "rita", PASSWORD)
                response = await client.get("/progressive/L1/csv")
                assert response.status_code == 200
                assert response.headers["content-type"].startswith("text/csv")
                assert 'filename="floor-progressive-L1.csv"' in response.headers["content-disposition"]
                rows = list(csv.reader(io.StringIO(response.text)))
                assert rows[0] == ["meter", "key", "value", "amount"]
                found = {(r[0], r[1]): (r[2], r[3]) for r in rows[1:]}
                assert found["meter.meter_cents", "L1"] == ("1000000", "10,000.00")
                assert found["meter.equations_hold", "L1"] == ("True", "")
                assert found["parameter.limit_cents", "L1"] == ("20000000", "200,000.00")
                assert found["parameter.increment", "L1"] == ("15%", "")
                assert found["table.in_meter_cents", "T1"] == ("500", "5.00")
                assert found["hit.table_id", "2"] == ("T2", "")
                assert found["hit.status", "2"] == ("pending", "")
                assert found["reconciliation.difference_cents", f"T3 {DAY_SHIFT}"] == ("-100", "-1.00")
                assert found["reconciliation.locked_cents", f"T2 {DAY_SHIFT}"] == ("300", "3.00")
                assert found["level.won_cents", "7"] == ("1000135", "10,001.35")
                # Who changed what: the opening (event 1) and the reserve movement, by the manager.
                assert found["change.kind", "1"] == ("progressive_parameters_changed", "")
                assert found["change.by", "1"] == ("mo", "")
                changes = sorted(int(key) for meter, key in found if meter == "change.kind")
                moved = str(changes[-1])
                assert found["change.kind", moved] == ("progressive_reserve", "")
                assert found["change.amount_cents", moved] == ("10000", "100.00")
                assert found["change.reason", moved] == ("seed the reserve", "")
                assert found["refusal.reason", "1"] == ("no contribution for that round", "")
                assert found["refusal.round_id", "1"] == ("R99", "")
                page = await client.get("/progressive/L1")
                assert "seed the reserve" in page.text
                assert "no contribution for that round" in page.text
                assert found["reconciliation.differing_rounds", f"T3 {DAY_SHIFT}"] == ("R31", "")
                # The window: a round closed ten days ago is out of the default week (page, CSV and the
                # floor service's run alike) and in the last 30 days when asked for.
                old_shift = f"{(TODAY - dt.timedelta(days=10)).isoformat()} day"
                assert not any(key == f"T3 {old_shift}" for _meter, key in found)
                wide = await client.get("/progressive/L1/csv?days=30")
                wide_rows = {(r[0], r[1]): (r[2], r[3]) for r in list(csv.reader(io.StringIO(wide.text)))[1:]}
                assert wide_rows["reconciliation.difference_cents", f"T3 {old_shift}"] == ("-100", "-1.00")
                assert "R30" in (await client.get("/progressive/L1?days=30")).text
                assert "R30" not in (await client.get("/progressive/L1")).text
                for bad in ("0", "367", "abc", "-1"):
                    assert (await client.get(f"/progressive/L1?days={bad}")).status_code == 422, bad
                    assert (await client.get(f"/progressive/L1/csv?days={bad}")).status_code == 422, bad
                assert await _reconcile(floor.writer_dsn) == 1  # T3's of today only
                for path in ("/progressive/NOPE", "/progressive/NOPE/csv", "/progressive/NOPE/sign",
                             "/progressive/%00/csv"):  # fmt: skip
                    assert (await client.get(path)).status_code == 404, path
        finally:
            await server.stop()

    asyncio.run(scenario())


def test_a_floor_without_progressive_links_shows_none(make_floor: MakeFloor) -> None:
    """A floor with no link: the list says so, the service's reconciliation does nothing, an unknown
    link is 404 (a floor whose schema has no link tables at all is the same: progressive_view.links_exist)."""
    floor = make_floor(["T1"])
    assert asyncio.run(_reconcile(floor.writer_dsn)) == 0

    async def scenario() -> None:
        server = await serve_panel(FloorPanelSettings(floor.reporting_dsn, None, USERS), port=0)
        try:
            async with httpx.AsyncClient(base_url=server.url, timeout=WAIT_S) as client:
                await login(client, "rita", PASSWORD)
                page = await client.get("/progressive")
                assert page.status_code == 200
                assert "No linked progressive on this floor." in page.text
                assert (await client.get("/progressive/L1")).status_code == 404
        finally:
            await server.stop()

    asyncio.run(scenario())


def test_the_live_meter_stream_one_reader_per_link_and_its_session(make_floor: MakeFloor) -> None:
    """The sign's stream: the meter as a frame, one PostgreSQL reader for every stream of a link, the
    stream's end at logout, and refusals in one line (no session: logout; a NUL: 404)."""
    floor = make_floor(["T1", "T2", "T3"])
    data = standard_link(floor)

    async def scenario() -> None:
        settings = FloorPanelSettings(floor.reporting_dsn, None, USERS, sse_interval_s=0.05)
        server = await serve_panel(settings, port=0)
        try:
            async with httpx.AsyncClient(base_url=server.url, timeout=WAIT_S) as anonymous:
                response = await anonymous.get("/api/progressive/L1/events")
                assert "event: logout" in response.text
            async with (
                httpx.AsyncClient(base_url=server.url, timeout=WAIT_S) as first,
                httpx.AsyncClient(base_url=server.url, timeout=WAIT_S) as second,
            ):
                await login(first, "rita", PASSWORD)
                await login(second, "rita", PASSWORD)
                assert (await first.get("/api/progressive/%00/events")).status_code == 404
                async with (
                    first.stream("GET", "/api/progressive/L1/events") as one,
                    second.stream("GET", "/api/progressive/L1/events") as two,
                ):
                    readers = [Events(one), Events(two)]
                    frames = [await reader.until("event: meter") for reader in readers]
                    assert frames[0] == frames[1]
                    meter = json.loads(frames[0].split("data: ", 1)[1])
                    assert (meter["meter_cents"], meter["meter_text"]) == (1_000_000, "10,000.00")
                    assert meter["pending"] == [
                        {"table_id": "T2", "seat": 1, "line": 7, "award_text": "10,001.35"}
                    ]
                    # One reader for the link, however many streams follow it.
                    assert list(server.app.state.sign_feeds) == ["L1"]
                    assert server.app.state.sign_feeds["L1"].subscribers == 2
                    data.table_round("T1", "R14", locked=[1], counted=1, closed=later(DAY, 300))
                    changed = await readers[0].until("event: meter")
                    assert json.loads(changed.split("data: ", 1)[1])["meter_text"] == "10,000.15"
                    await first.post("/logout", data={"csrf_token": await _csrf(first)})
                    assert await readers[0].until("event: logout")
        finally:
            await server.stop()

    asyncio.run(scenario())


async def _csrf(client: httpx.AsyncClient) -> str:
    """The session's CSRF token, from a page's logout form."""
    page = await client.get("/progressive")
    return page.text.split('name="csrf_token" value="', 1)[1].split('"', 1)[0]


def test_the_sign_says_it_is_not_live_while_postgres_is_down(
    make_floor: MakeFloor, own_pg_cluster: PostgresCluster
) -> None:
    """A sign left open over the pit: with PostgreSQL down its stream says so (the page shows "Not live"
    under the last meter), the pages answer 503 in one line, and the meter is live again by itself."""
    floor = make_floor(["T1", "T2", "T3"], postgres=own_pg_cluster)
    standard_link(floor).close()

    async def scenario() -> None:
        settings = FloorPanelSettings(
            floor.reporting_dsn, None, USERS, sse_interval_s=0.1, pool_timeout_s=1.0
        )
        server = await serve_panel(settings, port=0)
        try:
            async with httpx.AsyncClient(base_url=server.url, timeout=WAIT_S) as client:
                await login(client, "rita", PASSWORD)
                async with client.stream("GET", "/api/progressive/L1/events") as response:
                    events = Events(response)
                    await events.until("event: meter")
                    await asyncio.to_thread(own_pg_cluster.stop)
                    unavailable = await events.until("event: unavailable")
                    assert "the floor database is not answering" in unavailable
                    assert str(own_pg_cluster.port) not in unavailable
                    page = await client.get("/progressive/L1")
                    assert page.status_code == 503
                    assert "Traceback" not in page.text
                    await asyncio.to_thread(own_pg_cluster.start)
                    again = await events.until("event: meter")
                    assert '"meter_text": "10,000.00"' in again
        finally:
            await server.stop()

    asyncio.run(scenario())


def test_a_sign_by_its_key_needs_no_login_and_opens_nothing_else(make_floor: MakeFloor) -> None:
    """A screen over the pit runs all day: with the panel's sign key its sign and stream need no login
    (a person's session would end after 15 minutes idle), the key opens nothing but signs, a wrong key
    opens nothing, and the keyed streams share one cap."""
    floor = make_floor(["T1", "T2", "T3"])
    standard_link(floor).close()
    key = "a-long-random-sign-key"

    async def scenario() -> None:
        settings = FloorPanelSettings(
            floor.reporting_dsn, None, USERS, sse_interval_s=0.05, sign_key=key, max_sign_streams=1
        )
        assert key not in repr(settings)
        server = await serve_panel(settings, port=0)
        try:
            async with httpx.AsyncClient(base_url=server.url, timeout=WAIT_S) as screen:
                sign = await screen.get(f"/progressive/L1/sign?key={key}")
                assert sign.status_code == 200
                assert "10,000.00" in sign.text
                assert sign.headers["referrer-policy"] == "no-referrer"
                assert f'data-key="{key}"' in sign.text
                for path in (
                    "/progressive/L1/sign?key=wrong",
                    "/progressive/L1/sign",
                    f"/progressive/L1?key={key}",
                    f"/progressive/L1/csv?key={key}",
                    f"/?key={key}",
                    f"/alerts?key={key}",
                ):
                    response = await screen.get(path)
                    assert response.status_code == 303, path
                    assert response.headers["location"] == "/login", path
                wrong = await screen.get("/api/progressive/L1/events?key=wrong")
                assert "event: logout" in wrong.text
                async with screen.stream("GET", f"/api/progressive/L1/events?key={key}") as response:
                    # The reader is kept: a dropped one's line iterator is closed by the loop as it is
                    # collected, and that closes this stream's connection, which gives its slot back
                    # (the second stream below would then be let in).
                    events = Events(response)
                    frame = await events.until("event: meter")
                    assert '"meter_text": "10,000.00"' in frame
                    # One keyed stream allowed here: a second is refused in one line.
                    second = await screen.get(f"/api/progressive/L1/events?key={key}")
                    assert second.status_code == 429
                    assert "close one first" in second.json()["error"]
        finally:
            await server.stop()

    asyncio.run(scenario())

"""The floor panel's sessions, over HTTP against the real server (uvicorn on 127.0.0.1) and a real floor
database (PostgreSQL): the idle timeout, the absolute timeout however busy the user, a live stream and
JSON polling that do not keep a session alive (and a stream that ends with its session), logout, and a
fresh token at every login. The session clock is injected (:class:`FakeClock`): no test waits for a
timeout to pass; the waits below are bounded waits for the server to answer."""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import psycopg
from structlog.testing import capture_logs

from controller.floor.panel import (
    LOGIN_CSRF_COOKIE,
    MAX_FORM_BYTES,
    SESSION_COOKIE,
    FloorPanelSettings,
    FloorUser,
    serve_panel,
)
from controller.panel.auth import verify_password
from controller.simulation.floor.embedded import EmbeddedFloor
from tests.floor.conftest import MakeFloor
from tests.floor.helpers import wait_until

IDLE_S = 15 * 60.0
ABSOLUTE_S = 12 * 3600.0
PASSWORD = "supervisor-pw"
WAIT_S = 15.0  # the bound on each wait for the server


class FakeClock:
    """The sessions' clock: moved by the test, never by time passing."""

    def __init__(self) -> None:
        self.now_s = 1000.0

    def __call__(self) -> float:
        return self.now_s

    def advance(self, seconds: float) -> None:
        self.now_s += seconds


# A user is hashed once for the module: scrypt takes tens of milliseconds.
USERS = {"sue": FloorUser.with_password("sue", "supervisor", PASSWORD)}


@asynccontextmanager
async def served(
    floor: EmbeddedFloor, clock: FakeClock, **options: Any
) -> AsyncIterator[tuple[httpx.AsyncClient, Any]]:
    """The panel (a fast stream: a tick and a keep-alive every 50 ms) and a client for it."""
    settings = FloorPanelSettings(
        floor.reporting_dsn,
        floor.writer_dsn,
        USERS,
        clock=clock,
        sse_interval_s=0.05,
        sse_keepalive_s=0.0,
        **options,
    )
    server = await serve_panel(settings, port=0)
    try:
        async with httpx.AsyncClient(base_url=server.url, timeout=WAIT_S) as client:
            yield client, server
    finally:
        await server.stop()


async def login_token(client: httpx.AsyncClient) -> str:
    """The login page's double-submit token, as a browser has it: in the form and in the cookie."""
    page = await client.get("/login")
    assert page.status_code == 200
    token = client.cookies.get(LOGIN_CSRF_COOKIE)
    assert token
    assert f'name="csrf_token" value="{token}"' in page.text
    return token


async def login(client: httpx.AsyncClient, user: str = "sue", password: str = PASSWORD) -> str:
    form = {"user": user, "password": password, "csrf_token": await login_token(client)}
    response = await client.post("/login", data=form)
    assert response.status_code == 303, response.text
    token = client.cookies.get(SESSION_COOKIE)
    assert token
    return token


async def api_status(url: str, token: str) -> int:
    """GET /api/floor from another client holding only ``token`` (a copy of a cookie kept elsewhere)."""
    async with httpx.AsyncClient(base_url=url, cookies={SESSION_COOKIE: token}, timeout=WAIT_S) as other:
        return (await other.get("/api/floor")).status_code


def csrf_of(server: Any, token: str) -> str:
    """The session's CSRF token, as its pages carry it in every form."""
    session = server.app.state.sessions.get(token, touch=False)
    assert session is not None
    return str(session.csrf_token)


async def chunked(size_bytes: int) -> AsyncIterator[bytes]:
    """A body with no Content-Length (sent chunked): the bound must be counted as it arrives."""
    sent = 0
    while sent < size_bytes:
        piece = min(1024, size_bytes - sent)
        yield b"a" * piece
        sent += piece


async def map_status(client: httpx.AsyncClient) -> int:
    """The floor map page: 200 with a session; 303 (to /login) without."""
    response = await client.get("/")
    if response.status_code == 303:
        assert response.headers["location"] == "/login"
    return response.status_code


class Events:
    """One open live stream, read frame by frame (a frame: the lines up to a blank one)."""

    def __init__(self, response: httpx.Response) -> None:
        self.lines = response.aiter_lines()

    async def next(self) -> str | None:
        """The next frame's text (``": keep-alive"``, ``"event: floor ..."``), None at its end."""
        frame: list[str] = []
        async with asyncio.timeout(WAIT_S):
            async for line in self.lines:
                if line:
                    frame.append(line)
                elif frame:
                    return "\n".join(frame)
        return "\n".join(frame) if frame else None

    async def until(self, prefix: str) -> str:
        """The first frame that starts with ``prefix`` (within WAIT_S, however many come before it)."""
        try:
            async with asyncio.timeout(WAIT_S):
                while True:
                    frame = await self.next()
                    assert frame is not None, f"the stream ended before {prefix!r}"
                    if frame.startswith(prefix):
                        return frame
        except TimeoutError:
            raise AssertionError(f"no {prefix!r} within {WAIT_S} s") from None


def test_idle_and_absolute_timeouts_and_a_fresh_token_at_each_login(make_floor: MakeFloor) -> None:
    floor = make_floor(["T1"])

    async def scenario() -> None:
        clock = FakeClock()
        async with served(floor, clock) as (client, server):
            assert await map_status(client) == 303
            first = await login(client)
            # Idle: each page the user opens restarts the 15 minutes; 15 minutes and a second without one
            # end the session.
            for _ in range(3):
                clock.advance(IDLE_S - 1)
                assert await map_status(client) == 200
            clock.advance(IDLE_S + 1)
            assert await map_status(client) == 303
            assert (await client.get("/api/floor")).status_code == 401

            # A new login: a new token, never the old one again.
            second = await login(client)
            assert second != first
            # Absolute: a page every 10 minutes for 12 hours keeps it (the 12 hours exactly included) ...
            login_s = clock.now_s
            while clock.now_s - login_s + 600 <= ABSOLUTE_S:
                clock.advance(600)
                assert await map_status(client) == 200, clock.now_s - login_s
            assert clock.now_s - login_s == ABSOLUTE_S
            # ... and ends it 10 minutes later however active the user is.
            clock.advance(600)
            assert await map_status(client) == 303

            # A login in a browser that still has a session ends that session.
            third = await login(client)
            fourth = await login(client)
            assert third != fourth
            assert await api_status(server.url, third) == 401
            assert await api_status(server.url, fourth) == 200

    asyncio.run(scenario())


def test_the_live_stream_and_polling_do_not_keep_a_session_alive(make_floor: MakeFloor) -> None:
    floor = make_floor(["T1"])

    async def scenario() -> None:
        clock = FakeClock()
        async with served(floor, clock) as (client, _server):
            await login(client)
            async with client.stream("GET", "/api/events") as response:
                assert response.status_code == 200
                events = Events(response)
                await events.until("event: floor")
                clock.advance(IDLE_S - 1)
                # The stream ticks on (a keep-alive each tick here) and the page polls the JSON:
                # neither counts as the user's activity.
                await events.until(": keep-alive")
                await events.until(": keep-alive")
                assert (await client.get("/api/floor")).status_code == 200
                clock.advance(2)
                # Idle 15 minutes and a second since the login: the stream says so and ends.
                await events.until("event: logout")
                assert await events.next() is None
            assert await map_status(client) == 303
            # A stream asked for without a session (a reconnect after it ended, or after a restart of
            # the panel) is told so on a 200 event stream: EventSource gives up for good on a 401, and
            # the page would never hear of it.
            refused = await client.get("/api/events")
            assert refused.status_code == 200
            assert refused.headers["content-type"].startswith("text/event-stream")
            assert refused.text == "retry: 2000\n\nevent: logout\ndata: {}\n\n"

    asyncio.run(scenario())


def test_logout_ends_the_session_and_its_streams(make_floor: MakeFloor) -> None:
    floor = make_floor(["T1"])

    async def scenario() -> None:
        clock = FakeClock()
        async with served(floor, clock) as (client, server):
            token = await login(client)
            async with client.stream("GET", "/api/events") as response:
                events = Events(response)
                await events.until("event: floor")
                # A logout form without the session's CSRF token (a forged one) logs no one out.
                forged = await client.post("/logout", data={"csrf_token": "forged"})
                assert forged.status_code == 403
                assert await api_status(server.url, token) == 200
                logout = await client.post("/logout", data={"csrf_token": csrf_of(server, token)})
                assert logout.status_code == 303
                assert logout.headers["location"] == "/login"
                await events.until("event: logout")
                assert await events.next() is None
            assert await map_status(client) == 303
            # The old cookie, sent again (a copy kept elsewhere), opens nothing.
            assert await api_status(server.url, token) == 401

    asyncio.run(scenario())


def test_every_form_is_bounded_and_carries_the_sessions_csrf_token(make_floor: MakeFloor) -> None:
    """The login, logout, acknowledge and release forms: a body over MAX_FORM_BYTES is refused 413
    (declared or chunked), and after the login each needs its session's CSRF token (403 without)."""
    floor = make_floor(["T1"])
    too_large = {"csrf_token": "x", "reason": "r" * (MAX_FORM_BYTES + 1)}

    async def scenario() -> None:
        clock = FakeClock()
        async with served(floor, clock) as (client, server):
            login_url = "/login"
            assert (await client.post(login_url, data=too_large)).status_code == 413
            refused = await client.post(
                login_url,
                content=chunked(MAX_FORM_BYTES + 1),
                headers={"content-type": "application/x-www-form-urlencoded"},
            )
            assert refused.status_code == 413
            assert "Form too large" in refused.text
            token = await login(client)
            csrf = csrf_of(server, token)
            async with httpx.AsyncClient(base_url=server.url, timeout=WAIT_S) as other:
                other_token = await login(other)
            other_csrf = csrf_of(server, other_token)
            assert other_csrf != csrf

            for path in ("/alerts/1/acknowledge", "/tables/T1/release", "/logout"):
                assert (await client.post(path, data=too_large)).status_code == 413, path
                streamed = await client.post(
                    path,
                    content=chunked(MAX_FORM_BYTES + 1),
                    headers={"content-type": "application/x-www-form-urlencoded"},
                )
                assert streamed.status_code == 413, path
                for wrong in ({}, {"csrf_token": "x"}, {"csrf_token": other_csrf}):
                    answer = await client.post(path, data={**wrong, "reason": "because"})
                    assert answer.status_code == 403, (path, wrong)
                    assert answer.text == "The form expired; reload the page.", (path, answer.text)
            # With the right token each form reaches its own check: the supervisor acknowledges (no
            # such alert: nothing changes) and may not release.
            acknowledged = await client.post("/alerts/1/acknowledge", data={"csrf_token": csrf})
            assert acknowledged.status_code == 303
            assert acknowledged.headers["location"] == "/alerts"
            release = await client.post("/tables/T1/release", data={"csrf_token": csrf, "reason": "x"})
            assert release.status_code == 403
            assert release.text == "A supervisor cannot release a table (a manager can)."
            assert await api_status(server.url, token) == 200
            assert (await client.post("/logout", data={"csrf_token": csrf})).status_code == 303
            assert await api_status(server.url, token) == 401
            # Without a session a form leads to the login.
            gone = await client.post("/alerts/1/acknowledge", data={"csrf_token": csrf})
            assert (gone.status_code, gone.headers["location"]) == (303, "/login")

    asyncio.run(scenario())


def test_a_refused_form_keeps_no_session_alive(make_floor: MakeFloor) -> None:
    """A form refused (a forged CSRF token, an oversized body) is not its user's doing: it does not
    restart the idle timeout (it did: the session was touched before the checks)."""
    floor = make_floor(["T1"])

    async def scenario() -> None:
        clock = FakeClock()
        async with served(floor, clock) as (client, server):
            token = await login(client)
            clock.advance(IDLE_S - 1)
            assert (await client.post("/logout", data={"csrf_token": "forged"})).status_code == 403
            forged = await client.post("/alerts/1/acknowledge", data={"csrf_token": "forged"})
            assert forged.status_code == 403
            oversized = await client.post("/tables/T1/release", data={"reason": "r" * (MAX_FORM_BYTES + 1)})
            assert oversized.status_code == 413
            clock.advance(2)  # 15 minutes and a second since the login, the user's last own request
            assert await api_status(server.url, token) == 401
            # A form that passes does count: a fresh login, then an acknowledgement near its idle end.
            token = await login(client)
            clock.advance(IDLE_S - 1)
            acknowledged = await client.post(
                "/alerts/1/acknowledge", data={"csrf_token": csrf_of(server, token)}
            )
            assert acknowledged.status_code == 303
            clock.advance(2)
            assert await api_status(server.url, token) == 200

    asyncio.run(scenario())


def test_an_unknown_name_costs_the_same_password_check(make_floor: MakeFloor) -> None:
    """A wrong name and a wrong password each run one scrypt check (against a hash of no user for the
    name), so the answer's time does not tell which names exist."""
    floor = make_floor(["T1"])
    checked: list[str] = []

    def verify(password: str, password_hash: str) -> bool:
        checked.append(password_hash)
        return verify_password(password, password_hash)

    async def scenario() -> None:
        settings = FloorPanelSettings(floor.reporting_dsn, None, USERS, verify=verify)
        server = await serve_panel(settings, port=0)
        try:
            async with httpx.AsyncClient(base_url=server.url, timeout=WAIT_S) as client:
                for name in ("nobody", "sue"):
                    form = {"user": name, "password": "not-it", "csrf_token": await login_token(client)}
                    wrong = await client.post("/login", data=form)
                    assert wrong.status_code == 401
                    assert "Wrong user name or password." in wrong.text
        finally:
            await server.stop()

    asyncio.run(scenario())
    assert len(checked) == 2
    assert checked[1] == USERS["sue"].password_hash
    assert checked[0] != USERS["sue"].password_hash
    assert checked[0].startswith("scrypt$")  # a real hash: the same cost as a user's


def test_a_login_without_its_forms_token_is_refused_and_creates_nothing(make_floor: MakeFloor) -> None:
    """Login CSRF: another site's form can post the attacker's user name and password to the floor, so
    that the victim's browser works in the attacker's account. The login form's double-submit token
    (field and cookie, equal) shuts that out: without it, or with another one, the login is refused 403
    before any password check or budget, and no session is made; the form's own token logs in."""
    floor = make_floor(["T1"])
    checked: list[str] = []

    def verify(password: str, password_hash: str) -> bool:
        checked.append(password_hash)
        return verify_password(password, password_hash)

    async def scenario() -> None:
        settings = FloorPanelSettings(floor.reporting_dsn, None, USERS, verify=verify)
        server = await serve_panel(settings, port=0)
        right = {"user": "sue", "password": PASSWORD}
        try:
            async with (
                httpx.AsyncClient(base_url=server.url, timeout=WAIT_S) as browser,
                httpx.AsyncClient(base_url=server.url, timeout=WAIT_S) as cookieless,
                httpx.AsyncClient(base_url=server.url, timeout=WAIT_S) as attacker,
            ):
                attackers_token = await login_token(attacker)  # a real token, issued to another browser
                await login_token(browser)
                forged: list[tuple[httpx.AsyncClient, dict[str, str]]] = [
                    (cookieless, right),  # a cross-site form: no cookie reaches the floor
                    (cookieless, {**right, "csrf_token": attackers_token}),
                    (browser, right),  # the cookie, and no token in the form
                    (browser, {**right, "csrf_token": ""}),
                    (browser, {**right, "csrf_token": "x"}),
                    (browser, {**right, "csrf_token": attackers_token}),
                ]
                for client, form in forged:
                    before = client.cookies.get(LOGIN_CSRF_COOKIE)
                    refused = await client.post("/login", data=form)
                    assert refused.status_code == 403, (form, refused.status_code)
                    assert "The login form expired; please try again." in refused.text
                    assert SESSION_COOKIE not in refused.cookies
                    assert client.cookies.get(SESSION_COOKIE) is None
                    # The answer is a fresh form (a new token) to try again with.
                    fresh = client.cookies.get(LOGIN_CSRF_COOKIE)
                    assert fresh
                    assert fresh != before
                    assert f'value="{fresh}"' in refused.text
                # Nothing reached the password check, and no budget was spent: six forged logins are
                # more than the five failures that lock a name, and the right login still goes in.
                assert checked == []
                token = await login(browser)
                assert len(checked) == 1
                assert await api_status(server.url, token) == 200
                assert browser.cookies.get(LOGIN_CSRF_COOKIE) is None  # spent with the login
                # The attacker's own token, in the attacker's own browser, works there (it is a token
                # for that browser, not for any).
                assert (await attacker.get("/api/floor")).status_code == 401
                await login(attacker)
                assert (await attacker.get("/api/floor")).status_code == 200
        finally:
            await server.stop()

    asyncio.run(scenario())


async def events_answer(client: httpx.AsyncClient) -> httpx.Response:
    """GET /api/events, its body read only if it is not a stream (a stream's never ends: it is closed)."""
    async with client.stream("GET", "/api/events") as response:
        if response.status_code != 200:
            await response.aread()
        return response


def test_live_streams_per_user_are_capped_and_given_back_when_they_end(make_floor: MakeFloor) -> None:
    """At most max_streams_per_user open streams per user (429 past it, the table panel's answer); a
    slot comes back when its stream ends: the client closing its connection, or a logout ending the
    stream. Real HTTP streams against the live server; each wait is bounded."""
    floor = make_floor(["T1"])

    async def scenario() -> None:
        clock = FakeClock()
        async with served(floor, clock, max_streams_per_user=2) as (client, server):
            streams: dict[str, int] = server.app.state.streams

            async def open_for_sue(count: int) -> Any:
                async def reached() -> bool:
                    return streams.get("sue", 0) == count

                await wait_until(reached, WAIT_S, f"{count} streams open for sue")

            token = await login(client)
            async with (
                client.stream("GET", "/api/events") as first,
                client.stream("GET", "/api/events") as second,
            ):
                assert (first.status_code, second.status_code) == (200, 200)
                # (The reader kept: a dropped one closes its connection when collected.)
                second_events = Events(second)
                await second_events.until("event: floor")
                await open_for_sue(2)
                third = await events_answer(client)
                assert third.status_code == 429
                assert third.headers["retry-after"] == "5"
                assert third.json()["error"] == "2 live streams are open for sue: close a tab first"
                # Another login of the same user (another browser) shares the user's cap.
                async with httpx.AsyncClient(base_url=server.url, timeout=WAIT_S) as tablet:
                    await login(tablet)
                    assert (await events_answer(tablet)).status_code == 429
                    # The client goes away (its connection closed mid-stream): its slot comes back.
                    await first.aclose()
                    await open_for_sue(1)
                    async with tablet.stream("GET", "/api/events") as again:
                        assert again.status_code == 200
                        again_events = Events(again)
                        await again_events.until("event: floor")
                        await open_for_sue(2)
                        assert (await events_answer(client)).status_code == 429
                        # A logout ends this session's stream (event: logout): its slot comes back too;
                        # the tablet's session and stream go on.
                        logout = await client.post("/logout", data={"csrf_token": csrf_of(server, token)})
                        assert logout.status_code == 303
                        await second_events.until("event: logout")
                        await open_for_sue(1)
                        await again_events.until(": keep-alive")
                    await open_for_sue(0)
                    assert streams == {}
                    async with tablet.stream("GET", "/api/events") as after:
                        assert after.status_code == 200
                        await open_for_sue(1)
            await open_for_sue(0)

    asyncio.run(scenario())


def test_logins_are_logged_with_the_name_and_never_the_password(make_floor: MakeFloor) -> None:
    """Every failed login is logged (``floor_login_failed``: the name as typed, truncated, the address,
    the reason — the table panel's three), the throttled ones (429) too, and a login that succeeds
    (``floor_login``); no log line carries a password, the right one included. structlog's own capture;
    the limiter's clock is the injected one."""
    floor = make_floor(["T1"])
    wrong = "not-it-7f3a9c"
    long_name = "n" * 200

    async def scenario() -> list[int]:
        clock = FakeClock()
        statuses: list[int] = []
        async with served(floor, clock) as (client, _server):

            async def attempt(user: str, password: str) -> httpx.Response:
                form = {"user": user, "password": password, "csrf_token": await login_token(client)}
                answer = await client.post("/login", data=form)
                statuses.append(answer.status_code)
                return answer

            # Five failures from one address lock it (the fifth says so), whatever the names.
            for user in ("sue", long_name, "nobody", "sue", "sue"):
                await attempt(user, wrong)
            locked = await attempt("sue", PASSWORD)  # refused unchecked, the right password too
            assert locked.headers["retry-after"] == "61"
            clock.advance(61)
            await attempt("sue", PASSWORD)
        return statuses

    with capture_logs() as logs:
        statuses = asyncio.run(scenario())
    assert statuses == [401] * 5 + [429, 303]
    logins = [entry for entry in logs if str(entry["event"]).startswith("floor_login")]
    assert [(e["event"], e["user"], e.get("reason")) for e in logins] == [
        ("floor_login_failed", "sue", "bad_credentials"),
        ("floor_login_failed", "n" * 64, "bad_credentials"),  # as typed, truncated
        ("floor_login_failed", "nobody", "bad_credentials"),
        ("floor_login_failed", "sue", "bad_credentials"),
        ("floor_login_failed", "sue", "rate_limited"),
        ("floor_login_failed", "sue", "locked_out"),
        ("floor_login", "sue", None),
    ]
    assert all(e["remote"] == "127.0.0.1" for e in logins)
    assert [e["log_level"] for e in logins] == ["warning"] * 6 + ["info"]
    assert logins[5]["retry_after_s"] == 61
    assert logins[6]["role"] == "supervisor"
    # No password anywhere in what was logged, under any key.
    text = repr(logs)
    assert wrong not in text
    assert PASSWORD not in text


def test_a_stream_whose_client_reads_nothing_is_dropped_and_its_slot_released(make_floor: MakeFloor) -> None:
    """The floor's live stream is the table panel's bounded one (controller/panel/streaming.py): a client
    that reads nothing (a tablet asleep with the map open) is dropped once a send waits longer than
    sse_send_timeout_s, and its slot comes back. Before, the floor's stream had no bound on a send: the
    stalled stream held its task and its user's slot for as long as the connection stayed open."""
    floor = make_floor(["T1"])
    # Many tables, so each tick's map is a large frame (each differs from the last: a tile's age moves
    # with PostgreSQL's clock) and the server's buffers fill within a few ticks of a client that never
    # reads. Rows of floor_tables as the floor's writer role holds them; their content is not the point.
    with psycopg.connect(floor.writer_dsn) as connection:
        for n in range(300):
            connection.execute(
                "INSERT INTO floor_tables (table_id, pit, quarantine_reason) VALUES (%s, 'P', %s)",
                (f"S{n:03d}", "x" * 500),
            )

    async def scenario() -> None:
        clock = FakeClock()
        async with served(floor, clock, sse_send_timeout_s=0.5, max_streams_per_user=1) as (client, server):
            streams: dict[str, int] = server.app.state.streams
            token = await login(client)
            with socket.socket() as sock:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # a small window, never read
                sock.setblocking(False)
                await asyncio.get_running_loop().sock_connect(sock, ("127.0.0.1", server.port))
                request = (
                    f"GET /api/events HTTP/1.1\r\nHost: 127.0.0.1\r\nCookie: {SESSION_COOKIE}={token}\r\n\r\n"
                )
                await asyncio.get_running_loop().sock_sendall(sock, request.encode())

                async def opened() -> bool:
                    return streams.get("sue") == 1

                await wait_until(opened, WAIT_S, "the stalled stream to open")
                assert (await events_answer(client)).status_code == 429  # its one slot is taken

                async def dropped() -> bool:
                    return "sue" not in streams

                # Bounded: the frames fill the buffers within seconds, the send waits 0.5 s more.
                await wait_until(dropped, 4 * WAIT_S, "the stalled stream to be dropped")
            async with client.stream("GET", "/api/events") as again:  # the slot came back
                assert again.status_code == 200

    asyncio.run(scenario())


def test_forms_are_read_by_the_frameworks_form_handling(make_floor: MakeFloor) -> None:
    """The floor's forms are read by FastAPI's own form handling (python-multipart), as the table
    panel's: a form a browser sends as multipart/form-data logs in and acknowledges as a urlencoded one
    does. Before, the floor parsed urlencoded bodies by hand, and a multipart login was refused as a
    forged one (its CSRF field unread)."""
    floor = make_floor(["T1"])

    async def scenario() -> None:
        clock = FakeClock()
        async with served(floor, clock) as (client, server):
            fields = {"user": "sue", "password": PASSWORD, "csrf_token": await login_token(client)}
            # httpx sends multipart/form-data when files are given; the form's fields go along as parts.
            answer = await client.post("/login", data=fields, files={"unused": ("", b"", "text/plain")})
            assert answer.status_code == 303, answer.text
            token = client.cookies.get(SESSION_COOKIE)
            assert token
            acknowledged = await client.post(
                "/alerts/1/acknowledge",
                data={"csrf_token": csrf_of(server, token)},
                files={"unused": ("", b"", "text/plain")},
            )
            assert (acknowledged.status_code, acknowledged.headers["location"]) == (303, "/alerts")

    asyncio.run(scenario())


class ThreadNoting(FakeClock):
    """The sessions' clock, noting the thread of every call: the store's every use reads it."""

    def __init__(self) -> None:
        super().__init__()
        self.threads: set[int] = set()

    def __call__(self) -> float:
        self.threads.add(threading.get_ident())
        return super().__call__()


def test_the_sessions_are_used_on_the_event_loop_only(make_floor: MakeFloor) -> None:
    """The session store is not made for threads (a touch, an expired session's removal, a login's
    sweep of the ended ones): every request's use of it (a page's, a poll's, a form's) is on the event
    loop. Before, the page, poll and form dependencies were plain functions, which FastAPI runs in its
    thread pool: two requests could change the store at once."""
    floor = make_floor(["T1"])

    async def scenario() -> None:
        clock = ThreadNoting()
        loop_thread = threading.get_ident()  # the panel runs on this loop (serve_panel)
        async with served(floor, clock) as (client, server):
            token = await login(client)
            assert (await client.get("/alerts")).status_code == 200
            assert (await client.get("/api/floor")).status_code == 200
            acknowledged = await client.post(
                "/alerts/1/acknowledge", data={"csrf_token": csrf_of(server, token)}
            )
            assert acknowledged.status_code == 303
        assert clock.threads == {loop_thread}

    asyncio.run(scenario())

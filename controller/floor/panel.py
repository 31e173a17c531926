"""The floor panel (docs/floor.md "The floor panel"): every table on the pit map, laid out as the floor
file's ``[[pits]]`` says, each tile in words (controller/floor/tiles.py); one alert queue, meters by
table, pit, game and shift with win against theoretical win, a round search, a table's page, a round's
page rendered by the table's own recall (controller/journal/recall.py ``round_record`` over the floor's
entries, the table panel's ``_recall_round.html``), and each linked progressive's page, its sign over
the pit and its reconciliation (controller/floor/progressive_view.py). FastAPI over the floor's
PostgreSQL (the reporting role: read-only; the writer only to acknowledge a floor alert).

Served by `flushtable floor panel --config floor.toml` (controller/commands/floor.py) with its users from
floor-users.json (controller/floor/users.py, read again when it changes: a disabled user's sessions end
at their next request). Logins and roles: ``viewer`` reads and is shown no private part at all;
``supervisor`` (pit supervisor) and ``manager`` (table-games manager) and ``surveillance`` may
acknowledge floor alerts, one or in bulk; only a ``manager`` may release a quarantined table
(controller/floor/release.py, the same check and record as ``flushtable floor release``);
``regulator`` reads everything and changes nothing. The
login's password check, failed-login limiter and session store are the table panel's own
(controller/panel/auth.py): sessions are server-side, the cookie holds a random token made afresh at each
login, a session ends after ``idle_timeout_s`` without a request of its user, ``absolute_timeout_s`` after
its login, or at logout; every POST carries the session's CSRF token (the login's: a double-submit
cookie, as at the table panel). Logins are logged (``floor_login``, ``floor_login_failed``: the name
tried and the address, never the password), not recorded in PostgreSQL (docs/floor.md says why).
What a page does by itself (the live stream, a script's polling of ``/api/...``) reads the session
without touching it, so an open tab never keeps a session alive, and the live stream says
``event: logout`` and ends once its session has. A user has at most ``max_streams_per_user`` streams
open (429 past it), each slot given back when its stream ends.

PostgreSQL: the reporting role's few connections come from one pool opened and closed with the app; the
live map is read once a tick for every open stream; with PostgreSQL down a page answers a one-line 503
within the pool's bound and the panel is back by itself when PostgreSQL is (docs/floor.md).

Nothing private is shown before its round's reveal: the floor only receives a private part after the
reveal (controller/uplink/outbox.py), and the drill-down passes every entry through the one reducer's
gate again (``TableState.private_visible``) before it shows a card; a dead hand's never, except to an
auditor who states a reason, recorded first (``floor_private_disclosures``), and only on that answer.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import psycopg
import structlog
from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response, StreamingResponse
from fastapi.staticfiles import StaticFiles
from jinja2 import Environment, FileSystemLoader, select_autoescape
from psycopg_pool import AsyncConnectionPool
from starlette.types import Receive, Scope, Send

from controller.errors import UserError
from controller.floor import export, gaming_day, progressive_view, surveillance
from controller.floor import users as floor_users
from controller.floor.checks import FloorStored
from controller.floor.release import RELEASING_ROLES, ReleaseRefused, release_table
from controller.floor.tiles import PitLayout, TileText, current_shift, pit_map
from controller.floor.tiles import time_text as tiles_time_text
from controller.journal import entries as typed
from controller.journal.chain import canonical_json
from controller.journal.recall import round_record
from controller.journal.render import game_title
from controller.journal.state import TableState
from controller.journal.store import entry_from_row
from controller.locale import DEFAULT_PROPERTY, PropertySettings, gaming_day_of, shifts_between
from controller.money import MoneyFormat
from controller.panel.auth import (
    MAX_PASSWORD_CHARS,
    USER_NAME_MAX_CHARS,
    LoginBudget,
    LoginTicket,
    RoleSession,
    RoleSessionStore,
    hash_password,
    set_cookie,
    verify_password,
)
from controller.panel.limits import take_stream_slot
from controller.panel.view import public_recall

HERE = Path(__file__).resolve().parent
# The table panel's templates and static files: the round page includes its recall (_recall_round.html,
# _card.html) and its stylesheet, so a round reads the same at the table and on the floor.
TABLE_PANEL = HERE.parent / "panel"
# The auditor reads, and may be shown a closed round's withheld private parts (a dead hand's, a dead or
# voided round's) only with a stated reason, recorded in floor_private_disclosures (docs/floor.md).
DISCLOSING_ROLES = frozenset({"auditor"})
MAX_REASON_CHARS = 500
ACKNOWLEDGING_ROLES = frozenset({"supervisor", "manager", "surveillance"})
# A viewer (a wall display, a trainee, a visiting auditor's assistant) reads the map, alerts, meters and
# rounds, changes nothing, and is shown no private part at all, not even a revealed one.
PRIVATE_BLIND_ROLES = frozenset({"viewer"})
SESSION_COOKIE = "ft_floor_session"
# The login form's double-submit token (the table panel's ft_login_csrf, named for the floor: cookies do
# not keep to a port, and a table panel on the same host would overwrite the floor's with its own).
LOGIN_CSRF_COOKIE = "ft_floor_login_csrf"
LOGIN_CSRF_MAX_AGE_S = 3600  # a login page left open longer asks for a reload (the table panel's hour)
MAX_FORM_BYTES = 8192  # a form's whole body (the login, logout, acknowledge and release forms)
FORM_TOO_LARGE = f"Form too large (over {MAX_FORM_BYTES} bytes)."
SSE_INTERVAL_S = 1.0
SSE_RETRY_MS = 2000
SSE_LOGOUT = b"event: logout\ndata: {}\n\n"
SSE_KEEP_ALIVE = b": keep-alive\n\n"
SSE_UNAVAILABLE = "unavailable"
MEASURES = ("table", "pit", "game", "shift")
# The nav link lit on each page (base.html), as the table panel lights its own.
NAV_OF_PAGE = {
    "map.html": "map",
    "table.html": "map",
    "alerts.html": "alerts",
    "meters.html": "meters",
    "rounds.html": "rounds",
    "round.html": "rounds",
    "progressive_links.html": "progressive",
    "progressive.html": "progressive",
    "report.html": "reports",
    "surveillance.html": "surveillance",
    "workers.html": "workers",
}
# The table panel's login page (controller/panel/templates/login.html) under the floor's name.
LOGIN_SUBTITLE = "Floor panel — pit supervisors, managers, surveillance and audit"
log = structlog.get_logger("flushtable.floor.panel")
# The views by table, pit and game; by shift is SHIFT_METERS_SQL with the property's shift bounds.
_VIEW = {m: f"floor_meters_by_{m}" for m in MEASURES if m != "shift"}
# The meters by shift: each round of floor_round_meters placed in its shift by the shifts' labels and
# their contiguous UTC starts (parameters 1 and 2, in order) up to the last one's end (parameter 3):
# width_bucket is a binary search, so a long history costs a logarithm per round, not a join.
SHIFT_METERS_SQL = """
SELECT (%(labels)s::text[])[width_bucket(m.closed_utc, %(starts)s::timestamptz[])] AS key,
       count(*) FILTER (WHERE m.status = 'settled') AS rounds_settled,
       sum(m.handle_cents)::bigint AS handle_cents, sum(m.house_win_cents)::bigint AS house_win_cents,
       sum(m.theoretical_win_cents)::bigint AS theoretical_win_cents
FROM floor_round_meters m
WHERE m.closed_utc >= (%(starts)s::timestamptz[])[1] AND m.closed_utc < %(end)s::timestamptz
GROUP BY 1 ORDER BY 1
"""
MAX_LINK_ID_CHARS = 64
# Live meters read at once (one reader a link, however many signs show it): a floor has a few links;
# the bound keeps a request naming made-up links from starting readers without end.
MAX_SIGN_FEEDS = 32


# Defined in controller/floor/users.py (the CLI's too); named here as before (tests, a site's launcher).
FloorRole = floor_users.FloorRole
FloorUser = floor_users.FloorUser
FLOOR_ROLES = floor_users.FLOOR_ROLES
FloorSession = RoleSession[FloorRole]


@dataclass
class FloorPanelSettings:
    reporting_dsn: str
    writer_dsn: str | None
    # The enabled logins. `flushtable floor panel` gives a FloorUserFile (controller/floor/users.py),
    # read again when the file changes: a user disabled there loses their sessions at their next request.
    users: Mapping[str, FloorUser]
    # A supervisor walks the pit between looks at the floor: 15 minutes without a request of theirs
    # ends the session; a shift's login lasts at most 12 hours however busy (the table panel's bound).
    idle_timeout_s: float = 15 * 60
    absolute_timeout_s: float = 12 * 3600
    sse_interval_s: float = SSE_INTERVAL_S  # how often the live stream looks at the floor and the session
    # A comment line when the map has not changed for this long, so a proxy keeps the stream open.
    sse_keepalive_s: float = 15.0
    # Open live streams of one user (tabs, a wall display, tablets): 429 past it, as at the table panel.
    max_streams_per_user: int = 8
    # The signs over the pit (docs/floor.md "Progressive"): a screen left on all day cannot hold a
    # person's login (it ends after idle_timeout_s). With a key set, /progressive/<link>/sign?key=KEY
    # and its stream need no login; the key opens the signs (the meter and its pending prizes, what the
    # players see anyway) and nothing else. None: a sign needs a login like every page.
    sign_key: str | None = field(default=None, repr=False)
    max_sign_streams: int = 64  # keyed sign streams open at once (429 past it)
    clock: Callable[[], float] = time.monotonic
    # The wall clock (seconds since the epoch): which gaming day is "today" on the Reports page, and the
    # printed time. Injected in tests so none depends on the hour it runs.
    wall_clock: Callable[[], float] = time.time
    # (password, hash) -> bool: controller.passwords' scrypt check; a test may count the checks.
    verify: Callable[[str, str], bool] = verify_password
    # The reporting role's connections (docs/floor.md "The floor panel"): a few, shared by every page
    # and the one live-stream reader. Each query waits at most pool_timeout_s for one (PostgreSQL down:
    # 503 then) and then runs at most query_timeout_s (ended by PostgreSQL: statement_timeout), so a
    # page of n queries answers within n * (pool_timeout_s + query_timeout_s) at worst (the alerts: 3).
    pool_min_size: int = 1
    pool_max_size: int = 4
    pool_timeout_s: float = 5.0
    query_timeout_s: float = 15.0
    # The floor's settings the Reports, Meters and Surveillance pages read (the service's file): the
    # property's zone, gaming day, shifts and currency (controller/locale.py) for every time and amount.
    property_settings: PropertySettings = DEFAULT_PROPERTY
    surveillance_big_win_cents: int = 500_000
    # The pit map's layout ([[pits]] of the floor file, controller/floor/config.py); none: one grid.
    pits: tuple[PitLayout, ...] = ()
    # The wall clock the map's shift is read from (a test gives a fixed time: never the hour it runs).
    now_utc: Callable[[], datetime] = field(default=lambda: datetime.now(UTC))

    # Every amount the panel shows goes through money_format, every time through time_text: both the
    # property's (property_settings above), so its currency and zone are set in one place.
    @property
    def money_format(self) -> MoneyFormat:
        return self.property_settings.money

    def time_text(self, moment: datetime | str | None, *, with_date: bool = False) -> str:
        """``14:05:31 CET`` (``with_date``: ``2026-12-05 14:05:31 CET``) in the property's zone."""
        return tiles_time_text(moment, with_date=with_date, zone=self.property_settings.zone)


def search_moment(text: str, prop: PropertySettings) -> datetime:
    """A time typed into a search (``2026-12-01 08:00``): the property's wall clock, as every time on
    the pages is shown, unless it carries its own offset (``...+01:00``, ``...Z``). ValueError, in
    words, for anything else."""
    value = text.strip()[:40]
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise ValueError(f"{value!r} is not a time like 2026-12-01 08:00 ({prop.time_zone})") from None
    # A wall time the clocks skip or repeat reads as zoneinfo reads it (fold 0), as the shifts' bounds do.
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=prop.zone)


class DatabaseUnavailable(Exception):
    """PostgreSQL did not answer (down, unreachable, or slower than the bound): a page says so, 503."""


@dataclass
class PanelStats:
    """What the panel asked of PostgreSQL, counted (tests/floor/test_floor_panel_db.py reads them)."""

    queries: int = 0  # statements on the reporting pool, every page's and the feed's
    feed_reads: int = 0  # live-stream floor maps read (one a tick while any stream is open)


class FloorFeed:
    """The live floor map for every open stream: read once a tick while at least one stream is open,
    whatever the number of tabs, and handed to each as the same encoded frame."""

    def __init__(self, read: Callable[[], Awaitable[bytes]], interval_s: float) -> None:
        self.read = read
        self.interval_s = interval_s
        self.frame = b""  # the last tick's frame: event floor, or event unavailable
        self.version = 0  # moves when the frame changes: a stream sends what it has not sent yet
        self.tick = 0
        self.subscribers = 0
        self.parked = False  # True while no stream is open: nothing is read then
        self._ticked = asyncio.Condition()
        self._wanted = asyncio.Event()

    @contextlib.contextmanager
    def subscribe(self) -> Iterator[None]:
        self.subscribers += 1
        self._wanted.set()
        try:
            yield
        finally:
            self.subscribers -= 1

    async def run(self) -> None:
        """The app's one reader (a task of its lifespan)."""
        while True:
            if self.subscribers == 0:
                self.frame = b""  # nobody looked: a stream that opens later waits for a fresh map
                self._wanted.clear()
                self.parked = True
                await self._wanted.wait()
                self.parked = False
            frame = await self.read()
            async with self._ticked:
                if frame != self.frame:
                    self.frame, self.version = frame, self.version + 1
                self.tick += 1
                self._ticked.notify_all()
            await asyncio.sleep(self.interval_s)

    async def after(self, seen: int, timeout_s: float) -> int:
        """The tick after ``seen`` once it comes, or the current one after ``timeout_s``."""
        async with self._ticked:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(timeout_s):
                    await self._ticked.wait_for(lambda: self.tick > seen)
            return self.tick


class SlotStream(StreamingResponse):
    """A live stream that gives its user's slot back once, however it ends: the map's frames ran out
    (logout), the client went away (Starlette cancels the stream when it reads the disconnect), the
    server stops, or the stream failed before its first frame (then the generator's own ``finally``
    would never run: it was never started)."""

    def __init__(self, content: AsyncIterator[bytes], release: Callable[[], None]) -> None:
        super().__init__(
            content,
            media_type="text/event-stream",
            headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
        )
        self._release: Callable[[], None] | None = release

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            release, self._release = self._release, None
            if release is not None:
                release()


def clock_text(table: Mapping[str, Any]) -> str:
    """A tile's clock: the table's last offset from the floor's time source (floor.js says the same)."""
    offset_us = table.get("clock_offset_us")
    if offset_us is None:
        return "clock: unread" if table.get("clock_measured_utc") else "clock: not measured"
    past = "" if table.get("clock_within_bound") else " PAST BOUND"
    return f"clock {int(offset_us) / 1_000_000:+.3f} s{past}"


def create_floor_app(settings: FloorPanelSettings) -> FastAPI:
    # Opened at start without waiting (PostgreSQL may be down: the pages say so and the pool keeps
    # trying); a connection is checked before each use, so one that died with a restart of PostgreSQL
    # is replaced, not shown as an error. A reconnection that fails for 10 s gives up (the pool's own
    # backoff would otherwise wait up to minutes between tries): the next page starts a fresh one at
    # once, so the panel is back as soon as PostgreSQL is.
    pool = AsyncConnectionPool(
        settings.reporting_dsn,
        min_size=settings.pool_min_size,
        max_size=settings.pool_max_size,
        timeout=settings.pool_timeout_s,
        reconnect_timeout=10.0,
        check=AsyncConnectionPool.check_connection,
        kwargs={
            "connect_timeout": max(2, round(settings.pool_timeout_s)),
            # PostgreSQL itself ends a statement at the query bound: the connection comes back at once,
            # where a query cancelled from here costs psycopg's cancellation (up to 10 s) first.
            "options": _server_bounds(settings.query_timeout_s),
        },
        name="floor-panel",
        open=False,
    )
    stats = PanelStats()

    feed_error = ""  # the feed's failure last logged: one that persists is logged once, not each tick

    async def read_feed() -> bytes:
        nonlocal feed_error
        stats.feed_reads += 1
        try:
            text = json.dumps({"tables": await floor_map(), "alerts": await open_alert_count()}, default=str)
        except DatabaseUnavailable:  # (the driver's message names host, port and role: not sent)
            return _unavailable_frame("the floor database is not answering")
        except Exception as error:  # the one reader serves every stream: it logs and goes on, never dies
            if str(error) != feed_error:
                feed_error = str(error)
                log.exception("floor_panel_feed_failed")
            return _unavailable_frame("the floor map could not be read (see the panel's log)")
        feed_error = ""
        return f"event: floor\ndata: {text}\n\n".encode()

    feed = FloorFeed(read_feed, settings.sse_interval_s)
    sign_feeds: dict[str, FloorFeed] = {}  # a progressive link's live meter, one reader per link shown
    sign_readers: list[asyncio.Task[None]] = []

    @contextlib.asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        await pool.open(wait=False)
        reader = asyncio.create_task(feed.run(), name="floor-panel-feed")
        try:
            yield
        finally:
            for task in (reader, *sign_readers):
                task.cancel()
            for task in (reader, *sign_readers):
                with contextlib.suppress(asyncio.CancelledError):
                    await task
            await pool.close()

    app = FastAPI(
        title="flushtable floor panel", docs_url=None, redoc_url=None, openapi_url=None, lifespan=lifespan
    )
    app.state.pool, app.state.stats, app.state.feed = pool, stats, feed
    app.state.sign_feeds = sign_feeds
    # The floor's own few static files (the pit map's script and grid, the sign), then the table
    # panel's (its stylesheet, script and icon) at the same /static/... as at the table: one stylesheet
    # for both panels, served from controller/panel/static, never copied. The floor's mount first: a
    # mount takes every path under it.
    app.mount("/static/floor", StaticFiles(directory=HERE / "static"), name="floor-static")
    app.mount("/static", StaticFiles(directory=TABLE_PANEL / "static"), name="static")
    # The floor's own templates first (its base.html on the table panel's _layout.html, its pages),
    # then the table panel's (the layout, the login, the recall's partials).
    templates = Environment(
        loader=FileSystemLoader([HERE / "templates", TABLE_PANEL / "templates"]),
        autoescape=select_autoescape(),
    )

    def money_text(cents: object, signed: bool = False) -> str:
        # PostgreSQL's sums come back as Decimal (or NULL over no rows): whole cents either way; a
        # recall's missing amount (a returned wager's net) is a dash, as at the table.
        if cents is None or isinstance(cents, bool):
            return "—"
        return settings.money_format(int(cents), signed=signed)  # type: ignore[call-overload]

    templates.filters["money"] = money_text
    templates.filters["clock"] = settings.time_text
    templates.filters["when"] = lambda moment: settings.time_text(moment, with_date=True)
    templates.filters["when_time"] = settings.time_text

    templates.globals["time_zone"] = settings.property_settings.time_zone  # named beside every time
    templates.filters["game_title"] = game_title
    templates.globals["clock_text"] = clock_text
    limiter = LoginBudget(clock=settings.clock)
    unknown_user_hash = hash_password(secrets.token_urlsafe(16))  # checked against for unknown names
    sessions = RoleSessionStore[FloorRole](
        clock=settings.clock,
        idle_timeout_s=settings.idle_timeout_s,
        absolute_timeout_s=settings.absolute_timeout_s,
    )
    app.state.sessions = sessions  # the tests and a launcher may end a user's sessions (end_user)
    streams: dict[str, int] = {}  # open live streams per user (max_streams_per_user)
    app.state.streams = streams

    async def query(sql: str, params: tuple[Any, ...] | dict[str, Any] = ()) -> list[dict[str, Any]]:
        stats.queries += 1
        try:
            # The wait for a connection (pool_timeout_s) and the query itself, both bounded.
            async with asyncio.timeout(settings.pool_timeout_s + settings.query_timeout_s):
                async with pool.connection() as connection:
                    cursor = await connection.execute(sql.encode(), params)
                    names = [d.name for d in cursor.description or []]
                    return [dict(zip(names, row, strict=True)) for row in await cursor.fetchall()]
        except (psycopg.OperationalError, TimeoutError) as error:
            raise _db_error(error) from None

    @app.exception_handler(DatabaseUnavailable)
    async def database_unavailable(request: Request, error: Exception) -> Response:
        log.warning("floor_panel_db_unavailable", path=request.url.path, error=str(error))
        message = "The floor database (PostgreSQL) is not answering; this page works again once it is back."
        headers = {"Retry-After": "5", "Cache-Control": "no-store"}
        # The driver's message (host, port, role) goes to the log above, not to the browser.
        detail = "Details are in the panel log."
        if request.url.path.startswith("/api/"):
            return JSONResponse({"error": message, "detail": detail}, 503, headers=headers)
        # A form's POST (acknowledge, release) is not repeated by a reload: the page and its link go to
        # the alerts (a GET of the form's URL is a 405); a page's GET tries itself again.
        again = "" if request.method in ("GET", "HEAD") else "/alerts"
        html = templates.get_template("unavailable.html").render(message=message, detail=detail, again=again)
        return HTMLResponse(html, 503, headers=headers)

    def current_session(token: str | None, *, touch: bool) -> FloorSession | None:
        """The token's session while its user still has that login: a user disabled (or given another
        role) in the user file loses every session at once, the live streams' too."""
        session = sessions.get(token, touch=touch)
        if session is None:
            return None
        user = settings.users.get(session.user)
        if user is None or user.role != session.role:
            log.warning("floor_sessions_ended", user=session.user, reason="login disabled or changed")
            sessions.end_user(session.user)
            return None
        return session

    def session_of(request: Request, *, touch: bool = True) -> FloorSession | None:
        """The request's session; ``touch=False`` for what a page fetches by itself (the live stream,
        JSON polling): those do not count as the user's activity for the idle timeout."""
        return current_session(request.cookies.get(SESSION_COOKIE), touch=touch)

    async def page(name: str, session: FloorSession, **values: Any) -> HTMLResponse:
        # The Alerts badge's count on every page (the map's is kept live by its stream); the nav's
        # current page lit as at the table.
        html = templates.get_template(name).render(
            session=session, alert_count=await open_alert_count(), active=NAV_OF_PAGE.get(name), **values
        )
        return HTMLResponse(html, headers={"Cache-Control": "no-store"})

    def login_redirect() -> Response:
        return RedirectResponse("/login", status_code=303)

    def login_form(request: Request, message: str = "", status: int = 200, user: str = "") -> Response:
        """The login page with a fresh double-submit token: in the form and in LOGIN_CSRF_COOKIE. A
        login POST must carry both, equal: another site's form can send the field but cannot read or
        set this site's cookie, so it cannot log a browser into the attacker's account (login CSRF)."""
        token = secrets.token_urlsafe(24)
        html = templates.get_template("login.html").render(
            message=message, csrf_token=token, user=user, site="flushtable floor", subtitle=LOGIN_SUBTITLE
        )
        response = HTMLResponse(html, status, headers={"Cache-Control": "no-store"})
        set_cookie(response, request, LOGIN_CSRF_COOKIE, token, LOGIN_CSRF_MAX_AGE_S)
        return response

    # --- auth ---------------------------------------------------------------------------------------
    @app.get("/login", response_class=HTMLResponse)
    async def login_page(request: Request) -> Response:
        return login_form(request)

    async def session_form(request: Request) -> tuple[FloorSession, dict[str, str]] | Response:
        """A POST's session and form: the session (else to the login), the form read within
        MAX_FORM_BYTES (else 413), and the session's CSRF token in it (else 403). Every form after
        the login goes through here. The session is touched only once the form is its user's own: a
        refused one (forged, oversized) keeps no session alive."""
        session = session_of(request, touch=False)
        if session is None:
            return login_redirect()
        form = await read_form(request)
        if form is None:
            return HTMLResponse(FORM_TOO_LARGE, 413)
        if not secrets.compare_digest(
            form.get("csrf_token", "").encode("utf-8", "replace"), session.csrf_token.encode()
        ):
            return HTMLResponse("The form expired; reload the page.", 403)
        if session_of(request) is None:  # the user's own request: it counts as activity
            return login_redirect()
        return session, form

    @app.post("/login")
    async def login(request: Request) -> Response:
        form = await read_form(request)
        if form is None:
            return login_form(request, FORM_TOO_LARGE, 413)
        # The name as typed, truncated: it is logged (a log line stays one short line) and compared.
        name = form.get("user", "")[:USER_NAME_MAX_CHARS]
        password = form.get("password", "")[:MAX_PASSWORD_CHARS]
        cookie_token = request.cookies.get(LOGIN_CSRF_COOKIE, "")
        if not cookie_token or not secrets.compare_digest(
            cookie_token.encode("utf-8", "replace"), form.get("csrf_token", "").encode("utf-8", "replace")
        ):
            # Refused before the budget and the password check: a forged form costs no one's budget.
            return login_form(request, "The login form expired; please try again.", 403, name)
        remote = request.client.host if request.client else "?"
        keys = (f"addr:{remote}", f"user:{name}")
        # The budget is taken before the password check (controller.panel.auth.LoginBudget): however
        # many logins arrive at once, at most the budget of checks run.
        ticket = limiter.take(keys)
        if not isinstance(ticket, LoginTicket):
            wait_s = int(ticket) + 1
            # Refused unchecked: still a failed login, and logged as one (never the password).
            log.warning(
                "floor_login_failed", user=name, remote=remote, reason="locked_out", retry_after_s=wait_s
            )
            response = login_form(request, f"Too many failed logins. Try again in {wait_s} s.", 429, name)
            response.headers["Retry-After"] = str(wait_s)
            return response
        user = settings.users.get(name)
        ok = False
        try:
            # An unknown name costs the same check as a wrong password: the time tells no names.
            checked_hash = user.password_hash if user is not None else unknown_user_hash
            ok = await asyncio.to_thread(settings.verify, password, checked_hash)
        finally:
            # Settled however the request ends (a client gone mid-check counts as a failure).
            locked = limiter.settle(ticket, succeeded=user is not None and ok)
        if user is None or not ok:
            # The table panel's reasons: the failure that filled a budget locked its name or address.
            reason = "rate_limited" if locked else "bad_credentials"
            log.warning("floor_login_failed", user=name, remote=remote, reason=reason)
            return login_form(request, "Wrong user name or password.", 401, name)
        log.info("floor_login", user=user.name, role=user.role, remote=remote)
        # A login in a browser that still holds a session ends that one: one browser, one session.
        sessions.end(request.cookies.get(SESSION_COOKIE))
        session = sessions.create(user.name, user.role, must_change_password=False)  # no one-time ones
        response = RedirectResponse("/", status_code=303)
        set_cookie(response, request, SESSION_COOKIE, session.token, int(settings.absolute_timeout_s))
        response.delete_cookie(LOGIN_CSRF_COOKIE, path="/")  # spent: the next login page makes another
        return response

    @app.post("/logout")
    async def logout(request: Request) -> Response:
        if session_of(request, touch=False) is not None:  # without one: to the login all the same
            checked = await session_form(request)
            if not isinstance(checked, tuple):
                return checked  # a forged or stale form logs no one out
            sessions.end(checked[0].token)
        response = RedirectResponse("/login", status_code=303)
        response.delete_cookie(SESSION_COOKIE, path="/")
        return response

    # --- the floor map --------------------------------------------------------------------------------
    async def floor_map(table_id: str | None = None) -> list[dict[str, Any]]:
        """Every table's tile (controller/floor/tiles.py), or the one table's."""
        shift = current_shift(settings.now_utc(), settings.property_settings)
        rows = await query(
            "SELECT t.table_id, COALESCE(c.pit, t.pit) AS pit, t.game, t.phase, t.held, t.table_open, "
            "t.quarantined_at_seq IS NOT NULL AS quarantined, t.quarantine_reason, t.last_round_id, "
            "t.last_seq, t.updated_utc AS last_heard_utc, "
            # How long ago, by PostgreSQL's clock: the one that wrote updated_utc.
            "extract(epoch FROM now() - t.updated_utc)::float8 AS last_heard_age_s, "
            # Why a held table is held: its latched faults not cleared (the table's own words).
            "(SELECT string_agg(a.message, '; ' ORDER BY a.alert_id) FROM floor_alerts a "
            " WHERE a.table_id = t.table_id AND a.origin = 'table' AND a.severity = 'latching' "
            " AND a.cleared_utc IS NULL) AS hold_reason, "
            "(SELECT count(*) FROM floor_alerts a WHERE a.table_id = t.table_id "
            " AND a.acknowledged_utc IS NULL AND a.cleared_utc IS NULL) AS alerts, "
            "t.meters->'handle_cents' AS handle_cents, t.meters->'house_win_cents' AS house_win_cents, "
            # The release the table verified at its last start, learnt from its stream (software_verified;
            # docs/operations.md "Software verification"), and the floor's last seeded check of it.
            "(SELECT concat_ws(' ', e.payload->>'release', left(e.payload->>'release_digest', 16), "
            "  CASE WHEN (e.payload->>'development')::boolean THEN 'DEVELOPMENT' END) "
            " FROM floor_entries e WHERE e.table_id = t.table_id AND e.kind = 'software_verified' "
            " ORDER BY e.seq DESC LIMIT 1) AS software, "
            "(SELECT s.outcome FROM floor_software_checks s WHERE s.table_id = t.table_id "
            " ORDER BY s.check_id DESC LIMIT 1) AS software_check, "
            # The table's last clock measurement against the floor's time source (docs/floor.md
            # "Clocks"): the newest clock_offset entry, found backwards along the primary key.
            "o.payload->'offset_us' AS clock_offset_us, o.payload->'within_bound' AS clock_within_bound, "
            "o.payload->'bound_us' AS clock_bound_us, o.time_text AS clock_measured_utc, "
            "f.rounds AS shift_rounds, f.handle_cents AS shift_handle_cents, "
            "f.house_win_cents AS shift_house_win_cents, f.theoretical_win_cents AS shift_theoretical_cents "
            "FROM floor_tables t LEFT JOIN floor_table_config c USING (table_id) "
            # The shift's rounds by table, in the same statement (one read a tick for the live map):
            # the rounds closed in the shift, found by floor_rounds_by_time.
            "LEFT JOIN (SELECT r.table_id, count(*) FILTER (WHERE r.status = 'settled') AS rounds, "
            " sum(r.handle_cents)::bigint AS handle_cents, "
            " sum(r.house_win_cents)::bigint AS house_win_cents, "
            " sum(r.theoretical_win_cents)::bigint AS theoretical_win_cents FROM floor_rounds r "
            " WHERE r.closed_utc >= %(shift_start)s AND r.closed_utc < %(shift_end)s "
            " AND r.status <> 'in_progress' GROUP BY r.table_id) f ON f.table_id = t.table_id "
            "LEFT JOIN LATERAL (SELECT e.payload, e.time_text FROM floor_entries e "
            " WHERE e.table_id = t.table_id AND e.kind = 'clock_offset' ORDER BY e.seq DESC LIMIT 1) o "
            "ON true "
            + ("WHERE t.table_id = %(table)s " if table_id is not None else "")
            + "ORDER BY pit, t.table_id",
            {"table": table_id, "shift_start": shift.start, "shift_end": shift.end},
        )
        figures = {
            str(row["table_id"]): {
                "rounds": row.pop("shift_rounds"),
                "handle_cents": row.pop("shift_handle_cents"),
                "house_win_cents": row.pop("shift_house_win_cents"),
                "theoretical_win_cents": row.pop("shift_theoretical_cents"),
            }
            for row in rows
        }
        text = TileText(settings.money_format, settings.time_text, settings.now_utc())
        return [text.tile(row, figures.get(str(row["table_id"]))) for row in rows]

    @app.get("/", response_class=HTMLResponse)
    async def map_page(request: Request) -> Response:
        session = session_of(request)
        if session is None:
            return login_redirect()
        tiles = await floor_map()
        shift = current_shift(settings.now_utc(), settings.property_settings)
        shift_text = (
            f"{shift.name} shift, {settings.time_text(shift.start)} to {settings.time_text(shift.end)}"
        )
        return await page("map.html", session, pits=pit_map(tiles, settings.pits), shift_text=shift_text)

    @app.get("/tables/{table_id}", response_class=HTMLResponse)
    async def table_page(table_id: str, request: Request) -> Response:
        """One table: its tile, its open alerts and its last rounds, each a link to its round page."""
        session = session_of(request)
        if session is None:
            return login_redirect()
        if "\x00" in table_id or len(table_id) > 64:
            return HTMLResponse("No such table on the floor.", 404)
        found = await floor_map(table_id)
        if not found:
            return HTMLResponse("No such table on the floor.", 404)
        rounds = await query(
            "SELECT round_id, game, status, started_utc, closed_utc, handle_cents, house_win_cents, "
            "theoretical_win_cents FROM floor_rounds WHERE table_id = %s "
            "ORDER BY started_seq DESC NULLS LAST LIMIT 50",
            (table_id,),
        )
        alerts = await query(
            "SELECT alert_id, raised_utc, origin, kind, severity, message FROM floor_alerts "
            "WHERE table_id = %s AND acknowledged_utc IS NULL AND cleared_utc IS NULL ORDER BY alert_id DESC",
            (table_id,),
        )
        for r in rounds:
            r["game_title"] = game_title(r["game"])
        return await page("table.html", session, t=found[0], rounds=rounds, alerts=alerts)

    @app.get("/workers", response_class=HTMLResponse)
    async def workers_page(request: Request) -> Response:
        """Which worker holds which partition (docs/floor.md "Partitioned floor workers") and the NATS
        nodes as the workers last saw them: from PostgreSQL, so it reads on through a node's or a
        worker's loss. Empty on a one-worker floor."""
        session = session_of(request)
        if session is None:
            return login_redirect()
        leases = await query(
            "SELECT partition, partitions, worker, epoch, acquired_utc, renewed_utc, "
            "round(extract(epoch FROM clock_timestamp() - renewed_utc)::numeric, 1) AS renewed_ago_s "
            "FROM floor_partition_leases ORDER BY partition"
        )
        nodes = await query(
            "SELECT node, role, current, offline, lag, seen_by, seen_utc, "
            "round(extract(epoch FROM clock_timestamp() - seen_utc)::numeric, 1) AS seen_ago_s "
            "FROM floor_nats_nodes ORDER BY node"
        )
        return await page("workers.html", session, leases=leases, nodes=nodes)

    @app.get("/api/floor")
    async def floor_json(request: Request) -> Response:
        if session_of(request, touch=False) is None:
            return JSONResponse({"error": "login required"}, 401)
        return JSONResponse(json.loads(json.dumps(await floor_map(), default=str)))

    @app.get("/api/events")
    async def events(request: Request) -> Response:
        # Not touched, not even when opened: EventSource reconnects by itself, and a reconnect is the
        # page's doing, not the user's.
        token = request.cookies.get(SESSION_COOKIE)
        session = current_session(token, touch=False)
        if session is None:
            # No session (the panel restarted: sessions live in its memory; or it ended while the stream
            # reconnected): said on a 200 stream, for EventSource gives up for good on any other answer
            # and the open map would freeze unwarned; the page goes to the login.
            return Response(
                f"retry: {SSE_RETRY_MS}\n\n".encode() + SSE_LOGOUT,
                media_type="text/event-stream",
                headers={"Cache-Control": "no-store"},
            )
        user, cap = session.user, settings.max_streams_per_user
        release = take_stream_slot(streams, user, cap)
        if release is None:
            return JSONResponse(
                {"error": f"{cap} live streams are open for {user}: close a tab first"},
                429,
                headers={"Retry-After": "5", "Cache-Control": "no-store"},
            )

        return SlotStream(live_frames(feed, token), release)

    async def live_frames(feed: FloorFeed, token: str | None, *, keyed: bool = False) -> AsyncIterator[bytes]:
        """One open stream of ``feed``'s frames (the map's, or a progressive link's meter); ``keyed``: a
        sign's, opened by the sign key (no session to end it; it ends when the sign goes away)."""
        yield f"retry: {SSE_RETRY_MS}\n\n".encode()
        with feed.subscribe():
            tick, sent_version, sent_s = -1, 0, time.monotonic()
            while True:
                # The feed's next frame (one read for all streams), or a tick's time without one
                # (the database slow): either way the session is looked at again.
                tick = await feed.after(tick, 2 * settings.sse_interval_s)
                if not keyed and current_session(token, touch=False) is None:  # expired or logged out
                    yield SSE_LOGOUT
                    return
                if feed.frame and feed.version != sent_version:
                    sent_version, sent_s = feed.version, time.monotonic()
                    yield feed.frame
                elif time.monotonic() - sent_s >= settings.sse_keepalive_s:
                    sent_s = time.monotonic()
                    yield SSE_KEEP_ALIVE

    async def open_alert_count() -> int:
        rows = await query(
            "SELECT count(*) AS n FROM floor_alerts WHERE acknowledged_utc IS NULL AND cleared_utc IS NULL"
        )
        return int(rows[0]["n"])

    # --- alerts ---------------------------------------------------------------------------------------
    @app.get("/alerts", response_class=HTMLResponse)
    async def alerts_page(request: Request) -> Response:
        session = session_of(request)
        if session is None:
            return login_redirect()
        return await alerts_view(session)

    async def alerts_view(session: FloorSession, *, message: str = "", status: int = 200) -> HTMLResponse:
        alerts = await query(
            "SELECT alert_id, raised_utc, table_id, seq, origin, kind, severity, message, acknowledged_by, "
            "acknowledged_utc, cleared_utc FROM floor_alerts "
            "ORDER BY (acknowledged_utc IS NULL AND cleared_utc IS NULL) DESC, alert_id DESC LIMIT 500"
        )
        quarantined = await query(
            "SELECT table_id, quarantined_at_seq, quarantine_reason FROM floor_tables "
            "WHERE quarantined_at_seq IS NOT NULL ORDER BY table_id"
        )
        releases = await query(
            "SELECT r.release_id, r.released_utc, r.table_id, r.quarantined_at_seq, r.released_by, r.reason, "
            "r.via, r.set_aside, a.applied_utc, a.outcome FROM floor_releases r "
            "LEFT JOIN floor_release_applied a USING (release_id) ORDER BY r.release_id DESC LIMIT 50"
        )
        can_ack = session.role in ACKNOWLEDGING_ROLES and settings.writer_dsn is not None
        can_release = session.role in RELEASING_ROLES and settings.writer_dsn is not None
        response = await page("alerts.html", session, alerts=alerts, can_ack=can_ack, quarantined=quarantined,
                        releases=releases, can_release=can_release, message=message)  # fmt: skip
        response.status_code = status
        return response

    @app.post("/alerts/{alert_id}/acknowledge")
    async def acknowledge(alert_id: int, request: Request) -> Response:
        checked = await session_form(request)
        if not isinstance(checked, tuple):
            return checked
        session, _form = checked
        if session.role not in ACKNOWLEDGING_ROLES or settings.writer_dsn is None:
            return HTMLResponse(f"A {session.role} cannot acknowledge alerts.", 403)
        try:
            async with asyncio.timeout(settings.pool_timeout_s + settings.query_timeout_s):
                # The writer connects for each acknowledgement (a person's click: rare), so no idle
                # connection of the writer role is held by the panel.
                async with await psycopg.AsyncConnection.connect(
                    settings.writer_dsn,
                    connect_timeout=max(2, round(settings.pool_timeout_s)),
                    options=_server_bounds(settings.query_timeout_s),
                ) as connection:
                    await connection.execute(
                        "UPDATE floor_alerts SET acknowledged_by = %s, acknowledged_utc = now() "
                        "WHERE alert_id = %s AND acknowledged_utc IS NULL",
                        (session.user, alert_id),
                    )
        except (psycopg.OperationalError, TimeoutError) as error:
            raise _db_error(error) from None
        return RedirectResponse("/alerts", status_code=303)

    @app.post("/alerts/acknowledge")
    async def acknowledge_many(request: Request) -> Response:
        """Bulk: the alerts the form names (``ack_<id>`` fields: the ticked ones, or every open one the
        page listed), each acknowledged under the user's name unless it already was or has cleared."""
        checked = await session_form(request)
        if not isinstance(checked, tuple):
            return checked
        session, form = checked
        if session.role not in ACKNOWLEDGING_ROLES or settings.writer_dsn is None:
            return HTMLResponse(f"A {session.role} cannot acknowledge alerts.", 403)
        ids = sorted({int(k[4:]) for k in form if k.startswith("ack_") and k[4:].isdigit() and len(k) < 24})
        if not ids:
            return await alerts_view(
                session, message="Nothing acknowledged: no alert was selected.", status=400
            )
        try:
            async with asyncio.timeout(settings.pool_timeout_s + settings.query_timeout_s):
                async with await psycopg.AsyncConnection.connect(
                    settings.writer_dsn,
                    connect_timeout=max(2, round(settings.pool_timeout_s)),
                    options=_server_bounds(settings.query_timeout_s),
                ) as connection:
                    cursor = await connection.execute(
                        "UPDATE floor_alerts SET acknowledged_by = %s, acknowledged_utc = now() "
                        "WHERE alert_id = ANY(%s) AND acknowledged_utc IS NULL AND cleared_utc IS NULL",
                        (session.user, ids),
                    )
                    done = cursor.rowcount
        except (psycopg.OperationalError, TimeoutError) as error:
            raise _db_error(error) from None
        except psycopg.DataError:  # an id past bigint
            return await alerts_view(session, message="Nothing acknowledged: no such alert.", status=400)
        log.info("floor_alerts_acknowledged", user=session.user, alerts=done, asked=len(ids))
        skipped = len(ids) - done
        message = f"Acknowledged {done} alert{'s' if done != 1 else ''} as {session.user}" + (
            f"; {skipped} already acknowledged or cleared." if skipped else "."
        )
        return await alerts_view(session, message=message)

    @app.post("/tables/{table_id}/release")
    async def release(table_id: str, request: Request) -> Response:
        """Release a quarantined table: a manager's, with a reason; refused in one line otherwise."""
        checked = await session_form(request)
        if not isinstance(checked, tuple):
            return checked
        session, form = checked
        if session.role not in RELEASING_ROLES or settings.writer_dsn is None:
            return HTMLResponse(f"A {session.role} cannot release a table (a manager can).", 403)
        writer_dsn = settings.writer_dsn
        connect_timeout_s = max(2, round(settings.pool_timeout_s))

        if "\x00" in table_id:  # PostgreSQL's text holds no NUL: no table has such a name
            return HTMLResponse("No such table on the floor.", 404)
        if "\x00" in form.get("reason", ""):
            return HTMLResponse("Release refused: the reason holds a NUL byte.", 422)

        def record() -> str:
            # Run in a thread with a synchronous connection: every statement and lock wait bounded by
            # PostgreSQL (query_timeout_s), else a lock held on floor_tables held the thread for good.
            with psycopg.connect(
                writer_dsn,
                connect_timeout=connect_timeout_s,
                options=_server_bounds(settings.query_timeout_s),
            ) as connection:
                return release_table(
                    connection, table_id[:64], reason=form.get("reason", ""), by=session.user, via="panel"
                ).summary()

        try:
            await asyncio.to_thread(record)
        except ReleaseRefused as refused:
            return await alerts_view(session, message=f"Release refused: {refused}", status=409)
        except psycopg.DataError as error:  # any other text PostgreSQL cannot store: bad input, one line
            return HTMLResponse(f"Release refused: {_first_line(error)}.", 422)
        except psycopg.OperationalError as error:  # down, or past the bound: PostgreSQL down's 503
            raise _db_error(error) from None
        except psycopg.Error as error:
            return await alerts_view(session, message=f"Release failed: {_first_line(error)}", status=503)
        return RedirectResponse("/alerts", status_code=303)

    # --- meters ---------------------------------------------------------------------------------------
    async def meters_rows(by: str) -> tuple[str, list[dict[str, Any]]]:
        """The meters page's rows (and its CSV's) grouped ``by`` (an unknown grouping is by table)."""
        by = by if by in MEASURES else "table"
        if by != "shift":
            return by, await query(f"SELECT * FROM {_VIEW[by]} ORDER BY key")
        # The shifts are the property's (controller/locale.py), computed here and given to the query as
        # bounds: SQL holds no second definition of them (migration 10 dropped floor_shift).
        span = await query("SELECT min(closed_utc) AS first, max(closed_utc) AS last FROM floor_round_meters")
        if not span or span[0]["first"] is None:
            return by, []
        shifts = shifts_between(span[0]["first"], span[0]["last"], settings.property_settings)
        labels, starts = [s[0] for s in shifts], [s[1] for s in shifts]
        return by, await query(SHIFT_METERS_SQL, {"labels": labels, "starts": starts, "end": shifts[-1][2]})

    @app.get("/meters", response_class=HTMLResponse)
    async def meters_page(request: Request, by: str = "table") -> Response:
        session = session_of(request)
        if session is None:
            return login_redirect()
        by, rows = await meters_rows(by)
        top = max([abs(int(r["house_win_cents"] or 0)) for r in rows] +
                  [abs(int(r["theoretical_win_cents"] or 0)) for r in rows] + [1])  # fmt: skip
        return await page("meters.html", session, rows=rows, by=by, measures=MEASURES, scale=top)

    @app.get("/meters/csv")
    async def meters_csv(request: Request, by: str = "table") -> Response:
        """The meters page's rows as CSV (controller/floor/export.py), behind the page's login."""
        session = session_of(request)
        if session is None:
            return login_redirect()
        by, rows = await meters_rows(by)
        return export.csv_response(
            export.meters_csv(by, rows, settings.property_settings), f"floor-meters-by-{by}.csv"
        )

    # --- rounds ---------------------------------------------------------------------------------------
    @app.get("/rounds", response_class=HTMLResponse)
    async def rounds_page(
        request: Request, q: str = "", table: str = "", since: str = "", until: str = ""
    ) -> Response:
        session = session_of(request)
        if session is None:
            return login_redirect()
        conditions: list[str] = ["TRUE"]
        params: list[Any] = []
        if q:
            conditions.append("round_id = %s")
            params.append(q.strip()[:64])
        if table:
            conditions.append("table_id = %s")
            params.append(table.strip()[:32])
        try:
            for op, value in ((">=", since), ("<=", until)):
                if value.strip():
                    conditions.append(f"COALESCE(closed_utc, started_utc) {op} %s")
                    params.append(search_moment(value, settings.property_settings))
        except ValueError as error:
            return await page("rounds.html", session, rounds=[], q=q, table=table, since=since, until=until,
                              message=f"Search refused: {error}")  # fmt: skip
        try:
            rounds = await query(
                "SELECT table_id, round_id, game, status, started_utc, closed_utc, handle_cents, "
                f"house_win_cents FROM floor_rounds WHERE {' AND '.join(conditions)} "
                "ORDER BY started_utc DESC NULLS LAST LIMIT 200",
                tuple(params),
            )
            message = ""
        except psycopg.DataError as error:
            rounds, message = [], f"Search refused: {str(error).splitlines()[0]}"
        return await page("rounds.html", session, rounds=rounds, q=q, table=table, since=since, until=until,
                    message=message)  # fmt: skip

    @app.get("/tables/{table_id}/rounds/{round_id}", response_class=HTMLResponse)
    async def round_page(table_id: str, round_id: str, request: Request) -> Response:
        session = session_of(request)
        if session is None:
            return login_redirect()
        detail = await round_detail(table_id, round_id, show_private=session.role not in PRIVATE_BLIND_ROLES)
        if detail is None:
            return HTMLResponse("No such round on the floor.", 404)
        can_disclose = (
            session.role in DISCLOSING_ROLES
            and settings.writer_dsn is not None
            and detail["status"] in ("settled", "dead", "void")
            and any(e["withheld"] for e in detail["events"])
        )
        return await page("round.html", session, **detail, can_disclose=can_disclose, message="")

    @app.get("/tables/{table_id}/rounds/{round_id}/csv")
    async def round_csv(table_id: str, round_id: str, request: Request) -> Response:
        """The round page as the CLI's recall CSV: what the page shows (its events, their private parts
        only where the page shows them), nothing more."""
        session = session_of(request)
        if session is None:
            return login_redirect()
        detail = await round_detail(table_id, round_id, show_private=session.role not in PRIVATE_BLIND_ROLES)
        if detail is None:
            return HTMLResponse("No such round on the floor.", 404)
        record = export.round_record(round_id, detail["events"])
        if record is None:
            return HTMLResponse("The round is not closed yet: its CSV comes once it is.", 409)
        return export.csv_response(
            export.round_csv(record, settings.property_settings), f"round-{table_id}-{round_id}.csv"
        )

    async def round_detail(
        table_id: str, round_id: str, *, show_private: bool = True
    ) -> dict[str, Any] | None:
        """A round's events; ``show_private=False`` (a viewer's): every private part withheld."""
        try:
            rows = await query(
                "SELECT e.seq, e.time_text, e.round_id, e.source, e.kind, e.payload::text AS payload_text, "
                "p.private_text, e.version, e.private_digest, e.prev_hash, e.hash "
                "FROM floor_entries e LEFT JOIN floor_private_shown p USING (table_id, seq) "
                "WHERE e.table_id = %s AND e.round_id = %s ORDER BY e.seq",
                (table_id, round_id),
            )
        except psycopg.DataError:  # an id PostgreSQL cannot hold (a NUL byte): no such round
            return None
        if not rows:
            return None
        state = TableState(table_id)
        stored_rows = []
        for row in rows:
            entry = typed.decode_public(row["kind"], row["payload_text"])
            stored = FloorStored(
                row["seq"], row["time_text"], table_id, row["round_id"], row["source"], entry
            )
            state.apply(stored)
            stored_rows.append((row, stored))
        events = []
        for row, stored in stored_rows:
            private: dict[str, Any] | None = None
            if row["private_text"] is not None:
                full = typed.decode(row["kind"], row["payload_text"], row["private_text"])
                gated = FloorStored(
                    stored.seq, stored.time_utc, table_id, stored.round_id, stored.source, full
                )
                if show_private and state.private_visible(
                    gated
                ):  # the one gate, again: never before the reveal
                    private = typed.open_private(row["private_text"])
            events.append({
                "seq": row["seq"], "time_utc": row["time_text"], "kind": row["kind"], "source": row["source"],
                "public": canonical_json(json.loads(row["payload_text"])),
                "private": canonical_json(private) if private is not None else None,
                # Not shown, whether the floor holds it or not (a part it holds of a round voided
                # before its reveal stays withheld: issue 22).
                "withheld": private is None and row["kind"] in _KINDS_WITH_PRIVATE,
            })  # fmt: skip
        round_state = state.round(round_id)
        # The round as the table's recall reads it: the same entries through the same record builder,
        # reducer and gate (controller/journal/recall.py), then the table panel's view of it.
        columns = ("seq", "time_text", "table_id", "round_id", "source", "kind", "version", "payload_text",
                   "private_text", "private_digest", "prev_hash", "hash")  # fmt: skip
        shown_row = {"table_id": table_id} | ({} if show_private else {"private_text": None})
        entries = [
            entry_from_row(tuple({**row, **shown_row}[name] for name in columns)) for row, _ in stored_rows
        ]
        record = round_record(table_id, entries, in_play=True)
        return {
            "table_id": table_id,
            "round_id": round_id,
            "status": round_state.status if round_state else "?",
            "events": events,
            "record": public_recall(record, settings.money_format) if record is not None else None,
        }

    # --- progressive links (docs/floor.md "Progressive: the page, the sign, reconciliation") ------------
    @app.get("/progressive", response_class=HTMLResponse)
    async def progressive_links(request: Request) -> Response:
        session = session_of(request)
        if session is None:
            return login_redirect()
        return await page("progressive_links.html", session, links=await progressive_view.link_list(query))

    def window_days(days: str) -> int | None:
        """The reconciliation's window in days (``?days=``, 1 to 366; 7 when not given), None if bad."""
        if not days:
            return round(progressive_view.RECONCILE_WINDOW_S / 86400)
        if not days.isdigit() or not 1 <= int(days) <= progressive_view.MAX_WINDOW_DAYS:
            return None
        return int(days)

    async def link_detail_or_refusal(link_id: str, days: str) -> tuple[int, dict[str, Any]] | Response:
        """The link's page data over the asked window, or the one-line refusal (bad window, no link)."""
        window = window_days(days[:8])
        if window is None:
            return HTMLResponse(
                f"days: a whole number of days from 1 to {progressive_view.MAX_WINDOW_DAYS}.", 422
            )
        detail = await progressive_view.link_detail(
            query, link_id, window_s=window * 86400.0, prop=settings.property_settings
        )
        if detail is None:
            return HTMLResponse("No such progressive link on the floor.", 404)
        return window, detail

    @app.get("/progressive/{link_id}", response_class=HTMLResponse)
    async def progressive_page(link_id: str, request: Request, days: str = "") -> Response:
        session = session_of(request)
        if session is None:
            return login_redirect()
        found = await link_detail_or_refusal(link_id, days)
        if isinstance(found, Response):
            return found
        window, detail = found
        return await page("progressive.html", session, days=window, **detail)

    @app.get("/progressive/{link_id}/csv")
    async def progressive_csv(link_id: str, request: Request, days: str = "") -> Response:
        """The progressive page as CSV (controller/floor/export.py), behind the page's login."""
        if session_of(request) is None:
            return login_redirect()
        found = await link_detail_or_refusal(link_id, days)
        if isinstance(found, Response):
            return found
        _window, detail = found
        return export.csv_response(
            export.progressive_csv(detail, settings.property_settings), f"floor-progressive-{link_id}.csv"
        )

    @app.get("/progressive/{link_id}/sign", response_class=HTMLResponse)
    async def progressive_sign(link_id: str, request: Request, key: str = "") -> Response:
        """The meter over the pit: large digits, live, no controls (a screen, not a page to work in)."""
        keyed = sign_key_ok(key)
        session = None if keyed else session_of(request)
        if session is None and not keyed:
            return login_redirect()
        frame = await progressive_view.sign_frame(query, link_id, settings.property_settings)
        if frame is None:
            return HTMLResponse("No such progressive link on the floor.", 404)
        html = templates.get_template("progressive_sign.html").render(sign=frame, key=key if keyed else "")
        # The key is in the page's address: it is not sent on to another site, and not cached.
        headers = {"Cache-Control": "no-store", "Referrer-Policy": "no-referrer"}
        return HTMLResponse(html, headers=headers)

    def sign_key_ok(key: str) -> bool:
        expected = settings.sign_key
        return bool(expected and key) and secrets.compare_digest(
            key.encode("utf-8", "replace"), str(expected).encode("utf-8", "replace")
        )

    def sign_feed(link_id: str) -> FloorFeed:
        """The link's one reader for every sign and page showing it live (as the map's FloorFeed)."""
        feed = sign_feeds.get(link_id)
        if feed is None:

            async def read() -> bytes:
                try:
                    frame = await progressive_view.sign_frame(query, link_id, settings.property_settings)
                except DatabaseUnavailable:
                    return _unavailable_frame("the floor database is not answering")
                except Exception:  # the reader serves every sign of the link: logged, never dies
                    log.exception("floor_panel_sign_failed", link_id=link_id)
                    return _unavailable_frame("the meter could not be read (see the panel's log)")
                if frame is None:
                    return _unavailable_frame("no such progressive link")
                return f"event: meter\ndata: {json.dumps(frame)}\n\n".encode()

            feed = sign_feeds[link_id] = FloorFeed(read, settings.sse_interval_s)
            sign_readers.append(asyncio.create_task(feed.run(), name=f"floor-panel-sign-{link_id[:32]}"))
        return feed

    @app.get("/api/progressive/{link_id}/events")
    async def progressive_events(link_id: str, request: Request, key: str = "") -> Response:
        """The link's meter, live (the map's stream: the same session rules, slots and frames; or a
        sign's, by the sign key: no session, one shared cap)."""
        token = request.cookies.get(SESSION_COOKIE)
        session = current_session(token, touch=False)
        keyed = session is None and sign_key_ok(key)
        if session is None and not keyed:
            return Response(
                f"retry: {SSE_RETRY_MS}\n\n".encode() + SSE_LOGOUT,
                media_type="text/event-stream",
                headers={"Cache-Control": "no-store"},
            )
        if "\x00" in link_id or len(link_id) > MAX_LINK_ID_CHARS:
            return JSONResponse({"error": "no such progressive link"}, 404)
        if link_id not in sign_feeds and len(sign_feeds) >= MAX_SIGN_FEEDS:
            return JSONResponse({"error": "too many progressive links shown at once"}, 429)
        if keyed:
            # The signs' one budget ("\x00" is in no user's name), past which a sign is refused, 429.
            user, cap = "\x00signs", settings.max_sign_streams
        else:
            assert session is not None
            user, cap = session.user, settings.max_streams_per_user
        release = take_stream_slot(streams, user, cap)
        if release is None:
            return JSONResponse(
                {"error": f"{cap} live streams are open for {user.strip(chr(0))}: close one first"},
                429,
                headers={"Retry-After": "5", "Cache-Control": "no-store"},
            )
        feed = sign_feed(link_id)
        return SlotStream(live_frames(feed, None if keyed else token, keyed=keyed), release)

    @app.get("/api/tables/{table_id}/rounds/{round_id}")
    async def round_json(table_id: str, round_id: str, request: Request) -> Response:
        session = session_of(request, touch=False)
        if session is None:
            return JSONResponse({"error": "login required"}, 401)
        detail = await round_detail(table_id, round_id, show_private=session.role not in PRIVATE_BLIND_ROLES)
        return JSONResponse(detail or {"error": "no such round"}, 200 if detail else 404)

    # --- gaming-day reports (controller/floor/gaming_day.py) -----------------------------------------
    def default_day() -> str:
        """The last whole gaming day (the one before the gaming day now running)."""
        today = gaming_day_of(datetime.fromtimestamp(settings.wall_clock(), UTC), settings.property_settings)
        return (today - timedelta(days=1)).isoformat()

    async def day_report(day: str, pit: str) -> gaming_day.DayReport:
        start, end = gaming_day.gaming_day_range(day, settings.property_settings)
        pit_rows = await query(
            "SELECT t.table_id, COALESCE(c.pit, t.pit, '') AS pit FROM floor_tables t "
            "LEFT JOIN floor_table_config c USING (table_id)"
        )
        rows = await query(
            "SELECT table_id, kind, time_text, payload FROM floor_entries WHERE time_utc >= %s "
            "AND time_utc < %s AND (kind = ANY(%s) OR kind LIKE 'progressive\\_%%') ORDER BY table_id, seq",
            (start, end, list(gaming_day.REPORT_KINDS)),
        )
        entries = [gaming_day.DayEntry(r["table_id"], r["kind"], r["time_text"], r["payload"]) for r in rows]
        pits = {str(r["table_id"]): str(r["pit"]) for r in pit_rows}
        return gaming_day.build_report(day, settings.property_settings, entries, pits, pit=pit or None)

    @app.get("/reports", response_class=HTMLResponse)
    async def reports_page(request: Request, day: str = "", pit: str = "") -> Response:
        session = session_of(request)
        if session is None:
            return login_redirect()
        day = day.strip()[:10] or default_day()
        try:
            report = await day_report(day, pit.strip()[:64])
        except UserError as error:
            return await page("report.html", session, report=None, day=day, pit=pit, message=str(error))
        rows = [
            {"scope": r.scope, "key": r.key, "pit": r.pit, "games": ", ".join(sorted(r.figures.games)),
             "measures": dict(gaming_day.measures(r.figures)), "figures": r.figures}
            for r in report.rows
        ]  # fmt: skip
        return await page("report.html", session, report=report, rows=rows, day=day, pit=pit, message="",
                    printed_utc=settings.time_text(datetime.fromtimestamp(settings.wall_clock(), UTC),
                                                   with_date=True))  # fmt: skip

    @app.get("/reports/csv")
    async def reports_csv(request: Request, day: str = "", pit: str = "") -> Response:
        """The report's CSV: its last line the SHA-256 of every byte before it, which is also the
        ``X-Report-SHA256`` header and the figure the printed page shows."""
        session = session_of(request)
        if session is None:
            return login_redirect()
        day = day.strip()[:10] or default_day()
        try:
            report = await day_report(day, pit.strip()[:64])
        except UserError as error:
            return HTMLResponse(str(error), 400)
        suffix = f"-pit-{pit}" if pit else ""
        response = export.csv_response(report.csv_text(), f"gaming-day-{day}{suffix}.csv")
        response.headers["X-Report-SHA256"] = report.digest
        return response

    # --- surveillance (controller/floor/surveillance.py) -----------------------------------------------
    @app.get("/surveillance", response_class=HTMLResponse)
    async def surveillance_page(request: Request, table: str = "") -> Response:
        """The last significant events, newest first: the events the floor service publishes on
        surveillance.<table>, made from the same entries by the same function."""
        session = session_of(request)
        if session is None:
            return login_redirect()
        condition = ""
        params: list[Any] = [list(surveillance.EVENT_ENTRY_KINDS)]
        if table:
            condition = " AND table_id = %s"
            params.append(table.strip()[:32])
        rows = await query(
            f"SELECT {surveillance.EVENT_COLUMNS} FROM floor_entries WHERE kind = ANY(%s){condition} "
            "ORDER BY floor_committed_utc DESC, table_id, seq DESC LIMIT 500",
            tuple(params),
        )
        ordered = [tuple(r[c.strip()] for c in surveillance.EVENT_COLUMNS.split(",")) for r in rows]
        events = surveillance.events_of_rows(
            ordered, settings.surveillance_big_win_cents, settings.money_format
        )[:200]
        return await page("surveillance.html", session, events=events, table=table,
                    threshold=settings.surveillance_big_win_cents)  # fmt: skip

    # --- the auditor's disclosure of a closed round's withheld private parts ---------------------------
    @app.post("/tables/{table_id}/rounds/{round_id}/disclose", response_class=HTMLResponse)
    async def disclose(table_id: str, round_id: str, request: Request) -> Response:
        checked = await session_form(request)
        if not isinstance(checked, tuple):
            return checked
        session, form = checked
        if session.role not in DISCLOSING_ROLES or settings.writer_dsn is None:
            return HTMLResponse(
                f"A {session.role} cannot be shown withheld private parts (an auditor can).", 403
            )
        reason = " ".join(form.get("reason", "").split())
        detail = await round_detail(table_id, round_id)
        if detail is None:
            return HTMLResponse("No such round on the floor.", 404)
        if not reason or len(reason) > MAX_REASON_CHARS:
            why = (
                "a reason is required" if not reason else f"the reason is over {MAX_REASON_CHARS} characters"
            )
            message = f"Not shown: {why}."
            return await page("round.html", session, **detail, can_disclose=True, message=message)
        if detail["status"] not in ("settled", "dead", "void"):
            return await page("round.html", session, **detail, can_disclose=False,
                        message="Not shown: the round is not closed.")  # fmt: skip
        withheld = {e["seq"] for e in detail["events"] if e["withheld"]}
        try:
            async with asyncio.timeout(settings.pool_timeout_s + settings.query_timeout_s):
                async with (
                    await psycopg.AsyncConnection.connect(
                        settings.writer_dsn,
                        connect_timeout=max(2, round(settings.pool_timeout_s)),
                        options=_server_bounds(settings.query_timeout_s),
                    ) as connection,
                    connection.transaction(),
                ):
                    cursor = await connection.execute(
                        "SELECT p.seq, p.private_text FROM floor_private p JOIN floor_entries e "
                        "USING (table_id, seq) WHERE e.table_id = %s AND e.round_id = %s ORDER BY p.seq",
                        (table_id, round_id),
                    )
                    parts = {int(seq): str(text) for seq, text in await cursor.fetchall() if seq in withheld}
                    # Recorded before anything is shown, in the same transaction: no record, no parts.
                    await connection.execute(
                        "INSERT INTO floor_private_disclosures (table_id, round_id, round_status, "
                        "disclosed_to, role, reason, parts) VALUES (%s, %s, %s, %s, %s, %s, %s)",
                        (
                            table_id,
                            round_id,
                            detail["status"],
                            session.user,
                            session.role,
                            reason,
                            len(parts),
                        ),
                    )
        except (psycopg.OperationalError, TimeoutError) as error:
            raise _db_error(error) from None
        log.warning("floor_private_disclosed", user=session.user, table_id=table_id, round_id=round_id,
                    parts=len(parts), reason=reason)  # fmt: skip
        for event in detail["events"]:
            if event["seq"] in parts:
                event["disclosed"] = canonical_json(typed.open_private(parts[event["seq"]]))
        message = (
            f"Shown to {session.user} for: {reason} (recorded in floor_private_disclosures; "
            f"{len(parts)} part(s) the floor holds). A reload shows them withheld again."
        )
        return await page("round.html", session, **detail, can_disclose=False, message=message)

    return app


async def read_form(request: Request, limit_bytes: int = MAX_FORM_BYTES) -> dict[str, str] | None:
    """A urlencoded form's fields (the first value of each), or None when the body passes
    ``limit_bytes``: refused from its Content-Length at once, else counted while it arrives (a chunked
    body), never read whole first and measured after."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit_bytes:
        return None
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit_bytes:
            return None
    fields = parse_qs(body.decode("utf-8", "replace"))
    return {name: values[0] for name, values in fields.items()}


def _unavailable_frame(error: str) -> bytes:
    return f"event: {SSE_UNAVAILABLE}\ndata: {json.dumps({'error': error})}\n\n".encode()


def _server_bounds(timeout_s: float) -> str:
    """libpq ``options`` by which PostgreSQL ends a statement, or a wait for a lock, after ``timeout_s``."""
    timeout_ms = max(1, round(timeout_s * 1000))
    return f"-c statement_timeout={timeout_ms} -c lock_timeout={timeout_ms}"


def _db_error(error: BaseException) -> DatabaseUnavailable:
    if isinstance(error, TimeoutError):
        return DatabaseUnavailable("no answer in time")
    return DatabaseUnavailable(_first_line(error))


def _first_line(error: BaseException) -> str:
    """An error's first line (psycopg's messages run to several: the detail, a hint)."""
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


_KINDS_WITH_PRIVATE = frozenset(
    kind for kind, cls in typed.CLASS_BY_STORED_KIND.items() if cls.PRIVATE is not None
)


async def serve_panel(settings: FloorPanelSettings, *, host: str = "127.0.0.1", port: int = 8090) -> Any:
    """Start the floor panel on the running loop; returns the server (``await server.stop()``)."""
    from controller.panel.server import PanelServer  # noqa: PLC0415 - uvicorn loads only with a panel

    server = PanelServer(create_floor_app(settings), host=host, port=port)
    await server.start()
    return server

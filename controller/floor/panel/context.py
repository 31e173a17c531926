"""What every router of the floor panel shares: the one :class:`FloorPanel` of an app (its settings, its
queries, sessions, login budget, templates, live feeds) and the FastAPI dependencies that hand it, the
session and a form's checked session to a route (the table panel's shape, controller/panel/context.py).

The routers (controller/floor/panel/routes/) hold no state: each reads the one ``FloorPanel`` from
``request.app.state.floor``.
"""

# No `from __future__ import annotations`: FastAPI reads the dependencies' annotations at run time.
import asyncio
import json
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any

import structlog
from fastapi import Depends, Form, Request
from fastapi.responses import HTMLResponse
from jinja2 import Environment, FileSystemLoader, select_autoescape

from controller.floor import progressive_view
from controller.floor.panel.feed import FloorFeed, unavailable_frame
from controller.floor.panel.settings import (
    HERE,
    SESSION_COOKIE,
    TABLE_PANEL,
    FloorPanelSettings,
    FloorRole,
    FloorSession,
)
from controller.floor.queries import DatabaseUnavailable, FloorQueries, QueryBounds
from controller.floor.tiles import TileText, current_shift
from controller.journal.render import game_title
from controller.panel.auth import LoginBudget, RoleSessionStore, hash_password
from controller.panel.login import NeedLogin, tokens_equal

log = structlog.get_logger("flushtable.floor.panel")

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


class NeedApiLogin(Exception):
    """An /api/... read without a session: 401 in JSON."""


class FormExpired(Exception):
    """A form without its session's CSRF token (forged, or from before a new login): 403."""


def clock_text(table: Mapping[str, Any]) -> str:
    """A tile's clock: the table's last offset from the floor's time source (floor.js says the same)."""
    offset_us = table.get("clock_offset_us")
    if offset_us is None:
        return "clock: unread" if table.get("clock_measured_utc") else "clock: not measured"
    past = "" if table.get("clock_within_bound") else " PAST BOUND"
    return f"clock {int(offset_us) / 1_000_000:+.3f} s{past}"


def floor_templates(settings: FloorPanelSettings) -> Environment:
    """The floor's own templates first (its base.html on the table panel's _layout.html, its pages),
    then the table panel's (the layout, the login, the recall's partials)."""
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
    return templates


@dataclass(eq=False)
class FloorPanel:
    """The floor panel's state, one per app."""

    settings: FloorPanelSettings
    queries: FloorQueries = field(init=False)
    templates: Environment = field(init=False)
    sessions: RoleSessionStore[FloorRole] = field(init=False)
    logins: LoginBudget = field(init=False)
    feed: FloorFeed = field(init=False)  # the live floor map, one reader for every open stream
    sign_feeds: dict[str, FloorFeed] = field(default_factory=dict)  # a link's live meter, one reader each
    readers: list["asyncio.Task[None]"] = field(default_factory=list)  # the feeds' tasks
    streams: dict[str, int] = field(default_factory=dict)  # open live streams per user
    feed_error: str = ""  # the feed's failure last logged: one that persists is logged once, not each tick

    def __post_init__(self) -> None:
        settings = self.settings
        bounds = QueryBounds(
            settings.pool_min_size, settings.pool_max_size, settings.pool_timeout_s, settings.query_timeout_s
        )
        self.queries = FloorQueries(settings.reporting_dsn, settings.writer_dsn, bounds)
        self.templates = floor_templates(settings)
        self.sessions = RoleSessionStore[FloorRole](
            clock=settings.clock,
            idle_timeout_s=settings.idle_timeout_s,
            absolute_timeout_s=settings.absolute_timeout_s,
        )
        self.logins = LoginBudget(clock=settings.clock)
        self.unknown_user_hash = hash_password(secrets.token_urlsafe(16))  # checked for unknown names
        self.feed = FloorFeed(self.read_feed, settings.sse_interval_s)

    @property
    def writable(self) -> bool:
        return self.settings.writer_dsn is not None

    # --- sessions -------------------------------------------------------------------------------------
    def current_session(self, token: str | None, *, touch: bool) -> FloorSession | None:
        """The token's session while its user still has that login: a user disabled (or given another
        role) in the user file loses every session at once, the live streams' too."""
        session = self.sessions.get(token, touch=touch)
        if session is None:
            return None
        user = self.settings.users.get(session.user)
        if user is None or user.role != session.role:
            log.warning("floor_sessions_ended", user=session.user, reason="login disabled or changed")
            self.sessions.end_user(session.user)
            return None
        return session

    def session_of(self, request: Request, *, touch: bool = True) -> FloorSession | None:
        """The request's session; ``touch=False`` for what a page fetches by itself (the live stream,
        JSON polling): those do not count as the user's activity for the idle timeout."""
        return self.current_session(request.cookies.get(SESSION_COOKIE), touch=touch)

    # --- pages ----------------------------------------------------------------------------------------
    async def page(self, name: str, session: FloorSession, **values: Any) -> HTMLResponse:
        # The Alerts badge's count on every page (the map's is kept live by its stream); the nav's
        # current page lit as at the table.
        html = self.templates.get_template(name).render(
            session=session,
            alert_count=await self.queries.open_alert_count(),
            active=NAV_OF_PAGE.get(name),
            **values,
        )
        return HTMLResponse(html, headers={"Cache-Control": "no-store"})

    async def tiles(self, table_id: str | None = None) -> list[dict[str, Any]]:
        """Every table's tile (controller/floor/tiles.py), or the one table's."""
        shift = current_shift(self.settings.now_utc(), self.settings.property_settings)
        rows = await self.queries.floor_map(shift.start, shift.end, table_id)
        figures = {
            str(row["table_id"]): {
                "rounds": row.pop("shift_rounds"),
                "handle_cents": row.pop("shift_handle_cents"),
                "house_win_cents": row.pop("shift_house_win_cents"),
                "theoretical_win_cents": row.pop("shift_theoretical_cents"),
            }
            for row in rows
        }
        text = TileText(self.settings.money_format, self.settings.time_text, self.settings.now_utc())
        return [text.tile(row, figures.get(str(row["table_id"]))) for row in rows]

    # --- the live feeds -------------------------------------------------------------------------------
    async def read_feed(self) -> bytes:
        """The map's frame for this tick (the feed's one reader)."""
        self.queries.stats.feed_reads += 1
        try:
            tables, alerts = await self.tiles(), await self.queries.open_alert_count()
            text = json.dumps({"tables": tables, "alerts": alerts}, default=str)
        except DatabaseUnavailable:  # (the driver's message names host, port and role: not sent)
            return unavailable_frame("the floor database is not answering")
        except Exception as error:  # the one reader serves every stream: it logs and goes on, never dies
            if str(error) != self.feed_error:
                self.feed_error = str(error)
                log.exception("floor_panel_feed_failed")
            return unavailable_frame("the floor map could not be read (see the panel's log)")
        self.feed_error = ""
        return f"event: floor\ndata: {text}\n\n".encode()

    def sign_feed(self, link_id: str) -> FloorFeed:
        """The link's one reader for every sign and page showing it live (as the map's feed)."""
        feed = self.sign_feeds.get(link_id)
        if feed is None:
            prop = self.settings.property_settings

            async def read() -> bytes:
                try:
                    frame = await progressive_view.sign_frame(self.queries.rows, link_id, prop)
                except DatabaseUnavailable:
                    return unavailable_frame("the floor database is not answering")
                except Exception:  # the reader serves every sign of the link: logged, never dies
                    log.exception("floor_panel_sign_failed", link_id=link_id)
                    return unavailable_frame("the meter could not be read (see the panel's log)")
                if frame is None:
                    return unavailable_frame("no such progressive link")
                return f"event: meter\ndata: {json.dumps(frame)}\n\n".encode()

            feed = self.sign_feeds[link_id] = FloorFeed(read, self.settings.sse_interval_s)
            self.readers.append(asyncio.create_task(feed.run(), name=f"floor-panel-sign-{link_id[:32]}"))
        return feed

    def sign_key_ok(self, key: str) -> bool:
        expected = self.settings.sign_key
        return bool(expected and key) and tokens_equal(key, str(expected))


def floor_of(request: Request) -> FloorPanel:
    floor: FloorPanel = request.app.state.floor
    return floor


# The dependencies below are coroutines, though none awaits: FastAPI runs a plain function dependency
# in its thread pool, and the session store (controller/panel/auth.py RoleSessionStore) is not made
# for threads (a touch, an expired session's removal, a login's sweep over the dict). As coroutines
# they run on the event loop, as every route does, one at a time; a request also spends no thread hop.
async def floor_dep(request: Request) -> FloorPanel:
    return floor_of(request)


FloorDep = Annotated[FloorPanel, Depends(floor_dep)]


async def page_session(request: Request) -> FloorSession:
    """A page's session (touched: the user's own request), else to the login."""
    session = floor_of(request).session_of(request)
    if session is None:
        raise NeedLogin
    return session


async def api_session(request: Request) -> FloorSession:
    """What a page fetches by itself (not touched), else 401."""
    session = floor_of(request).session_of(request, touch=False)
    if session is None:
        raise NeedApiLogin
    return session


def checked_form_session(request: Request, csrf_token: str) -> FloorSession:
    """A POST's session: the session (else to the login) and its CSRF token in the form (else 403).
    The session is touched only once the form is its user's own: a refused one (forged, oversized)
    keeps no session alive."""
    floor = floor_of(request)
    session = floor.session_of(request, touch=False)
    if session is None:
        raise NeedLogin
    if not tokens_equal(csrf_token, session.csrf_token):
        raise FormExpired
    if floor.session_of(request) is None:  # the user's own request: it counts as activity
        raise NeedLogin
    return session


async def form_session(request: Request, csrf_token: Annotated[str, Form()] = "") -> FloorSession:
    """Every form after the login goes through here (:func:`checked_form_session`); the form itself is
    read by FastAPI within the app's body limit (413 past it)."""
    return checked_form_session(request, csrf_token)


PageSession = Annotated[FloorSession, Depends(page_session)]
ApiSession = Annotated[FloorSession, Depends(api_session)]
FormSession = Annotated[FloorSession, Depends(form_session)]
FormText = Annotated[str, Form()]

"""What every part of the panel shares: its settings, the :class:`Panel` context (backend, users,
sessions, the login budgets, the noise budget, the templates) and the FastAPI dependencies that hand
it, the session and the role check to a route.

The routers (controller/panel/routes/) hold no state of their own: each reads the one ``Panel`` from
``request.app.state.panel``, so the app is built by plain functions, not a closure.
"""

# No `from __future__ import annotations`: FastAPI reads the dependencies' annotations at run time.
import secrets
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

import jinja2
from fastapi import Depends, HTTPException, Request, Response

from controller.journal.entries import Entry, PanelRequest
from controller.journal.noise import (
    DEFAULT_NOISE_POLICY,
    OTHER_SOURCES,
    REFUSED_ACTION,
    NoiseBudget,
    NoisePolicy,
    NoiseSummary,
    utc_text,
)
from controller.locale import DEFAULT_PROPERTY, PropertySettings, duration_text, time_text
from controller.panel.actions import buttons
from controller.panel.auth import LoginBudget, Role, Session, SessionStore, UserStore, role_allows, set_cookie
from controller.panel.backend import PanelBackend
from controller.panel.client import TrustedProxies
from controller.panel.login import NeedLogin as NeedLogin  # noqa: PLC0414 - re-exported: errors.py's handler
from controller.panel.sse import FrameCache
from controller.rules.catalogue import wager_label, wager_short_label

HERE = Path(__file__).parent
SESSION_COOKIE = "ft_session"
LOGIN_CSRF_COOKIE = "ft_login_csrf"
CSRF_HEADER = "x-csrf-token"
PASSWORD_PAGE = "/account/password"
MAX_SEQ = 2**62  # SQLite integers are 64-bit signed: a larger seq is refused with 422, not a 500


@dataclass(frozen=True, slots=True)
class PanelSettings:
    idle_timeout_s: float = 30 * 60
    absolute_timeout_s: float = 12 * 3600
    sse_keepalive_s: float = 15.0
    login_max_failures: int = 5
    login_window_s: float = 300.0
    login_lockout_s: float = 60.0
    clock: Callable[[], float] = time.monotonic
    # Failed logins (per remote address) and refused actions (per user) past this budget are counted
    # in noise_suppressed summaries instead of journaled one by one (controller/journal/noise.py).
    noise: NoisePolicy = DEFAULT_NOISE_POLICY
    # Peers whose X-Forwarded-For is believed ([panel] trusted_proxies): addresses or networks.
    trusted_proxies: tuple[str, ...] = ()
    # The property's zone, shifts and currency ([property], controller/locale.py): every time and amount.
    property_settings: PropertySettings = DEFAULT_PROPERTY
    # Bounds on what a client may send or hold (controller/panel/limits.py, docs/panel.md "Limits").
    max_body_bytes: int = 64 * 1024  # an action's JSON body is well under 1 KiB
    max_form_bytes: int = 4096  # the login, logout and password forms
    max_header_bytes: int = 16 * 1024  # all request headers together, names and values
    max_connections: int = 64  # open connections (uvicorn answers 503 past it)
    max_streams_per_user: int = 8  # open event streams of one user (tabs, tablets): 429 past it
    sse_send_timeout_s: float = 30.0  # a stream whose client reads nothing for this long is dropped


@dataclass(eq=False)
class Panel:
    """The panel's state, one per app."""

    backend: PanelBackend
    users: UserStore
    settings: PanelSettings
    sessions: SessionStore = field(init=False)
    logins: LoginBudget = field(init=False)
    noise: NoiseBudget = field(init=False)
    proxies: TrustedProxies = field(init=False)
    templates: jinja2.Environment = field(init=False)
    streams: dict[str, int] = field(default_factory=dict)  # open event streams per user
    frames: FrameCache = field(default_factory=FrameCache)  # each entry's SSE frame, encoded once

    def __post_init__(self) -> None:
        settings = self.settings
        self.sessions = SessionStore(
            clock=settings.clock,
            idle_timeout_s=settings.idle_timeout_s,
            absolute_timeout_s=settings.absolute_timeout_s,
        )
        self.logins = LoginBudget(
            clock=settings.clock,
            max_failures=settings.login_max_failures,
            window_s=settings.login_window_s,
            lockout_s=settings.login_lockout_s,
        )
        self.noise = NoiseBudget(settings.noise)
        self.proxies = TrustedProxies.parse(settings.trusted_proxies)
        self.templates = jinja2.Environment(
            loader=jinja2.FileSystemLoader(HERE / "templates"),
            autoescape=jinja2.select_autoescape(default=True, default_for_string=True),
            undefined=jinja2.StrictUndefined,
        )
        prop = settings.property_settings
        # Each live entry carries its time in the property's zone as the pages write it (sse.py).
        self.frames = FrameCache(time_text=lambda time_utc: clock_text(time_utc, prop))
        self.templates.filters["money"] = lambda cents: money_text(cents, prop)
        self.templates.filters["clock"] = lambda time_utc: clock_text(time_utc, prop)
        self.templates.filters["when"] = lambda time_utc: clock_text(time_utc, prop, with_date=True)
        self.templates.globals["time_zone"] = prop.time_zone
        self.templates.filters["age"] = age_text
        self.templates.filters["wager_label"] = wager_label  # the catalogue's words for a wager
        self.templates.filters["wager_short_label"] = wager_short_label  # a seat card's narrow line
        self.templates.globals["action_buttons"] = buttons

    # --- noise: failed logins and refused actions, journaled within a budget per source ----------
    def journal_summaries(self, summaries: list[NoiseSummary] | tuple[NoiseSummary, ...]) -> None:
        for summary in summaries:
            if summary.category == REFUSED_ACTION and summary.source != OTHER_SOURCES:
                source = f"operator:{summary.source}"  # where that user's refusals are journaled
            else:
                source = "panel"
            noise = summary.entry()
            self.backend.record(noise.kind, noise, source=source)

    def noisy(
        self, category: str, key: str, kind: str, payload: dict[str, Any] | Entry, *, source: str
    ) -> None:
        """Journal a noisy event, or count it for a summary once its source is past its budget."""
        verdict = self.noise.admit(category, key, self.settings.clock(), utc_text(datetime.now(UTC)))
        self.journal_summaries(verdict.summaries)
        if verdict.journal:
            self.backend.record(kind, payload, source=source)

    def render(self, name: str, **context: Any) -> str:
        return self.templates.get_template(name).render(**context)

    def set_cookie(self, response: Response, request: Request, name: str, value: str, max_age: int) -> None:
        set_cookie(response, request, name, value, max_age)


class NeedNewPassword(Exception):
    """A session logged in with a one-time password: every page leads to the password change."""


def panel_of(request: Request) -> Panel:
    panel: Panel = request.app.state.panel
    return panel


async def _panel_dependency(request: Request) -> Panel:
    # Every dependency here is a coroutine: FastAPI runs a plain function in its thread pool, and the
    # session store (a dict, touched, swept) is the event loop's alone
    # (tests/panel/test_panel_sessions_on_loop.py).
    return panel_of(request)


PanelDep = Annotated[Panel, Depends(_panel_dependency)]


def session_of(request: Request) -> Session | None:
    return panel_of(request).sessions.get(request.cookies.get(SESSION_COOKIE))


async def api_session(request: Request) -> Session:
    session = session_of(request)
    if session is None:
        raise HTTPException(401, "log in first", headers={"WWW-Authenticate": "Cookie"})
    if session.must_change_password and request.url.path != "/api/session":
        raise HTTPException(
            403, f"set a new password first: the one-time password is spent ({PASSWORD_PAGE})"
        )
    return session


async def page_session(request: Request) -> Session:
    session = session_of(request)
    if session is None:
        raise NeedLogin
    if session.must_change_password and request.url.path != PASSWORD_PAGE:
        raise NeedNewPassword
    return session


ApiSession = Annotated[Session, Depends(api_session)]
PageSession = Annotated[Session, Depends(page_session)]


def check_csrf(token: str, session: Session) -> None:
    if not secrets.compare_digest(token.encode("utf-8", "replace"), session.csrf_token.encode()):
        raise HTTPException(403, "missing or wrong CSRF token (X-CSRF-Token)")


def needs(role: Role, action: str) -> Callable[[Request, Session], Awaitable[Session]]:
    """A dependency: the session, with the CSRF header checked and at least ``role``; a refusal for
    the role is journaled (within the user's noise budget) and answers 403."""

    async def check(request: Request, session: ApiSession) -> Session:
        check_csrf(request.headers.get(CSRF_HEADER, ""), session)
        if not role_allows(session.role, role):
            refused = PanelRequest(
                action=action,
                by=session.user,
                request={"path": request.url.path},
                outcome=f"refused: role {session.role} (needs {role})",
            )
            panel_of(request).noisy(
                REFUSED_ACTION, session.user, refused.kind, refused, source=f"operator:{session.user}"
            )
            raise HTTPException(403, f"role {session.role} may not {action.replace('_', ' ')} (needs {role})")
        return session

    return check


def money_text(cents: object, prop: PropertySettings = DEFAULT_PROPERTY) -> str:
    """The one formatter (the property's, controller/locale.py); a missing amount shows as a dash."""
    if isinstance(cents, bool) or not isinstance(cents, int):
        return "—"
    return prop.money(cents)


def clock_text(
    time_utc: object, prop: PropertySettings = DEFAULT_PROPERTY, *, with_date: bool = False
) -> str:
    """``2026-11-29T16:24:26.123456Z`` -> ``17:24:26 CET`` (in the property's zone, named): the floor
    reads times of day; ``with_date``: ``2026-11-29 17:24:26 CET``."""
    if not isinstance(time_utc, str) or "T" not in time_utc:
        return "—"
    try:
        return time_text(time_utc, prop, with_date=with_date)
    except ValueError:
        return "—"


def age_text(seconds: object) -> str:
    """``3725.0`` -> ``1 h 2 min``: how long ago, as the floor says it."""
    if not isinstance(seconds, int | float):
        return "—"
    return duration_text(int(seconds))

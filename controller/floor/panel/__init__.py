"""The floor panel (docs/floor.md "The floor panel", its layout in "The code": an app of routers over one
:class:`FloorPanel`, every statement in controller/floor/queries.py): every table on the pit map, laid
out as the floor file's ``[[pits]]`` says, each tile in words (controller/floor/tiles.py); one alert
queue, meters by table, pit, game and shift with win against theoretical win, a round search, a table's
page, a round's page rendered by the table's own recall (controller/journal/recall.py ``round_record``
over the floor's entries, the table panel's ``_recall_round.html``), and each linked progressive's page,
its sign over the pit and its reconciliation (controller/floor/progressive_view.py). FastAPI over the
floor's PostgreSQL (the reporting role: read-only; the writer only to acknowledge a floor alert).

Served by `flushtable floor panel --config floor.toml` (controller/commands/floor.py) with its users from
floor-users.json (controller/floor/users.py, read again when it changes: a disabled user's sessions end
at their next request). Logins and roles: ``viewer`` reads and is shown no private part at all;
``supervisor`` (pit supervisor) and ``manager`` (table-games manager) and ``surveillance`` may
acknowledge floor alerts, one or in bulk; only a ``manager`` may release a quarantined table
(controller/floor/release.py, the same check and record as ``flushtable floor release``); ``regulator``
reads everything and changes nothing. The login's flow (controller/panel/login.py: the double-submit
token, the failed-login budgets taken before the password check), the session store
(controller/panel/auth.py) and the live stream's bounded response (controller/panel/streaming.py) are the
table panel's own, imported, not copied: sessions are server-side, the cookie holds a random token made
afresh at each login, a session ends after ``idle_timeout_s`` without a request of its user,
``absolute_timeout_s`` after its login, or at logout; every POST carries the session's CSRF token (the
login's: a double-submit cookie, as at the table panel). Logins are logged (``floor_login``,
``floor_login_failed``: the name tried and the address, never the password), not recorded in PostgreSQL
(docs/floor.md says why). What a page does by itself (the live stream, a script's polling of
``/api/...``) reads the session without touching it, so an open tab never keeps a session alive, and the
live stream says ``event: logout`` and ends once its session has. A user has at most
``max_streams_per_user`` streams open (429 past it), each slot given back when its stream ends.

PostgreSQL: the reporting role's few connections come from one pool opened and closed with the app; the
live map is read once a tick for every open stream; with PostgreSQL down a page answers a one-line 503
within the pool's bound and the panel is back by itself when PostgreSQL is (docs/floor.md).

Nothing private is shown before its round's reveal: the floor only receives a private part after the
reveal (controller/uplink/outbox.py), and the drill-down passes every entry through the one reducer's
gate again (``TableState.private_visible``) before it shows a card; a dead hand's never, except to an
auditor who states a reason, recorded first (``floor_private_disclosures``), and only on that answer.
"""

from __future__ import annotations

from typing import Any

from controller.floor.panel.app import create_floor_app
from controller.floor.panel.context import FloorPanel, clock_text
from controller.floor.panel.feed import FloorFeed
from controller.floor.panel.settings import (
    FLOOR_ROLES,
    HERE,
    LOGIN_CSRF_COOKIE,
    MAX_FORM_BYTES,
    SESSION_COOKIE,
    FloorPanelSettings,
    FloorRole,
    FloorSession,
    FloorUser,
    search_moment,
)
from controller.floor.queries import DatabaseUnavailable, PanelStats

__all__ = [
    "FLOOR_ROLES",
    "HERE",
    "LOGIN_CSRF_COOKIE",
    "MAX_FORM_BYTES",
    "SESSION_COOKIE",
    "DatabaseUnavailable",
    "FloorFeed",
    "FloorPanel",
    "FloorPanelSettings",
    "FloorRole",
    "FloorSession",
    "FloorUser",
    "PanelStats",
    "clock_text",
    "create_floor_app",
    "search_moment",
    "serve_panel",
]


async def serve_panel(settings: FloorPanelSettings, *, host: str = "127.0.0.1", port: int = 8090) -> Any:
    """Start the floor panel on the running loop; returns the server (``await server.stop()``)."""
    from controller.panel.server import PanelServer  # noqa: PLC0415 - uvicorn loads only with a panel

    server = PanelServer(create_floor_app(settings), host=host, port=port)
    await server.start()
    return server

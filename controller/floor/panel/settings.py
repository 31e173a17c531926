"""The floor panel's settings and the rules every router reads: who may do what, the bounds of a form,
a stream and a query (docs/floor.md "The floor panel")."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from controller.floor import users as floor_users
from controller.floor.tiles import PitLayout
from controller.floor.tiles import time_text as tiles_time_text
from controller.locale import DEFAULT_PROPERTY, PropertySettings
from controller.money import MoneyFormat
from controller.panel.auth import RoleSession, verify_password

# controller/floor/: its templates/ and static/ (the floor's own pages, the pit map's script).
HERE = Path(__file__).resolve().parent.parent
# The table panel's templates and static files: the round page includes its recall (_recall_round.html,
# _card.html) and its stylesheet, so a round reads the same at the table and on the floor.
TABLE_PANEL = HERE.parent / "panel"

# Defined in controller/floor/users.py (the CLI's too); named here as before (tests, a site's launcher).
FloorRole = floor_users.FloorRole
FloorUser = floor_users.FloorUser
FLOOR_ROLES = floor_users.FLOOR_ROLES
FloorSession = RoleSession[FloorRole]

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
MAX_FORM_BYTES = 8192  # a form's whole body (the login, logout, acknowledge and release forms)
FORM_TOO_LARGE = f"Form too large (over {MAX_FORM_BYTES} bytes)."
SSE_INTERVAL_S = 1.0
MAX_ID_CHARS = 64  # a table's or a round's id as a page takes it (longer: no such table)
MAX_LINK_ID_CHARS = 64
# Live meters read at once (one reader a link, however many signs show it): a floor has a few links;
# the bound keeps a request naming made-up links from starting readers without end.
MAX_SIGN_FEEDS = 32
# The table panel's login page (controller/panel/templates/login.html) under the floor's name.
LOGIN_SUBTITLE = "Floor panel — pit supervisors, managers, surveillance and audit"


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
    # A stream whose client reads nothing for this long is dropped (the table panel's bound and code,
    # controller/panel/streaming.py): a tablet asleep with the map open holds no task.
    sse_send_timeout_s: float = 30.0
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

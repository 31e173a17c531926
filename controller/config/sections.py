"""The configuration file's shape: every section as a checked model (``ConfigFile`` and its sections), each
field refused in the words the operator reads, and the embedded default file.
"""

from __future__ import annotations

import ipaddress
import re
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal
from urllib.parse import urlsplit

from controller.checked import BeforeValidator, Field, field_validator, model_validator
from controller.errors import shown
from controller.files import NUL_IN_PATH
from controller.names import (
    DESIGNATED_PLAYER,
    DEVICE_KINDS,
    GAME_NAMES,
    HOUSE,
    DeviceKind,
    GameName,
    RakeMethod,
)
from controller.release_key import parse_public_key
from controller.settings import (
    KeyRefusal,
    PropertySection,
    Strict,
    positive_cents_input,
    rake_method_from_word,
    refusal,
    toml_type,
    unknown_key,
)
from drivers.urls import parse_device_url, refuse_control_characters
from table_names import DEVICE_KEY_LEN
from table_names.records import FrozenRecord

ROLES = ("viewer", "supervisor", "manager")
DEVICE_KEY_BYTES = DEVICE_KEY_LEN  # HMAC-SHA256 device keys (docs/protocol.md §6)
MAX_AMOUNT_CENTS = 100_000_000_00  # a million in units: no table limit comes near; catches extra zeros
MAX_TIMEOUT_S = 3600.0
LOG_LEVELS = ("debug", "info", "warning", "error")
LOG_FORMATS = ("auto", "json", "console")

# \Z, not $: `$` also matches before a final line break, and "T1\n" would reach round ids, NATS subjects
# and log lines.
_TABLE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.]{0,31}\Z")  # no '-': it separates round id parts
_NAME = re.compile(r"^[a-z][a-z0-9_]{0,31}\Z")
_USER_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@-]{0,63}\Z")

# Group commit (controller/daemon.py): journal entries that release no command (a card dealt, chips
# moved) may wait this long to share one fsync. 2 ms keeps the event-to-commit p99 well under 10 ms.
DEFAULT_COMMIT_DELAY_MS = 2
MAX_COMMIT_DELAY_MS = 10

DEFAULT_CONFIG_NAME = "<default>"
DEFAULT_CONFIG_TOML = """\
# The embedded default: High Card Flush, 6 seats, house-banked, simulated devices, ./var/journal.sqlite.
[table]
id = "SIM1"
game = "high-card-flush"
seats = 6

[banking]
mode = "house"

[limits]
min_ante_cents = 500
max_ante_cents = 50000

[timeouts]
decision_s = 30

[journal]
path = "var/journal.sqlite"

# Simulated devices served over pseudo-terminals; a sim device with no key gets a fresh random key
# for each run, shared with its driver (never a key written in the source).
[devices.shuffler]
kind = "shuffler"
url = "sim+pty://shuffler"

[devices.sensors]
kind = "bet_sensors"
url = "sim+pty://sensors"

[devices.display]
kind = "dealer_display"
url = "sim+pty://display"

[panel]
bind = "127.0.0.1:8080"
"""


def default_config_document() -> dict[str, Any]:
    """``DEFAULT_CONFIG_TOML`` as ``tomllib`` reads it, written out (a fresh dict each call): the
    embedded default is checked from this, so `flushtable config` and `run` without ``--config`` load
    no TOML parser (``tomllib`` with its patterns and ``string``: ~3 ms of a 60 ms start, issue 28).
    tests/test_config_default_document.py fails if the two ever differ."""
    return {
        "table": {"id": "SIM1", "game": "high-card-flush", "seats": 6},
        "banking": {"mode": "house"},
        "limits": {"min_ante_cents": 500, "max_ante_cents": 50000},
        "timeouts": {"decision_s": 30},
        "journal": {"path": "var/journal.sqlite"},
        "devices": {
            "shuffler": {"kind": "shuffler", "url": "sim+pty://shuffler"},
            "sensors": {"kind": "bet_sensors", "url": "sim+pty://sensors"},
            "display": {"kind": "dealer_display", "url": "sim+pty://display"},
        },
        "panel": {"bind": "127.0.0.1:8080"},
    }


# --- field types: each refuses in the words the operator reads -------------------------------------------
def _choice(choices: tuple[str, ...]) -> BeforeValidator:
    def check(value: object) -> object:
        if not isinstance(value, str):
            raise refusal(f"must be a string, not {toml_type(value)}")
        if value not in choices:
            raise refusal(f"{value!r} is not one of: {', '.join(choices)}{_hint(value, choices)}")
        return value

    return BeforeValidator(check)


def _hint(value: str, choices: tuple[str, ...]) -> str:
    text = unknown_key(value, choices)
    return text[len("unknown key") :] if "did you mean" in text else ""


def whole_number(minimum: int, maximum: int, *, cents: bool = False) -> BeforeValidator:
    def check(value: object) -> object:
        if isinstance(value, bool) or not isinstance(value, int):
            unit = " (amounts are whole cents)" if cents else ""
            raise refusal(f"must be a whole number, not {toml_type(value)} {value!r}{unit}")
        if not minimum <= value <= maximum:
            raise refusal(f"{shown(value)} is out of range {minimum}..{maximum}")
        return value

    return BeforeValidator(check)


def seconds_up_to(maximum_s: float) -> BeforeValidator:
    """A number of seconds, more than 0 and at most ``maximum_s`` (every duration of the file)."""

    def check(value: object) -> object:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise refusal(f"must be a number of seconds, not {toml_type(value)}")
        if not 0 < value <= maximum_s:
            raise refusal(f"{value} is out of range: more than 0 and at most {maximum_s:g} seconds")
        return float(value)

    return BeforeValidator(check)


def _matching(pattern: re.Pattern[str], rule: str) -> BeforeValidator:
    """A string ``pattern`` matches, else refused as ``'value': rule``; a value that is no string is left
    to the field's type, which refuses it."""

    def check(value: object) -> object:
        if isinstance(value, str) and not pattern.match(value):
            raise refusal(f"{value!r}: {rule}")
        return value

    return BeforeValidator(check)


Cents = Annotated[int, whole_number(1, MAX_AMOUNT_CENTS, cents=True)]
Seconds = Annotated[float, seconds_up_to(MAX_TIMEOUT_S)]


# --- the file's sections -----------------------------------------------------------------------------------
class TableSection(Strict):
    id: Annotated[
        str, _matching(_TABLE_ID, "1 to 32 letters, digits, '_' or '.', starting with a letter or digit")
    ]
    game: Annotated[GameName, _choice(GAME_NAMES)]
    # The range depends on the banking: checked below.
    seats: Annotated[int, whole_number(0, 1000)] | None = None

    missing_hints: ClassVar[dict[str, str]] = {"game": f"one of: {', '.join(GAME_NAMES)}"}


class Banking(Strict):
    mode: Annotated[Literal["house", "designated-player"], _choice((HOUSE, DESIGNATED_PLAYER))] = "house"
    house_banks_when_nobody_accepts: bool = False  # designated-player: may the house bank the round?

    @model_validator(mode="after")
    def _house_banks(self) -> Banking:
        if self.house_banks_when_nobody_accepts and self.mode != DESIGNATED_PLAYER:
            raise KeyRefusal(
                "banking.house_banks_when_nobody_accepts",
                "only a designated-player table has a bank to accept",
            )
        return self


PositiveCents = Annotated[int, BeforeValidator(positive_cents_input)]


class Limits(Strict):
    min_ante_cents: Cents
    max_ante_cents: Cents
    # designated-player: the most bonus wins pay per round (0 refused as settle refuses it)
    aggregate_bonus_cap_cents: PositiveCents | None = None
    # The posted maximum of each bonus wager, by the game's wager name; a bonus wager not named here is
    # limited by max_ante_cents (docs/rules.md "Paytables and limits": every wager has a posted limit).
    max_bonus_cents: dict[str, PositiveCents] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _order(self) -> Limits:
        if self.max_ante_cents < self.min_ante_cents:
            raise KeyRefusal(
                "limits.max_ante_cents",
                f"{self.max_ante_cents} is below min_ante_cents {self.min_ante_cents}",
            )
        return self


class DesignatedPlayerSection(Strict):
    # The least bank the button's player may post; absent: 4x min_ante_cents (one minimum seat's ante and
    # its largest raise, so that an accepted bank covers at least one seat).
    min_bank_cents: PositiveCents | None = None


class RakeSection(Strict):
    method: Annotated[RakeMethod, BeforeValidator(rake_method_from_word)]
    amount_cents: Annotated[int, whole_number(0, MAX_AMOUNT_CENTS, cents=True)]


class Timeouts(Strict):
    decision_s: Seconds = 30.0  # a seat that has not acted by then has folded (walk-away); Chase: checks
    dp_offer_s: Seconds | None = None  # designated-player: the button's player's time to accept (15 s)
    deal_s: Seconds = 30.0  # a shoe silent this long mid-deal: the incomplete hands are dead (a miscount)


class SegmentPolicy(FrozenRecord):
    """When the journal's open segment is sealed, and where sealed ones are archived ([journal])."""

    __slots__ = ("archive_dir", "entries", "gaming_day_start_utc", "per_gaming_day", "retention_days")
    entries: int
    # Off by default: what a table does must not depend on the hour it happens to be started or run at
    # (a gaming day's seal is a site's choice; docs/configuration.md).
    per_gaming_day: bool
    gaming_day_start_utc: str
    archive_dir: Path | None
    retention_days: int

    def __init__(
        self,
        entries: int = 50_000,
        per_gaming_day: bool = False,
        gaming_day_start_utc: str = "06:00",
        archive_dir: Path | None = None,
        retention_days: int = 90,
    ) -> None:
        self._set_fields(locals())


NTP_PORT = 123


def split_ntp_server(value: str) -> tuple[str, int] | None:
    """``HOST``, ``HOST:PORT`` or ``[IPV6]:PORT`` as (host, port); None when it is none of them."""
    host, port = value, NTP_PORT
    if value.startswith("["):
        inside, bracket, rest = value[1:].partition("]")
        if not bracket or (rest and not rest.startswith(":")):
            return None
        host, port_text = inside, rest[1:]
    elif value.count(":") == 1:
        host, port_text = value.split(":")
    else:
        port_text = ""
    if port_text:
        if not port_text.isdigit() or not 0 < int(port_text) < 65536:
            return None
        port = int(port_text)
    if not host or any(ch.isspace() or ch in "/@" for ch in host):
        return None
    return host, port


def _ntp_server(value: object) -> object:
    if not isinstance(value, str):
        raise refusal(f'must be a string like "ntp.floor.example:123", not {toml_type(value)}')
    if split_ntp_server(value) is None:
        raise refusal(f"{value!r} is not HOST or HOST:PORT (e.g. ntp.floor.example:123)")
    return value


class ClockSection(Strict):
    """The table's clock against the floor's time source (docs/operations.md "Clocks")."""

    # The floor's NTP server, HOST or HOST:PORT (123); unset: the clock is not measured (and said so).
    ntp_server: Annotated[str, BeforeValidator(_ntp_server)] | None = None
    max_offset_ms: Annotated[int, whole_number(1, 3_600_000)] = 1000  # past this: the clock alert
    check_interval_s: Seconds = 3600.0  # at start, then this often (at least hourly)
    timeout_s: Seconds = 2.0  # one query's wait for the answer


class ChangesSection(Strict):
    """Two-person control of the money settings (docs/operations.md "Two-person control")."""

    lapse_after_s: Annotated[int, whole_number(60, 7 * 86_400)] = 1800  # a proposal not approved lapses


class JournalSection(Strict):
    path: str = "var/journal.sqlite"
    commit_delay_ms: Annotated[int, whole_number(0, MAX_COMMIT_DELAY_MS)] = DEFAULT_COMMIT_DELAY_MS
    anchor_key_file: str | None = None  # the anchor's HMAC key (docs/journal.md "The anchor key")
    # Sealed segments (docs/journal.md "Segments and seals"): `run` seals the open segment at start once
    # it holds this many entries (0: never by count), or, per gaming day, once its first entry is of an
    # earlier gaming day (they start at gaming_day_start_utc, "HH:MM").
    segment_entries: Annotated[int, whole_number(0, 1_000_000_000)] = 50_000
    segment_per_gaming_day: bool = False
    gaming_day_start_utc: str = "06:00"
    # `flushtable journal archive`: sealed segments whose last entry is older than retention_days go to
    # archive_dir (docs/operations.md "Archiving sealed segments"); None: not configured.
    archive_dir: str | None = None
    retention_days: Annotated[int, whole_number(1, 100_000)] = 90

    @field_validator("gaming_day_start_utc", mode="after")
    @classmethod
    def _gaming_day(cls, value: str) -> str:
        hours, _, minutes = value.partition(":")
        if not (hours.isdigit() and minutes.isdigit() and int(hours) < 24 and int(minutes) < 60):
            raise refusal(f"{value!r} is not a time of day HH:MM (UTC)")
        return value

    @field_validator("path", mode="after")
    @classmethod
    def _path(cls, value: str) -> str:
        if not value.strip():
            raise refusal("empty")
        if "\x00" in value:
            raise refusal(NUL_IN_PATH)
        return value


class DeviceSection(Strict):
    kind: Annotated[DeviceKind, _choice(DEVICE_KINDS)]
    url: str
    key: Any = None  # 64 hex digits (a string), read below with key_file's
    key_file: Any = None

    @field_validator("url", mode="after")
    @classmethod
    def _url(cls, value: str) -> str:
        try:
            if relative_device_path(value):
                # Taken from the file's directory, then parsed (_devices); a control character is
                # refused here, naming the text as written.
                refuse_control_characters(value)
                return value
            parse_device_url(value)
        except ValueError as error:
            raise refusal(str(error)) from None
        return value


class PanelUserSection(Strict):
    name: Annotated[str, _matching(_USER_NAME, "1 to 64 letters, digits or . _ @ -")]
    role: Annotated[Literal["viewer", "supervisor", "manager"], _choice(ROLES)]
    password_hash: str

    @field_validator("password_hash", mode="after")
    @classmethod
    def _hash(cls, value: str) -> str:
        # Loaded with the first user: `flushtable config` of a table without panel users (the embedded
        # default) loads no password code and no `hmac` (issue 28).
        from controller.passwords import parse_password_hash  # noqa: PLC0415

        try:
            parse_password_hash(value)
        except ValueError as error:
            raise refusal(str(error)) from None
        return value


def _users(value: object) -> object:
    if not isinstance(value, list):
        raise refusal("must be an array of tables ([[panel.users]])")
    return value


class PanelSection(Strict):
    bind: str = "127.0.0.1:8080"
    users: Annotated[list[PanelUserSection], BeforeValidator(_users)] = Field(default_factory=list)
    # Peers whose X-Forwarded-For the panel believes (docs/panel.md): empty, none.
    trusted_proxies: list[str] = Field(default_factory=list)
    users_file: str | None = None  # where the panel's users live (controller.panel.auth.users_file_for)

    @field_validator("trusted_proxies", mode="after")
    @classmethod
    def _proxies(cls, value: list[str]) -> list[str]:
        for item in value:
            try:
                ipaddress.ip_network(item.strip(), strict=False)
            except ValueError:
                raise refusal(f"{item!r} is not an IP address or network (e.g. 10.0.0.5)") from None
        return [item.strip() for item in value]

    @field_validator("users_file", mode="after")
    @classmethod
    def _users_file(cls, value: str | None) -> str | None:
        if value is not None and "\x00" in value:  # read later, by the panel: refused here, in one line
            raise refusal(NUL_IN_PATH)
        return value

    @field_validator("bind", mode="after")
    @classmethod
    def _bind(cls, value: str) -> str:
        host, _, port_text = value.rpartition(":")
        if not host.strip("[]") or not port_text.isdigit() or not 1 <= int(port_text) <= 65535:
            raise refusal(f"{value!r} is not HOST:PORT with a port from 1 to 65535")
        return value

    @model_validator(mode="after")
    def _unique(self) -> PanelSection:
        seen: set[str] = set()
        for index, user in enumerate(self.users):
            if user.name in seen:
                raise KeyRefusal(f"panel.users[{index}].name", f"{user.name!r} appears twice")
            seen.add(user.name)
        return self


# --- [uplink]: the journal streamed to the floor (docs/floor.md "The uplink") ----------------------------
MAX_UPLINK_WAIT_S = 600.0


def tls_servers(value: object) -> object:
    # A server's URL is never quoted back: it may carry a password (user:password@host), which belongs in
    # password_file and must not reach a log or a terminal. Each one is named by its place instead.
    if not isinstance(value, list) or not value or not all(isinstance(item, str) for item in value):
        raise refusal("a non-empty array of URLs like tls://host:4222")
    for number, server in enumerate(value, 1):
        try:
            parts = urlsplit(server)
            port = parts.port
        except ValueError:
            raise refusal(f"server {number}: not a URL like tls://host:4222") from None
        if parts.scheme != "tls":
            raise refusal(f"server {number}: the floor is reached over TLS only (tls://host:port)")
        if parts.username is not None or parts.password is not None:
            raise refusal(
                f"server {number}: no user or password in the URL (give them as user and password_file)"
            )
        if not parts.hostname or port is None or parts.path not in ("", "/") or parts.query or parts.fragment:
            raise refusal(
                f"server {number}: not a URL like tls://host:4222 (a host and a port, nothing else)"
            )
    return value


def _subject_token(value: object) -> object:
    # site and user become parts of NATS subjects and inbox names: no wildcard, no separator.
    if not isinstance(value, str) or not value or any(c in value for c in " .*>\t"):
        raise refusal("a non-empty name without spaces, '.', '*' or '>'")
    return value


UplinkSeconds = Annotated[float, seconds_up_to(MAX_UPLINK_WAIT_S)]


class UplinkSection(Strict):
    servers: Annotated[list[str], BeforeValidator(tls_servers)]
    site: Annotated[str, BeforeValidator(_subject_token)]
    user: Annotated[str, BeforeValidator(_subject_token)]
    password: str | None = None
    password_file: str | None = None
    ca_file: str
    connect_timeout_s: UplinkSeconds = 5.0
    ack_timeout_s: UplinkSeconds = 5.0
    poll_interval_s: UplinkSeconds = 0.1
    backoff_initial_s: UplinkSeconds = 0.2
    backoff_max_s: UplinkSeconds = 5.0
    # The stream the table's server keeps: the hub's, or at a site the site's on its leaf server
    # (docs/floor.md "Sites"; controller/simulation/floor/servers.py STREAM_NAME, site_stream_name).
    stream: Annotated[str, BeforeValidator(_subject_token)] = "FLUSHTABLE"

    missing_hints: ClassVar[dict[str, str]] = {
        "servers": "an array of URLs like tls://host:4222",
        "site": "the site token of the table's subject flushtable.<site>.<table>.journal",
        "user": "this table's own NATS user",
        "ca_file": "the floor CA's certificate",
    }

    @model_validator(mode="after")
    def _one_password(self) -> UplinkSection:
        if (self.password is None) == (self.password_file is None):
            raise KeyRefusal("uplink.password", "give exactly one of password, password_file")
        return self


# --- [software]: the signed release verified at every start (docs/configuration.md "[software]") ----------
def _public_key(value: object) -> object:
    if not isinstance(value, str):
        raise refusal(f"the release key's public half, 64 hex digits, not {toml_type(value)}")
    try:
        parse_public_key(value)
    except ValueError as error:
        raise refusal(str(error)) from None
    return value.strip().lower()


class SoftwareSection(Strict):
    manifest: str  # the signed release manifest, from the configuration file's directory
    public_key: Annotated[str, BeforeValidator(_public_key)]
    allow_development: bool = False  # a development release (`flushtable release dev`) is refused unless

    missing_hints: ClassVar[dict[str, str]] = {
        "manifest": "the signed release manifest's path",
        "public_key": "the release key's public half, 64 hex digits (flushtable release keygen prints it)",
    }


class Logging(Strict):
    level: Annotated[str, _choice(LOG_LEVELS)] = "info"
    format: Annotated[str, _choice(LOG_FORMATS)] = "auto"  # auto: JSON lines unless stderr is a terminal


def _device_name(value: object) -> object:
    if isinstance(value, str) and not _NAME.match(value):
        raise refusal("a device name is 1 to 32 of a-z, 0-9 and '_', starting with a letter")
    return value


class ConfigFile(Strict):
    """The whole file, section by section, in the order they are checked."""

    table: TableSection
    banking: Banking = Banking()
    limits: Limits
    designated_player: DesignatedPlayerSection | None = None
    paytables: dict[str, Any] = Field(default_factory=dict)  # per wager: checked with the game below
    rake: RakeSection | None = None
    timeouts: Timeouts = Timeouts()
    devices: dict[Annotated[str, BeforeValidator(_device_name)], DeviceSection]
    journal: JournalSection = JournalSection()
    panel: PanelSection = PanelSection()
    logging: Logging = Logging()
    uplink: UplinkSection | None = None  # the journal streamed to the floor (docs/floor.md); None: no floor
    clock: ClockSection = ClockSection()
    changes: ChangesSection = ChangesSection()
    software: SoftwareSection | None = None  # the signed release checked at start; None: not checked
    # The Progressive wager's parameters: checked by the rules' own parser (controller/rules/progressive.py).
    progressive: dict[str, Any] | None = None
    # The property's time zone, gaming day, shifts and currency (controller/locale.py).
    property: PropertySection = PropertySection()

    missing_hints: ClassVar[dict[str, str]] = {
        name: f"a table like [{name}]" for name in ("table", "limits", "devices")
    }


def relative_device_path(url: str) -> bool:
    """``devices/shuffler``: a device path relative to the configuration file (not a URL, not absolute)."""
    return "://" not in url and "/" in url and not url.startswith("/")

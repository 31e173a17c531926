"""The table's configuration: TOML (tomllib), validated whole at start by checked models
(controller/checked.py: pydantic's model API in plain Python, so `flushtable config` loads no pydantic).

Every refusal is one line that names the file and the key: ``table.toml: devices.shuffler.url: ...``.
Unknown keys are refused, so a typo is never silently ignored. docs/configuration.md documents every
key with a complete example (which the test suite loads).

The file's shape is the models below (``ConfigFile`` and its sections); checks that span sections (a
seat count that depends on the banking, paytables that depend on the game, keys shared between devices)
run once every field is valid. ``TableConfig`` is what the rest of the controller reads.
"""

from __future__ import annotations

import dataclasses
import hashlib
import ipaddress
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal
from urllib.parse import urlsplit

from controller.checked import BeforeValidator, Field, ValidationError, field_validator, model_validator
from controller.errors import UserError, shown
from controller.files import (
    MAX_CERTIFICATE_BYTES,
    MAX_KEY_FILE_BYTES,
    MAX_SECRET_FILE_BYTES,
    MAX_TOML_BYTES,
    NO_SUCH_FILE,
    NUL_IN_PATH,
    TOO_LONG_NUMBER,
    FileRefused,
    TomlRefused,
    load_toml,
    read_bounded,
    read_bounded_text,
)
from controller.journal.chain import canonical_json
from controller.locale import DEFAULT_PROPERTY, PropertySettings
from controller.names import (
    DESIGNATED_PLAYER,
    DEVICE_KINDS,
    GAME_NAMES,
    HOUSE,
    DeviceKind,
    GameName,
    RakeMethod,
)
from controller.passwords import parse_password_hash
from controller.rules.catalogue import paytable_wagers
from controller.rules.games import GAMES, NOT_OFFERED, PROGRESSIVE_GAMES
from controller.rules.paytables import Paytable, default_paytable, parse_table_paytable
from controller.settings import (
    KeyRefusal,
    PropertySection,
    Rake,
    Strict,
    check_bonus_limits,
    check_seat_count,
    one_line,
    positive_cents_input,
    rake_method_from_word,
    refusal,
    toml_type,
    unknown_key,
)
from drivers.urls import SimUrl, parse_device_url
from table_names import DEVICE_KEY_LEN

if TYPE_CHECKING:
    # Loaded where a [progressive] table is read (_progressive): the controller's model brings the
    # journal's typed entries and msgspec, which checking a table without a Progressive never needs.
    from controller.progressive.model import ProgressiveParameters
    from controller.rules.progressive import ProgressiveSettings

ROLES = ("viewer", "supervisor", "manager")
DEVICE_KEY_BYTES = DEVICE_KEY_LEN  # HMAC-SHA256 device keys (docs/protocol.md §6)
MAX_AMOUNT_CENTS = 100_000_000_00  # a million in units: no table limit comes near; catches extra zeros
MAX_TIMEOUT_S = 3600.0
LOG_LEVELS = ("debug", "info", "warning", "error")
LOG_FORMATS = ("auto", "json", "console")


_TABLE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.]{0,31}$")  # no '-': it separates round id parts
_NAME = re.compile(r"^[a-z][a-z0-9_]{0,31}$")
_USER_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@-]{0,63}$")

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


def _seconds(value: object) -> object:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise refusal(f"must be a number of seconds, not {toml_type(value)}")
    if not 0 < value <= MAX_TIMEOUT_S:
        raise refusal(f"{value} is out of range: more than 0 and at most {MAX_TIMEOUT_S:g} seconds")
    return float(value)


Cents = Annotated[int, whole_number(1, MAX_AMOUNT_CENTS, cents=True)]
Seconds = Annotated[float, BeforeValidator(_seconds)]


# --- the file's sections -----------------------------------------------------------------------------------
class TableSection(Strict):
    id: str
    game: Annotated[GameName, _choice(GAME_NAMES)]
    # The range depends on the banking: checked below.
    seats: Annotated[int, whole_number(0, 1000)] | None = None

    missing_hints: ClassVar[dict[str, str]] = {"game": f"one of: {', '.join(GAME_NAMES)}"}

    @field_validator("id", mode="after")
    @classmethod
    def _id(cls, value: str) -> str:
        if not _TABLE_ID.match(value):
            raise refusal(f"{value!r}: 1 to 32 letters, digits, '_' or '.', starting with a letter or digit")
        return value


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


@dataclass(frozen=True, slots=True)
class SegmentPolicy:
    """When the journal's open segment is sealed, and where sealed ones are archived ([journal])."""

    entries: int = 50_000
    # Off by default: what a table does must not depend on the hour it happens to be started or run at
    # (a gaming day's seal is a site's choice; docs/configuration.md).
    per_gaming_day: bool = False
    gaming_day_start_utc: str = "06:00"
    archive_dir: Path | None = None
    retention_days: int = 90


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
        if _relative_device_path(value):
            return value  # taken from the file's directory, then parsed (_devices)
        try:
            parse_device_url(value)
        except ValueError as error:
            raise refusal(str(error)) from None
        return value


class PanelUserSection(Strict):
    name: str
    role: Annotated[Literal["viewer", "supervisor", "manager"], _choice(ROLES)]
    password_hash: str

    @field_validator("name", mode="after")
    @classmethod
    def _name(cls, value: str) -> str:
        if not _USER_NAME.match(value):
            raise refusal(f"{value!r}: 1 to 64 letters, digits or . _ @ -")
        return value

    @field_validator("password_hash", mode="after")
    @classmethod
    def _hash(cls, value: str) -> str:
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


def _uplink_seconds(value: object) -> object:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise refusal(f"must be a number of seconds, not {toml_type(value)}")
    if not 0 < value <= MAX_UPLINK_WAIT_S:
        raise refusal(f"{value} is out of range: more than 0 and at most {MAX_UPLINK_WAIT_S:g} seconds")
    return float(value)


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


UplinkSeconds = Annotated[float, BeforeValidator(_uplink_seconds)]


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
        raw = bytes.fromhex(value.strip())
    except ValueError:
        raise refusal("not hex: the release key's public half is 64 hex digits") from None
    if len(raw) != 32:
        raise refusal(f"an Ed25519 public key is 32 bytes (64 hex digits), not {len(raw)}")
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


# --- what the controller reads ----------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Device:
    name: str
    kind: DeviceKind
    url: str
    key: bytes | None = field(repr=False)  # None: a simulated device; the daemon makes a key per run

    @property
    def simulated(self) -> bool:
        return isinstance(parse_device_url(self.url), SimUrl)

    def to_json(self) -> dict[str, Any]:
        # The key itself never leaves: a fingerprint is enough to tell two configurations apart.
        fingerprint = hashlib.sha256(self.key).hexdigest()[:16] if self.key is not None else None
        return {"name": self.name, "kind": self.kind, "url": self.url, "key_sha256_16": fingerprint}


@dataclass(frozen=True, slots=True)
class PanelUser:
    name: str
    role: Literal["viewer", "supervisor", "manager"]
    password_hash: str = field(repr=False)


@dataclass(frozen=True, slots=True)
class Panel:
    host: str
    port: int
    users: tuple[PanelUser, ...] = ()
    trusted_proxies: tuple[str, ...] = ()  # peers whose X-Forwarded-For the panel believes
    users_file: Path | None = None  # where the panel's users live (controller.panel.auth.users_file_for)


@dataclass(frozen=True, slots=True)
class UplinkConfig:
    """``[uplink]`` as the uplink reads it (controller/uplink/uplink.py): the password read from its file,
    the CA's path taken from the configuration file's directory."""

    servers: tuple[str, ...]
    site: str
    user: str
    password: str = field(repr=False)
    ca_file: Path
    connect_timeout_s: float = 5.0
    ack_timeout_s: float = 5.0
    poll_interval_s: float = 0.1  # how often the journal is checked for new entries when not woken
    backoff_initial_s: float = 0.2
    backoff_max_s: float = 5.0
    hwm_persist_interval_s: float = 0.25  # at most this often the acked mark is written to the journal
    stream: str = "FLUSHTABLE"  # the stream its server keeps: the hub's, or at a site its leaf's

    def to_json(self) -> dict[str, Any]:
        """What `flushtable config` shows: everything but the password."""
        return {
            "servers": list(self.servers),
            "site": self.site,
            "user": self.user,
            "ca_file": str(self.ca_file),
            "connect_timeout_s": self.connect_timeout_s,
            "ack_timeout_s": self.ack_timeout_s,
            "poll_interval_s": self.poll_interval_s,
            "backoff_initial_s": self.backoff_initial_s,
            "backoff_max_s": self.backoff_max_s,
            "stream": self.stream,
        }


@dataclass(frozen=True, slots=True)
class SoftwareConfig:
    """``[software]`` as the start reads it (controller/software.py verify_release)."""

    manifest: Path
    public_key: bytes
    allow_development: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "manifest": str(self.manifest),
            "public_key": self.public_key.hex(),
            "allow_development": self.allow_development,
        }


@dataclass(frozen=True, slots=True)
class TableConfig:
    source: str  # the file name, or "<default>"
    table_id: str
    game: str
    seats: int
    banking: Banking
    limits: Limits
    paytables: dict[str, Paytable]  # every bonus wager of the game, preset or custom
    rake: Rake | None
    timeouts: ResolvedTimeouts
    devices: dict[str, Device]
    journal_path: Path
    panel: Panel
    logging: Logging
    # Group commit: how long (ms) journal entries that release no command may wait to share an fsync.
    journal_commit_delay_ms: int = DEFAULT_COMMIT_DELAY_MS
    # Designated player: the least bank accepted ([designated_player] min_bank_cents, or 4x min ante).
    min_bank_cents: int | None = None
    # [uplink]: None, no floor. Not in to_json: where the journal is streamed is not how the table plays,
    # so it leaves config_digest (and the settings changes made against it) as they were.
    uplink: UplinkConfig | None = None
    # [journal] anchor_key_file's key (docs/journal.md "The anchor key"); not in to_json (a secret).
    journal_anchor_key: bytes | None = field(default=None, repr=False)
    # [journal] segment_*, gaming_day_start_utc, archive_dir, retention_days (docs/journal.md "Segments
    # and seals"). Not in to_json: how the journal is cut into files is not how the table plays.
    journal_segments: SegmentPolicy = field(default_factory=SegmentPolicy)
    # [progressive]: the Progressive wager's parameters (docs/rules.md); None: not offered. ``progressive``
    # is the rules' part (settle and math read it); ``progressive_parameters`` every parameter of the
    # progressive controller (controller/progressive/model.py), the rules' part and its own.
    progressive: ProgressiveSettings | None = None
    # [clock] and [changes]: how the table is controlled, not how it plays: not in to_json, so the digest
    # of every earlier file is unchanged (a change of them still changes file_sha256).
    clock: ClockSection = field(default_factory=ClockSection)
    changes: ChangesSection = field(default_factory=ChangesSection)
    # The file's own digest (sha256 of its text) and where it is: None for the embedded default.
    file_sha256: str | None = None
    config_path: Path | None = None
    progressive_parameters: ProgressiveParameters | None = None
    # [software]: the signed release verified at every start; None: not verified (the embedded default).
    # Not in to_json: which release runs is journaled on its own (software_verified), not how it plays.
    software: SoftwareConfig | None = None
    # [progressive] link: the linked progressive's name on the floor (docs/floor.md "Linked progressive"),
    # None: stand-alone. The link runs over [uplink]'s servers and credentials. Not in to_json: which
    # controller keeps the meter is not how the table plays (as [uplink]).
    progressive_link: str | None = None
    progressive_link_timeout_s: float = 3.0
    # [property]: the property's time zone, gaming day, shifts and currency (controller/locale.py). Not in
    # to_json: how times and amounts are written for people is not how the table plays.
    property_settings: PropertySettings = DEFAULT_PROPERTY

    def to_json(self) -> dict[str, Any]:
        """The effective configuration, secrets reduced to fingerprints (hashed for config_digest)."""
        paytables: dict[str, Any] = {}
        for wager, table in self.paytables.items():
            paytables[wager] = {"name": table.name, "lines": table.to_json()}
            if table.allow_inverted:  # only when set, so the digest of every other file is unchanged
                paytables[wager]["allow_inverted"] = True
        return {
            "table_id": self.table_id,
            "game": self.game,
            "seats": self.seats,
            "banking": {
                "mode": self.banking.mode,
                "house_banks_when_nobody_accepts": self.banking.house_banks_when_nobody_accepts,
            },
            "limits": {
                "min_ante_cents": self.limits.min_ante_cents,
                "max_ante_cents": self.limits.max_ante_cents,
                "aggregate_bonus_cap_cents": self.limits.aggregate_bonus_cap_cents,
                # Only when set, so that the digest of every earlier file (the embedded default's) stays.
                **(
                    {"max_bonus_cents": dict(self.limits.max_bonus_cents)}
                    if self.limits.max_bonus_cents
                    else {}
                ),
            },
            **({"min_bank_cents": self.min_bank_cents} if self.min_bank_cents is not None else {}),
            "paytables": paytables,
            # Only when set, so the digest of every file without one is unchanged.
            **(
                {"progressive": self.progressive_parameters.to_json()}
                if self.progressive_parameters is not None
                else {}
            ),
            "rake": None
            if self.rake is None
            else {"method": self.rake.method.word, "amount_cents": self.rake.amount_cents},
            "timeouts": {
                "decision_s": self.timeouts.decision_s,
                "dp_offer_s": self.timeouts.dp_offer_s,
                "deal_s": self.timeouts.deal_s,
            },
            "devices": {name: device.to_json() for name, device in self.devices.items()},
            "journal_path": str(self.journal_path),
            "journal_commit_delay_ms": self.journal_commit_delay_ms,
            "panel": {
                "bind": f"{self.panel.host}:{self.panel.port}",
                "users": [{"name": user.name, "role": user.role} for user in self.panel.users],
                "trusted_proxies": list(self.panel.trusted_proxies),
                "users_file": str(self.panel.users_file) if self.panel.users_file else None,
            },
            "logging": {"level": self.logging.level, "format": self.logging.format},
        }

    @property
    def digest(self) -> str:
        """sha256 of the effective configuration: journaled in table_opened as config_digest."""
        return hashlib.sha256(canonical_json(self.to_json()).encode("utf-8")).hexdigest()

    def devices_of_kind(self, kind: str) -> list[Device]:
        """The devices of one kind (shuffler, bet_sensors, dealer_display), in the file's order."""
        return [device for device in self.devices.values() if device.kind == kind]

    def settle_base(self, *, dp_seat: int | None = None, dp_funds_cents: int | None = None) -> dict[str, Any]:
        """The table's part of a round in the settle input shape: game, banking, paytables, rake.

        With ``dp_seat`` (a designated-player table whose button player accepted) the DP banks, with
        its funds, the table's cap, paytables and rake. Without it the house banks: at a
        designated-player table that is the fallback round, played on the house presets, unraked."""
        base: dict[str, Any] = {"game": self.game}
        if dp_seat is not None:
            if self.banking.mode != DESIGNATED_PLAYER:
                raise ValueError(f"table {self.table_id} is house-banked: no designated player")
            if dp_funds_cents is None:
                raise ValueError("a designated player banks with funds")
            banking: dict[str, Any] = {"mode": DESIGNATED_PLAYER, "seat": dp_seat, "funds": dp_funds_cents}
            if self.limits.aggregate_bonus_cap_cents is not None:
                banking["bonus_cap"] = self.limits.aggregate_bonus_cap_cents
            base["banking"] = banking
            base["paytables"] = self.paytables_json()
            rake = self.rake_json()
            if rake is not None:
                base["rake"] = rake
            return base
        base["banking"] = {"mode": HOUSE}
        if self.banking.mode == HOUSE:
            base["paytables"] = self.paytables_json()
        return base

    def rake_json(self) -> dict[str, Any] | None:
        """The rake in the settle input shape (``{"method": "i", "amount": CENTS}``), or None."""
        return None if self.rake is None else self.rake.to_settle()

    def paytables_json(self) -> dict[str, Any]:
        """The paytables in the settle input shape: a preset's name, or a custom table's lines."""
        return {
            wager: table.name if table.name != "custom" else table.to_json()
            for wager, table in self.paytables.items()
        }


@dataclass(frozen=True, slots=True)
class ResolvedTimeouts:
    """The ``[timeouts]`` with every default filled in."""

    decision_s: float
    dp_offer_s: float
    deal_s: float


DEFAULT_DP_OFFER_S = 15.0


class ConfigError(UserError):
    """A configuration refused: ``FILE: KEY: reason``."""


# --- reading --------------------------------------------------------------------------------------
def load_config(path: str | Path | None = None) -> TableConfig:
    """The configuration in ``path``, or the embedded default when None."""
    if path is None:
        return check_config(default_config_document(), source=DEFAULT_CONFIG_NAME, base_dir=Path.cwd())
    config_path = Path(path)
    try:  # bounded, and refused unless a regular file: /dev/zero and a FIFO are refused at once
        text = read_bounded_text(config_path, limit_bytes=MAX_TOML_BYTES)
    except FileRefused as refused:
        raise ConfigError(str(refused)) from None
    config = parse_config(text, source=config_path.name, base_dir=config_path.resolve().parent)
    return dataclasses.replace(
        config,
        file_sha256=hashlib.sha256(text.encode("utf-8")).hexdigest(),
        config_path=config_path.resolve(),
    )


def parse_config(text: str, *, source: str, base_dir: Path) -> TableConfig:
    """Validate a configuration's text. Relative paths (journal, key files) are taken from base_dir."""
    try:  # nesting limited before parsing (controller/files.py): tomllib recurses
        document = load_toml(text)
    except TomlRefused as error:
        raise ConfigError(f"{source}: not valid TOML: {error}") from None
    return check_config(document, source=source, base_dir=base_dir)


def check_config(document: dict[str, Any], *, source: str, base_dir: Path) -> TableConfig:
    """Validate a configuration's document (its TOML as read)."""
    try:
        parsed = ConfigFile.model_validate(document)
        return _assemble(parsed, source=source, base_dir=base_dir)
    except ValidationError as error:
        key, reason = one_line(error, ConfigFile)
        raise ConfigError(f"{source}: {key}: {reason}") from None
    except KeyRefusal as refused:
        raise ConfigError(f"{source}: {refused.key}: {refused.reason}") from None


def _assemble(parsed: ConfigFile, *, source: str, base_dir: Path) -> TableConfig:  # noqa: PLR0912 - one branch per optional section of the file
    """The checks across sections, in the order an operator reads the file, and the TableConfig."""
    game = parsed.table.game
    spec = GAMES[game]
    banking = parsed.banking
    mode = banking.mode
    if mode not in spec.banking_modes:
        raise KeyRefusal("banking.mode", f"{game} is house-banked only")
    house_may_bank = banking.house_banks_when_nobody_accepts
    seats = parsed.table.seats
    if seats is None:  # the most the deck serves
        seats = 0
        while check_seat_count(game, mode, seats + 1, house_may_bank=house_may_bank) is None:
            seats += 1
    else:
        why = check_seat_count(game, mode, seats, house_may_bank=house_may_bank)
        if why is not None:
            raise KeyRefusal("table.seats", why)
    if parsed.limits.aggregate_bonus_cap_cents is not None and mode != DESIGNATED_PLAYER:
        raise KeyRefusal(
            "limits.aggregate_bonus_cap_cents",
            "the aggregate bonus cap applies to designated-player tables (docs/rules.md)",
        )
    why_not = check_bonus_limits(game, parsed.limits.max_bonus_cents)
    if why_not is not None:
        raise KeyRefusal(f"limits.{why_not[0]}", why_not[1])
    min_bank_cents: int | None = None
    if parsed.designated_player is not None:
        if mode != DESIGNATED_PLAYER:
            raise KeyRefusal("designated_player", "only a designated-player table has a bank")
        min_bank_cents = parsed.designated_player.min_bank_cents
    if mode == DESIGNATED_PLAYER and min_bank_cents is None:
        min_bank_cents = 4 * parsed.limits.min_ante_cents
    paytables = _paytables(parsed.paytables, game, mode)
    link, link_timeout_s = _progressive_link(parsed.progressive, parsed.uplink is not None)
    progressive_parameters = _progressive(
        None
        if parsed.progressive is None
        else {k: v for k, v in parsed.progressive.items() if k not in PROGRESSIVE_LINK_KEYS},
        game,
    )
    rake: Rake | None = None
    if parsed.rake is not None:
        if mode != DESIGNATED_PLAYER:
            raise KeyRefusal("rake", "only a designated-player table takes a rake (docs/rules.md)")
        rake = Rake(method=parsed.rake.method, amount_cents=parsed.rake.amount_cents)
    if parsed.timeouts.dp_offer_s is not None and mode != DESIGNATED_PLAYER:
        raise KeyRefusal("timeouts.dp_offer_s", "only a designated-player table offers the bank")
    timeouts = ResolvedTimeouts(
        decision_s=parsed.timeouts.decision_s,
        dp_offer_s=parsed.timeouts.dp_offer_s or DEFAULT_DP_OFFER_S,
        deal_s=parsed.timeouts.deal_s,
    )
    devices = _devices(parsed.devices, base_dir)
    journal_path = Path(parsed.journal.path)
    if not journal_path.is_absolute():
        journal_path = base_dir / journal_path
    host, _, port_text = parsed.panel.bind.rpartition(":")
    users = tuple(PanelUser(user.name, user.role, user.password_hash) for user in parsed.panel.users)
    return TableConfig(
        source=source,
        table_id=parsed.table.id,
        game=game,
        seats=seats,
        banking=banking,
        limits=parsed.limits,
        paytables=paytables,
        rake=rake,
        timeouts=timeouts,
        devices=devices,
        journal_path=journal_path,
        panel=Panel(
            host.strip("[]"),
            int(port_text),
            users,
            tuple(parsed.panel.trusted_proxies),
            None if parsed.panel.users_file is None else base_dir / parsed.panel.users_file,
        ),
        logging=parsed.logging,
        journal_commit_delay_ms=parsed.journal.commit_delay_ms,
        min_bank_cents=min_bank_cents,
        uplink=None if parsed.uplink is None else _uplink(parsed.uplink, base_dir),
        journal_anchor_key=_anchor_key(parsed.journal.anchor_key_file, base_dir),
        journal_segments=SegmentPolicy(
            parsed.journal.segment_entries,
            parsed.journal.segment_per_gaming_day,
            parsed.journal.gaming_day_start_utc,
            None if parsed.journal.archive_dir is None else base_dir / parsed.journal.archive_dir,
            parsed.journal.retention_days,
        ),
        clock=parsed.clock,
        changes=parsed.changes,
        progressive=None if progressive_parameters is None else progressive_parameters.settings,
        progressive_parameters=progressive_parameters,
        software=None
        if parsed.software is None
        else SoftwareConfig(
            manifest=base_dir / parsed.software.manifest,
            public_key=bytes.fromhex(parsed.software.public_key),
            allow_development=parsed.software.allow_development,
        ),
        progressive_link=link,
        progressive_link_timeout_s=link_timeout_s,
        property_settings=parsed.property.settings(),
    )


def _anchor_key(key_file: str | None, base_dir: Path) -> bytes | None:
    if key_file is None:
        return None
    from controller.journal.anchor import read_anchor_key  # noqa: PLC0415 (the journal's own reader)

    if not key_file.strip():
        raise KeyRefusal("journal.anchor_key_file", "empty")
    try:
        return read_anchor_key(base_dir / key_file)
    except ValueError as error:
        raise KeyRefusal("journal.anchor_key_file", str(error)) from None


def _uplink(section: UplinkSection, base_dir: Path) -> UplinkConfig:
    """The password read from its file and the CA's file found, both from the file's directory."""
    password = section.password
    if section.password_file is not None:
        path = base_dir / section.password_file
        try:
            password = read_bounded_text(path, limit_bytes=MAX_SECRET_FILE_BYTES).strip()
        except FileRefused as refused:
            raise KeyRefusal("uplink.password_file", str(refused)) from None
    ca_file = base_dir / section.ca_file
    try:  # read now, bounded, so the uplink's TLS set-up never opens a FIFO or a device
        read_bounded(ca_file, limit_bytes=MAX_CERTIFICATE_BYTES)
    except FileRefused as refused:
        suffix = " (the floor CA's certificate)" if refused.reason == NO_SUCH_FILE else ""
        raise KeyRefusal("uplink.ca_file", f"{refused}{suffix}") from None
    return UplinkConfig(
        servers=tuple(section.servers),
        site=section.site,
        user=section.user,
        password=password or "",
        ca_file=ca_file,
        connect_timeout_s=section.connect_timeout_s,
        ack_timeout_s=section.ack_timeout_s,
        poll_interval_s=section.poll_interval_s,
        backoff_initial_s=section.backoff_initial_s,
        backoff_max_s=section.backoff_max_s,
        stream=section.stream,
    )


PROGRESSIVE_LINK_KEYS = ("link", "link_timeout_s")
MAX_LINK_TIMEOUT_S = 60.0


def _progressive_link(raw: dict[str, Any] | None, has_uplink: bool) -> tuple[str | None, float]:
    """``[progressive] link`` and ``link_timeout_s`` (docs/configuration.md): a linked table's link name
    (its meter is the floor's) and the bound after which the link counts as lost."""
    if raw is None:
        return None, 3.0
    link = raw.get("link")
    timeout = raw.get("link_timeout_s", 3.0)
    if "link_timeout_s" in raw and link is None:
        raise KeyRefusal("progressive.link_timeout_s", "only a linked progressive has a link (give link)")
    if link is None:
        return None, 3.0
    if not isinstance(link, str) or not re.fullmatch(r"[A-Za-z0-9_]{1,32}", link):
        raise KeyRefusal(
            "progressive.link", f"a link's name is 1 to 32 letters, digits or _, not {shown(link)}"
        )
    if not has_uplink:
        raise KeyRefusal("progressive.link", "a linked progressive talks to the floor over [uplink]: add it")
    if (
        isinstance(timeout, bool)
        or not isinstance(timeout, int | float)
        or not 0.5 <= timeout <= MAX_LINK_TIMEOUT_S
    ):
        raise KeyRefusal(
            "progressive.link_timeout_s", f"from 0.5 to {MAX_LINK_TIMEOUT_S:g} seconds, not {shown(timeout)}"
        )
    return link, float(timeout)


def _progressive(raw: dict[str, Any] | None, game: str) -> ProgressiveParameters | None:
    if raw is None:
        return None
    if game not in PROGRESSIVE_GAMES:
        raise KeyRefusal("progressive", NOT_OFFERED)
    from controller.progressive.model import parse_parameters  # noqa: PLC0415 (above: TYPE_CHECKING)

    try:
        return parse_parameters(raw, field="progressive")
    except UserError as error:
        key, _, reason = str(error).partition(": ")
        raise KeyRefusal(key, reason) from None


def _paytables(raw: dict[str, Any], game: str, mode: str) -> dict[str, Paytable]:
    wagers = paytable_wagers(game, mode)
    if "progressive" in raw:
        raise KeyRefusal(
            "paytables.progressive", "the Progressive wager's paytable is in its own [progressive] section"
        )
    for wager in raw:
        if wager not in wagers:
            raise KeyRefusal(f"paytables.{wager}", unknown_key(wager, wagers))
    paytables: dict[str, Paytable] = {}
    for wager in wagers:
        if wager not in raw:
            paytables[wager] = default_paytable(game, mode, wager)
            continue
        try:
            paytables[wager] = parse_table_paytable(raw[wager], field=f"paytables.{wager}")
        except UserError as error:
            key, _, reason = str(error).partition(": ")
            raise KeyRefusal(key, reason) from None
    return paytables


def _relative_device_path(url: str) -> bool:
    """``devices/shuffler``: a device path relative to the configuration file (not a URL, not absolute)."""
    return "://" not in url and "/" in url and not url.startswith("/")


def _devices(sections: dict[str, DeviceSection], base_dir: Path) -> dict[str, Device]:
    devices: dict[str, Device] = {}
    owner_of_key: dict[bytes, str] = {}
    for name, section in sections.items():
        url = section.url
        if _relative_device_path(url):
            # A device path relative to this file's directory (docs/configuration.md), not the
            # directory the table happens to be started from.
            url = str(base_dir / url)
        simulated = isinstance(parse_device_url(url), SimUrl)
        key = _device_key(f"devices.{name}", section, base_dir, simulated=simulated)
        if key is not None:
            # docs/devices.md: keys are never shared. A shared key lets one device pass for another.
            other = owner_of_key.get(key)
            if other is not None:
                field_name = "key" if section.key is not None else "key_file"
                raise KeyRefusal(
                    f"devices.{name}.{field_name}",
                    f"the same key as devices.{other}: every device has its own key "
                    "(generate one per device with `openssl rand -hex 32`)",
                )
            owner_of_key[key] = name
        devices[name] = Device(name, section.kind, url, key)
    for kind in DEVICE_KINDS:
        count = sum(1 for device in devices.values() if device.kind == kind)
        if count == 0:
            raise KeyRefusal(
                "devices", f"no {kind} device (every table has a shuffler, bet_sensors and a dealer_display)"
            )
        if count > 1 and kind != "bet_sensors":
            raise KeyRefusal("devices", f"{count} {kind} devices; a table has one")
    return devices


def read_key_file(path: Path) -> str:
    """A key file's text (hex digits, surrounding white space removed): read bounded, a regular file
    only (controller/files.py). FileRefused ``PATH: reason`` otherwise. Every key file is read here."""
    return read_bounded_text(path, limit_bytes=MAX_KEY_FILE_BYTES, encoding="ascii").strip()


def _device_key(where: str, section: DeviceSection, base_dir: Path, *, simulated: bool) -> bytes | None:
    key_text, key_file = section.key, section.key_file
    if key_text is not None and key_file is not None:
        raise KeyRefusal(f"{where}.key_file", "give key or key_file, not both")
    if key_text is None and key_file is None:
        if simulated:
            return None
        raise KeyRefusal(
            f"{where}.key", f"missing: a real device needs its {DEVICE_KEY_BYTES}-byte key (key or key_file)"
        )
    name = "key" if key_text is not None else "key_file"
    if key_file is not None:
        if not isinstance(key_file, str) or not key_file:
            raise KeyRefusal(f"{where}.key_file", "must be a file path")
        path = Path(key_file)
        if not path.is_absolute():
            path = base_dir / path
        try:
            key_text = read_key_file(path)
        except FileRefused as refused:
            raise KeyRefusal(f"{where}.key_file", str(refused)) from None
    if not isinstance(key_text, str):
        raise KeyRefusal(f"{where}.{name}", f"must be a hex string, not {toml_type(key_text)}")
    try:
        key = bytes.fromhex(key_text)
    except ValueError:
        raise KeyRefusal(f"{where}.{name}", "not hex digits") from None
    if len(key) != DEVICE_KEY_BYTES:
        raise KeyRefusal(
            f"{where}.{name}",
            f"{len(key)} bytes; a device key is {DEVICE_KEY_BYTES} bytes ({DEVICE_KEY_BYTES * 2} hex digits)",
        )
    if len(set(key)) == 1:
        raise KeyRefusal(
            f"{where}.{name}",
            "every byte the same: not a real key (generate one with `openssl rand -hex 32`)",
        )
    return key


__all__ = [
    "DEFAULT_COMMIT_DELAY_MS",
    "DEFAULT_CONFIG_NAME",
    "DEFAULT_CONFIG_TOML",
    "TOO_LONG_NUMBER",
    "Banking",
    "ConfigError",
    "ConfigFile",
    "Device",
    "Limits",
    "Logging",
    "Panel",
    "PanelUser",
    "Rake",
    "ResolvedTimeouts",
    "SoftwareConfig",
    "SoftwareSection",
    "TableConfig",
    "UplinkConfig",
    "UplinkSection",
    "load_config",
    "parse_config",
    "read_key_file",
    "tls_servers",
    "whole_number",
]

"""`flushtable floor serve --config FILE` and `flushtable floor release --config FILE`: the floor service's
settings, ``[floor]`` (docs/floor.md "Operations", docs/configuration.md "The floor service's file").

[floor]
servers = ["tls://floor-nats.example:4222"]
user = "floor-reader"
password_file = "nats-floor.pw"          # relative to this file
ca_file = "floor-ca.pem"
dsn_file = "floor-writer.dsn"            # a libpq connection string for the writer role
batch_size = 2000                        # = the consumer's max_ack_pending

A typed section in the style of the table's file (controller/config/sections.py ``UplinkSection``): checked
models (controller/checked.py) with unknown keys refused and every value's type and range checked, and
each refusal one line, ``FILE: floor.KEY: reason``. The secrets are never written in the file: the NATS
password and the writer's connection string are read from the ``*_file`` keys, relative to the file's
directory.
``write_floor_config`` writes what ``load_floor_config`` reads (tests/config/test_floor_section.py).
"""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path
from typing import Annotated, Any, ClassVar

import psycopg.conninfo

from controller.checked import BeforeValidator, ValidationError, model_validator
from controller.config import checked_ca_file, settings_as_given, tls_servers, whole_number
from controller.errors import UserError, shown
from controller.files import (
    MAX_SECRET_FILE_BYTES,
    MAX_TOML_BYTES,
    FileRefused,
    TomlRefused,
    load_toml,
    read_bounded_text,
)
from controller.floor.service import FloorConfig
from controller.floor.tiles import MAX_PIT_COLUMNS, MAX_PIT_ROWS, PitLayout
from controller.floor.users import FLOOR_USERS_FILE_NAME
from controller.locale import PropertySettings, legacy_property
from controller.settings import KeyRefusal, PropertySection, Strict, one_line, refusal, toml_type, unknown_key
from controller.uplink.wire import FLOOR_INBOX

MAX_BATCH_SIZE = 10_000  # what the file always allowed; more than the consumer's max_ack_pending adds nothing
# The service notices a stop, a release to apply and the idle sweep's time only between pull requests:
# a longer wait would leave SIGTERM unanswered for that long (a busy floor's requests end sooner).
MAX_FETCH_WAIT_S = 5.0
MAX_BACKOFF_S = 600.0
MAX_RELEASE_POLL_S = 600.0  # a manager's release waits at most this long to be applied
MAX_RECONCILE_INTERVAL_S = 3600.0  # a progressive reconciliation difference is alerted within this
MAX_SWEEP_INTERVAL_S = 3600.0
MAX_PIT_NAME_CHARS = 64

# The service's defaults are FloorConfig's (controller/floor/service.py): one place for each number.
_DEFAULT: dict[str, Any] = {f.name: f.default for f in dataclasses.fields(FloorConfig)}


def _seconds_between(minimum_s: float, maximum_s: float) -> BeforeValidator:
    # A floor on each wait, not just "more than 0": a pull request's expiry is sent in whole nanoseconds
    # and 0 means "never expires" to JetStream (requests would pile up at the server, 512 of them, and the
    # loop then spin); a sweep, a release poll or a reconnection without a real pause hammers PostgreSQL
    # and the broker for nothing.
    def check(value: object) -> object:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise refusal(f"must be a number of seconds, not {toml_type(value)}")
        if not minimum_s <= value <= maximum_s:
            raise refusal(
                f"{shown(value)} is out of range: at least {minimum_s:g} and at most {maximum_s:g} seconds"
            )
        return float(value)

    return BeforeValidator(check)


def _text(what: str) -> BeforeValidator:
    """A string with more than blanks in it; ``what`` names it in the refusal."""

    def check(value: object) -> object:
        if not isinstance(value, str):
            raise refusal(f"must be {what}, not {toml_type(value)}")
        if not value.strip():
            raise refusal(f"must be {what}, not an empty string")
        return value

    return BeforeValidator(check)


FileName = Annotated[str, _text("a file name (relative to this file's directory)")]


def _bind(value: object) -> object:
    if not isinstance(value, str) or not value.strip() or any(c.isspace() for c in value):
        raise refusal(f"must be an address to listen on, like 127.0.0.1, not {shown(value)}")
    return value


class FloorSection(Strict):
    """``[floor]``: where the tables' journals come from (NATS), where they go (PostgreSQL), and the
    consumer loop's tuning. The inbox prefix is not here: the server lets the floor reader receive
    replies under ``FLOOR_INBOX`` only (controller/uplink/wire.py), so no other value would work."""

    servers: Annotated[list[str], BeforeValidator(tls_servers)]
    user: Annotated[str, _text("the floor reader's NATS user")]
    password_file: FileName
    ca_file: FileName
    dsn_file: FileName
    batch_size: Annotated[int, whole_number(1, MAX_BATCH_SIZE)] = _DEFAULT["batch_size"]
    fetch_timeout_s: Annotated[float, _seconds_between(0.001, MAX_FETCH_WAIT_S)] = _DEFAULT["fetch_timeout_s"]
    sweep_interval_s: Annotated[float, _seconds_between(0.1, MAX_SWEEP_INTERVAL_S)] = _DEFAULT[
        "sweep_interval_s"
    ]
    release_poll_interval_s: Annotated[float, _seconds_between(0.1, MAX_RELEASE_POLL_S)] = _DEFAULT[
        "release_poll_interval_s"
    ]
    reconcile_interval_s: Annotated[float, _seconds_between(0.1, MAX_RECONCILE_INTERVAL_S)] = _DEFAULT[
        "reconcile_interval_s"
    ]
    backoff_initial_s: Annotated[float, _seconds_between(0.01, MAX_BACKOFF_S)] = _DEFAULT["backoff_initial_s"]
    backoff_max_s: Annotated[float, _seconds_between(0.01, MAX_BACKOFF_S)] = _DEFAULT["backoff_max_s"]
    # From before [property]: the gaming day's start hour, UTC, three 8-hour shifts from it
    # (controller/locale.py ``legacy_property``). [property] gaming_day_start replaces it.
    gaming_day_start_hour: Annotated[int, whole_number(0, 23)] = 6
    surveillance_big_win_cents: Annotated[int, whole_number(1, 10**15, cents=True)] = _DEFAULT[
        "surveillance_big_win_cents"
    ]
    surveillance_poll_interval_s: Annotated[float, _seconds_between(0.05, MAX_RELEASE_POLL_S)] = _DEFAULT[
        "surveillance_poll_interval_s"
    ]

    missing_hints: ClassVar[dict[str, str]] = {
        "servers": "an array of URLs like tls://host:4222",
        "user": "the floor reader's NATS user",
        "password_file": "a file holding the floor reader's NATS password",
        "ca_file": "the floor CA's certificate",
        "dsn_file": "a file holding the writer role's libpq connection string",
    }

    @model_validator(mode="after")
    def _backoff_order(self) -> FloorSection:
        if self.backoff_initial_s > self.backoff_max_s:
            raise KeyRefusal(
                "floor.backoff_initial_s",
                f"{self.backoff_initial_s:g} is more than backoff_max_s ({self.backoff_max_s:g})",
            )
        return self


class PanelSection(Strict):
    """``[panel]``: `flushtable floor panel` (docs/floor.md "Running the floor panel"). Plain HTTP on
    loopback by default: over the casino network it sits behind a TLS-terminating proxy."""

    bind: Annotated[str, BeforeValidator(_bind)] = "127.0.0.1"
    port: Annotated[int, whole_number(1, 65535)] = 8090
    # The reporting role (read-only) for every page; the writer ([floor] dsn_file) only to acknowledge
    # an alert, release a table or record an auditor's disclosure.
    reporting_dsn_file: FileName
    users_file: FileName = FLOOR_USERS_FILE_NAME

    missing_hints: ClassVar[dict[str, str]] = {
        "reporting_dsn_file": "a file holding the reporting role's libpq connection string",
    }


# A table id (the table's rule); \Z, not $: `$` also matches before a final line break.
_TABLE_SPOT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.]{0,31}\Z")


def _pit_name(value: object) -> object:
    if not isinstance(value, str) or not value.strip() or len(value) > MAX_PIT_NAME_CHARS:
        raise refusal(f"must be the pit's name, 1 to {MAX_PIT_NAME_CHARS} characters, not {shown(value)}")
    return value


def _pit_rows(value: object) -> object:
    """The pit's rows as seen from the pit stand: an array of arrays of table ids, "" an empty place."""
    if not isinstance(value, list) or not value:
        raise refusal(f'must be an array of rows like [["T1", "T2"], ["T4", "", "T3"]], not {shown(value)}')
    if len(value) > MAX_PIT_ROWS:
        raise refusal(f"{len(value)} rows: at most {MAX_PIT_ROWS}")
    for index, row in enumerate(value):
        if not isinstance(row, list) or not row:
            raise refusal(
                f'row {index + 1}: must be an array of table ids like ["T1", "", "T2"], not {shown(row)}'
            )
        if len(row) > MAX_PIT_COLUMNS:
            raise refusal(f"row {index + 1}: {len(row)} places: at most {MAX_PIT_COLUMNS}")
        for spot in row:
            if not isinstance(spot, str) or (spot and not _TABLE_SPOT.match(spot)):
                raise refusal(
                    f"row {index + 1}: {shown(spot)} is not a table id (1 to 32 letters, digits, '_' or "
                    "'.') nor \"\" for an empty place"
                )
    return value


class PitSection(Strict):
    """``[[pits]]``: one pit of the floor panel's map, its tables where they stand (docs/floor.md "The
    pit map"). The map only: a table's pit in the meters is floor_table_config's."""

    name: Annotated[str, BeforeValidator(_pit_name)]
    rows: Annotated[list[list[str]], BeforeValidator(_pit_rows)]

    missing_hints: ClassVar[dict[str, str]] = {
        "name": "the pit's name, as the floor calls it",
        "rows": 'the tables as seen from the pit stand, like [["T1", "T2"], ["T4", "", "T3"]]',
    }


class FloorFile(Strict):
    """The whole file: ``[floor]``, ``[panel]`` where this host runs the floor panel, ``[[pits]]`` (the
    panel's map), and ``[progressive]`` where the floor runs linked progressives
    (controller/floor/progressive_config.py reads it); nothing else (a misspelt table is refused)."""

    floor: FloorSection
    panel: PanelSection | None = None
    pits: list[PitSection] | None = None
    progressive: dict[str, Any] | None = None
    # The property's time zone, gaming day, shifts and currency (controller/locale.py), as the tables'.
    property: PropertySection | None = None

    missing_hints: ClassVar[dict[str, str]] = {"floor": "a table like [floor]"}

    @model_validator(mode="after")
    def _pits_apart(self) -> FloorFile:
        """Each pit named once, each table in one place."""
        names: dict[str, int] = {}
        where: dict[str, str] = {}
        for index, pit in enumerate(self.pits or []):
            if pit.name in names:
                raise KeyRefusal(
                    f"pits[{index}].name", f"pit {pit.name!r} is already pits[{names[pit.name]}]"
                )
            names[pit.name] = index
            for table_id, row, column in pit_layout(pit).places():
                if table_id in where:
                    raise KeyRefusal(
                        f"pits[{index}].rows",
                        f"table {table_id} (row {row}, place {column}) is already at {where[table_id]}",
                    )
                where[table_id] = f"pit {pit.name!r}, row {row}, place {column}"
        return self


def pit_layout(pit: PitSection) -> PitLayout:
    return PitLayout(pit.name, tuple(tuple(row) for row in pit.rows))


class FloorConfigError(UserError):
    """The floor's file refused: ``FILE: floor.KEY: reason``."""


def load_floor_config(path: str | Path) -> FloorConfig:
    """The floor service's settings from ``path``, its secrets read from their files."""
    config_path = Path(path)
    parsed = _checked_file(config_path)
    try:
        return _assemble(parsed.floor, config_path.resolve().parent, _property(parsed))
    except ValidationError as error:
        key, reason = one_line(error, FloorFile)
        raise FloorConfigError(f"{config_path}: {key}: {reason}") from None
    except KeyRefusal as refused:
        raise FloorConfigError(f"{config_path}: {refused.key}: {refused.reason}") from None


def _checked_file(config_path: Path) -> FloorFile:
    """The file read and checked whole (keys, types, ranges), no secret file read yet."""
    source = str(config_path)
    try:  # bounded, a regular file only, its nesting limited before parsing (controller/files.py)
        document = load_toml(read_bounded_text(config_path, limit_bytes=MAX_TOML_BYTES))
    except FileRefused as refused:
        raise FloorConfigError(str(refused)) from None
    except TomlRefused as error:
        raise FloorConfigError(f"{source}: not valid TOML: {error}") from None
    unknown = _unknown_key(document)
    if unknown is not None:
        raise FloorConfigError(f"{source}: {unknown}")
    try:
        return FloorFile.model_validate(document)
    except ValidationError as error:
        key, reason = one_line(error, FloorFile)
        raise FloorConfigError(f"{source}: {key}: {reason}") from None
    except KeyRefusal as refused:
        raise FloorConfigError(f"{source}: {refused.key}: {refused.reason}") from None


def load_floor_reporting_dsn(path: str | Path) -> str:
    """`flushtable floor verify`'s connection string: ``[panel] reporting_dsn_file`` of ``path``, the
    floor's read-only reporting role. The file is checked whole as ``load_floor_config`` checks it, but
    [floor]'s secrets are not read: an auditor's copy of the file need not come with the writer's."""
    config_path = Path(path)
    panel = _checked_file(config_path).panel
    if panel is None:
        raise FloorConfigError(
            f"{config_path}: panel: missing (floor verify reads as the read-only reporting role: "
            "a table like [panel] with reporting_dsn_file; docs/floor.md)"
        )
    try:
        return _connection_string(
            config_path.resolve().parent, panel.reporting_dsn_file, key="panel.reporting_dsn_file"
        )
    except KeyRefusal as refused:
        raise FloorConfigError(f"{config_path}: {refused.key}: {refused.reason}") from None


@dataclasses.dataclass(frozen=True)
class FloorPanelConfig:
    """`flushtable floor panel`'s settings: ``[panel]`` with its secrets read, and the writer's DSN."""

    bind: str
    port: int
    reporting_dsn: str
    writer_dsn: str
    users_file: Path
    property_settings: PropertySettings
    surveillance_big_win_cents: int
    pits: tuple[PitLayout, ...] = ()  # the map's layout, [[pits]] in the file's order


def load_floor_panel_config(path: str | Path) -> FloorPanelConfig:
    """``[floor]`` and ``[panel]`` of ``path``; a file without ``[panel]`` is refused in one line."""
    floor = load_floor_config(path)  # every check of [floor], and the file's shape, first
    config_path = Path(path)
    document = load_toml(read_bounded_text(config_path, limit_bytes=MAX_TOML_BYTES))
    whole = FloorFile.model_validate(document)
    panel = whole.panel
    if panel is None:
        raise FloorConfigError(
            f"{config_path}: panel: missing (a table like [panel] with reporting_dsn_file; docs/floor.md)"
        )
    base_dir = config_path.resolve().parent
    try:
        reporting = _connection_string(base_dir, panel.reporting_dsn_file, key="panel.reporting_dsn_file")
    except KeyRefusal as refused:
        raise FloorConfigError(f"{config_path}: {refused.key}: {refused.reason}") from None
    return FloorPanelConfig(
        bind=panel.bind,
        port=panel.port,
        reporting_dsn=reporting,
        writer_dsn=floor.dsn,
        users_file=base_dir / panel.users_file,
        property_settings=floor.property_settings,
        surveillance_big_win_cents=floor.surveillance_big_win_cents,
        pits=tuple(pit_layout(pit) for pit in whole.pits or []),
    )


def floor_users_file(path: str | Path) -> Path:
    """Where `flushtable floor user` keeps the logins of the floor file ``path``: its ``[panel]
    users_file``, else floor-users.json, beside it. Only the file's TOML is read (the users can be
    made before the secrets are in place); a file that is not TOML is refused in one line."""
    config_path = Path(path)
    try:
        document = load_toml(read_bounded_text(config_path, limit_bytes=MAX_TOML_BYTES))
    except FileRefused as refused:
        raise FloorConfigError(str(refused)) from None
    except TomlRefused as error:
        raise FloorConfigError(f"{config_path}: not valid TOML: {error}") from None
    panel = document.get("panel")
    name = (
        panel.get("users_file", FLOOR_USERS_FILE_NAME) if isinstance(panel, dict) else FLOOR_USERS_FILE_NAME
    )
    if not isinstance(name, str) or not name.strip():
        raise FloorConfigError(f"{config_path}: panel.users_file: must be a file name")
    return config_path.resolve().parent / name


def _unknown_key(document: dict[str, Any]) -> str | None:
    """``KEY: unknown key (...)`` for the first unknown key, or None. Named before any other problem: a
    misspelt key is what leaves its right spelling "missing" (the model would name the missing one first)."""
    known = list(FloorFile.model_fields)
    for name, value in document.items():
        if name not in known:
            return f"{name}: {unknown_key(name, known)}"
        if name == "pits" and isinstance(value, list):
            for index, pit in enumerate(value):
                for key in pit if isinstance(pit, dict) else ():
                    if key not in PitSection.model_fields:
                        return f"pits[{index}].{key}: {unknown_key(key, list(PitSection.model_fields))}"
        if isinstance(value, dict) and name in ("floor", "panel", "property"):
            model = {"floor": FloorSection, "panel": PanelSection, "property": PropertySection}[name]
            keys = list(model.model_fields)  # type: ignore[attr-defined]
            for key in value:
                if key not in keys:
                    return f"{name}.{key}: {unknown_key(key, keys)}"
    return None


def _property(parsed: FloorFile) -> PropertySettings:
    """[property]'s settings; or, without one, what [floor] gaming_day_start_hour meant before it."""
    if parsed.property is None:
        return legacy_property(parsed.floor.gaming_day_start_hour)
    if "gaming_day_start_hour" in parsed.floor.model_fields_set:
        raise KeyRefusal(
            "floor.gaming_day_start_hour",
            "give [property] gaming_day_start instead (not both: which would count?)",
        )
    return parsed.property.settings()


def _assemble(section: FloorSection, base_dir: Path, prop: PropertySettings) -> FloorConfig:
    ca_file = checked_ca_file(base_dir, section.ca_file, key="floor.ca_file")
    # The rest of [floor] (the user, the consumer's and the sweeps' tuning) as the file gives it.
    given = settings_as_given(section, FloorConfig, set_here=("servers", "ca_file"))
    return FloorConfig(
        servers=tuple(section.servers),
        password=_secret(base_dir, "password_file", section.password_file),
        ca_file=ca_file,
        dsn=_connection_string(base_dir, section.dsn_file),
        inbox_prefix=FLOOR_INBOX,
        property_settings=prop,
        **given,
    )


def _secret(base_dir: Path, key: str, name: str, *, section: str = "floor") -> str:
    path = base_dir / name
    try:
        text = read_bounded_text(path, limit_bytes=MAX_SECRET_FILE_BYTES).strip()
    except FileRefused as refused:
        raise KeyRefusal(f"{section}.{key}", str(refused)) from None
    if not text:
        # An empty password or connection string would only fail later, as a connection refused.
        raise KeyRefusal(f"{section}.{key}", f"{path}: empty")
    return text


def _connection_string(base_dir: Path, name: str, *, key: str = "floor.dsn_file") -> str:
    """The writer's libpq connection string, checked here: libpq's own complaint about a malformed one
    quotes the string around the fault, password included, and would reach the terminal and every
    ``floor_retry`` log line. The refusal names the file and quotes nothing of it."""
    section, _, short = key.partition(".")
    dsn = _secret(base_dir, short, name, section=section)
    try:
        psycopg.conninfo.conninfo_to_dict(dsn)
    except psycopg.Error:
        raise KeyRefusal(
            key, f"{base_dir / name}: not a libpq connection string (key=value ... or a URI)"
        ) from None
    return dsn


def _toml_string(text: str) -> str:
    # JSON's string escapes (\" \\ \n \uXXXX ...) are all TOML basic-string escapes.
    return json.dumps(text, ensure_ascii=False)


def property_toml(prop: PropertySettings) -> str:
    """``[property]`` as the file writes it (empty for the defaults): what ``PropertySection`` reads
    back to ``prop``."""
    if prop == legacy_property(6):
        return ""
    money = prop.money
    lines = [
        "\n[property]",
        f"time_zone = {_toml_string(prop.time_zone)}",
        f'gaming_day_start = "{prop.gaming_day_start_text}"',
    ]
    if money.currency is not None or money.symbol is not None:
        lines.append(f"currency = {_toml_string(prop.currency)}")
        lines.append(f"currency_decimals = {money.decimals}")
    if money.symbol is not None:
        lines.append(f"currency_symbol = {_toml_string(money.symbol)}")
    lines.append("\n[property.shifts]")
    lines.extend(f'{shift.name} = "{shift.start_text}"' for shift in prop.shifts)
    return "\n".join(lines) + "\n"


def write_floor_config(
    directory: Path,
    config: FloorConfig,
    *,
    reporting_dsn: str | None = None,
    panel_port: int = 8090,
    pits: tuple[PitLayout, ...] = (),
) -> Path:
    """Write a config and its secret files (mode 0600) for ``config``: the file the tests run
    `flushtable floor serve` and `floor release` on. ``load_floor_config`` of it gives ``config`` back
    (the CA's path made absolute). With ``reporting_dsn``, a ``[panel]`` too (loopback, ``panel_port``),
    for `flushtable floor panel` (the demo's file), and its map's ``pits``."""
    if config.inbox_prefix != FLOOR_INBOX:
        raise ValueError(f"the floor's inbox prefix is {FLOOR_INBOX!r}: the file cannot hold another")
    directory.mkdir(parents=True, exist_ok=True)
    secrets = [("nats-floor.pw", config.password), ("floor-writer.dsn", config.dsn)]
    if reporting_dsn is not None:
        secrets.append(("floor-reporting.dsn", reporting_dsn))
    for name, text in secrets:
        secret = directory / name
        secret.touch(mode=0o600)
        secret.chmod(0o600)  # before the secret is written: never readable by others, even briefly
        secret.write_text(text + "\n", encoding="utf-8")
    path = directory / "floor.toml"
    servers = ", ".join(_toml_string(server) for server in config.servers)
    path.write_text(
        "[floor]\n"
        f"servers = [{servers}]\n"
        f"user = {_toml_string(config.user)}\n"
        'password_file = "nats-floor.pw"\n'
        f"ca_file = {_toml_string(str(config.ca_file.resolve()))}\n"
        'dsn_file = "floor-writer.dsn"\n'
        f"batch_size = {config.batch_size}\n"
        f"fetch_timeout_s = {config.fetch_timeout_s!r}\n"
        f"sweep_interval_s = {config.sweep_interval_s!r}\n"
        f"release_poll_interval_s = {config.release_poll_interval_s!r}\n"
        f"reconcile_interval_s = {config.reconcile_interval_s!r}\n"
        f"backoff_initial_s = {config.backoff_initial_s!r}\n"
        f"backoff_max_s = {config.backoff_max_s!r}\n"
        f"surveillance_big_win_cents = {config.surveillance_big_win_cents}\n"
        f"surveillance_poll_interval_s = {config.surveillance_poll_interval_s!r}\n"
        + property_toml(config.property_settings)
        + (
            ""
            if reporting_dsn is None
            else f'\n[panel]\nbind = "127.0.0.1"\nport = {panel_port}\n'
            f'reporting_dsn_file = "floor-reporting.dsn"\nusers_file = "{FLOOR_USERS_FILE_NAME}"\n'
        )
        + "".join(
            f"\n[[pits]]\nname = {_toml_string(pit.name)}\nrows = "
            + json.dumps([list(row) for row in pit.rows], ensure_ascii=False)
            + "\n"
            for pit in pits
        ),
        encoding="utf-8",
    )
    return path

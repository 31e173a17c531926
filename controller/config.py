"""The table's configuration: TOML (tomllib), validated whole at start.

Every refusal is one line that names the file and the key: ``table.toml: devices.shuffler.url: ...``.
Unknown keys are refused, so a typo is never silently ignored. docs/configuration.md documents every
key with a complete example (which the test suite loads).
"""

from __future__ import annotations

import difflib
import hashlib
import ipaddress
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal
from urllib.parse import parse_qs, urlsplit

from controller.errors import UserError
from controller.journal.chain import canonical_json
from controller.passwords import parse_password_hash
from controller.rules.games import DESIGNATED_PLAYER, GAMES
from controller.rules.paytables import DEFAULT_PRESET, Paytable, default_paytable, parse_paytable

RAKE_METHODS = ("all_players", "players_not_dp", "dp_only")
RAKE_METHOD_CODES = {"all_players": "i", "players_not_dp": "ii", "dp_only": "iii"}  # RULES.md (i)-(iii)
DEVICE_KINDS = ("shuffler", "bet_sensors", "dealer_display")
ROLES = ("viewer", "supervisor", "manager")
DEVICE_KEY_BYTES = 32  # firmware_protocol.constants.DEVICE_KEY_LEN: HMAC-SHA256 device keys
MAX_AMOUNT_CENTS = 100_000_000_00  # a million in units: no table limit comes near; catches extra zeros
MAX_TIMEOUT_S = 3600.0
LOG_LEVELS = ("debug", "info", "warning", "error")
LOG_FORMATS = ("auto", "json", "console")

# URL schemes a device may use (docs/devices.md describes the transports).
DEVICE_URL_SCHEMES = ("serial", "socket", "usb", "sim", "sim+pty", "sim+tcp", "sim+usb")
_TABLE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.]{0,31}$")  # no '-': it separates round id parts
_NAME = re.compile(r"^[a-z][a-z0-9_]{0,31}$")
_USER_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@-]{0,63}$")
_USB_ID = re.compile(r"^[0-9A-Fa-f]{4}$")

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


@dataclass(frozen=True, slots=True)
class Banking:
    mode: Literal["house", "designated-player"]
    house_banks_when_nobody_accepts: bool = False  # designated-player: may the house bank the round?


@dataclass(frozen=True, slots=True)
class Limits:
    min_ante_cents: int
    max_ante_cents: int
    aggregate_bonus_cap_cents: int | None = None  # designated-player: the most bonus wins pay per round


@dataclass(frozen=True, slots=True)
class Rake:
    method: Literal["all_players", "players_not_dp", "dp_only"]
    amount_cents: int


@dataclass(frozen=True, slots=True)
class Timeouts:
    decision_s: float  # a seat that has not acted by then has folded (walk-away); Chase: checks
    dp_offer_s: float  # designated-player: how long the button's player has to accept the bank
    deal_s: float = 30.0  # a shoe silent this long mid-deal: the incomplete hands are dead (a miscount)


@dataclass(frozen=True, slots=True)
class Device:
    name: str
    kind: Literal["shuffler", "bet_sensors", "dealer_display"]
    url: str
    key: bytes | None = field(repr=False)  # None: a simulated device; the daemon makes a key per run

    @property
    def simulated(self) -> bool:
        return self.url.startswith("sim")

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


@dataclass(frozen=True, slots=True)
class Logging:
    level: str = "info"
    format: str = "auto"  # auto: JSON lines unless standard error is a terminal


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
    timeouts: Timeouts
    devices: dict[str, Device]
    journal_path: Path
    panel: Panel
    logging: Logging
    # Group commit: how long (ms) journal entries that release no command may wait to share an fsync.
    journal_commit_delay_ms: int = DEFAULT_COMMIT_DELAY_MS

    def to_json(self) -> dict[str, Any]:
        """The effective configuration, secrets reduced to fingerprints (hashed for config_digest)."""
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
            },
            "paytables": {
                wager: {"name": table.name, "lines": table.to_json()}
                for wager, table in self.paytables.items()
            },
            "rake": None
            if self.rake is None
            else {"method": self.rake.method, "amount_cents": self.rake.amount_cents},
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
            if self.banking.mode != "designated-player":
                raise ValueError(f"table {self.table_id} is house-banked: no designated player")
            if dp_funds_cents is None:
                raise ValueError("a designated player banks with funds")
            banking: dict[str, Any] = {"mode": "designated-player", "seat": dp_seat, "funds": dp_funds_cents}
            if self.limits.aggregate_bonus_cap_cents is not None:
                banking["bonus_cap"] = self.limits.aggregate_bonus_cap_cents
            base["banking"] = banking
            base["paytables"] = self.paytables_json()
            rake = self.rake_json()
            if rake is not None:
                base["rake"] = rake
            return base
        base["banking"] = {"mode": "house"}
        if self.banking.mode == "house":
            base["paytables"] = self.paytables_json()
        return base

    def rake_json(self) -> dict[str, Any] | None:
        """The rake in the settle input shape (``{"method": "i", "amount": CENTS}``), or None."""
        if self.rake is None:
            return None
        return {"method": RAKE_METHOD_CODES[self.rake.method], "amount": self.rake.amount_cents}

    def paytables_json(self) -> dict[str, Any]:
        """The paytables in the settle input shape: a preset's name, or a custom table's lines."""
        return {
            wager: table.name if table.name != "custom" else table.to_json()
            for wager, table in self.paytables.items()
        }


class ConfigError(UserError):
    """A configuration refused: ``FILE: KEY: reason``."""


# --- reading --------------------------------------------------------------------------------------
def load_config(path: str | Path | None = None) -> TableConfig:
    """The configuration in ``path``, or the embedded default when None."""
    if path is None:
        return parse_config(DEFAULT_CONFIG_TOML, source=DEFAULT_CONFIG_NAME, base_dir=Path.cwd())
    config_path = Path(path)
    try:
        text = config_path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{config_path}: no such file") from None
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(f"{config_path}: cannot read: {error}") from None
    return parse_config(text, source=config_path.name, base_dir=config_path.resolve().parent)


def parse_config(text: str, *, source: str, base_dir: Path) -> TableConfig:
    """Validate a configuration's text. Relative paths (journal, key files) are taken from base_dir."""
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{source}: not valid TOML: {error}") from None
    return _Parser(source, base_dir).parse(document)


class _Section:
    """One TOML table being read: remembers the keys taken, so the leftovers can be refused."""

    def __init__(self, parser: _Parser, path: str, values: Mapping[str, Any]) -> None:
        self.parser = parser
        self.path = path
        self.values = values
        self.taken: set[str] = set()

    def key(self, name: str) -> str:
        return f"{self.path}.{name}" if self.path else name

    def error(self, name: str, reason: str) -> ConfigError:
        return self.parser.error(self.key(name), reason)

    def raw(self, name: str) -> Any:
        self.taken.add(name)
        return self.values.get(name)

    def has(self, name: str) -> bool:
        return name in self.values

    def string(self, name: str, *, default: str | None = None, choices: tuple[str, ...] | None = None) -> str:
        value = self.raw(name)
        if value is None:
            if default is None:
                raise self.error(name, "missing" + (f" (one of: {', '.join(choices)})" if choices else ""))
            return default
        if not isinstance(value, str):
            raise self.error(name, f"must be a string, not {_toml_type(value)}")
        if choices is not None and value not in choices:
            hint = _did_you_mean(value, choices)
            raise self.error(name, f"{value!r} is not one of: {', '.join(choices)}{hint}")
        return value

    def integer(self, name: str, *, minimum: int, maximum: int, default: int | None = None) -> int:
        value = self.raw(name)
        if value is None:
            if default is None:
                raise self.error(name, "missing")
            return default
        if isinstance(value, bool) or not isinstance(value, int):
            unit = " (amounts are whole cents)" if name.endswith("_cents") else ""
            raise self.error(name, f"must be a whole number, not {_toml_type(value)} {value!r}{unit}")
        if not minimum <= value <= maximum:
            why = ""
            if name == "seats":
                why = " (one deck serves that many hands and the banker's)"
            raise self.error(name, f"{value} is out of range {minimum}..{maximum}{why}")
        return value

    def optional_integer(self, name: str, *, minimum: int, maximum: int) -> int | None:
        if self.values.get(name) is None:
            self.taken.add(name)
            return None
        return self.integer(name, minimum=minimum, maximum=maximum)

    def seconds(self, name: str, *, default: float) -> float:
        value = self.raw(name)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.error(name, f"must be a number of seconds, not {_toml_type(value)}")
        if not 0 < value <= MAX_TIMEOUT_S:
            raise self.error(
                name, f"{value} is out of range: more than 0 and at most {MAX_TIMEOUT_S:g} seconds"
            )
        return float(value)

    def boolean(self, name: str, *, default: bool) -> bool:
        value = self.raw(name)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise self.error(name, f"must be true or false, not {_toml_type(value)}")
        return value

    def section(self, name: str, *, required: bool = False) -> _Section:
        value = self.raw(name)
        if value is None:
            if required:
                raise self.error(name, "missing (a table like [" + self.key(name) + "])")
            value = {}
        if not isinstance(value, dict):
            raise self.error(name, f"must be a table, not {_toml_type(value)}")
        return _Section(self.parser, self.key(name), value)

    def done(self, known: tuple[str, ...] | None = None) -> None:
        """Refuse every key that was not read: a typo must not be silently ignored."""
        for name in self.values:
            if name not in self.taken:
                choices = tuple(known) if known is not None else tuple(sorted(self.taken))
                hint = _did_you_mean(name, choices)
                known_text = f" (known: {', '.join(choices)})" if choices else ""
                raise self.error(name, f"unknown key{hint or known_text}")


class _Parser:
    def __init__(self, source: str, base_dir: Path) -> None:
        self.source = source
        self.base_dir = base_dir

    def error(self, key: str, reason: str) -> ConfigError:
        return ConfigError(f"{self.source}: {key}: {reason}")

    def parse(self, document: Mapping[str, Any]) -> TableConfig:
        root = _Section(self, "", document)
        table = root.section("table", required=True)
        table_id = table.string("id")
        if not _TABLE_ID.match(table_id):
            raise table.error(
                "id", f"{table_id!r}: 1 to 32 letters, digits, '_' or '.', starting with a letter or digit"
            )
        game = table.string("game", choices=tuple(GAMES))
        spec = GAMES[game]

        banking_section = root.section("banking")
        mode = banking_section.string("mode", default="house", choices=("house", "designated-player"))
        if mode not in spec.banking_modes:
            raise banking_section.error("mode", f"{game} is house-banked only")
        house_banks = banking_section.boolean("house_banks_when_nobody_accepts", default=False)
        if house_banks and mode != DESIGNATED_PLAYER:
            raise banking_section.error(
                "house_banks_when_nobody_accepts", "only a designated-player table has a bank to accept"
            )
        banking_section.done()

        # The deck serves max_players hands plus the banker's. At a designated-player table the banker
        # is one of the seats, so it has one seat more, unless the house may bank a round itself.
        max_seats = spec.max_players + (1 if mode == DESIGNATED_PLAYER and not house_banks else 0)
        seats = table.integer("seats", minimum=1, maximum=max_seats, default=max_seats)
        if mode == DESIGNATED_PLAYER and seats < 2:
            raise table.error("seats", "a designated-player table needs at least 2 seats")
        table.done()
        banking = Banking(mode, house_banks)  # type: ignore[arg-type]

        limits_section = root.section("limits", required=True)
        min_ante = limits_section.integer("min_ante_cents", minimum=1, maximum=MAX_AMOUNT_CENTS)
        max_ante = limits_section.integer("max_ante_cents", minimum=1, maximum=MAX_AMOUNT_CENTS)
        if max_ante < min_ante:
            raise limits_section.error("max_ante_cents", f"{max_ante} is below min_ante_cents {min_ante}")
        cap = limits_section.optional_integer(
            "aggregate_bonus_cap_cents", minimum=1, maximum=MAX_AMOUNT_CENTS
        )
        if cap is not None and mode != "designated-player":
            raise limits_section.error(
                "aggregate_bonus_cap_cents",
                "the aggregate bonus cap applies to designated-player tables (RULES.md)",
            )
        limits_section.done()
        limits = Limits(min_ante, max_ante, cap)

        paytables = self._paytables(root.section("paytables"), game, mode)

        rake: Rake | None = None
        if root.has("rake"):
            rake_section = root.section("rake")
            if mode != "designated-player":
                raise self.error("rake", "only a designated-player table takes a rake (RULES.md)")
            method = rake_section.string("method", choices=RAKE_METHODS)
            amount = rake_section.integer("amount_cents", minimum=0, maximum=MAX_AMOUNT_CENTS)
            rake_section.done()
            rake = Rake(method, amount)  # type: ignore[arg-type]
        else:
            root.raw("rake")

        timeouts_section = root.section("timeouts")
        timeouts = Timeouts(
            decision_s=timeouts_section.seconds("decision_s", default=30.0),
            dp_offer_s=timeouts_section.seconds("dp_offer_s", default=15.0),
            deal_s=timeouts_section.seconds("deal_s", default=30.0),
        )
        if timeouts_section.has("dp_offer_s") and mode != "designated-player":
            raise timeouts_section.error("dp_offer_s", "only a designated-player table offers the bank")
        timeouts_section.done()

        devices = self._devices(root.section("devices", required=True))

        journal_section = root.section("journal")
        journal_text = journal_section.string("path", default="var/journal.sqlite")
        if not journal_text.strip():
            raise journal_section.error("path", "empty")
        journal_path = Path(journal_text)
        if not journal_path.is_absolute():
            journal_path = self.base_dir / journal_path
        commit_delay_ms = journal_section.integer(
            "commit_delay_ms", minimum=0, maximum=MAX_COMMIT_DELAY_MS, default=DEFAULT_COMMIT_DELAY_MS
        )
        journal_section.done()

        panel = self._panel(root.section("panel"))

        logging_section = root.section("logging")
        logging = Logging(
            level=logging_section.string("level", default="info", choices=LOG_LEVELS),
            format=logging_section.string("format", default="auto", choices=LOG_FORMATS),
        )
        logging_section.done()

        root.taken.add("uplink")  # [uplink]: read by controller/uplink/config.py (docs/floor.md)
        root.done()
        return TableConfig(
            source=self.source,
            table_id=table_id,
            game=game,
            seats=seats,
            banking=banking,
            limits=limits,
            paytables=paytables,
            rake=rake,
            timeouts=timeouts,
            devices=devices,
            journal_path=journal_path,
            panel=panel,
            logging=logging,
            journal_commit_delay_ms=commit_delay_ms,
        )

    def _paytables(self, section: _Section, game: str, mode: str) -> dict[str, Paytable]:
        wagers = tuple(wager for (g, m, wager) in DEFAULT_PRESET if g == game and m == mode)
        if game == "top-flush" and section.has("progressive"):
            raise section.error(
                "progressive", "the Progressive wager is not specified yet (RULES.md): refused"
            )
        paytables: dict[str, Paytable] = {}
        for wager in wagers:
            spec = section.raw(wager)
            if spec is None:
                paytables[wager] = default_paytable(game, mode, wager)
                continue
            try:
                paytables[wager] = parse_paytable(spec, field=section.key(wager))
            except UserError as error:
                raise ConfigError(f"{self.source}: {error}") from None
        section.done(wagers)
        return paytables

    def _devices(self, section: _Section) -> dict[str, Device]:
        devices: dict[str, Device] = {}
        for name in section.values:
            device_section = section.section(name)
            if not _NAME.match(name):
                raise section.error(
                    name, "a device name is 1 to 32 of a-z, 0-9 and '_', starting with a letter"
                )
            kind = device_section.string("kind", choices=DEVICE_KINDS)
            url = device_section.string("url")
            self._check_device_url(device_section, url)
            key = self._device_key(device_section, simulated=url.startswith("sim"))
            device_section.done(("kind", "url", "key", "key_file"))
            devices[name] = Device(name, kind, url, key)  # type: ignore[arg-type]
        for kind in DEVICE_KINDS:
            count = sum(1 for device in devices.values() if device.kind == kind)
            if count == 0:
                raise self.error(
                    "devices",
                    f"no {kind} device (every table has a shuffler, bet_sensors and a dealer_display)",
                )
            if count > 1 and kind != "bet_sensors":
                raise self.error("devices", f"{count} {kind} devices; a table has one")
        return devices

    def _check_device_url(self, section: _Section, url: str) -> None:
        def bad(reason: str) -> ConfigError:
            return section.error("url", f"{url!r}: {reason}")

        if url.startswith("/"):
            return  # a serial device path such as /dev/ttyUSB0 (docs/devices.md)
        parts = urlsplit(url)
        if parts.scheme not in DEVICE_URL_SCHEMES or "://" not in url:
            raise bad(f"the scheme must be one of {', '.join(DEVICE_URL_SCHEMES)} (or a /dev/... path)")
        query = parse_qs(parts.query, keep_blank_values=True)
        if parts.scheme == "serial":
            if not parts.path:
                raise bad("a serial URL names the port, e.g. serial:///dev/ttyUSB0?baudrate=115200")
            for baud in query.get("baudrate", []):
                if not baud.isdigit() or not 300 <= int(baud) <= 4_000_000:
                    raise bad(f"baudrate {baud!r} is not a rate from 300 to 4000000")
        elif parts.scheme in ("socket", "sim+tcp"):
            try:
                host, port = parts.hostname, parts.port
            except ValueError as error:
                raise bad(f"bad port: {error}") from None
            if not host or port is None:
                raise bad("a TCP URL is socket://HOST:PORT")
            if parts.scheme == "sim+tcp" and not _is_loopback(host):
                raise bad("a simulated device listens on loopback only")
        elif parts.scheme == "usb":
            ids = parts.netloc.split(":")
            if len(ids) != 2 or not all(_USB_ID.match(part) for part in ids):
                raise bad("a USB URL is usb://VID:PID with 4 hex digits each, e.g. usb://1d50:6018?serial=S1")
        elif not parts.netloc:
            raise bad(f"a simulated device URL names it, e.g. {parts.scheme}://shuffler")

    def _device_key(self, section: _Section, *, simulated: bool) -> bytes | None:
        key_text = section.raw("key")
        key_file = section.raw("key_file")
        if key_text is not None and key_file is not None:
            raise section.error("key_file", "give key or key_file, not both")
        if key_text is None and key_file is None:
            if simulated:
                return None
            raise section.error(
                "key", f"missing: a real device needs its {DEVICE_KEY_BYTES}-byte key (key or key_file)"
            )
        name = "key" if key_text is not None else "key_file"
        if key_file is not None:
            if not isinstance(key_file, str) or not key_file:
                raise section.error("key_file", "must be a file path")
            path = Path(key_file)
            if not path.is_absolute():
                path = self.base_dir / path
            try:
                key_text = path.read_text(encoding="ascii").strip()
            except (OSError, UnicodeDecodeError) as error:
                raise section.error("key_file", f"cannot read {path}: {error}") from None
        if not isinstance(key_text, str):
            raise section.error(name, f"must be a hex string, not {_toml_type(key_text)}")
        try:
            key = bytes.fromhex(key_text)
        except ValueError:
            raise section.error(name, "not hex digits") from None
        if len(key) != DEVICE_KEY_BYTES:
            raise section.error(
                name,
                f"{len(key)} bytes; a device key is {DEVICE_KEY_BYTES} bytes "
                f"({DEVICE_KEY_BYTES * 2} hex digits)",
            )
        if len(set(key)) == 1:
            raise section.error(
                name, "every byte the same: not a real key (generate one with `openssl rand -hex 32`)"
            )
        return key

    def _panel(self, section: _Section) -> Panel:
        bind = section.string("bind", default="127.0.0.1:8080")
        host, _, port_text = bind.rpartition(":")
        host = host.strip("[]")
        if not host or not port_text.isdigit() or not 1 <= int(port_text) <= 65535:
            raise section.error("bind", f"{bind!r} is not HOST:PORT with a port from 1 to 65535")
        users: list[PanelUser] = []
        raw_users = section.raw("users")
        if raw_users is not None:
            if not isinstance(raw_users, list):
                raise section.error("users", "must be an array of tables ([[panel.users]])")
            seen: set[str] = set()
            for index, raw_user in enumerate(raw_users):
                key = f"users[{index}]"
                if not isinstance(raw_user, dict):
                    raise section.error(key, "must be a table with name, role and password_hash")
                user = _Section(self, section.key(key), raw_user)
                name = user.string("name")
                if not _USER_NAME.match(name):
                    raise user.error("name", f"{name!r}: 1 to 64 letters, digits or . _ @ -")
                if name in seen:
                    raise user.error("name", f"{name!r} appears twice")
                seen.add(name)
                role = user.string("role", choices=ROLES)
                password_hash = user.string("password_hash")
                try:
                    parse_password_hash(password_hash)
                except ValueError as error:
                    raise user.error("password_hash", str(error)) from None
                user.done()
                users.append(PanelUser(name, role, password_hash))  # type: ignore[arg-type]
        section.done()
        return Panel(host, int(port_text), tuple(users))


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _did_you_mean(value: str, choices: tuple[str, ...]) -> str:
    close = difflib.get_close_matches(value, choices, n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _toml_type(value: object) -> str:
    return {
        bool: "a boolean",
        int: "an integer",
        float: "a float",
        str: "a string",
        list: "an array",
        dict: "a table",
    }.get(type(value), type(value).__name__)

"""Reading a configuration: the file bounded and parsed, its sections checked, then the checks across
sections (in the order an operator reads the file) that make the ``TableConfig``.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Collection
from pathlib import Path
from typing import TYPE_CHECKING, Any

from controller.checked import ValidationError
from controller.config.resolved import (
    DEFAULT_DP_OFFER_S,
    Device,
    Panel,
    PanelUser,
    ResolvedTimeouts,
    SoftwareConfig,
    TableConfig,
    UplinkConfig,
)
from controller.config.sections import (
    DEFAULT_CONFIG_NAME,
    DEVICE_KEY_BYTES,
    ConfigFile,
    DeviceSection,
    JournalSection,
    PanelSection,
    SegmentPolicy,
    SoftwareSection,
    UplinkSection,
    default_config_document,
    relative_device_path,
)
from controller.errors import UserError, shown
from controller.files import (
    MAX_CERTIFICATE_BYTES,
    MAX_KEY_FILE_BYTES,
    MAX_SECRET_FILE_BYTES,
    MAX_TOML_BYTES,
    NO_SUCH_FILE,
    FileRefused,
    TomlRefused,
    load_toml,
    read_bounded,
    read_bounded_text,
)
from controller.names import DESIGNATED_PLAYER, DEVICE_KINDS
from controller.rules.catalogue import paytable_wagers
from controller.rules.games import GAMES, NOT_OFFERED, PROGRESSIVE_GAMES
from controller.rules.paytables import Paytable, default_paytable, parse_table_paytable
from controller.settings import (
    KeyRefusal,
    Rake,
    check_bonus_limits,
    check_seat_count,
    one_line,
    toml_type,
    unknown_key,
)
from drivers.urls import SimUrl, parse_device_url
from table_names import records

if TYPE_CHECKING:
    # Loaded where a [progressive] table is read (_progressive): the controller's model brings the
    # journal's typed entries and msgspec, which checking a table without a Progressive never needs.
    from controller.progressive.model import ProgressiveParameters


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
    return records.replace(
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


def _assemble(parsed: ConfigFile, *, source: str, base_dir: Path) -> TableConfig:
    """The checks across sections, in the order an operator reads the file, and the TableConfig."""
    game = parsed.table.game
    mode = parsed.banking.mode
    if mode not in GAMES[game].banking_modes:
        raise KeyRefusal("banking.mode", f"{game} is house-banked only")
    seats = _seat_count(parsed)
    _check_limits(parsed)
    min_bank_cents = _min_bank_cents(parsed)
    paytables = _paytables(parsed.paytables, game, mode)
    link, link_timeout_s = _progressive_link(parsed.progressive, parsed.uplink is not None)
    progressive_parameters = _progressive(
        None
        if parsed.progressive is None
        else {k: v for k, v in parsed.progressive.items() if k not in PROGRESSIVE_LINK_KEYS},
        game,
    )
    rake = _rake(parsed)
    timeouts = _timeouts(parsed)
    devices = _devices(parsed.devices, base_dir)
    journal_path = Path(parsed.journal.path)
    if not journal_path.is_absolute():
        journal_path = base_dir / journal_path
    return TableConfig(
        source=source,
        table_id=parsed.table.id,
        game=game,
        seats=seats,
        banking=parsed.banking,
        limits=parsed.limits,
        paytables=paytables,
        rake=rake,
        timeouts=timeouts,
        devices=devices,
        journal_path=journal_path,
        panel=_panel(parsed.panel, base_dir),
        logging=parsed.logging,
        journal_commit_delay_ms=parsed.journal.commit_delay_ms,
        min_bank_cents=min_bank_cents,
        uplink=None if parsed.uplink is None else _uplink(parsed.uplink, base_dir),
        journal_anchor_key=_anchor_key(parsed.journal.anchor_key_file, base_dir),
        journal_segments=_segments(parsed.journal, base_dir),
        clock=parsed.clock,
        changes=parsed.changes,
        progressive=None if progressive_parameters is None else progressive_parameters.settings,
        progressive_parameters=progressive_parameters,
        software=None if parsed.software is None else _software(parsed.software, base_dir),
        progressive_link=link,
        progressive_link_timeout_s=link_timeout_s,
        property_settings=parsed.property.settings(),
    )


def _seat_count(parsed: ConfigFile) -> int:
    """[table] seats as checked against the game and its banking; when absent, the most the deck serves."""
    game, mode = parsed.table.game, parsed.banking.mode
    house_may_bank = parsed.banking.house_banks_when_nobody_accepts
    seats = parsed.table.seats
    if seats is None:
        seats = 0
        while check_seat_count(game, mode, seats + 1, house_may_bank=house_may_bank) is None:
            seats += 1
        return seats
    why = check_seat_count(game, mode, seats, house_may_bank=house_may_bank)
    if why is not None:
        raise KeyRefusal("table.seats", why)
    return seats


def _check_limits(parsed: ConfigFile) -> None:
    """[limits]' bonus cap and maxima, which depend on the banking and the game."""
    if parsed.limits.aggregate_bonus_cap_cents is not None and parsed.banking.mode != DESIGNATED_PLAYER:
        raise KeyRefusal(
            "limits.aggregate_bonus_cap_cents",
            "the aggregate bonus cap applies to designated-player tables (docs/rules.md)",
        )
    why_not = check_bonus_limits(parsed.table.game, parsed.limits.max_bonus_cents)
    if why_not is not None:
        raise KeyRefusal(f"limits.{why_not[0]}", why_not[1])


def _min_bank_cents(parsed: ConfigFile) -> int | None:
    """[designated_player] min_bank_cents, or 4x the minimum ante at a designated-player table."""
    mode = parsed.banking.mode
    min_bank_cents: int | None = None
    if parsed.designated_player is not None:
        if mode != DESIGNATED_PLAYER:
            raise KeyRefusal("designated_player", "only a designated-player table has a bank")
        min_bank_cents = parsed.designated_player.min_bank_cents
    if mode == DESIGNATED_PLAYER and min_bank_cents is None:
        min_bank_cents = 4 * parsed.limits.min_ante_cents
    return min_bank_cents


def _rake(parsed: ConfigFile) -> Rake | None:
    if parsed.rake is None:
        return None
    if parsed.banking.mode != DESIGNATED_PLAYER:
        raise KeyRefusal("rake", "only a designated-player table takes a rake (docs/rules.md)")
    return Rake(method=parsed.rake.method, amount_cents=parsed.rake.amount_cents)


def _timeouts(parsed: ConfigFile) -> ResolvedTimeouts:
    if parsed.timeouts.dp_offer_s is not None and parsed.banking.mode != DESIGNATED_PLAYER:
        raise KeyRefusal("timeouts.dp_offer_s", "only a designated-player table offers the bank")
    return ResolvedTimeouts(
        decision_s=parsed.timeouts.decision_s,
        dp_offer_s=parsed.timeouts.dp_offer_s or DEFAULT_DP_OFFER_S,
        deal_s=parsed.timeouts.deal_s,
    )


def _panel(section: PanelSection, base_dir: Path) -> Panel:
    host, _, port_text = section.bind.rpartition(":")
    users = tuple(PanelUser(user.name, user.role, user.password_hash) for user in section.users)
    return Panel(
        host.strip("[]"),
        int(port_text),
        users,
        tuple(section.trusted_proxies),
        None if section.users_file is None else base_dir / section.users_file,
    )


def _segments(section: JournalSection, base_dir: Path) -> SegmentPolicy:
    return SegmentPolicy(
        section.segment_entries,
        section.segment_per_gaming_day,
        section.gaming_day_start_utc,
        None if section.archive_dir is None else base_dir / section.archive_dir,
        section.retention_days,
    )


def _software(section: SoftwareSection, base_dir: Path) -> SoftwareConfig:
    return SoftwareConfig(
        manifest=base_dir / section.manifest,
        public_key=bytes.fromhex(section.public_key),
        allow_development=section.allow_development,
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


def checked_ca_file(base_dir: Path, name: str, *, key: str) -> Path:
    """The floor CA's certificate ``name`` (from the file's directory), read now, bounded, so that a TLS
    set-up never opens a FIFO or a device; KeyRefusal under ``key`` otherwise. The table's uplink and
    the floor's own services read it alike."""
    ca_file = base_dir / name
    try:
        read_bounded(ca_file, limit_bytes=MAX_CERTIFICATE_BYTES)
    except FileRefused as refused:
        suffix = " (the floor CA's certificate)" if refused.reason == NO_SUCH_FILE else ""
        raise KeyRefusal(key, f"{refused}{suffix}") from None
    return ca_file


def settings_as_given(section: Any, record: type[Any], *, set_here: Collection[str]) -> dict[str, Any]:
    """The values of ``section`` (a checked model: ``[uplink]``, ``[floor]``) that its ``record`` (the
    record or dataclass the program reads) holds as the file gives them, by name: every field of
    ``record`` the section has too, but those the caller sets itself (``set_here``: a secret read from
    its file, a path found from the file's directory, a list made a tuple). One rule for both sections,
    so that a setting added to a section and its record reaches the record without a third list of
    names to keep."""
    given = type(section).model_fields
    return {
        name: getattr(section, name)
        for name in records.field_names(record)
        if name in given and name not in set_here
    }


def _uplink(section: UplinkSection, base_dir: Path) -> UplinkConfig:
    """The password read from its file and the CA's file found, both from the file's directory."""
    password = section.password
    if section.password_file is not None:
        path = base_dir / section.password_file
        try:
            password = read_bounded_text(path, limit_bytes=MAX_SECRET_FILE_BYTES).strip()
        except FileRefused as refused:
            raise KeyRefusal("uplink.password_file", str(refused)) from None
    ca_file = checked_ca_file(base_dir, section.ca_file, key="uplink.ca_file")
    given = settings_as_given(section, UplinkConfig, set_here=("servers", "password", "ca_file"))
    return UplinkConfig(servers=tuple(section.servers), password=password or "", ca_file=ca_file, **given)


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


def _devices(sections: dict[str, DeviceSection], base_dir: Path) -> dict[str, Device]:
    devices: dict[str, Device] = {}
    owner_of_key: dict[bytes, str] = {}
    for name, section in sections.items():
        url = section.url
        if relative_device_path(url):
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

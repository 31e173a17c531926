"""What the controller reads: ``TableConfig`` and its parts, every default filled in and every path
taken from the configuration file's directory; ``to_json`` is the effective configuration whose
digest the journal keeps.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from controller.config.sections import (
    DEFAULT_COMMIT_DELAY_MS,
    Banking,
    ChangesSection,
    ClockSection,
    Limits,
    Logging,
    SegmentPolicy,
)
from controller.journal.chain import canonical_json
from controller.locale import DEFAULT_PROPERTY, PropertySettings
from controller.names import DESIGNATED_PLAYER, HOUSE, DeviceKind
from controller.rules.paytables import Paytable
from controller.settings import Rake
from drivers.urls import SimUrl, parse_device_url
from table_names.records import FrozenRecord

if TYPE_CHECKING:
    # Loaded where a [progressive] table is read (_progressive): the controller's model brings the
    # journal's typed entries and msgspec, which checking a table without a Progressive never needs.
    from controller.progressive.model import ProgressiveParameters
    from controller.rules.progressive import ProgressiveSettings


# --- what the controller reads ----------------------------------------------------------------------------
class Device(FrozenRecord):
    _unshown = frozenset({"key"})  # secrets: never in a repr
    name: str
    kind: DeviceKind
    url: str
    key: bytes | None  # None: a simulated device; the daemon makes a key per run

    __slots__ = tuple(__annotations__)  # the fields declared above, in order

    def __init__(self, name: str, kind: DeviceKind, url: str, key: bytes | None) -> None:
        self._set_fields(locals())

    @property
    def simulated(self) -> bool:
        return isinstance(parse_device_url(self.url), SimUrl)

    def to_json(self) -> dict[str, Any]:
        # The key itself never leaves: a fingerprint is enough to tell two configurations apart.
        fingerprint = hashlib.sha256(self.key).hexdigest()[:16] if self.key is not None else None
        return {"name": self.name, "kind": self.kind, "url": self.url, "key_sha256_16": fingerprint}


class PanelUser(FrozenRecord):
    _unshown = frozenset({"password_hash"})  # secrets: never in a repr
    name: str
    role: Literal["viewer", "supervisor", "manager"]
    password_hash: str

    __slots__ = tuple(__annotations__)  # the fields declared above, in order

    def __init__(
        self, name: str, role: Literal["viewer", "supervisor", "manager"], password_hash: str
    ) -> None:
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "role", role)
        object.__setattr__(self, "password_hash", password_hash)


class Panel(FrozenRecord):
    host: str
    port: int
    users: tuple[PanelUser, ...]
    trusted_proxies: tuple[str, ...]  # peers whose X-Forwarded-For the panel believes
    users_file: Path | None  # where the panel's users live (controller.panel.auth.users_file_for)

    __slots__ = tuple(__annotations__)  # the fields declared above, in order

    def __init__(
        self,
        host: str,
        port: int,
        users: tuple[PanelUser, ...] = (),
        trusted_proxies: tuple[str, ...] = (),
        users_file: Path | None = None,
    ) -> None:
        self._set_fields(locals())


class UplinkConfig(FrozenRecord):
    """``[uplink]`` as the uplink reads it (controller/uplink/uplink.py): the password read from its file,
    the CA's path taken from the configuration file's directory."""

    _unshown = frozenset({"password"})  # secrets: never in a repr
    servers: tuple[str, ...]
    site: str
    user: str
    password: str
    ca_file: Path
    connect_timeout_s: float
    ack_timeout_s: float
    poll_interval_s: float  # how often the journal is checked for new entries when not woken
    backoff_initial_s: float
    backoff_max_s: float
    hwm_persist_interval_s: float  # at most this often the acked mark is written to the journal
    stream: str  # the stream its server keeps: the hub's, or at a site its leaf's

    __slots__ = tuple(__annotations__)  # the fields declared above, in order

    def __init__(  # noqa: PLR0913, PLR0917 - the uplink's every setting, as [uplink] gives them
        self,
        servers: tuple[str, ...],
        site: str,
        user: str,
        password: str,
        ca_file: Path,
        connect_timeout_s: float = 5.0,
        ack_timeout_s: float = 5.0,
        poll_interval_s: float = 0.1,
        backoff_initial_s: float = 0.2,
        backoff_max_s: float = 5.0,
        hwm_persist_interval_s: float = 0.25,
        stream: str = "FLUSHTABLE",
    ) -> None:
        self._set_fields(locals())

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


class SoftwareConfig(FrozenRecord):
    """``[software]`` as the start reads it (controller/software/verify.py verify_release)."""

    manifest: Path
    public_key: bytes
    allow_development: bool

    __slots__ = tuple(__annotations__)  # the fields declared above, in order

    def __init__(self, manifest: Path, public_key: bytes, allow_development: bool = False) -> None:
        object.__setattr__(self, "manifest", manifest)
        object.__setattr__(self, "public_key", public_key)
        object.__setattr__(self, "allow_development", allow_development)

    def to_json(self) -> dict[str, Any]:
        return {
            "manifest": str(self.manifest),
            "public_key": self.public_key.hex(),
            "allow_development": self.allow_development,
        }


class TableConfig(FrozenRecord):
    _unshown = frozenset({"journal_anchor_key"})  # secrets: never in a repr
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
    journal_commit_delay_ms: int
    # Designated player: the least bank accepted ([designated_player] min_bank_cents, or 4x min ante).
    min_bank_cents: int | None
    # [uplink]: None, no floor. Not in to_json: where the journal is streamed is not how the table plays,
    # so it leaves config_digest (and the settings changes made against it) as they were.
    uplink: UplinkConfig | None
    # [journal] anchor_key_file's key (docs/journal.md "The anchor key"); not in to_json (a secret).
    journal_anchor_key: bytes | None
    # [journal] segment_*, gaming_day_start_utc, archive_dir, retention_days (docs/journal.md "Segments
    # and seals"). Not in to_json: how the journal is cut into files is not how the table plays.
    journal_segments: SegmentPolicy
    # [progressive]: the Progressive wager's parameters (docs/rules.md); None: not offered. ``progressive``
    # is the rules' part (settle and math read it); ``progressive_parameters`` every parameter of the
    # progressive controller (controller/progressive/model.py), the rules' part and its own.
    progressive: ProgressiveSettings | None
    # [clock] and [changes]: how the table is controlled, not how it plays: not in to_json, so the digest
    # of every earlier file is unchanged (a change of them still changes file_sha256).
    clock: ClockSection
    changes: ChangesSection
    # The file's own digest (sha256 of its text) and where it is: None for the embedded default.
    file_sha256: str | None
    config_path: Path | None
    progressive_parameters: ProgressiveParameters | None
    # [software]: the signed release verified at every start; None: not verified (the embedded default).
    # Not in to_json: which release runs is journaled on its own (software_verified), not how it plays.
    software: SoftwareConfig | None
    # [progressive] link: the linked progressive's name on the floor (docs/floor.md "Linked progressive"),
    # None: stand-alone. The link runs over [uplink]'s servers and credentials. Not in to_json: which
    # controller keeps the meter is not how the table plays (as [uplink]).
    progressive_link: str | None
    progressive_link_timeout_s: float
    # [property]: the property's time zone, gaming day, shifts and currency (controller/locale.py). Not in
    # to_json: how times and amounts are written for people is not how the table plays.
    property_settings: PropertySettings

    __slots__ = tuple(__annotations__)  # the fields declared above, in order

    def __init__(  # noqa: PLR0913, PLR0917 - the configuration's every part, as the checks resolve them
        self,
        source: str,
        table_id: str,
        game: str,
        seats: int,
        banking: Banking,
        limits: Limits,
        paytables: dict[str, Paytable],
        rake: Rake | None,
        timeouts: ResolvedTimeouts,
        devices: dict[str, Device],
        journal_path: Path,
        panel: Panel,
        logging: Logging,
        journal_commit_delay_ms: int = DEFAULT_COMMIT_DELAY_MS,
        min_bank_cents: int | None = None,
        uplink: UplinkConfig | None = None,
        journal_anchor_key: bytes | None = None,
        journal_segments: SegmentPolicy | None = None,
        progressive: ProgressiveSettings | None = None,
        clock: ClockSection | None = None,
        changes: ChangesSection | None = None,
        file_sha256: str | None = None,
        config_path: Path | None = None,
        progressive_parameters: ProgressiveParameters | None = None,
        software: SoftwareConfig | None = None,
        progressive_link: str | None = None,
        progressive_link_timeout_s: float = 3.0,
        property_settings: PropertySettings = DEFAULT_PROPERTY,
    ) -> None:
        journal_segments = SegmentPolicy() if journal_segments is None else journal_segments
        clock = ClockSection() if clock is None else clock
        changes = ChangesSection() if changes is None else changes
        self._set_fields(locals())

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


class ResolvedTimeouts(FrozenRecord):
    """The ``[timeouts]`` with every default filled in."""

    decision_s: float
    dp_offer_s: float
    deal_s: float

    __slots__ = tuple(__annotations__)  # the fields declared above, in order

    def __init__(self, decision_s: float, dp_offer_s: float, deal_s: float) -> None:
        object.__setattr__(self, "decision_s", decision_s)
        object.__setattr__(self, "dp_offer_s", dp_offer_s)
        object.__setattr__(self, "deal_s", deal_s)


DEFAULT_DP_OFFER_S = 15.0

"""The base of every entry (``Entry``) and of its private part (``Part``), the version every kind is
written at, and the structured reasons entries carry (docs/journal.md "Entries")."""

from __future__ import annotations

from typing import ClassVar, Literal

import msgspec

# The version every kind is written at today: defined below the classes (kinds.py), for the readers
# that read today's rows without them.
from controller.journal.kinds import ENTRY_SCHEMA_VERSION as ENTRY_SCHEMA_VERSION  # noqa: PLC0414

SALT_BYTES = 16
# Each entry class's kind (its tag), filled as read (``Entry.kind``).
_KIND_OF_CLASS: dict[type, str] = {}


class Part(msgspec.Struct, frozen=True, forbid_unknown_fields=True, omit_defaults=True):
    """A private part: the fields of an entry a viewer sees only after the round's reveal."""

    def positions(self) -> frozenset[int]:
        """The dealt positions this part is about: if any of them is a dead hand, the part is never
        shown (docs/rules.md: a dead hand's cards are never shown)."""
        return frozenset()


class Entry(msgspec.Struct, frozen=True, kw_only=True, tag_field="entry_kind", forbid_unknown_fields=True):
    """The base of every kind. Subclasses declare their public fields, and ``private`` where they have
    a private part (always optional: a public-only reader holds the entry without it)."""

    VERSION: ClassVar[int] = ENTRY_SCHEMA_VERSION
    PRIVATE: ClassVar[type[Part] | None] = None

    @property
    def kind(self) -> str:
        # A class's tag, remembered a class: ``__struct_config__`` builds a new config object at each
        # read, and the fold reads every entry's kind (4% of the floor's take of a message: docs/floor.md
        # "The eighth stop").
        cls = type(self)
        kind = _KIND_OF_CLASS.get(cls)
        if kind is None:
            kind = _KIND_OF_CLASS[cls] = str(cls.__struct_config__.tag)
        return kind

    def private_part(self) -> Part | None:
        value = getattr(self, "private", None)
        return value if isinstance(value, Part) else None


ReasonCode = Literal[
    # the deal (docs/rules.md "Dead hands and walk-aways")
    "card_repeated",  # a card reported twice in one deal
    "card_misread",  # one index reported as two different cards
    "card_count",  # a hand dealt the wrong number of cards
    "extra_card",  # a card beyond the requested count
    "card_out_of_order",  # an index skipped
    "card_outside_round",  # a card or hand for a position not in the round, or outside a deal
    "red_light",  # the shoe's fault lamp during the deal
    "shoe_fault",  # any other fault the shoe reports (its own words are private)
    "shoe_refused",  # the shoe refused a command
    "deck_verification",  # the shuffled deck did not verify
    "not_covered",  # a designated player's bank cannot cover the seat
    # wagers and decisions
    "over_limit",  # a decision wager over its limit
    "under_limit",  # a decision wager under its limit
    "past_posting",  # chips changed on a locked spot
    "sensor_report_refused",  # a bet sensor report that cannot be a wager
    # devices and the controller
    "device_lost",
    "security_event",
    "engine_error",
    "unknown_event",
    "clock_offset",  # the clock watch: the table's clock off the floor's time source past its bound
    "config_changed",  # the configuration changed on disk without an approved change
    "integrity_check",  # the integrity watch: the recalled rounds' cards or returns fail the statistics
    "operator",  # raised or decided by a person: the text is theirs
]


class Reason(msgspec.Struct, frozen=True, forbid_unknown_fields=True, omit_defaults=True):
    """Why: a code and a message for people built by the engine from public values only (seats,
    amounts, devices, counts) — never from a card."""

    code: ReasonCode
    message: str
    seat: int | None = None


class ReasonDetail(Part, frozen=True):
    """The private side of a reason: what the shoe said about which card, where."""

    message: str | None = None  # the full text, with its cards: for the audit, never for a viewer
    card: int | None = None  # the card number (0..51), as the shoe reported it
    position: int | None = None
    index: int | None = None
    first_position: int | None = None
    first_index: int | None = None
    device_detail: str | None = None  # the device's own words: they may name a card

    def positions(self) -> frozenset[int]:
        return frozenset(p for p in (self.position, self.first_position) if p is not None)


class EntryError(ValueError):
    """An entry that does not fit its kind's type: a bug in the writer, or a foreign journal."""

"""The registry of kinds, written once (``EntryType``: every class of every domain module), and the
codec every reader and writer goes through: build an entry from fields, split it into its public and
private parts, seal and open the private part, decode stored texts (today's kinds and renamed ones)."""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Mapping
from typing import Any, get_args

import msgspec

from controller.journal.chain import canonical_json, sha256_hex
from controller.journal.entries import controls, devices, faults, operator, progressive, table
from controller.journal.entries import round as rounds
from controller.journal.entries.base import (
    ENTRY_SCHEMA_VERSION,
    SALT_BYTES,
    Entry,
    EntryError,
    Part,
)

# The two parts as one payload: written with the views (below the classes: a reader of today's rows
# merges them without loading msgspec), read from here by every caller as before.
from controller.journal.entry_view import merged_payload as merged_payload  # noqa: PLC0414
from controller.journal.entry_view import settlement_with_hands as settlement_with_hands  # noqa: PLC0414

EntryType = (
    table.TableOpened
    | table.TableClosed
    | table.SoftwareVerified
    | table.SoftwareChecked
    | table.StateChanged
    | operator.ActionRefused
    | operator.SeatKilled
    | operator.VoidOrdered
    | operator.DifferenceAccepted
    | operator.DeviceReset
    | operator.LimitsSet
    | operator.PaytableSet
    | progressive.ProgressiveRefusedAtLock
    | progressive.LinkedClaimAnswered
    | progressive.LinkedConfirmationSent
    | operator.PanelRequest
    | operator.OperatorNote
    | table.ButtonMoved
    | table.DpWaived
    | table.DealerKey
    | operator.Login
    | operator.LoginFailed
    | devices.NoiseSuppressed
    | devices.DeviceReady
    | devices.DeviceLost
    | devices.DeviceStatus
    | devices.SecurityEvent
    | rounds.RoundStarted
    | rounds.BetChanged
    | rounds.BetsLocked
    | rounds.PastPosting
    | rounds.DeckVerified
    | rounds.CardDealt
    | rounds.HandComplete
    | rounds.Decision
    | rounds.DecisionRefused
    | rounds.KillSeatRequest
    | rounds.DeadHand
    | rounds.RoundSettled
    | rounds.RoundDead
    | rounds.RoundVoided
    | faults.FaultRaised
    | faults.FaultAcknowledged
    | faults.FaultCleared
    | controls.ClockOffset
    | controls.ClockStepped
    | controls.ConfigChecked
    | controls.ChangeProposed
    | controls.ChangeApproved
    | controls.ChangeLapsed
    | controls.ChangeRefused
    | progressive.ProgressiveParametersChanged
    | progressive.ProgressiveContribution
    | progressive.ProgressiveOverflow
    | progressive.ProgressiveAwardClaimed
    | progressive.ProgressiveAwardPaid
    | progressive.ProgressiveReset
    | progressive.ProgressiveReserve
)


# The registry, written once: the union above lists every kind; the classes are read from it (a class
# not in the union is no kind, and is refused by every decoder).
ENTRY_CLASSES: tuple[type[Entry], ...] = get_args(EntryType)


CLASS_BY_KIND: dict[str, type[Entry]] = {str(cls.__struct_config__.tag): cls for cls in ENTRY_CLASSES}


KINDS: frozenset[str] = frozenset(CLASS_BY_KIND)


# One decoder per kind for the public part alone, and per private part type: each made the first time
# its kind is read, then kept (the replay's hot path decodes each stored text straight into its class).
# Not all at import: a decoder resolves its class's annotations, ~60 kinds' worth of them, and a reader
# such as `flushtable recall` meets a dozen kinds (issue 28: recall starts in a few times a bare
# interpreter's time; docs/operations.md).
@functools.cache
def _public_decoder(kind: str) -> msgspec.json.Decoder[Any] | None:
    cls = CLASS_BY_KIND.get(kind)
    return None if cls is None else msgspec.json.Decoder(cls)


@functools.cache
def _private_decoder(kind: str) -> msgspec.json.Decoder[Any] | None:
    """A stored private part is {"part": ..., "salt": ...}: decoded in one pass into its part's class."""
    cls = CLASS_BY_KIND.get(kind)
    if cls is None or cls.PRIVATE is None:
        return None
    return _sealed_decoder(kind, cls.PRIVATE)


def _sealed_decoder(kind: str, private: type[Part]) -> msgspec.json.Decoder[Any]:
    """The decoder of a kind's stored private text, ``{"part": ..., "salt": ...}``, into its part."""
    sealed = msgspec.defstruct(
        f"Sealed_{kind}", [("part", private), ("salt", str)], forbid_unknown_fields=True
    )
    return msgspec.json.Decoder(sealed)


_BUILTINS_ENCODER = msgspec.json.Encoder()


# Kinds of earlier releases that no writer uses today: read by their own class (not in ``EntryType``, so
# no writer can write them), then mapped to today's kind by controller/journal/upcast.py. The chain
# covers the row as written (its kind included): mapping it never changes what verifies.
RENAMED_KINDS: dict[str, type[Entry]] = {"operator_action": operator.OperatorAction}


CLASS_BY_STORED_KIND: dict[str, type[Entry]] = {**CLASS_BY_KIND, **RENAMED_KINDS}
"""Every kind a stored row may carry (a journal, the uplink's messages, the floor's rows): today's and the
renamed ones, each with the class its row is decoded into first."""


_RENAMED_PUBLIC_DECODERS: dict[str, msgspec.json.Decoder[Any]] = {
    kind: msgspec.json.Decoder(cls) for kind, cls in RENAMED_KINDS.items()
}


_RENAMED_PRIVATE_DECODERS: dict[str, msgspec.json.Decoder[Any]] = {
    kind: _sealed_decoder(kind, cls.PRIVATE) for kind, cls in RENAMED_KINDS.items() if cls.PRIVATE is not None
}


def _renamed(legacy: Entry) -> Entry:
    """An entry of a renamed kind as today's entry (upcast.py; it imports this module)."""
    from controller.journal.upcast import renamed_entry  # noqa: PLC0415 - upcast.py imports this module

    return renamed_entry(legacy)


# The names as stored, read off each class's own tuple of them (msgspec.structs.fields would resolve
# every annotation of ~60 classes at import, a third of this module's cost on every reader's start).
def _public_fields(cls: type[Entry]) -> frozenset[str]:
    return frozenset(name for name in cls.__struct_encode_fields__ if name != "private")


def _private_fields(cls: type[Entry]) -> frozenset[str]:
    if cls.PRIVATE is None:
        return frozenset()
    return frozenset(cls.PRIVATE.__struct_encode_fields__)


PUBLIC_FIELDS: dict[str, frozenset[str]] = {kind: _public_fields(cls) for kind, cls in CLASS_BY_KIND.items()}


PRIVATE_FIELDS: dict[str, frozenset[str]] = {
    kind: _private_fields(cls) for kind, cls in CLASS_BY_KIND.items()
}


def build(kind: str, fields: Mapping[str, Any]) -> Entry:
    """The typed entry of ``kind`` from its fields, public and private mixed: each field goes where
    its kind's type says. A field that belongs to neither, a missing one or a wrong type is refused."""
    legacy = RENAMED_KINDS.get(kind)
    if legacy is not None:  # an earlier release's kind (a version-1 journal's entries are built)
        legacy_private = _private_fields(legacy)
        nested = {name: value for name, value in fields.items() if name not in legacy_private}
        secret = {name: value for name, value in fields.items() if name in legacy_private}
        try:
            return _renamed(msgspec.convert({**nested, **({"private": secret} if secret else {})}, legacy))
        except msgspec.ValidationError as error:
            raise EntryError(f"journal: {kind}: {error}") from None
    cls = CLASS_BY_KIND.get(kind)
    if cls is None:
        raise EntryError(f"journal: unknown entry kind {kind!r}")
    if kind == "round_settled" and "round" in fields:
        fields = split_settled(fields)
    private_names = PRIVATE_FIELDS[kind]
    if private_names:
        public = {}
        private = {}
        for name, value in fields.items():  # one pass: the engine builds ~100 entries a round
            if name in private_names:
                private[name] = value
            else:
                public[name] = value
        if private:
            public["private"] = private
    else:  # most kinds have no private part: no sorting to do (the engine builds ~100 entries a round)
        public = fields if isinstance(fields, dict) else dict(fields)
    try:
        return msgspec.convert(public, cls)
    except msgspec.ValidationError as error:
        raise EntryError(f"journal: {kind}: {error}") from None


def split_settled(fields: Mapping[str, Any]) -> dict[str, Any]:
    """A settled round given as the settle input and output (``round``, ``settlement`` with its hands)
    split into the public settlement (no hands: they name cards) and the private round and hands."""
    settlement = dict(fields["settlement"])
    hands: dict[str, Any] = {"dealer": None, "seats": {}}
    dealer = settlement.get("dealer")
    if isinstance(dealer, Mapping):
        hands["dealer"] = dealer.get("hand")
        settlement["dealer"] = {key: value for key, value in dealer.items() if key != "hand"}
    seats = []
    for seat in settlement.get("seats", []):
        hands["seats"][str(seat["seat"])] = seat.get("hand")
        seats.append({key: value for key, value in seat.items() if key != "hand"})
    settlement["seats"] = seats
    extra = {key: value for key, value in fields.items() if key not in ("round", "settlement")}
    return {**extra, "settlement": settlement, "private": {"round": fields["round"], "hands": hands}}


def round_settled(
    round_input: Mapping[str, Any], settlement: Mapping[str, Any], bank_by_seat: dict[str, Any] | None
) -> rounds.RoundSettled:
    """The reveal's entry from the settle input and output (the output with its hands): the hands go to
    the private part with the round's cards (``split_settled``), the rest is public."""
    split = split_settled({"round": round_input, "settlement": settlement})
    return rounds.RoundSettled(
        settlement=split["settlement"],
        bank_by_seat=bank_by_seat,
        private=rounds.RoundSettledPrivate(round=split["private"]["round"], hands=split["private"]["hands"]),
    )


def public_dict(entry: Entry) -> dict[str, Any]:
    """The public part as JSON values (what the payload column holds)."""
    value: dict[str, Any] = msgspec.to_builtins(entry)
    value.pop("entry_kind", None)
    value.pop("private", None)
    return value


def parts_dicts(entry: Entry) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """``public_dict`` and ``private_dict`` of the entry from one conversion: ``public_dict`` converts
    the private part too before dropping it, so the writer converting both (every entry it appends)
    converted each private part twice."""
    value: dict[str, Any] = msgspec.to_builtins(entry)
    value.pop("entry_kind", None)
    private = value.pop("private", None)
    # As ``private_dict``: a part only when the entry's ``private`` holds one.
    return value, (private if entry.private_part() is not None else None)


def private_dict(entry: Entry) -> dict[str, Any] | None:
    part = entry.private_part()
    if part is None:
        return None
    value: dict[str, Any] = msgspec.to_builtins(part)
    return value


def commitment(private_text: str) -> str:
    """The digest the chain holds for a private part: sha256 of its stored text, which is the
    canonical JSON of ``{"part": ..., "salt": ...}`` (the salt is in the hashed text)."""
    return sha256_hex(private_text)  # OpenSSL loaded at the first one only (recall never checks)


def seal_private(part: Mapping[str, Any], salt: bytes | None = None) -> str:
    """The stored text of a private part: canonical JSON with a fresh random salt."""
    salt_bytes = salt if salt is not None else os.urandom(SALT_BYTES)
    # canonical_json({"part": part, "salt": hex}) spliced: "part" sorts before "salt", and a hex
    # string is its own JSON text in quotes (tests/journal/test_entries.py holds the two equal).
    return '{"part":' + canonical_json(part) + ',"salt":"' + salt_bytes.hex() + '"}'


def open_private(private_text: str) -> dict[str, Any]:
    """The part's fields from its stored text."""
    value = msgspec.json.decode(private_text)
    if not isinstance(value, dict) or not isinstance(value.get("part"), dict):
        raise EntryError("journal: a private part must be {'part': {...}, 'salt': ...}")
    part: dict[str, Any] = value["part"]
    return part


def decode_public(kind: str, public_text: str | bytes) -> Entry:
    """The typed entry with its public part only (private None)."""
    if kind in RENAMED_KINDS:
        return _renamed(_decode_legacy(kind, public_text, None))
    decoder = _public_decoder(kind)
    if decoder is None:
        raise EntryError(f"journal: unknown entry kind {kind!r}")
    try:
        entry: Entry = decoder.decode(public_text)
    except (msgspec.ValidationError, msgspec.DecodeError) as error:
        raise EntryError(f"journal: {kind}: {error}") from None
    return entry


def _decode_legacy(kind: str, public_text: str | bytes, private_text: str | None) -> Entry:
    """An entry of a renamed kind as its own (earlier) class, both parts when ``private_text`` is given."""
    try:
        entry: Entry = _RENAMED_PUBLIC_DECODERS[kind].decode(public_text)
        if private_text is not None:
            part = _RENAMED_PRIVATE_DECODERS[kind].decode(private_text).part
            entry = msgspec.structs.replace(entry, private=part)
    except (msgspec.ValidationError, msgspec.DecodeError) as error:
        raise EntryError(f"journal: {kind}: {error}") from None
    return entry


def decode(kind: str, public_text: str | bytes, private_text: str | None) -> Entry:
    """The typed entry, with its private part when ``private_text`` is given."""
    if kind in RENAMED_KINDS:
        return _renamed(_decode_legacy(kind, public_text, private_text))
    entry = decode_public(kind, public_text)
    if private_text is None:
        return entry
    decoder = _private_decoder(kind)
    if decoder is None:
        raise EntryError(f"journal: {kind} has no private part")
    try:
        part = decoder.decode(private_text).part
    except (msgspec.ValidationError, msgspec.DecodeError) as error:
        raise EntryError(f"journal: {kind} private part: {error}") from None
    return msgspec.structs.replace(entry, private=part)


def from_parts(kind: str, public: Mapping[str, Any], private: Mapping[str, Any] | None) -> Entry:
    """The typed entry from its two parts as JSON values (a stored entry already read), checked as
    ``decode`` checks the texts."""
    legacy = RENAMED_KINDS.get(kind)
    cls = CLASS_BY_KIND.get(kind) if legacy is None else legacy
    if cls is None:
        raise EntryError(f"journal: unknown entry kind {kind!r}")
    fields = dict(public) if private is None else {**public, "private": private}
    try:
        entry = msgspec.convert(fields, cls)
    except msgspec.ValidationError as error:
        raise EntryError(f"journal: {kind}: {error}") from None
    return entry if legacy is None else _renamed(entry)


def to_json_text(entry: Entry) -> bytes:
    """The whole entry (kind, public and private) as JSON: for tests' round trips and the schema."""
    return _BUILTINS_ENCODER.encode(entry)


def json_schema() -> dict[str, Any]:
    """The JSON Schema of every entry kind, generated from these classes (docs/journal-entries.schema.json
    is this, kept current by tests/journal/test_entries.py; `flushtable journal schema` prints it).

    One object per kind, tagged by ``entry_kind``: its public fields, and ``private`` (the private
    part's own schema, or absent). In the journal file the public fields are the row's ``payload``
    and the private part its ``private`` column, under the commitment ``private_digest``."""
    union: dict[str, Any] = msgspec.json.schema(EntryType)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://flushtable.example/schemas/journal-entries.json",
        "title": "flushtable journal entries",
        "description": (
            f"Entry schema version {ENTRY_SCHEMA_VERSION}. Each kind's public fields, and its private "
            "part (everything that reveals a card) under 'private'. Generated from "
            "controller/journal/entries/: do not edit by hand."
        ),
        "x-entry-schema-version": ENTRY_SCHEMA_VERSION,
        "x-private-fields": {kind: sorted(PRIVATE_FIELDS[kind]) for kind in sorted(KINDS)},
        **union,
    }


def json_schema_text() -> str:
    """The schema as the docs file holds it: sorted keys, two-space indent, a final newline."""
    return json.dumps(json_schema(), indent=2, sort_keys=True, ensure_ascii=False) + "\n"

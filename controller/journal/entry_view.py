"""A stored entry read by attribute without its typed class: the view a reader gets of the entry's two
parts (JSON objects, as the journal holds them), for the kinds the reducer folds and the privacy gate
judges.

Why: the typed entries (controller/journal/entries/) are msgspec classes, and loading msgspec with ~60
classes costs a command that only reads a few rounds (`flushtable recall`, `journal show`) about as much
CPU as a bare interpreter's whole start (issue 28; docs/operations.md "The sixth stop"). The reducer
(controller/journal/state.py) and the one gate (privacy.py, through ``TableState.private_visible``) read
an entry's fields by attribute (``entry.seat``, ``entry.private.position``, ``entry.private_part()``),
and a view answers those the same, so they run unchanged on either.

A view is made only when it reads exactly what the typed entry would (``view_of``): the kind is in the
tables below, every stored field is one of the kind's, every required field is there, and every value
has the field's type (checked all the way down, as msgspec checks: an integer is never a bool). Anything
else gets no view, and the reader decodes the typed entry as before (which refuses what does not fit, in
the same words as ever). An absent optional field reads as its default. Its containers are made anew
where the typed entry's are (a field typed as a dict or a list), and shared where msgspec shares them
(a value of type Any is the stored one): a view aliases no more of the stored entry than its typed
entry does.

The tables are the entries' classes written out: tests/journal/test_entry_view.py derives them from the
classes (tests/journal/entry_view_oracle.py) and fails if they differ, and holds every view to its typed
entry field by field. Kinds read only through their typed entry: the Progressive's and the two-person
changes' (their folds take the classes), and any kind of an earlier release (upcast first).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# A field: (attribute, name in JSON, type, required, default). A type is "int", "str", "bool", "none",
# "any", ("lit", values...), ("list", item), ("dict", key, value), ("union", types...), REASON_TYPE (the
# entries' Reason) or ("part", class name) (a private part: the field ``private``).
Field = tuple[str, str, Any, bool, Any]
Fields = tuple[Field, ...]
REASON_TYPE = ("reason",)
_NO_DEFAULT = object()

# Written out from the classes (``python -m tests.journal.entry_view_oracle``); see the module's doc.
KIND_FIELDS: dict[str, Fields] = {
    "action_refused": (
        ("action", "action", "str", True, None),
        ("by", "by", "str", True, None),
        ("reason", "reason", "str", True, None),
        ("private", "private", ("union", ("part", "ActionRefusedPrivate"), "none"), False, None),
    ),
    "bet_changed": (
        ("seat", "seat", "int", True, None),
        ("wager", "wager", "str", True, None),
        ("amount_cents", "amount_cents", "int", True, None),
        ("chip_count", "chip_count", "int", True, None),
        ("locked", "locked", "bool", True, None),
    ),
    "bets_locked": (("wagers", "wagers", ("dict", "str", ("dict", "str", "int")), True, None),),
    "button_moved": (
        ("from_seat", "from_seat", ("union", "int", "none"), True, None),
        ("to_seat", "to_seat", "int", True, None),
        ("reason", "reason", "str", True, None),
        ("by", "by", "str", True, None),
        ("funds_cents", "funds_cents", ("union", "int", "none"), False, None),
    ),
    "card_dealt": (("private", "private", ("union", ("part", "CardDealtPrivate"), "none"), False, None),),
    "clock_offset": (
        ("source", "source", "str", True, None),
        ("offset_us", "offset_us", ("union", "int", "none"), True, None),
        ("delay_us", "delay_us", ("union", "int", "none"), True, None),
        ("bound_us", "bound_us", "int", True, None),
        ("within_bound", "within_bound", "bool", True, None),
        ("table_time_utc", "table_time_utc", "str", True, None),
        ("error", "error", ("union", "str", "none"), False, None),
    ),
    "clock_stepped": (
        ("wall_clock_utc", "wall_clock_utc", "str", True, None),
        ("journal_time_utc", "journal_time_utc", "str", True, None),
        ("step_back_us", "step_back_us", "int", True, None),
    ),
    "config_checked": (
        ("source", "source", "str", True, None),
        ("file_sha256", "file_sha256", ("union", "str", "none"), True, None),
        ("config_digest", "config_digest", "str", True, None),
        ("previous_file_sha256", "previous_file_sha256", ("union", "str", "none"), True, None),
        ("previous_config_digest", "previous_config_digest", ("union", "str", "none"), True, None),
        ("settings", "settings", ("dict", "str", "any"), True, None),
        ("changed", "changed", ("list", "str"), True, None),
        ("approved_change", "approved_change", ("union", "str", "none"), False, None),
        ("unapproved", "unapproved", "bool", False, False),
    ),
    "dead_hand": (
        ("seat", "seat", ("union", "int", "none"), True, None),
        ("reason", "reason", ("reason",), True, None),
        ("private", "private", ("union", ("part", "ReasonDetail"), "none"), False, None),
    ),
    "dealer_key": (("key", "key", "str", True, None), ("seat", "seat", ("union", "int", "none"), True, None)),
    "decision": (
        ("seat", "seat", "int", True, None),
        ("action", "action", "str", True, None),
        ("amount_cents", "amount_cents", "int", True, None),
        ("street", "street", ("union", "str", "none"), True, None),
        ("cause", "cause", "str", True, None),
    ),
    "decision_refused": (
        ("seat", "seat", "int", True, None),
        ("action", "action", "str", True, None),
        ("amount_cents", "amount_cents", "int", True, None),
        ("reason", "reason", ("reason",), True, None),
        ("private", "private", ("union", ("part", "DecisionRefusedPrivate"), "none"), False, None),
    ),
    "deck_verified": (
        ("card_count", "card_count", "int", True, None),
        ("missing_count", "missing_count", "int", True, None),
        ("extra_count", "extra_count", "int", True, None),
        ("private", "private", ("union", ("part", "DeckVerifiedPrivate"), "none"), False, None),
    ),
    "device_lost": (("device", "device", "str", True, None), ("reason", "reason", "str", True, None)),
    "device_ready": (
        ("device", "device", "str", True, None),
        ("kind_of_device", "kind", "str", True, None),
        ("model", "model", "str", True, None),
        ("serial_number", "serial_number", "str", True, None),
        ("firmware_version", "firmware_version", "str", True, None),
    ),
    "device_reset": (
        ("device", "device", "str", True, None),
        ("by", "by", "str", True, None),
        ("reason", "reason", "str", True, None),
    ),
    "device_status": (
        ("device", "device", "str", True, None),
        ("state", "state", "str", True, None),
        ("fault_code", "fault_code", "int", True, None),
        ("lamp", "lamp", "str", True, None),
    ),
    "difference_accepted": (
        ("fault_id", "fault_id", "str", True, None),
        ("by", "by", "str", True, None),
        ("reason", "reason", "str", True, None),
        ("spot", "spot", "str", True, None),
    ),
    "dp_waived": (("seat", "seat", "int", True, None),),
    "fault_acknowledged": (("fault_id", "fault_id", "str", True, None), ("by", "by", "str", True, None)),
    "fault_cleared": (
        ("fault_id", "fault_id", "str", True, None),
        ("by", "by", "str", True, None),
        ("reason", "reason", "str", True, None),
    ),
    "fault_raised": (
        ("fault_id", "fault_id", "str", True, None),
        ("kind_of_fault", "kind", "str", True, None),
        ("severity", "severity", "str", True, None),
        ("device", "device", ("union", "str", "none"), True, None),
        ("reason", "reason", ("reason",), True, None),
        ("by", "by", ("union", "str", "none"), False, None),
        ("private", "private", ("union", ("part", "ReasonDetail"), "none"), False, None),
    ),
    "hand_complete": (
        ("position", "position", "int", True, None),
        ("card_count", "card_count", "int", True, None),
    ),
    "kill_seat_request": (
        ("seat", "seat", "int", True, None),
        ("status", "status", ("lit", "confirmed", "lapsed", "rejected", "requested"), True, None),
        ("by", "by", "str", True, None),
        ("requested_by", "requested_by", ("union", "str", "none"), False, None),
        ("reason", "reason", ("union", "str", "none"), False, None),
        ("request_number", "request_number", ("union", "int", "none"), False, None),
    ),
    "limits_set": (
        ("by", "by", "str", True, None),
        ("after", "after", ("dict", "str", "any"), True, None),
        ("before", "before", ("union", ("dict", "str", "any"), "none"), False, None),
        ("config_digest", "config_digest", ("union", "str", "none"), False, None),
    ),
    "linked_claim_answered": (("by", "by", "str", True, None), ("answer", "answer", "str", True, None)),
    "linked_confirmation_sent": (
        ("by", "by", "str", True, None),
        ("message", "message", "str", True, None),
        ("award_id", "award_id", ("union", "str", "none"), False, None),
    ),
    "lock_refused_progressive": (("by", "by", "str", True, None), ("reason", "reason", "str", True, None)),
    "login": (
        ("user", "user", "str", True, None),
        ("role", "role", "str", True, None),
        ("remote", "remote", "str", True, None),
        ("forwarded_for", "forwarded_for", ("union", "str", "none"), False, None),
    ),
    "login_failed": (
        ("user", "user", "str", True, None),
        ("remote", "remote", "str", True, None),
        ("reason", "reason", "str", True, None),
        ("forwarded_for", "forwarded_for", ("union", "str", "none"), False, None),
    ),
    "noise_suppressed": (
        ("category", "category", "str", True, None),
        ("source", "source", "str", True, None),
        ("count", "count", "int", True, None),
        ("first_time_utc", "first_time_utc", "str", True, None),
        ("last_time_utc", "last_time_utc", "str", True, None),
        ("distinct_sources", "distinct_sources", ("union", "int", "none"), False, None),
        ("distinct_sources_capped", "distinct_sources_capped", "bool", False, False),
    ),
    "operator_note": (
        ("action", "action", "str", True, None),
        ("by", "by", "str", True, None),
        ("detail", "detail", "str", True, None),
    ),
    "panel_request": (
        ("action", "action", "str", True, None),
        ("by", "by", "str", True, None),
        ("request", "request", ("dict", "str", "any"), True, None),
        ("outcome", "outcome", "str", True, None),
    ),
    "past_posting": (
        ("seat", "seat", "int", True, None),
        ("wager", "wager", "str", True, None),
        ("locked_cents", "locked_cents", "int", True, None),
        ("seen_cents", "seen_cents", "int", True, None),
    ),
    "paytable_set": (
        ("wager", "wager", "str", True, None),
        ("by", "by", "str", True, None),
        ("after", "after", ("union", ("dict", "str", "any"), "str"), True, None),
        ("before", "before", ("union", ("dict", "str", "any"), "str", "none"), False, None),
        ("config_digest", "config_digest", ("union", "str", "none"), False, None),
    ),
    "round_dead": (
        ("round", "round", ("dict", "str", "any"), True, None),
        ("settlement", "settlement", ("dict", "str", "any"), True, None),
        ("reason", "reason", ("reason",), True, None),
        ("private", "private", ("union", ("part", "ReasonDetail"), "none"), False, None),
    ),
    "round_settled": (
        ("settlement", "settlement", ("dict", "str", "any"), True, None),
        ("bank_by_seat", "bank_by_seat", ("union", ("dict", "str", "any"), "none"), False, None),
        ("private", "private", ("union", ("part", "RoundSettledPrivate"), "none"), False, None),
    ),
    "round_started": (
        ("round_id", "round_id", "str", True, None),
        ("game", "game", "str", True, None),
        ("banking", "banking", ("dict", "str", "any"), True, None),
        ("seats", "seats", ("list", "int"), True, None),
        ("button_seat", "button_seat", ("union", "int", "none"), False, None),
    ),
    "round_voided": (
        ("round", "round", ("dict", "str", "any"), True, None),
        ("settlement", "settlement", ("dict", "str", "any"), True, None),
        ("reason", "reason", "str", True, None),
        ("by", "by", "str", True, None),
    ),
    "seat_killed": (
        ("seat", "seat", "int", True, None),
        ("by", "by", "str", True, None),
        ("reason", "reason", "str", True, None),
        ("excluded", "excluded", "bool", False, False),
        ("requested_by", "requested_by", ("union", "str", "none"), False, None),
    ),
    "security_event": (
        ("device", "device", "str", True, None),
        ("reason", "reason", "str", True, None),
        ("detail", "detail", "str", True, None),
    ),
    "software_checked": (
        ("seed", "seed", "str", True, None),
        ("aggregate", "aggregate", "str", True, None),
        ("files", "files", "int", True, None),
        ("requested_by", "requested_by", "str", True, None),
    ),
    "software_verified": (
        ("release", "release", "str", True, None),
        ("release_digest", "release_digest", "str", True, None),
        ("development", "development", "bool", True, None),
        ("key_id", "key_id", "str", True, None),
        ("files", "files", "int", True, None),
        ("dependencies", "dependencies", "int", True, None),
    ),
    "state_changed": (
        ("machine", "machine", "str", True, None),
        ("from_state", "from", "str", True, None),
        ("to", "to", "str", True, None),
        ("trigger", "trigger", "str", True, None),
    ),
    "table_closed": (("by", "by", "str", True, None), ("reason", "reason", "str", True, None)),
    "table_opened": (
        ("game", "game", "str", True, None),
        ("banking_mode", "banking_mode", "str", True, None),
        ("config_digest", "config_digest", "str", True, None),
        ("by", "by", "str", True, None),
    ),
    "void_ordered": (("by", "by", "str", True, None), ("reason", "reason", "str", True, None)),
}
PART_FIELDS: dict[str, Fields] = {
    "ActionRefusedPrivate": (("refusal_detail", "refusal_detail", "str", True, None),),
    "CardDealtPrivate": (
        ("position", "position", "int", True, None),
        ("index", "index", "int", True, None),
        ("card", "card", ("union", "str", "none"), True, None),
    ),
    "DecisionRefusedPrivate": (("limit_detail", "limit_detail", "str", True, None),),
    "DeckVerifiedPrivate": (
        ("missing", "missing", ("list", "str"), True, None),
        ("extra", "extra", ("list", "str"), True, None),
    ),
    "ReasonDetail": (
        ("message", "message", ("union", "str", "none"), False, None),
        ("card", "card", ("union", "int", "none"), False, None),
        ("position", "position", ("union", "int", "none"), False, None),
        ("index", "index", ("union", "int", "none"), False, None),
        ("first_position", "first_position", ("union", "int", "none"), False, None),
        ("first_index", "first_index", ("union", "int", "none"), False, None),
        ("device_detail", "device_detail", ("union", "str", "none"), False, None),
    ),
    "RoundSettledPrivate": (
        ("round", "round", ("dict", "str", "any"), True, None),
        ("hands", "hands", ("dict", "str", "any"), True, None),
    ),
}
REASON_FIELDS: Fields = (
    (
        "code",
        "code",
        (
            "lit",
            "card_count",
            "card_misread",
            "card_out_of_order",
            "card_outside_round",
            "card_repeated",
            "clock_offset",
            "config_changed",
            "deck_verification",
            "device_lost",
            "engine_error",
            "extra_card",
            "integrity_check",
            "not_covered",
            "operator",
            "over_limit",
            "past_posting",
            "red_light",
            "security_event",
            "sensor_report_refused",
            "shoe_fault",
            "shoe_refused",
            "under_limit",
            "unknown_event",
        ),
        True,
        None,
    ),
    ("message", "message", "str", True, None),
    ("seat", "seat", ("union", "int", "none"), False, None),
)

# The private parts that say which dealt positions they are about (``Part.positions``): a card's, and a
# reason's detail (its position and the first card's). Every other part is about none.
PART_POSITIONS: dict[str, tuple[str, ...]] = {
    "CardDealtPrivate": ("position",),
    "ReasonDetail": ("position", "first_position"),
}


class _Misfit(Exception):
    """A stored value the typed entry would not read as this view would: no view is made."""


class FieldsView:
    """Fields by attribute (the base of the views below); a name that is no field is an AttributeError."""

    __slots__ = ("_values",)

    def __init__(self, values: dict[str, Any]) -> None:
        self._values = values

    def __getattr__(self, name: str) -> Any:
        try:
            return self._values[name]
        except KeyError:
            raise AttributeError(name) from None

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._values!r})"


class ReasonView(FieldsView):
    """An entry's ``Reason`` (``code``, ``message``, ``seat``)."""

    __slots__ = ()


class PartView(FieldsView):
    """A private part: its fields, its class's name, and the positions it is about."""

    __slots__ = ("part_type",)

    def __init__(self, part_type: str, values: dict[str, Any]) -> None:
        super().__init__(values)
        self.part_type = part_type

    def positions(self) -> frozenset[int]:
        return frozenset(
            position
            for name in PART_POSITIONS.get(self.part_type, ())
            if (position := self._values[name]) is not None
        )


class EntryView(FieldsView):
    """An entry of ``kind``: its public fields by attribute, ``private`` (a ``PartView`` or None) and
    ``private_part()``, as the typed entry has them."""

    __slots__ = ("kind", "private")

    def __init__(self, kind: str, values: dict[str, Any], private: PartView | None) -> None:
        super().__init__(values)
        self.kind = kind
        self.private = private

    def private_part(self) -> PartView | None:
        return self.private


def part_type(part: object) -> str:
    """The class name of a private part, typed or a view: what the gate asks instead of ``isinstance``
    (no class of a part has a subclass: tests/journal/test_entry_view.py)."""
    return part.part_type if isinstance(part, PartView) else type(part).__name__


def view_of(kind: str, public: Mapping[str, Any], private: Mapping[str, Any] | None) -> EntryView | None:
    """The view of an entry of today's version from its two parts, or None when it would not read as its
    typed entry does (then decode the typed entry: it refuses what does not fit)."""
    fields = KIND_FIELDS.get(kind)
    if fields is None:
        return None
    try:
        values = _read(fields, public, skip="private")
        part: PartView | None = None
        if private is not None:
            part_type = _part_type(fields)
            if part_type is None:
                return None
            part = PartView(part_type, _read(PART_FIELDS[part_type], private))
    except _Misfit:
        return None
    return EntryView(kind, values, part)


def _part_type(fields: Fields) -> str | None:
    for attribute, _name, spec, _required, _default in fields:
        if attribute == "private":
            parts = [s[1] for s in spec[1:] if isinstance(s, tuple) and s[0] == "part"]
            return parts[0] if parts else None
    return None


def _read(fields: Fields, stored: Mapping[str, Any], skip: str | None = None) -> dict[str, Any]:
    """Each field's value (copied, checked against its type; an absent optional one its default), by
    attribute; a stored name that is no field of these is a misfit (the classes forbid unknown fields)."""
    values: dict[str, Any] = {}
    seen = 0
    for attribute, name, spec, required, default in fields:
        if attribute == skip:
            continue
        value = stored.get(name, _NO_DEFAULT)
        if value is _NO_DEFAULT:
            if required:
                raise _Misfit(name)
            values[attribute] = default
            continue
        seen += 1
        values[attribute] = _take(value, spec)
    if seen != len(stored):
        raise _Misfit("a field the kind does not have")
    return values


# The plain types by name: the exact Python type a JSON value of each has (an integer is never a bool).
_PLAIN: dict[str, type] = {"int": int, "str": str, "bool": bool, "none": type(None)}


def _take(value: Any, spec: Any) -> Any:
    """``value`` as the typed entry holds it, or _Misfit when it is not of type ``spec``. Its typed
    containers are new (as msgspec makes them); a value of type Any is the stored one (as msgspec's)."""
    if type(spec) is str:
        if spec == "any" or type(value) is _PLAIN[spec]:
            return value
        raise _Misfit(spec)
    tag = spec[0]
    if tag == "union":
        for option in spec[1:]:
            try:
                return _take(value, option)
            except _Misfit:
                continue
        raise _Misfit(tag)
    if tag == "lit":
        if type(value) is str and value in spec[1:]:
            return value
        raise _Misfit(tag)
    if tag == "list" and type(value) is list:
        return [_take(item, spec[1]) for item in value]
    if tag == "dict" and type(value) is dict:
        return {_take(key, spec[1]): _take(item, spec[2]) for key, item in value.items()}
    if spec == REASON_TYPE and type(value) is dict:
        return ReasonView(_read(REASON_FIELDS, value))
    raise _Misfit(tag)  # not of the type, or a part anywhere but ``private``: no view


def merged_payload(kind: str, public: Mapping[str, Any], private: Mapping[str, Any] | None) -> dict[str, Any]:
    """One object from both parts. A settled round's hands go back into its settlement, so the
    payload is the settle output and input as `flushtable settle` gives them."""
    if private is None:
        return dict(public)
    if kind == "round_settled":
        settlement = settlement_with_hands(public["settlement"], private.get("hands") or {})
        extra = {key: value for key, value in public.items() if key != "settlement"}  # bank_by_seat
        return {**extra, "round": private["round"], "settlement": settlement}
    return {**public, **private}


def settlement_with_hands(settlement: Mapping[str, Any], hands: Mapping[str, Any]) -> dict[str, Any]:
    """A round_settled entry's public settlement with its private hands back in (``{"dealer": hand,
    "seats": {seat: hand}}``): the settle output as `flushtable settle` gives it."""
    merged = dict(settlement)
    if merged.get("dealer") is not None:
        merged["dealer"] = {**merged["dealer"], "hand": hands.get("dealer")}
    seat_hands = hands.get("seats") or {}
    merged["seats"] = [
        {**seat, "hand": seat_hands.get(str(seat["seat"]))} for seat in merged.get("seats", [])
    ]
    return merged

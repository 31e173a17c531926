"""The reducer's checkpoint: a ``TableState`` as JSON, and back (docs/journal.md "Segments and seals").

A sealed segment carries the reducer's state at its end, so a start folds only the open segment on top
of it instead of the whole journal. The checkpoint is the whole ``TableState``: open rounds, latched
faults and alerts, the button and the designated player's bank, the manager's limits and paytables,
devices, the meters' running totals, the stand-alone progressive's meter (every 1.39A meter, the
reserve, pending and recent awards, and what each (table, round) contributed and claimed, so a replay is
still refused after a start), the release verified, the last clock measurement and step, the last
configuration check, and the two-person changes (pending ones lapse or are approved after a start).
It is plain JSON (never a pickle: what is persisted is readable by any release and by an auditor),
and ``state_from_checkpoint(state_to_checkpoint(s))`` folds every later entry exactly as ``s`` would
(tests/journal/test_segments.py holds it to that against the engine's own rounds with a progressive's
and the software checks' entries between them). Pure: no file, no clock.

Every attribute of a ``TableState`` is carried, or named in ``NOT_CARRIED`` with why (a test,
tests/journal/test_reducer_checkpoint.py, fails on an attribute that is neither, so a new one cannot be
dropped by a seal unnoticed). Format 4 counts the progressive's net in the meters' balance; formats
2 and 3 left it out (``METERS_WITHOUT_PROGRESSIVE_NET_FORMATS``): one of them whose meters hold a
Progressive wager is not read as a state (the sealed segments are folded, and the start seals at once),
and each is verified by the reading it was written with (``MetersBeforeProgressiveNet``). Format 1
(the first release of segments) carried none of the progressive's meter, the software checks, the
clock and the two-person changes; it is never read as a state
(``CheckpointFormatError``): a start refolds the journal instead (controller/journal/recovery.py).
Formats 1 and 2 carried ``closed_rounds`` whole (every round the table ever closed, so a seal grew with
the journal's age); format 3 carries the reducer's bounded window (the last ``RECENT_ROUNDS`` closed
rounds). A format-2 checkpoint is read as a state by keeping the window's part of that map; a seal of
format 1 or 2 is verified against the map it carried, built from every closing entry
(``record_closings``).

Objects shared between the state's maps stay shared: an alert that is latched, open and listed is one
object (acknowledging it updates all three), and ``current`` is the round in ``rounds`` of that id.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections import Counter, deque
from collections.abc import Iterable, Iterator
from typing import Any

import msgspec

from controller.errors import UserError
from controller.journal import entries as e
from controller.journal.kinds import STATUS_BY_CLOSING_KIND
from controller.journal.proposals import Proposal
from controller.journal.state import TableState
from controller.journal.state_parts import (
    HISTORY_ROUNDS,
    AlertState,
    DeviceState,
    Meters,
    MetersBeforeProgressiveNet,
    RoundState,
    Stored,
    WagerMeter,
    resolve_typed_annotations,
)
from controller.progressive.model import AwardState, MeterState, ProgressiveParameters, parse_parameters
from table_names.records import Record

# The records are converted by their annotations (msgspec), which name the typed entries.
resolve_typed_annotations()

# 2: the stand-alone progressive's meter, the software checks, the clock, the configuration check and
# the two-person changes are carried (1 dropped them). 3: ``closed_rounds`` is the reducer's bounded
# window of recent closed rounds (1 and 2 carried every round ever closed). 4: the meters count the
# progressive's net in each round's balance (``progressive_net_cents``; issue 29).
CHECKPOINT_FORMAT = 4
OLDER_CHECKPOINT_FORMATS = frozenset({1})  # read as "refold the sealed segments", never as a state
READ_AS_STATE_FORMATS = frozenset({2, 3, CHECKPOINT_FORMAT})  # read as the state at the seal
# Formats whose meters left the progressive's net out of each round's balance (every round with a
# Progressive wager listed unbalanced, no ``progressive_net_cents``): read as a state only where the
# meters hold no Progressive wager (then both readings are the same numbers); verified by that reading.
METERS_WITHOUT_PROGRESSIVE_NET_FORMATS = frozenset({1, 2, 3})
# Formats whose ``closed_rounds`` names every round the table ever closed (not the reducer's window).
EVERY_CLOSED_ROUND_FORMATS = frozenset({1, 2})
# What each earlier format did not carry: a seal of that format is verified against the rest.
_LACKED_BY_FORMAT: dict[int, tuple[str, ...]] = {
    1: (
        "progressive",
        "software",
        "software_checked",
        "clock",
        "clock_stepped",
        "config_checked",
        "changes",
        "approved_config_files",
    ),
    2: (),
    3: (),
}

# TableState's plain attributes, with the type each decodes to.
_SCALARS: dict[str, Any] = {
    "table_id": str,
    "last_seq": int,
    "last_entry_utc": str,
    "game": str,
    "banking_mode": str,
    "table_open": bool | None,
    "closed_by_operator": e.TableClosed | None,
    "phase": str,
    "button_seat": int | None,
    "designated_player": dict[str, Any] | None,
    "waived_seats": list[int],
    "limits": dict[str, Any] | None,
    "paytables": dict[str, Any],
    "settings_config_digest": str | None,
    "rounds_started": int,
    "last_round_id": str | None,
    "last_round_number": int,
    "closed_rounds": dict[str, str],
    "_closed_order": list[str],
    "software": dict[str, Any] | None,
    "software_checked": dict[str, Any] | None,
    "clock": e.ClockOffset | None,
    "clock_stepped": e.ClockStepped | None,
    "config_checked": e.ConfigChecked | None,
    "changes": dict[str, Proposal],  # in order of proposal (which closed ones are dropped first)
    "approved_config_files": dict[str, str],
}
# Carried under other names: the shared alert objects once each, the current round by its id.
CARRIED_AS: dict[str, tuple[str, ...]] = {
    "latched_faults": ("alert_states", "latched_faults"),
    "open_alerts": ("alert_states", "open_alerts"),
    "alerts": ("alert_states", "alerts"),
    "current": ("current_round_id", "current_round"),
    "_progressive": ("progressive",),  # the Progressive's meter, made on first use (TableState.progressive)
}
# TableState attributes a checkpoint leaves out, each with why the restored state is still the fold's.
NOT_CARRIED: dict[str, str] = {
    # How the fold reads stored rows (their views, or their typed entries), chosen by each reader that
    # makes a state: the state a seal carries is the same either way (tests/journal/test_entry_view.py).
    "_views": "a reader's choice of how it reads rows, not a fact of the journal",
    "_journal_path": "the file a reader names in a row's refusal, not a fact of the journal",
}

# MeterState's plain fields, with the type each decodes to (the rest: parameters, awards, the maps keyed
# by (table, round), which JSON cannot key by a pair).
_METER_SCALARS: dict[str, Any] = {
    "meter_id": str,
    "opened_base_cents": int,
    "meter_cents": int,
    "reserve_cents": int,
    "wagers": int,
    "in_meter_cents": int,
    "increments_cents": int,
    "hidden_cents": int,
    "overflow_cents": int,
    "resets": int,
    "resets_cents": int,
    "resets_from_reserve_cents": int,
    "resets_house_added_cents": int,
    "reserve_moved_cents": int,
    "meter_awards_cents": int,
    "fixed_awards_cents": int,
    "paid_cents": int,
    "hits_by_line": dict[int, int],
    "wins_by_line_cents": dict[int, int],
    "in_meter_by_table_cents": dict[str, int],
    "changes": int,
    "claims_recorded": int,
    "forgotten_through": dict[str, int],
}
_METER_BY_ROUND = ("contributions", "overflow_by_round", "claims")

_ALERT_MAPS = ("latched_faults", "open_alerts", "alerts")


class CheckpointError(ValueError):
    """A checkpoint that is not one this release reads (damaged, or of another format)."""


class CheckpointFormatError(CheckpointError):
    """A checkpoint of an earlier format: whole once, but it lacks what this release carries; the state
    is the sealed segments' fold instead (``format`` says which)."""

    def __init__(self, found: int | None) -> None:
        super().__init__(
            f"a checkpoint of format {found}, which lacks what format {CHECKPOINT_FORMAT} carries "
            "(the progressive's meter, the software checks, the clock and the two-person changes)"
        )
        self.format = found


class CheckpointReadingError(CheckpointFormatError):
    """A checkpoint of format 2 or 3 whose meters hold a Progressive wager: they left its net out of the
    balance, so the state is the sealed segments' fold instead."""

    def __init__(self, found: int | None) -> None:
        CheckpointError.__init__(
            self,
            f"a checkpoint of format {found}, whose meters left the progressive's net out of each "
            f"round's balance (this release writes format {CHECKPOINT_FORMAT})",
        )
        self.format = found


def refold_reason(checkpoint: object) -> str | None:
    """Why a start cannot take ``checkpoint`` as the state at its seal and folds the sealed segments
    instead (None: it can): a format that lacks what this release carries, or meters that read a
    Progressive round's balance otherwise than this release."""
    found = checkpoint_format(checkpoint)
    if found in OLDER_CHECKPOINT_FORMATS:
        return (
            f"is of format {found}, which lacks the progressive's meter, the software checks and the "
            f"two-person changes (this release writes format {CHECKPOINT_FORMAT})"
        )
    if found in METERS_WITHOUT_PROGRESSIVE_NET_FORMATS and _meters_hold_progressive(checkpoint):
        return (
            f"is of format {found}, whose meters left the progressive's net out of each round's "
            f"balance (this release writes format {CHECKPOINT_FORMAT})"
        )
    return None


def _meters_hold_progressive(checkpoint: object) -> bool:
    from controller.rules.games import PROGRESSIVE  # noqa: PLC0415 (the rules' names, for an old seal only)

    state = checkpoint.get("state") if isinstance(checkpoint, dict) else None
    meters = state.get("meters") if isinstance(state, dict) else None
    by_wager = meters.get("by_wager") if isinstance(meters, dict) else None
    return isinstance(by_wager, dict) and PROGRESSIVE in by_wager


def checkpoint_format(checkpoint: object) -> int | None:
    """The format a checkpoint says it is (None: not a checkpoint)."""
    if not isinstance(checkpoint, dict):
        return None
    found = checkpoint.get("format")
    return found if isinstance(found, int) and not isinstance(found, bool) else None


def _builtins(value: Any) -> Any:
    if isinstance(value, Record):  # the reducer's records: their fields in order, as a dataclass's were
        value = value.as_dict()
    return msgspec.to_builtins(value, str_keys=True)


def checkpoint_in_format(
    checkpoint: dict[str, Any], found: int | None, *, every_closed_round: dict[str, str] | None = None
) -> dict[str, Any]:
    """The checkpoint as an earlier format wrote it (``found`` None or this format: unchanged).
    ``every_closed_round``: the map formats 1 and 2 carried as ``closed_rounds`` (every round closed
    up to the checkpoint, from ``record_closings``); None leaves the checkpoint's own (the window)."""
    if found is None or found == CHECKPOINT_FORMAT:
        return checkpoint
    lacked = _LACKED_BY_FORMAT[found]
    state = {name: value for name, value in checkpoint["state"].items() if name not in lacked}
    if every_closed_round is not None and found in EVERY_CLOSED_ROUND_FORMATS:
        state["closed_rounds"] = dict(every_closed_round)
    if found in METERS_WITHOUT_PROGRESSIVE_NET_FORMATS:
        # Those meters had no progressive net (their rounds' balance is the caller's to fold by that
        # reading: ``state_from_checkpoint(..., as_written=True)``, ``MetersBeforeProgressiveNet``).
        state["meters"] = {k: v for k, v in state["meters"].items() if k != "progressive_net_cents"}
    return {"format": found, "state": state}


def record_closings(stored_entries: Iterable[Stored], into: dict[str, str]) -> Iterator[Stored]:
    """The entries unchanged, each closing entry's round recorded in ``into`` (round_id -> closing
    kind, as formats 1 and 2 carried ``closed_rounds``) on the way: a fold through this yields what a
    seal of those formats says without the reducer keeping every round."""
    for stored in stored_entries:
        kind = stored.entry.kind
        if kind in STATUS_BY_CLOSING_KIND and stored.round_id is not None:
            into[stored.round_id] = kind
        yield stored


def state_to_checkpoint(state: TableState) -> dict[str, Any]:
    """The state as JSON values (canonical_json of it is what a seal signs)."""
    fields: dict[str, Any] = {name: _builtins(getattr(state, name)) for name in _SCALARS}
    # Every alert once, by id; the three maps name theirs in their order.
    every_alert: dict[str, AlertState] = {}
    for name in _ALERT_MAPS:
        for fault_id, alert in getattr(state, name).items():
            every_alert.setdefault(fault_id, alert)
    fields["alert_states"] = {fault_id: _builtins(alert) for fault_id, alert in every_alert.items()}
    for name in _ALERT_MAPS:
        fields[name] = list(getattr(state, name))
    fields["rounds"] = {round_id: _builtins(r) for round_id, r in state.rounds.items()}
    current = state.current
    fields["current_round_id"] = None if current is None else current.round_id
    fields["current_round"] = (
        None if current is None or state.rounds.get(current.round_id) is current else _builtins(current)
    )
    fields["devices"] = {name: _builtins(device) for name, device in state.devices.items()}
    meters = state.meters
    fields["meters"] = {
        name: _builtins(getattr(meters, name))
        for name in Meters._fields
        if name not in ("faults_by_kind", "history", "by_wager")
    }
    fields["meters"]["faults_by_kind"] = dict(meters.faults_by_kind)
    fields["meters"]["history"] = list(meters.history)
    fields["meters"]["by_wager"] = {name: _builtins(m) for name, m in meters.by_wager.items()}
    fields["progressive"] = _meter_to_json(state.progressive)
    return {"format": CHECKPOINT_FORMAT, "state": fields}


def _parameters_json(parameters: ProgressiveParameters | None) -> dict[str, Any] | None:
    return None if parameters is None else parameters.to_json()


def _meter_to_json(meter: MeterState) -> dict[str, Any]:
    """The meter whole: its fold's own parameters (as a journaled ``after`` holds them), its counters,
    the awards in the order recorded, and the maps keyed by (table, round) as [table, round, value]
    rows in their order (the order is what decides which are forgotten first)."""
    out: dict[str, Any] = {name: _builtins(getattr(meter, name)) for name in _METER_SCALARS}
    out["parameters"] = _parameters_json(meter.parameters)
    out["config_parameters"] = _parameters_json(meter.config_parameters)
    out["awards"] = [
        {"claimed": _builtins(award.claimed), "paid": _builtins(award.paid)}
        for award in meter.awards.values()
    ]
    for name in _METER_BY_ROUND:
        out[name] = [
            [table_id, round_id, _builtins(value)]
            for (table_id, round_id), value in getattr(meter, name).items()
        ]
    return out


def _convert(value: Any, kind: Any) -> Any:
    twin = _TWINS.get(kind)
    if twin is None:
        return msgspec.convert(value, kind, strict=False)
    converted: Any = msgspec.convert(value, twin, strict=False)
    return kind(**{name: getattr(converted, name) for name in kind._fields})


def _twin(record: type[Record]) -> type:
    """A dataclass with ``record``'s fields, annotations and ``__init__`` defaults, for msgspec to check
    and convert a checkpoint's JSON into: the reducer's records are plain classes (table_names/records.py:
    the journal's readers load no `dataclasses`), and msgspec converts into dataclasses, not into them.
    A field made by a factory has ``None`` for its ``__init__`` default: absent from the JSON it is made
    by the record as before, and given it is checked against the field's own annotation (never None).
    The annotations resolve in the record's module (after ``resolve_typed_annotations``)."""
    annotations: dict[str, Any] = {}
    for klass in reversed(record.__mro__):
        annotations.update(inspect.get_annotations(klass))
    defaults = inspect.signature(record.__init__).parameters
    fields: list[Any] = []
    for name in record._fields:
        default = defaults[name].default
        if default is inspect.Parameter.empty:
            fields.append((name, annotations[name]))
        else:
            fields.append((name, annotations[name], dataclasses.field(default=default)))
    twin = dataclasses.make_dataclass(record.__name__, fields)
    twin.__module__ = record.__module__
    return twin


_TWINS: dict[type, type] = {
    record: _twin(record)
    for record in (AlertState, DeviceState, Meters, MetersBeforeProgressiveNet, RoundState, WagerMeter)
}


def state_from_checkpoint(checkpoint: dict[str, Any], *, as_written: bool = False) -> TableState:
    """The state a checkpoint holds; ``CheckpointError`` (one line) when it is not one, and
    ``CheckpointFormatError`` when a start must fold the sealed segments instead (``refold_reason``).
    ``as_written``: a checkpoint of format 2 or 3 with its meters as that release read rounds (the
    progressive's net left out: ``MetersBeforeProgressiveNet``), to verify the seals after it that
    were written by the same reading; never the table's state."""
    found = checkpoint_format(checkpoint)
    if found in OLDER_CHECKPOINT_FORMATS:
        raise CheckpointFormatError(found)
    if not isinstance(checkpoint, dict) or found not in READ_AS_STATE_FORMATS:
        raise CheckpointError(f"not a checkpoint of format {CHECKPOINT_FORMAT}")
    fields = checkpoint.get("state")
    if not isinstance(fields, dict):
        raise CheckpointError("a checkpoint without its state")
    old_reading = found in METERS_WITHOUT_PROGRESSIVE_NET_FORMATS
    if old_reading and not as_written and _meters_hold_progressive(checkpoint):
        raise CheckpointReadingError(found)
    try:
        state = _restore(fields, MetersBeforeProgressiveNet if old_reading and as_written else Meters)
    except (msgspec.ValidationError, KeyError, TypeError, ValueError, UserError) as error:
        raise CheckpointError(f"checkpoint damaged: {error}") from None
    if found in EVERY_CLOSED_ROUND_FORMATS:
        # Every round ever closed: the reducer keeps only its window (the rounds in _closed_order),
        # which is what a fold from the first entry would hold here.
        window = set(state._closed_order)
        state.closed_rounds = {rid: kind for rid, kind in state.closed_rounds.items() if rid in window}
    return state


def _restore(fields: dict[str, Any], meters_class: type[Meters]) -> TableState:
    state = TableState(str(fields["table_id"]))
    for name, kind in _SCALARS.items():
        setattr(state, name, _convert(fields[name], kind))
    alerts = {fault_id: _convert(value, AlertState) for fault_id, value in fields["alert_states"].items()}
    for name in _ALERT_MAPS:
        setattr(state, name, {fault_id: alerts[fault_id] for fault_id in fields[name]})
    state.rounds = {round_id: _convert(value, RoundState) for round_id, value in fields["rounds"].items()}
    current_id = fields["current_round_id"]
    if current_id is None:
        state.current = None
    elif fields["current_round"] is not None:
        state.current = _convert(fields["current_round"], RoundState)
    else:
        state.current = state.rounds[current_id]
    state.devices = {name: _convert(value, DeviceState) for name, value in fields["devices"].items()}
    meter_fields = dict(fields["meters"])
    faults_by_kind = Counter({str(k): int(v) for k, v in meter_fields.pop("faults_by_kind").items()})
    history = deque(meter_fields.pop("history"), maxlen=HISTORY_ROUNDS)
    by_wager = {name: _convert(value, WagerMeter) for name, value in meter_fields.pop("by_wager").items()}
    meters = _convert(meter_fields, meters_class)
    meters.faults_by_kind = faults_by_kind
    meters.history = history
    meters.by_wager = by_wager
    state.meters = meters
    state.progressive = _meter_from_json(fields["progressive"])
    return state


def _parameters_from(value: Any) -> ProgressiveParameters | None:
    # The fold's own parser, so the parameters restored are the ones the fold made of the same JSON.
    return None if value is None else parse_parameters(value, field="checkpoint.progressive.parameters")


def _meter_from_json(fields: dict[str, Any]) -> MeterState:
    meter = MeterState()
    for name, kind in _METER_SCALARS.items():
        setattr(meter, name, _convert(fields[name], kind))
    meter.parameters = _parameters_from(fields["parameters"])
    meter.config_parameters = _parameters_from(fields["config_parameters"])
    for row in fields["awards"]:
        claimed = _convert(row["claimed"], e.ProgressiveAwardClaimed)
        paid = _convert(row["paid"], e.ProgressiveAwardPaid | None)
        meter.awards[claimed.award_id] = AwardState(claimed, paid)
    meter.contributions = {
        (str(table_id), str(round_id)): _convert(value, e.ProgressiveContribution)
        for table_id, round_id, value in fields["contributions"]
    }
    meter.overflow_by_round = {
        (str(table_id), str(round_id)): _convert(value, int)
        for table_id, round_id, value in fields["overflow_by_round"]
    }
    meter.claims = {
        (str(table_id), str(round_id)): _convert(value, list[str])
        for table_id, round_id, value in fields["claims"]
    }
    return meter

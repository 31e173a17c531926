"""The reducer's checkpoint: a ``TableState`` as JSON, and back (docs/journal.md "Segments and seals").

A sealed segment carries the reducer's state at its end, so a start folds only the open segment on top
of it instead of the whole journal. The checkpoint is the whole ``TableState``: open rounds, latched
faults and alerts, the button and the designated player's bank, the manager's limits and paytables,
devices, and the meters' running totals. It is plain JSON (never a pickle: what is persisted is
readable by any release and by an auditor), and ``state_from_checkpoint(state_to_checkpoint(s))``
folds every later entry exactly as ``s`` would (tests/journal/test_segments.py holds it to that
against the engine's own rounds). Pure: no file, no clock.

Objects shared between the state's maps stay shared: an alert that is latched, open and listed is one
object (acknowledging it updates all three), and ``current`` is the round in ``rounds`` of that id.
"""

from __future__ import annotations

from collections import Counter, deque
from typing import Any

import msgspec

from controller.journal import entries as e
from controller.journal.state import (
    HISTORY_ROUNDS,
    AlertState,
    DeviceState,
    Meters,
    RoundState,
    TableState,
    WagerMeter,
)

CHECKPOINT_FORMAT = 1

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
}
_ALERT_MAPS = ("latched_faults", "open_alerts", "alerts")


class CheckpointError(ValueError):
    """A checkpoint that is not one this release reads (damaged, or of another format)."""


def _builtins(value: Any) -> Any:
    return msgspec.to_builtins(value, str_keys=True)


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
        for name in Meters.__dataclass_fields__
        if name not in ("faults_by_kind", "history", "by_wager")
    }
    fields["meters"]["faults_by_kind"] = dict(meters.faults_by_kind)
    fields["meters"]["history"] = list(meters.history)
    fields["meters"]["by_wager"] = {name: _builtins(m) for name, m in meters.by_wager.items()}
    return {"format": CHECKPOINT_FORMAT, "state": fields}


def _convert(value: Any, kind: Any) -> Any:
    return msgspec.convert(value, kind, strict=False)


def state_from_checkpoint(checkpoint: dict[str, Any]) -> TableState:
    """The state a checkpoint holds; ``CheckpointError`` (one line) when it is not one."""
    if not isinstance(checkpoint, dict) or checkpoint.get("format") != CHECKPOINT_FORMAT:
        raise CheckpointError(f"not a checkpoint of format {CHECKPOINT_FORMAT}")
    fields = checkpoint.get("state")
    if not isinstance(fields, dict):
        raise CheckpointError("a checkpoint without its state")
    try:
        return _restore(fields)
    except (msgspec.ValidationError, KeyError, TypeError, ValueError) as error:
        raise CheckpointError(f"checkpoint damaged: {error}") from None


def _restore(fields: dict[str, Any]) -> TableState:
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
    meters = _convert(meter_fields, Meters)
    meters.faults_by_kind = faults_by_kind
    meters.history = history
    meters.by_wager = by_wager
    state.meters = meters
    return state

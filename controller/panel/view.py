"""The table as the panel shows it, folded from journal entries, and the hidden-card filter.

Pure: :class:`TableView` is fed journal entries in sequence order (``apply``) and answers what may be
shown. Nothing here touches a socket, a clock or a file.

When a card may be shown (docs/panel.md, "Hidden cards"):
- a round's hole cards (and the banker's) only once the round reaches the reveal (a ``state_changed``
  into one of REVEAL_STATES) or is settled; Chase the Flush's community cards as the flop
  (2 cards) and the turn and river (4) are turned;
- a dead hand's cards never (RULES.md), nor any card of a dead round, nor of a round voided before
  its reveal;
- anything derived from cards (a hand's flush, a card named in a fault's text) follows its round.

Every entry leaves through :meth:`TableView.public_entry`, the one gate for pages, API and SSE.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

REVEAL_STATES = frozenset({"reveal", "settling", "paying", "complete"})
COMMUNITY_POSITION = 15
DEALER_POSITION = 0
HIDDEN = "??"
# Keys whose whole value is a hand or cards: dropped, not just scrubbed, while hidden.
_CARD_KEYS = frozenset({"card", "cards", "hand", "hands", "dealer_hand", "community", "hole_cards"})
_CARD_TEXT = re.compile(r"^[2-9TJQKA][cdhs]$")
_CARD_IN_TEXT = re.compile(r"(?<![A-Za-z0-9])[2-9TJQKA][cdhs](?![A-Za-z0-9])")
# What a hand is, in words ("with a 5-card flush"): hidden with the cards.
_HAND_IN_TEXT = re.compile(r"(?<![A-Za-z0-9])\d-card(?= )")
ROUND_CLOSING = {"round_settled": "settled", "round_dead": "dead", "round_voided": "void"}
ALERT_KINDS = (
    "dead_hand",
    "red_light",
    "past_posting",
    "over_limit_raise",
    "device_lost",
    "journal_error",
    "security_event",
    "shuffler_fault",
    "deck_verification",
    "integrity",
)


class EntryLike(Protocol):
    """A journal entry (controller.journal.JournalEntry has these fields)."""

    @property
    def seq(self) -> int: ...
    @property
    def time_utc(self) -> str: ...
    @property
    def table_id(self) -> str: ...
    @property
    def round_id(self) -> str | None: ...
    @property
    def source(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def payload(self) -> Mapping[str, Any]: ...


def scrub_cards(value: Any) -> Any:
    """``value`` with every card, hand and card name in free text replaced by ``HIDDEN``."""
    if isinstance(value, Mapping):
        return {
            key: (None if key in _CARD_KEYS and value_ is not None else scrub_cards(value_))
            for key, value_ in value.items()
        }
    if isinstance(value, list | tuple):
        return [scrub_cards(item) for item in value]
    if isinstance(value, str):
        if _CARD_TEXT.match(value):
            return HIDDEN
        return _HAND_IN_TEXT.sub("?-card", _CARD_IN_TEXT.sub(HIDDEN, value))
    return value


def _scrub_dead_seats(value: Any, dead_seats: frozenset[int]) -> Any:
    """Scrub the cards of any object that belongs to a dead seat (``{"seat": n, ...}``)."""
    if isinstance(value, Mapping):
        if value.get("seat") in dead_seats and any(key in _CARD_KEYS for key in value):
            return scrub_cards(value)
        return {key: _scrub_dead_seats(item, dead_seats) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_scrub_dead_seats(item, dead_seats) for item in value]
    return value


@dataclass(slots=True)
class RoundView:
    round_id: str
    game: str = ""
    banking_mode: str = ""
    dp_seat: int | None = None
    dp_funds_cents: int | None = None
    button_seat: int | None = None
    started_utc: str = ""
    phase: str = ""
    seats: list[int] = field(default_factory=list)
    wagers: dict[int, dict[str, int]] = field(default_factory=dict)
    locked: bool = False
    cards: dict[int, dict[int, str]] = field(default_factory=dict)
    decisions: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    dead_seats: set[int] = field(default_factory=set)
    revealed: bool = False
    community_visible: int = 0
    status: str = "in_progress"  # or settled | dead | void
    closed_utc: str = ""
    settlement: dict[str, Any] | None = None
    faults: list[str] = field(default_factory=list)

    def card_visible(self, position: int, index: int) -> bool:
        if self.status == "dead":
            return False
        if position in self.dead_seats:
            return False
        if self.revealed or self.status == "settled":
            return True
        return position == COMMUNITY_POSITION and index < self.community_visible

    @property
    def cards_public(self) -> bool:
        return self.status != "dead" and (self.revealed or self.status == "settled")


@dataclass(slots=True)
class DeviceView:
    device: str
    kind: str = ""
    model: str = ""
    serial_number: str = ""
    firmware_version: str = ""
    state: str = "unknown"  # ready | busy | fault | lost | unknown
    lamp: str = ""
    fault_code: int = 0
    last_event_utc: str = ""
    last_reason: str = ""
    security_events: int = 0
    reconnects: int = 0


@dataclass(slots=True)
class AlertView:
    fault_id: str
    kind: str
    severity: str
    detail: str
    device: str | None
    round_id: str | None
    raised_seq: int
    raised_utc: str
    acknowledged_by: str | None = None
    acknowledged_utc: str | None = None
    cleared_by: str | None = None
    cleared_reason: str | None = None
    cleared_utc: str | None = None

    @property
    def state(self) -> str:
        if self.cleared_by is not None:
            return "cleared"
        return "acknowledged" if self.acknowledged_by is not None else "active"


class TableView:
    """Everything the panel shows, from the journal alone. Feed entries with :meth:`apply` in order."""

    RECENT_ROUNDS = 50

    def __init__(self, table_id: str = "") -> None:
        self.table_id = table_id
        self.last_seq = 0
        self.game = ""
        self.banking_mode = ""
        self.table_open: bool | None = None
        self.phase = "idle"
        self.button_seat: int | None = None
        self.current: RoundView | None = None  # the round in progress, or the last one closed
        self.rounds: dict[str, RoundView] = {}  # bounded: the most recent RECENT_ROUNDS
        self.devices: dict[str, DeviceView] = {}
        self.alerts: dict[str, AlertView] = {}
        self.last_entry_utc = ""

    # --- folding ------------------------------------------------------------------------------
    def _round(self, round_id: str | None) -> RoundView | None:
        if round_id is None:
            return None
        found = self.rounds.get(round_id)
        if found is None:
            found = RoundView(round_id=round_id)
            self.rounds[round_id] = found
            while len(self.rounds) > self.RECENT_ROUNDS:
                del self.rounds[next(iter(self.rounds))]
        return found

    def apply(self, entry: EntryLike) -> None:
        self.last_seq = entry.seq
        self.last_entry_utc = entry.time_utc
        self.table_id = self.table_id or entry.table_id
        payload = entry.payload
        kind = entry.kind
        round_ = self._round(entry.round_id)
        if kind == "table_opened":
            self.game = str(payload.get("game", self.game))
            self.banking_mode = str(payload.get("banking_mode", self.banking_mode))
            self.table_open = True
        elif kind == "table_closed":
            self.table_open = False
        elif kind == "state_changed" and payload.get("machine", "round") == "round":
            self.phase = str(payload.get("to", self.phase))
            if round_ is not None:
                round_.phase = self.phase
                if self.phase in REVEAL_STATES:
                    round_.revealed = True
                elif "river" in self.phase:
                    round_.community_visible = max(round_.community_visible, 4)
                elif "flop" in self.phase and "pre" not in self.phase:
                    round_.community_visible = max(round_.community_visible, 2)
        elif kind == "round_started" and round_ is not None:
            round_.game = str(payload.get("game", self.game))
            self.game = round_.game or self.game
            banking = payload.get("banking") or {}
            round_.banking_mode = str(banking.get("mode", self.banking_mode))
            round_.dp_seat = banking.get("seat")
            round_.dp_funds_cents = banking.get("funds")
            round_.button_seat = payload.get("button_seat")
            if round_.button_seat is not None:
                self.button_seat = round_.button_seat
            round_.seats = [int(seat) for seat in payload.get("seats", [])]
            round_.started_utc = entry.time_utc
            self.current = round_
        elif kind == "bet_changed" and round_ is not None:
            seat = int(payload.get("seat", 0))
            wager = str(payload.get("wager", ""))
            round_.wagers.setdefault(seat, {})[wager] = int(payload.get("amount_cents", 0))
        elif kind == "bets_locked" and round_ is not None:
            round_.locked = True
            for seat_text, wagers in (payload.get("wagers") or {}).items():
                round_.wagers[int(seat_text)] = {str(k): int(v) for k, v in wagers.items()}
        elif kind == "card_dealt" and round_ is not None:
            position = int(payload.get("position", -1))
            round_.cards.setdefault(position, {})[int(payload.get("index", 0))] = str(payload.get("card"))
        elif kind == "decision" and round_ is not None:
            round_.decisions.setdefault(int(payload.get("seat", 0)), []).append(dict(payload))
        elif kind == "dead_hand" and round_ is not None:
            dead_seat = payload.get("seat")
            if dead_seat is not None:
                round_.dead_seats.add(int(dead_seat))
        elif kind in ROUND_CLOSING and round_ is not None:
            round_.status = ROUND_CLOSING[kind]
            round_.closed_utc = entry.time_utc
            settlement = payload.get("settlement")
            round_.settlement = dict(settlement) if isinstance(settlement, Mapping) else None
        elif kind == "button_moved":
            to_seat = payload.get("to_seat")
            self.button_seat = int(to_seat) if isinstance(to_seat, int) else None
        elif kind == "fault_raised":
            fault_id = str(payload.get("fault_id", f"seq-{entry.seq}"))
            self.alerts[fault_id] = AlertView(
                fault_id=fault_id,
                kind=str(payload.get("kind", "")),
                severity=str(payload.get("severity", "alert")),
                detail=str(payload.get("detail", "")),
                device=payload.get("device"),
                round_id=entry.round_id,
                raised_seq=entry.seq,
                raised_utc=entry.time_utc,
            )
            if round_ is not None:
                round_.faults.append(fault_id)
        elif kind == "fault_acknowledged":
            alert = self.alerts.get(str(payload.get("fault_id")))
            if alert is not None and alert.acknowledged_by is None:
                alert.acknowledged_by = str(payload.get("by", ""))
                alert.acknowledged_utc = entry.time_utc
        elif kind == "fault_cleared":
            alert = self.alerts.get(str(payload.get("fault_id")))
            if alert is not None:
                alert.cleared_by = str(payload.get("by", ""))
                alert.cleared_reason = str(payload.get("reason", ""))
                alert.cleared_utc = entry.time_utc
        elif kind in {"device_ready", "device_lost", "device_status", "security_event"}:
            self._apply_device(entry)
        elif kind == "noise_suppressed" and payload.get("category") == "forged_frame":
            # Forged frames past their device's budget (controller/journal/noise.py): counted, not
            # journaled one by one. (Other sources' summaries name no device.)
            device = self.devices.get(str(payload.get("source")))
            if device is not None:
                device.security_events += int(payload.get("count", 0))
        # Keep the alert list bounded: drop the oldest cleared alerts.
        if len(self.alerts) > 500:
            for fault_id in [f for f, a in self.alerts.items() if a.state == "cleared"][:100]:
                del self.alerts[fault_id]

    def _apply_device(self, entry: EntryLike) -> None:
        payload = entry.payload
        name = str(payload.get("device", "?"))
        device = self.devices.setdefault(name, DeviceView(device=name))
        device.last_event_utc = entry.time_utc
        if entry.kind == "device_ready":
            if device.state == "lost":
                device.reconnects += 1
            device.state = "ready"
            device.kind = str(payload.get("kind", device.kind))
            device.model = str(payload.get("model", device.model))
            device.serial_number = str(payload.get("serial_number", device.serial_number))
            device.firmware_version = str(payload.get("firmware_version", device.firmware_version))
            device.last_reason = ""
        elif entry.kind == "device_lost":
            device.state = "lost"
            device.last_reason = str(payload.get("reason", ""))
        elif entry.kind == "device_status":
            device.state = str(payload.get("state", device.state))
            device.lamp = str(payload.get("lamp", ""))
            device.fault_code = int(payload.get("fault_code", 0))
        else:
            device.security_events += 1
            device.last_reason = str(payload.get("reason", ""))

    # --- the hidden-card gate -------------------------------------------------------------------
    def public_entry(self, entry: EntryLike) -> dict[str, Any]:
        """The entry as it may leave the daemon now: cards not yet revealed are gone."""
        payload: Any = dict(entry.payload)
        round_ = self.rounds.get(entry.round_id) if entry.round_id else None
        hidden = False
        if entry.kind == "card_dealt":
            position = int(payload.get("position", -1))
            index = int(payload.get("index", 0))
            if round_ is None or not round_.card_visible(position, index):
                payload = {"position": position, "index": index, "card": None}
                hidden = True
        elif round_ is None or not round_.cards_public:
            # A round forgotten (older than RECENT_ROUNDS) is closed; its cards were settled and shown,
            # but without its record we cannot tell, so we hide: safe by default.
            scrubbed = scrub_cards(payload)
            if entry.kind == "decision_refused" and isinstance(scrubbed.get("reason"), str):
                # "over the limit: 1000 to 2000 with a 5-card flush": the range tells the hand too.
                scrubbed["reason"] = scrubbed["reason"].split(":", 1)[0]
            hidden = scrubbed != payload
            payload = scrubbed
        elif round_.dead_seats:
            scrubbed = _scrub_dead_seats(payload, frozenset(round_.dead_seats))
            hidden = scrubbed != payload
            payload = scrubbed
        return {
            "seq": entry.seq,
            "time_utc": entry.time_utc,
            "round_id": entry.round_id,
            "source": entry.source,
            "kind": entry.kind,
            "payload": payload,
            "hidden": hidden,
        }

    # --- the table at a glance ------------------------------------------------------------------
    def snapshot(self) -> dict[str, Any]:
        round_ = self.current
        seats: list[dict[str, Any]] = []
        community: list[str | None] = []
        dealer_cards: list[str | None] = []
        results: dict[int, Mapping[str, Any]] = {}
        if round_ is not None and round_.settlement is not None:
            for seat_result in round_.settlement.get("seats", []) or []:
                if isinstance(seat_result, Mapping) and isinstance(seat_result.get("seat"), int):
                    results[seat_result["seat"]] = seat_result
        if round_ is not None:
            for seat in sorted(set(round_.seats) | set(round_.wagers)):
                cards = self._visible_cards(round_, seat)
                result = results.get(seat)
                seats.append(
                    {
                        "seat": seat,
                        "wagers": dict(round_.wagers.get(seat, {})),
                        "cards": cards,
                        "dealt": len(round_.cards.get(seat, {})),
                        "decisions": [
                            {k: d.get(k) for k in ("action", "amount_cents", "street")}
                            for d in round_.decisions.get(seat, [])
                        ],
                        "dead": seat in round_.dead_seats,
                        "designated_player": seat == round_.dp_seat,
                        "result": None
                        if result is None
                        else {
                            "status": result.get("status"),
                            "net_cents": result.get("net"),
                            "wagers": {
                                name: {"result": w.get("result"), "net_cents": w.get("net")}
                                for name, w in (result.get("wagers") or {}).items()
                                if isinstance(w, Mapping)
                            },
                        },
                    }
                )
            community = self._visible_cards(round_, COMMUNITY_POSITION)
            dealer_cards = self._visible_cards(round_, DEALER_POSITION)
        return {
            "table_id": self.table_id,
            "game": (round_.game if round_ is not None and round_.game else self.game),
            "banking_mode": (
                round_.banking_mode if round_ is not None and round_.banking_mode else self.banking_mode
            ),
            "table_open": self.table_open,
            "phase": self.phase,
            "held": self.phase in {"held", "dead"}
            or any(a.severity == "latching" and a.state != "cleared" for a in self.alerts.values()),
            "last_seq": self.last_seq,
            "last_entry_utc": self.last_entry_utc,
            "button_seat": self.button_seat,
            "round": None
            if round_ is None
            else {
                "round_id": round_.round_id,
                "status": round_.status,
                "phase": round_.phase,
                "locked": round_.locked,
                "revealed": round_.cards_public,
                "designated_player_seat": round_.dp_seat,
                "designated_player_funds_cents": round_.dp_funds_cents,
                "dealer_cards": dealer_cards,
                "dealer_dealt": len(round_.cards.get(DEALER_POSITION, {})),
                "community": community,
                "community_dealt": len(round_.cards.get(COMMUNITY_POSITION, {})),
                "seats": seats,
                "banker_net_cents": None
                if round_.settlement is None
                else round_.settlement.get("banker_net"),
            },
            "active_alerts": sum(1 for a in self.alerts.values() if a.state != "cleared"),
        }

    def _visible_cards(self, round_: RoundView, position: int) -> list[str | None]:
        dealt = round_.cards.get(position, {})
        return [dealt[i] if round_.card_visible(position, i) else None for i in sorted(dealt)]


def public_recall(record: Mapping[str, Any]) -> dict[str, Any]:
    """A recall record (CONTRACTS.md) with what may not be shown removed.

    The record's own events are folded into a fresh view, so the gate is the same one the live
    stream uses, whatever the age of the round.
    """
    events = [_RecordEvent(record, event) for event in record.get("events", []) if isinstance(event, Mapping)]
    view = TableView()
    for event in events:
        view.apply(event)
    round_ = view.rounds.get(str(record.get("round_id")))
    out = dict(record)
    if round_ is None or not round_.cards_public or record.get("status") == "dead":
        out["round"] = scrub_cards(record.get("round"))
        out["settlement"] = scrub_cards(record.get("settlement"))
        out["faults"] = scrub_cards(record.get("faults", []))
    elif round_.dead_seats:
        dead = frozenset(round_.dead_seats)
        out["round"] = _scrub_dead_seats(record.get("round"), dead)
        out["settlement"] = _scrub_dead_seats(record.get("settlement"), dead)
    out["events"] = [view.public_entry(event) for event in events]
    return out


@dataclass(frozen=True, slots=True)
class _RecordEvent:
    """A recall record's event seen as an entry, so it goes through the same gate."""

    record: Mapping[str, Any]
    event: Mapping[str, Any]

    @property
    def seq(self) -> int:
        return int(self.event.get("seq", 0))

    @property
    def time_utc(self) -> str:
        return str(self.event.get("time_utc", ""))

    @property
    def table_id(self) -> str:
        return ""

    @property
    def round_id(self) -> str | None:
        return str(self.record.get("round_id"))

    @property
    def source(self) -> str:
        return str(self.event.get("source", ""))

    @property
    def kind(self) -> str:
        return str(self.event.get("kind", ""))

    @property
    def payload(self) -> Mapping[str, Any]:
        payload = self.event.get("payload")
        return payload if isinstance(payload, Mapping) else {}

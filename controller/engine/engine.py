"""The table engine: a synchronous core that runs the table from its devices' events.

No asyncio, no I/O, no clock: the shell feeds it domain events (drivers/events.py), operator actions
and the time (``now_s``, UTC seconds since the epoch, as ``time.time()`` gives), and acts on the outputs
it returns (see controller/engine/outputs.py), in order: journal records, device commands, alerts and
refusals. docs/engine.md describes the behaviour rule by rule.

Public API::

    engine = TableEngine(config, recovered=RecoveredState(...))
    outputs = engine.handle(event, now_s)            # any drivers.events.DomainEvent
    outputs = engine.tick(now_s)                     # deal and decision timeouts (about once a second)
    outputs = engine.start_round(now_s, by="dealer")
    outputs = engine.no_more_bets(now_s, by="dealer")
    outputs = engine.dp_accepts(funds_cents, now_s, by="dealer", seat=None)
    outputs = engine.dp_waives(now_s, by="dealer")
    outputs = engine.move_button(seat, now_s, by)
    outputs = engine.clear_fault(fault_id, now_s, by, reason)
    outputs = engine.void_round(reason, now_s, by)
    outputs = engine.set_limits(min_ante_cents, max_ante_cents, now_s, by)   # between rounds only
    outputs = engine.set_paytable(wager, spec, now_s, by)                    # between rounds only
    outputs = engine.open_table(now_s, by)
    outputs = engine.close_table(now_s, by, reason)                          # between rounds only
    outputs = engine.raise_alert(kind, detail, now_s, by="integrity")       # a watcher's alert
    engine.public_snapshot(); engine.private_snapshot()
    engine.state; engine.held; engine.table_open; engine.recovered_state()

Every entry point returns a list of outputs and never raises: an invalid event is refused (journaled
as a fault or returned as ``Refused``), and an unexpected error inside the engine raises a latching
``integrity`` fault and holds the table rather than escaping to the shell.
"""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from controller.engine import actions as a
from controller.engine import machine as m
from controller.engine.outputs import Alert, AlertSeverity, JournalRecord, Output, Refused
from controller.engine.state import DESIGNATED_PLAYER, HOUSE, LatchedFault, RecoveredState, TableConfig
from controller.errors import UserError
from controller.journal import entries
from controller.names import FAULT_KINDS as ALERT_KINDS  # the kinds an outside watcher may raise
from controller.rules.cards import DECK_SIZE, card_text, cards_text
from controller.rules.games import (
    CHASE_THE_FLUSH,
    GameSpec,
    check_bet_wagers,
    clockwise_from,
    decision_limits,
    game_spec,
)
from controller.rules.hands import evaluate
from controller.rules.paytables import DEFAULT_PRESET, parse_paytable
from controller.rules.settle import (
    MAX_AMOUNT_CENTS,
    NOT_COVERED,
    Settlement,
    cover_seats,
    parse_round,
    settle,
)
from drivers.events import (
    COMMUNITY_POSITION,
    DEALER_POSITION,
    BetChanged,
    CardDealt,
    Deal,
    DealerKey,
    DealStateReported,
    DeckVerified,
    DeviceLost,
    DeviceReady,
    DeviceStatusChanged,
    HandComplete,
    LockBets,
    ResetDevice,
    SecurityEvent,
    SetSpotLamp,
    ShowButton,
    ShowSeatResult,
    ShowText,
    Shuffle,
    ShufflerFault,
    SpotLampColour,
    UnlockBets,
)

ENGINE = "engine"

# The reason code a fault of each kind carries when its raiser names none (entries.ReasonCode).
# What the shoe's faults are called in public text, and their reason codes (drivers' ShufflerFaultKind).
_SHOE_FAULT_WORDS: dict[str, str] = {
    "card_count": "a card count fault",
    "misread": "a misread",
    "red_light": "a red light",
    "jam": "a jam",
    "door_open": "the door open",
}
_SHOE_FAULT_CODES: dict[str, str] = {
    "card_count": "card_count",
    "misread": "card_misread",
    "red_light": "red_light",
}

_FAULT_CODES: dict[str, str] = {
    "dead_hand": "card_count",
    "red_light": "red_light",
    "past_posting": "past_posting",
    "over_limit_raise": "over_limit",
    "device_lost": "device_lost",
    "journal_error": "engine_error",
    "security_event": "security_event",
    "shuffler_fault": "shoe_fault",
    "deck_verification": "deck_verification",
    "integrity": "engine_error",
}

# Seat statuses in a round.
LIVE = "live"
FOLDED = "folded"
DEAD = "dead"

# States after which the cards are face up and chips move legitimately (payouts): no past-posting.
_OUTCOME_STATES = (m.REVEAL, m.SETTLING, m.PAYING, m.COMPLETE)
_REVEALED_STATES = (m.REVEAL, m.SETTLING, m.PAYING, m.COMPLETE)


@dataclass(slots=True)
class SeatPlay:
    """One seat in the round: its locked wagers, its cards (private until the reveal), its decision."""

    seat: int
    wagers: dict[str, int]
    cards: list[int] = field(default_factory=list)
    status: str = LIVE
    dead_reason: str | None = None
    covered: bool = True
    decided: bool = False  # made its decision (raise/play/all-in or fold); Chase: all-in or fold
    street: str | None = None  # Chase: the street of the all-in
    pending_cents: int = 0  # chips on the decision spot during the open phase
    pending_refused: str | None = None  # why the chips on the decision spot are refused, if they are


@dataclass(slots=True)
class DealStep:
    """One Deal command in flight: what each position should get and what it got."""

    expected: dict[int, int]
    received: dict[int, list[int]] = field(default_factory=dict)
    completed: set[int] = field(default_factory=set)

    @property
    def done(self) -> bool:
        return self.completed >= set(self.expected)


@dataclass(slots=True)
class LiveRound:
    round_id: str
    banking: dict[str, object]
    button_seat: int | None
    seats: dict[int, SeatPlay]
    dealer_cards: list[int] = field(default_factory=list)
    community: list[int] = field(default_factory=list)
    seen_cards: set[int] = field(default_factory=set)
    deal: DealStep | None = None
    deal_deadline_s: float | None = (
        None  # the shoe must report by then (deal_timeout_s after its last report)
    )
    deal_finished: bool = False  # every card of the round dealt
    street: str | None = None  # the open decision phase
    decision_deadline_s: float | None = None
    settlement: Settlement | None = None
    wrong_positions: set[int] = field(default_factory=set)  # positions found dealt the wrong count
    closed: bool = False  # settled, dead or voided: its closing entry is journaled
    closed_dead: bool = False  # dead or voided: no card of it is ever shown
    finished: bool = False  # the machine has left the round (complete/dead -> idle or held)


_ACTION_TYPES = (
    a.StartRound,
    a.NoMoreBets,
    a.ConfirmDecisions,
    a.FoldSeat,
    a.PayoutsDone,
    a.DpAccepts,
    a.DpWaives,
    a.MoveButton,
    a.ClearFault,
    a.VoidRound,
    a.SetLimits,
    a.SetPaytable,
    a.OpenTable,
    a.CloseTable,
    a.Tick,
)


class _MachineHalted(Exception):
    """A transition's callback failed; the machine went to ``held``; stop the engine action."""


class RoundFlow:
    """The model the round ``Machine`` drives (kept separate from the machine, per STYLE.md).

    It holds the machine's state and the conditions the definition names; its callbacks only tell the
    engine what happened (the engine records outputs; the shell acts on them).
    """

    state: str

    def __init__(self, engine: TableEngine) -> None:
        self._engine = engine
        self.resume_target = m.IDLE

    def table_may_start(self, _event: object) -> bool:
        return self._engine._may_open_betting() is None

    def __getattr__(self, name: str) -> Callable[[object], bool]:
        # The definition guards each `resume` transition with `resume_to_<state>`.
        if name.startswith("resume_to_"):
            target = name.removeprefix("resume_to_")
            return lambda _event: self.resume_target == target
        raise AttributeError(name)

    def after_state_change(self, event: Any) -> None:
        self._engine._state_entered(event.transition.source, event.transition.dest, event.event.name)

    def on_machine_exception(self, event: Any) -> None:
        self._engine._machine_exception(event.error)


class TableEngine:
    """The synchronous table core (see the module docstring for the API)."""

    def __init__(self, config: TableConfig, recovered: RecoveredState | None = None) -> None:
        recovered = recovered or RecoveredState()
        self.config = config
        self.spec: GameSpec = game_spec(config.game)
        self.definition = m.definition(config.game)
        self.flow = RoundFlow(self)
        self.machine = m.build_machine(
            self.flow,
            config.game,
            on_exception="on_machine_exception",
            after_state_change="after_state_change",
        )
        self._out: list[Output] = []
        self._machine_failed = False
        self._now_s = 0.0
        self.latched: dict[str, LatchedFault] = {f.fault_id: f for f in recovered.latched_faults}
        self.rounds_started = recovered.rounds_started
        self.faults_raised = recovered.faults_raised
        self.button_seat: int | None = recovered.button_seat
        self.round: LiveRound | None = None
        self.spots: dict[tuple[int, int], int] = {}
        self.deck_verified = False
        self.device_health: dict[str, str] = {}
        # Designated player: the seat the button is offered to, who accepted with what funds, who waived.
        self.dp_seat: int | None = None
        self.dp_funds_cents = 0
        self.dp_waived: set[int] = set()
        self.dp_offer_seat: int | None = None
        self.house_banks = False  # DP table, nobody accepted, the house may bank: this round is house-banked
        self._past_posted: set[tuple[int, int]] = set()
        # A manager closed the table (journaled table_closed by an operator): no round starts.
        self.table_open = not recovered.table_closed
        self.closed_reason: str | None = recovered.closed_reason if recovered.table_closed else None
        self._apply_recovered_settings(recovered)
        if config.banking_mode == DESIGNATED_PLAYER:
            if self.button_seat not in config.seats:
                self.dp_offer_seat = config.seats[0]
            elif recovered.button_moves_on and self.button_seat is not None:
                self.dp_offer_seat = self._next_seat(self.button_seat)
            else:
                self.dp_offer_seat = self.button_seat
        if self.latched:
            self.flow.resume_target = m.IDLE
            self._fire("hold")
            self._out.clear()  # the hold on start restates the journal; nothing new to record

    # ================================================================== public entry points
    def handle(self, event: object, now_s: float) -> list[Output]:
        """Feed one domain event from a driver, or an operator action (controller/engine/actions.py);
        returns what to journal, send and show."""
        return self._run(now_s, lambda: self._dispatch(event))

    def tick(self, now_s: float) -> list[Output]:
        """Let time pass: a deal whose shoe went silent is a misdeal (deal_timeout_s); a decision phase
        past its deadline closes (the walk-away rule)."""
        return self._run(now_s, self._check_timeout)

    def start_round(self, now_s: float, by: str = "dealer") -> list[Output]:
        return self._run(now_s, lambda: self._start_round(by))

    def no_more_bets(self, now_s: float, by: str = "dealer") -> list[Output]:
        return self._run(now_s, lambda: self._no_more_bets(by))

    def confirm_decisions(self, now_s: float, by: str = "dealer") -> list[Output]:
        """The dealer closes the open decision phase (the display's `confirm` key)."""
        return self._run(now_s, lambda: self._close_decisions(cause="confirm", by=by))

    def fold(self, seat: int, now_s: float, by: str = "dealer") -> list[Output]:
        return self._run(now_s, lambda: self._fold(seat, by))

    def payouts_done(self, now_s: float, by: str = "dealer") -> list[Output]:
        """The dealer has paid and collected the chips (the display's `next` key while paying)."""
        return self._run(now_s, lambda: self._payouts_done(by))

    def dp_accepts(
        self, funds_cents: int, now_s: float, by: str = "dealer", seat: int | None = None
    ) -> list[Output]:
        """The player offered the button accepts it and posts ``funds_cents`` (designated-player mode)."""
        return self._run(now_s, lambda: self._dp_accepts(funds_cents, by, seat))

    def dp_waives(self, now_s: float, by: str = "dealer") -> list[Output]:
        return self._run(now_s, lambda: self._dp_waives(by))

    def move_button(self, seat: int, now_s: float, by: str) -> list[Output]:
        return self._run(now_s, lambda: self._move_button(seat, by))

    def clear_fault(self, fault_id: str, now_s: float, by: str, reason: str) -> list[Output]:
        return self._run(now_s, lambda: self._clear_fault(fault_id, by, reason))

    def adopt_clear(self, fault_id: str, now_s: float, by: str, reason: str) -> list[Output]:
        """A ``fault_cleared`` another process already journaled (`flushtable clear` while the daemon
        runs): the same effect as :meth:`clear_fault` without journaling the clearing a second time.
        A fault that is not latched (cleared here already) is left alone: no output at all."""
        if fault_id not in self.latched:
            return []
        return self._run(now_s, lambda: self._clear_fault(fault_id, by, reason, journaled=True))

    def void_round(self, reason: str, now_s: float, by: str) -> list[Output]:
        return self._run(now_s, lambda: self._void_round(reason, by))

    def set_limits(self, min_ante_cents: int, max_ante_cents: int, now_s: float, by: str) -> list[Output]:
        """A manager changes the table's ante limits, between rounds only (journaled operator_action)."""
        return self._run(now_s, lambda: self._set_limits(min_ante_cents, max_ante_cents, by))

    def set_paytable(self, wager: str, spec: object, now_s: float, by: str) -> list[Output]:
        """A manager changes a bonus wager's paytable (a preset's name or custom lines {"7": 300, ...}),
        between rounds only (journaled operator_action)."""
        return self._run(now_s, lambda: self._set_paytable(wager, spec, by))

    def open_table(self, now_s: float, by: str) -> list[Output]:
        """A manager opens a closed table (journaled table_opened)."""
        return self._run(now_s, lambda: self._open_table(by))

    def close_table(self, now_s: float, by: str, reason: str) -> list[Output]:
        """A manager closes the table between rounds: no round starts until it is opened (table_closed)."""
        return self._run(now_s, lambda: self._close_table(by, reason))

    def raise_alert(self, kind: str, detail: str, now_s: float, by: str = "integrity") -> list[Output]:
        """An outside watcher (the daemon's integrity watch) raises an alert: a ``fault_raised`` of
        severity "alert" with the engine's next fault id, the table's and not a round's (round_id None,
        even while a round is in play), and the ``Alert`` the shell logs. It does not latch or hold the
        table: the round in play goes on. A kind outside ``ALERT_KINDS`` or an empty detail is refused."""
        return self._run(now_s, lambda: self._raise_alert(kind, detail, by))

    @property
    def state(self) -> str:
        return self.flow.state

    @property
    def held(self) -> bool:
        """A held table starts no round: a latched fault stands."""
        return bool(self.latched)

    def recovered_state(self) -> RecoveredState:
        """The state a restart would recover from the journal now (for tests and the shell)."""
        return RecoveredState(
            latched_faults=tuple(self.latched.values()),
            button_seat=self.button_seat,
            rounds_started=self.rounds_started,
            faults_raised=self.faults_raised,
            table_closed=not self.table_open,
            closed_reason=self.closed_reason,
            min_ante_cents=self.config.min_ante_cents,
            max_ante_cents=self.config.max_ante_cents,
            paytables=dict(self.config.paytables),
            settings_config_digest=self.config.config_digest,
        )

    # ================================================================== snapshots
    def public_snapshot(self) -> dict[str, Any]:
        """What the panel and the table may show: no hole card before its reveal, never a dead hand's."""
        live = self.round
        revealed = live is not None and self.state in _REVEALED_STATES and not live.closed_dead
        seats: dict[str, object] = {}
        if live is not None:
            for number, play in sorted(live.seats.items()):
                seats[str(number)] = {
                    "status": play.status,
                    "covered": play.covered,
                    "wagers": dict(play.wagers),
                    "decided": play.decided,
                    "street": play.street,
                    "cards_dealt": len(play.cards),
                    "cards": cards_text(play.cards) if revealed and play.status != DEAD else None,
                }
        dealer_cards = None
        if live is not None and revealed:
            dealer_cards = cards_text(live.dealer_cards)
        settlement = None
        if live is not None and live.settlement is not None:
            settlement = live.settlement.to_json()
        return {
            "table_id": self.config.table_id,
            "game": self.config.game,
            "banking_mode": self.config.banking_mode,
            "state": self.state,
            "held": self.held,
            "table_open": self.table_open,
            "closed_reason": self.closed_reason,
            "limits": {
                "min_ante_cents": self.config.min_ante_cents,
                "max_ante_cents": self.config.max_ante_cents,
            },
            "paytables": {wager: self._paytable_in_effect(wager) for wager in self.spec.bonus_wagers},
            "latched_faults": [fault.to_json() for fault in self.latched.values()],
            "button_seat": self.button_seat,
            "designated_player": self._dp_public(),
            "round_id": None if live is None else live.round_id,
            "street": None if live is None else live.street,
            "decision_deadline_s": None if live is None else live.decision_deadline_s,
            "seats": seats,
            "dealer_cards": dealer_cards,
            "dealer_cards_dealt": 0 if live is None else len(live.dealer_cards),
            # Community cards are dealt face up: public as soon as they are dealt (unless the round died).
            "community": [] if live is None or live.closed_dead else cards_text(live.community),
            "settlement": settlement,
            "spots": {f"{seat}:{spot}": amount for (seat, spot), amount in sorted(self.spots.items())},
            "devices": dict(self.device_health),
        }

    def private_snapshot(self) -> dict[str, Any]:
        """Everything, hole cards included: for the journal's recovery checks and tests, never a display."""
        snapshot = self.public_snapshot()
        live = self.round
        if live is not None:
            snapshot["hole_cards"] = {str(n): cards_text(p.cards) for n, p in sorted(live.seats.items())}
            snapshot["dealer_hole_cards"] = cards_text(live.dealer_cards)
            snapshot["community"] = cards_text(live.community)
        return snapshot

    def _dp_public(self) -> dict[str, object] | None:
        if self.config.banking_mode != DESIGNATED_PLAYER:
            return None
        return {
            "seat": self.dp_seat,
            "funds_cents": self.dp_funds_cents,
            "offered_to": self.dp_offer_seat,
            "waived": sorted(self.dp_waived),
            "house_banks": self.house_banks,
        }

    # ================================================================== plumbing
    def _run(self, now_s: float, action: Callable[[], None]) -> list[Output]:
        self._now_s = now_s
        try:
            action()
        except _MachineHalted:
            pass  # already held and journaled by _machine_exception
        except Exception as error:  # never out of the engine: hold the table for a supervisor
            self._internal_error(error)
        out, self._out = self._out, []
        return out

    def _internal_error(self, error: BaseException) -> None:
        self._raise_fault("integrity", f"engine error: {type(error).__name__}: {error}", latching=True)
        try:
            if self.state != m.HELD:
                self._hold()
        except Exception:  # the machine itself is broken: force the state, the fault is latched
            self.machine.set_state(m.HELD, model=self.flow)

    def _machine_exception(self, error: BaseException | None) -> None:
        """``on_exception``: a callback failed inside a transition; the round goes to ``held``, and the
        engine action that fired the transition stops there (see :meth:`_fire`)."""
        self._raise_fault("integrity", f"round machine error: {type(error).__name__}: {error}", latching=True)
        if self.state != m.HELD:
            self.flow.resume_target = self.state if self.state in self.definition.resumable_states else m.IDLE
            self._fire("hold")  # queued: runs once the failed transition has unwound
        self._machine_failed = True

    def _fire(self, trigger: str) -> None:
        if trigger not in self.machine.get_triggers(self.state):
            raise RuntimeError(f"trigger {trigger!r} is not valid in state {self.state!r}")
        getattr(self.flow, trigger)()
        if self._machine_failed:
            # The transition failed and the table is held: nothing after it may act (no Deal may go
            # out from a held table).
            self._machine_failed = False
            raise _MachineHalted

    def _can(self, trigger: str) -> bool:
        return trigger in self.machine.get_triggers(self.state)

    def _journal(
        self, kind: str, payload: Mapping[str, object], *, source: str = ENGINE, table_wide: bool = False
    ) -> None:
        round_id = None
        if self.round is not None and not self.round.finished and not table_wide:
            round_id = self.round.round_id
        self._out.append(JournalRecord(kind, entries.build(kind, payload), round_id, source))

    def _alert(
        self,
        severity: AlertSeverity,
        kind: str,
        message: str,
        fault_id: str | None = None,
        *,
        table_wide: bool = False,
    ) -> None:
        round_id = self.round.round_id if self.round is not None and not table_wide else None
        self._out.append(Alert(severity, kind, message, round_id, fault_id))

    def _refuse(
        self, action: str, reason: str, by: str | None = None, *, private_detail: str | None = None
    ) -> None:
        """``reason`` is public (said to the operator, journaled, shown); ``private_detail``, when the
        refusal speaks of a hand, is journaled in the entry's private part only."""
        self._out.append(Refused(action, reason))
        if by is not None:
            payload: dict[str, object] = {"action": action, "by": by, "detail": f"refused: {reason}"}
            if private_detail is not None:
                payload["refusal_detail"] = private_detail
            self._journal("operator_action", payload, source=f"operator:{by}")

    def _raise_fault(
        self,
        kind: str,
        detail: str,
        *,
        latching: bool,
        device: str | None = None,
        source: str = ENGINE,
        by: str | None = None,
        table_wide: bool = False,
        code: str | None = None,
        private: Mapping[str, object] | None = None,
    ) -> str:
        """``detail`` is public: built from seats, amounts, devices and counts, never a card. What a
        fault knows of cards (which card, where) goes in ``private`` (entries.ReasonDetail's fields)."""
        self.faults_raised += 1
        fault_id = f"F{self.config.table_id}-{self.faults_raised:06d}"
        severity: AlertSeverity = "latching" if latching else "alert"
        payload: dict[str, object] = {
            "fault_id": fault_id,
            "kind": kind,
            "severity": severity,
            "reason": {"code": code or _FAULT_CODES.get(kind, "operator"), "message": detail},
            "device": device,
            **(private or {}),
        }
        if by is not None:
            payload["by"] = by  # who raised it, when not the engine itself (the integrity watch)
        self._journal("fault_raised", payload, source=source, table_wide=table_wide)
        if latching:
            round_id = self.round.round_id if self.round is not None and not self.round.closed else None
            self.latched[fault_id] = LatchedFault(fault_id, kind, detail, device, round_id)
        self._alert(severity, kind, detail, fault_id, table_wide=table_wide)
        return fault_id

    def _raise_alert(self, kind: str, detail: str, by: str) -> None:
        if kind not in ALERT_KINDS:
            self._refuse(
                "raise_alert", f"kind: unknown alert kind {kind!r} (one of {', '.join(sorted(ALERT_KINDS))})"
            )
            return
        if not detail.strip():
            self._refuse("raise_alert", "detail: must say what is wrong, not be empty")
            return
        if not by.strip():
            self._refuse("raise_alert", "by: must name who raises the alert")
            return
        # Raised from outside the round (the integrity watch): its own code, not an engine error.
        code = "integrity_check" if kind == "integrity" else None
        self._raise_fault(kind, detail, latching=False, by=by, table_wide=True, code=code)

    def _hold(self) -> None:
        """Hold the table (and the round, where it stands) for a supervisor."""
        if self.state == m.HELD:
            return
        self.flow.resume_target = self.state if self.state in self.definition.resumable_states else m.IDLE
        self._fire("hold")
        self._out.append(ShowText(self.config.display_device, "Table held: call a supervisor"))

    def _state_entered(self, source: str, dest: str, trigger: str) -> None:
        self._journal("state_changed", {"machine": "round", "from": source, "to": dest, "trigger": trigger})

    # ================================================================== events
    def _dispatch(self, event: object) -> None:
        if isinstance(event, _ACTION_TYPES):
            self._dispatch_action(event)
        elif isinstance(event, BetChanged):
            self._on_bet_changed(event)
        elif isinstance(event, CardDealt):
            self._on_card_dealt(event)
        elif isinstance(event, HandComplete):
            self._on_hand_complete(event)
        elif isinstance(event, DeckVerified):
            self._on_deck_verified(event)
        elif isinstance(event, ShufflerFault):
            self._on_shuffler_fault(event)
        elif isinstance(event, DealStateReported):
            self._on_deal_state_reported(event)
        elif isinstance(event, DealerKey):
            self._on_dealer_key(event)
        elif isinstance(event, DeviceReady):
            self.device_health[event.device] = "ready"
            self._journal(
                "device_ready",
                {
                    "device": event.device,
                    "kind": event.kind,
                    "model": event.model,
                    "serial_number": event.serial_number,
                    "firmware_version": event.firmware_version,
                },
                source=event.device,
            )
        elif isinstance(event, DeviceLost):
            self._on_device_lost(event)
        elif isinstance(event, SecurityEvent):
            self._journal(
                "security_event",
                {"device": event.device, "reason": event.reason, "detail": event.detail},
                source=event.device,
            )
            self._raise_fault(
                "security_event",
                f"{event.device}: {event.reason} {event.detail}".strip(),
                latching=False,
                device=event.device,
                source=event.device,
            )
        elif isinstance(event, DeviceStatusChanged):
            self.device_health[event.device] = event.state
            self._journal(
                "device_status",
                {
                    "device": event.device,
                    "state": event.state,
                    "fault_code": event.fault_code,
                    "lamp": event.lamp,
                },
                source=event.device,
            )
        else:
            self._raise_fault("integrity", f"unknown event refused: {type(event).__name__}", latching=False)

    def _dispatch_action(self, action: a.OperatorAction) -> None:
        if isinstance(action, a.StartRound):
            self._start_round(action.by)
        elif isinstance(action, a.NoMoreBets):
            self._no_more_bets(action.by)
        elif isinstance(action, a.ConfirmDecisions):
            self._close_decisions(cause="confirm", by=action.by)
        elif isinstance(action, a.FoldSeat):
            self._fold(action.seat, action.by)
        elif isinstance(action, a.PayoutsDone):
            self._payouts_done(action.by)
        elif isinstance(action, a.DpAccepts):
            self._dp_accepts(action.funds_cents, action.by, action.seat)
        elif isinstance(action, a.DpWaives):
            self._dp_waives(action.by)
        elif isinstance(action, a.MoveButton):
            self._move_button(action.seat, action.by)
        elif isinstance(action, a.ClearFault):
            self._clear_fault(action.fault_id, action.by, action.reason)
        elif isinstance(action, a.VoidRound):
            self._void_round(action.reason, action.by)
        elif isinstance(action, a.SetLimits):
            self._set_limits(action.min_ante_cents, action.max_ante_cents, action.by)
        elif isinstance(action, a.SetPaytable):
            self._set_paytable(action.wager, action.spec, action.by)
        elif isinstance(action, a.OpenTable):
            self._open_table(action.by)
        elif isinstance(action, a.CloseTable):
            self._close_table(action.by, action.reason)
        else:
            self._check_timeout()

    # ------------------------------------------------------------------ bets
    def _on_bet_changed(self, event: BetChanged) -> None:
        source = event.device
        valid_seat = 1 <= event.seat <= 7 and 0 <= event.spot < len(self.spec.wagers)
        if not valid_seat or event.amount_cents < 0 or event.chip_count < 0:
            self._raise_fault(
                "integrity",
                f"bet sensor report refused: seat {event.seat} spot {event.spot} amount {event.amount_cents}",
                latching=False,
                device=event.device,
                source=source,
            )
            return
        wager = self.spec.wagers[event.spot]
        key = (event.seat, event.spot)
        before = self.spots.get(key, 0)
        self.spots[key] = event.amount_cents
        live = self.round
        locked = live is not None and self.state not in (m.IDLE, m.BETTING) and not live.closed
        self._journal(
            "bet_changed",
            {
                "seat": event.seat,
                "wager": wager,
                "amount_cents": event.amount_cents,
                "chip_count": event.chip_count,
                "locked": locked,
            },
            source=source,
        )
        if live is None or not locked or self.state in _OUTCOME_STATES:
            return  # before the lock bets are free; after the reveal chips move for the payout
        play = live.seats.get(event.seat)
        decision_spot = self.spec.wagers.index(self.spec.decision_wager)
        if (
            play is not None
            and event.spot == decision_spot
            and live.street is not None
            and play.status == LIVE
            and play.covered
            and not play.decided
        ):
            self._decision_chips(play, event.amount_cents)
            return
        if play is not None and (play.status == DEAD or not play.covered):
            return  # a dead seat's wagers go back whatever the chips do
        expected = self._expected_amount(play, event.spot)
        if event.amount_cents == expected:
            return
        if (
            play is not None
            and play.status == FOLDED
            and event.amount_cents == 0
            and wager in self._forfeit_on_fold()
        ):
            return  # the dealer collected a folded seat's forfeited chips
        if key in self._past_posted and before != expected:
            return  # already flagged and held for this spot
        self._past_posted.add(key)
        self._journal(
            "past_posting",
            {"seat": event.seat, "wager": wager, "locked_cents": expected, "seen_cents": event.amount_cents},
        )
        self._raise_fault(
            "past_posting",
            f"seat {event.seat} {wager}: {expected} locked, {event.amount_cents} seen after the lock",
            latching=True,
            device=event.device,
        )
        self._hold()

    def _expected_amount(self, play: SeatPlay | None, spot: int) -> int:
        if play is None:
            return 0
        return play.wagers.get(self.spec.wagers[spot], 0)

    def _forfeit_on_fold(self) -> tuple[str, ...]:
        if self.config.game == CHASE_THE_FLUSH:
            return ("ante", "xtra_bonus")
        if self._banking_mode() == DESIGNATED_PLAYER:
            return ("ante", *self.spec.bonus_wagers)
        return ("ante",)

    # ------------------------------------------------------------------ starting and locking
    def _banking_mode(self) -> str:
        if self.config.banking_mode == DESIGNATED_PLAYER and not self.house_banks:
            return DESIGNATED_PLAYER
        return HOUSE

    def _may_open_betting(self) -> str | None:
        """None when a round may start, else the reason it may not."""
        if self.latched:
            return f"the table is held: {len(self.latched)} latched fault(s) to clear"
        if not self.table_open:
            return "the table is closed: a manager opens it"
        lost = sorted(d for d, health in self.device_health.items() if health in ("lost", "fault"))
        if lost:
            return f"device(s) not ready: {', '.join(lost)}"
        if self.config.banking_mode == DESIGNATED_PLAYER and self.dp_seat is None and not self.house_banks:
            if self.dp_offer_seat is None:
                return "nobody accepted the designated player's button and the house may not bank"
            return f"the button is offered to seat {self.dp_offer_seat}: accept or waive first"
        return None

    def _start_round(self, by: str) -> None:
        if self.latched:
            self._refuse(
                "start_round", f"the table is held: {len(self.latched)} latched fault(s) to clear", by
            )
            return
        if not self.table_open:
            self._refuse("start_round", "the table is closed: a manager opens it", by)
            return
        if self.state != m.IDLE:
            self._refuse("start_round", f"a round is already in progress ({self.state})", by)
            return
        why_not = self._may_open_betting()
        if why_not is not None:
            self._refuse("start_round", why_not, by)
            return
        self.round = None
        self._past_posted.clear()
        self.deck_verified = False
        self._fire("open_betting")
        self._out.append(UnlockBets(self.config.sensors_device))
        self._out.append(Shuffle(self.config.shuffler_device))
        if self.button_seat is not None:
            self._out.append(ShowButton(self.config.display_device, self.button_seat))
        self._out.append(ShowText(self.config.display_device, "Place your bets"))

    def _locked_wagers(self) -> tuple[dict[int, dict[str, int]], str | None]:
        """The wagers on the table at the lock, by seat, or the reason the lock is refused."""
        wagers_by_seat: dict[int, dict[str, int]] = {}
        decision = self.spec.decision_wager
        for (seat, spot), amount in sorted(self.spots.items()):
            if amount <= 0:
                continue
            if seat not in self.config.seats:
                return {}, f"seat {seat}: chips on a seat the table does not have"
            if self._banking_mode() == DESIGNATED_PLAYER and seat == self.dp_seat:
                return {}, f"seat {seat} is the designated player's: it places no wagers"
            wager = self.spec.wagers[spot]
            if wager == decision:
                return {}, f"seat {seat}: chips on the {decision} spot before the cards are seen"
            wagers_by_seat.setdefault(seat, {})[wager] = amount
        for seat, wagers in wagers_by_seat.items():
            ante = wagers.get("ante", 0)
            if ante == 0:
                return {}, f"seat {seat}: wagers without an ante"
            if not self.config.min_ante_cents <= ante <= self.config.max_ante_cents:
                return {}, (
                    f"seat {seat}: ante {ante} outside the table's limits "
                    f"{self.config.min_ante_cents}..{self.config.max_ante_cents}"
                )
            if self.config.game == CHASE_THE_FLUSH and wagers.get("xtra_bonus", 0) != ante:
                return {}, f"seat {seat}: the X-tra Bonus must equal the ante ({ante})"
            try:  # whatever else the settle engine would refuse, refuse now, before a card is dealt
                check_bet_wagers(self.config.game, wagers, field="wagers")
            except UserError as error:
                return {}, f"seat {seat}: {error}"
        if not wagers_by_seat:
            return {}, "no seat has an ante"
        if len(wagers_by_seat) > self.spec.max_players:
            return (
                {},
                f"{len(wagers_by_seat)} seats bet, but {self.config.game} seats at most "
                f"{self.spec.max_players}",
            )
        return wagers_by_seat, None

    def _no_more_bets(self, by: str) -> None:
        if self.state != m.BETTING:
            self._refuse("no_more_bets", f"no betting is open ({self.state})", by)
            return
        wagers_by_seat, why_not = self._locked_wagers()
        if why_not is not None:
            self._refuse("no_more_bets", why_not, by)
            self._alert("alert", "bets_refused", f"no more bets refused: {why_not}")
            return
        self.rounds_started += 1
        day = datetime.datetime.fromtimestamp(self._now_s, tz=datetime.UTC).strftime("%Y%m%d")
        round_id = f"R{self.config.table_id}-{day}-{self.rounds_started:06d}"
        banking: dict[str, object] = {"mode": self._banking_mode()}
        if self._banking_mode() == DESIGNATED_PLAYER:
            banking["seat"] = self.dp_seat
            banking["funds"] = self.dp_funds_cents
            if self.config.bonus_cap_cents is not None:
                banking["bonus_cap"] = self.config.bonus_cap_cents
        seats = {seat: SeatPlay(seat, dict(wagers)) for seat, wagers in sorted(wagers_by_seat.items())}
        self.round = LiveRound(round_id, banking, self.button_seat, seats)
        # round_started first: every later entry of the round, the state change included, follows it.
        self._journal(
            "round_started",
            {
                "round_id": round_id,
                "game": self.config.game,
                "banking": dict(banking),
                "button_seat": self.button_seat,
                "seats": sorted(seats),
            },
        )
        self._fire("lock_bets")
        self._journal(
            "bets_locked",
            {"wagers": {str(seat): dict(play.wagers) for seat, play in sorted(seats.items())}},
            source=f"operator:{by}" if by != ENGINE else ENGINE,
        )
        if banking["mode"] == DESIGNATED_PLAYER:
            self._check_coverage()
        self._out.append(LockBets(self.config.sensors_device))
        self._out.append(ShowText(self.config.display_device, "No more bets"))
        self._maybe_start_deal()

    def _check_coverage(self) -> None:
        """Designated player: take seats into action in order while the DP's funds cover each seat's
        ante plus its largest possible raise; an uncovered seat is dead (RULES.md "Funds"). The settle
        engine's own ``cover_seats`` decides, so the lock and the settlement always agree."""
        live = self.round
        assert live is not None
        assert self.dp_seat is not None
        antes = {number: play.wagers["ante"] for number, play in live.seats.items()}
        coverage = cover_seats(self.config.game, self.dp_seat, self.dp_funds_cents, antes)
        for number in coverage.action_order:
            if number in coverage.covered:
                continue
            play = live.seats[number]
            play.covered = False
            play.status = DEAD
            play.dead_reason = NOT_COVERED
            self._journal(
                "dead_hand",
                {"seat": number, "reason": {"code": "not_covered", "message": NOT_COVERED, "seat": number}},
            )
            self._out.append(ShowSeatResult(self.config.display_device, number, "dead", 0))

    # ------------------------------------------------------------------ the deal
    def _on_deck_verified(self, event: DeckVerified) -> None:
        self._journal(
            "deck_verified",
            {
                "card_count": event.card_count,
                "missing_count": len(event.missing_cards),
                "extra_count": len(event.extra_cards),
                "missing": [card_text(c) for c in event.missing_cards if 0 <= c < DECK_SIZE],
                "extra": [card_text(c) for c in event.extra_cards if 0 <= c < DECK_SIZE],
            },
            source=event.device,
        )
        if not event.complete:
            self.deck_verified = False
            self._raise_fault(
                "deck_verification",
                f"the shoe read {event.card_count} cards, {len(event.missing_cards)} missing, "
                f"{len(event.extra_cards)} read twice",
                latching=True,
                device=event.device,
                source=event.device,
            )
            if self.state in (m.BETTING, m.BETS_LOCKED):
                self._hold()
            return
        if self.state in (m.IDLE, m.BETTING, m.BETS_LOCKED):
            self.deck_verified = True
        self._maybe_start_deal()

    def _maybe_start_deal(self) -> None:
        if self.state != m.BETS_LOCKED or not self.deck_verified or self.round is None:
            return
        live = self.round
        # An uncovered seat is dead from the lock: it is not dealt (as a dealer deals no dead seat).
        positions: list[tuple[int, int]] = [
            (number, self.spec.hole_cards) for number in sorted(live.seats) if live.seats[number].covered
        ]
        positions.append((DEALER_POSITION, self.spec.hole_cards))
        self.deck_verified = False  # one deck, one round
        self._fire("start_deal")
        self._send_deal(positions)

    def _send_deal(self, positions: list[tuple[int, int]]) -> None:
        assert self.round is not None
        self.round.deal = DealStep(expected=dict(positions))
        self.round.deal_deadline_s = self._now_s + self.config.deal_timeout_s
        self._out.append(Deal(self.config.shuffler_device, tuple(positions)))

    def _position_name(self, position: int) -> str:
        if position == DEALER_POSITION:
            return "the banker"
        if position == COMMUNITY_POSITION:
            return "the community"
        return f"seat {position}"

    def _on_card_dealt(self, event: CardDealt) -> None:
        card_ok = 0 <= event.card < DECK_SIZE
        self._journal(
            "card_dealt",
            {
                "position": event.position,
                "index": event.index,
                "card": card_text(event.card) if card_ok else None,
            },
            source=event.device,
        )
        live = self.round
        if live is not None and live.closed_dead and live.deal is not None:
            return  # the rest of a dead round's deal: journaled, never judged or shown
        self._shoe_reported()
        step = live.deal if live is not None else None
        if live is None or step is None or not self._dealing_now():
            # Where the card went is the card's business: private, with the card.
            self._raise_fault(
                "integrity",
                "a card dealt outside a deal",
                latching=False,
                device=event.device,
                source=event.device,
                code="card_outside_round",
                private={"card": event.card, "position": event.position, "index": event.index},
            )
            if live is not None and card_ok:
                if event.card in live.seen_cards and not live.closed:
                    self._kill_round(
                        "a card seen twice during the deal",
                        code="card_repeated",
                        private={"card": event.card, "position": event.position, "index": event.index},
                    )
                    return
                live.seen_cards.add(event.card)
            return
        if not card_ok:
            self._wrong_count(
                event.position,
                "an unreadable card",
                code="card_misread",
                private={"card": event.card, "position": event.position, "index": event.index},
            )
            return
        if event.card in live.seen_cards:
            self._kill_round(
                "a card seen twice during the deal",
                code="card_repeated",
                private={"card": event.card, "position": event.position, "index": event.index},
            )
            return
        live.seen_cards.add(event.card)
        if event.position not in step.expected:
            if event.position in (DEALER_POSITION, COMMUNITY_POSITION) or event.position in live.seats:
                self._wrong_count(event.position, "a card dealt to a position not in this deal")
            else:
                self._raise_fault(
                    "integrity",
                    "a card dealt to a position not in the round",
                    latching=False,
                    device=event.device,
                    code="card_outside_round",
                    private={"card": event.card, "position": event.position, "index": event.index},
                )
            return
        received = step.received.setdefault(event.position, [])
        received.append(event.card)
        self._hand_of(event.position).append(event.card)
        if event.position in step.completed:
            self._wrong_count(event.position, "a card dealt after the position was complete")
        elif event.index != len(received) - 1:
            self._wrong_count(
                event.position,
                "a card out of order",
                code="card_out_of_order",
                private={
                    "position": event.position,
                    "index": event.index,
                    "message": f"card index {event.index} where {len(received) - 1} was due",
                },
            )
        elif len(received) > step.expected[event.position]:
            self._wrong_count(
                event.position, f"{len(received)} cards dealt, {step.expected[event.position]} due"
            )

    def _shoe_reported(self) -> None:
        """The shoe is alive: the deal's silence deadline starts again from now."""
        live = self.round
        if live is not None and live.deal is not None and not live.closed:
            live.deal_deadline_s = self._now_s + self.config.deal_timeout_s

    def _check_deal_timeout(self) -> None:
        """A deal in flight whose shoe has gone silent cannot be completed: the banker (dealt last)
        and any seat still short are dealt the wrong number, so the round is dead (RULES.md "Dead
        hands": the banker's wrong count kills the round) and the table is held for a supervisor."""
        live = self.round
        if (
            live is None
            or live.closed
            or live.deal is None
            or live.deal_deadline_s is None
            or not self._dealing_now()
            or self._now_s < live.deal_deadline_s
        ):
            return
        self._end_incomplete_deal(
            f"the shoe stopped reporting mid-deal: nothing for {self.config.deal_timeout_s:g} s"
        )

    def _on_deal_state_reported(self, event: DealStateReported) -> None:
        """The shoe's answer to the driver's question after a reconnect. A deal in flight that the shoe
        holds goes on (its remaining cards follow, or all have arrived: they precede the answer). One it
        does not hold - it never got the request, or lost it with its power, or a fault stopped it -
        can never complete: it ends now, as a silent shoe's would at deal_timeout_s."""
        live = self.round
        if event.device != self.config.shuffler_device or live is None or live.deal is None:
            return
        if not self._dealing_now():
            return
        if event.deal in ("dealing", "complete") and dict(event.positions) == live.deal.expected:
            return
        self._end_incomplete_deal(
            f"the shoe came back without this deal (it reports {event.deal}, "
            f"{event.cards_reported} cards reported)"
        )

    def _end_incomplete_deal(self, why: str) -> None:
        """The deal in flight cannot be completed: the banker or the community short kills the round,
        seats short are dead hands and the round goes on."""
        live = self.round
        assert live is not None
        assert live.deal is not None
        step = live.deal
        short = [position for position in step.expected if position not in step.completed]
        names = ", ".join(self._position_name(position) for position in short)
        if any(position in (DEALER_POSITION, COMMUNITY_POSITION) for position in short):
            self._kill_round(f"{why}, {names} not complete (a misdeal)")
            return
        # The banker (and the community) are complete: only seats are short. RULES.md: a seat dealt the
        # wrong number is dead, the round goes on without it.
        for position in short:
            self._wrong_count(position, f"{why}, its hand not complete")
            step.completed.add(position)
        if step.done and self.state in self.definition.dealing_states:
            self._deal_step_done()

    def _dealing_now(self) -> bool:
        """A Deal is in flight: in a dealing state, or held from one (the shoe does not stop)."""
        live = self.round
        if live is None or live.deal is None or live.closed:
            return False
        if self.state == m.HELD:
            return self.flow.resume_target in self.definition.dealing_states
        return self.state in self.definition.dealing_states

    def _hand_of(self, position: int) -> list[int]:
        live = self.round
        assert live is not None
        if position == DEALER_POSITION:
            return live.dealer_cards
        if position == COMMUNITY_POSITION:
            return live.community
        return live.seats[position].cards

    def _on_hand_complete(self, event: HandComplete) -> None:
        self._journal(
            "hand_complete", {"position": event.position, "card_count": event.card_count}, source=event.device
        )
        live = self.round
        if live is not None and live.closed_dead and live.deal is not None:
            return  # the rest of a dead round's deal
        self._shoe_reported()
        step = live.deal if live is not None else None
        if live is None or step is None or not self._dealing_now():
            self._raise_fault(
                "integrity",
                f"hand complete for position {event.position} outside a deal",
                latching=False,
                device=event.device,
                source=event.device,
            )
            return
        if event.position not in step.expected:
            if event.position in (DEALER_POSITION, COMMUNITY_POSITION) or event.position in live.seats:
                self._wrong_count(event.position, "hand complete for a position not in this deal")
            else:
                self._raise_fault(
                    "integrity",
                    f"hand complete for position {event.position}, which is not in the round",
                    latching=False,
                    device=event.device,
                )
            return
        if event.position in step.completed:
            self._wrong_count(event.position, "hand complete reported twice")
            return
        step.completed.add(event.position)
        due = step.expected[event.position]
        got = len(step.received.get(event.position, ()))
        if event.card_count != due:
            self._wrong_count(event.position, f"the shoe counted {event.card_count} cards, {due} due")
        elif got != due:
            self._wrong_count(event.position, f"{got} cards read, {due} due")
        if step.done and self.state in self.definition.dealing_states:
            self._deal_step_done()
        # Held mid-deal (past-posting, a lost sensor): the shoe finishes the step; the round moves on
        # from it when the supervisor clears the hold (see _clear_fault).

    def _wrong_count(
        self,
        position: int,
        detail: str,
        *,
        code: str = "card_count",
        private: Mapping[str, object] | None = None,
    ) -> None:
        """RULES.md: a seat dealt the wrong number is dead; the banker or the community: the round is.
        ``detail`` is public (no card); ``private`` carries what the deal knew of the cards."""
        live = self.round
        assert live is not None
        if position in live.wrong_positions:
            return  # already judged (the shoe's count and the driver's card_count fault say it twice)
        live.wrong_positions.add(position)
        if position in (DEALER_POSITION, COMMUNITY_POSITION):
            self._kill_round(
                f"wrong card count for {self._position_name(position)}: {detail}", code=code, private=private
            )
            return
        play = live.seats.get(position)
        if play is None or play.status == DEAD:
            return
        play.status = DEAD
        play.dead_reason = f"wrong card count: {detail}"
        self._journal(
            "dead_hand",
            {
                "seat": position,
                "reason": {"code": code, "message": play.dead_reason, "seat": position},
                **(private or {}),
            },
        )
        self._raise_fault(
            "dead_hand", f"seat {position}: {play.dead_reason}", latching=False, code=code, private=private
        )
        self._out.append(ShowSeatResult(self.config.display_device, position, "dead", 0))

    def _deal_step_done(self) -> None:
        live = self.round
        assert live is not None
        live.deal = None
        live.deal_deadline_s = None
        if self.state == m.DEALING_TURN_RIVER or (
            self.state == m.DEALING and self.config.game != CHASE_THE_FLUSH
        ):
            live.deal_finished = True
        self._fire("deal_complete")
        self._open_decisions()

    # ------------------------------------------------------------------ decisions
    def _open_decisions(self) -> None:
        live = self.round
        assert live is not None
        street = self.state
        live.street = street
        live.decision_deadline_s = self._now_s + self.config.decision_timeout_s
        for play in live.seats.values():
            play.pending_cents = 0
            play.pending_refused = None
        decision_spot = self.spec.wagers.index(self.spec.decision_wager)
        # Chips already on a decision spot (placed early) count as soon as the phase opens.
        for number, play in live.seats.items():
            if self._undecided(play):
                amount = self.spots.get((number, decision_spot), 0)
                if amount:
                    self._decision_chips(play, amount)
        label = (
            f"{self.spec.decision_wager} or fold"
            if street == m.DECISIONS
            else f"{street}: all in or {'fold' if street == m.RIVER else 'check'}"
        )
        self._out.append(ShowText(self.config.display_device, f"Decisions: {label}"))
        if not any(self._undecided(play) for play in live.seats.values()):
            self._close_decisions(cause="nobody to act", by=None)

    def _undecided(self, play: SeatPlay) -> bool:
        return play.status == LIVE and play.covered and not play.decided

    def _seat_limits(self, play: SeatPlay) -> tuple[int, int]:
        live = self.round
        assert live is not None
        street = live.street if self.config.game == CHASE_THE_FLUSH else None
        hand = evaluate([*play.cards, *live.community])
        return decision_limits(self.config.game, hand, play.wagers["ante"], street)

    def _decision_chips(self, play: SeatPlay, amount_cents: int) -> None:
        """Chips on the decision spot during the phase: checked against the seat's actual cards."""
        play.pending_cents = amount_cents
        play.pending_refused = None
        if amount_cents == 0:
            return
        low, high = self._seat_limits(play)
        if low <= amount_cents <= high:
            return
        hand = evaluate([*play.cards, *(self.round.community if self.round else [])])
        allowed = f"exactly {low}" if low == high else f"{low} to {high}"
        why = (
            f"on the {self.round.street if self.round else ''}"
            if self.config.game == CHASE_THE_FLUSH
            else f"with a {hand.flush_length}-card flush"
        )
        over = amount_cents > high
        # The limit speaks of the hand (a 3-card flush, a street's cards): private until the reveal.
        limit_detail = f"{'over' if over else 'under'} the limit: {allowed} {why}"
        action = self.spec.decision_wager
        # The public reason names the seat and the amount only: never the hand.
        message = (
            f"seat {play.seat}: {action} of {amount_cents} refused ({'over' if over else 'under'} the limit)"
        )
        play.pending_refused = message
        self._journal(
            "decision_refused",
            {
                "seat": play.seat,
                "action": action,
                "amount_cents": amount_cents,
                "reason": {
                    "code": "over_limit" if over else "under_limit",
                    "message": message,
                    "seat": play.seat,
                },
                "limit_detail": limit_detail,
            },
        )
        if over:
            self._raise_fault("over_limit_raise", message, latching=False)
        else:  # too little is a mistake to correct, not a fault (no fault kind for it in docs/journal.md)
            self._alert("alert", "decision_refused", message)

    def _fold(self, seat: int, by: str) -> None:
        live = self.round
        if live is None or self.state not in self.definition.decision_states:
            self._refuse("fold", "no decision phase is open", by)
            return
        play = live.seats.get(seat)
        if play is None or not self._undecided(play):
            self._refuse("fold", f"seat {seat} has no decision to make", by)
            return
        if self.config.game == CHASE_THE_FLUSH and live.street != m.RIVER:
            self._refuse("fold", f"seat {seat}: before the river a player checks or goes all in", by)
            return
        self._decide(play, "fold", 0, cause="dealer_key")

    def _decide(self, play: SeatPlay, action: str, amount_cents: int, *, cause: str) -> None:
        live = self.round
        assert live is not None
        street = live.street if self.config.game == CHASE_THE_FLUSH else None
        if action == "fold":
            play.status = FOLDED
            play.decided = True
        elif action == "check":
            pass  # Chase the Flush before the river: the seat acts again on the next street
        else:
            play.decided = True
            play.wagers[self.spec.decision_wager] = amount_cents
            play.street = street
        play.pending_cents = 0
        play.pending_refused = None
        self._journal(
            "decision",
            {
                "seat": play.seat,
                "action": action,
                "amount_cents": amount_cents,
                "street": street,
                "cause": cause,
            },
        )

    def _close_decisions(self, *, cause: str, by: str | None) -> None:
        live = self.round
        if live is None or self.state not in self.definition.decision_states:
            if by is not None:
                self._refuse("confirm", "no decision phase is open", by)
            return
        refused = [p.seat for p in live.seats.values() if self._undecided(p) and p.pending_refused]
        if refused:
            reason = f"seat(s) {', '.join(map(str, refused))}: a refused decision wager must be corrected"
            if by is not None:
                self._refuse("confirm", reason, by)
            return
        chase_before_river = self.config.game == CHASE_THE_FLUSH and live.street != m.RIVER
        idle_seats = [p.seat for p in live.seats.values() if self._undecided(p) and not p.pending_cents]
        if cause == "confirm" and idle_seats and not chase_before_river:
            reason = f"seat(s) {', '.join(map(str, idle_seats))} have not acted: fold them or wait"
            self._refuse("confirm", reason, by)
            return
        action_name = "all_in" if self.config.game == CHASE_THE_FLUSH else self.spec.decision_wager
        for number in sorted(live.seats):
            play = live.seats[number]
            if not self._undecided(play):
                continue
            if play.pending_cents:
                self._decide(play, action_name, play.pending_cents, cause="sensor")
            elif chase_before_river:
                self._decide(play, "check", 0, cause=cause)
            else:
                self._decide(play, "fold", 0, cause=cause)  # the walk-away rule
        live.street = None
        live.decision_deadline_s = None
        self._fire("close_decisions")
        if self.state in (m.DEALING_FLOP, m.DEALING_TURN_RIVER):
            self._send_deal([(COMMUNITY_POSITION, 2)])
        elif self.state == m.REVEAL:
            self._reveal_and_settle()

    def _check_timeout(self) -> None:
        self._check_deal_timeout()
        live = self.round
        if (
            live is None
            or self.state not in self.definition.decision_states
            or live.decision_deadline_s is None
            or self._now_s < live.decision_deadline_s
        ):
            return
        self._close_decisions(cause="timeout", by=None)

    # ------------------------------------------------------------------ reveal, settle, pay
    def settle_input(self, *, dead: bool = False) -> dict[str, object]:
        """The round in the settle input shape (docs/settle.md). A dead (or voided) round carries no
        cards: a dead hand's cards are never shown, and its wagers all go back whatever they are."""
        live = self.round
        assert live is not None
        obj: dict[str, object] = {"game": self.config.game, "banking": dict(live.banking)}
        # A designated-player table's paytables are its contest tables (the seed's appendices). When
        # nobody takes the bank and the house banks the round, the bonuses pay on the player's own hand
        # by the house presets (RULES.md "House-banked"), as controller.config.settle_base does.
        if self.config.paytables and live.banking["mode"] == self.config.banking_mode:
            obj["paytables"] = dict(self.config.paytables)
        if self.config.rake is not None and live.banking["mode"] == DESIGNATED_PLAYER:
            obj["rake"] = dict(self.config.rake)
        obj["dealer"] = [] if dead else cards_text(live.dealer_cards)
        if self.spec.community_cards:
            obj["community"] = [] if dead else cards_text(live.community)
        seats: list[dict[str, object]] = []
        for number in sorted(live.seats):
            play = live.seats[number]
            # A dead seat goes in without cards (never shown): settle finds it not covered (coverage is
            # decided on the antes, as at the lock) or dead for its card count, and returns its wagers.
            seat_obj: dict[str, object] = {
                "seat": number,
                "cards": [] if dead or play.status == DEAD else cards_text(play.cards),
                "wagers": dict(play.wagers),
                "folded": play.status == FOLDED,
            }
            if play.street is not None:
                seat_obj["street"] = play.street
            seats.append(seat_obj)
        obj["seats"] = seats
        if dead:
            obj["dead"] = True
        return obj

    def _reveal_and_settle(self) -> None:
        live = self.round
        assert live is not None
        if self.state == m.REVEAL:
            self._fire("settle")
        settlement = live.settlement
        if settlement is None:  # (held after round_settled was journaled: it is never settled twice)
            round_obj = self.settle_input()
            settlement = settle(parse_round(round_obj))
            live.settlement = settlement
            self._journal("round_settled", {"round": round_obj, "settlement": settlement.to_json()})
            live.closed = True
        self._fire("pay")
        self._show_results(settlement)
        self._out.append(ShowText(self.config.display_device, "Pay and collect, then press next"))

    def _show_results(self, settlement: Settlement) -> None:
        display = self.config.display_device
        for seat in settlement.seats:
            if seat.status == "dead":
                self._out.append(ShowSeatResult(display, seat.seat, "dead", 0))
                continue
            net = seat.net_cents
            result: Literal["win", "lose", "push", "folded"] = (
                "folded" if seat.status == "folded" else "win" if net > 0 else "lose" if net < 0 else "push"
            )
            self._out.append(ShowSeatResult(display, seat.seat, result, net))
            for wager in seat.wagers:
                colour: SpotLampColour = (
                    "win" if wager.result == "win" else "lose" if wager.result == "lose" else "push"
                )
                spot = self.spec.wagers.index(wager.wager)
                self._out.append(SetSpotLamp(self.config.sensors_device, seat.seat, spot, colour))

    def _payouts_done(self, by: str) -> None:
        if self.state != m.PAYING:
            self._refuse("payouts_done", f"nothing to pay ({self.state})", by)
            return
        self._fire("finish")
        self._after_round_closed(hand_played=True)

    def _after_round_closed(self, *, hand_played: bool) -> None:
        """The round is closed (settled, dead or voided): rotate the button, then idle or held.

        The button moves "hand by hand": only after a hand was played and settled. After a dead or
        voided round (a misdeal) the same designated player keeps the button and its funds for the
        replay, as a cardroom redeals a misdeal with the button where it was."""
        if self.config.banking_mode == DESIGNATED_PLAYER and hand_played:
            last = self.dp_seat if self.dp_seat is not None else self.button_seat
            self.dp_seat = None
            self.dp_funds_cents = 0
            self.dp_waived.clear()
            self.house_banks = False
            self.dp_offer_seat = self._next_seat(last) if last is not None else self.config.seats[0]
        for (seat, spot), amount in list(self.spots.items()):
            if amount == 0:
                del self.spots[(seat, spot)]
        if self.round is not None:
            self.round.finished = True
        if self.latched:
            self.flow.resume_target = m.IDLE
            self._fire("hold")
        else:
            self._fire("next_round")
        self._past_posted.clear()

    # ------------------------------------------------------------------ dead rounds, faults
    def _kill_round(
        self, reason: str, *, code: str = "card_count", private: Mapping[str, object] | None = None
    ) -> None:
        """RULES.md: the whole round is dead, every wager returned, the table held until cleared.

        ``reason`` is public (journaled, shown, no card); what the deal knew of the cards (which card,
        where) is ``private``: journaled in the entries' private parts, never shown (a dead round is
        never revealed)."""
        live = self.round
        if live is None or live.closed:
            return
        live.closed_dead = True
        why = {"code": code, "message": reason}
        self._journal("dead_hand", {"seat": None, "reason": why, **(private or {})})
        kind = "red_light" if code == "red_light" else "dead_hand"
        self._raise_fault(kind, f"round dead: {reason}", latching=True, code=code, private=private)
        round_obj = self.settle_input(dead=True)
        settlement = settle(parse_round(round_obj))
        live.settlement = settlement
        self._journal(
            "round_dead",
            {"round": round_obj, "settlement": settlement.to_json(), "reason": why, **(private or {})},
        )
        live.closed = True
        self._fire("kill")
        for number in sorted(live.seats):
            self._out.append(ShowSeatResult(self.config.display_device, number, "dead", 0))
        self._out.append(ShowText(self.config.display_device, "Round dead: every wager is returned"))
        self._after_round_closed(hand_played=False)

    def _on_shuffler_fault(self, event: ShufflerFault) -> None:
        """The shuffler's faults, judged by where the round stands (docs/engine.md "Dead hands").

        The shuffler driver turns a shoe's miscount into ``card_count`` at the position (an extra card,
        a gap in the indexes, a HandComplete count that differs from the request) and a card read twice
        or read differently into ``misread`` (it withholds the card), and a jam, a door or a red light
        stops the shoe's deal. So, while a deal is in flight: ``card_count`` at a position is that
        position's wrong count; ``misread`` is a card seen twice (RULES.md: the round is dead); a red
        light, a jam, an open door or any other stop is a misdeal: the round is dead. A red light
        before the round's last card (Chase the Flush between streets) kills it too. After the deal is
        complete a fault is an alert; before it (betting, waiting for the deck) it latches and holds.
        """
        # Public: the fault's kind, and the position only for a count (a seat dealt the wrong number is
        # no card). Private: everything the shoe said (its words may name a card), with the position.
        where = f" at {self._position_name(event.position)}" if event.position is not None else ""
        detail = f"{_SHOE_FAULT_WORDS.get(event.fault, event.fault)}" + (
            where if event.fault == "card_count" else ""
        )
        code = _SHOE_FAULT_CODES.get(event.fault, "shoe_fault")
        if event.fault == "misread" and event.first_position is not None:
            code = "card_repeated"  # the driver saw this card dealt before, where it says
        private: dict[str, object] = {
            "message": f"{event.fault}"
            + (f" at position {event.position}" if event.position is not None else "")
            + (f": {event.detail}" if event.detail else ""),
            "position": event.position,
            "device_detail": event.detail or None,
            "card": event.card,
            "index": event.index,
            "first_position": event.first_position,
            "first_index": event.first_index,
        }
        private = {key: value for key, value in private.items() if value is not None}
        live = self.round
        open_round = live is not None and not live.closed
        held_from = self.flow.resume_target if self.state == m.HELD else self.state
        deal_active = (
            open_round
            and live is not None
            and live.deal is not None
            and held_from in (self.definition.dealing_states)
        )
        deal_incomplete = (
            open_round
            and live is not None
            and not live.deal_finished
            and held_from in (*self.definition.dealing_states, *self.definition.decision_states)
        )
        position = event.position
        round_position = live is not None and (
            position in (DEALER_POSITION, COMMUNITY_POSITION) or position in live.seats
        )
        if event.fault == "card_count" and position is not None and live is not None and open_round:
            if position in live.wrong_positions:
                self._raise_fault(
                    "shuffler_fault", detail, latching=False, device=event.device, code=code, private=private
                )
                return
            if (deal_active or deal_incomplete) and round_position:
                self._wrong_count(
                    position, f"the shoe reported a card count fault ({detail})", code=code, private=private
                )
                return
        if deal_incomplete and event.fault == "red_light":
            self._kill_round("shuffler red light during the deal", code="red_light", private=private)
            return
        if deal_active and event.fault == "misread":
            self._kill_round("a card seen twice or misread during the deal", code=code, private=private)
            return
        if deal_active:
            self._kill_round(f"the shoe stopped mid-deal, a misdeal ({detail})", code=code, private=private)
            return
        if open_round and live is not None and live.deal_finished:
            self._raise_fault(
                "shuffler_fault",
                f"after the deal: {detail}",
                latching=False,
                device=event.device,
                code=code,
                private=private,
            )
            return
        kind = "red_light" if event.fault == "red_light" else "shuffler_fault"
        self._raise_fault(
            kind, detail, latching=True, device=event.device, source=event.device, code=code, private=private
        )
        self.deck_verified = False
        self._hold()

    def _on_device_lost(self, event: DeviceLost) -> None:
        self.device_health[event.device] = "lost"
        self._journal("device_lost", {"device": event.device, "reason": event.reason}, source=event.device)
        live = self.round
        in_round = live is not None and not live.closed and self.state not in (m.IDLE, m.BETTING)
        critical = event.device in (self.config.shuffler_device, self.config.sensors_device)
        if (
            in_round
            and critical
            and not (event.device == self.config.shuffler_device and live and live.deal_finished)
        ):
            self._raise_fault(
                "device_lost",
                f"{event.device} lost during the round: {event.reason}",
                latching=True,
                device=event.device,
            )
            self._hold()
            return
        self._raise_fault(
            "device_lost", f"{event.device}: {event.reason}", latching=False, device=event.device
        )

    def _clear_fault(self, fault_id: str, by: str, reason: str, *, journaled: bool = False) -> None:
        if fault_id not in self.latched:
            self._refuse("clear_fault", f"no latched fault {fault_id!r}", by)
            return
        if not reason.strip() or not by.strip():
            self._refuse("clear_fault", "a supervisor's name and a reason are required", by or "unknown")
            return
        del self.latched[fault_id]
        if not journaled:
            self._journal(
                "fault_cleared", {"fault_id": fault_id, "by": by, "reason": reason}, source=f"operator:{by}"
            )
        if not self.latched:
            self._reset_faulted_devices(by)
        if self.latched or self.state != m.HELD:
            return
        target = self.flow.resume_target
        self._fire("resume")
        self._past_posted.clear()
        if target in (m.BETTING, m.BETS_LOCKED):
            # The shoe's state is unknown after a hold before the deal: shuffle a fresh deck.
            self.deck_verified = False
            self._out.append(Shuffle(self.config.shuffler_device))
        if target in self.definition.decision_states and self.round is not None:
            self.round.decision_deadline_s = self._now_s + self.config.decision_timeout_s
        live = self.round
        if target in self.definition.dealing_states and live is not None and live.deal and live.deal.done:
            self._deal_step_done()
        if target in (m.REVEAL, m.SETTLING) and live is not None:
            # Held while settling (an engine or settle error): settle (or pay) now.
            self._reveal_and_settle()

    def _reset_faulted_devices(self, by: str) -> None:
        """The last latched fault is cleared: a supervisor has looked at the table. A device whose last
        status was "fault" (the shoe after its red light, a jam or an open door) stays there until it
        is reset, and refuses to shuffle or deal meanwhile; reset it now (a soft reset, journaled as
        the supervisor's action), before the fresh shuffle the table asks for when it resumes. If the
        cause is still there the device faults again and the table holds again."""
        for device, health in sorted(self.device_health.items()):
            if health != "fault":
                continue
            self._journal(
                "operator_action",
                {
                    "action": "reset_device",
                    "by": by,
                    "detail": f"{device}: in fault when its table was released",
                },
                source=f"operator:{by}",
            )
            self._out.append(ResetDevice(device))

    def _void_round(self, reason: str, by: str) -> None:
        live = self.round
        open_round = live is not None and not live.closed
        betting_only = not open_round and (
            self.state == m.BETTING or (self.state == m.HELD and self.flow.resume_target == m.BETTING)
        )
        if not self._can("void") or not (open_round or betting_only):
            self._refuse("void_round", f"no open round to void ({self.state})", by)
            return
        if not reason.strip():
            self._refuse("void_round", "a reason is required", by)
            return
        self._journal(
            "operator_action", {"action": "void_round", "by": by, "detail": reason}, source=f"operator:{by}"
        )
        if open_round and live is not None:
            round_obj = self.settle_input(dead=True)
            settlement = settle(parse_round(round_obj))
            live.settlement = settlement
            self._journal(
                "round_voided",
                {"round": round_obj, "settlement": settlement.to_json(), "reason": reason, "by": by},
                source=f"operator:{by}",
            )
            live.closed = True
            live.closed_dead = True  # a voided round's cards are not shown either
        self._fire("void")
        self._out.append(ShowText(self.config.display_device, "Round void: every wager is returned"))
        self._after_round_closed(hand_played=False)

    # ------------------------------------------------------------------ the manager's settings
    def _not_between_rounds(self) -> str | None:
        """None between rounds (idle, or held with no round open), else why not."""
        live = self.round
        if live is not None and not live.closed:
            return f"a round is open ({self.state}): only between rounds"
        if self.state in (m.IDLE, m.COMPLETE):
            return None
        if self.state == m.HELD and self.flow.resume_target == m.IDLE:
            return None
        return (
            f"betting is open ({self.state}): only between rounds"
            if self.state == m.BETTING
            else (f"a round is in progress ({self.state}): only between rounds")
        )

    def _apply_recovered_settings(self, recovered: RecoveredState) -> None:
        """The manager's last limits and paytables, when made against this same configuration file."""
        if recovered.settings_config_digest is None:
            return
        if recovered.settings_config_digest != self.config.config_digest:
            return  # a new configuration file since: it wins (docs/engine.md "The manager's settings")
        changes: dict[str, Any] = {}
        if recovered.min_ante_cents is not None and recovered.max_ante_cents is not None:
            changes["min_ante_cents"] = recovered.min_ante_cents
            changes["max_ante_cents"] = recovered.max_ante_cents
        if recovered.paytables:
            changes["paytables"] = {**self.config.paytables, **recovered.paytables}
        if changes:
            self.config = dataclasses.replace(self.config, **changes)

    def _paytable_in_effect(self, wager: str) -> object:
        """The table's paytable for a bonus wager: the one set, or the game's default preset's name."""
        explicit = self.config.paytables.get(wager)
        if explicit is not None:
            return explicit
        return DEFAULT_PRESET.get((self.config.game, self._banking_mode(), wager))

    def _set_limits(self, min_ante_cents: int, max_ante_cents: int, by: str) -> None:
        if not by.strip():
            self._refuse("set_limits", "by: the manager's name is required", "unknown")
            return
        for name, value in (("min_ante_cents", min_ante_cents), ("max_ante_cents", max_ante_cents)):
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_AMOUNT_CENTS:
                self._refuse(
                    "set_limits",
                    f"{name}: must be a whole number of cents from 1 to {MAX_AMOUNT_CENTS}, not {value!r}",
                    by,
                )
                return
        if min_ante_cents > max_ante_cents:
            self._refuse(
                "set_limits", f"min_ante_cents: {min_ante_cents} is above max_ante_cents {max_ante_cents}", by
            )
            return
        why_not = self._not_between_rounds()
        if why_not is not None:
            self._refuse("set_limits", why_not, by)
            return
        before = {"min_ante_cents": self.config.min_ante_cents, "max_ante_cents": self.config.max_ante_cents}
        after = {"min_ante_cents": min_ante_cents, "max_ante_cents": max_ante_cents}
        self.config = dataclasses.replace(
            self.config, min_ante_cents=min_ante_cents, max_ante_cents=max_ante_cents
        )
        self._journal(
            "operator_action",
            {
                "action": "set_limits",
                "by": by,
                "detail": f"ante limits {min_ante_cents}..{max_ante_cents} "
                f"(were {before['min_ante_cents']}..{before['max_ante_cents']})",
                "before": before,
                "after": after,
                "config_digest": self.config.config_digest,
            },
            source=f"operator:{by}",
        )
        self._out.append(ShowText(self.config.display_device, f"Ante {min_ante_cents}..{max_ante_cents}"))

    def _set_paytable(self, wager: str, spec: object, by: str) -> None:
        if not by.strip():
            self._refuse("set_paytable", "by: the manager's name is required", "unknown")
            return
        if wager not in self.spec.bonus_wagers:
            self._refuse(
                "set_paytable",
                f"wager: {wager!r} is not a bonus wager of {self.config.game} "
                f"(bonus wagers: {', '.join(self.spec.bonus_wagers)})",
                by,
            )
            return
        try:
            paytable = parse_paytable(spec, field=f"paytables.{wager}")
        except UserError as error:
            self._refuse("set_paytable", str(error), by)
            return
        why_not = self._not_between_rounds()
        if why_not is not None:
            self._refuse("set_paytable", why_not, by)
            return
        # A preset is kept by its name (the settle input takes it as such); custom lines canonically.
        after: object = spec if isinstance(spec, str) else paytable.to_json()
        before = self._paytable_in_effect(wager)
        self.config = dataclasses.replace(self.config, paytables={**self.config.paytables, wager: after})
        self._journal(
            "operator_action",
            {
                "action": "set_paytable",
                "by": by,
                "detail": f"{wager} paytable {after if isinstance(after, str) else 'custom'}",
                "wager": wager,
                "before": before,
                "after": after,
                "config_digest": self.config.config_digest,
            },
            source=f"operator:{by}",
        )

    def _open_table(self, by: str) -> None:
        if not by.strip():
            self._refuse("open_table", "by: the manager's name is required", "unknown")
            return
        if self.table_open:
            self._refuse("open_table", "the table is already open", by)
            return
        self.table_open = True
        self.closed_reason = None
        self._journal(
            "table_opened",
            {
                "game": self.config.game,
                "banking_mode": self.config.banking_mode,
                "config_digest": self.config.config_digest,
                "by": by,
            },
            source=f"operator:{by}",
        )
        self._out.append(ShowText(self.config.display_device, "Table open"))

    def _close_table(self, by: str, reason: str) -> None:
        if not by.strip():
            self._refuse("close_table", "by: the manager's name is required", "unknown")
            return
        if not self.table_open:
            self._refuse("close_table", "the table is already closed", by)
            return
        if not reason.strip():
            self._refuse("close_table", "reason: a reason is required", by)
            return
        why_not = self._not_between_rounds()
        if why_not is not None:
            self._refuse("close_table", why_not, by)
            return
        self.table_open = False
        self.closed_reason = reason
        self._journal("table_closed", {"by": by, "reason": reason}, source=f"operator:{by}")
        self._out.append(ShowText(self.config.display_device, "Table closed"))

    # ------------------------------------------------------------------ button, designated player
    def _next_seat(self, seat: int) -> int:
        """The next configured seat clockwise (seats are numbered clockwise)."""
        return clockwise_from(seat, self.config.seats)[0]

    def _dp_accepts(self, funds_cents: int, by: str, seat: int | None) -> None:
        if self.config.banking_mode != DESIGNATED_PLAYER:
            self._refuse("dp_accepts", "this table is house-banked", by)
            return
        if self.state not in (m.IDLE, m.BETTING):
            self._refuse("dp_accepts", f"the button moves only between rounds ({self.state})", by)
            return
        if self.dp_seat is not None:
            self._refuse("dp_accepts", f"seat {self.dp_seat} already holds the button", by)
            return
        offered = self.dp_offer_seat
        if offered is None:
            self._refuse("dp_accepts", "nobody is offered the button (everyone waived)", by)
            return
        if seat is not None and seat != offered:
            self._refuse("dp_accepts", f"the button is offered to seat {offered}, not seat {seat}", by)
            return
        if isinstance(funds_cents, bool) or not isinstance(funds_cents, int) or funds_cents <= 0:
            self._refuse("dp_accepts", f"funds_cents: must be a positive integer, not {funds_cents!r}", by)
            return
        self.dp_seat = offered
        self.dp_funds_cents = funds_cents
        self.house_banks = False
        previous = self.button_seat
        self.button_seat = offered
        self._journal(
            "button_moved",
            {"from_seat": previous, "to_seat": offered, "reason": f"accepted, funds {funds_cents}", "by": by},
            source=f"operator:{by}",
        )
        self._out.append(ShowButton(self.config.display_device, offered))

    def _dp_waives(self, by: str) -> None:
        if self.config.banking_mode != DESIGNATED_PLAYER:
            self._refuse("dp_waives", "this table is house-banked", by)
            return
        if self.state not in (m.IDLE, m.BETTING) or self.dp_seat is not None:
            self._refuse("dp_waives", "the button is not on offer", by)
            return
        offered = self.dp_offer_seat
        if offered is None:
            self._refuse("dp_waives", "nobody is offered the button", by)
            return
        self.dp_waived.add(offered)
        self._journal("dp_waived", {"seat": offered}, source=f"operator:{by}")
        following = self._next_seat(offered)
        while following in self.dp_waived and following != offered:
            following = self._next_seat(following)
        if following in self.dp_waived:
            self.dp_offer_seat = None
            if self.config.house_may_bank:
                self.house_banks = True
                message = "nobody accepted the button: the house banks this round"
            else:
                message = "nobody accepted the button: the round cannot start"
            self._alert("info", "designated_player", message)
            self._out.append(ShowText(self.config.display_device, message))
            return
        self.dp_offer_seat = following
        self._out.append(ShowText(self.config.display_device, f"Button offered to seat {following}"))

    def _move_button(self, seat: int, by: str) -> None:
        if seat not in self.config.seats:
            self._refuse("move_button", f"seat {seat} is not a seat of this table", by)
            return
        if self.state not in (m.IDLE, m.HELD) or (self.state == m.HELD and self.flow.resume_target != m.IDLE):
            self._refuse("move_button", f"the button moves only between rounds ({self.state})", by)
            return
        previous = self.button_seat
        self.button_seat = seat
        if self.config.banking_mode == DESIGNATED_PLAYER:
            self.dp_seat = None
            self.dp_funds_cents = 0
            self.dp_waived.clear()
            self.house_banks = False
            self.dp_offer_seat = seat
        self._journal(
            "button_moved",
            {"from_seat": previous, "to_seat": seat, "reason": "moved by a supervisor", "by": by},
            source=f"operator:{by}",
        )
        self._out.append(ShowButton(self.config.display_device, seat))

    # ------------------------------------------------------------------ dealer keys
    def _on_dealer_key(self, event: DealerKey) -> None:
        key: str = event.key  # a driver may pass on a key this build does not know
        self._journal("dealer_key", {"key": key, "seat": event.seat}, source=event.device)
        by = "dealer"
        state = self.state
        if key == "next":
            if state == m.IDLE:
                self._start_round(by)
            elif state == m.BETTING:
                self._no_more_bets(by)
            elif state == m.PAYING:
                self._payouts_done(by)
            elif state in self.definition.decision_states:
                self._close_decisions(cause="confirm", by=by)
            else:
                self._refuse("next", f"nothing to advance in {state}")
        elif key == "confirm":
            if state == m.BETTING:
                self._no_more_bets(by)
            elif state in self.definition.decision_states:
                self._close_decisions(cause="confirm", by=by)
            elif state == m.PAYING:
                self._payouts_done(by)
            else:
                self._refuse("confirm", f"nothing to confirm in {state}")
        elif key == "fold_seat":
            if event.seat is None:
                self._refuse("fold_seat", "no seat given")
            else:
                self._fold(event.seat, by)
        elif key == "dp_waives":
            self._dp_waives(by)
        elif key == "call_floor":
            self._alert("info", "call_floor", "the dealer calls a floor supervisor")
        elif key == "void_request":
            self._alert("alert", "void_request", "the dealer asks a supervisor to void the round")
        else:
            self._refuse(key, "unknown dealer key")

"""The one reducer: the table's state as a fold of its journal's typed entries.

Every reader of the journal — recovery at start, the panel's view, the meters, recall, the privacy gate
(and later the floor) — folds entries through :meth:`TableState.apply`, so they cannot disagree about
what the journal says. Pure: no file, socket or clock; feed it entries in sequence order.

What it keeps:
- the table: game, banking, open or closed (and whether a manager closed it), the phase of the round
  machine, the button and the designated player, the seats that waived, the manager's settings;
- rounds: every open round in full (wagers locked and decided, cards dealt, decisions, dead seats), and
  the last ``RECENT_ROUNDS`` closed ones (the panel's history) and their closing kinds (a start reads
  the last round's: the button moves on after a settled round; recall reads the journal's index);
- faults: latched ones (they hold the table across restarts), alerts with their acknowledgement and
  clearing (the most recent ``MAX_ALERTS``);
- devices: identity, health, last event, security events;
- meters: money and counts, from every closing entry (docs/journal.md "Meters").

When a card may be shown (``RoundState.card_visible`` / ``private_visible``): a round's hole cards
(and the banker's) once a reveal happened (the machine entered ``reveal``, or ``settling``/``paying``
after it), never by the round's end alone: a void moves the machine to ``complete`` and reveals
nothing; Chase the Flush's community cards as the flop (2 cards) and the turn and river (4) are turned
(and stay shown if the round is voided after); a dead hand's cards never (nor any part about its seat,
a refused decision's detail included), nor any card of a dead round, nor of a round voided before its
reveal.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from controller.journal.entry_view import EntryView, part_type
from controller.journal.kinds import LEGACY_OPERATOR_ACTION, STATUS_BY_CLOSING_KIND
from controller.journal.rows import JournalEntry, refuse_newer, stored_view
from controller.journal.state_parts import (
    COMMUNITY_POSITION,
    COMMUNITY_TURNED,
    REVEAL_STATES,
    AlertState,
    DeviceState,
    Meters,
    RoundState,
    Stored,
    fold_device,
)
from controller.names import round_number

if TYPE_CHECKING:
    from pathlib import Path

    # The typed entries' classes name what each handler reads; at run time a handler reads its entry by
    # attribute, the typed entry or a stored entry's view (controller/journal/entry_view.py, which
    # tests/journal/test_entry_view.py holds to the classes): a reader of the journal's rows folds and
    # gates them without loading msgspec and the classes (issue 28).
    from controller.journal import entries as e
    from controller.journal.proposals import Proposal

    # Loaded on the first look at the Progressive's meter (``TableState.progressive``): the model brings
    # the Progressive's rules with `decimal`, which a reader of a table without one never needs (issue 28).
    from controller.progressive.model import MeterState


# --- the table ----------------------------------------------------------------------------------


class TableState:
    """The table as its journal leaves it. Feed entries in order with :meth:`apply`."""

    RECENT_ROUNDS = 50  # closed rounds kept in full (the panel's history); open rounds are never dropped
    MAX_ALERTS = 500

    def __init__(self, table_id: str = "", *, views: bool = False, journal_path: Path | None = None) -> None:
        """``views``: read each stored row (``JournalEntry``) through its view (``JournalEntry.view``:
        controller/journal/entry_view.py), not its typed entry: for a reader that folds rounds to show
        them and then drops the state (recall, `journal show`), which then loads no typed classes. The
        daemon, the panel and recovery keep the typed entries: their state holds on to entries (a
        decision, an alert's reason, the clock's measurement) that others read as their classes."""
        self.table_id = table_id
        self._views = views
        # Named in a row's refusal (``rows.stored_view``): the journal the rows are read from, if any.
        self._journal_path = journal_path
        self.last_seq = 0
        self.last_entry_utc = ""
        self.game = ""
        self.banking_mode = ""
        self.table_open: bool | None = None
        # The last table_closed written by an operator (source "operator:NAME"), unless an operator
        # reopened the table since: a manager's close survives restarts. The daemon's own start and
        # stop entries (source "engine") do not count.
        self.closed_by_operator: e.TableClosed | None = None
        self.phase = "idle"
        self.button_seat: int | None = None
        self.designated_player: dict[str, Any] | None = None  # the last round's banking, when a player banked
        self.waived_seats: list[int] = []  # seats that waived the bank since the last round
        # The manager's settings (limits_set, paytable_set) and the
        # config_digest they were made against: the engine applies them only on top of that file.
        self.limits: dict[str, Any] | None = None
        self.paytables: dict[str, Any] = {}
        self.settings_config_digest: str | None = None
        self.rounds_started = 0
        self.last_round_id: str | None = None
        self.last_round_number = 0
        self.rounds: dict[str, RoundState] = {}  # open rounds and the most recent closed ones
        # The last RECENT_ROUNDS closed rounds: round_id -> closing kind. Bounded, so a seal's checkpoint
        # does not grow with the journal's age (docs/journal.md "A seal's checkpoint is bounded").
        self.closed_rounds: dict[str, str] = {}
        self.current: RoundState | None = None  # the round in progress, or the last one started
        self.latched_faults: dict[str, AlertState] = {}
        self.open_alerts: dict[str, AlertState] = {}  # raised, not yet acknowledged nor cleared
        self.alerts: dict[str, AlertState] = {}  # the most recent MAX_ALERTS, any state
        self.devices: dict[str, DeviceState] = {}
        self.meters = Meters()
        # The stand-alone progressive's meter, folded from its progressive_* entries (its store is this
        # journal): the restart's meter is this fold (controller/progressive/).
        self._progressive: MeterState | None = None
        self._closed_order: list[str] = []
        # Regulatory controls (docs/operations.md "Regulatory controls"): the last clock measurement,
        # the last start's configuration check, the two-person changes (controller/changes.py) and the
        # approved config_file changes not yet met by a start (file sha256 -> change_id).
        self.clock: e.ClockOffset | None = None
        self.clock_stepped: e.ClockStepped | None = None
        self.config_checked: e.ConfigChecked | None = None
        self.changes: dict[str, Proposal] = {}
        self.approved_config_files: dict[str, str] = {}
        # The release the last start verified (software_verified), and the last seeded check answered
        # (software_checked); None: none journaled (a table started without [software]).
        self.software: dict[str, Any] | None = None
        self.software_checked: dict[str, Any] | None = None

    # --- reading answers ----------------------------------------------------------------------
    @property
    def held(self) -> bool:
        """A latched fault holds the table: no round starts until a supervisor clears it."""
        return bool(self.latched_faults)

    @property
    def open_rounds(self) -> list[RoundState]:
        return sorted((r for r in self.rounds.values() if r.open), key=lambda r: r.started_seq)

    @property
    def faults_raised(self) -> int:
        return self.meters.faults_raised

    def round(self, round_id: str | None) -> RoundState | None:
        return self.rounds.get(round_id) if round_id is not None else None

    def private_visible(self, stored: Stored) -> bool:
        """May a viewer see this entry's private part now? Once its round's cards are revealed, and
        never for a dead hand's or a dead or voided round's (docs/rules.md). An entry outside any round
        (a shoe's fault between rounds, a deck check) keeps its private part to itself."""
        # Any: a typed entry or its view, and a typed part or a part's view, read by attribute alike
        # (each by its kind, a part by its class's name: part_type).
        entry: Any = self._entry_of(stored)
        part: Any = entry.private_part()
        if part is None:
            return True
        round_state = self.round(stored.round_id)
        if round_state is None:
            return False
        kind_of_part = part_type(part)
        if kind_of_part == "CardDealtPrivate":
            index = part.index
            if part.position == COMMUNITY_POSITION:
                # Its place in the community (the flop's, the turn's, the river's), not the index of
                # the deal command that dealt it; a card not in the community: judged as the last.
                community = list(round_state.cards.get(COMMUNITY_POSITION, {}).values())
                index = community.index(part.card) if part.card in community else len(community)
            return round_state.card_visible(part.position, index)
        if not round_state.cards_public:
            return False
        positions = set(part.positions())
        if entry.kind == "decision_refused":
            # A refusal's limit speaks of the seat's hand ("exactly 10.00 with a 4-card flush"): it
            # follows the seat's privacy, so a killed seat's is never shown.
            positions.add(entry.seat)
        if kind_of_part == "ReasonDetail" and round_state.dead_seats:
            # What the shoe said about which card (its own words, a card number) need not name the
            # position it is about: "jam: card As at seat 1" with no position. In a round with a dead
            # hand it may be that hand's card, so it is never shown (an auditor reads it with --private).
            return False
        return not any(round_state.seat_dead(position) for position in positions)

    # --- folding ------------------------------------------------------------------------------
    def apply_all(self, stored_entries: Iterable[Stored]) -> TableState:
        for stored in stored_entries:
            self.apply(stored)
        return self

    def apply(self, stored: Stored) -> None:
        self.last_seq = stored.seq
        self.last_entry_utc = stored.time_utc
        if not self.table_id:
            self.table_id = stored.table_id
        # Only the kinds the fold reads are read at all (a stored row of another kind is not decoded).
        kind: str | None = None
        if isinstance(stored, JournalEntry):
            kind = stored.kind
            if self._views:
                # A newer release's row is refused even of a kind the fold skips, as the replay is.
                refuse_newer(stored, self._journal_path)
        if kind is None or kind in _HANDLERS or kind == LEGACY_OPERATOR_ACTION:
            entry = self._entry_of(stored)
            handler = _HANDLERS.get(entry.kind)
            if handler is not None:
                handler(self, stored, entry)
        device = self.devices.get(stored.source)
        if device is not None:
            device.last_event_utc = stored.time_utc  # any entry a device is the source of: it moves

    def _entry_of(self, stored: Stored) -> e.Entry | EntryView:
        """The entry as the fold and the gate read it: with ``views``, a stored row's view (the typed
        entry where no view reads it); else, and for every other stored form (a replay's, the floor's),
        the typed entry."""
        if self._views and isinstance(stored, JournalEntry):
            return stored_view(stored, self._journal_path)
        return stored.entry

    def _live_round(self, round_id: str | None) -> RoundState | None:
        return self.rounds.get(round_id) if round_id is not None else None

    def _on_table_opened(self, stored: Stored, entry: e.TableOpened) -> None:
        self.table_open = True
        self.game = entry.game
        self.banking_mode = entry.banking_mode
        if stored.source.startswith("operator:"):
            self.closed_by_operator = None

    def _on_software_verified(self, stored: Stored, entry: e.SoftwareVerified) -> None:
        self.software = {
            "release": entry.release,
            "release_digest": entry.release_digest,
            "development": entry.development,
            "key_id": entry.key_id,
            "files": entry.files,
            "verified_utc": stored.time_utc,
        }

    def _on_software_checked(self, stored: Stored, entry: e.SoftwareChecked) -> None:
        self.software_checked = {
            "aggregate": entry.aggregate,
            "requested_by": entry.requested_by,
            "checked_utc": stored.time_utc,
        }

    def _on_table_closed(self, stored: Stored, entry: e.TableClosed) -> None:
        self.table_open = False
        if stored.source.startswith("operator:"):
            self.closed_by_operator = entry

    def _on_state_changed(self, stored: Stored, entry: e.StateChanged) -> None:
        if entry.machine != "round":
            return
        self.phase = entry.to
        round_state = self._live_round(stored.round_id)
        if round_state is None:
            return
        round_state.phase = entry.to
        if entry.to in REVEAL_STATES:
            round_state.reached_reveal = True
        else:
            # A street's community cards show once the street is dealt in full (the machine enters
            # the street's decisions), not while they are being dealt: a deal cut short kills the
            # round, and a dead round's cards are never shown.
            turned = COMMUNITY_TURNED.get(entry.to, 0)
            round_state.community_visible = max(round_state.community_visible, turned)

    def _on_round_started(self, stored: Stored, entry: e.RoundStarted) -> None:
        round_state = RoundState(
            round_id=entry.round_id,
            started_seq=stored.seq,
            started_utc=stored.time_utc,
            game=entry.game,
            banking=dict(entry.banking) or {"mode": "house"},
            button_seat=entry.button_seat,
            seats=list(entry.seats),
        )
        self.rounds[entry.round_id] = round_state
        self.current = round_state
        self.rounds_started += 1
        self.meters.count(entry, entry.round_id)
        self.last_round_id = entry.round_id
        self.last_round_number = max(self.last_round_number, round_number(entry.round_id) or 0)
        self.game = entry.game or self.game
        self.banking_mode = str(round_state.banking.get("mode", self.banking_mode))
        if entry.button_seat is not None:
            self.button_seat = entry.button_seat
        mode = round_state.banking.get("mode")
        self.designated_player = dict(round_state.banking) if mode == "designated-player" else None
        self.waived_seats = []

    def _on_bet_changed(self, stored: Stored, entry: e.BetChanged) -> None:
        round_state = self._live_round(stored.round_id)
        if round_state is not None:
            round_state.sensed_wagers.setdefault(entry.seat, {})[entry.wager] = entry.amount_cents

    def _on_bets_locked(self, stored: Stored, entry: e.BetsLocked) -> None:
        round_state = self._live_round(stored.round_id)
        if round_state is None:
            return
        round_state.locked_wagers = {
            int(seat): {str(name): int(cents) for name, cents in wagers.items()}
            for seat, wagers in entry.wagers.items()
        }
        for seat, wagers in round_state.locked_wagers.items():
            round_state.sensed_wagers[seat] = dict(wagers)

    def _on_card_dealt(self, stored: Stored, entry: e.CardDealt) -> None:
        round_state = self._live_round(stored.round_id)
        part = entry.private
        if round_state is None or part is None:
            return
        hand = round_state.cards.setdefault(part.position, {})
        if part.position == COMMUNITY_POSITION:
            # The shoe counts each deal command's cards from 0: the turn and river come as indices 0
            # and 1 again after the flop. The community's own order is the order the cards came in.
            if part.card not in hand.values():
                hand[len(hand)] = part.card
            return
        hand[part.index] = part.card

    def _on_decision(self, stored: Stored, entry: e.Decision) -> None:
        round_state = self._live_round(stored.round_id)
        if round_state is not None:
            round_state.decisions.setdefault(entry.seat, []).append(entry)
            # The seat's decision was accepted: an over-limit raise refused earlier in the round was
            # corrected before the round went on. Its alert resolves itself (kept, marked resolved).
            for fault_id in round_state.over_limit_alerts.pop(entry.seat, []):
                alert = self.alerts.get(fault_id)
                if alert is not None and alert.state in ("active", "acknowledged"):
                    alert.resolved_utc = stored.time_utc
                    alert.resolved_note = f"corrected: seat {entry.seat}'s {entry.action} was accepted"
                    self.open_alerts.pop(fault_id, None)

    def _on_decision_refused(self, stored: Stored, entry: e.DecisionRefused) -> None:
        round_state = self._live_round(stored.round_id)
        if round_state is not None:
            round_state.refused_seat = entry.seat

    def _on_kill_seat_request(self, stored: Stored, entry: e.KillSeatRequest) -> None:
        round_state = self._live_round(stored.round_id)
        if round_state is None:
            return
        if entry.status == "requested":
            round_state.kill_requests_made += 1
            # The request's number in its round, written since entries carry it; an older entry's is its
            # order in the round, as the engine counts (the first request of a round is 1).
            number = entry.request_number
            round_state.kill_request = {
                "seat": entry.seat,
                "round_id": stored.round_id,  # the confirm/reject names it (a lapsed request's is refused)
                # ... and the number (a rejected request's, asked again for the same seat, is refused)
                "request_number": round_state.kill_requests_made if number is None else number,
                "requested_by": entry.by,
                "requested_utc": stored.time_utc,
            }
        else:
            round_state.kill_request = None

    def _on_dead_hand(self, stored: Stored, entry: e.DeadHand) -> None:
        round_state = self._live_round(stored.round_id)
        if round_state is not None and entry.seat is not None:
            round_state.dead_seats.add(entry.seat)

    def _on_closing(self, stored: Stored, entry: e.RoundSettled | e.RoundDead | e.RoundVoided) -> None:
        round_id = stored.round_id
        if round_id is None:
            return
        status = STATUS_BY_CLOSING_KIND[entry.kind]
        self.closed_rounds[round_id] = entry.kind
        round_state = self.rounds.get(round_id)
        if round_state is None:
            round_state = RoundState(round_id=round_id)
            self.rounds[round_id] = round_state
        round_state.status = status
        round_state.kill_request = None  # a request still waiting lapses with the round
        round_state.closed_seq = stored.seq
        round_state.closed_utc = stored.time_utc
        round_state.settlement = dict(entry.settlement)
        self._closed_order.append(round_id)
        self.meters.count_closing(entry, round_id, time_utc=stored.time_utc)
        # Keep the closed history bounded (open rounds always stay).
        if len(self._closed_order) > self.RECENT_ROUNDS:
            forgotten = self._closed_order.pop(0)
            old = self.rounds.get(forgotten)
            if old is not None and not old.open and self.current is not old:
                del self.rounds[forgotten]
            if forgotten not in self._closed_order:  # a round closed twice is still in the window
                self.closed_rounds.pop(forgotten, None)

    def _on_fault_raised(self, stored: Stored, entry: e.FaultRaised) -> None:
        alert = AlertState(
            fault_id=entry.fault_id,
            kind=entry.kind_of_fault,
            severity=entry.severity,
            reason=entry.reason,
            device=entry.device,
            round_id=stored.round_id,
            raised_seq=stored.seq,
            raised_utc=stored.time_utc,
            raised_by=entry.by,
        )
        self.alerts[entry.fault_id] = alert
        self.open_alerts[entry.fault_id] = alert
        if entry.severity == "latching":
            self.latched_faults[entry.fault_id] = alert
        self.meters.count(entry, str(stored.round_id))
        round_state = self._live_round(stored.round_id)
        if round_state is not None:
            round_state.faults.append(entry.fault_id)
            if entry.kind_of_fault == "over_limit_raise" and round_state.refused_seat is not None:
                round_state.over_limit_alerts.setdefault(round_state.refused_seat, []).append(entry.fault_id)
        if len(self.alerts) > self.MAX_ALERTS:
            # Drop the oldest cleared alerts (a latched or active one is never dropped).
            for fault_id in [f for f, a in self.alerts.items() if a.state == "cleared"][:100]:
                del self.alerts[fault_id]

    def _on_fault_acknowledged(self, stored: Stored, entry: e.FaultAcknowledged) -> None:
        self.open_alerts.pop(entry.fault_id, None)
        alert = self.alerts.get(entry.fault_id)
        if alert is not None and alert.acknowledged_by is None:
            alert.acknowledged_by = entry.by
            alert.acknowledged_utc = stored.time_utc

    def _on_fault_cleared(self, stored: Stored, entry: e.FaultCleared) -> None:
        self.latched_faults.pop(entry.fault_id, None)
        self.open_alerts.pop(entry.fault_id, None)
        self.meters.count(entry, str(stored.round_id))
        alert = self.alerts.get(entry.fault_id)
        if alert is not None:
            alert.cleared_by = entry.by
            alert.cleared_reason = entry.reason
            alert.cleared_utc = stored.time_utc

    def _on_button_moved(self, stored: Stored, entry: e.ButtonMoved) -> None:
        self.button_seat = entry.to_seat
        self.waived_seats = []

    def _on_dp_waived(self, stored: Stored, entry: e.DpWaived) -> None:
        self.waived_seats.append(entry.seat)

    def _settings_made_against(self, config_digest: str | None) -> None:
        """A manager's setting made against ``config_digest``: the earlier ones belonged to another file
        if it differs (the engine applies them only on top of the file they were made against)."""
        digest = config_digest or ""
        if self.settings_config_digest is not None and digest != self.settings_config_digest:
            self.limits = None
            self.paytables = {}
        self.settings_config_digest = digest

    def _on_limits_set(self, stored: Stored, entry: e.LimitsSet) -> None:
        self._settings_made_against(entry.config_digest)
        self.limits = {
            "min_ante_cents": int(entry.after["min_ante_cents"]),
            "max_ante_cents": int(entry.after["max_ante_cents"]),
        }
        # The bonus wagers' own maxima (a bonus not named follows the ante's maximum): written as
        # ``own_max_bonus_cents`` since a change of one limit no longer freezes the others. Before
        # that, every maximum in effect was written and the engine held each as the wager's own:
        # read as such, an older entry restores what that engine had.
        bonus = entry.after.get("own_max_bonus_cents", entry.after.get("max_bonus_cents"))
        if isinstance(bonus, dict):  # journaled since the bonus wagers have posted maxima
            self.limits["max_bonus_cents"] = {str(k): int(v) for k, v in bonus.items()}

    def _on_paytable_set(self, stored: Stored, entry: e.PaytableSet) -> None:
        self._settings_made_against(entry.config_digest)
        self.paytables[entry.wager] = entry.after

    @property
    def progressive(self) -> MeterState:
        """The stand-alone progressive's meter (an empty one until its first entry), made on first use."""
        if self._progressive is None:
            from controller.progressive.model import MeterState  # noqa: PLC0415 - see the import above

            self._progressive = MeterState()
        return self._progressive

    @progressive.setter
    def progressive(self, meter: MeterState) -> None:
        self._progressive = meter

    def _on_progressive(self, stored: Stored, entry: e.Entry) -> None:
        self.progressive.apply(entry)

    def _on_device(self, stored: Stored, entry: e.Entry) -> None:
        fold_device(self.devices, stored, entry)

    def _on_clock_offset(self, _stored: Stored, entry: e.ClockOffset) -> None:
        self.clock = entry

    def _on_clock_stepped(self, _stored: Stored, entry: e.ClockStepped) -> None:
        self.clock_stepped = entry

    def _on_config_checked(self, _stored: Stored, entry: e.ConfigChecked) -> None:
        self.config_checked = entry
        if entry.approved_change is not None and entry.file_sha256 is not None:
            self.approved_config_files.pop(entry.file_sha256, None)  # met: it approves no later start

    def _on_change(self, stored: Stored, entry: e.Entry) -> None:
        # The change kinds are read as their classes (no view: controller/journal/entry_view.py), and
        # folded by the two-person changes' own fold, loaded with the first change entry.
        from controller.journal import entries as e  # noqa: PLC0415 - loaded with the entry given
        from controller.journal.proposals import fold as fold_change  # noqa: PLC0415

        fold_change(self.changes, entry, stored.time_utc)
        if isinstance(entry, e.ChangeApproved) and entry.change_kind == "config_file":
            proposal = self.changes.get(entry.change_id)
            sha256 = proposal.params.get("sha256") if proposal is not None else None
            if isinstance(sha256, str):
                self.approved_config_files[sha256] = entry.change_id


_HANDLERS: dict[str, Any] = {
    "clock_offset": TableState._on_clock_offset,
    "clock_stepped": TableState._on_clock_stepped,
    "config_checked": TableState._on_config_checked,
    "change_proposed": TableState._on_change,
    "change_approved": TableState._on_change,
    "change_lapsed": TableState._on_change,
    "change_refused": TableState._on_change,
    "table_opened": TableState._on_table_opened,
    "table_closed": TableState._on_table_closed,
    "software_verified": TableState._on_software_verified,
    "software_checked": TableState._on_software_checked,
    "state_changed": TableState._on_state_changed,
    "round_started": TableState._on_round_started,
    "bet_changed": TableState._on_bet_changed,
    "bets_locked": TableState._on_bets_locked,
    "card_dealt": TableState._on_card_dealt,
    "decision": TableState._on_decision,
    "decision_refused": TableState._on_decision_refused,
    "dead_hand": TableState._on_dead_hand,
    "kill_seat_request": TableState._on_kill_seat_request,
    "round_settled": TableState._on_closing,
    "round_dead": TableState._on_closing,
    "round_voided": TableState._on_closing,
    "fault_raised": TableState._on_fault_raised,
    "fault_acknowledged": TableState._on_fault_acknowledged,
    "fault_cleared": TableState._on_fault_cleared,
    "button_moved": TableState._on_button_moved,
    "dp_waived": TableState._on_dp_waived,
    "limits_set": TableState._on_limits_set,
    "paytable_set": TableState._on_paytable_set,
    "device_ready": TableState._on_device,
    "device_lost": TableState._on_device,
    "device_status": TableState._on_device,
    "security_event": TableState._on_device,
    "noise_suppressed": TableState._on_device,
    "progressive_parameters_changed": TableState._on_progressive,
    "progressive_contribution": TableState._on_progressive,
    "progressive_overflow": TableState._on_progressive,
    "progressive_award_claimed": TableState._on_progressive,
    "progressive_award_paid": TableState._on_progressive,
    "progressive_reset": TableState._on_progressive,
    "progressive_reserve": TableState._on_progressive,
}
"""The fold's handler of each kind it reads. Kinds with no handler (dealer keys, hand counts, logins, …)
change nothing the readers need."""

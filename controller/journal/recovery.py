"""Crash recovery: the table's state rebuilt from its journal, and interrupted rounds voided.

The journal is the only state that survives a restart (STYLE.md: persist the journal, not pickles).
``rebuild_state`` reads it and answers: which round came last, which rounds started and never closed
(and what was wagered on them: the locked wagers and every raise, play or all-in already decided),
which faults still latch the table, where the button is and who holds the bank, whether a manager
closed the table, and the limits and paytables a manager set. ``recover`` then closes every interrupted
round with ``round_voided`` (source "recovery"), every wager of the round returned, unless the caller
says it can resume that round exactly.

Why this is safe to run any number of times: it only closes rounds that have no closing entry, and the
journal refuses a second closing entry for a round (a trigger), so a crash during recovery, or two
recoveries at once, can never void a round twice or void a round that was settled.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from controller.errors import UserError
from controller.journal.kinds import (
    CLOSING_KINDS,
    FAULT_ACKNOWLEDGED,
    FAULT_CLEARED,
    FAULT_RAISED,
    ROUND_STARTED,
    ROUND_VOIDED,
    round_number,
)
from controller.journal.store import Journal, JournalEntry, JournalError
from controller.rules.games import GAMES
from controller.rules.settle import settle_round_json

RECOVERY_SOURCE = "recovery"
INTERRUPTED_REASON = "interrupted: the controller stopped before the round closed"

# The decisions that put chips on the decision spot (the wager named by the game: raise, play, all_in).
WAGERING_ACTIONS = frozenset({"raise", "play", "all_in"})
# The manager's changes to the table's settings (operator_action entries written by the engine; they
# carry ``after``, the panel's own request records do not).
SETTINGS_ACTIONS = frozenset({"set_limits", "set_paytable"})

_STATE_KINDS = (
    "table_opened",
    "table_closed",
    ROUND_STARTED,
    "bets_locked",
    *sorted(CLOSING_KINDS),
    FAULT_RAISED,
    FAULT_ACKNOWLEDGED,
    FAULT_CLEARED,
    "button_moved",
    "dp_waived",
    "decision",
    "operator_action",
)


@dataclass(slots=True)
class OpenRound:
    """A round that started and has no closing entry."""

    round_id: str
    started_seq: int
    started: dict[str, Any]  # the round_started payload
    locked_wagers: dict[int, dict[str, int]] | None = None  # None: bets were never locked
    # seat -> its decision entries' payloads in order (raise/play/all-in put chips at risk; fold; check)
    decisions: dict[int, list[dict[str, Any]]] = field(default_factory=dict)

    @property
    def game(self) -> str:
        return str(self.started["game"])

    @property
    def banking(self) -> dict[str, Any]:
        banking = self.started.get("banking") or {"mode": "house"}
        return dict(banking)

    def wagers(self) -> dict[int, dict[str, int]]:
        """Every wager the round holds, by seat: the locked wagers plus each raise, play or all-in
        already decided (journaled as ``decision``). A void returns all of them."""
        wagers = {seat: dict(seat_wagers) for seat, seat_wagers in (self.locked_wagers or {}).items()}
        if self.locked_wagers is None:
            return wagers
        for seat, entries in self.decisions.items():
            for decision in entries:
                amount = decision.get("amount_cents")
                if (
                    decision.get("action") not in WAGERING_ACTIONS
                    or not isinstance(amount, int)
                    or amount <= 0
                ):
                    continue
                wagers.setdefault(seat, {})[_decision_wager(self.game, str(decision["action"]))] = amount
        return wagers

    def street_of(self, seat: int) -> str | None:
        """Chase the Flush: the street of the seat's all-in (the settle input wants it)."""
        for decision in reversed(self.decisions.get(seat, [])):
            if decision.get("action") in WAGERING_ACTIONS and isinstance(decision.get("street"), str):
                return str(decision["street"])
        return None

    def folded(self, seat: int) -> bool:
        """The seat folded and put nothing on the decision spot (its ante goes back all the same)."""
        entries = self.decisions.get(seat, [])
        return any(d.get("action") == "fold" for d in entries) and not any(
            d.get("action") in WAGERING_ACTIONS for d in entries
        )


def _decision_wager(game: str, action: str) -> str:
    """The wager a decision puts chips on: the game's decision wager (raise, play or all_in)."""
    spec = GAMES.get(game)
    return spec.decision_wager if spec is not None else action


@dataclass(slots=True)
class TableState:
    """The table as its journal leaves it."""

    table_id: str
    last_seq: int = 0
    rounds_started: int = 0
    last_round_id: str | None = None
    last_round_number: int = 0
    open_rounds: list[OpenRound] = field(default_factory=list)
    closed_rounds: dict[str, str] = field(default_factory=dict)  # round_id -> closing kind
    latched_faults: dict[str, dict[str, Any]] = field(default_factory=dict)  # fault_id -> fault_raised
    open_alerts: dict[str, dict[str, Any]] = field(default_factory=dict)  # raised, not yet acknowledged
    button_seat: int | None = None
    designated_player: dict[str, Any] | None = None  # the last round's banking, when a player banked
    waived_seats: list[int] = field(default_factory=list)  # seats that waived the bank since the last round
    table_open: bool = False
    # The last table_closed written by an operator (source "operator:NAME"), unless an operator reopened
    # the table since: a manager's close survives restarts. The daemon's own start/stop entries
    # (source "engine") do not count.
    closed_by_operator: dict[str, Any] | None = None
    # The manager's settings (operator_action set_limits / set_paytable): the last ones set, and the
    # config_digest of the configuration they were made against (the engine applies them only on top of
    # that same configuration: a new configuration file is a deliberate change and wins).
    limits: dict[str, int] | None = None  # {"min_ante_cents", "max_ante_cents"}
    paytables: dict[str, Any] = field(default_factory=dict)  # wager -> preset name or custom lines
    settings_config_digest: str | None = None

    @property
    def held(self) -> bool:
        """A latched fault holds the table: no round starts until a supervisor clears it."""
        return bool(self.latched_faults)


@dataclass(slots=True)
class RecoveryReport:
    state: TableState
    voided: list[str] = field(default_factory=list)
    resumed: list[str] = field(default_factory=list)


def rebuild_state(journal: Journal) -> TableState:
    """Read the journal (only the kinds that carry table state, through the kind index)."""
    state = TableState(table_id=journal.table_id)
    open_by_id: dict[str, OpenRound] = {}
    for entry in journal.entries(kinds=_STATE_KINDS):
        _apply(state, open_by_id, entry)
    last = journal.last_entry()
    state.last_seq = last.seq if last is not None else 0
    state.open_rounds = sorted(open_by_id.values(), key=lambda item: item.started_seq)
    return state


def _apply(state: TableState, open_by_id: dict[str, OpenRound], entry: JournalEntry) -> None:
    payload = entry.payload
    kind = entry.kind
    if kind == "table_opened":
        state.table_open = True
        if entry.source.startswith("operator:"):
            state.closed_by_operator = None
    elif kind == "table_closed":
        state.table_open = False
        if entry.source.startswith("operator:"):
            state.closed_by_operator = dict(payload)
    elif kind == ROUND_STARTED and entry.round_id is not None:
        state.rounds_started += 1
        state.last_round_id = entry.round_id
        state.last_round_number = max(state.last_round_number, round_number(entry.round_id) or 0)
        open_by_id[entry.round_id] = OpenRound(entry.round_id, entry.seq, payload)
        button = payload.get("button_seat")
        if isinstance(button, int):
            state.button_seat = button
        banking = payload.get("banking") or {}
        state.designated_player = dict(banking) if banking.get("mode") == "designated-player" else None
        state.waived_seats = []
    elif kind == "decision" and entry.round_id in open_by_id and isinstance(payload.get("seat"), int):
        open_by_id[entry.round_id].decisions.setdefault(payload["seat"], []).append(dict(payload))
    elif kind == "operator_action":
        _apply_settings(state, payload)
    elif kind == "bets_locked" and entry.round_id in open_by_id:
        wagers = payload.get("wagers") or {}
        open_by_id[entry.round_id].locked_wagers = {
            int(seat): {str(name): int(cents) for name, cents in seat_wagers.items()}
            for seat, seat_wagers in wagers.items()
        }
    elif kind in CLOSING_KINDS and entry.round_id is not None:
        open_by_id.pop(entry.round_id, None)
        state.closed_rounds[entry.round_id] = kind
    elif kind == FAULT_RAISED:
        fault_id = str(payload["fault_id"])
        if payload.get("severity") == "latching":
            state.latched_faults[fault_id] = payload
        state.open_alerts[fault_id] = payload
    elif kind == FAULT_ACKNOWLEDGED:
        state.open_alerts.pop(str(payload["fault_id"]), None)
    elif kind == FAULT_CLEARED:
        fault_id = str(payload["fault_id"])
        state.latched_faults.pop(fault_id, None)
        state.open_alerts.pop(fault_id, None)
    elif kind == "button_moved":
        state.button_seat = int(payload["to_seat"])
        state.waived_seats = []
    elif kind == "dp_waived" and isinstance(payload.get("seat"), int):
        state.waived_seats.append(payload["seat"])


def _apply_settings(state: TableState, payload: dict[str, Any]) -> None:
    """A manager's change of limits or paytable, as the engine journals it (with ``after``)."""
    action = payload.get("action")
    after = payload.get("after")
    if action not in SETTINGS_ACTIONS or after is None:
        return  # a refusal, the panel's request record, or another action
    digest = payload.get("config_digest")
    digest = digest if isinstance(digest, str) else ""
    if state.settings_config_digest is not None and digest != state.settings_config_digest:
        # Made against another configuration file: the earlier changes belonged to the old file.
        state.limits = None
        state.paytables = {}
    state.settings_config_digest = digest
    if action == "set_limits" and isinstance(after, dict):
        state.limits = {
            "min_ante_cents": int(after["min_ante_cents"]),
            "max_ante_cents": int(after["max_ante_cents"]),
        }
    elif action == "set_paytable" and isinstance(payload.get("wager"), str):
        state.paytables[str(payload["wager"])] = after


def void_round_json(open_round: OpenRound) -> tuple[dict[str, Any], dict[str, Any]]:
    """The voided round in the settle input shape (dead, cards withheld) and its settlement, every
    wager the round holds "returned": the locked wagers, every raise, play or all-in already decided,
    and a folded seat's ante and bonuses too (a void means no game was played: nothing is forfeited).

    The cards are left out of ``round``: a dead hand's cards are never shown (RULES.md), and a round cut
    off mid-deal may hold a card twice, which the settle input refuses. They stay in the journal's
    card_dealt entries for an audit."""
    banking = open_round.banking
    dp_seat = banking.get("seat") if banking.get("mode") == "designated-player" else None
    seats: list[dict[str, Any]] = []
    for seat, wagers in sorted(open_round.wagers().items()):
        if seat == dp_seat or not any(wagers.values()):
            continue
        seat_json: dict[str, Any] = {"seat": seat, "cards": [], "wagers": dict(wagers)}
        if open_round.folded(seat):
            seat_json["folded"] = True
        street = open_round.street_of(seat)
        if street is not None and open_round.game == "chase-the-flush":
            seat_json["street"] = street
        seats.append(seat_json)
    round_json: dict[str, Any] = {
        "game": open_round.game,
        "banking": banking,
        "dealer": [],
        "seats": seats,
        "dead": True,
    }
    if seats:
        try:
            return round_json, settle_round_json(round_json)
        except UserError:
            pass  # a lock the engine would refuse (no ante): return its stakes by hand, below
    settlement: dict[str, Any] = {
        "game": open_round.game,
        "banking": banking.get("mode", "house"),
        "dead": True,
        "dealer": None,
        "seats": [
            {
                "seat": seat["seat"],
                "status": "dead",
                "reason": "round dead",
                "hand": None,
                "wagers": {
                    name: {"stake": cents, "result": "returned", "net": 0}
                    for name, cents in seat["wagers"].items()
                },
                "rake": 0,
                "net": 0,
            }
            for seat in seats
        ],
        "banker_net": 0,
        "rake": 0,
    }
    return round_json, settlement


def recover(
    journal: Journal,
    *,
    can_resume: Callable[[OpenRound], bool] | None = None,
    reason: str = INTERRUPTED_REASON,
) -> RecoveryReport:
    """Rebuild the state and void every interrupted round that cannot be resumed exactly."""
    state = rebuild_state(journal)
    report = RecoveryReport(state)
    still_open: list[OpenRound] = []
    for open_round in state.open_rounds:
        if can_resume is not None and can_resume(open_round):
            report.resumed.append(open_round.round_id)
            still_open.append(open_round)
            continue
        round_json, settlement = void_round_json(open_round)
        try:
            journal.append(
                ROUND_VOIDED,
                {"round": round_json, "settlement": settlement, "reason": reason, "by": RECOVERY_SOURCE},
                round_id=open_round.round_id,
                source=RECOVERY_SOURCE,
            )
        except JournalError:
            # Another writer closed it since we read the journal (the store refuses a second close).
            # Re-read that round: if it is closed now, nothing was lost; otherwise the error stands.
            if not any(
                True for _ in journal.entries(round_id=open_round.round_id, kinds=sorted(CLOSING_KINDS))
            ):
                raise
            continue
        report.voided.append(open_round.round_id)
        state.closed_rounds[open_round.round_id] = ROUND_VOIDED
    state.open_rounds = still_open
    last = journal.last_entry()
    state.last_seq = last.seq if last is not None else 0
    return report

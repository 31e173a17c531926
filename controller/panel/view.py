"""The table as the panel shows it: the one reducer's state (controller/journal/state.py) put in the
panel's shapes, and every entry through the one gate (controller/journal/privacy.py).

Pure: :class:`TableView` is fed journal entries in sequence order (``apply``) and answers what may be
shown. Nothing here touches a socket, a clock or a file, and nothing here reads text for cards: an
entry's private part (its cards) is dropped whole until its round is revealed (docs/panel.md, "Hidden
cards"; docs/journal.md, "Privacy").
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from controller.journal.privacy import viewer_event, viewer_typed
from controller.journal.render import game_title, wager_word
from controller.journal.sentence import entry_sentence
from controller.journal.state import TableState
from controller.journal.state_parts import (
    COMMUNITY_POSITION,
    DEALER_POSITION,
    AlertState,
    DeviceState,
    RoundState,
)
from controller.journal.store import JournalEntry
from controller.money import MoneyFormat, money
from controller.names import FAULT_KINDS as ALERT_KINDS  # noqa: F401  (the panel lists them)
from controller.rules.describe import describe_hand_json
from controller.rules.games import GAMES

# What clears each latched fault, as the held banner says it (docs/panel.md "Holds explained").
# Every one ends with a supervisor's Clear on the Alerts page; the words say what to put right first.
CLEARS: dict[str, str] = {
    "supervisor_hold": "a supervisor clears the hold (Alerts, Clear) or voids the round",
    "past_posting": "put the locked wager back as it was, then a supervisor clears it",
    "red_light": "fix the shuffler (its lamp green again), then a supervisor clears it",
    "shuffler_fault": "fix the shuffler, then a supervisor clears it",
    "deck_verification": "reload the shoe with a verified deck, then a supervisor clears it",
    "device_lost": "reconnect the device (its row ready again), then a supervisor clears it",
    "dead_hand": "the dead round's wagers are returned; a supervisor clears it to play on",
    "security_event": "inspect the device and its seal, then a supervisor clears it",
    "integrity": "check the journal (flushtable integrity), then a supervisor clears it",
    "clock": "set the table's clock from the floor's time source (NTP), then a supervisor clears it",
    "config_changed": "have two managers approve the file (flushtable change) or restore it, then clear it",
    "journal_error": "check the journal's disk, then a supervisor clears it",
    "over_limit_raise": "correct the decision chips, then a supervisor clears it",
}
CLEARS_DEFAULT = "a supervisor clears it on the Alerts page"
# A supervisor's hold once no round is open (voided, or between rounds): nothing is left to void.
CLEARS_NO_ROUND: dict[str, str] = {"supervisor_hold": "a supervisor clears the hold (Alerts, Clear)"}

RoundView = RoundState
DeviceView = DeviceState
AlertView = AlertState


class TableView:
    """Everything the panel shows, from the journal alone. Feed entries with :meth:`apply` in order."""

    def __init__(self, table_id: str = "") -> None:
        # The one reducer's state: its fields (last_seq, phase, devices, alerts) are read there, by one name.
        self.state = TableState(table_id)

    def apply(self, entry: JournalEntry) -> None:
        self.state.apply(entry)

    def public_entry(self, entry: JournalEntry, fmt: MoneyFormat = money) -> dict[str, Any]:
        """The entry as it may leave the daemon now: its private part only once its round is revealed
        (``payload`` is then both parts merged, as the writer gave them); its sentence's amounts in
        ``fmt`` (the property's money)."""
        shown = viewer_event(entry, self.state)
        del shown["private"]  # the panel's events carry the merged payload and ``hidden``
        # For people (docs/panel.md "Event log"): the typed entry as the gate lets it out.
        shown["sentence"] = entry_sentence(shown, fmt, viewer_typed(entry, self.state))
        return shown

    # --- the table at a glance ------------------------------------------------------------------
    def snapshot(self) -> dict[str, Any]:
        state = self.state
        round_ = state.current
        seats: list[dict[str, Any]] = []
        community: list[str | None] = []
        dealer_cards: list[str | None] = []
        results: dict[int, Mapping[str, Any]] = {}
        if round_ is not None and round_.settlement is not None:
            for seat_result in round_.settlement.get("seats", []) or []:
                if isinstance(seat_result, Mapping) and isinstance(seat_result.get("seat"), int):
                    results[seat_result["seat"]] = seat_result
        if round_ is not None:
            in_action = round_.wagers()
            for seat in sorted(set(round_.seats) | set(round_.sensed_wagers)):
                seats.append(self._seat_view(round_, seat, in_action, results.get(seat)))
            community = self._visible_cards(round_, COMMUNITY_POSITION)
            dealer_cards = self._visible_cards(round_, DEALER_POSITION)
        game = round_.game if round_ is not None and round_.game else state.game
        return {
            "table_id": state.table_id,
            "game": game,
            "game_title": game_title(game) if game else "—",
            "holds": self.holds(),
            "banking_mode": (
                str(round_.banking.get("mode", state.banking_mode))
                if round_ is not None
                else state.banking_mode
            ),
            "table_open": state.table_open,
            # The release the start verified (docs/panel.md): None when the table runs unverified.
            "software": state.software,
            "software_checked": state.software_checked,
            "phase": state.phase,
            "held": state.phase in {"held", "dead"}
            or any(a.severity == "latching" and a.state != "cleared" for a in state.alerts.values()),
            "last_seq": state.last_seq,
            "last_entry_utc": state.last_entry_utc,
            "button_seat": state.button_seat,
            "round": None
            if round_ is None
            else {
                "round_id": round_.round_id,
                "status": round_.status,
                "phase": round_.phase,
                "locked": round_.locked_wagers is not None,
                "revealed": round_.cards_public,
                "designated_player_seat": round_.dp_seat,
                "designated_player_funds_cents": round_.banking.get("funds"),
                # The dealer's kill_seat key waiting for a supervisor's Confirm or Reject.
                "kill_request": None if round_.kill_request is None else dict(round_.kill_request),
                "dealer_cards": dealer_cards,
                "dealer_dealt": len(round_.cards.get(DEALER_POSITION, {})),
                "community": community,
                "community_dealt": len(round_.cards.get(COMMUNITY_POSITION, {})),
                "seats": seats,
                "banker_net_cents": None
                if round_.settlement is None
                else round_.settlement.get("banker_net"),
            },
            "active_alerts": sum(1 for a in state.alerts.values() if a.state in ("active", "acknowledged")),
            "progressive": self.progressive(),
        }

    def progressive(self) -> dict[str, Any] | None:
        """The stand-alone progressive as its journal leaves it: the meter, the reserve, every 1.39A
        meter, and the awards waiting for a supervisor (None: the table has no progressive)."""
        meter = self.state.progressive
        if not meter.opened:
            return None
        return meter.to_json()

    def holds(self) -> list[dict[str, Any]]:
        """Each latched fault not yet cleared, with what clears it: why the table is held. Voiding is
        offered only while a round is open to void (after a void the hold stays until cleared)."""
        round_ = self.state.current
        clears = CLEARS if round_ is not None and round_.open else {**CLEARS, **CLEARS_NO_ROUND}
        return [
            {
                "fault_id": alert.fault_id,
                "kind": alert.kind,
                "detail": alert.detail,
                "device": alert.device,
                "raised_utc": alert.raised_utc,
                "clears": clears.get(alert.kind, CLEARS_DEFAULT),
            }
            for alert in self.state.alerts.values()
            if alert.severity == "latching" and alert.state != "cleared"
        ]

    @staticmethod
    def _wagers_in_action(
        round_: RoundState,
        seat: int,
        in_action: Mapping[int, Mapping[str, int]],
        result: Mapping[str, Any] | None,
    ) -> tuple[list[dict[str, Any]], str]:
        """A seat's wagers as the round holds them, not as the sensors read them: before the lock the
        sensors' reading is all there is ("betting"); from the lock the locked wagers and each accepted
        decision ("locked"); once settled the settlement's stakes ("settled"). While the round holds
        the chips (locked, not yet settled), a sensor reading that differs is flagged beside it."""
        sensed = round_.sensed_wagers.get(seat, {})
        rows: list[dict[str, Any]] = []
        settled = result.get("wagers") if result is not None else None
        if isinstance(settled, Mapping) and settled:
            for name, wager in settled.items():
                if isinstance(wager, Mapping):
                    stake = wager.get("stake")
                    rows.append(
                        {
                            "name": name,
                            "cents": stake if isinstance(stake, int) else 0,
                            "sensed_cents": sensed.get(name),
                            "disagrees": False,  # chips are paid and collected now: no comparison
                            "result": wager.get("result"),
                            "net_cents": wager.get("net"),
                        }
                    )
            # Chips the settlement does not name (a dead seat's raise): shown as they stood, no result.
            held = in_action.get(seat, {})
            for name in [*held, *sensed]:
                if name not in settled and name not in {r["name"] for r in rows}:
                    cents = held.get(name, sensed.get(name, 0))
                    if cents:
                        rows.append(
                            {
                                "name": name,
                                "cents": cents,
                                "sensed_cents": sensed.get(name),
                                "disagrees": False,
                                "result": None,
                                "net_cents": None,
                            }
                        )
            return rows, "settled"
        if round_.locked_wagers is None:
            return [
                {
                    "name": n,
                    "cents": c,
                    "sensed_cents": c,
                    "disagrees": False,
                    "result": None,
                    "net_cents": None,
                }
                for n, c in sensed.items()
            ], "betting"
        held = in_action.get(seat, {})
        locked = round_.locked_wagers.get(seat, {})
        comparing = round_.open and round_.settlement is None and not round_.folded(seat)
        for name in [*held, *(n for n in sensed if n not in held)]:
            cents = held.get(name, 0)
            reading = sensed.get(name, 0)
            differs = comparing and reading != cents
            # Only a wager locked at "no more bets" can be past-posted: chips on a decision's spot
            # (a raise, a play) are the player deciding, said plainly and never in the amber flag.
            rows.append(
                {
                    "name": name,
                    "cents": cents,
                    "sensed_cents": reading,
                    "disagrees": differs and name in locked,
                    "pending_cents": reading if differs and name not in locked else None,
                    "result": None,
                    "net_cents": None,
                }
            )
        return [r for r in rows if r["cents"] or r["disagrees"] or r["pending_cents"]], "locked"

    def _seat_view(
        self,
        round_: RoundState,
        seat: int,
        in_action: Mapping[int, Mapping[str, int]],
        result: Mapping[str, Any] | None,
    ) -> dict[str, Any]:
        """One seat of ``snapshot``'s round: its wagers as they stand, its visible cards, its decisions
        and its settled result (None before settlement)."""
        wagers, stage = self._wagers_in_action(round_, seat, in_action, result)
        return {
            "seat": seat,
            "wagers": {w["name"]: w["cents"] for w in wagers},
            "wager_rows": wagers,
            "wager_stage": stage,
            "cards": self._visible_cards(round_, seat),
            "dealt": len(round_.cards.get(seat, {})),
            "decisions": [
                {"action": d.action, "amount_cents": d.amount_cents, "street": d.street}
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

    def _visible_cards(self, round_: RoundState, position: int) -> list[str | None]:
        dealt = round_.cards.get(position, {})
        return [dealt[i] if round_.card_visible(position, i) else None for i in sorted(dealt)]


def with_sentence(event: dict[str, Any], fmt: MoneyFormat = money) -> dict[str, Any]:
    """An entry as the gate let it out, plus its sentence (controller/journal/sentence.py)."""
    private = event.get("private")
    shown = {**event, "payload": {**(event.get("payload") or {}), **private}} if private else event
    event["sentence"] = entry_sentence(shown, fmt)
    return event


def public_recall(record: Mapping[str, Any], fmt: MoneyFormat = money) -> dict[str, Any]:
    """A recall record as the panel shows it. Recall (controller/journal/recall.py) already folds the
    round through the reducer and passes every entry through the gate: nothing more to remove. Added
    here, for people: each event's sentence (its amounts in ``fmt``: the property's money), and
    ``view`` (:func:`recall_view`). The table panel's recall page and the floor's round page both."""
    shown = dict(record)
    shown["events"] = [with_sentence(dict(event), fmt) for event in record.get("events") or []]
    shown["view"] = recall_view(shown)
    return shown


_PEOPLE_KINDS = frozenset(
    {
        "operator_action",  # an earlier release's record of any of the kinds below
        "action_refused",
        "seat_killed",
        "void_ordered",
        "difference_accepted",
        "device_reset",
        "limits_set",
        "paytable_set",
        "linked_confirmation_sent",
        "panel_request",
        "operator_note",
        "fault_acknowledged",
        "fault_cleared",
        "round_voided",
        "dealer_key",
        "kill_seat_request",
    }
)


def _in_spot_order(game: str, wagers: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """Wagers in the layout's order (ante first), as people read them; the journal sorts keys."""
    spec = GAMES.get(game)
    order = {name: index for index, name in enumerate(spec.wagers)} if spec else {}
    return sorted(wagers.items(), key=lambda item: (order.get(item[0], len(order)), item[0]))


def banking_words(banking: Mapping[str, Any]) -> str:
    """A round's banking as people read it: "House-banked", or "Designated player, seat 4" (the table
    panel's "Designated player", with the seat that banked the round)."""
    if banking.get("mode", "house") == "house":
        return "House-banked"
    seat = banking.get("seat")
    return "Designated player" + (f", seat {seat}" if seat is not None else "")


def _started_banking(events: Any) -> Mapping[str, Any] | None:
    """The banking the round's round_started announced (its public part), or None."""
    for event in events:
        payload = event.get("payload") if event.get("kind") == "round_started" else None
        banking = payload.get("banking") if isinstance(payload, Mapping) else None
        if isinstance(banking, Mapping):
            return banking
    return None


def recall_view(record: Mapping[str, Any]) -> dict[str, Any]:
    """A closed round as a dispute file reads it: the dealer's and every seat's cards (only what the
    record holds: a dead or voided round's cards are withheld by the gate already), each hand in words,
    the dealer's qualification, every wager's stake, result and net, and the faults and the people's
    actions with their times."""
    round_json: Mapping[str, Any] = record.get("round") or {}
    settlement: Mapping[str, Any] = record.get("settlement") or {}
    events = record.get("events") or []
    cards_by_seat = {
        seat.get("seat"): list(seat.get("cards") or [])
        for seat in round_json.get("seats") or []
        if isinstance(seat, Mapping)
    }
    dealer = settlement.get("dealer") if isinstance(settlement.get("dealer"), Mapping) else None
    # A viewer's record has no settle input (it is in the settled round's private part): the banking
    # is then its round_started's, public, as the table announced it.
    banking = round_json.get("banking") or _started_banking(events) or {"mode": "house"}
    dead_reasons: Mapping[str, Any] = record.get("dead_hands") or {}
    seats = []
    for seat in settlement.get("seats") or []:
        if not isinstance(seat, Mapping):
            continue
        status = str(seat.get("status", ""))
        wagers = []
        for name, wager in _in_spot_order(str(round_json.get("game") or ""), seat.get("wagers") or {}):
            if isinstance(wager, Mapping):
                result = str(wager.get("result", ""))
                wagers.append(
                    {
                        "name": wager_word(name),
                        "stake_cents": wager.get("stake"),
                        "result": result,
                        "result_words": "returned in full" if result == "returned" else result,
                        "odds": wager.get("odds"),
                        "net_cents": None if result == "returned" else wager.get("net"),
                    }
                )
        seats.append(
            {
                "seat": seat.get("seat"),
                "status": status,
                # A kill is recalled as a kill (the dead_hand entry's words), not as the settlement's
                # "wrong card count" for a seat with no cards.
                "reason": dead_reasons.get(str(seat.get("seat"))) or seat.get("reason"),
                "cards": [] if status == "dead" else cards_by_seat.get(seat.get("seat"), []),
                "hand": "" if status == "dead" else describe_hand_json(seat.get("hand")),
                "wagers": wagers,
                "rake_cents": seat.get("rake", 0),
                "net_cents": seat.get("net"),
            }
        )
    times = [str(event.get("time_utc", "")) for event in events if event.get("time_utc")]
    return {
        "game_title": game_title(round_json.get("game") or settlement.get("game")),
        "banking": banking_words(banking),
        "started_utc": times[0] if times else "",
        "closed_utc": times[-1] if times else "",
        "dead": bool(settlement.get("dead")),
        "dealer_label": "Dealer" if banking.get("mode", "house") == "house" else "Designated player",
        "dealer_cards": list(round_json.get("dealer") or []),
        "dealer_hand": describe_hand_json(dealer.get("hand")) if dealer else "",
        "dealer_qualifies": None if dealer is None else bool(dealer.get("qualifies")),
        "community": list(round_json.get("community") or []),
        "seats": seats,
        "banker_net_cents": settlement.get("banker_net"),
        "rake_cents": settlement.get("rake", 0),
        "faults": [e for e in events if e.get("kind") == "fault_raised"],
        "actions": [e for e in events if e.get("kind") in _PEOPLE_KINDS],
        # A designated player's bank after each seat is paid, in settlement order (round_settled's).
        "bank_by_seat": record.get("bank_by_seat"),
    }

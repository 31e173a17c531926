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

from controller.journal.privacy import viewer_event
from controller.journal.state import (
    COMMUNITY_POSITION,
    DEALER_POSITION,
    AlertState,
    DeviceState,
    RoundState,
    TableState,
)
from controller.journal.store import JournalEntry
from controller.names import FAULT_KINDS as ALERT_KINDS  # noqa: F401  (the panel lists them)

RoundView = RoundState
DeviceView = DeviceState
AlertView = AlertState


class TableView:
    """Everything the panel shows, from the journal alone. Feed entries with :meth:`apply` in order."""

    def __init__(self, table_id: str = "") -> None:
        self.state = TableState(table_id)

    @property
    def table_id(self) -> str:
        return self.state.table_id

    @property
    def last_seq(self) -> int:
        return self.state.last_seq

    @property
    def phase(self) -> str:
        return self.state.phase

    @property
    def devices(self) -> dict[str, DeviceState]:
        return self.state.devices

    @property
    def alerts(self) -> dict[str, AlertState]:
        return self.state.alerts

    @property
    def rounds(self) -> dict[str, RoundState]:
        return self.state.rounds

    def apply(self, entry: JournalEntry) -> None:
        self.state.apply(entry)

    def public_entry(self, entry: JournalEntry) -> dict[str, Any]:
        """The entry as it may leave the daemon now: its private part only once its round is revealed
        (``payload`` is then both parts merged, as the writer gave them)."""
        shown = viewer_event(entry, self.state)
        del shown["private"]  # the panel's events carry the merged payload and ``hidden``
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
            for seat in sorted(set(round_.seats) | set(round_.sensed_wagers)):
                cards = self._visible_cards(round_, seat)
                result = results.get(seat)
                seats.append(
                    {
                        "seat": seat,
                        "wagers": dict(round_.sensed_wagers.get(seat, {})),
                        "cards": cards,
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
                )
            community = self._visible_cards(round_, COMMUNITY_POSITION)
            dealer_cards = self._visible_cards(round_, DEALER_POSITION)
        return {
            "table_id": state.table_id,
            "game": (round_.game if round_ is not None and round_.game else state.game),
            "banking_mode": (
                str(round_.banking.get("mode", state.banking_mode))
                if round_ is not None
                else state.banking_mode
            ),
            "table_open": state.table_open,
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
                "dealer_cards": dealer_cards,
                "dealer_dealt": len(round_.cards.get(DEALER_POSITION, {})),
                "community": community,
                "community_dealt": len(round_.cards.get(COMMUNITY_POSITION, {})),
                "seats": seats,
                "banker_net_cents": None
                if round_.settlement is None
                else round_.settlement.get("banker_net"),
            },
            "active_alerts": sum(1 for a in state.alerts.values() if a.state != "cleared"),
        }

    def _visible_cards(self, round_: RoundState, position: int) -> list[str | None]:
        dealt = round_.cards.get(position, {})
        return [dealt[i] if round_.card_visible(position, i) else None for i in sorted(dealt)]


def public_recall(record: Mapping[str, Any]) -> dict[str, Any]:
    """A recall record as the panel shows it. Recall (controller/journal/recall.py) already folds the
    round through the reducer and passes every entry through the gate: nothing more to remove."""
    return dict(record)

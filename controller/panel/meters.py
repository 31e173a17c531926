"""Meters as CONTRACTS.md defines them, folded incrementally from journal entries for the panel.

Pure. handle_cents is the sum of stakes in settled rounds (wagers returned are not action and are not
counted); house_win_cents by wager is minus the sum of the players' nets; the per-round history feeds
the panel's chart.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from typing import Any

from controller.panel.view import EntryLike

HISTORY_ROUNDS = 40


class MeterBook:
    def __init__(self) -> None:
        self.handle_cents = 0
        self.rake_cents = 0
        self.by_wager: dict[str, dict[str, int]] = {}
        self.rounds = {"settled": 0, "dead": 0, "void": 0}
        self.dead_hands = 0
        self.faults_raised = 0
        self.history: deque[dict[str, Any]] = deque(maxlen=HISTORY_ROUNDS)

    def apply(self, entry: EntryLike) -> None:
        kind = entry.kind
        if kind == "fault_raised":
            self.faults_raised += 1
        elif kind == "dead_hand":
            self.dead_hands += 1
        elif kind == "round_dead":
            self.rounds["dead"] += 1
        elif kind == "round_voided":
            self.rounds["void"] += 1
        elif kind == "round_settled":
            self.rounds["settled"] += 1
            settlement = entry.payload.get("settlement")
            if isinstance(settlement, Mapping):
                self._settled(entry, settlement)

    def _settled(self, entry: EntryLike, settlement: Mapping[str, Any]) -> None:
        round_handle = 0
        round_house = 0
        for seat in settlement.get("seats") or []:
            if not isinstance(seat, Mapping):
                continue
            for wager, line in (seat.get("wagers") or {}).items():
                if not isinstance(line, Mapping) or line.get("result") == "returned":
                    continue
                stake = int(line.get("stake", 0))
                net = int(line.get("net", 0))
                meter = self.by_wager.setdefault(str(wager), {"stake_cents": 0, "house_win_cents": 0})
                meter["stake_cents"] += stake
                meter["house_win_cents"] -= net
                round_handle += stake
                round_house -= net
        rake = int(settlement.get("rake", 0) or 0)
        self.handle_cents += round_handle
        self.rake_cents += rake
        self.history.append(
            {
                "round_id": entry.round_id,
                "time_utc": entry.time_utc,
                "handle_cents": round_handle,
                "house_win_cents": round_house,
                "rake_cents": rake,
            }
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "handle_cents": self.handle_cents,
            "house_win_cents": sum(m["house_win_cents"] for m in self.by_wager.values()),
            "by_wager": {name: dict(meter) for name, meter in sorted(self.by_wager.items())},
            "rounds_settled": self.rounds["settled"],
            "rounds_dead": self.rounds["dead"],
            "rounds_voided": self.rounds["void"],
            "dead_hands": self.dead_hands,
            "faults_raised": self.faults_raised,
            "rake_cents": self.rake_cents,
            "history": list(self.history),
        }

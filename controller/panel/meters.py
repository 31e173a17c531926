"""The per-round history behind the panel's meters chart, folded incrementally from journal entries.

The meters themselves come from controller.journal.meters (the one definition, CONTRACTS.md); this
keeps only what the chart needs: for each of the last settled rounds, its handle (stakes not returned),
the house's win on it (minus the players' nets) and the rake. Pure.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from typing import Any

from controller.panel.view import EntryLike

HISTORY_ROUNDS = 40


class MeterBook:
    def __init__(self) -> None:
        self.history: deque[dict[str, Any]] = deque(maxlen=HISTORY_ROUNDS)

    def apply(self, entry: EntryLike) -> None:
        if entry.kind != "round_settled":
            return
        settlement = entry.payload.get("settlement")
        if not isinstance(settlement, Mapping):
            return
        round_handle = 0
        round_house = 0
        for seat in settlement.get("seats") or []:
            if not isinstance(seat, Mapping):
                continue
            for line in (seat.get("wagers") or {}).values():
                if not isinstance(line, Mapping) or line.get("result") == "returned":
                    continue
                round_handle += int(line.get("stake", 0))
                round_house -= int(line.get("net", 0))
        self.history.append(
            {
                "round_id": entry.round_id,
                "time_utc": entry.time_utc,
                "handle_cents": round_handle,
                "house_win_cents": round_house,
                "rake_cents": int(settlement.get("rake", 0) or 0),
            }
        )

    def history_json(self) -> list[dict[str, Any]]:
        return list(self.history)

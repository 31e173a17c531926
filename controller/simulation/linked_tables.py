"""Simulated tables on a linked progressive, for the must-show bench (bench/bench_progressive.py) and the
floor's tests (tests/floor/test_linked_progressive.py).

How they are driven: each table is a real journal (SQLite, the real ``Journal`` writer) with a real
uplink to the floor's nats-server, and a real link client (controller/progressive/linked.py). A round
writes what the engine writes for a Progressive round at the level the floor reads: ``round_started``,
``bets_locked`` (each seat's ante and Progressive unit), ``round_settled`` whose settlement carries the
rules' own ``settle_progressive`` result (its ``contributions.wagers`` is what the floor counts). No
cards are dealt: the hits are the preset's (a seat's longest straight-flush run), so hits can be
forced (several per round at one table, two tables in the same second). At the lock the table asks its
link client whether the link is up; with the link lost its Progressive wagers are refused (the round
plays without them: no contribution, no hit), as the engine does.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from controller.journal.store import Journal, PendingEntry
from controller.names import format_round_id
from controller.progressive.linked import LinkClient
from controller.progressive.model import Hit, ProgressiveParameters
from controller.rules.progressive import PROGRESSIVE, ProgressiveEntry, settle_progressive

ANTE_CENTS = 1000
DAY = dt.date(2026, 12, 5)


@dataclass
class Claim:
    round_id: str
    through_seq: int
    hits: tuple[Hit, ...]


@dataclass
class LinkedTable:
    table_id: str
    journal: Journal
    client: LinkClient
    parameters: ProgressiveParameters
    rounds: int = 0
    wagers_settled: int = 0  # Σ Progressive wagers locked and settled: the journal's count
    refused_rounds: int = 0  # rounds whose Progressive wagers were refused at the lock (link lost)
    claims: list[Claim] = field(default_factory=list)  # every claim made, in the order made

    @classmethod
    def open(
        cls, directory: Path, table_id: str, client: LinkClient, parameters: ProgressiveParameters
    ) -> LinkedTable:
        journal = Journal.open(directory / f"{table_id}.sqlite", table_id, synchronous="OFF")
        return cls(table_id, journal, client, parameters)

    def play_round(self, seats: int, hits: Sequence[Hit] = ()) -> Claim | None:
        """One round with ``seats`` Progressive wagers (seats 1..n) and these hits; the claim to make
        (None: no hit, or the wagers were refused at the lock because the link is lost)."""
        self.rounds += 1
        round_id = format_round_id(self.table_id, DAY, self.rounds)
        settings = self.parameters.settings
        link_up = self.client.link_state().up
        wagers = seats if link_up else 0
        if not link_up:
            self.refused_rounds += 1
        seat_numbers = list(range(1, seats + 1))
        locked = {
            str(seat): {"ante": ANTE_CENTS, **({PROGRESSIVE: settings.unit_cents} if wagers else {})}
            for seat in seat_numbers
        }
        run_by_seat = {hit.seat: hit.run_length for hit in hits} if wagers else {}
        meter = self.client.last_meter or {}
        result = settle_progressive(
            settings,
            int(meter.get("meter_cents", settings.base_cents)),
            int(meter.get("reserve_cents", 0)),
            [ProgressiveEntry(seat, run_by_seat.get(seat, 0)) for seat in seat_numbers[:wagers]],
        )
        seats_json = []
        for seat in seat_numbers:
            seat_wagers: dict[str, object] = {"ante": {"stake": ANTE_CENTS, "result": "push", "net": 0}}
            if wagers:
                award = result.award_for_seat(seat)
                seat_wagers[PROGRESSIVE] = {
                    "stake": settings.unit_cents,
                    "result": "win" if award else "lose",
                    "net": -settings.unit_cents if award is None else award.amount_cents,
                }
            seats_json.append({"seat": seat, "status": "settled", "wagers": seat_wagers, "net": 0})
        settlement: dict[str, object] = {"game": "top-flush", "banking": "house", "seats": seats_json}
        if wagers:
            settlement[PROGRESSIVE] = result.to_json()
        stored = self.journal.append_many(
            [
                PendingEntry(
                    "round_started",
                    {
                        "round_id": round_id,
                        "game": "top-flush",
                        "banking": {"mode": "house"},
                        "seats": seat_numbers,
                    },
                    round_id,
                    "engine",
                ),
                PendingEntry("bets_locked", {"wagers": locked}, round_id, "engine"),
                PendingEntry("round_settled", {"settlement": settlement}, round_id, "engine"),
            ]
        )
        self.wagers_settled += wagers
        claimed = tuple(Hit(award.seat, award.line) for award in result.awards)
        if not claimed:
            return None
        claim = Claim(round_id, stored[-1].seq, claimed)
        self.claims.append(claim)
        return claim

    def close(self) -> None:
        self.journal.close()


__all__ = ["ANTE_CENTS", "Claim", "LinkedTable"]

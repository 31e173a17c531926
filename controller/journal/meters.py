"""Meters, derived from the journal every time (never stored, so they cannot disagree with it).

Definitions (docs/journal.md "Meters"):
- handle_cents: the stakes of the wagers that were in action in settled rounds (a returned wager, on a
  dead seat, was never in action).
- by wager: stake_cents (that handle) and house_win_cents = -(the players' nets) in house-banked
  rounds; in designated-player rounds the players' nets go to the DP, in dp_net_cents.
- house_win_cents = house-banked wins plus the rake (the house's fee at a designated-player table).
- returned_cents: stakes given back: dead seats, dead rounds, voided rounds.
- dead_hands: seats dead in settled and dead rounds (a voided round's seats are not counted).
- Balance: player_net_cents + banker_net_cents + rake_cents == 0, round by round and in total.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from controller.journal.kinds import (
    FAULT_CLEARED,
    FAULT_RAISED,
    ROUND_DEAD,
    ROUND_SETTLED,
    ROUND_STARTED,
    ROUND_VOIDED,
)
from controller.journal.store import Journal


@dataclass(slots=True)
class WagerMeter:
    stake_cents: int = 0
    player_net_cents: int = 0
    house_win_cents: int = 0
    wins: int = 0
    losses: int = 0
    pushes: int = 0
    returned: int = 0


@dataclass(slots=True)
class Meters:
    rounds_started: int = 0
    rounds_settled: int = 0
    rounds_dead: int = 0
    rounds_voided: int = 0
    handle_cents: int = 0
    returned_cents: int = 0
    player_net_cents: int = 0
    banker_net_cents: int = 0
    house_win_cents: int = 0
    dp_net_cents: int = 0
    rake_cents: int = 0
    dead_hands: int = 0
    faults_raised: int = 0
    faults_cleared: int = 0
    faults_by_kind: Counter[str] = field(default_factory=Counter)
    by_wager: dict[str, WagerMeter] = field(default_factory=dict)
    unbalanced_rounds: list[str] = field(default_factory=list)

    @property
    def rounds_open(self) -> int:
        return self.rounds_started - self.rounds_settled - self.rounds_dead - self.rounds_voided

    @property
    def balanced(self) -> bool:
        return (
            not self.unbalanced_rounds
            and self.player_net_cents + self.banker_net_cents + self.rake_cents == 0
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "rounds_started": self.rounds_started,
            "rounds_settled": self.rounds_settled,
            "rounds_dead": self.rounds_dead,
            "rounds_voided": self.rounds_voided,
            "rounds_open": self.rounds_open,
            "handle_cents": self.handle_cents,
            "returned_cents": self.returned_cents,
            "player_net_cents": self.player_net_cents,
            "banker_net_cents": self.banker_net_cents,
            "house_win_cents": self.house_win_cents,
            "dp_net_cents": self.dp_net_cents,
            "rake_cents": self.rake_cents,
            "dead_hands": self.dead_hands,
            "faults_raised": self.faults_raised,
            "faults_cleared": self.faults_cleared,
            "faults_by_kind": dict(sorted(self.faults_by_kind.items())),
            "by_wager": {
                name: {
                    "stake_cents": meter.stake_cents,
                    "player_net_cents": meter.player_net_cents,
                    "house_win_cents": meter.house_win_cents,
                    "wins": meter.wins,
                    "losses": meter.losses,
                    "pushes": meter.pushes,
                    "returned": meter.returned,
                }
                for name, meter in sorted(self.by_wager.items())
            },
            "balanced": self.balanced,
            "unbalanced_rounds": self.unbalanced_rounds,
        }


_KINDS = (ROUND_STARTED, ROUND_SETTLED, ROUND_DEAD, ROUND_VOIDED, FAULT_RAISED, FAULT_CLEARED)


def compute_meters(journal: Journal) -> Meters:
    meters = Meters()
    for entry in journal.entries(kinds=_KINDS):
        if entry.kind == ROUND_STARTED:
            meters.rounds_started += 1
        elif entry.kind == FAULT_RAISED:
            meters.faults_raised += 1
            meters.faults_by_kind[str(entry.payload.get("kind"))] += 1
        elif entry.kind == FAULT_CLEARED:
            meters.faults_cleared += 1
        else:
            if entry.kind == ROUND_SETTLED:
                meters.rounds_settled += 1
            elif entry.kind == ROUND_DEAD:
                meters.rounds_dead += 1
            else:
                meters.rounds_voided += 1
            _add_settlement(
                meters,
                entry.round_id or "?",
                entry.payload.get("settlement") or {},
                voided=entry.kind == ROUND_VOIDED,
            )
    return meters


def _add_settlement(meters: Meters, round_id: str, settlement: dict[str, Any], *, voided: bool) -> None:
    house_banked = settlement.get("banking", "house") == "house"
    round_player_net = 0
    for seat in settlement.get("seats", []):
        # A voided round's seats are "dead" in its settlement shape, but no hand was judged dead.
        if seat.get("status") == "dead" and not voided:
            meters.dead_hands += 1
        round_player_net += int(seat.get("net", 0))
        for name, wager in (seat.get("wagers") or {}).items():
            meter = meters.by_wager.setdefault(name, WagerMeter())
            stake = int(wager.get("stake", 0))
            net = int(wager.get("net", 0))
            result = wager.get("result")
            if result == "returned":
                meter.returned += 1
                meters.returned_cents += stake
                continue
            meter.stake_cents += stake
            meter.player_net_cents += net
            meters.handle_cents += stake
            if house_banked:
                meter.house_win_cents -= net
            if result == "win":
                meter.wins += 1
            elif result == "lose":
                meter.losses += 1
            else:
                meter.pushes += 1
    banker_net = int(settlement.get("banker_net", 0))
    rake = int(settlement.get("rake", 0))
    meters.player_net_cents += round_player_net
    meters.banker_net_cents += banker_net
    meters.rake_cents += rake
    meters.house_win_cents += rake + (banker_net if house_banked else 0)
    if not house_banked:
        meters.dp_net_cents += banker_net
    if round_player_net + banker_net + rake != 0:
        meters.unbalanced_rounds.append(round_id)

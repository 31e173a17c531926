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

from controller.journal.state import Meters, TableState, WagerMeter
from controller.journal.store import Journal

__all__ = ["Meters", "WagerMeter", "compute_meters"]


# The kinds the meters are folded from (through the kind index: a long journal is mostly cards and bets).
METER_KINDS = (
    "round_started",
    "round_settled",
    "round_dead",
    "round_voided",
    "fault_raised",
    "fault_cleared",
)


def compute_meters(journal: Journal) -> Meters:
    """The meters of the whole journal: the one reducer's fold (controller/journal/state.py) of the
    entries that carry them."""
    return TableState(journal.table_id).apply_all(journal.replay(kinds=METER_KINDS)).meters

"""Meters, derived from the journal: the totals kept beside it in the append's own transaction
(controller/journal/totals.py: the same arithmetic, summed per hour, day and for the whole journal), or,
in a journal of an earlier schema read without migrating it, the reducer's fold of its entries. The two
are equal by construction and by test (tests/journal/test_totals.py).

Definitions (docs/journal.md "Meters"):
- handle_cents: the stakes of the wagers that were in action in settled rounds (a returned wager, on a
  dead seat, was never in action).
- by wager: stake_cents (that handle) and house_win_cents = -(the players' nets) in house-banked
  rounds; in designated-player rounds the players' nets go to the DP, in dp_net_cents.
- house_win_cents = house-banked wins plus the rake (the house's fee at a designated-player table).
- returned_cents: stakes given back: dead seats, dead rounds, voided rounds.
- dead_hands: seats dead in settled and dead rounds (a voided round's seats are not counted).
- progressive_net_cents: the progressive's take (its wagers collected less its awards): the jackpot
  fund's, not the house's.
- Balance: player_net_cents + banker_net_cents + rake_cents + progressive_net_cents == 0, round by round
  and in total (the players' Progressive nets are the progressive's, not the banker's).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from controller.journal.kinds import METER_KINDS
from controller.journal.state import TableState
from controller.journal.state_parts import HISTORY_ROUNDS, Meters, WagerMeter
from controller.journal.store import Journal
from controller.journal.totals import ALL_PERIOD, range_periods, summed

__all__ = ["Meters", "RangeTotals", "WagerMeter", "compute_meters", "fold_meters", "range_totals"]


def compute_meters(journal: Journal) -> Meters:
    """The meters of the whole journal: its stored totals (one row per key, whatever its age), or the
    fold where it has none."""
    if journal.file.has_totals:
        return summed(journal.indexes.period_totals([ALL_PERIOD])).meters
    return fold_meters(journal)


def fold_meters(journal: Journal) -> Meters:
    """The one reducer's fold (controller/journal/state.py) of the entries that carry the meters: what
    the totals must equal."""
    return TableState(journal.table_id).apply_all(journal.replay(kinds=METER_KINDS)).meters


@dataclass
class RangeTotals:
    """A range's meters (``start_utc`` inclusive, ``end_utc`` exclusive, by the closing entry's time),
    the theoretical win's inputs (house-banked stakes by game, banking and wager; designated-player
    rounds) and how they were read (``source``: "totals" or "fold")."""

    start_utc: str
    end_utc: str
    meters: Meters
    stakes: dict[tuple[str, str, str], int] = field(default_factory=dict)
    dp_rounds: int = 0
    source: str = "totals"


def range_totals(journal: Journal, start_utc: str, end_utc: str) -> RangeTotals | None:
    """A range on whole hours from the stored totals (a shift: 8 hour rows; a day: one row), with the
    chart's history of its last settled rounds through the round index. None when the journal has no
    totals or an end is not on a whole hour: the caller folds."""
    periods = range_periods(start_utc, end_utc) if journal.file.has_totals else None
    if periods is None:
        return None
    total = summed(journal.indexes.period_totals(periods))
    meters = total.meters
    for seq in journal.indexes.closed_round_seqs(
        start_utc=start_utc, end_utc=end_utc, status="settled", last=HISTORY_ROUNDS
    ):
        closing = journal.entry(seq)
        if closing is None:
            continue
        one = Meters()  # the round's chart point, by the one meters fold
        one.count(closing.entry, str(closing.round_id), time_utc=closing.time_utc)
        meters.history.extend(one.history)
    return RangeTotals(start_utc, end_utc, meters, total.stakes, total.dp_rounds)

"""The gaming-day report's progressive figures from the entries the progressive really writes
(controller/journal/entries/): a contribution's increment (meter and reserve) counted, and an award
counted once — when it is paid — though the controller journals it twice (progressive_award_claimed at
the hit, progressive_award_paid at the payment, both with its amount_cents).

Checked to fail on main (5f1b08c): contributions were 0 (no ``contribution_cents`` in the entry) and the
award counted twice (100,000 for one 50,000 award)."""

from __future__ import annotations

import msgspec

from controller.floor import gaming_day as gd
from controller.journal import entries as e
from controller.locale import DEFAULT_PROPERTY


def day_entry(entry: e.Entry, time_utc: str) -> gd.DayEntry:
    payload = msgspec.to_builtins(entry)
    return gd.DayEntry("T9", entry.kind, time_utc, payload)


def test_a_contribution_and_one_award_claimed_then_paid() -> None:
    contribution = e.ProgressiveContribution(
        meter_id="M1", table_id="T9", round_id="R1", wagers=5, unit_cents=100, in_meter_cents=500,
        increment_cents=100, to_meter_cents=80, hidden_cents=20, meter_after_cents=1_000_080,
        reserve_after_cents=20,
    )  # fmt: skip
    claimed = e.ProgressiveAwardClaimed(
        meter_id="M1", award_id="A1", claim_number=1, table_id="T9", round_id="R1", seat=3, line=1,
        award=5_000, amount_cents=50_000, paid_from="house", needs_confirmation=True,
    )  # fmt: skip
    paid = e.ProgressiveAwardPaid(
        meter_id="M1", award_id="A1", table_id="T9", round_id="R1", seat=3, amount_cents=50_000, by="sup"
    )
    entries = [
        day_entry(contribution, "2026-12-01T07:00:00.000000Z"),
        day_entry(claimed, "2026-12-01T07:00:00.100000Z"),
        day_entry(paid, "2026-12-01T07:05:00.000000Z"),
    ]
    table = gd.build_report("2026-12-01", DEFAULT_PROPERTY, entries, {"T9": "P1"}).rows[0].figures
    assert table.progressive_contributions_cents == 100
    assert table.progressive_awards_cents == 50_000

"""The pure parts of the gaming-day report and the surveillance events (controller/floor/gaming_day.py,
controller/floor/surveillance.py): progressive entries counted once the progressive writes them, the
gaming day's bounds, a changed byte of a report's CSV caught by its digest line, hold % rounding, and
the alert kinds other parts add filed under software and clock."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest

from controller.errors import UserError
from controller.floor import gaming_day as gd
from controller.floor import surveillance as sv
from controller.journal import entries as typed
from controller.locale import DEFAULT_PROPERTY, property_settings
from tests.floor.test_surveillance_and_auditor import SCHEMA


def entry(entry_kind: str, time_utc: str, **payload: Any) -> gd.DayEntry:
    return gd.DayEntry("T9", entry_kind, time_utc, payload)


def written(time_utc: str, typed_entry: typed.Entry) -> gd.DayEntry:
    """A day's row of an entry as the progressive writes it (its typed class, as the floor stores it)."""
    return gd.DayEntry("T9", typed_entry.kind, time_utc, typed.public_dict(typed_entry))


def contribution(time_utc: str, increment_cents: int) -> gd.DayEntry:
    return written(
        time_utc,
        typed.ProgressiveContribution(
            meter_id="M1", table_id="T9", round_id="T9-1", wagers=1, unit_cents=increment_cents,
            in_meter_cents=increment_cents, increment_cents=increment_cents, to_meter_cents=increment_cents,
            hidden_cents=0, meter_after_cents=10_000 + increment_cents, reserve_after_cents=0,
        ),
    )  # fmt: skip


def award_paid(time_utc: str, amount_cents: int) -> gd.DayEntry:
    return written(
        time_utc,
        typed.ProgressiveAwardPaid(
            meter_id="M1", award_id="A1", table_id="T9", round_id="T9-2", seat=3, amount_cents=amount_cents,
            by="engine",
        ),
    )  # fmt: skip


def test_progressive_amounts_and_the_days_bounds() -> None:
    entries = [
        contribution("2026-12-01T05:59:59.999999Z", 100),  # the day before
        contribution("2026-12-01T06:00:00.000000Z", 125),
        contribution("2026-12-01T07:00:00.000000Z", 75),
        award_paid("2026-12-02T05:59:59.999999Z", 50_000),
        award_paid("2026-12-02T06:00:00.000000Z", 9),  # the next day
        entry("fault_raised", "2026-12-01T08:00:00.000000Z", **raised("F1", "clock_offset", "alert")),
    ]
    report = gd.build_report("2026-12-01", DEFAULT_PROPERTY, entries, {"T9": "P1"})
    table = report.rows[0].figures
    assert (table.progressive_contributions_cents, table.progressive_awards_cents, table.faults) == (
        200,
        50_000,
        1,
    )
    assert [r.scope for r in report.rows] == ["table", "pit", "floor"]
    with pytest.raises(UserError, match="--pit: no table of the floor is in pit 'P2'"):
        gd.build_report("2026-12-01", DEFAULT_PROPERTY, entries, {"T9": "P1"}, pit="P2")
    with pytest.raises(UserError, match="not a date"):
        gd.gaming_day_range("2026-02-30", DEFAULT_PROPERTY)


def test_a_changed_byte_is_caught_by_the_digest_line() -> None:
    settled = entry(
        "round_settled",
        "2026-12-01T10:00:00.000000Z",
        settlement={"game": "high-card-flush", "banking": "house", "rake": 0, "banker_net": -500,
                    "seats": [{"seat": 1, "status": "live", "net": 500,
                               "wagers": {"ante": {"stake": 1000, "result": "win", "net": 500}}}]},
    )  # fmt: skip
    text = gd.build_report("2026-12-01", DEFAULT_PROPERTY, [settled], {}).csv_text()
    assert gd.check_digest(text)
    assert "hold_pct,-50.00," in text  # the house lost half the handle
    assert not gd.check_digest(text.replace("1000", "1001"))
    assert not gd.check_digest(text.rsplit("\n", 2)[0] + "\n")  # the digest line cut off


def raised(fault_id: str, kind: str, severity: str) -> dict[str, Any]:
    """A fault_raised's public part as the engine writes it (its typed class)."""
    return typed.public_dict(
        typed.FaultRaised(
            fault_id=fault_id,
            kind_of_fault=kind,
            severity=severity,
            device=None,
            reason=typed.Reason(code="operator", message="x"),
        )
    )


@pytest.mark.parametrize(
    ("kind", "category"),
    [("clock_offset", "clock"), ("clock_backwards", "clock"), ("software_mismatch", "software"),
     ("config_changed_on_disk", "software"), ("red_light", "device"), ("something_new", "operations")],
)  # fmt: skip
def test_alert_kinds_are_filed(kind: str, category: str) -> None:
    floor_entry = sv.FloorEntry("T9", 4, "2026-12-01T10:00:00.000000Z", None, "engine", "fault_raised",
                                raised("F1", kind, "alert"), "a" * 64)  # fmt: skip
    (event,) = sv.events_of(floor_entry, 1)
    assert (event["type"], event["category"]) == ("alert", category)
    jsonschema.validate(event, SCHEMA)


def test_a_past_posting_alert_is_the_past_posting_event_not_a_second_one() -> None:
    floor_entry = sv.FloorEntry("T9", 5, "2026-12-01T10:00:00.000000Z", "R1", "sensors", "fault_raised",
                                raised("F2", "past_posting", "latching"), "b" * 64)  # fmt: skip
    assert sv.events_of(floor_entry, 1) == []


def test_a_big_win_and_a_past_posting_read_in_the_propertys_money() -> None:
    # A JPY property: the yen has no minor unit, so 5000 is ¥5,000, never "50.00".
    yen = property_settings(currency="JPY", currency_symbol="¥").money
    settled = sv.FloorEntry("T9", 6, "2026-12-01T10:00:00.000000Z", "R1", "engine", "round_settled",
                            {"settlement": {"game": "g", "banking": "house",
                                            "seats": [{"seat": 2, "net": 5000, "wagers": {}}]}},
                            "c" * 64)  # fmt: skip
    (event,) = sv.events_of(settled, 1000, yen)
    assert event["summary"] == "seat 2 won ¥5,000 (threshold ¥1,000)"
    posted = sv.FloorEntry("T9", 7, "2026-12-01T10:00:00.000000Z", "R1", "sensors", "past_posting",
                           {"seat": 1, "wager": "ante", "locked_cents": 500, "seen_cents": 2500},
                           "d" * 64)  # fmt: skip
    (event,) = sv.events_of_rows([(posted.table_id, posted.seq, posted.time_utc, posted.round_id,
                                   posted.source, posted.kind, posted.payload, posted.hash)],
                                 1000, property_settings(currency="JPY").money)  # fmt: skip
    assert event["summary"] == "seat 1 ante: JPY 500 locked, JPY 2,500 seen after the lock"

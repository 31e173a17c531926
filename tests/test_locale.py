"""The property's time and money (controller/locale.py, controller/money.py): gaming days and shifts in
the property's zone (23 and 25 hours on the days the clocks change), the defaults exactly as before the
setting, the times written in the zone with the zone named, and amounts in the property's currency (JPY
with no decimals, EUR with its symbol or its code). No clock is read: every moment is given."""

from __future__ import annotations

import itertools
from datetime import UTC, date, datetime, timedelta

import pytest

from controller.locale import (
    DEFAULT_PROPERTY,
    PropertyRefused,
    gaming_day_bounds,
    gaming_day_of,
    iso_time,
    legacy_property,
    property_settings,
    shift_bounds,
    shift_of,
    shifts_between,
    time_text,
)
from controller.money import MoneyFormat, format_money

BERLIN = property_settings(time_zone="Europe/Berlin", currency="EUR", currency_symbol="€")
NEW_YORK = property_settings(
    time_zone="America/New_York",
    gaming_day_start="04:00",
    shifts={"morning": "04:00", "afternoon": "12:00", "night": "20:00"},
)


def at(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def hours(bounds: tuple[datetime, datetime]) -> float:
    return (bounds[1] - bounds[0]) / timedelta(hours=1)


def test_the_defaults_are_the_utc_shifts_and_dollars_of_before() -> None:
    assert legacy_property(6) == DEFAULT_PROPERTY
    assert gaming_day_bounds(date(2026, 12, 1)) == (at("2026-12-01T06:00"), at("2026-12-02T06:00"))
    assert shift_bounds(date(2026, 12, 1), "day") == (at("2026-12-01T06:00"), at("2026-12-01T14:00"))
    assert shift_bounds(date(2026, 12, 1), "swing") == (at("2026-12-01T14:00"), at("2026-12-01T22:00"))
    # The grave shift of a gaming day starts that evening and ends the next morning.
    assert shift_bounds(date(2026, 12, 31), "grave") == (at("2026-12-31T22:00"), at("2027-01-01T06:00"))
    assert shift_of(at("2026-12-02T05:59:59")) == (date(2026, 12, 1), "grave")
    assert shift_of(at("2026-12-02T06:00")) == (date(2026, 12, 2), "day")
    assert DEFAULT_PROPERTY.money(123456) == "1,234.56" == format_money(123456)
    assert time_text("2026-12-05T14:05:31.123456Z") == "2026-12-05 14:05:31 UTC"


@pytest.mark.parametrize(
    ("prop", "day", "length_h"),
    [
        (BERLIN, date(2027, 3, 27), 23),  # the clocks go forward on the night of 27-28 March 2027
        (BERLIN, date(2027, 10, 30), 25),  # and back on the night of 30-31 October
        (BERLIN, date(2027, 6, 1), 24),
        (NEW_YORK, date(2027, 3, 13), 23),  # 14 March 2027, 02:00 EST -> 03:00 EDT
        (NEW_YORK, date(2027, 11, 6), 25),  # 7 November 2027, 02:00 EDT -> 01:00 EST
    ],
)
def test_a_gaming_day_is_23_or_25_hours_when_the_clocks_change(
    prop: object, day: date, length_h: int
) -> None:
    assert isinstance(prop, type(DEFAULT_PROPERTY))
    bounds = gaming_day_bounds(day, prop)
    assert hours(bounds) == length_h
    # Its shifts tile it: each ends where the next starts, the last where the next gaming day starts.
    shifts = [shift_bounds(day, shift.name, prop) for shift in prop.shifts]
    assert shifts[0][0] == bounds[0]
    assert shifts[-1][1] == bounds[1]
    assert all(a[1] == b[0] for a, b in itertools.pairwise(shifts))
    assert sum(hours(s) for s in shifts) == length_h
    # Every moment of the day is in it and in one of its shifts; the moments either side are not.
    assert gaming_day_of(bounds[0], prop) == day
    assert gaming_day_of(bounds[1] - timedelta(microseconds=1), prop) == day
    assert gaming_day_of(bounds[1], prop) == day + timedelta(days=1)
    assert gaming_day_of(bounds[0] - timedelta(microseconds=1), prop) == day - timedelta(days=1)


def test_berlin_shifts_are_local_times_and_the_times_name_the_zone() -> None:
    # Winter: CET is UTC+1, so the day shift of 5 December starts at 05:00 UTC.
    assert shift_bounds(date(2026, 12, 5), "day", BERLIN) == (at("2026-12-05T05:00"), at("2026-12-05T13:00"))
    assert shift_of(at("2026-12-05T05:30"), BERLIN) == (date(2026, 12, 5), "day")  # 06:30 CET
    assert shift_of(at("2026-12-05T05:30")) == (date(2026, 12, 4), "grave")  # the same moment in UTC
    # Summer: CEST is UTC+2.
    assert shift_bounds(date(2027, 7, 1), "grave", BERLIN) == (at("2027-07-01T20:00"), at("2027-07-02T04:00"))
    assert time_text("2026-12-05T13:05:31.000000Z", BERLIN) == "2026-12-05 14:05:31 CET"
    assert time_text(at("2027-07-01T12:05:31"), BERLIN, with_date=False) == "14:05:31 CEST"
    assert iso_time("2026-12-05T13:05:31.000000Z", BERLIN) == "2026-12-05T14:05:31+01:00"
    assert iso_time(at("2027-07-01T12:05:31"), NEW_YORK) == "2027-07-01T08:05:31-04:00"


def test_the_shifts_given_to_sql_cover_the_span_in_order() -> None:
    shifts = shifts_between(at("2026-12-04T23:00"), at("2026-12-05T14:00"), BERLIN)
    assert [label for label, _, _ in shifts] == [
        "2026-12-04 day", "2026-12-04 swing", "2026-12-04 grave",
        "2026-12-05 day", "2026-12-05 swing", "2026-12-05 grave",
    ]  # fmt: skip
    assert all(a[2] == b[1] for a, b in itertools.pairwise(shifts))


@pytest.mark.parametrize(
    ("money", "cents", "signed", "text"),
    [
        (property_settings(currency="JPY").money, 123456, False, "JPY 123,456"),  # yen: no decimals
        (property_settings(currency="JPY", currency_symbol="¥").money, -5000, False, "-¥5,000"),
        (property_settings(currency="JPY", currency_symbol="¥").money, 0, True, "¥0"),
        (property_settings(currency="EUR").money, 123450, False, "EUR 1,234.50"),
        (property_settings(currency="EUR").money, -500, False, "EUR -5.00"),
        (BERLIN.money, 1000, True, "+€10.00"),
        (BERLIN.money, -123456789, False, "-€1,234,567.89"),
        (property_settings(currency="KWD").money, 1234567, False, "KWD 1,234.567"),  # three decimals
        (MoneyFormat(), 5, False, "0.05"),
    ],
)
def test_money_in_the_property_s_currency(money: MoneyFormat, cents: int, signed: bool, text: str) -> None:
    assert money(cents, signed=signed) == text


@pytest.mark.parametrize(
    ("values", "line"),
    [
        ({"time_zone": "Europe/Berln"}, "time_zone: 'Europe/Berln' is not a time zone this machine knows"),
        ({"time_zone": "../../etc/passwd"}, "time_zone: '../../etc/passwd' is not an IANA time zone name"),
        ({"gaming_day_start": "6:00"}, "gaming_day_start: '6:00' is not a local time of day HH:MM"),
        ({"gaming_day_start": "07:00"}, "shifts: the default shifts start at 06:00, not at gaming_day_start"),
        ({"shifts": {"day": "07:00", "night": "19:00"}}, "shifts: no shift starts at gaming_day_start 06:00"),
        ({"shifts": {"day": "06:00", "Night": "18:00"}}, "shifts.Night: a shift's name is 1 to 32 of a-z"),
        ({"shifts": {"day": "06:00", "late": "06:00"}}, "shifts.day: two shifts start at 06:00"),
        ({"shifts": {}}, "shifts: empty"),
        ({"currency": "eur"}, "currency: 'eur' is not a three-letter ISO 4217 code like EUR"),
        ({"currency": "EUR", "currency_decimals": 4}, "currency_decimals: from 0 to 3, not 4"),
        ({"currency_symbol": "1€"}, "currency_symbol: '1€' is not a symbol like € or $"),
        # A final line break is no part of a value: each is refused as its key's own mistake.
        ({"time_zone": "Europe/Berlin\n"}, "time_zone: 'Europe/Berlin\\n' is not an IANA time zone name"),
        ({"gaming_day_start": "06:00\n"}, "gaming_day_start: '06:00\\n' is not a local time of day HH:MM"),
        ({"shifts": {"day": "06:00", "night": "18:00\n"}}, "shifts.night: '18:00\\n' is not a local time"),
        ({"currency": "EUR\n"}, "currency: 'EUR\\n' is not a three-letter ISO 4217 code like EUR"),
    ],
)
def test_each_bad_value_is_one_line_naming_its_key(values: dict[str, object], line: str) -> None:
    with pytest.raises(PropertyRefused) as refused:
        property_settings(**values)  # type: ignore[arg-type]
    assert str(refused.value).startswith(line)
    assert "\n" not in str(refused.value)


def test_a_shift_name_with_a_final_line_break_is_refused() -> None:
    # Not in the list above: the key names the shift as written, line break and all.
    with pytest.raises(PropertyRefused, match="a shift's name is 1 to 32 of a-z"):
        property_settings(shifts={"day\n": "06:00", "night": "18:00"})


@pytest.mark.parametrize("zone", ["America/New_York", "Europe/Berlin", "Australia/Lord_Howe"])
@pytest.mark.parametrize(
    ("day_start", "shifts"),
    [
        ("06:00", {"day": "06:00", "swing": "14:00", "late": "02:30", "grave": "03:00"}),
        ("02:30", {"early": "02:30", "day": "03:00", "swing": "12:00", "grave": "22:00"}),
        ("01:00", {"a": "01:00", "b": "01:45", "c": "02:15", "d": "02:45", "e": "03:15", "f": "13:00"}),
    ],
)
def test_shift_bounds_never_decrease_and_tile_time_over_a_dst_year(
    zone: str, day_start: str, shifts: dict[str, str]
) -> None:
    # Shift starts in and around the hour the clocks skip or repeat (Lord Howe: a half-hour change).
    prop = property_settings(time_zone=zone, gaming_day_start=day_start, shifts=shifts)
    first = datetime(2026, 1, 1, 12, tzinfo=UTC)
    bounds = shifts_between(first, first + timedelta(days=366), prop)
    assert len(bounds) == 367 * len(shifts)
    for label, start, end in bounds:
        assert start <= end, f"{label} ends before it starts: [{start.isoformat()}, {end.isoformat()})"
        name = label.split(" ", 1)[1]
        assert shift_bounds(date.fromisoformat(label.split(" ")[0]), name, prop) == (start, end)
    for (_, _, end), (label, start, _) in itertools.pairwise(bounds):
        assert start == end, f"{label} does not start where the shift before it ends"
    for _, start, end in bounds:
        if start < end:  # an empty shift (a start the clocks skipped) holds no moment
            assert shift_of(start, prop) == shift_of(end - timedelta(microseconds=1), prop)


def test_a_shift_the_spring_change_skips_is_empty_not_reversed() -> None:
    prop = property_settings(
        time_zone="America/New_York",
        shifts={"day": "06:00", "swing": "14:00", "late": "02:30", "grave": "03:00"},
    )
    late = shift_bounds(date(2026, 3, 7), "late", prop)
    assert late == (datetime(2026, 3, 8, 7, tzinfo=UTC), datetime(2026, 3, 8, 7, tzinfo=UTC))
    assert shift_of(datetime(2026, 3, 8, 7, tzinfo=UTC), prop) == (date(2026, 3, 7), "grave")

"""The property's time and money (docs/configuration.md "[property]"): its time zone, gaming day,
shifts and currency, and the one function per kind that writes them for people.

Pure: the standard library only (zoneinfo; the zone data is the system's, or the ``tzdata`` package's),
no clock and no I/O, so the engine, the panels, the CLI and the floor all read the same definitions:

- :func:`time_text` / :func:`iso_time`: a moment (a UTC ``datetime`` or a journal time text) in the
  property's zone with the zone named: ``"2026-12-05 14:05:31 CET"`` for people, ISO 8601 with its
  offset (``"2026-12-05T14:05:31+01:00"``) for CSV;
- :meth:`PropertySettings.money`: the one money formatter (``controller/money.py`` ``MoneyFormat``) in
  the property's currency: symbol, code and decimals (0 for JPY); amounts stay integer minor units;
- :func:`gaming_day_bounds`, :func:`shift_bounds`, :func:`gaming_day_of`, :func:`shift_of`,
  :func:`shifts_between`: the gaming day and its shifts as UTC bounds, computed in the property's zone
  (a gaming day is 23 or 25 hours long on the days the clocks change). The floor's SQL takes these
  bounds as parameters rather than defining shifts a second time.

A shift belongs to the gaming day it starts in: with the defaults (UTC, 06:00; day 06:00, swing
14:00, grave 22:00) the grave shift of 2026-12-01 runs from 2026-12-01 22:00 to 2026-12-02 06:00, as
before this setting existed.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, time, timedelta, tzinfo

from controller.money import MoneyFormat
from table_names.records import FrozenRecord

# zoneinfo loads where a zone other than UTC is first read (``zone_of``): `settle --text` prints no
# time and so never reads one (zoneinfo with sysconfig for its data paths: ~2 ms of a start, issue 28).

# Patterns compiled on first use (``re``'s own cache): a reader that checks no property (`flushtable
# recall` of a table with the defaults) compiles none of them.
# \Z, not $: `$` also matches before a final line break ("EUR\n" would be printed before every amount).
_HH_MM = r"^(?P<h>[01]\d|2[0-3]):(?P<m>[0-5]\d)\Z"
_SHIFT_NAME = r"^[a-z][a-z0-9_]{0,31}\Z"
_CURRENCY = r"^[A-Z]{3}\Z"
_ZONE_NAME = r"^[A-Za-z0-9_+\-]+(/[A-Za-z0-9_+\-]+)*\Z"
MAX_SYMBOL_CHARS = 8
MAX_SHIFTS = 12
# ISO 4217 minor units of the currencies whose minor unit is not the hundredth; any other code: 2.
MINOR_UNITS: dict[str, int] = {
    "BHD": 3, "BIF": 0, "CLP": 0, "DJF": 0, "GNF": 0, "IQD": 3, "ISK": 0, "JOD": 3, "JPY": 0, "KMF": 0,
    "KRW": 0, "KWD": 3, "LYD": 3, "OMR": 3, "PYG": 0, "RWF": 0, "TND": 3, "UGX": 0, "VND": 0, "VUV": 0,
    "XAF": 0, "XOF": 0, "XPF": 0,
}  # fmt: skip
MAX_DECIMALS = 3


class PropertyRefused(ValueError):
    """A ``[property]`` value refused: ``key`` (under ``property.``) and the reason, one line each."""

    def __init__(self, key: str, reason: str) -> None:
        super().__init__(f"{key}: {reason}")
        self.key = key
        self.reason = reason


def minutes_of(text: str, key: str) -> int:
    """``"06:30"`` -> 390; anything else refused (``key`` names it)."""
    match = re.match(_HH_MM, text)
    if match is None:
        raise PropertyRefused(key, f"{text!r} is not a local time of day HH:MM, like 06:00")
    return int(match["h"]) * 60 + int(match["m"])


def zone_of(name: str) -> tzinfo:
    """The IANA zone ``name`` (``Europe/Berlin``), refused in one line when unknown. ``UTC`` (the
    default property's) is the standard library's fixed UTC: the same offset, name and arithmetic as the
    zone database's, without loading ``zoneinfo`` and its data paths (`flushtable recall` of a table
    without a [property] zone shows its times so; issue 28)."""
    if name == "UTC":
        return UTC
    if not re.match(_ZONE_NAME, name) or ".." in name:
        raise PropertyRefused("time_zone", f"{name!r} is not an IANA time zone name like Europe/Berlin")
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError  # noqa: PLC0415 - above: on first use

    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise PropertyRefused(
            "time_zone", f"{name!r} is not a time zone this machine knows (an IANA name like Europe/Berlin)"
        ) from None


class Shift(FrozenRecord):
    """A shift of the gaming day: its name and its local start."""

    __slots__ = ("name", "start_min")
    name: str
    start_min: int  # local minutes after midnight

    def __init__(self, name: str, start_min: int) -> None:
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "start_min", start_min)

    @property
    def start_text(self) -> str:
        return f"{self.start_min // 60:02d}:{self.start_min % 60:02d}"


DEFAULT_SHIFTS: tuple[Shift, ...] = (Shift("day", 6 * 60), Shift("swing", 14 * 60), Shift("grave", 22 * 60))


class PropertySettings(FrozenRecord):
    """The property's time and money. Defaults: today's behaviour (UTC, 06:00, day/swing/grave, the
    amounts alone with two decimals). Build one from the configuration with :func:`property_settings`."""

    __slots__ = ("currency", "gaming_day_start_min", "money", "shifts", "time_zone")
    time_zone: str
    gaming_day_start_min: int
    shifts: tuple[Shift, ...]  # in order from the gaming day's start
    currency: str
    money: MoneyFormat

    def __init__(
        self,
        time_zone: str = "UTC",
        gaming_day_start_min: int = 6 * 60,
        shifts: tuple[Shift, ...] = DEFAULT_SHIFTS,
        currency: str = "USD",
        money: MoneyFormat | None = None,
    ) -> None:
        money = MoneyFormat() if money is None else money
        self._set_fields(locals())

    @property
    def zone(self) -> tzinfo:
        return zone_of(self.time_zone)

    @property
    def gaming_day_start_text(self) -> str:
        return f"{self.gaming_day_start_min // 60:02d}:{self.gaming_day_start_min % 60:02d}"

    def shift_names(self) -> tuple[str, ...]:
        return tuple(shift.name for shift in self.shifts)

    def to_json(self) -> dict[str, object]:
        return {
            "time_zone": self.time_zone,
            "gaming_day_start": self.gaming_day_start_text,
            "shifts": {shift.name: shift.start_text for shift in self.shifts},
            "currency": self.currency,
            "currency_symbol": self.money.symbol,
            "currency_code_shown": self.money.currency is not None,
            "currency_decimals": self.money.decimals,
        }


DEFAULT_PROPERTY = PropertySettings()


def property_settings(
    *,
    time_zone: str = "UTC",
    gaming_day_start: str = "06:00",
    shifts: dict[str, str] | None = None,
    currency: str | None = None,
    currency_symbol: str | None = None,
    currency_decimals: int | None = None,
) -> PropertySettings:
    """The settings from the configuration's ``[property]`` values, each checked (``PropertyRefused``
    names the key). ``currency`` unset: the amounts alone (as before the setting); set with no symbol:
    the code before the amount (``EUR 1,234.50``); ``currency_symbol``: that (``€1,234.50``)."""
    zone_of(time_zone)
    day_start = minutes_of(gaming_day_start, "gaming_day_start")
    ordered = DEFAULT_SHIFTS if shifts is None else _shifts(shifts, day_start)
    if shifts is None and day_start != DEFAULT_SHIFTS[0].start_min:
        raise PropertyRefused(
            "shifts",
            f"the default shifts start at 06:00, not at gaming_day_start {gaming_day_start}: name them",
        )
    if currency is not None and not re.match(_CURRENCY, currency):
        raise PropertyRefused("currency", f"{currency!r} is not a three-letter ISO 4217 code like EUR")
    code = currency or "USD"
    decimals = MINOR_UNITS.get(code, 2) if currency_decimals is None else currency_decimals
    if isinstance(decimals, bool) or not isinstance(decimals, int) or not 0 <= decimals <= MAX_DECIMALS:
        raise PropertyRefused("currency_decimals", f"from 0 to {MAX_DECIMALS}, not {decimals!r}")
    if currency_symbol is not None and (
        len(currency_symbol) > MAX_SYMBOL_CHARS
        or not currency_symbol.strip()
        or any(c.isdigit() or c in "+-,." or not c.isprintable() for c in currency_symbol)
    ):
        raise PropertyRefused(
            "currency_symbol",
            f"{currency_symbol!r} is not a symbol like € or $ "
            f"(1 to {MAX_SYMBOL_CHARS} characters, no digits or signs)",
        )
    money = MoneyFormat(
        currency=currency if currency is not None and currency_symbol is None else None,
        symbol=currency_symbol,
        decimals=decimals,
    )
    return PropertySettings(time_zone, day_start, ordered, code, money)


def _shifts(raw: dict[str, str], day_start: int) -> tuple[Shift, ...]:
    if not raw:
        raise PropertyRefused("shifts", 'empty: name at least one shift, like day = "06:00"')
    if len(raw) > MAX_SHIFTS:
        raise PropertyRefused("shifts", f"{len(raw)} shifts: at most {MAX_SHIFTS}")
    found: list[Shift] = []
    for name, start in raw.items():
        if not re.match(_SHIFT_NAME, name):
            raise PropertyRefused(f"shifts.{name}", "a shift's name is 1 to 32 of a-z, 0-9 and '_'")
        if not isinstance(start, str):
            raise PropertyRefused(f"shifts.{name}", f'a local time "HH:MM", not {start!r}')
        found.append(Shift(name, minutes_of(start, f"shifts.{name}")))
    starts = [shift.start_min for shift in found]
    for shift in found:
        if starts.count(shift.start_min) > 1:
            raise PropertyRefused(f"shifts.{shift.name}", f"two shifts start at {shift.start_text}")
    if day_start not in starts:
        day_text = f"{day_start // 60:02d}:{day_start % 60:02d}"
        raise PropertyRefused(
            "shifts", f"no shift starts at gaming_day_start {day_text}: the shifts must cover the gaming day"
        )
    # Each shift runs to the next one's start; the last to the next gaming day's: they cover the day.
    return tuple(sorted(found, key=lambda shift: (shift.start_min - day_start) % (24 * 60)))


# --- moments ------------------------------------------------------------------------------------------
def parse_moment(moment: datetime | str) -> datetime:
    """A journal time text (``2026-12-01T06:00:00.000000Z``) or an aware datetime, as an aware datetime."""
    if isinstance(moment, datetime):
        if moment.tzinfo is None:
            raise ValueError("a naive datetime has no zone: give the journal's UTC times")
        return moment
    return datetime.fromisoformat(moment.replace("Z", "+00:00"))


def local(moment: datetime | str, prop: PropertySettings = DEFAULT_PROPERTY) -> datetime:
    return parse_moment(moment).astimezone(prop.zone)


def time_text(
    moment: datetime | str, prop: PropertySettings = DEFAULT_PROPERTY, *, with_date: bool = True
) -> str:
    """For people: ``"2026-12-05 14:05:31 CET"`` (``with_date=False``: ``"14:05:31 CET"``)."""
    at = local(moment, prop)
    return at.strftime("%Y-%m-%d %H:%M:%S %Z" if with_date else "%H:%M:%S %Z")


def iso_time(moment: datetime | str, prop: PropertySettings = DEFAULT_PROPERTY) -> str:
    """For CSV: ISO 8601 with the offset, ``"2026-12-05T14:05:31+01:00"``."""
    return local(moment, prop).isoformat(timespec="seconds")


def journal_time(moment: datetime) -> str:
    """The journal's own text of a moment (UTC, microseconds): what ranges are compared against."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


# --- gaming days and shifts ---------------------------------------------------------------------------
def duration_text(seconds: int) -> str:
    """``3725`` -> ``1 h 2 min``: a duration as both panels say it (whole seconds, the two largest units)."""
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min"
    if seconds < 86400:
        return f"{seconds // 3600} h {seconds % 3600 // 60} min"
    return f"{seconds // 86400} d {seconds % 86400 // 3600} h"


def parse_day(text: str, key: str = "date") -> date:
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise PropertyRefused(key, f"{text!r} is not a date like 2026-12-01") from None


def _at(day: date, minutes: int, prop: PropertySettings) -> datetime:
    """Local ``day`` at ``minutes`` past midnight, in UTC. A time the clocks skip (spring) is read with
    the offset before the change, a time they repeat (autumn) as its first occurrence (fold 0)."""
    wall = datetime.combine(day, time(minutes // 60, minutes % 60), tzinfo=prop.zone)
    return wall.astimezone(UTC)


def gaming_day_bounds(day: date, prop: PropertySettings = DEFAULT_PROPERTY) -> tuple[datetime, datetime]:
    """The gaming day ``day`` as UTC [start, end): 24 hours, or 23/25 where the clocks change."""
    start = _at(day, prop.gaming_day_start_min, prop)
    return start, _at(day + timedelta(days=1), prop.gaming_day_start_min, prop)


def shift_bounds(
    day: date, name: str, prop: PropertySettings = DEFAULT_PROPERTY
) -> tuple[datetime, datetime]:
    """The shift ``name`` of gaming day ``day`` as UTC [start, end). Unknown name: ``PropertyRefused``."""
    names = prop.shift_names()
    if name not in names:
        raise PropertyRefused("shift", f"{name!r} is not one of {', '.join(names)}")
    index = names.index(name)
    starts = _shift_starts(day, prop)
    return starts[index], starts[index + 1]


def _shift_starts(day: date, prop: PropertySettings) -> list[datetime]:
    """Every shift's UTC start on gaming day ``day``, then the day's end: never decreasing, so the
    shifts tile the day. A start the clocks skip (spring) is read with the offset before the change
    (``_at``), which can put it after the next shift's start (America/New_York, late 02:30 and grave
    03:00: 07:30Z and 07:00Z): such a start is moved back to the next one's, so that shift is empty
    that day and the one before it ends when the clocks jump. No start moves before the day's."""
    starts = [_at(day, prop.gaming_day_start_min, prop)]
    for shift in prop.shifts[1:]:
        # A shift starting before the gaming day's start on the clock starts on the next calendar date.
        on = day + timedelta(days=1) if shift.start_min < prop.gaming_day_start_min else day
        starts.append(_at(on, shift.start_min, prop))
    starts.append(_at(day + timedelta(days=1), prop.gaming_day_start_min, prop))
    for index in range(len(starts) - 2, 0, -1):
        starts[index] = max(starts[0], min(starts[index], starts[index + 1]))
    return starts


def gaming_day_of(moment: datetime | str, prop: PropertySettings = DEFAULT_PROPERTY) -> date:
    """The gaming day a moment falls in."""
    at = parse_moment(moment)
    guess = local(at, prop).date()
    # The local date, or the one before when the moment is before that date's gaming-day start; checked
    # against the computed bounds so a start the clocks skip or repeat is placed right.
    for day in (guess, guess - timedelta(days=1), guess + timedelta(days=1)):
        start, end = gaming_day_bounds(day, prop)
        if start <= at < end:
            return day
    raise AssertionError(f"no gaming day holds {at.isoformat()}")  # pragma: no cover - bounds tile time


def shift_of(moment: datetime | str, prop: PropertySettings = DEFAULT_PROPERTY) -> tuple[date, str]:
    """(gaming day, shift name) of a moment."""
    at = parse_moment(moment)
    day = gaming_day_of(at, prop)
    for shift in prop.shifts:
        start, end = shift_bounds(day, shift.name, prop)
        if start <= at < end:
            return day, shift.name
    raise AssertionError(f"no shift holds {at.isoformat()}")  # pragma: no cover - shifts tile the day


def shift_label(day: date, name: str) -> str:
    """``"2026-12-01 grave"``: how the floor names a shift (sorts by date)."""
    return f"{day.isoformat()} {name}"


MAX_SHIFT_DAYS = 3700  # ten years of gaming days: the most one query is given bounds for


def shifts_between(
    first: datetime, last: datetime, prop: PropertySettings = DEFAULT_PROPERTY
) -> list[tuple[str, datetime, datetime]]:
    """Every shift (label, UTC start, UTC end) from the one holding ``first`` to the one holding
    ``last``, at most ``MAX_SHIFT_DAYS`` gaming days (the latest ones): the floor's SQL is given these."""
    day, last_day = gaming_day_of(first, prop), gaming_day_of(last, prop)
    day = max(day, last_day - timedelta(days=MAX_SHIFT_DAYS - 1))
    out: list[tuple[str, datetime, datetime]] = []
    while day <= last_day:
        starts = _shift_starts(day, prop)
        for index, shift in enumerate(prop.shifts):
            out.append((shift_label(day, shift.name), starts[index], starts[index + 1]))
        day += timedelta(days=1)
    return out


def legacy_property(start_hour: int) -> PropertySettings:
    """What ``[floor] gaming_day_start_hour = H`` (and ``report --start-hour H``), from before
    ``[property]``, mean: UTC, the gaming day from H:00, three 8-hour shifts day, swing and grave from it
    (H = 6: the defaults exactly)."""
    if not 0 <= start_hour <= 23:
        raise PropertyRefused("gaming_day_start", f"{start_hour} is not an hour from 0 to 23")
    return property_settings(
        gaming_day_start=f"{start_hour:02d}:00",
        shifts={
            name: f"{(start_hour + 8 * index) % 24:02d}:00"
            for index, name in enumerate(("day", "swing", "grave"))
        },
    )

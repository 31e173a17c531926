"""Meters for a shift or a date range, with the theoretical win from the par sheet beside the actual.

The whole-journal meters are the reducer's (controller/journal/state.py ``Meters``); a range is the same
one meters fold (``Meters.count``) over the entries whose time falls in it (rounds started, closed by
round_settled, round_dead or round_voided, faults raised and cleared), so both count alike. A range on
whole hours (a shift, whole days) is read from the per-hour and per-day totals kept beside the journal
(controller/journal/meters.py ``range_totals``: a few rows, whatever the journal's age); ``fold_range``
is the fold they equal, used for a journal without totals.

Shifts and days are the property's (docs/configuration.md "[property]", controller/locale.py): by default
UTC, day 06:00-14:00, swing 14:00-22:00, grave 22:00-06:00 (the grave shift of a gaming day starts that
evening); ``from``/``to`` take whole calendar days in the property's zone.

Theoretical win: each house-banked round's stakes times the par sheet's house edge at the preset
paytables, computed by the catalogue (controller/rules/catalogue.py ``theoretical_win_by_wager``, which
the floor calls too): the base game's edge is per ante (it counts the raises and plays the ante leads to),
so it multiplies the ante stakes; each side bet's edge multiplies that wager's stakes. A game the
catalogue has no figures for is named instead of guessed; a designated-player round has no house
theoretical (the house takes the rake only): said beside the figure.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from fractions import Fraction
from typing import Any

from controller.errors import UserError
from controller.journal.kinds import METER_KINDS
from controller.journal.meters import range_totals
from controller.journal.state_parts import Meters, TheoreticalStakes
from controller.journal.store import Journal, JournalEntry
from controller.locale import DEFAULT_PROPERTY, PropertyRefused, PropertySettings, journal_time, shift_bounds
from controller.rules.catalogue import theoretical_win_by_wager

# What a range's meters count: the rounds started and closed in it, the faults raised and cleared.
RANGE_KINDS = METER_KINDS


def shift_range(day: str, shift: str, prop: PropertySettings = DEFAULT_PROPERTY) -> tuple[str, str]:
    """``("2026-12-01", "swing")`` -> that gaming day's swing shift (by default 14:00 to 22:00 UTC), as
    journal times."""
    try:
        on = date.fromisoformat(day)
    except ValueError:
        raise UserError(f"date: {day!r} is not a date like 2026-12-01") from None
    try:
        start, end = shift_bounds(on, shift, prop)
    except PropertyRefused as refused:
        raise UserError(str(refused)) from None
    return journal_time(start), journal_time(end)


def day_range(first: str, last: str, prop: PropertySettings = DEFAULT_PROPERTY) -> tuple[str, str]:
    """Whole calendar days in the property's zone, ``first`` to ``last`` inclusive (23 or 25 hours on
    the days the clocks change)."""
    try:
        start, end = date.fromisoformat(first), date.fromisoformat(last)
    except ValueError:
        raise UserError(f"from/to: {first!r}, {last!r} are not dates like 2026-12-01") from None
    if end < start:
        raise UserError(f"to: {last} is before from: {first}")
    zone = prop.zone
    begin = datetime(start.year, start.month, start.day, tzinfo=zone)
    finish = datetime.combine(end + timedelta(days=1), datetime.min.time(), tzinfo=zone)
    return journal_time(begin), journal_time(finish)


@dataclass
class RangeMeters:
    start_utc: str
    end_utc: str
    meters: Meters = field(default_factory=Meters)
    # (game, banking, wager) -> stakes, of house-banked rounds not returned: what the theoretical needs
    stakes: dict[tuple[str, str, str], int] = field(default_factory=dict)
    dp_rounds: int = 0


def range_meters(journal: Journal, start_utc: str, end_utc: str) -> RangeMeters:
    """The range's meters: from the stored totals when it can (``range_totals``), else folded."""
    stored = range_totals(journal, start_utc, end_utc)
    if stored is not None:
        return RangeMeters(start_utc, end_utc, stored.meters, stored.stakes, stored.dp_rounds)
    return fold_range(journal.entries(kinds=list(RANGE_KINDS)), start_utc, end_utc)


def fold_range(entries: Iterable[JournalEntry], start_utc: str, end_utc: str) -> RangeMeters:
    """The closing entries between ``start_utc`` (inclusive) and ``end_utc`` (exclusive) as meters: the
    one meters fold (``Meters.count``, the reducer's) and the theoretical's stakes beside it."""
    out = RangeMeters(start_utc, end_utc)
    theoretical_stakes = TheoreticalStakes()
    for stored in entries:
        if stored.kind not in RANGE_KINDS or not start_utc <= stored.time_utc < end_utc:
            continue
        entry = stored.entry  # the typed entry: its public fields by name, never a payload's keys
        out.meters.count(entry, str(stored.round_id), time_utc=stored.time_utc)
        theoretical_stakes.count(entry)
    out.stakes, out.dp_rounds = theoretical_stakes.stakes, theoretical_stakes.dp_rounds
    return out


def theoretical(folded: RangeMeters) -> dict[str, Any]:
    """The theoretical house win of the range's house-banked stakes: the catalogue's one computation
    (controller/rules/catalogue.py ``theoretical_win_by_wager``, the floor's too), rounded once."""
    by_wager: dict[str, Fraction] = {}
    missing: set[str] = set()
    for (game, _banking, wager), stake in sorted(folded.stakes.items()):
        figures = theoretical_win_by_wager(game, {wager: stake})
        if figures is None:
            missing.add(game)
            continue
        for name, value in figures.items():
            by_wager[name] = by_wager.get(name, Fraction(0)) + value
    theo = sum(by_wager.values(), Fraction(0))
    return {
        "theo_cents": round(theo) if folded.stakes and not missing else None,
        "theo_partial_cents": round(theo),
        "by_wager_cents": {name: round(value) for name, value in by_wager.items()},
        "missing_games": sorted(missing),
        "dp_rounds": folded.dp_rounds,
    }

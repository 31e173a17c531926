"""Gaming-day reports (docs/operations.md "Gaming-day reports"): per table, per pit and for the floor —
rounds, handle by wager, win, hold % against the par sheet's theoretical hold, dead hands, voids, kills,
overrides, faults, progressive contributions and awards — as CSV with its SHA-256, for the floor
(`flushtable floor report`, the floor panel's Reports page) and for one table from its own journal
(`flushtable report`).

Pure: a fold of journal entries (each one's table, kind, time and public payload), the same whether
they come from the floor's PostgreSQL (``floor_entries``) or from a table's SQLite journal, so a table's
report and the floor's row of that table are the same numbers.

The gaming day ``D`` runs from ``D`` at the property's gaming-day start to ``D+1`` at it, local time in the
property's zone (controller/locale.py ``gaming_day_bounds``: 23 or 25 hours on the days the clocks
change; by default UTC and 06:00, as before the setting). A round belongs to the gaming day its closing entry
(round_settled, round_dead, round_voided) falls in; a kill, an override, a fault or a progressive entry
to the day of its own entry.
"""

from __future__ import annotations

import csv
import hashlib
import io
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from fractions import Fraction
from typing import Any

from controller.errors import UserError
from controller.floor.theoretical import theoretical_win_exact
from controller.journal import entries as typed
from controller.journal.closing_entries import CLOSING_ENTRIES
from controller.journal.kinds import (
    CLOSING_KINDS,
    DIFFERENCE_ACCEPTED,
    FAULT_RAISED,
    LEGACY_OPERATOR_ACTION,
    METER_KINDS,
    SEAT_KILLED,
)
from controller.journal.render import typed_entry
from controller.journal.state_parts import Meters
from controller.locale import (
    DEFAULT_PROPERTY,
    PropertyRefused,
    PropertySettings,
    gaming_day_bounds,
    journal_time,
    parse_day,
    time_text,
)

# An operator's action that overrides what the table decided by itself (docs/operations.md): a
# supervisor accepting a bet sensor's difference after the lock (``difference_accepted``). A kill
# (``seat_killed``) and a void (``round_voided``) are counted in their own columns. New override kinds
# go here. An earlier table's ``operator_action`` is read as its kind of today (upcast.py): a refusal or
# the panel's request record is no kill.
OVERRIDE_ENTRIES: tuple[type[typed.Entry], ...] = (typed.DifferenceAccepted,)
KILL_ENTRIES: tuple[type[typed.Entry], ...] = (typed.SeatKilled,)
OPERATOR_KINDS: frozenset[str] = frozenset({SEAT_KILLED, DIFFERENCE_ACCEPTED, LEGACY_OPERATOR_ACTION})
# The progressive's entries the report counts (controller/journal/entries/): a contribution's
# increment_cents, and an award once, at its progressive_award_paid (its progressive_award_claimed
# carries the same amount_cents).
PROGRESSIVE_PREFIX = "progressive_"
PROGRESSIVE_CONTRIBUTION = "progressive_contribution"
PROGRESSIVE_AWARD_PAID = "progressive_award_paid"

# The kinds the report counts through the one meters fold (``Meters.count``): the same kind set as
# the fold's own (controller/journal/kinds.py ``METER_KINDS``), less what the report has no column for
# (a round started, a fault cleared). A round's closings and the faults raised.
METERED_REPORT_KINDS: frozenset[str] = frozenset(METER_KINDS) & (CLOSING_KINDS | {FAULT_RAISED})
REPORT_KINDS: tuple[str, ...] = (*sorted(METERED_REPORT_KINDS), *sorted(OPERATOR_KINDS))

REPORT_COLUMNS = ("gaming_day", "scope", "key", "pit", "game", "measure", "value", "amount")
DIGEST_TRAILER = "# sha256"  # the CSV's last line: "# sha256,<hex of every byte before this line>"


@dataclass(frozen=True, slots=True)
class DayEntry:
    table_id: str
    kind: str
    time_utc: str  # the journal's text, e.g. 2026-12-01T06:00:00.000000Z
    payload: Mapping[str, Any]


# The figures an entry adds to as whole numbers (a ``DayFigures`` field each): what the floor stores
# for each entry at commit (floor_day_figures, migration 16), beside its wagers' handle, its game and its
# exact theoretical win.
COUNTED_MEASURES = (
    "rounds_settled",
    "rounds_dead",
    "rounds_voided",
    "handle_cents",
    "win_cents",
    "dead_hands",
    "kills",
    "overrides",
    "faults",
    "progressive_contributions_cents",
    "progressive_awards_cents",
)
HANDLE_BY_WAGER = "handle_by_wager_cents"  # floor_day_figures' measure of a wager's handle (label: wager)
GAME = "game"  # its measure of a game played (label: the game, numerator 1)
THEORETICAL = "theoretical_win_exact"  # the exact theoretical win: numerator / denominator


@dataclass
class DayFigures:
    """One table's (or a pit's, or the floor's) gaming day."""

    rounds_settled: int = 0
    rounds_dead: int = 0
    rounds_voided: int = 0
    handle_cents: int = 0
    handle_by_wager_cents: dict[str, int] = field(default_factory=dict)
    win_cents: int = 0
    theoretical_win_cents: int = 0  # a table's: its day's exact theoretical, rounded once
    theoretical_exact: Fraction = Fraction(0)
    dead_hands: int = 0
    kills: int = 0
    overrides: int = 0
    faults: int = 0
    progressive_contributions_cents: int = 0
    progressive_awards_cents: int = 0
    games: set[str] = field(default_factory=set)

    def add_meters(self, meters: Meters) -> None:
        """What the one meters fold (``Meters.count``) counted of the day's closing entries and faults."""
        self.rounds_settled += meters.rounds_settled
        self.rounds_dead += meters.rounds_dead
        self.rounds_voided += meters.rounds_voided
        self.handle_cents += meters.handle_cents
        self.win_cents += meters.house_win_cents
        self.dead_hands += meters.dead_hands
        self.faults += meters.faults_raised
        for wager, meter in meters.by_wager.items():
            if meter.stake_cents:
                by_wager = self.handle_by_wager_cents
                by_wager[wager] = by_wager.get(wager, 0) + meter.stake_cents

    def add(self, other: DayFigures) -> None:
        for name in ("theoretical_win_cents", *COUNTED_MEASURES):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        for wager, cents in other.handle_by_wager_cents.items():
            self.handle_by_wager_cents[wager] = self.handle_by_wager_cents.get(wager, 0) + cents
        self.games |= other.games
        self.theoretical_exact += other.theoretical_exact

    @property
    def hold_pct(self) -> Fraction | None:
        return None if not self.handle_cents else Fraction(100 * self.win_cents, self.handle_cents)

    @property
    def theoretical_hold_pct(self) -> Fraction | None:
        if not self.handle_cents:
            return None
        return Fraction(100 * self.theoretical_win_cents, self.handle_cents)


def gaming_day_range(day: str, prop: PropertySettings = DEFAULT_PROPERTY) -> tuple[datetime, datetime]:
    """The gaming day ``day`` (YYYY-MM-DD) as a UTC range [start, end), in the property's zone."""
    try:
        return gaming_day_bounds(parse_day(day, "--day"), prop)
    except PropertyRefused as refused:
        raise UserError(str(refused)) from None


# The kinds an entry of which adds to a gaming day (``entry_figures``); the floor stores its figures at
# commit (controller/floor/store.py).
FIGURE_KINDS: frozenset[str] = (
    METERED_REPORT_KINDS | OPERATOR_KINDS | {PROGRESSIVE_CONTRIBUTION, PROGRESSIVE_AWARD_PAID}
)


def entry_figures(entry: typed.Entry) -> DayFigures | None:
    """What one typed entry adds to its table's gaming day; None: nothing. Pure: the table's own report
    folds these (``fold_day``), and the floor stores them at commit (floor_day_figures), so the two are
    the same numbers."""
    figures = DayFigures()
    if entry.kind in METERED_REPORT_KINDS:
        # The table's own meters fold (Meters.count, the reducer's): a round by how it closed, its
        # handle, win and dead hands; a fault raised.
        meters = Meters()
        meters.count(entry, "")
        figures.add_meters(meters)
        if isinstance(entry, CLOSING_ENTRIES):
            settlement = entry.settlement
            # A settled round's settle input is in its private part; its settlement names the game.
            round_json = {} if isinstance(entry, typed.RoundSettled) else entry.round
            game = str(settlement.get("game") or round_json.get("game") or "")
            if game:
                figures.games.add(game)
            if isinstance(entry, typed.RoundSettled):
                figures.theoretical_exact += theoretical_win_exact(game, settlement)
    elif isinstance(entry, KILL_ENTRIES):
        figures.kills += 1
    elif isinstance(entry, OVERRIDE_ENTRIES):
        figures.overrides += 1
    elif isinstance(entry, typed.ProgressiveContribution):
        # What the round's Progressive wagers gave the jackpot (meter, reserve and overflow); the
        # wagers themselves are the entry's in_meter_cents.
        figures.progressive_contributions_cents += entry.increment_cents
    elif isinstance(entry, typed.ProgressiveAwardPaid):
        # An award is journaled twice (claimed at the hit, paid at the payment) with the same
        # amount: counted once, on the day it was paid.
        figures.progressive_awards_cents += entry.amount_cents
    else:
        return None
    return figures


def figure_rows(figures: DayFigures) -> list[tuple[str, str, int, int]]:
    """An entry's figures as floor_day_figures' (measure, label, numerator, denominator) rows: each
    whole-number figure not 0, each wager's handle, each game, the exact theoretical win."""
    rows = [(name, "", value, 1) for name in COUNTED_MEASURES if (value := getattr(figures, name))]
    rows.extend((HANDLE_BY_WAGER, wager, cents, 1) for wager, cents in figures.handle_by_wager_cents.items())
    rows.extend((GAME, game, 1, 1) for game in sorted(figures.games))
    exact = figures.theoretical_exact
    if exact:
        rows.append((THEORETICAL, "", exact.numerator, exact.denominator))
    return rows


def figures_of_rows(rows: Iterable[tuple[str, str, str, Any, Any]]) -> dict[str, DayFigures]:
    """Each table's figures from summed floor_day_figures rows (table, measure, label, numerator,
    denominator): the inverse of ``figure_rows`` summed."""
    tables: dict[str, DayFigures] = {}
    for table_id, measure, label, numerator, denominator in rows:
        figures = tables.setdefault(str(table_id), DayFigures())
        value = int(numerator)
        if measure == HANDLE_BY_WAGER:
            figures.handle_by_wager_cents[label] = figures.handle_by_wager_cents.get(label, 0) + value
        elif measure == GAME:
            figures.games.add(str(label))
        elif measure == THEORETICAL:
            figures.theoretical_exact += Fraction(value, int(denominator))
        elif measure in COUNTED_MEASURES:
            setattr(figures, measure, getattr(figures, measure) + value)
    return tables


def fold_day(entries: Iterable[DayEntry], start_utc: str, end_utc: str) -> dict[str, DayFigures]:
    """Each table's figures from its entries whose time is in [start_utc, end_utc) (journal texts)."""
    tables: dict[str, DayFigures] = {}
    for entry in entries:
        if not start_utc <= entry.time_utc < end_utc:
            continue
        figures = tables.setdefault(entry.table_id, DayFigures())
        if entry.kind not in FIGURE_KINDS:
            continue
        # Read as its typed entry (the payload may hold the private part merged: a table's journal).
        added = entry_figures(typed_entry(entry.kind, entry.payload))
        if added is not None:
            figures.add(added)
    return tables


@dataclass
class ReportRow:
    scope: str  # table | pit | floor
    key: str  # the table's id, the pit's name, or "all"
    pit: str
    figures: DayFigures


@dataclass
class DayReport:
    gaming_day: str
    prop: PropertySettings
    start_utc: str
    end_utc: str
    rows: list[ReportRow]

    def csv_text(self) -> str:
        """The report's CSV, its last line the SHA-256 of every byte before it."""
        body = report_csv_body(self)
        return f"{body}{DIGEST_TRAILER},{csv_digest(body)}\n"

    @property
    def digest(self) -> str:
        return csv_digest(report_csv_body(self))


def build_report(
    day: str,
    prop: PropertySettings,
    entries: Iterable[DayEntry],
    pits: Mapping[str, str],
    *,
    pit: str | None = None,
    totals: bool = True,
) -> DayReport:
    """The gaming day's rows: each table (sorted by pit, then table), each pit, then the floor (only
    the pit asked for, and no floor row, with ``pit``). A table the floor knows with no entry that day
    has its row of zeros: a table that did not play is a fact the report says. ``totals=False``: the
    tables' rows only (one table's own report)."""
    start, end = gaming_day_range(day, prop)
    tables = fold_day(entries, journal_time(start), journal_time(end))
    return report_of(day, prop, tables, pits, pit=pit, totals=totals)


def report_of(
    day: str,
    prop: PropertySettings,
    tables: dict[str, DayFigures],
    pits: Mapping[str, str],
    *,
    pit: str | None = None,
    totals: bool = True,
) -> DayReport:
    """``build_report`` of each table's figures already summed (the floor's, from floor_day_figures)."""
    start, end = gaming_day_range(day, prop)
    start_utc, end_utc = journal_time(start), journal_time(end)
    for table_id in pits:
        tables.setdefault(table_id, DayFigures())
    for figures in tables.values():
        # Rounded once per table; a pit's and the floor's are the sums of their tables' rows, so the
        # printed rows add up.
        figures.theoretical_win_cents = round(figures.theoretical_exact)
    rows: list[ReportRow] = []
    by_pit: dict[str, DayFigures] = {}
    floor = DayFigures()
    for table_id in sorted(tables, key=lambda t: (pits.get(t, ""), t)):
        table_pit = pits.get(table_id, "")
        if pit is not None and table_pit != pit:
            continue
        figures = tables[table_id]
        rows.append(ReportRow("table", table_id, table_pit, figures))
        by_pit.setdefault(table_pit, DayFigures()).add(figures)
        floor.add(figures)
    if pit is not None and pit not in by_pit:
        raise UserError(f"--pit: no table of the floor is in pit {pit!r}")
    if not totals:
        return DayReport(day, prop, start_utc, end_utc, rows)
    rows.extend(ReportRow("pit", name, name, by_pit[name]) for name in sorted(by_pit))
    if pit is None:
        rows.append(ReportRow("floor", "all", "", floor))
    return DayReport(day, prop, start_utc, end_utc, rows)


def _pct(value: Fraction | None) -> str:
    """A percentage to two decimals, rounded half away from zero (exact: from integer cents)."""
    if value is None:
        return ""
    hundredths = abs(value) * 100
    whole = int(hundredths + Fraction(1, 2))
    sign = "-" if value < 0 and whole else ""
    return f"{sign}{whole // 100}.{whole % 100:02d}"


def measures(figures: DayFigures) -> list[tuple[str, int | str]]:
    """A row's numbers in the report's order: (measure, value); ``*_cents`` are integer cents."""
    out: list[tuple[str, int | str]] = [
        ("rounds_settled", figures.rounds_settled),
        ("rounds_dead", figures.rounds_dead),
        ("rounds_voided", figures.rounds_voided),
        ("handle_cents", figures.handle_cents),
    ]
    out.extend(
        (f"handle_cents.{wager}", cents) for wager, cents in sorted(figures.handle_by_wager_cents.items())
    )
    out.extend(
        [
            ("win_cents", figures.win_cents),
            ("theoretical_win_cents", figures.theoretical_win_cents),
            ("hold_pct", _pct(figures.hold_pct)),
            ("theoretical_hold_pct", _pct(figures.theoretical_hold_pct)),
            ("dead_hands", figures.dead_hands),
            ("kills", figures.kills),
            ("overrides", figures.overrides),
            ("faults", figures.faults),
            ("progressive_contributions_cents", figures.progressive_contributions_cents),
            ("progressive_awards_cents", figures.progressive_awards_cents),
        ]
    )
    return out


def report_csv_body(report: DayReport) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(REPORT_COLUMNS)
    for row in report.rows:
        game = ";".join(sorted(row.figures.games))
        for measure, value in measures(row.figures):
            amount = (
                report.prop.money(value)
                if measure.split(".")[0].endswith("_cents") and isinstance(value, int)
                else ""
            )
            writer.writerow((report.gaming_day, row.scope, row.key, row.pit, game, measure, value, amount))
    return out.getvalue()


def csv_digest(body: str) -> str:
    return hashlib.sha256(body.encode("utf-8")).hexdigest()


def check_digest(text: str) -> bool:
    """True if ``text`` (a report's CSV) ends with the digest line of every byte before it."""
    body, _, last = text.rstrip("\n").rpartition("\n")
    prefix = f"{DIGEST_TRAILER},"
    return last.startswith(prefix) and last[len(prefix) :] == csv_digest(body + "\n")


def read_floor_day(connection: Any, day: str, prop: PropertySettings, *, pit: str | None = None) -> DayReport:
    """The floor's gaming-day report from PostgreSQL (``floor_day_figures``: each entry's figures, written
    at commit from its typed entry by ``entry_figures``, summed by table; a psycopg connection of the
    reporting or the writer role)."""
    # The statements' one home, the floor panel's too; imported here, not at the top, so what imports
    # only the fold (`flushtable report` over a table's journal) loads no psycopg.
    from controller.floor.queries import DAY_FIGURES_SQL, TABLE_PITS_SQL  # noqa: PLC0415

    start, end = gaming_day_range(day, prop)
    pits = {
        str(table_id): str(table_pit) for table_id, table_pit in connection.execute(TABLE_PITS_SQL).fetchall()
    }
    rows = connection.execute(DAY_FIGURES_SQL, (start, end)).fetchall()
    return report_of(day, prop, figures_of_rows(rows), pits, pit=pit)


def render_report(report: DayReport) -> str:
    """The report as a supervisor reads it at a terminal: one line per table, pit and the floor."""
    prop, fmt = report.prop, report.prop.money
    lines = [
        f"gaming day {report.gaming_day}: {time_text(report.start_utc, prop)} to "
        f"{time_text(report.end_utc, prop)} (starts {prop.gaming_day_start_text}, {prop.time_zone})",
        f"{'scope':<6} {'key':<12} {'rounds':>6} {'dead':>4} {'void':>4} {'handle':>14} {'win':>14} "
        f"{'hold%':>7} {'theo%':>7} {'dead hands':>10} {'kills':>5} {'overr.':>6} {'faults':>6}",
    ]
    for row in report.rows:
        f = row.figures
        lines.append(
            f"{row.scope:<6} {row.key:<12} {f.rounds_settled:>6} {f.rounds_dead:>4} {f.rounds_voided:>4} "
            f"{fmt(f.handle_cents):>14} {fmt(f.win_cents):>14} "
            f"{_pct(f.hold_pct) or '-':>7} {_pct(f.theoretical_hold_pct) or '-':>7} {f.dead_hands:>10} "
            f"{f.kills:>5} {f.overrides:>6} {f.faults:>6}"
        )
    lines.append(f"CSV sha256 {report.digest} (--csv: its last line)")
    return "\n".join(lines) + "\n"

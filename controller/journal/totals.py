"""Per-period totals and the round index: what recall and meters read instead of folding the journal.

Kept in the journal file, in tables beside ``journal`` (docs/journal.md "Totals and indexes"), and
written **in the same transaction as the entries they count** (``Journal.append_many``), so a crash
leaves both or neither: the totals never disagree with the entries they were made from.

- ``journal_totals(period, key, value)``: the meters' counters (controller/journal/state_parts.py ``Meters``)
  flattened to integer keys, per UTC hour (``h:2026-12-01T14``), per UTC day (``d:2026-12-01``) and for
  the whole journal (``all``). Each entry adds the same amounts the reducer adds when it folds it
  (the one meters fold, ``Meters.count``, on a fresh ``Meters``, then flattened), so a range's meters
  are the sum of its periods' rows: a shift is 8 hour rows, a day one row, the whole journal one row.
- ``journal_rounds(seq, round_id, time_utc, status, game)``: one row per closed round (``seq`` its
  closing entry), by close time; ``journal_round_seats(seat, seq)``: the seats that had a wager in it.
  Recall by time range and by seat reads these, then the round's own entries through the round index.

They are derived, not evidence: the hash chain does not cover them. ``flushtable journal verify
--totals`` refolds each segment's entries and compares (controller/journal/totals_check.py); ``rebuild``
makes them again from the entries (migration of a journal of an earlier schema does it once: schema 3's
left the progressive's net out of each round's balance).
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from controller.journal.errors import JournalError
from controller.journal.kinds import METER_KINDS, STATUS_BY_CLOSING_KIND
from table_names.records import FrozenRecord, Record

if TYPE_CHECKING:
    from pathlib import Path

    from controller.journal.entries import Entry
    from controller.journal.state_parts import Meters


TOTALS_SCHEMA = """
CREATE TABLE IF NOT EXISTS journal_totals (
    period TEXT NOT NULL,
    key TEXT NOT NULL,
    value INTEGER NOT NULL,
    PRIMARY KEY (period, key)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS journal_rounds (
    seq INTEGER PRIMARY KEY,
    round_id TEXT NOT NULL,
    time_utc TEXT NOT NULL,
    status TEXT NOT NULL,
    game TEXT
);
CREATE INDEX IF NOT EXISTS journal_rounds_by_time ON journal_rounds(time_utc);
CREATE TABLE IF NOT EXISTS journal_round_seats (
    seat INTEGER NOT NULL,
    seq INTEGER NOT NULL,
    PRIMARY KEY (seat, seq)
) WITHOUT ROWID;
"""

ALL_PERIOD = "all"
# The kinds that move a meter: everything else adds nothing to any total.
TOTAL_KINDS = frozenset(METER_KINDS)
_SCALARS = (
    "rounds_started",
    "rounds_settled",
    "rounds_dead",
    "rounds_voided",
    "handle_cents",
    "returned_cents",
    "player_net_cents",
    "banker_net_cents",
    "house_win_cents",
    "dp_net_cents",
    "rake_cents",
    "progressive_net_cents",
    "dead_hands",
    "faults_raised",
    "faults_cleared",
)
_WAGER_FIELDS = ("stake_cents", "player_net_cents", "house_win_cents", "wins", "losses", "pushes", "returned")
# Keys are flat text: "handle_cents", "wager\tante\tstake_cents", "fault\tdevice_lost",
# "unbalanced\t000000001234\tRT1-...", "stakes\tgame\tbanking\twager" (the theoretical's), "dp_rounds".
_SEP = "\t"


def hour_period(time_utc: str) -> str:
    return "h:" + time_utc[:13]


def day_period(time_utc: str) -> str:
    return "d:" + time_utc[:10]


def periods_of(time_utc: str) -> tuple[str, str, str]:
    return (hour_period(time_utc), day_period(time_utc), ALL_PERIOD)


def entry_deltas(
    seq: int,
    kind: str,
    round_id: str | None,
    public: Mapping[str, Any],
    *,
    entry: Entry | None = None,
    before_progressive_net: bool = False,
) -> Counter[str]:
    """What one entry adds to its periods' totals: the one meters fold (``Meters.count``, the
    reducer's) and the theoretical's stakes (``TheoreticalStakes.count``) of its typed entry, on fresh
    ones, flattened. Pure. ``entry``: the typed entry when the caller holds it (the append, which has
    just built it: ``record_typed``), else decoded from ``public``. ``before_progressive_net``: as a
    schema-3 file's totals counted it (``MetersBeforeProgressiveNet``: the progressive's net left out
    of the round's balance), to check what such a file holds."""
    # The readers' start-up: the entries and the reducer load only when counted.
    from controller.journal.entries import from_parts  # noqa: PLC0415
    from controller.journal.state_parts import (  # noqa: PLC0415
        Meters,
        MetersBeforeProgressiveNet,
        TheoreticalStakes,
    )

    delta: Counter[str] = Counter()
    if kind not in TOTAL_KINDS:
        return delta
    if entry is None:
        entry = from_parts(kind, public, None)
    meters = MetersBeforeProgressiveNet() if before_progressive_net else Meters()
    meters.count(entry, str(round_id))
    theoretical = TheoreticalStakes()
    theoretical.count(entry)
    for name in _SCALARS:
        value = getattr(meters, name)
        if value:
            delta[name] += value
    for fault_kind, count in meters.faults_by_kind.items():
        delta[f"fault{_SEP}{fault_kind}"] += count
    for wager, meter in meters.by_wager.items():
        for field in _WAGER_FIELDS:
            value = getattr(meter, field)
            if value:
                delta[f"wager{_SEP}{wager}{_SEP}{field}"] += value
        delta.setdefault(f"wager{_SEP}{wager}{_SEP}stake_cents", 0)  # the wager is listed even at 0
    if meters.unbalanced_rounds:
        delta[f"unbalanced{_SEP}{seq:012d}{_SEP}{round_id}"] = 1
    # The theoretical win's inputs (controller/panel/shift_meters.py fold_range): house-banked stakes
    # in action by game and wager (listed even at 0), and the designated-player rounds it does not cover.
    if theoretical.dp_rounds:
        delta["dp_rounds"] += theoretical.dp_rounds
    for (game, banking, name), stake in theoretical.stakes.items():
        delta[f"stakes{_SEP}{game}{_SEP}{banking}{_SEP}{name}"] += stake
    return delta


class RoundRow(FrozenRecord):
    """A closed round in the round index."""

    __slots__ = ("game", "round_id", "seats", "seq", "status", "time_utc")
    seq: int
    round_id: str
    time_utc: str
    status: str
    game: str | None
    seats: tuple[int, ...]

    def __init__(  # noqa: PLR0917 - a closed round's every column in the round index
        self, seq: int, round_id: str, time_utc: str, status: str, game: str | None, seats: tuple[int, ...]
    ) -> None:
        object.__setattr__(self, "seq", seq)
        object.__setattr__(self, "round_id", round_id)
        object.__setattr__(self, "time_utc", time_utc)
        object.__setattr__(self, "status", status)
        object.__setattr__(self, "game", game)
        object.__setattr__(self, "seats", seats)


class RoundFilter(FrozenRecord):
    """Which closed rounds a reader asks for: closed in [start_utc, end_utc), with a wager of ``seat``,
    of ``status`` (settled, dead, void); None: any. The round index answers it in SQL
    (controller/journal/indexes.py), a file without the index by ``matches``."""

    __slots__ = ("end_utc", "seat", "start_utc", "status")
    start_utc: str | None
    end_utc: str | None
    seat: int | None
    status: str | None

    def __init__(
        self,
        start_utc: str | None = None,
        end_utc: str | None = None,
        seat: int | None = None,
        status: str | None = None,
    ) -> None:
        self._set_fields(locals())

    @property
    def ranged(self) -> bool:
        return self.start_utc is not None or self.end_utc is not None

    def matches(self, row: RoundRow) -> bool:
        return (
            (self.start_utc is None or row.time_utc >= self.start_utc)
            and (self.end_utc is None or row.time_utc < self.end_utc)
            and (self.seat is None or self.seat in row.seats)
            and (self.status is None or row.status == self.status)
        )


def round_row(
    seq: int, kind: str, round_id: str | None, time_utc: str, public: Mapping[str, Any]
) -> RoundRow | None:
    if kind not in STATUS_BY_CLOSING_KIND or round_id is None:
        return None
    settlement = public.get("settlement") or {}
    seats = sorted(
        {int(seat["seat"]) for seat in settlement.get("seats") or [] if seat.get("seat") is not None}
    )
    game = settlement.get("game")
    return RoundRow(
        seq,
        round_id,
        time_utc,
        STATUS_BY_CLOSING_KIND[kind],
        str(game) if game is not None else None,
        tuple(seats),
    )


# What reading a stored public part that is not its kind's shape raises (an edited payload): the typed
# class's EntryError (a ValueError), or a field read where another type was written.
PAYLOAD_DAMAGE: tuple[type[Exception], ...] = (LookupError, TypeError, ValueError, AttributeError)


def damaged_entry(journal_path: Path, seq: int, kind: str, error: Exception) -> JournalError:
    """A stored entry the totals cannot count, in one line naming the journal and the seq (a reader of
    a file's rows: the migration's rebuild, a sealed segment's fold), not a traceback."""
    return JournalError(
        f"journal {journal_path}: entry {seq}: payload is not a {kind} ({type(error).__name__}: {error})"
    )


def record(
    connection: sqlite3.Connection,
    rows: Iterable[tuple[int, str, str | None, str, Mapping[str, Any]]],
    *,
    journal_path: Path | None = None,
) -> None:
    """Add entries (seq, kind, round_id, time_utc, public part) to the totals and the round index, on
    ``connection`` inside the caller's transaction (the append's own). ``journal_path``: see
    ``totals_by_period``."""
    rounds: list[RoundRow] = []
    _write(connection, totals_by_period(rows, rounds, journal_path=journal_path), rounds)


def record_typed(
    connection: sqlite3.Connection, rows: Iterable[tuple[int, str | None, str, Entry, Mapping[str, Any]]]
) -> None:
    """``record`` of entries the caller holds typed (seq, round_id, time_utc, typed entry, public part):
    the append's, which built each typed entry a moment before, so none is decoded again from its public
    part (the same deltas: ``entry_deltas`` reads the typed entry either way)."""
    by_period: dict[str, Counter[str]] = {}
    rounds: list[RoundRow] = []
    for seq, round_id, time_utc, entry, public in rows:
        _add_entry(by_period, rounds, (seq, entry.kind, round_id, time_utc, public), entry=entry)
    _write(connection, by_period, rounds)


def _add_entry(
    by_period: dict[str, Counter[str]],
    rounds: list[RoundRow] | None,
    row: tuple[int, str, str | None, str, Mapping[str, Any]],
    *,
    entry: Entry | None = None,
    before_progressive_net: bool = False,
) -> None:
    """One entry's (seq, kind, round_id, time_utc, public part) deltas added to its periods, and its
    closed round's row to ``rounds`` when given; nothing added if either cannot be read."""
    seq, kind, round_id, time_utc, public = row
    delta = entry_deltas(
        seq, kind, round_id, public, entry=entry, before_progressive_net=before_progressive_net
    )
    closed = round_row(seq, kind, round_id, time_utc, public) if rounds is not None else None
    for period in periods_of(time_utc):
        by_period.setdefault(period, Counter()).update(delta)
    if rounds is not None and closed is not None:
        rounds.append(closed)


def totals_by_period(
    rows: Iterable[tuple[int, str, str | None, str, Mapping[str, Any]]],
    rounds: list[RoundRow] | None = None,
    *,
    before_progressive_net: bool = False,
    journal_path: Path | None = None,
) -> dict[str, Counter[str]]:
    """What entries (seq, kind, round_id, time_utc, public part) add to each period's totals; each
    closed round's row appended to ``rounds`` when given. Pure. With ``journal_path`` (stored rows
    read back: the migration's rebuild), an entry not of its kind's shape is ``damaged_entry``'s one
    line; without, the error itself (`journal verify --totals` makes it its verdict, totals_check.py)."""
    by_period: dict[str, Counter[str]] = {}
    for row in rows:
        seq, kind = row[0], row[1]
        if kind not in TOTAL_KINDS:
            continue
        try:
            _add_entry(by_period, rounds, row, before_progressive_net=before_progressive_net)
        except PAYLOAD_DAMAGE as error:
            if journal_path is None:
                raise
            raise damaged_entry(journal_path, seq, kind, error) from None
    return by_period


def _write(
    connection: sqlite3.Connection, by_period: Mapping[str, Counter[str]], rounds: list[RoundRow]
) -> None:
    if by_period:
        connection.executemany(
            "INSERT INTO journal_totals (period, key, value) VALUES (?, ?, ?) "
            "ON CONFLICT (period, key) DO UPDATE SET value = value + excluded.value",
            [(period, key, value) for period, delta in by_period.items() for key, value in delta.items()],
        )
    if rounds:
        connection.executemany(
            "INSERT INTO journal_rounds (seq, round_id, time_utc, status, game) VALUES (?, ?, ?, ?, ?)",
            [(r.seq, r.round_id, r.time_utc, r.status, r.game) for r in rounds],
        )
        connection.executemany(
            "INSERT INTO journal_round_seats (seat, seq) VALUES (?, ?)",
            [(seat, r.seq) for r in rounds for seat in r.seats],
        )


def rebuild(
    connection: sqlite3.Connection,
    rows: Iterator[tuple[int, str, str | None, str, Mapping[str, Any]]],
    *,
    journal_path: Path,
) -> None:
    """Make the totals and the round index again from ``rows`` (every entry of TOTAL_KINDS, in order),
    inside the caller's transaction: empties them first. An entry of ``journal_path`` not of its kind's
    shape is one ``JournalError`` naming it (``damaged_entry``)."""
    connection.execute("DELETE FROM journal_totals")
    connection.execute("DELETE FROM journal_rounds")
    connection.execute("DELETE FROM journal_round_seats")
    batch: list[tuple[int, str, str | None, str, Mapping[str, Any]]] = []
    for row in rows:
        batch.append(row)
        if len(batch) >= 5000:
            record(connection, batch, journal_path=journal_path)
            batch = []
    record(connection, batch, journal_path=journal_path)


# --- reading ------------------------------------------------------------------------------------


class Summed(Record):
    """A range's totals as meters, with the theoretical's inputs (shift_meters.RangeMeters' fields)."""

    __slots__ = ("dp_rounds", "meters", "stakes")
    meters: Meters
    stakes: dict[tuple[str, str, str], int]
    dp_rounds: int

    def __init__(self, meters: Meters, stakes: dict[tuple[str, str, str], int], dp_rounds: int) -> None:
        self.meters = meters
        self.stakes = stakes
        self.dp_rounds = dp_rounds


def summed(values: Mapping[str, int]) -> Summed:
    """Meters from flattened totals (the inverse of ``entry_deltas`` summed)."""
    from controller.journal.state_parts import Meters, WagerMeter  # noqa: PLC0415

    meters = Meters()
    stakes: dict[tuple[str, str, str], int] = {}
    dp_rounds = 0
    unbalanced: list[tuple[str, str]] = []
    for key, value in values.items():
        parts = key.split(_SEP)
        if len(parts) == 1:
            if key == "dp_rounds":
                dp_rounds = int(value)
            elif key in _SCALARS:
                setattr(meters, key, int(value))
        elif parts[0] == "wager" and len(parts) == 3:
            meter = meters.by_wager.setdefault(parts[1], WagerMeter())
            setattr(meter, parts[2], int(value))
        elif parts[0] == "fault" and len(parts) == 2:
            if value:
                meters.faults_by_kind[parts[1]] = int(value)
        elif parts[0] == "unbalanced" and len(parts) == 3:
            unbalanced.append((parts[1], parts[2]))
        elif parts[0] == "stakes" and len(parts) == 4:
            stakes[(parts[1], parts[2], parts[3])] = int(value)
    meters.unbalanced_rounds = [round_id for _seq, round_id in sorted(unbalanced)]
    meters.by_wager = dict(sorted(meters.by_wager.items()))
    return Summed(meters, stakes, dp_rounds)


def holds_progressive_wager(values: Mapping[str, int]) -> bool:
    """Whether flattened totals count a Progressive wager: the only wager whose rounds a schema-3
    file's totals read otherwise than this release (they left the progressive's net out of the balance;
    without one, the two readings are the same numbers)."""
    from controller.rules.games import PROGRESSIVE  # noqa: PLC0415 (the rules' names, only when asked)

    prefix = f"wager{_SEP}{PROGRESSIVE}{_SEP}"
    return any(key.startswith(prefix) for key in values)


def range_periods(start_utc: str, end_utc: str) -> list[str] | None:
    """The periods that make up [start_utc, end_utc): whole days as day rows, the hours at either end
    as hour rows. None when either end is not on a whole hour (then the range is folded instead)."""
    try:
        start = _on_the_hour(start_utc)
        end = _on_the_hour(end_utc)
    except ValueError:
        return None
    periods: list[str] = []
    moment = start
    while moment < end:
        if moment.hour == 0 and moment + timedelta(days=1) <= end:
            periods.append("d:" + moment.strftime("%Y-%m-%d"))
            moment += timedelta(days=1)
        else:
            periods.append("h:" + moment.strftime("%Y-%m-%dT%H"))
            moment += timedelta(hours=1)
    return periods


def periods_span(periods: Sequence[str]) -> tuple[str, str] | None:
    """The times [start, end) the hour and day rows ``periods`` cover, as texts that compare with the
    journal's times (a prefix of one: "2026-12-01T14" is before every time of that hour and "2026-12-01T15"
    after them). None when a period is the whole journal's (``all``) or not an hour or a day: every
    segment may hold its rows. A segment none of whose entries is in the span holds none of its rows:
    an entry's totals go to the hour and day of its own time."""
    starts: list[str] = []
    ends: list[str] = []
    try:
        for period in periods:
            if period.startswith("h:"):
                hour = datetime.strptime(period[2:], "%Y-%m-%dT%H")
                starts.append(period[2:])
                ends.append((hour + timedelta(hours=1)).strftime("%Y-%m-%dT%H"))
            elif period.startswith("d:"):
                day = datetime.strptime(period[2:], "%Y-%m-%d")
                starts.append(period[2:])
                ends.append((day + timedelta(days=1)).strftime("%Y-%m-%d"))
            else:
                return None
    except ValueError:
        return None
    if not starts:
        return None
    return min(starts), max(ends)


def _on_the_hour(time_utc: str) -> datetime:
    moment = datetime.strptime(time_utc, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
    if moment.minute or moment.second or moment.microsecond:
        raise ValueError(f"{time_utc} is not on the hour")
    return moment


def read_periods(connection: sqlite3.Connection, periods: list[str]) -> dict[str, int]:
    """The totals of these periods summed, key by key."""
    out: dict[str, int] = {}
    for start in range(0, len(periods), 500):
        chunk = periods[start : start + 500]
        marks = ", ".join("?" for _ in chunk)
        for key, value in connection.execute(
            f"SELECT key, SUM(value) FROM journal_totals WHERE period IN ({marks}) GROUP BY key", chunk
        ):
            out[str(key)] = out.get(str(key), 0) + int(value)
    return out


def folded_period_totals(
    rows: Iterable[tuple[int, str, str | None, str, Mapping[str, Any]]],
    periods: Iterable[str],
    *,
    journal_path: Path,
) -> dict[str, int]:
    """The totals of these periods folded from ``rows`` (every entry of TOTAL_KINDS of the file at
    ``journal_path``): for a segment sealed before the totals were kept. An entry not of its kind's
    shape is one ``JournalError`` naming it (``damaged_entry``)."""
    wanted = set(periods)
    out: Counter[str] = Counter()
    for seq, kind, round_id, time_utc, public in rows:
        if wanted.intersection(periods_of(time_utc)):
            try:
                out.update(entry_deltas(seq, kind, round_id, public))
            except PAYLOAD_DAMAGE as error:
                raise damaged_entry(journal_path, seq, kind, error) from None
    return dict(out)


def scanned_round_seqs(
    rows: Iterable[tuple[int, str, str | None, str, Mapping[str, Any]]],
    wanted: RoundFilter,
    last: int | None,
    *,
    journal_path: Path | None = None,
) -> list[int]:
    """``RoundIndex.closed_round_seqs`` of one file without a round index, by scanning its closings. With
    ``journal_path``, a closing entry not of its kind's shape is one ``JournalError`` naming it."""
    found: list[int] = []
    for seq, kind, round_id, time_utc, public in rows:
        try:
            row = round_row(seq, kind, round_id, time_utc, public)
        except PAYLOAD_DAMAGE as error:
            if journal_path is None:
                raise
            raise damaged_entry(journal_path, seq, kind, error) from None
        if row is not None and wanted.matches(row):
            found.append(seq)
    return found if last is None else found[-last:]

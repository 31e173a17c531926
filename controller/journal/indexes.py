"""The journal's totals and round index as read (a part of controller/journal/store.py's ``Journal``): the
per-period totals the meters sum, the closed rounds by time, seat and status, the rounds started and the
next round's id; each over the open segment and the sealed ones (docs/journal.md "Totals and indexes").
The totals are written with the entries, in the same transaction (controller/journal/writer.py)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from datetime import date, datetime
from pathlib import Path
from typing import Any

from controller.journal.handle import JournalFile
from controller.journal.kinds import ROUND_STARTED
from controller.journal.schema import counted_rows
from controller.journal.sealed import SealedSegments
from controller.journal.totals import RoundFilter, holds_progressive_wager, periods_span
from controller.locale import DEFAULT_PROPERTY, PropertySettings, gaming_day_of
from controller.names import format_round_id

# Folded totals of read-only files, by the file's path, size and time and those of its write-ahead log
# (anything appended changes one of them): a few hundred bytes each.
_FOLDED: OrderedDict[tuple[object, ...], dict[str, int]] = OrderedDict()
_FOLDED_KEPT = 64
_FOLDED_LOCK = threading.Lock()


def _unchanged_file_key(path: Path, periods: Sequence[str]) -> tuple[object, ...] | None:
    """What identifies a file's content for the fold's cache (None: it cannot be read)."""
    try:
        main = path.stat()
    except OSError:
        return None
    try:
        wal = path.with_name(path.name + "-wal").stat()
        wal_key: tuple[int, int] = (wal.st_size, wal.st_mtime_ns)
    except OSError:
        wal_key = (-1, -1)
    return (str(path.resolve()), main.st_size, main.st_mtime_ns, wal_key, tuple(periods))


class RoundIndex:
    """The totals and the round index of one journal, through its open file and its sealed segments."""

    def __init__(self, file: JournalFile, sealed: SealedSegments, clock: Callable[[], datetime]) -> None:
        self._file = file
        self._sealed = sealed
        self._clock = clock

    def period_totals(self, periods: Sequence[str]) -> dict[str, int]:
        """The totals of these periods summed key by key, over this segment and every sealed one
        (each segment file keeps its own entries' totals: docs/journal.md "Totals and indexes")."""
        out = self.own_period_totals(periods)
        # Hours and days: only the sealed segments with an entry in their span (by the seals' times, a
        # bisection), so a shift's meters read one or two segments whatever the journal's age.
        span = periods_span(periods)
        sealed_ones = self._sealed.after() if span is None else self._sealed.in_time(*span)
        for sealed in sealed_ones:
            for key, value in sealed.indexes.own_period_totals(periods).items():
                out[key] = out.get(key, 0) + value
        return out

    def own_period_totals(self, periods: Sequence[str]) -> dict[str, int]:
        """This file's totals of these periods: as stored, or folded from its own entries where it has
        none (a segment sealed before the totals existed) or where its stored ones read a round's balance
        otherwise than this release and the periods hold a Progressive wager (a schema-3 file: a sealed
        segment is never migrated, its seal signs its bytes)."""
        if self._file.has_totals:
            stored = self._stored_period_totals(periods)
            if self._file.totals_current or not holds_progressive_wager(stored):
                return stored
        return self._folded_period_totals(periods)

    def _stored_period_totals(self, periods: Sequence[str]) -> dict[str, int]:
        out: dict[str, int] = {}
        for start in range(0, len(periods), 500):
            chunk = list(periods[start : start + 500])
            marks = ", ".join("?" for _ in chunk)
            rows = self._file.read(
                f"SELECT key, SUM(value) FROM journal_totals WHERE period IN ({marks}) GROUP BY key", chunk
            )
            for key, value in rows:
                out[str(key)] = out.get(str(key), 0) + int(value)
        return out

    def _folded_period_totals(self, periods: Sequence[str]) -> dict[str, int]:
        """The periods' totals folded from this file's entries; a read-only file's kept for the next
        reader while the file is unchanged (a sealed segment never changes: the panel reads its shift's
        and the whole journal's meters again and again)."""
        from controller.journal.totals import folded_period_totals  # noqa: PLC0415

        key = _unchanged_file_key(self._file.path, periods) if self._file.readonly else None
        if key is not None:
            with _FOLDED_LOCK:
                kept = _FOLDED.get(key)
                if kept is not None:
                    _FOLDED.move_to_end(key)
                    return dict(kept)
        with self._file.lock:
            folded = folded_period_totals(
                counted_rows(self._file.connection, self._file.path), periods, journal_path=self._file.path
            )
        if key is not None:
            with _FOLDED_LOCK:
                _FOLDED[key] = dict(folded)
                while len(_FOLDED) > _FOLDED_KEPT:
                    _FOLDED.popitem(last=False)
        return folded

    def closed_round_seqs(
        self,
        *,
        start_utc: str | None = None,
        end_utc: str | None = None,
        seat: int | None = None,
        status: str | None = None,
        last: int | None = None,
    ) -> list[int]:
        """The closing entries' seqs of the rounds closed in [start_utc, end_utc), with a wager of
        ``seat``, of ``status`` (settled, dead, void), oldest first; the last ``last`` of them when
        given. Through the round index of this segment, then of the sealed ones, newest first, until
        ``last`` are found: the cost is the rounds found (and the segments opened), not the entries."""
        wanted = RoundFilter(start_utc, end_utc, seat, status)
        found = self.own_closed_round_seqs(wanted, last)
        if last is not None and len(found) >= last:
            return found[-last:]
        sealed_ones = (
            self._sealed.in_time(start_utc, end_utc)
            if wanted.ranged
            else self._sealed.after(newest_first=True)
        )
        for sealed in sealed_ones:
            want = None if last is None else last - len(found)
            found = sealed.indexes.own_closed_round_seqs(wanted, want) + found
            if last is not None and len(found) >= last:
                break
        return found if last is None else found[-last:]

    def own_closed_round_seqs(self, wanted: RoundFilter, last: int | None) -> list[int]:
        """``closed_round_seqs`` of this file alone (its round index, or a scan without one)."""
        if not self._file.has_totals:
            from controller.journal.totals import scanned_round_seqs  # noqa: PLC0415

            with self._file.lock:
                rows = list(counted_rows(self._file.connection, self._file.path))
            return scanned_round_seqs(rows, wanted, last, journal_path=self._file.path)
        start_utc, end_utc, seat = wanted.start_utc, wanted.end_utc, wanted.seat
        conditions: list[str] = []
        params: list[Any] = []
        # A time range reads its rounds through the time index (then sorted by seq: a shift's few
        # hundred rows); left to itself, SQLite walks the primary key back from the journal's end to
        # the range, which costs the journal's age (measured by bench/bench_years.py).
        # With a seat too, the range stays the outer loop (CROSS JOIN fixes SQLite's join order): driven
        # by the seat, every round of that seat in the journal was matched against the range (9 s on
        # 5 million entries, bench/bench_years.py); without a range, the seat's own key is the way in.
        ranged = wanted.ranged
        if ranged:
            table = "journal_rounds r INDEXED BY journal_rounds_by_time"
            if seat is not None:
                table += " CROSS JOIN journal_round_seats s"
        else:
            table = (
                "journal_round_seats s CROSS JOIN journal_rounds r"
                if seat is not None
                else "journal_rounds r"
            )
        filters = (
            ("s.seq = r.seq AND s.seat = ?", seat),
            ("r.time_utc >= ?", start_utc),
            ("r.time_utc < ?", end_utc),
            ("r.status = ?", wanted.status),
        )
        for condition, value in filters:
            if value is not None:
                conditions.append(condition)
                params.append(value)
        where = f"WHERE {' AND '.join(conditions)}" if conditions else ""
        limit = f"LIMIT {int(last)}" if last is not None else ""
        order = "s.seq" if seat is not None and not ranged else "r.seq"  # a seat alone: its key's order
        rows = self._file.read(f"SELECT r.seq FROM {table} {where} ORDER BY {order} DESC {limit}", params)
        return [int(row[0]) for row in reversed(rows)]

    def round_count(self) -> int:
        """How many rounds the journal has started (the sealed segments' from this segment's base)."""
        rows = self._file.read("SELECT COUNT(*) FROM journal WHERE kind = ?", (ROUND_STARTED,))
        return self._file.base.base_rounds + int(rows[0][0])

    def next_round_id(self, day: date | None = None, prop: PropertySettings = DEFAULT_PROPERTY) -> str:
        """The id the next round gets: ``R{table_id}-{YYYYMMDD}-{n:06d}`` (names.format_round_id), dated
        by the gaming day (controller/locale.py) of the journal's clock unless ``day`` is given."""
        today = day if day is not None else gaming_day_of(self._clock(), prop)
        return format_round_id(self._file.table_id, today, self.round_count() + 1)

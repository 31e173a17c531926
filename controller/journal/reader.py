"""The journal's reads (a part of controller/journal/store.py's ``Journal``): entries in order a page at a
time, the typed replay the reducer folds, the last entries, one entry, one round's entries; each through
the open segment's file and, for entries before its base, the sealed segments (docs/journal.md "Segments
and seals")."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from controller.journal.errors import JournalError
from controller.journal.handle import JournalFile
from controller.journal.kinds import ENTRY_SCHEMA_VERSION
from controller.journal.rows import JournalEntry, Replayed, entry_from_row
from controller.journal.sealed import SealedSegments

_PAGE_ROWS = 500


def _where(round_id: str | None, kinds: list[str] | None) -> tuple[str, list[Any]]:
    """The WHERE clause of a paged read after a seq (its first parameter), of one round and of some
    kinds when given, and the parameters that follow the seq."""
    conditions = ["seq > ?"]
    params: list[Any] = []
    if round_id is not None:
        conditions.append("round_id = ?")
        params.append(round_id)
    if kinds:
        conditions.append(f"kind IN ({', '.join('?' for _ in kinds)})")
        params.extend(kinds)
    return " AND ".join(conditions), params


class JournalReader:
    """Reads one journal: its open file, then its sealed segments where a read reaches before it."""

    def __init__(self, file: JournalFile, sealed: SealedSegments) -> None:
        self._file = file
        self._sealed = sealed

    def entries(
        self,
        since_seq: int = 0,
        round_id: str | None = None,
        kinds: Iterable[str] | None = None,
    ) -> Iterator[JournalEntry]:
        """Entries with seq > since_seq in order, optionally of one round and of some kinds: the sealed
        segments' first where ``since_seq`` is before this segment (docs/journal.md "Segments and
        seals"), then this one's.

        Read a page at a time, so a long journal is never held in memory at once."""
        kind_list = list(kinds) if kinds is not None else None
        for reader in self._sealed_readers(since_seq):
            yield from reader.entries(since_seq, round_id, kind_list)
        yield from self.entries_here(since_seq, round_id, kind_list)

    def _sealed_readers(self, since_seq: int) -> Iterator[JournalReader]:
        """The readers of the sealed segments with entries after ``since_seq``, oldest first (none when
        ``since_seq`` is in the open segment), each open while the caller reads it."""
        if since_seq < self._file.base.base_seq:
            for sealed in self._sealed.after(since_seq):
                yield sealed.reader

    def entries_here(
        self, since_seq: int, round_id: str | None, kind_list: list[str] | None
    ) -> Iterator[JournalEntry]:
        """``entries`` of this file alone. A row whose private part is not one (not JSON, no part: a
        damaged file's) is one ``JournalError`` naming the journal and the seq, as the replay words it."""
        for rows in self._pages(self._file.columns, since_seq, round_id, kind_list, _PAGE_ROWS):
            for row in rows:
                yield entry_from_row(row, self._file.path)

    def _pages(
        self,
        columns: str,
        since_seq: int,
        round_id: str | None,
        kind_list: list[str] | None,
        page_rows: int,
    ) -> Iterator[list[Any]]:
        """The rows after ``since_seq`` (of one round, of some kinds, when given; none when the kinds
        are an empty list) a page at a time by seq (``columns`` start with the seq), so a long journal
        is never held in memory at once."""
        if kind_list == []:
            return
        where, params = _where(round_id, kind_list)
        query = f"SELECT {columns} FROM journal WHERE {where} ORDER BY seq LIMIT {page_rows}"
        after = since_seq
        while True:
            rows = self._file.read(query, (after, *params))
            yield rows
            if len(rows) < page_rows:
                return
            after = rows[-1][0]

    def replay(
        self, since_seq: int = 0, round_id: str | None = None, kinds: Iterable[str] | None = None
    ) -> Iterator[Replayed]:
        """Every entry after ``since_seq`` (of one round, of some kinds, when given), typed, in order,
        both parts: what the reducer (controller/journal/state.py) folds. Read a page at a time; the
        sealed segments' first where ``since_seq`` is before this segment (a start never asks for
        them: it folds the last seal's checkpoint and this segment, controller/journal/recovery.py)."""
        kind_list = list(kinds) if kinds is not None else None
        for reader in self._sealed_readers(since_seq):
            yield from reader.replay(since_seq, round_id, kind_list)
        yield from self._replay_here(since_seq, round_id, kind_list)

    def _replay_here(
        self, since_seq: int, round_id: str | None, kind_list: list[str] | None
    ) -> Iterator[Replayed]:
        parts = "1, payload, NULL" if self._file.schema_version == 1 else "version, payload, private"
        columns = f"seq, time_utc, table_id, round_id, source, kind, {parts}"
        from controller.journal import entries as typed  # noqa: PLC0415 - a replay decodes the classes
        from controller.journal.upcast import typed_entry  # noqa: PLC0415 - it loads the classes too

        decode = typed.decode
        current = ENTRY_SCHEMA_VERSION
        for rows in self._pages(columns, since_seq, round_id, kind_list, _PAGE_ROWS * 10):
            try:
                for (
                    seq,
                    time_utc,
                    table_id,
                    entry_round,
                    source,
                    kind,
                    version,
                    payload_text,
                    private_text,
                ) in rows:
                    yield Replayed(
                        seq,
                        time_utc,
                        table_id,
                        entry_round,
                        source,
                        kind,
                        # An entry of an earlier version through the upcasters (upcast.py).
                        decode(kind, payload_text, private_text)
                        if version == current
                        else typed_entry(kind, version, payload_text, private_text),
                    )
            except typed.EntryError as error:
                raise JournalError(f"journal {self._file.path}: entry {seq}: {error}") from None

    def last_entries(self, count: int, kinds: Iterable[str]) -> list[JournalEntry]:
        """The last ``count`` entries of these kinds, oldest first (read backwards through the index,
        so recalling the last rounds of a long journal does not read it all)."""
        kind_list = list(kinds)
        if count < 1 or not kind_list:
            return []
        placeholders = ", ".join("?" for _ in kind_list)
        rows = self._file.read(
            f"SELECT {self._file.columns} FROM journal WHERE kind IN ({placeholders}) "
            "ORDER BY seq DESC LIMIT ?",
            (*kind_list, count),
        )
        found = [entry_from_row(row, self._file.path) for row in reversed(rows)]
        if len(found) < count and self._file.base.base_seq > 0:
            # Fewer here than asked: the rest from the sealed segments, newest first.
            for sealed in self._sealed.after(newest_first=True):
                found = sealed.reader.last_entries(count - len(found), kind_list) + found
                if len(found) >= count:
                    break
        return found

    def last_entry(self) -> JournalEntry | None:
        """The journal's last entry: this segment's, or the last sealed one's when this one is new."""
        rows = self._file.read(f"SELECT {self._file.columns} FROM journal ORDER BY seq DESC LIMIT 1", ())
        if rows:
            return entry_from_row(rows[0], self._file.path)
        base_seq = self._file.base.base_seq
        return self.entry(base_seq) if base_seq > 0 else None

    def entry(self, seq: int) -> JournalEntry | None:
        """Entry ``seq`` (None: the journal has none), in the segment that holds it."""
        if 0 < seq <= self._file.base.base_seq:
            with self._sealed.holding(seq) as sealed:
                return None if sealed is None else sealed.reader.entry(seq)
        rows = self._file.read(f"SELECT {self._file.columns} FROM journal WHERE seq = ?", (seq,))
        return entry_from_row(rows[0], self._file.path) if rows else None

    def segment_summary(self) -> tuple[int, str | None]:
        """This segment's entries and its first entry's time (None: it has none), read from the ends of
        the primary key: what decides whether it is due to be sealed."""
        rows = self._file.read(
            "SELECT MAX(seq), (SELECT time_utc FROM journal ORDER BY seq LIMIT 1) FROM journal", ()
        )
        last_seq, first_utc = rows[0]
        if last_seq is None:
            return 0, None
        return int(last_seq) - self._file.base.base_seq, str(first_utc)

    def round_entries(self, round_id: str, seq: int) -> list[JournalEntry]:
        """Every entry of round ``round_id``, one of whose entries is ``seq`` (its closing entry, say):
        read from the one segment holding ``seq`` (a round never spans two segments), so recalling a
        round costs the same in a journal of a day and of years."""
        if 0 < seq <= self._file.base.base_seq:
            with self._sealed.holding(seq) as sealed:
                return [] if sealed is None else list(sealed.reader.entries_here(0, round_id, None))
        return list(self.entries_here(0, round_id, None))

    def round_closing(self, round_id: str, kinds: Iterable[str]) -> JournalEntry | None:
        """The first entry of round ``round_id`` of these kinds (its closing entry, say): in the open
        segment, then in the sealed ones newest first, stopping at the segment that holds it (a round
        never spans two segments: the cost is the segments newer than the round)."""
        kind_list = list(kinds)
        for entry in self.entries_here(0, round_id, kind_list):
            return entry
        # A round id's n is the count of rounds started when it started: the seals' counts name the
        # segment it started (and closed) in, found by bisection whatever the journal's age. An id that
        # is not there (written by other means) is looked for in every sealed segment, newest first.
        looked = self._sealed.of_round(round_id)
        if looked is not None:
            with self._sealed.held(looked) as sealed:
                for entry in sealed.reader.entries_here(0, round_id, kind_list):
                    return entry
        for sealed in self._sealed.after(newest_first=True):
            if sealed.path == looked:
                continue
            for entry in sealed.reader.entries_here(0, round_id, kind_list):
                return entry
        return None

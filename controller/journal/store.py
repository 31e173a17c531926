"""The journal: an append-only, hash-chained SQLite file of typed entries (docs/journal.md).

Each row holds an entry's public part (``payload``) and, apart, its private part (``private``: the
cards; see controller/journal/entries/) with the commitment the chain hashes (``private_digest``).

``Journal`` opens a journal file (proving its head before it appends) and composes the parts that work
on it, each a class of its own with the few collaborators it needs (docs/journal.md "The code"):

- ``file`` (controller/journal/handle.py): the open segment's SQLite file, shared by the parts;
- ``writer`` (writer.py): appends, in one transaction each, with the totals they move;
- ``reader`` (reader.py): entries, the typed replay, one entry, one round's;
- ``indexes`` (indexes.py): the per-period totals and the round index;
- ``wal`` (wal.py): checkpoints, backup and PRAGMAs;
- ``sealed`` (sealed.py): the sealed segments the reads reach before the open one.

The schema, its triggers and migrations are in schema.py; errors in an operator's words in errors.py.
The appends and reads every part of the product makes are delegated here, one line each; the rest is
reached through the part (``journal.wal.checkpoint()``, ``journal.indexes.closed_round_seqs()``).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable, Iterator, Mapping
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal, Self

from controller.journal.errors import JournalError
from controller.journal.handle import JournalFile
from controller.journal.indexes import RoundIndex
from controller.journal.reader import JournalReader
from controller.journal.rows import (
    AppendItem,
    JournalEntry,
    PendingEntry,
    Replayed,
    entry_from_row,
    parse_time_utc,
    recompute_hash,
)
from controller.journal.schema import (
    APPLICATION_ID,
    DEFAULT_BUSY_TIMEOUT_S,
    SCHEMA_VERSION,
    SegmentBase,
    check_identity,
    connect,
    meta_table_id,
    migrate,
    prepare,
    utc_now,
)
from controller.journal.sealed import SealedSegments
from controller.journal.wal import WalControl
from controller.journal.writer import JournalWriter, journal_log

if TYPE_CHECKING:
    # The typed entries (msgspec, ~60 classes) load with the first append or typed read, not with the
    # module: a reader that only shows rows reads their views (controller/journal/entry_view.py; issue 28).
    from controller.journal import entries as typed

# The names the rest of the product imports from here (their homes are the modules above).
__all__ = [
    "APPLICATION_ID",
    "SCHEMA_VERSION",
    "AppendItem",
    "Journal",
    "JournalEntry",
    "JournalError",
    "PendingEntry",
    "Replayed",
    "entry_from_row",
    "parse_time_utc",
    "recompute_hash",
]


class Journal:
    """One table's journal file and its parts. Safe to share between threads (one lock around the
    connection, in ``file``)."""

    def __init__(
        self,
        connection: sqlite3.Connection,
        path: Path,
        table_id: str,
        *,
        clock: Callable[[], datetime],
        readonly: bool,
        version: int = SCHEMA_VERSION,
    ) -> None:
        self.path = path
        self.table_id = table_id
        self.readonly = readonly
        self._clock = clock
        self.file = JournalFile(connection, path, table_id, readonly=readonly, version=version)
        self.sealed = SealedSegments(self.file, _open_sealed)
        self.writer = JournalWriter(self.file, clock)
        self.reader = JournalReader(self.file, self.sealed)
        self.indexes = RoundIndex(self.file, self.sealed, clock)
        self.wal = WalControl(self.file)
        self.switch_failed: str | None = None  # ``switch_file`` could not open the next file

    # --- opening --------------------------------------------------------------------------------
    @classmethod
    def open(
        cls,
        path: str | Path,
        table_id: str,
        *,
        clock: Callable[[], datetime] = utc_now,
        busy_timeout_s: float = DEFAULT_BUSY_TIMEOUT_S,
        synchronous: Literal["FULL", "OFF"] = "FULL",
        base: SegmentBase | None = None,
    ) -> Journal:
        """Open (creating it and its directory when new) the journal of table ``table_id`` to append.
        A new file is the next segment after the journal's last seal, if it has seals
        (controller/journal/segments.py), unless ``base`` says where it starts.

        ``synchronous="OFF"`` skips the fsync of each commit: only for tests and soaks of the logic in
        accelerated time, never for a table (a power cut could lose committed entries). It is logged."""
        journal_path = Path(path)
        try:
            journal_path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise JournalError(f"journal {journal_path}: cannot create its directory: {error}") from None
        mode: str = synchronous  # checked at run time too: not every caller is type-checked
        if mode not in ("FULL", "OFF"):
            raise ValueError(f"synchronous must be FULL or OFF, not {mode!r}")
        connection = connect(journal_path, readonly=False, busy_timeout_s=busy_timeout_s)
        if mode == "OFF":
            connection.execute("PRAGMA synchronous = OFF")
            journal_log().warning("journal_not_durable", path=str(journal_path), synchronous=synchronous)
        try:
            if base is None:
                from controller.journal.seals import next_segment_base  # noqa: PLC0415 (the reducer's modules, for a journal with seals)

                base = next_segment_base(journal_path)
            stored_table_id, version = prepare(connection, journal_path, table_id, base)
            if stored_table_id == table_id and version < SCHEMA_VERSION:
                migrate(connection, journal_path, version)
                version = SCHEMA_VERSION
        except BaseException:
            connection.close()
            raise
        if stored_table_id != table_id:
            connection.close()
            raise JournalError(
                f"journal {journal_path}: belongs to table {stored_table_id!r}, not {table_id!r}"
            )
        journal = cls(connection, journal_path, table_id, clock=clock, readonly=False, version=version)
        try:
            journal.file.load_base()
            journal._check_head()
        except BaseException:
            connection.close()
            raise
        return journal

    def _check_head(self) -> None:
        """Refuse to extend a chain whose last entry does not verify (edited or damaged): new entries
        would be chained to a forgery. Only the last entry, so opening stays instant; `flushtable
        journal verify` checks them all."""
        last = self.reader.last_entry()
        if last is None:
            return
        if recompute_hash(last) != last.hash:
            raise JournalError(
                f"journal {self.path}: the last entry ({last.seq}) does not verify; nothing will be appended "
                f"to it (run `flushtable journal verify`)"
            )

    @classmethod
    def open_existing(
        cls,
        path: str | Path,
        *,
        readonly: bool = True,
        clock: Callable[[], datetime] = utc_now,
        busy_timeout_s: float = DEFAULT_BUSY_TIMEOUT_S,
    ) -> Journal:
        """Open a journal that must already exist; its table id is read from the file."""
        journal_path = Path(path)
        if not journal_path.is_file():
            raise JournalError(f"journal {journal_path}: no such file")
        connection = connect(journal_path, readonly=readonly, busy_timeout_s=busy_timeout_s)
        try:
            version = check_identity(connection, journal_path)
            if not version:
                raise JournalError(
                    f"journal {journal_path}: empty: it holds no journal (a new or truncated file)"
                )
            table_id = meta_table_id(connection, journal_path)
            if not readonly and version < SCHEMA_VERSION:
                migrate(connection, journal_path, version)
                version = SCHEMA_VERSION
        except BaseException:
            connection.close()
            raise
        journal = cls(connection, journal_path, table_id, clock=clock, readonly=readonly, version=version)
        try:
            journal.file.load_base()
        except BaseException:
            connection.close()
            raise
        return journal

    def switch_file(self, between: Callable[[], object]) -> None:
        """Close this file, run ``between`` (a live seal: it renames this file into the segments
        directory and creates the next segment at this path) and go on at the file now at the path,
        all under the file's lock: every holder of this object (the daemon's writer, the embedded
        panel, recall) follows the switch, and none of them reads or writes while it runs. The file is
        opened again even when ``between`` fails (then it is the same file, or the next segment a seal
        cut short was finished with); what ``between`` raised is raised after."""
        with self.file.lock:
            self.file.connection.close()
            try:
                between()
            finally:
                try:
                    following = Journal.open(self.path, self.table_id, clock=self._clock)
                except JournalError as error:
                    # Nothing can be appended now: the holder stops the table, and the next start
                    # finishes what ``between`` left (controller/journal/segments.py).
                    self.switch_failed = str(error)
                    raise
                self.file.take(following.file)

    def close(self) -> None:
        self.sealed.close()
        self.file.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # --- what every part of the product calls: one line each, to the part that does it -----------
    def append(
        self, kind: str, payload: Mapping[str, Any] | typed.Entry, *, round_id: str | None, source: str
    ) -> JournalEntry:
        """``JournalWriter.append``: one entry, durably committed when this returns."""
        return self.writer.append(kind, payload, round_id=round_id, source=source)

    def append_many(self, items: Iterable[AppendItem]) -> list[JournalEntry]:
        """``JournalWriter.append_many``: entries in one transaction, all of them or none."""
        return self.writer.append_many(items)

    def entries(
        self, since_seq: int = 0, round_id: str | None = None, kinds: Iterable[str] | None = None
    ) -> Iterator[JournalEntry]:
        """``JournalReader.entries``: entries after ``since_seq`` in order, a page at a time."""
        return self.reader.entries(since_seq, round_id, kinds)

    def replay(
        self, since_seq: int = 0, round_id: str | None = None, kinds: Iterable[str] | None = None
    ) -> Iterator[Replayed]:
        """``JournalReader.replay``: the typed entries the reducer folds."""
        return self.reader.replay(since_seq, round_id, kinds)

    def last_entries(self, count: int, kinds: Iterable[str]) -> list[JournalEntry]:
        """``JournalReader.last_entries``: the last ``count`` entries of these kinds, oldest first."""
        return self.reader.last_entries(count, kinds)

    def last_entry(self) -> JournalEntry | None:
        """``JournalReader.last_entry``: the journal's last entry."""
        return self.reader.last_entry()

    def entry(self, seq: int) -> JournalEntry | None:
        """``JournalReader.entry``: entry ``seq``."""
        return self.reader.entry(seq)


def _open_sealed(file: Path) -> Journal:
    """A sealed segment, opened read-only (a sealed file never changes)."""
    return Journal.open_existing(file, readonly=True)

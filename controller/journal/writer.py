"""The journal's appends (a part of controller/journal/store.py's ``Journal``): entries typed and
serialised, chained and written in one transaction with the totals they move, then logged.

Durability: WAL with synchronous=FULL, so an entry is on disk (the WAL fsynced) when ``append`` returns;
a crash loses at most an append that had not returned. A round is closed at most once, refused here by
name and by the schema's trigger, so a settled round can never be settled twice.

Errors: anything SQLite refuses (disk full, locked, corrupt, read-only) is a ``JournalError`` that
names the journal, the entry it could not write and the reason; the transaction is rolled back, so
nothing half-written remains. The caller must hold the table: a wager that is not journaled did not
happen."""

from __future__ import annotations

import contextlib
import functools
import sqlite3
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, NamedTuple

from controller.journal.chain import batch_hasher, canonical_json, format_time_utc
from controller.journal.errors import JournalError, sqlite_reason
from controller.journal.handle import JournalFile
from controller.journal.kinds import CLOSING_KINDS, ENTRY_SCHEMA_VERSION, ROUND_STARTED
from controller.journal.rows import AppendItem, JournalEntry, PendingEntry, parse_time_utc, pending_entry
from controller.journal.schema import CLOSING_SQL, COLUMNS, ROW_PLACEHOLDERS, ROWS_PER_INSERT
from controller.journal.totals import TOTAL_KINDS
from controller.journal.totals import record_typed as record_totals

if TYPE_CHECKING:
    # The typed entries (msgspec, ~60 classes) load with the first append or typed read, not with the
    # module: a reader that only shows rows reads their views (controller/journal/entry_view.py; issue 28).
    from controller.journal import entries as typed


@functools.cache
def journal_log() -> Any:
    """The journal's logger, made on first use: structlog (with rich, asyncio and ssl: about 60 ms) is
    for the writers, which log each entry; a reader (`recall`, `journal verify`, `meters`) never logs
    and so never loads it (issue 28: a command line that answers at once). The same lazy proxy as
    ``structlog.get_logger`` at import: it binds to the configuration in force when it logs."""
    import structlog  # noqa: PLC0415 (the readers' start-up: above)

    return structlog.get_logger("flushtable.journal")


_INFO = 20  # logging.INFO (the readers' start-up does not load logging for one number)
_COLUMN_COUNT = len(COLUMNS.split(","))


class _Prepared(NamedTuple):
    kind: str
    entry: typed.Entry  # the typed entry, which the totals count without decoding it again
    round_id: str | None
    source: str
    public: dict[str, Any]  # the public part as JSON values (what public_text parses back to)
    public_text: str
    private: dict[str, Any] | None
    private_text: str | None
    private_digest: str | None


def _kinds_text(kinds: Sequence[str], shown_at_most: int = 4) -> str:
    """The kinds of a failed append on one line: a group commit can hold a hundred entries."""
    if len(kinds) <= shown_at_most:
        return ", ".join(kinds)
    return f"{', '.join(kinds[:shown_at_most])} and {len(kinds) - shown_at_most} more"


def _prepare_entry(item: PendingEntry) -> _Prepared:
    """Type the entry and serialise its two parts. What no correct writer produces (an unknown kind, a
    field its kind does not have, a wrong type) is a bug, not a user's mistake: ValueError
    (entries.EntryError), before anything is written."""
    from controller.journal import entries as typed  # noqa: PLC0415 - see the import above

    kind, payload, round_id, source = item
    entry = payload if isinstance(payload, typed.Entry) else typed.build(kind, payload)
    if entry.kind != kind:
        raise typed.EntryError(f"journal: a {entry.kind} entry given as {kind}")
    if not source:
        raise ValueError(f"journal: {kind} needs a source")
    if (kind in CLOSING_KINDS or kind == ROUND_STARTED) and not round_id:
        raise ValueError(f"journal: {kind} needs a round_id")
    if isinstance(entry, typed.RoundStarted) and entry.round_id != round_id:
        raise ValueError(f"journal: round_started payload names {entry.round_id!r}, not {round_id!r}")
    public, private = typed.parts_dicts(entry)
    if private is None:  # most entries: no private part to seal
        return _Prepared(kind, entry, round_id, source, public, canonical_json(public), None, None, None)
    private_text = typed.seal_private(private)
    digest = typed.commitment(private_text)
    return _Prepared(
        kind, entry, round_id, source, public, canonical_json(public), private, private_text, digest
    )


def _step_entry(wall_time_utc: str, journal_time_utc: str) -> _Prepared:
    """The clock_stepped entry of a wall clock gone back behind the journal's last time."""
    from controller.journal import entries as typed  # noqa: PLC0415 - see the import above

    step = parse_time_utc(journal_time_utc) - parse_time_utc(wall_time_utc)
    stepped = typed.ClockStepped(
        wall_clock_utc=wall_time_utc,
        journal_time_utc=journal_time_utc,
        step_back_us=step // timedelta(microseconds=1),
    )
    return _prepare_entry(PendingEntry(stepped.kind, stepped, None, "journal"))


def _insert(connection: sqlite3.Connection, rows: Sequence[tuple[Any, ...]]) -> None:
    """One multi-row INSERT per chunk, not one statement per entry: the daemon commits on its event
    loop, and per-row statements made a 19-entry commit take 6 ms of it. The triggers still run for each
    row, in order, seeing the rows before it."""
    per_insert = min(
        ROWS_PER_INSERT, connection.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER) // _COLUMN_COUNT
    )
    for start in range(0, len(rows), per_insert):
        chunk = rows[start : start + per_insert]
        placeholders = ", ".join([ROW_PLACEHOLDERS] * len(chunk))
        connection.execute(
            f"INSERT INTO journal ({COLUMNS}) VALUES {placeholders}",
            [value for row_values in chunk for value in row_values],
        )


@functools.cache
def _filtering_levels() -> dict[type, int]:
    """structlog's filtering logger classes (``make_filtering_bound_logger``: one class a level, made
    once by structlog) by the level below which they write nothing."""
    import structlog  # noqa: PLC0415 (loaded already: a writer has logged through journal_log)

    levels = (0, 10, 20, 30, 40, 50)  # NOTSET, DEBUG, INFO, WARNING, ERROR, CRITICAL
    return {structlog.make_filtering_bound_logger(level): level for level in levels}


def _info_filtered_out() -> bool:
    """Is an info line written nowhere under the configuration in force now: asked of the configured
    class, without binding a logger (binding one per commit was most of the logging's cost in a daemon
    at warning: issue 28). A class that is not one of structlog's filtering loggers (a test's
    subclass, a standard-library logger) is asked through a bound logger, as before."""
    import structlog  # noqa: PLC0415 (see _filtering_levels)

    level = _filtering_levels().get(structlog.get_config()["wrapper_class"])
    return level is not None and level > _INFO


def _log_written(entries: Sequence[JournalEntry]) -> None:
    if _info_filtered_out():
        return
    # One bound logger per append, not per entry: the lazy proxy binds on every call (measured:
    # a tenth of an entry's cost, even when info is filtered out).
    logger = journal_log().bind()
    # At a level above info (bench_table's warning) the entries are not written: not even called.
    for entry in entries if logger.is_enabled_for(_INFO) else ():
        logger.info(
            entry.kind,
            journal_seq=entry.seq,
            table_id=entry.table_id,
            round_id=entry.round_id,
            source=entry.source,
            # The public part only, at every level: logs reach consoles and shippers, and a hole
            # card must not leave the daemon before its reveal (a dead hand's never).
            payload=entry.public,
            hash=entry.hash,
        )


class JournalWriter:
    """Appends to one journal's open file, on the journal's clock."""

    def __init__(self, file: JournalFile, clock: Callable[[], datetime]) -> None:
        self._file = file
        self._clock = clock
        self.last_error: str | None = None  # the last append's failure, until an append succeeds
        # The wall clock is behind the journal's last time (a step back): its clock_stepped is written.
        self._held_back = False

    def append(
        self, kind: str, payload: Mapping[str, Any] | typed.Entry, *, round_id: str | None, source: str
    ) -> JournalEntry:
        """Append one entry; it is durably committed when this returns."""
        return self.append_many([PendingEntry(kind, payload, round_id, source)])[0]

    def append_many(self, items: Iterable[AppendItem]) -> list[JournalEntry]:
        """Append entries in one transaction: all of them are committed, or none. Each item is a
        ``PendingEntry``, a (kind, payload, round_id, source) tuple, or an object with those fields."""
        # Type and serialise outside the transaction: a bad entry is a bug, refused before I/O.
        pending = [_prepare_entry(pending_entry(item)) for item in items]
        if self._file.readonly:
            raise JournalError(f"journal {self._file.path}: opened read-only")
        if not pending:
            return []
        wall_time_utc = format_time_utc(self._clock())
        with self._file.lock:
            try:
                written, stepped = self._commit(pending, wall_time_utc)
            except sqlite3.Error as error:
                self._rollback()
                kinds = _kinds_text([item.kind for item in pending])
                reason = sqlite_reason(error, self._file.path)
                journal_log().error("journal_error", path=str(self._file.path), kinds=kinds, reason=reason)
                self.last_error = (
                    f"journal {self._file.path}: cannot append {kinds}: {reason}; nothing was written"
                )
                raise JournalError(self.last_error) from error
            except BaseException:
                self._rollback()
                raise
        _log_written(written)
        # The caller's entries are returned; a clock_stepped ahead of them is the journal's own.
        return written[1:] if stepped else written

    def _commit(self, pending: list[_Prepared], wall_time_utc: str) -> tuple[list[JournalEntry], bool]:
        """Write ``pending`` in one transaction, under the file's lock; True with the entries when a
        clock_stepped entry went first (put at the head of ``pending`` too, so a failure names it)."""
        connection = self._file.connection
        # IMMEDIATE takes the write lock now, so the last entry read below stays the last.
        connection.execute("BEGIN IMMEDIATE")
        last = connection.execute(
            "SELECT seq, hash, time_utc FROM journal ORDER BY seq DESC LIMIT 1"
        ).fetchone()
        base = self._file.base
        last_seq, prev_hash = (last[0], last[1]) if last else (base.base_seq, base.base_hash)
        # Times never go backwards (docs/journal.md "Time"): a wall clock stepped back behind the last
        # entry's time gives the entries that time until it passes it again; the first commit held back
        # says so in a clock_stepped entry ahead of its own. (The texts are all of one fixed-width ISO
        # format, so they compare as the times they are.)
        held_back = last is not None and wall_time_utc < last[2]
        stepped = held_back and not self._held_back
        time_utc = last[2] if held_back else wall_time_utc
        if stepped:
            pending.insert(0, _step_entry(wall_time_utc, time_utc))
        rows, written = self._chained(pending, last_seq, prev_hash, time_utc)
        _insert(connection, rows)
        # The totals and the round index, in this same transaction: both or neither survive a crash
        # (controller/journal/totals.py), counted from the typed entries ``_prepare_entry`` built.
        counted = [
            (row_values[0], item.round_id, time_utc, item.entry, item.public)
            for item, row_values in zip(pending, rows, strict=True)
            if item.kind in TOTAL_KINDS
        ]
        if counted:
            record_totals(connection, counted)
        connection.execute("COMMIT")
        self.last_error = None
        self._held_back = held_back
        return written, stepped

    def _chained(
        self, pending: Sequence[_Prepared], last_seq: int, prev_hash: str, time_utc: str
    ) -> tuple[list[tuple[Any, ...]], list[JournalEntry]]:
        """The rows of ``pending``, each chained to the one before it from (``last_seq``, ``prev_hash``),
        and the entries they are."""
        rows: list[tuple[Any, ...]] = []
        written: list[JournalEntry] = []
        closed_here: dict[str, JournalEntry] = {}
        version = ENTRY_SCHEMA_VERSION
        table_id = self._file.table_id
        # The batch's shared columns hashed once (chain.batch_hasher: the same hash as
        # entry_hash_from_text's, for less work per entry).
        entry_hash = batch_hasher(time_utc=time_utc, table_id=table_id, version=version)
        for item in pending:
            kind, round_id, source, public_text, digest = (
                item.kind,
                item.round_id,
                item.source,
                item.public_text,
                item.private_digest,
            )
            closing_round = round_id if kind in CLOSING_KINDS else None
            if closing_round is not None:
                self._refuse_double_close(item, closed_here)
            seq = last_seq + 1
            hash_hex = entry_hash(prev_hash, seq, round_id, source, kind, public_text, digest)
            # The entry holds what was written: the parts' JSON values, fresh from the typed entry (not
            # parsed back from the texts: the same values, for less work).
            entry = JournalEntry(
                seq,
                time_utc,
                table_id,
                round_id,
                source,
                kind,
                version,
                item.public,
                item.private,
                item.private_text,
                digest,
                prev_hash,
                hash_hex,
            )
            rows.append(entry.stored_row(public_text))
            written.append(entry)
            if closing_round is not None:
                closed_here[closing_round] = entry
            last_seq, prev_hash = seq, hash_hex
        return rows, written

    def _refuse_double_close(self, item: _Prepared, closed_here: Mapping[str, JournalEntry]) -> None:
        """The trigger refuses it too; this names the round and the entry that closed it, in the
        journal or earlier in this same batch (``closed_here``)."""
        if item.kind not in CLOSING_KINDS or item.round_id is None:
            return
        earlier = closed_here.get(item.round_id)
        if earlier is not None:
            raise JournalError(
                f"journal {self._file.path}: round {item.round_id} is already closed by {earlier.kind} "
                f"at entry {earlier.seq}; {item.kind} refused (a round is closed once)"
            )
        row = self._file.connection.execute(
            f"SELECT seq, kind FROM journal WHERE round_id = ? AND kind IN {CLOSING_SQL} LIMIT 1",
            (item.round_id,),
        ).fetchone()
        if row is not None:
            raise JournalError(
                f"journal {self._file.path}: round {item.round_id} is already closed by {row[1]} "
                f"at entry {row[0]}; {item.kind} refused (a round is closed once)"
            )

    def _rollback(self) -> None:
        connection = self._file.connection
        if connection.in_transaction:
            # If even ROLLBACK fails the connection is gone, and the uncommitted transaction with it.
            with contextlib.suppress(sqlite3.Error):
                connection.execute("ROLLBACK")

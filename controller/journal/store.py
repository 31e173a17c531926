"""The journal: an append-only, hash-chained SQLite file of typed entries (docs/journal.md).

Each row holds an entry's public part (``payload``) and, apart, its private part (``private``: the
cards; see controller/journal/entries.py) with the commitment the chain hashes (``private_digest``).

Durability: WAL with synchronous=FULL, so an entry is on disk (the WAL fsynced) when ``append`` returns;
a crash loses at most an append that had not returned. Append-only: triggers refuse UPDATE and DELETE,
and a BEFORE INSERT trigger refuses a row that does not extend the chain (wrong seq or prev_hash), so
even a second writer cannot fork it. A round is closed at most once, refused by the store itself, so a
settled round can never be settled twice, whatever the caller does after a crash.

Errors: anything SQLite refuses (disk full, locked, corrupt, read-only) is a ``JournalError`` that
names the journal, the entry it could not write and the reason; the transaction is rolled back, so
nothing half-written remains. The caller must hold the table: a wager that is not journaled did not
happen.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import resource
import sqlite3
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, NamedTuple, Protocol, Self

from controller.errors import UserError
from controller.journal import entries as typed
from controller.journal.chain import (
    GENESIS_HASH,
    canonical_json,
    entry_hash_from_text,
    format_time_utc,
    stored_hash,
)
from controller.journal.kinds import CLOCK_STEPPED, CLOSING_KINDS, ROUND_STARTED
from controller.journal.totals import TOTAL_KINDS, TOTALS_SCHEMA, periods_span
from controller.journal.totals import rebuild as rebuild_totals
from controller.journal.totals import record as record_totals
from controller.journal.upcast import typed_entry, typed_from_legacy
from controller.locale import DEFAULT_PROPERTY, PropertySettings, gaming_day_of
from controller.names import format_round_id, round_number

SCHEMA_VERSION = 3  # 1: untyped payloads; 2: typed entries with a private part and its commitment;
# 3: the same entries, with the per-period totals and the round index beside them (totals.py)
READABLE_SCHEMA_VERSIONS = (1, 2, 3)  # a file of an earlier one is migrated in place when opened to append
APPLICATION_ID = 0x464C5454  # "FLTT": marks the file as a flushtable journal (PRAGMA application_id)
DEFAULT_BUSY_TIMEOUT_S = 5.0
_PAGE_ROWS = 500


_SEALED_KEPT_OPEN = 4  # sealed segments a Journal keeps open for its readers (a range spans one or two)


@functools.cache
def journal_log() -> Any:
    """The journal's logger, made on first use: structlog (with rich, asyncio and ssl: about 60 ms) is
    for the writers, which log each entry; a reader (`recall`, `journal verify`, `meters`) never logs
    and so never loads it (issue 28: a command line that answers at once). The same lazy proxy as
    ``structlog.get_logger`` at import: it binds to the configuration in force when it logs."""
    import structlog  # noqa: PLC0415 (the readers' start-up: above)

    return structlog.get_logger("flushtable.journal")


_INFO = 20  # logging.INFO (the readers' start-up does not load logging for one number)
_CLOSING_SQL = "('round_settled','round_dead','round_voided')"
# A segment of a segmented journal (docs/journal.md "Segments and seals") starts where the last seal
# ends: its first entry extends the seal's final entry, named in journal_meta (base_seq, base_hash). The
# first segment has no base: it starts at entry 1 from the genesis hash, as every journal did before.
_BASE_SEQ_SQL = "COALESCE((SELECT CAST(value AS INTEGER) FROM journal_meta WHERE key = 'base_seq'), 0)"
_BASE_HASH_SQL = f"COALESCE((SELECT value FROM journal_meta WHERE key = 'base_hash'), '{GENESIS_HASH}')"
# The chain trigger of journals written before segments: the same rule with no base. Such a journal is
# the first segment of its table as it stands (docs/journal.md "Segments and seals": not migrated, and
# accepted with this trigger as long as it has no base).
LEGACY_CHAIN_TRIGGER_SQL = (
    "CREATE TRIGGER journal_extends_chain BEFORE INSERT ON journal "
    "WHEN NEW.seq IS NOT (SELECT COALESCE(MAX(seq), 0) + 1 FROM journal) "
    "OR NEW.prev_hash IS NOT COALESCE((SELECT hash FROM journal ORDER BY seq DESC LIMIT 1), "
    f"'{GENESIS_HASH}') "
    "BEGIN SELECT RAISE(ABORT, 'journal chain: an entry must extend the last one'); END"
)
# No index on ``hash`` (journals made before had a UNIQUE one; it is harmless there): nothing looks an
# entry up by its hash, the chain trigger already makes each hash commit to the one before it, and the
# index's leaf pages, in random hash order, were each commit's most written pages (34 WAL pages a
# commit of 16 entries with it, 11 without: bench figures in docs/operations.md).
_SCHEMA = f"""
CREATE TABLE journal (
    seq INTEGER PRIMARY KEY,
    time_utc TEXT NOT NULL,
    table_id TEXT NOT NULL,
    round_id TEXT,
    source TEXT NOT NULL,
    kind TEXT NOT NULL,
    version INTEGER NOT NULL,
    payload TEXT NOT NULL,
    private TEXT,
    private_digest TEXT,
    prev_hash TEXT NOT NULL,
    hash TEXT NOT NULL
);
CREATE INDEX journal_by_round ON journal(round_id, kind) WHERE round_id IS NOT NULL;
CREATE INDEX journal_by_kind ON journal(kind);
CREATE TRIGGER journal_no_update BEFORE UPDATE ON journal
BEGIN SELECT RAISE(ABORT, 'journal is append-only: UPDATE refused'); END;
CREATE TRIGGER journal_no_delete BEFORE DELETE ON journal
BEGIN SELECT RAISE(ABORT, 'journal is append-only: DELETE refused'); END;
CREATE TRIGGER journal_extends_chain BEFORE INSERT ON journal
WHEN NEW.seq IS NOT (SELECT COALESCE(MAX(seq), {_BASE_SEQ_SQL}) + 1 FROM journal)
  OR NEW.prev_hash IS NOT COALESCE((SELECT hash FROM journal ORDER BY seq DESC LIMIT 1), {_BASE_HASH_SQL})
BEGIN SELECT RAISE(ABORT, 'journal chain: an entry must extend the last one'); END;
CREATE TRIGGER journal_round_closed_once BEFORE INSERT ON journal
WHEN NEW.kind IN {_CLOSING_SQL} AND (
    NEW.round_id IS NULL
    OR EXISTS (SELECT 1 FROM journal WHERE round_id = NEW.round_id AND kind IN {_CLOSING_SQL})
    OR NOT EXISTS (SELECT 1 FROM journal WHERE round_id = NEW.round_id AND kind = 'round_started'))
BEGIN SELECT RAISE(ABORT, 'a round is closed once, after it started'); END;
CREATE TRIGGER journal_round_started_once BEFORE INSERT ON journal
WHEN NEW.kind = 'round_started' AND (
    NEW.round_id IS NULL
    OR EXISTS (SELECT 1 FROM journal WHERE round_id = NEW.round_id AND kind = 'round_started'))
BEGIN SELECT RAISE(ABORT, 'a round starts once'); END;
CREATE TABLE journal_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TRIGGER journal_meta_no_update BEFORE UPDATE ON journal_meta
BEGIN SELECT RAISE(ABORT, 'journal_meta is append-only: UPDATE refused'); END;
CREATE TRIGGER journal_meta_no_delete BEFORE DELETE ON journal_meta
BEGIN SELECT RAISE(ABORT, 'journal_meta is append-only: DELETE refused'); END;
{TOTALS_SCHEMA}
PRAGMA application_id = {APPLICATION_ID};
PRAGMA user_version = {SCHEMA_VERSION};
"""
_COLUMNS = (
    "seq, time_utc, table_id, round_id, source, kind, version, payload, private, private_digest, "
    "prev_hash, hash"
)
# A schema-1 file not yet migrated (read-only readers): its entries are all version 1, with no private
# part (the payload holds both; controller/journal/upcast.py splits them).
_V1_COLUMNS = "seq, time_utc, table_id, round_id, source, kind, 1, payload, NULL, NULL, prev_hash, hash"
_ROW_PLACEHOLDERS = "(" + ", ".join("?" for _ in _COLUMNS.split(",")) + ")"
_ROWS_PER_INSERT = 500  # at most; fewer where this SQLite allows fewer parameters (999 before 3.32)


# The daemon runs the journal's checkpoints itself, between commits (Journal.defer_checkpoints):
CHECKPOINT_BACKSTOP_PAGES = 10_000  # SQLite's own checkpoint only past this many WAL pages (about 40 MB)
WAL_SIZE_LIMIT_BYTES = 16 << 20  # a WAL that grew past this is cut back to it when it is next reset
SQLITE_AUTOCHECKPOINT_PAGES = 1000  # SQLite's own default threshold, restored by resume_checkpoints


class WalCheckpoint(NamedTuple):
    """What one PASSIVE checkpoint found: ``busy`` (a writer or checkpointer was in the way), the WAL's
    pages and how many of them are now copied into the database (all of them: the WAL can be reset)."""

    busy: bool
    wal_pages: int
    copied_pages: int

    @property
    def complete(self) -> bool:
        return not self.busy and self.copied_pages >= self.wal_pages


class SegmentBase(NamedTuple):
    """Where a segment starts (docs/journal.md "Segments and seals"): its number, and the entry it
    extends: the last seal's final entry (``base_seq``, ``base_hash``), with the rounds started before it
    (``base_rounds``: round numbers go on counting). The first segment's: 1, 0, the genesis hash, 0."""

    segment: int
    base_seq: int
    base_hash: str
    base_rounds: int


FIRST_SEGMENT = SegmentBase(1, 0, GENESIS_HASH, 0)


class JournalError(UserError):
    """The journal cannot be opened, read or written. In the daemon: hold the table and raise a
    ``journal_error`` fault; at the command line: one line, exit 2."""


@dataclass(frozen=True, slots=True)
class JournalEntry:
    """One stored entry: its envelope, its public part, and its private part where it has one.

    ``private`` is held here for trusted readers (the reducer, recovery, recall's audit JSON, the
    integrity check). Anything a viewer sees goes through controller/journal/privacy.py, which drops it
    until the round is revealed."""

    seq: int
    time_utc: str
    table_id: str
    round_id: str | None
    source: str
    kind: str
    version: int
    public: dict[str, Any]
    private: dict[str, Any] | None
    private_text: str | None  # the stored private part, salt included: its sha256 is private_digest
    private_digest: str | None
    prev_hash: str
    hash: str
    # An entry of an earlier version (upcast to read it): its payload exactly as written, which the
    # chain hashes (``public`` is then the upcast public part, not the stored text).
    stored_text: str | None = None
    # The typed entry, made once when first asked (the panel folds an entry and then gates it).
    _typed: typed.Entry | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def payload(self) -> dict[str, Any]:
        """The public and private parts as one object, as the writer gave them: for trusted readers
        only (never shown to a viewer; see privacy.py)."""
        return typed.merged_payload(self.kind, self.public, self.private)

    @property
    def entry(self) -> typed.Entry:
        """The entry as its class (controller/journal/entries.py), both parts."""
        if self._typed is None:
            object.__setattr__(self, "_typed", typed.from_parts(self.kind, self.public, self.private))
        assert self._typed is not None
        return self._typed

    def public_json(self) -> dict[str, Any]:
        """The entry without its private part (the private part's digest stays: it is in the hash)."""
        return {
            "seq": self.seq,
            "time_utc": self.time_utc,
            "table_id": self.table_id,
            "round_id": self.round_id,
            "source": self.source,
            "kind": self.kind,
            "version": self.version,
            "payload": self.public,
            "private_digest": self.private_digest,
            "prev_hash": self.prev_hash,
            "hash": self.hash,
        }

    def to_json(self) -> dict[str, Any]:
        """The whole entry, private part included (and its salted text, so a reader can check it
        against its digest): for trusted readers and `journal show --private`."""
        return {**self.public_json(), "private": self.private, "private_text": self.private_text}


class PendingEntry(NamedTuple):
    """One entry for ``Journal.append_many``: its kind and its fields (public and private mixed, put
    where the kind's type says), or the typed entry itself."""

    kind: str
    payload: Mapping[str, Any] | typed.Entry
    round_id: str | None
    source: str


class EntryLike(Protocol):
    """Anything with the four fields, e.g. the round engine's ``JournalRecord``."""

    @property
    def kind(self) -> str: ...
    @property
    def payload(self) -> Mapping[str, Any] | typed.Entry: ...
    @property
    def round_id(self) -> str | None: ...
    @property
    def source(self) -> str: ...


AppendItem = EntryLike | tuple[str, Mapping[str, Any] | typed.Entry, str | None, str]
"""What ``append_many`` takes: a ``PendingEntry``, a (kind, fields, round_id, source) tuple, or an object
with those four (the engine's ``JournalRecord``)."""


def _pending(item: AppendItem) -> PendingEntry:
    if isinstance(item, tuple):
        return PendingEntry(*item)
    entry = getattr(item, "entry", None)  # the engine's JournalRecord carries the typed entry
    if isinstance(entry, typed.Entry):
        return PendingEntry(item.kind, entry, item.round_id, item.source)
    return PendingEntry(item.kind, item.payload, item.round_id, item.source)


def entry_from_row(row: Sequence[Any]) -> JournalEntry:
    """An entry from its stored columns, in this order: ``seq, time_utc, table_id, round_id, source,
    kind, version, payload_text, private_text, private_digest, prev_hash, hash`` (the journal's, and the
    floor's floor_entries with its shown private part: the floor's round page reads them so)."""
    return _entry_from_row(row)


def _entry_from_row(row: Sequence[Any]) -> JournalEntry:
    (seq, time_utc, table_id, round_id, source, kind, version, payload_text, private_text, digest) = row[:10]
    if version < typed.ENTRY_SCHEMA_VERSION:
        return _legacy_entry_from_row(row)
    private = typed.open_private(private_text) if private_text is not None else None
    return JournalEntry(
        seq,
        time_utc,
        table_id,
        round_id,
        source,
        kind,
        version,
        json.loads(payload_text),
        private,
        private_text,
        digest,
        row[10],
        row[11],
    )


def _legacy_entry_from_row(row: Sequence[Any]) -> JournalEntry:
    """An entry of an earlier version, upcast: its parts as today's type splits them, its stored text
    kept for the hash."""
    (seq, time_utc, table_id, round_id, source, kind, version, payload_text, _private, digest) = row[:10]
    try:
        entry = typed_from_legacy(kind, version, payload_text)
    except typed.EntryError as error:
        raise JournalError(f"entry {seq} (version {version}): {error}") from None
    journal_entry = JournalEntry(
        seq,
        time_utc,
        table_id,
        round_id,
        source,
        kind,
        version,
        typed.public_dict(entry),
        typed.private_dict(entry),
        None,
        digest,
        row[10],
        row[11],
        payload_text,
    )
    object.__setattr__(journal_entry, "_typed", entry)
    return journal_entry


class Replayed(NamedTuple):
    """An entry as the replay reads it: its envelope and its typed entry, decoded straight from the
    stored texts (no intermediate dicts: the reducer's hot path)."""

    seq: int
    time_utc: str
    table_id: str
    round_id: str | None
    source: str
    kind: str
    entry: typed.Entry


class _Prepared(NamedTuple):
    kind: str
    round_id: str | None
    source: str
    public: dict[str, Any]  # the public part as JSON values (what public_text parses back to)
    public_text: str
    private: dict[str, Any] | None
    private_text: str | None
    private_digest: str | None


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


# What an operator can act on, by SQLite's error name (its prefix: SQLITE_IOERR_WRITE is an I/O error).
# SQLite reports ENOSPC and EFBIG (a file-size limit) as SQLITE_FULL, and a read-only file, directory or
# mount as SQLITE_READONLY*; the name stays in brackets for whoever reads SQLite's documentation.
_OPERATOR_REASONS: tuple[tuple[str, str], ...] = (
    ("SQLITE_FULL", "no space left: the disk (or the file-size limit) is full"),
    ("SQLITE_READONLY", "the file, its directory or its disk is read-only"),
    ("SQLITE_IOERR", "the disk reported an I/O error"),
    ("SQLITE_CORRUPT", "the file is damaged"),
    ("SQLITE_CANTOPEN", "the file cannot be opened"),
    ("SQLITE_PERM", "permission denied"),
)


_ACCESS_ERRORS = ("SQLITE_CANTOPEN", "SQLITE_READONLY", "SQLITE_PERM")


def _sqlite_reason(error: sqlite3.Error, path: Path | None = None) -> str:
    """SQLite's error in an operator's words; for an error of access, with the operating system's own
    reason when ``path`` is given (SQLite says only "unable to open database file")."""
    name = getattr(error, "sqlite_errorname", None)
    if not name:
        return str(error)
    for prefix, reason in _OPERATOR_REASONS:
        if name.startswith(prefix):
            why = None
            if path is not None and name.startswith(_ACCESS_ERRORS):
                why = _os_access_reason(path)
            elif path is not None and name.startswith(_SPACE_ERRORS):
                why = _os_space_reason(path)
            return f"{why or reason} ({name})"
    return f"{error} ({name})"


_SPACE_ERRORS = ("SQLITE_FULL", "SQLITE_IOERR")
_LOW_SPACE_BYTES = 1 << 20  # less than this free, a journal commit (fsynced WAL pages) can fail


def _os_space_reason(path: Path) -> str | None:
    """A failed write's likely cause, from the operating system (SQLite keeps errno to itself, and
    reports a file-size limit as an I/O error): the disk's free space, or the process's file-size
    limit against the journal's and its WAL's sizes."""
    try:
        stats = os.statvfs(path.parent)
    except OSError:
        return None
    free_bytes = stats.f_bavail * stats.f_frsize
    if free_bytes < _LOW_SPACE_BYTES:
        return f"no space left on the disk holding {path.parent} ({free_bytes:,} bytes free)"
    soft_limit, _ = resource.getrlimit(resource.RLIMIT_FSIZE)
    if soft_limit != resource.RLIM_INFINITY:
        sizes = []
        for candidate in (path, path.with_name(path.name + "-wal")):
            with contextlib.suppress(OSError):
                sizes.append(candidate.stat().st_size)
        if sizes and max(sizes) + _LOW_SPACE_BYTES // 16 >= soft_limit:
            return f"the file-size limit of this process (ulimit -f) is reached: {soft_limit:,} bytes"
    return None


def _os_access_reason(path: Path) -> str | None:
    """Why the operating system will not let the journal at ``path`` be written, if it says: the file
    itself, or its directory (SQLite creates the -wal and -shm files beside it)."""
    try:
        descriptor = os.open(path, os.O_RDWR)
    except FileNotFoundError:
        pass
    except OSError as error:
        return f"{error.strerror or error} ({path})"
    else:
        os.close(descriptor)
    directory = path.parent
    if not directory.is_dir():
        return f"no directory {directory}"
    if not os.access(directory, os.W_OK | os.X_OK):
        try:
            # Ask the directory itself, for the system's words (EROFS, EACCES).
            descriptor = os.open(directory / f".{path.name}.probe", os.O_WRONLY | os.O_CREAT | os.O_EXCL)
        except OSError as error:
            return f"{error.strerror or error} ({directory}: the journal's -wal and -shm files go there)"
        os.close(descriptor)
        os.unlink(directory / f".{path.name}.probe")
    return None


def _kinds_text(kinds: Sequence[str], shown_at_most: int = 4) -> str:
    """The kinds of a failed append on one line: a group commit can hold a hundred entries."""
    if len(kinds) <= shown_at_most:
        return ", ".join(kinds)
    return f"{', '.join(kinds[:shown_at_most])} and {len(kinds) - shown_at_most} more"


def _utc_now() -> datetime:
    return datetime.now(UTC)


def _prepare_entry(item: PendingEntry) -> _Prepared:
    """Type the entry and serialise its two parts. What no correct writer produces (an unknown kind, a
    field its kind does not have, a wrong type) is a bug, not a user's mistake: ValueError
    (entries.EntryError), before anything is written."""
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
    public = typed.public_dict(entry)
    public_text = canonical_json(public)
    private = typed.private_dict(entry)
    private_text = typed.seal_private(private) if private is not None else None
    digest = typed.commitment(private_text) if private_text is not None else None
    return _Prepared(kind, round_id, source, public, public_text, private, private_text, digest)


def parse_time_utc(text: str) -> datetime:
    """A journal time (format_time_utc's text) back as an aware datetime."""
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)


def _step_entry(wall_time_utc: str, journal_time_utc: str) -> _Prepared:
    """The clock_stepped entry of a wall clock gone back behind the journal's last time."""
    step = parse_time_utc(journal_time_utc) - parse_time_utc(wall_time_utc)
    payload = {
        "wall_clock_utc": wall_time_utc,
        "journal_time_utc": journal_time_utc,
        "step_back_us": step // timedelta(microseconds=1),
    }
    return _prepare_entry(PendingEntry(CLOCK_STEPPED, payload, None, "journal"))


class Journal:
    """One table's journal file. Safe to share between threads (one lock around the connection)."""

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
        self._connection = connection
        self.path = path
        self.table_id = table_id
        # The file's schema (docs/journal.md "Versions and upcasting"): a reader of an earlier one
        # reads its entries upcast and has no totals (it folds); a writer has migrated it.
        self.schema_version = version
        self.has_totals = version >= 3
        self._columns = columns_for(version)
        self._clock = clock
        self.readonly = readonly
        self._lock = threading.Lock()
        self.last_error: str | None = None  # the last append's failure, until an append succeeds
        self.base = FIRST_SEGMENT  # the segment this file is (docs/journal.md "Segments and seals")
        # The wall clock is behind the journal's last time (a step back): its clock_stepped is written.
        self._held_back = False
        self.switch_failed: str | None = None  # ``switch_file`` could not open the next file
        # The sealed segments last read through this object, kept open (read-only; a sealed file never
        # changes, and a connection on it never holds up a seal of the open one): recall and the panel
        # read a round's entries one round at a time, and opening a SQLite file costs milliseconds.
        self._sealed_open: dict[Path, Journal] = {}
        # Readers in a sealed segment now (by id): one pushed out of _sealed_open while a reader (another
        # thread: the panel's) still uses it is kept in _sealed_retired and closed by its last reader.
        self._sealed_users: dict[int, int] = {}
        self._sealed_retired: dict[int, Journal] = {}
        self._sealed_lock = threading.Lock()

    # --- opening --------------------------------------------------------------------------------
    @classmethod
    def open(
        cls,
        path: str | Path,
        table_id: str,
        *,
        clock: Callable[[], datetime] = _utc_now,
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
        connection = _connect(journal_path, readonly=False, busy_timeout_s=busy_timeout_s)
        if mode == "OFF":
            connection.execute("PRAGMA synchronous = OFF")
            journal_log().warning("journal_not_durable", path=str(journal_path), synchronous=synchronous)
        try:
            if base is None:
                from controller.journal.segments import next_segment_base  # noqa: PLC0415 (a cycle)

                base = next_segment_base(journal_path)
            stored_table_id, version = _prepare(connection, journal_path, table_id, base)
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
            journal._load_base()
            journal._check_head()
        except BaseException:
            connection.close()
            raise
        return journal

    def _check_head(self) -> None:
        """Refuse to extend a chain whose last entry does not verify (edited or damaged): new entries
        would be chained to a forgery. Only the last entry, so opening stays instant; `flushtable
        journal verify` checks them all."""
        last = self.last_entry()
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
        clock: Callable[[], datetime] = _utc_now,
        busy_timeout_s: float = DEFAULT_BUSY_TIMEOUT_S,
    ) -> Journal:
        """Open a journal that must already exist; its table id is read from the file."""
        journal_path = Path(path)
        if not journal_path.is_file():
            raise JournalError(f"journal {journal_path}: no such file")
        connection = _connect(journal_path, readonly=readonly, busy_timeout_s=busy_timeout_s)
        try:
            version = _check_identity(connection, journal_path)
            if not version:
                raise JournalError(
                    f"journal {journal_path}: empty: it holds no journal (a new or truncated file)"
                )
            table_id = _meta_table_id(connection, journal_path)
            if not readonly and version < SCHEMA_VERSION:
                migrate(connection, journal_path, version)
                version = SCHEMA_VERSION
        except BaseException:
            connection.close()
            raise
        journal = cls(connection, journal_path, table_id, clock=clock, readonly=readonly, version=version)
        try:
            journal._load_base()
        except BaseException:
            connection.close()
            raise
        return journal

    def _load_base(self) -> None:
        try:
            with self._lock:
                self.base = read_segment_base(self._connection)
        except sqlite3.Error as error:
            raise JournalError(f"journal {self.path}: cannot read: {_sqlite_reason(error)}") from error

    def _sealed_in_time(self, start_utc: str | None, end_utc: str | None) -> Iterator[Journal]:
        """The sealed segments with an entry in [start_utc, end_utc), newest first, each opened
        read-only (kept open for the next reader) and held until the caller moves on: found by their
        seals' times, so a range reads the segments it covers, not those between it and the journal's
        end."""
        if self.base.segment <= 1:
            return
        from controller.journal.segments import sealed_segment_files_in_time  # noqa: PLC0415 (a cycle)

        for file in sealed_segment_files_in_time(self.path, self.base.segment, start_utc, end_utc):
            sealed = self._open_sealed(file)
            try:
                yield sealed
            finally:
                self._release_sealed(sealed)

    def _sealed(self, after_seq: int = 0, *, newest_first: bool = False) -> Iterator[Journal]:
        """The sealed segments before this one holding entries after ``after_seq``, oldest first (or
        newest first), each opened read-only (wherever it is: beside the journal or archived) and closed
        once the caller moves on: what the readers go through for entries before this segment's base."""
        if self.base.segment <= 1:
            return
        from controller.journal.segments import sealed_segment_files  # noqa: PLC0415 (a cycle)

        files = sealed_segment_files(self.path, self.base.segment, after_seq)
        for file in reversed(files) if newest_first else files:
            sealed = Journal.open_existing(file, readonly=True)
            try:
                yield sealed
            finally:
                sealed.close()

    @contextlib.contextmanager
    def _sealed_holding(self, seq: int) -> Iterator[Journal | None]:
        """The sealed segment holding entry ``seq``, opened read-only (None: no sealed one does), found
        by its seal (a binary search over the seals: controller/journal/segments.py)."""
        from controller.journal.segments import sealed_segment_of  # noqa: PLC0415 (a cycle)

        file = sealed_segment_of(self.path, self.base.segment, seq) if self.base.segment > 1 else None
        if file is None:
            yield None
            return
        sealed = self._open_sealed(file)
        try:
            yield sealed
        finally:
            self._release_sealed(sealed)

    def _sealed_of_round(self, round_id: str) -> Path | None:
        """The sealed segment round ``round_id`` was started in by its number (None: no number, or no
        sealed segment by it)."""
        number = round_number(round_id)
        if number is None or self.base.segment <= 1 or number > self.base.base_rounds:
            return None
        from controller.journal.segments import sealed_segment_of_round  # noqa: PLC0415 (a cycle)

        return sealed_segment_of_round(self.path, self.base.segment, number)

    def _open_sealed(self, file: Path) -> Journal:
        """The sealed segment at ``file``, opened read-only once and kept (the last few), counted as in
        use until ``_release_sealed``: one pushed out of the kept few is closed only when no reader holds
        it (the panel reads on threads of its own)."""
        with self._sealed_lock:
            sealed = self._sealed_open.pop(file, None)
            if sealed is None:
                sealed = Journal.open_existing(file, readonly=True)
            self._sealed_open[file] = sealed  # the most recent last
            self._sealed_users[id(sealed)] = self._sealed_users.get(id(sealed), 0) + 1
            while len(self._sealed_open) > _SEALED_KEPT_OPEN:
                evicted = self._sealed_open.pop(next(iter(self._sealed_open)))
                if self._sealed_users.get(id(evicted), 0) == 0:
                    evicted.close()
                else:
                    self._sealed_retired[id(evicted)] = evicted
            return sealed

    def _release_sealed(self, sealed: Journal) -> None:
        with self._sealed_lock:
            left = self._sealed_users.get(id(sealed), 1) - 1
            if left > 0:
                self._sealed_users[id(sealed)] = left
                return
            self._sealed_users.pop(id(sealed), None)
            retired = self._sealed_retired.pop(id(sealed), None)
        if retired is not None:
            retired.close()

    def round_entries(self, round_id: str, seq: int) -> list[JournalEntry]:
        """Every entry of round ``round_id``, one of whose entries is ``seq`` (its closing entry, say):
        read from the one segment holding ``seq`` (a round never spans two segments), so recalling a
        round costs the same in a journal of a day and of years."""
        if 0 < seq <= self.base.base_seq:
            with self._sealed_holding(seq) as sealed:
                return [] if sealed is None else list(sealed._entries_here(0, round_id, None))
        return list(self._entries_here(0, round_id, None))

    def round_closing(self, round_id: str, kinds: Iterable[str]) -> JournalEntry | None:
        """The first entry of round ``round_id`` of these kinds (its closing entry, say): in the open
        segment, then in the sealed ones newest first, stopping at the segment that holds it (a round
        never spans two segments: the cost is the segments newer than the round)."""
        kind_list = list(kinds)
        for entry in self._entries_here(0, round_id, kind_list):
            return entry
        # A round id's n is the count of rounds started when it started: the seals' counts name the
        # segment it started (and closed) in, found by bisection whatever the journal's age. An id that
        # is not there (written by other means) is looked for in every sealed segment, newest first.
        looked = self._sealed_of_round(round_id)
        if looked is not None:
            sealed = self._open_sealed(looked)
            try:
                for entry in sealed._entries_here(0, round_id, kind_list):
                    return entry
            finally:
                self._release_sealed(sealed)
        for sealed in self._sealed(newest_first=True):
            if sealed.path == looked:
                continue
            for entry in sealed._entries_here(0, round_id, kind_list):
                return entry
        return None

    def close(self) -> None:
        with self._sealed_lock:
            for sealed in [*self._sealed_open.values(), *self._sealed_retired.values()]:
                sealed.close()
            self._sealed_open.clear()
            self._sealed_retired.clear()
        with self._lock:
            self._connection.close()

    def switch_file(self, between: Callable[[], object]) -> None:
        """Close this file, run ``between`` (a live seal: it renames this file into the segments
        directory and creates the next segment at this path) and go on at the file now at the path,
        all under this object's lock: every holder of this object (the daemon's writer, the embedded
        panel, recall) follows the switch, and none of them reads or writes while it runs. The file is
        opened again even when ``between`` fails (then it is the same file, or the next segment a seal
        cut short was finished with); what ``between`` raised is raised after."""
        with self._lock:
            self._connection.close()
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
                self._connection = following._connection
                self.base = following.base
                self.schema_version = following.schema_version
                self.has_totals = following.has_totals
                self._columns = following._columns

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # --- appending ------------------------------------------------------------------------------
    def append(
        self, kind: str, payload: Mapping[str, Any] | typed.Entry, *, round_id: str | None, source: str
    ) -> JournalEntry:
        """Append one entry; it is durably committed when this returns."""
        return self.append_many([PendingEntry(kind, payload, round_id, source)])[0]

    def append_many(self, items: Iterable[AppendItem]) -> list[JournalEntry]:  # noqa: PLR0915 - one transaction's steps in order; split, the transaction's bounds would blur
        """Append entries in one transaction: all of them are committed, or none. Each item is a
        ``PendingEntry``, a (kind, payload, round_id, source) tuple, or an object with those fields."""
        # Type and serialise outside the transaction: a bad entry is a bug, refused before I/O.
        pending = [_prepare_entry(_pending(item)) for item in items]
        if self.readonly:
            raise JournalError(f"journal {self.path}: opened read-only")
        if not pending:
            return []
        wall_time_utc = format_time_utc(self._clock())
        written: list[JournalEntry] = []
        with self._lock:
            connection = self._connection
            try:
                # IMMEDIATE takes the write lock now, so the last entry read below stays the last.
                connection.execute("BEGIN IMMEDIATE")
                row = connection.execute(
                    "SELECT seq, hash, time_utc FROM journal ORDER BY seq DESC LIMIT 1"
                ).fetchone()
                last_seq, prev_hash = (row[0], row[1]) if row else (self.base.base_seq, self.base.base_hash)
                # Times never go backwards (docs/journal.md "Time"): a wall clock stepped back behind the
                # last entry's time gives the entries that time until it passes it again; the first
                # commit held back says so in a clock_stepped entry ahead of its own. (The texts are all
                # of one fixed-width ISO format, so they compare as the times they are.)
                time_utc = wall_time_utc
                held_back = row is not None and wall_time_utc < row[2]
                stepped = held_back and not self._held_back
                if held_back:
                    time_utc = row[2]
                if stepped:
                    pending.insert(0, _step_entry(wall_time_utc, time_utc))
                rows: list[tuple[Any, ...]] = []
                closed_here: dict[str, JournalEntry] = {}
                for item in pending:
                    self._refuse_double_close(item, closed_here)
                    seq = last_seq + 1
                    version = typed.ENTRY_SCHEMA_VERSION
                    hash_hex = entry_hash_from_text(
                        prev_hash=prev_hash,
                        seq=seq,
                        time_utc=time_utc,
                        table_id=self.table_id,
                        round_id=item.round_id,
                        source=item.source,
                        kind=item.kind,
                        version=version,
                        payload_text=item.public_text,
                        private_digest=item.private_digest,
                    )
                    # The row in _COLUMNS order; the entry holds what was written.
                    row = (
                        seq,
                        time_utc,
                        self.table_id,
                        item.round_id,
                        item.source,
                        item.kind,
                        version,
                        item.public_text,
                        item.private_text,
                        item.private_digest,
                        prev_hash,
                        hash_hex,
                    )
                    rows.append(row)
                    # The entry holds what was written: the parts' JSON values, fresh from the typed
                    # entry (not parsed back from the texts: the same values, for less work).
                    entry = JournalEntry(*row[:7], item.public, item.private, *row[8:])
                    written.append(entry)
                    if item.kind in CLOSING_KINDS and item.round_id is not None:
                        closed_here[item.round_id] = entry
                    last_seq, prev_hash = seq, hash_hex
                # One multi-row INSERT per chunk, not one statement per entry: the daemon commits on its
                # event loop, and per-row statements made a 19-entry commit take 6 ms of it.
                # The triggers still run for each row, in order, seeing the rows before it.
                per_insert = min(
                    _ROWS_PER_INSERT,
                    connection.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER) // len(_COLUMNS.split(",")),
                )
                for start in range(0, len(rows), per_insert):
                    chunk = rows[start : start + per_insert]
                    placeholders = ", ".join([_ROW_PLACEHOLDERS] * len(chunk))
                    connection.execute(
                        f"INSERT INTO journal ({_COLUMNS}) VALUES {placeholders}",
                        [value for row_values in chunk for value in row_values],
                    )
                # The totals and the round index, in this same transaction: both or neither survive a
                # crash (controller/journal/totals.py).
                counted = [
                    (row_values[0], item.kind, item.round_id, time_utc, item.public)
                    for item, row_values in zip(pending, rows, strict=True)
                    if item.kind in TOTAL_KINDS
                ]
                if counted:
                    record_totals(connection, counted)
                connection.execute("COMMIT")
                self.last_error = None
                self._held_back = held_back
            except sqlite3.Error as error:
                self._rollback()
                kinds = _kinds_text([item.kind for item in pending])
                reason = _sqlite_reason(error, self.path)
                journal_log().error("journal_error", path=str(self.path), kinds=kinds, reason=reason)
                self.last_error = f"journal {self.path}: cannot append {kinds}: {reason}; nothing was written"
                raise JournalError(self.last_error) from error
            except BaseException:
                self._rollback()
                raise
        step_entries = written[:1] if stepped else []
        if stepped:
            del written[0]  # the caller's entries are returned; the clock_stepped is the journal's own
        # One bound logger per append, not per entry: the lazy proxy binds on every call (measured:
        # a tenth of an entry's cost, even when info is filtered out).
        logger = journal_log().bind()
        # At a level above info (bench_table's warning) the entries are not written: not even called.
        for entry in [*step_entries, *written] if logger.is_enabled_for(_INFO) else ():
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
        return written

    def _refuse_double_close(self, item: _Prepared, closed_here: Mapping[str, JournalEntry]) -> None:
        """The trigger refuses it too; this names the round and the entry that closed it, in the
        journal or earlier in this same batch (``closed_here``)."""
        if item.kind not in CLOSING_KINDS or item.round_id is None:
            return
        earlier = closed_here.get(item.round_id)
        if earlier is not None:
            raise JournalError(
                f"journal {self.path}: round {item.round_id} is already closed by {earlier.kind} "
                f"at entry {earlier.seq}; {item.kind} refused (a round is closed once)"
            )
        row = self._connection.execute(
            f"SELECT seq, kind FROM journal WHERE round_id = ? AND kind IN {_CLOSING_SQL} LIMIT 1",
            (item.round_id,),
        ).fetchone()
        if row is not None:
            raise JournalError(
                f"journal {self.path}: round {item.round_id} is already closed by {row[1]} "
                f"at entry {row[0]}; {item.kind} refused (a round is closed once)"
            )

    def _rollback(self) -> None:
        if self._connection.in_transaction:
            # If even ROLLBACK fails the connection is gone, and the uncommitted transaction with it.
            with contextlib.suppress(sqlite3.Error):
                self._connection.execute("ROLLBACK")

    # --- reading --------------------------------------------------------------------------------
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
        if since_seq < self.base.base_seq:
            for sealed in self._sealed(since_seq):
                yield from sealed.entries(since_seq, round_id, kind_list)
        yield from self._entries_here(since_seq, round_id, kind_list)

    def _entries_here(
        self, since_seq: int, round_id: str | None, kind_list: list[str] | None
    ) -> Iterator[JournalEntry]:
        if kind_list == []:
            return
        where, params = _where(round_id, kind_list)
        query = f"SELECT {self._columns} FROM journal WHERE {where} ORDER BY seq LIMIT {_PAGE_ROWS}"
        for rows in self._pages(query, since_seq, params, _PAGE_ROWS):
            for row in rows:
                yield _entry_from_row(row)

    def _pages(
        self, query: str, since_seq: int, params: Sequence[Any], page_rows: int
    ) -> Iterator[list[Any]]:
        """``query``'s rows a page at a time by seq (its first parameter is the seq to read after, its
        first column the seq), so a long journal is never held in memory at once."""
        after = since_seq
        while True:
            rows = self._read(query, (after, *params))
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
        if since_seq < self.base.base_seq:
            for sealed in self._sealed(since_seq):
                yield from sealed.replay(since_seq, round_id, kind_list)
        yield from self._replay_here(since_seq, round_id, kind_list)

    def _replay_here(
        self, since_seq: int, round_id: str | None, kind_list: list[str] | None
    ) -> Iterator[Replayed]:
        if kind_list == []:
            return
        where, params = _where(round_id, kind_list)
        parts = "1, payload, NULL" if self.schema_version == 1 else "version, payload, private"
        query = (
            f"SELECT seq, time_utc, table_id, round_id, source, kind, {parts} FROM journal "
            f"WHERE {where} ORDER BY seq LIMIT {_PAGE_ROWS * 10}"
        )
        decode = typed.decode
        current = typed.ENTRY_SCHEMA_VERSION
        for rows in self._pages(query, since_seq, params, _PAGE_ROWS * 10):
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
                raise JournalError(f"journal {self.path}: entry {seq}: {error}") from None

    def last_entries(self, count: int, kinds: Iterable[str]) -> list[JournalEntry]:
        """The last ``count`` entries of these kinds, oldest first (read backwards through the index,
        so recalling the last rounds of a long journal does not read it all)."""
        kind_list = list(kinds)
        if count < 1 or not kind_list:
            return []
        placeholders = ", ".join("?" for _ in kind_list)
        rows = self._read(
            f"SELECT {self._columns} FROM journal WHERE kind IN ({placeholders}) ORDER BY seq DESC LIMIT ?",
            (*kind_list, count),
        )
        found = [_entry_from_row(row) for row in reversed(rows)]
        if len(found) < count and self.base.base_seq > 0:
            # Fewer here than asked: the rest from the sealed segments, newest first.
            for sealed in self._sealed(newest_first=True):
                found = sealed.last_entries(count - len(found), kind_list) + found
                if len(found) >= count:
                    break
        return found

    def last_entry(self) -> JournalEntry | None:
        """The journal's last entry: this segment's, or the last sealed one's when this one is new."""
        rows = self._read(f"SELECT {self._columns} FROM journal ORDER BY seq DESC LIMIT 1", ())
        if rows:
            return _entry_from_row(rows[0])
        return self.entry(self.base.base_seq) if self.base.base_seq > 0 else None

    def entry(self, seq: int) -> JournalEntry | None:
        if 0 < seq <= self.base.base_seq:
            with self._sealed_holding(seq) as sealed:
                return None if sealed is None else sealed.entry(seq)
        rows = self._read(f"SELECT {self._columns} FROM journal WHERE seq = ?", (seq,))
        return _entry_from_row(rows[0]) if rows else None

    def segment_summary(self) -> tuple[int, str | None]:
        """This segment's entries and its first entry's time (None: it has none), read from the ends of
        the primary key: what decides whether it is due to be sealed."""
        rows = self._read(
            "SELECT MAX(seq), (SELECT time_utc FROM journal ORDER BY seq LIMIT 1) FROM journal", ()
        )
        last_seq, first_utc = rows[0]
        if last_seq is None:
            return 0, None
        return int(last_seq) - self.base.base_seq, str(first_utc)

    # --- the totals and the round index (controller/journal/totals.py) ------------------------
    def period_totals(self, periods: Sequence[str]) -> dict[str, int]:
        """The totals of these periods summed key by key, over this segment and every sealed one
        (each segment file keeps its own entries' totals: docs/journal.md "Totals and indexes")."""
        out = self._own_period_totals(periods)
        # Hours and days: only the sealed segments with an entry in their span (by the seals' times, a
        # bisection), so a shift's meters read one or two segments whatever the journal's age.
        span = periods_span(periods)
        sealed_ones = self._sealed() if span is None else self._sealed_in_time(*span)
        for sealed in sealed_ones:
            for key, value in sealed._own_period_totals(periods).items():
                out[key] = out.get(key, 0) + value
        return out

    def _own_period_totals(self, periods: Sequence[str]) -> dict[str, int]:
        """This file's totals of these periods (folded from its own entries where it has none: a
        segment sealed before the totals existed)."""
        if not self.has_totals:
            from controller.journal.totals import folded_period_totals  # noqa: PLC0415

            with self._lock:
                return folded_period_totals(_counted_rows(self._connection, self.path), periods)
        out: dict[str, int] = {}
        for start in range(0, len(periods), 500):
            chunk = list(periods[start : start + 500])
            marks = ", ".join("?" for _ in chunk)
            rows = self._read(
                f"SELECT key, SUM(value) FROM journal_totals WHERE period IN ({marks}) GROUP BY key", chunk
            )
            for key, value in rows:
                out[str(key)] = out.get(str(key), 0) + int(value)
        return out

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
        found = self._own_closed_round_seqs(start_utc, end_utc, seat, status, last)
        if last is not None and len(found) >= last:
            return found[-last:]
        ranged = start_utc is not None or end_utc is not None
        sealed_ones = self._sealed_in_time(start_utc, end_utc) if ranged else self._sealed(newest_first=True)
        for sealed in sealed_ones:
            want = None if last is None else last - len(found)
            found = sealed._own_closed_round_seqs(start_utc, end_utc, seat, status, want) + found
            if last is not None and len(found) >= last:
                break
        return found if last is None else found[-last:]

    def _own_closed_round_seqs(
        self,
        start_utc: str | None,
        end_utc: str | None,
        seat: int | None,
        status: str | None,
        last: int | None,
    ) -> list[int]:
        if not self.has_totals:
            from controller.journal.totals import scanned_round_seqs  # noqa: PLC0415

            with self._lock:
                rows = list(_counted_rows(self._connection, self.path))
            return scanned_round_seqs(
                rows, start_utc=start_utc, end_utc=end_utc, seat=seat, status=status, last=last
            )
        conditions: list[str] = []
        params: list[Any] = []
        # A time range reads its rounds through the time index (then sorted by seq: a shift's few
        # hundred rows); left to itself, SQLite walks the primary key back from the journal's end to
        # the range, which costs the journal's age (measured by bench/bench_years.py).
        # With a seat too, the range stays the outer loop (CROSS JOIN fixes SQLite's join order): driven
        # by the seat, every round of that seat in the journal was matched against the range (9 s on
        # 5 million entries, bench/bench_years.py); without a range, the seat's own key is the way in.
        ranged = start_utc is not None or end_utc is not None
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
        if seat is not None:
            conditions.append("s.seq = r.seq AND s.seat = ?")
            params.append(seat)
        if start_utc is not None:
            conditions.append("r.time_utc >= ?")
            params.append(start_utc)
        if end_utc is not None:
            conditions.append("r.time_utc < ?")
            params.append(end_utc)
        if status is not None:
            conditions.append("r.status = ?")
            params.append(status)
        where = f"WHERE {' AND '.join(conditions)}" if conditions else ""
        limit = f"LIMIT {int(last)}" if last is not None else ""
        order = "s.seq" if seat is not None and not ranged else "r.seq"  # a seat alone: its key's order
        rows = self._read(f"SELECT r.seq FROM {table} {where} ORDER BY {order} DESC {limit}", params)
        return [int(row[0]) for row in reversed(rows)]

    def round_count(self) -> int:
        """How many rounds the journal has started (the sealed segments' from this segment's base)."""
        rows = self._read("SELECT COUNT(*) FROM journal WHERE kind = ?", (ROUND_STARTED,))
        return self.base.base_rounds + int(rows[0][0])

    def next_round_id(self, day: date | None = None, prop: PropertySettings = DEFAULT_PROPERTY) -> str:
        """The id the next round gets: ``R{table_id}-{YYYYMMDD}-{n:06d}`` (names.format_round_id), dated
        by the gaming day (controller/locale.py) of the journal's clock unless ``day`` is given."""
        today = day if day is not None else gaming_day_of(self._clock(), prop)
        return format_round_id(self.table_id, today, self.round_count() + 1)

    def backup(self, destination: str | Path) -> JournalEntry | None:
        """A consistent copy of the journal at ``destination`` (SQLite's online backup: safe while the
        daemon appends); returns the copy's last entry, the anchor to keep with it."""
        target_path = Path(destination)
        if target_path.exists():
            raise JournalError(f"journal backup {target_path}: already exists; choose a new name")
        try:
            target_path.parent.mkdir(parents=True, exist_ok=True)
            target = sqlite3.connect(target_path, isolation_level=None)
        except (OSError, sqlite3.Error) as error:
            raise JournalError(f"journal backup {target_path}: cannot create: {error}") from error
        try:
            with self._lock:
                self._connection.backup(target)
            row = target.execute(f"SELECT {self._columns} FROM journal ORDER BY seq DESC LIMIT 1").fetchone()
        except sqlite3.Error as error:
            raise JournalError(f"journal backup {target_path}: {_sqlite_reason(error)}") from error
        finally:
            target.close()
        return _entry_from_row(row) if row else None

    # --- checkpoints (docs/journal.md "Checkpoints") --------------------------------------------
    def defer_checkpoints(
        self,
        *,
        backstop_pages: int = CHECKPOINT_BACKSTOP_PAGES,
        wal_size_limit_bytes: int = WAL_SIZE_LIMIT_BYTES,
    ) -> None:
        """The owner runs checkpoints itself (``checkpoint``) at quiet moments: SQLite's automatic one
        (every 1000 pages) runs inside the COMMIT that crosses the threshold, copying the pages into the
        database and fsyncing it before that COMMIT returns (measured: a bare commit's p99 4.5 ms with
        it, 0.7-1.2 ms without). It stays on at ``backstop_pages``, so a WAL no checkpoint caught up
        with (a reader holding it, an owner that stopped checkpointing) is still bounded; and once
        reset, a WAL that grew is cut back to ``wal_size_limit_bytes``. Durability is unchanged: every
        commit still fsyncs the WAL (synchronous=FULL); a checkpoint only moves committed pages."""
        pragmas = (
            f"PRAGMA wal_autocheckpoint = {int(backstop_pages)}",
            f"PRAGMA journal_size_limit = {int(wal_size_limit_bytes)}",
        )
        with self._lock:
            try:
                for pragma in pragmas:
                    self._connection.execute(pragma).fetchall()
            except sqlite3.Error as error:
                reason = _sqlite_reason(error)
                raise JournalError(f"journal {self.path}: cannot set its checkpoints: {reason}") from error

    def resume_checkpoints(self) -> None:
        """The commits checkpoint by themselves again, at SQLite's default threshold (undoes
        ``defer_checkpoints``' backstop; the WAL size limit stays): for an owner that stops running
        checkpoints of its own while it still commits."""
        with self._lock:
            try:
                self._connection.execute(
                    f"PRAGMA wal_autocheckpoint = {SQLITE_AUTOCHECKPOINT_PAGES}"
                ).fetchall()
            except sqlite3.Error as error:
                reason = _sqlite_reason(error)
                raise JournalError(f"journal {self.path}: cannot set its checkpoints: {reason}") from error

    def checkpoint(self) -> WalCheckpoint:
        """A PASSIVE checkpoint now, on this connection: copies what no reader still needs from the WAL
        into the database (it never waits for a reader or blocks one). Once the WAL is all copied, the
        next commit starts it again from its beginning, so it stays the same size on disk. A checkpoint
        that fails loses nothing (the entries are in the WAL): JournalError, and the next one retries."""
        with self._lock:
            try:
                # fetchall: a statement left unfinished would hold a read snapshot and keep the WAL
                # from being reset.
                busy, wal_pages, copied_pages = self._connection.execute(
                    "PRAGMA wal_checkpoint(PASSIVE)"
                ).fetchall()[0]
            except sqlite3.Error as error:
                reason = _sqlite_reason(error)
                raise JournalError(f"journal {self.path}: checkpoint failed: {reason}") from error
        return WalCheckpoint(bool(busy), int(wal_pages), int(copied_pages))

    def pragma(self, name: str) -> Any:
        """One PRAGMA's value (the tests check WAL and synchronous=FULL are really set)."""
        if not name.replace("_", "").isalnum():
            raise ValueError(f"not a pragma name: {name!r}")
        return self._read(f"PRAGMA {name}", ())[0][0]

    def _read(self, query: str, params: Sequence[Any]) -> list[Any]:
        with self._lock:
            try:
                return self._connection.execute(query, params).fetchall()
            except sqlite3.Error as error:
                raise JournalError(f"journal {self.path}: cannot read: {_sqlite_reason(error)}") from error


def _connect(path: Path, *, readonly: bool, busy_timeout_s: float) -> sqlite3.Connection:
    try:
        if readonly:
            connection = sqlite3.connect(
                f"{path.resolve().as_uri()}?mode=ro",
                uri=True,
                timeout=busy_timeout_s,
                isolation_level=None,
                check_same_thread=False,
            )
        else:
            connection = sqlite3.connect(
                path, timeout=busy_timeout_s, isolation_level=None, check_same_thread=False
            )
            mode = connection.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if str(mode).lower() != "wal":
                connection.close()
                raise JournalError(f"journal {path}: cannot switch to WAL mode (got {mode!r})")
        # FULL: in WAL mode every commit fsyncs the WAL, so a committed entry survives power loss.
        connection.execute("PRAGMA synchronous = FULL")
        return connection
    except sqlite3.Error as error:
        raise JournalError(f"journal {path}: cannot open: {_sqlite_reason(error, path)}") from error


def _check_identity(connection: sqlite3.Connection, path: Path) -> int:
    """The file's schema version when it is a flushtable journal this program reads, 0 when it is an
    empty new database."""
    try:
        application_id = connection.execute("PRAGMA application_id").fetchone()[0]
        version = connection.execute("PRAGMA user_version").fetchone()[0]
        table_count = connection.execute("SELECT COUNT(*) FROM sqlite_schema").fetchone()[0]
    except sqlite3.Error as error:
        raise JournalError(f"journal {path}: cannot read: {_sqlite_reason(error)}") from error
    if application_id == 0 and table_count == 0:
        return 0
    if application_id != APPLICATION_ID:
        raise JournalError(f"journal {path}: not a flushtable journal")
    check_schema_version(version, path)
    return int(version)


def check_schema_version(version: int, path: Path) -> None:
    """Refuse a file this program cannot read: one of a newer release (an earlier one is read, and
    migrated when opened to append)."""
    if version not in READABLE_SCHEMA_VERSIONS:
        readable = ", ".join(str(v) for v in READABLE_SCHEMA_VERSIONS)
        newer = " (written by a newer release)" if version > SCHEMA_VERSION else ""
        raise JournalError(f"journal {path}: schema version {version}{newer}, this program reads {readable}")


def columns_for(version: int) -> str:
    """The columns of an entry row, as a SELECT list, for a file of schema ``version``."""
    return _V1_COLUMNS if version == 1 else _COLUMNS


def _meta_table_id(connection: sqlite3.Connection, path: Path) -> str:
    try:
        row = connection.execute("SELECT value FROM journal_meta WHERE key = 'table_id'").fetchone()
    except sqlite3.Error as error:
        raise JournalError(f"journal {path}: cannot read: {_sqlite_reason(error)}") from error
    if row is None:
        raise JournalError(f"journal {path}: has no table id")
    return str(row[0])


def _prepare(
    connection: sqlite3.Connection, path: Path, table_id: str, base: SegmentBase | None = None
) -> tuple[str, int]:
    """Create the schema in a new file (a segment starting at ``base`` when given); return the table id
    the file belongs to and its schema version (an earlier one is migrated by ``migrate`` next)."""
    try:
        connection.execute("BEGIN IMMEDIATE")
        version = _check_identity(connection, path)
        if not version:
            version = SCHEMA_VERSION
            # executescript would commit our transaction first; run the statements one by one.
            for statement in _split_sql(_SCHEMA):
                connection.execute(statement)
            connection.execute(
                "INSERT INTO journal_meta (key, value) VALUES ('table_id', ?), ('created_utc', ?)",
                (table_id, format_time_utc(_utc_now())),
            )
            if base is not None and base != FIRST_SEGMENT:
                # In the same transaction as the schema: a new segment is never without its base.
                connection.execute(
                    "INSERT INTO journal_meta (key, value) VALUES ('segment', ?), ('base_seq', ?), "
                    "('base_hash', ?), ('base_rounds', ?)",
                    (str(base.segment), str(base.base_seq), base.base_hash, str(base.base_rounds)),
                )
        stored = _meta_table_id(connection, path)
        connection.execute("COMMIT")
        return stored, version
    except sqlite3.Error as error:
        if connection.in_transaction:
            connection.execute("ROLLBACK")
        raise JournalError(f"journal {path}: cannot prepare: {_sqlite_reason(error, path)}") from error
    except BaseException:
        if connection.in_transaction:
            connection.execute("ROLLBACK")
        raise


def migrate(connection: sqlite3.Connection, path: Path, version: int) -> None:
    """Bring a journal of an earlier schema to this one, in place and in one transaction (all or
    nothing): schema 1 gains the columns of the typed journal (its rows keep version 1 and their bytes:
    they verify as written, and are read through the upcasters); both gain the totals and the round
    index, made from the entries. The entries themselves are never rewritten. journal_meta records it."""
    try:
        connection.execute("BEGIN IMMEDIATE")
        stored = connection.execute("PRAGMA user_version").fetchone()[0]
        if stored != version:  # another process migrated it meanwhile
            connection.execute("ROLLBACK")
            return
        if version == 1:
            for statement in (
                "ALTER TABLE journal ADD COLUMN version INTEGER NOT NULL DEFAULT 1",
                "ALTER TABLE journal ADD COLUMN private TEXT",
                "ALTER TABLE journal ADD COLUMN private_digest TEXT",
            ):
                connection.execute(statement)
        for statement in _split_sql(TOTALS_SCHEMA):
            connection.execute(statement)
        rebuild_totals(connection, _counted_rows(connection, path))
        connection.execute(
            "INSERT INTO journal_meta (key, value) VALUES (?, ?)",
            (f"migrated_from_schema_{version}", f"{format_time_utc(_utc_now())} to schema {SCHEMA_VERSION}"),
        )
        connection.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        connection.execute("COMMIT")
    except sqlite3.Error as error:
        if connection.in_transaction:
            connection.execute("ROLLBACK")
        reason = _sqlite_reason(error, path)
        raise JournalError(f"journal {path}: cannot migrate from schema {version}: {reason}") from error
    except BaseException:
        if connection.in_transaction:
            connection.execute("ROLLBACK")
        raise


def _counted_rows(
    connection: sqlite3.Connection, path: Path
) -> Iterator[tuple[int, str, str | None, str, Mapping[str, Any]]]:
    """Every entry that moves a total, in order, with its public part (upcast when of an earlier
    version), for ``rebuild_totals``."""
    kinds = sorted(TOTAL_KINDS)
    marks = ", ".join("?" for _ in kinds)
    cursor = connection.execute(
        f"SELECT seq, kind, round_id, time_utc, version, payload FROM journal WHERE kind IN ({marks}) "
        "ORDER BY seq",
        kinds,
    )
    for seq, kind, round_id, time_utc, version, payload_text in cursor:
        if version < typed.ENTRY_SCHEMA_VERSION:
            try:
                public = typed.public_dict(typed_from_legacy(kind, version, payload_text))
            except typed.EntryError as error:
                raise JournalError(f"journal {path}: entry {seq} (version {version}): {error}") from None
        else:
            public = json.loads(payload_text)
        yield seq, kind, round_id, time_utc, public


@functools.cache
def schema_triggers() -> dict[str, tuple[str, str]]:
    """The triggers a journal of this schema has: name -> (table, SQL with its whitespace normalised),
    from the schema itself run in an in-memory database (no file, nothing written)."""
    connection = sqlite3.connect(":memory:")
    try:
        for statement in _split_sql(_SCHEMA):
            connection.execute(statement)
        rows = connection.execute(
            "SELECT name, tbl_name, sql FROM sqlite_schema WHERE type = 'trigger'"
        ).fetchall()
    finally:
        connection.close()
    return {name: (table, normalised_sql(sql)) for name, table, sql in rows}


def normalised_sql(sql: str | None) -> str:
    """SQL text with its whitespace runs made single spaces (how SQLite keeps it depends on the writer)."""
    return " ".join((sql or "").split())


def read_segment_base(connection: sqlite3.Connection) -> SegmentBase:
    """The segment a journal file is and where it starts (FIRST_SEGMENT for a journal with no base)."""
    rows = dict(
        connection.execute(
            "SELECT key, value FROM journal_meta WHERE key IN "
            "('segment', 'base_seq', 'base_hash', 'base_rounds')"
        ).fetchall()
    )
    if not rows:
        return FIRST_SEGMENT
    try:
        return SegmentBase(
            int(rows["segment"]), int(rows["base_seq"]), str(rows["base_hash"]), int(rows["base_rounds"])
        )
    except (KeyError, ValueError):
        raise sqlite3.DatabaseError("journal_meta: a segment's base is incomplete (edited?)") from None


def _split_sql(script: str) -> list[str]:
    """Statements of our own schema script (triggers hold ';' inside BEGIN ... END)."""
    statements: list[str] = []
    buffer = ""
    for line in script.strip().splitlines():
        buffer += line + "\n"
        if sqlite3.complete_statement(buffer):
            statements.append(buffer.strip())
            buffer = ""
    return statements


def recompute_hash(entry: JournalEntry) -> str:
    """The hash the entry's stored columns give (the public part as stored, the private part by its
    digest; an entry of an earlier version by its text as written): what the head check compares with
    the stored hash."""
    text = entry.stored_text if entry.stored_text is not None else canonical_json(entry.public)
    return stored_hash(entry, text)

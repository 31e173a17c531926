"""The journal file's schema: its tables, triggers and identity (PRAGMA application_id and
user_version), how a file is created, recognised and migrated from an earlier schema, and where a
segment starts (docs/journal.md "Versions and upcasting", "Segments and seals").

Durability and the chain's rules live here, in SQL: WAL with synchronous=FULL; triggers refuse UPDATE
and DELETE, a row that does not extend the chain, and a round closed twice or started twice."""

from __future__ import annotations

import functools
import json
import sqlite3
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple

from controller.journal.chain import GENESIS_HASH, format_time_utc
from controller.journal.errors import JournalError, sqlite_reason
from controller.journal.kinds import ENTRY_SCHEMA_VERSION
from controller.journal.totals import TOTAL_KINDS, TOTALS_SCHEMA
from controller.journal.totals import rebuild as rebuild_totals

SCHEMA_VERSION = 4  # 1: untyped payloads; 2: typed entries with a private part and its commitment;
# 3: the same entries, with the per-period totals and the round index beside them (totals.py); 4: the
# same tables, the totals counting the progressive's net in the balance (a schema-3 file's totals left
# it out, so each round with a Progressive wager was counted unbalanced: issue 29)
READABLE_SCHEMA_VERSIONS = (1, 2, 3, 4)  # a file of an earlier one is migrated in place when opened to append
# The schema whose totals count a round's balance as this release does (an earlier file's may not).
TOTALS_READING_SCHEMA = 4
APPLICATION_ID = 0x464C5454  # "FLTT": marks the file as a flushtable journal (PRAGMA application_id)
DEFAULT_BUSY_TIMEOUT_S = 5.0
CLOSING_SQL = "('round_settled','round_dead','round_voided')"

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
WHEN NEW.kind IN {CLOSING_SQL} AND (
    NEW.round_id IS NULL
    OR EXISTS (SELECT 1 FROM journal WHERE round_id = NEW.round_id AND kind IN {CLOSING_SQL})
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
COLUMNS = (
    "seq, time_utc, table_id, round_id, source, kind, version, payload, private, private_digest, "
    "prev_hash, hash"
)
# A schema-1 file not yet migrated (read-only readers): its entries are all version 1, with no private
# part (the payload holds both; controller/journal/upcast.py splits them).
V1_COLUMNS = "seq, time_utc, table_id, round_id, source, kind, 1, payload, NULL, NULL, prev_hash, hash"
ROW_PLACEHOLDERS = "(" + ", ".join("?" for _ in COLUMNS.split(",")) + ")"
ROWS_PER_INSERT = 500  # at most; fewer where this SQLite allows fewer parameters (999 before 3.32)


class SegmentBase(NamedTuple):
    """Where a segment starts (docs/journal.md "Segments and seals"): its number, and the entry it
    extends: the last seal's final entry (``base_seq``, ``base_hash``), with the rounds started before it
    (``base_rounds``: round numbers go on counting). The first segment's: 1, 0, the genesis hash, 0."""

    segment: int
    base_seq: int
    base_hash: str
    base_rounds: int


FIRST_SEGMENT = SegmentBase(1, 0, GENESIS_HASH, 0)


def utc_now() -> datetime:
    return datetime.now(UTC)


def connect(path: Path, *, readonly: bool, busy_timeout_s: float) -> sqlite3.Connection:
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
        raise JournalError(f"journal {path}: cannot open: {sqlite_reason(error, path)}") from error


def check_identity(connection: sqlite3.Connection, path: Path) -> int:
    """The file's schema version when it is a flushtable journal this program reads, 0 when it is an
    empty new database."""
    try:
        application_id = connection.execute("PRAGMA application_id").fetchone()[0]
        version = connection.execute("PRAGMA user_version").fetchone()[0]
        table_count = connection.execute("SELECT COUNT(*) FROM sqlite_schema").fetchone()[0]
    except sqlite3.Error as error:
        raise JournalError(f"journal {path}: cannot read: {sqlite_reason(error)}") from error
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
    return V1_COLUMNS if version == 1 else COLUMNS


def meta_table_id(connection: sqlite3.Connection, path: Path) -> str:
    try:
        row = connection.execute("SELECT value FROM journal_meta WHERE key = 'table_id'").fetchone()
    except sqlite3.Error as error:
        raise JournalError(f"journal {path}: cannot read: {sqlite_reason(error)}") from error
    if row is None:
        raise JournalError(f"journal {path}: has no table id")
    return str(row[0])


def prepare(
    connection: sqlite3.Connection, path: Path, table_id: str, base: SegmentBase | None = None
) -> tuple[str, int]:
    """Create the schema in a new file (a segment starting at ``base`` when given); return the table id
    the file belongs to and its schema version (an earlier one is migrated by ``migrate`` next)."""
    try:
        connection.execute("BEGIN IMMEDIATE")
        version = check_identity(connection, path)
        if not version:
            version = SCHEMA_VERSION
            # executescript would commit our transaction first; run the statements one by one.
            for statement in split_sql(_SCHEMA):
                connection.execute(statement)
            connection.execute(
                "INSERT INTO journal_meta (key, value) VALUES ('table_id', ?), ('created_utc', ?)",
                (table_id, format_time_utc(utc_now())),
            )
            if base is not None and base != FIRST_SEGMENT:
                # In the same transaction as the schema: a new segment is never without its base.
                connection.execute(
                    "INSERT INTO journal_meta (key, value) VALUES ('segment', ?), ('base_seq', ?), "
                    "('base_hash', ?), ('base_rounds', ?)",
                    (str(base.segment), str(base.base_seq), base.base_hash, str(base.base_rounds)),
                )
        stored = meta_table_id(connection, path)
        connection.execute("COMMIT")
        return stored, version
    except sqlite3.Error as error:
        if connection.in_transaction:
            connection.execute("ROLLBACK")
        raise JournalError(f"journal {path}: cannot prepare: {sqlite_reason(error, path)}") from error
    except BaseException:
        if connection.in_transaction:
            connection.execute("ROLLBACK")
        raise


def migrate(connection: sqlite3.Connection, path: Path, version: int) -> None:
    """Bring a journal of an earlier schema to this one, in place and in one transaction (all or
    nothing): schema 1 gains the columns of the typed journal (its rows keep version 1 and their bytes:
    they verify as written, and are read through the upcasters); every earlier schema gets the totals
    and the round index made (again) from the entries: schema 3's totals left the progressive's net out
    of each round's balance. The entries themselves are never rewritten. journal_meta records it."""
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
        for statement in split_sql(TOTALS_SCHEMA):
            connection.execute(statement)
        rebuild_totals(connection, counted_rows(connection, path), journal_path=path)
        connection.execute(
            "INSERT INTO journal_meta (key, value) VALUES (?, ?)",
            (f"migrated_from_schema_{version}", f"{format_time_utc(utc_now())} to schema {SCHEMA_VERSION}"),
        )
        connection.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        connection.execute("COMMIT")
    except sqlite3.Error as error:
        if connection.in_transaction:
            connection.execute("ROLLBACK")
        reason = sqlite_reason(error, path)
        raise JournalError(f"journal {path}: cannot migrate from schema {version}: {reason}") from error
    except BaseException:
        if connection.in_transaction:
            connection.execute("ROLLBACK")
        raise


def counted_rows(
    connection: sqlite3.Connection, path: Path
) -> Iterator[tuple[int, str, str | None, str, Mapping[str, Any]]]:
    """Every entry that moves a total, in order, with its public part (upcast when of an earlier
    version), for ``rebuild_totals``. A payload that is not a JSON object (a damaged file) is a
    JournalError naming its entry."""
    kinds = sorted(TOTAL_KINDS)
    marks = ", ".join("?" for _ in kinds)
    # A schema-1 file read as it is (not migrated: a read-only reader's) has no version column, and its
    # entries are all version 1 (as V1_COLUMNS reads them). The migration counts after adding the column
    # (each row's DEFAULT 1), with user_version still 1: the same 1 either way.
    schema_version = connection.execute("PRAGMA user_version").fetchone()[0]
    version_sql = "1" if schema_version == 1 else "version"
    cursor = connection.execute(
        f"SELECT seq, kind, round_id, time_utc, {version_sql}, payload FROM journal "
        f"WHERE kind IN ({marks}) ORDER BY seq",
        kinds,
    )
    for seq, kind, round_id, time_utc, version, payload_text in cursor:
        if version < ENTRY_SCHEMA_VERSION:
            # An earlier version's row, upcast (the typed classes load for it: only an old journal's).
            from controller.journal import entries as typed  # noqa: PLC0415
            from controller.journal.upcast import typed_from_legacy  # noqa: PLC0415

            try:
                public = typed.public_dict(typed_from_legacy(kind, version, payload_text))
            except typed.EntryError as error:
                raise JournalError(f"journal {path}: entry {seq} (version {version}): {error}") from None
        else:
            try:
                public = json.loads(payload_text)
            except (ValueError, TypeError):  # TypeError: a payload that is not text at all
                raise JournalError(f"journal {path}: entry {seq}: payload is not JSON") from None
            if not isinstance(public, dict):
                raise JournalError(f"journal {path}: entry {seq}: payload is not a JSON object")
        yield seq, kind, round_id, time_utc, public


@functools.cache
def schema_triggers() -> dict[str, tuple[str, str]]:
    """The triggers a journal of this schema has: name -> (table, SQL with its whitespace normalised),
    from the schema itself run in an in-memory database (no file, nothing written)."""
    connection = sqlite3.connect(":memory:")
    try:
        for statement in split_sql(_SCHEMA):
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


def split_sql(script: str) -> list[str]:
    """Statements of our own schema script (triggers hold ';' inside BEGIN ... END)."""
    statements: list[str] = []
    buffer = ""
    for line in script.strip().splitlines():
        buffer += line + "\n"
        if sqlite3.complete_statement(buffer):
            statements.append(buffer.strip())
            buffer = ""
    return statements

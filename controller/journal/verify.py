"""`verify_chain`: recompute the journal's hash chain and name the first entry that breaks it.

It reads the rows as stored, with a read-only connection, and trusts nothing in them: every seq must
follow the one before (a gap means rows were deleted), every prev_hash must be the hash before it,
every payload must be the canonical JSON of an object, and every hash must be recomputed exactly.

What a chain alone cannot show: entries cut off the end, or the whole tail rewritten with fresh hashes
by someone who can write the file. For those, keep the head (``flushtable journal head``, and every
entry's hash is in the JSON logs) somewhere else and pass it back as an ``anchor``.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from controller.journal import entries as typed
from controller.journal.chain import GENESIS_HASH, canonical_json, stored_hash
from controller.journal.errors import JournalError
from controller.journal.schema import APPLICATION_ID, read_segment_base, schema_triggers
from controller.journal.snapshot import readonly_connection


@dataclass(frozen=True, slots=True)
class VerifyResult:
    ok: bool
    entries_checked: int
    first_bad_seq: int | None
    reason: str
    head_hash: str = GENESIS_HASH  # the last good entry's hash
    append_only_triggers: bool = True  # False: someone dropped the triggers that refuse edits

    def summary(self) -> str:
        if self.ok:
            return f"ok {self.entries_checked} entries"
        return f"bad entry {self.first_bad_seq}: {self.reason}"


def verify_chain(path: str | Path, *, anchor: tuple[int, str] | None = None) -> VerifyResult:
    """Check every entry of the journal at ``path``; ``anchor`` (seq, hash) must also match."""
    journal_path = Path(path)
    # Read-only, and on a read-only file system too (controller/journal/snapshot.py).
    with readonly_connection(journal_path) as connection:
        return verify_connection(connection, journal_path, anchor=anchor)


def verify_connection(
    connection: sqlite3.Connection, path: Path, *, anchor: tuple[int, str] | None = None
) -> VerifyResult:
    """``verify_chain`` on a connection already open (controller/journal/proof.py runs it inside the
    read transaction of its other checks)."""
    try:
        return _verify(connection, path, anchor)
    except sqlite3.Error as error:
        raise JournalError(f"journal {path}: cannot read: {error}") from error


class _StoredRow(NamedTuple):
    """One row as stored: what ``_recomputed_hash`` hashes."""

    seq: int
    time_utc: str
    table_id: str
    round_id: str | None
    source: str
    kind: str
    version: int
    payload: str
    private: str | None
    private_digest: str | None
    prev_hash: str
    hash: str


_SELECT_ROWS = f"SELECT {', '.join(_StoredRow._fields)} FROM journal ORDER BY seq"
# A schema-1 file not yet migrated: no version or private columns (every entry is version 1).
_SELECT_V1_ROWS = (
    "SELECT seq, time_utc, table_id, round_id, source, kind, 1, payload, NULL, NULL, prev_hash, hash "
    "FROM journal ORDER BY seq"
)


def _recomputed_hash(entry: _StoredRow) -> str:
    """The hash the entry's stored columns give (its prev_hash already checked against the chain).
    The one place verify computes an entry's hash."""
    return stored_hash(entry, entry.payload)


def _verify(connection: sqlite3.Connection, path: Path, anchor: tuple[int, str] | None) -> VerifyResult:  # noqa: PLR0912 - one branch per chain refusal, each its own one-line error
    if connection.execute("PRAGMA application_id").fetchone()[0] != APPLICATION_ID:
        raise JournalError(f"journal {path}: not a flushtable journal")
    trigger_names = {
        row[0] for row in connection.execute("SELECT name FROM sqlite_schema WHERE type = 'trigger'")
    }
    triggers_present = set(schema_triggers()) <= trigger_names
    meta = connection.execute("SELECT value FROM journal_meta WHERE key = 'table_id'").fetchone()
    table_id = meta[0] if meta else None

    def bad(seq: int, checked: int, head: str, reason: str) -> VerifyResult:
        return VerifyResult(False, checked, seq, reason, head, triggers_present)

    # A segment's chain starts from its base: the last seal's final entry (docs/journal.md "Segments
    # and seals"); the first segment's (and a journal's before segments) from entry 1 and the genesis.
    base = read_segment_base(connection)
    expected_seq = base.base_seq + 1
    prev_hash = base.base_hash
    checked = 0
    anchor_seen = anchor is None
    # One SELECT is one read transaction: a consistent snapshot even while the daemon appends.
    schema_version = connection.execute("PRAGMA user_version").fetchone()[0]
    cursor = connection.execute(_SELECT_V1_ROWS if schema_version == 1 else _SELECT_ROWS)
    last_version = 0
    for entry in map(_StoredRow._make, cursor):
        seq, row_table_id, payload_text = entry.seq, entry.table_id, entry.payload
        private_text, private_digest = entry.private, entry.private_digest
        row_prev_hash, row_hash = entry.prev_hash, entry.hash
        if seq != expected_seq:
            return bad(
                expected_seq, checked, prev_hash, f"missing: the next entry is {seq} (entries deleted?)"
            )
        if row_prev_hash != prev_hash:
            what = (
                f"entry {seq - 1}'s hash" if seq > base.base_seq + 1 else "the hash its segment starts from"
            )
            return bad(seq, checked, prev_hash, f"prev_hash does not match {what}")
        if table_id is not None and row_table_id != table_id:
            return bad(
                seq, checked, prev_hash, f"table {row_table_id!r}, but the journal is table {table_id!r}"
            )
        try:
            payload = json.loads(payload_text)
        except (TypeError, ValueError):
            return bad(seq, checked, prev_hash, "payload is not JSON")
        if not isinstance(payload, dict):
            return bad(seq, checked, prev_hash, "payload is not a JSON object")
        if canonical_json(payload) != payload_text:
            return bad(seq, checked, prev_hash, "payload is not in canonical form (edited?)")
        # A private part must match the commitment the chain holds for it.
        if (private_text is None) != (private_digest is None):
            return bad(seq, checked, prev_hash, "private part and its digest do not go together (edited?)")
        if private_text is not None and typed.commitment(private_text) != private_digest:
            return bad(seq, checked, prev_hash, "private part does not match its digest (edited?)")
        # Versions only go up: a release writes its own version after the earlier ones it upgraded
        # (an older version after a newer one is an edit, made to hash by the older formula).
        if entry.version < last_version:
            return bad(
                seq,
                checked,
                prev_hash,
                f"entry version {entry.version} after version {last_version} (edited?)",
            )
        last_version = entry.version
        # The payload text is canonical (checked above), so the hash can be taken from it directly.
        if _recomputed_hash(entry) != row_hash:
            return bad(seq, checked, prev_hash, "hash does not match the entry's contents (edited?)")
        if anchor is not None and seq == anchor[0]:
            if row_hash != anchor[1]:
                return bad(seq, checked, prev_hash, "hash differs from the anchor (chain rewritten?)")
            anchor_seen = True
        checked += 1
        prev_hash = row_hash
        expected_seq += 1
    if anchor is not None and anchor[0] <= base.base_seq:
        anchor_seen = True  # before this segment: proof.py checks it against the seal
    if not anchor_seen and anchor is not None:
        end = base.base_seq + checked
        return bad(anchor[0], checked, prev_hash, f"anchored entry missing: the journal ends at {end}")
    return VerifyResult(True, checked, None, "", prev_hash, triggers_present)

"""Check the floor's record of a table against its own chain: every hash recomputed from the columns
PostgreSQL holds, every link, every private part a reader may see (``floor_private_shown``: the parts
the table's gate shows; the service checked every part it took against its commitment as it took it)
against its commitment (`flushtable floor verify`, `floor demo` and tests use this); and the rows
kept beside an entry outside its hash (floor_locked_wagers, floor_day_figures: migrations 15 and 16)
recomputed from the entry, as the writer computes them at commit: one that differs, is extra or is
missing is refused like a broken link (docs/floor.md "Schema"); and entries of a table with no
``floor_tables`` row are found and refused."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any

import psycopg

from controller.errors import UserError
from controller.floor.store import day_figure_rows, locked_wager_rows
from controller.journal import entries as typed
from controller.journal.chain import GENESIS_HASH, canonical_json, entry_hash_from_text


@dataclass(frozen=True, slots=True)
class ChainCheck:
    table_id: str
    ok: bool
    entries: int
    problem: str = ""


ENTRIES_PER_FETCH = 2000  # rows a fetch of the entries' cursor brings: memory bounded, few round trips
ROWS_BESIDE_PER_FETCH = 2000  # the same, of each cursor on the rows kept beside the entries

# The rows an entry has beside it, outside its hash: (table, the SELECT of a table's rows by seq).
_ROWS_BESIDE = (
    ("floor_locked_wagers", "SELECT seq, table_id, seq, round_id, seat, wager, amount_cents "
     "FROM floor_locked_wagers WHERE table_id = %s ORDER BY seq"),
    ("floor_day_figures", "SELECT seq, table_id, seq, time_utc, measure, label, numerator, denominator "
     "FROM floor_day_figures WHERE table_id = %s ORDER BY seq"),
)  # fmt: skip


class _RowsBeside:
    """One table of rows kept beside a table's entries, read by seq through a server-side cursor,
    ROWS_BESIDE_PER_FETCH rows a fetch: a table that ran for years has millions of them, and only the
    rows of the entry being checked (and one fetch ahead) are in memory. ``take`` is called with each
    entry's seq in turn, ascending, as the entries are walked."""

    def __init__(self, name: str, cursor: psycopg.ServerCursor[Any]) -> None:
        self.name = name
        self._rows = iter(cursor)
        self._next: tuple[int, tuple[Any, ...]] | None = None
        self.first_orphan: int | None = None  # the lowest seq of a row no entry was checked for
        self._advance()

    def _advance(self) -> None:
        row = next(self._rows, None)
        self._next = None if row is None else (int(row[0]), tuple(row[1:]))

    def take(self, seq: int) -> set[Any]:
        """The rows stored beside entry ``seq``; those of a lower seq not taken (no such entry) noted."""
        held: set[Any] = set()
        while self._next is not None and self._next[0] <= seq:
            row_seq, values = self._next
            if row_seq == seq:
                held.add(values)
            elif self.first_orphan is None:
                self.first_orphan = row_seq
            self._advance()
        return held

    def orphan_after_walk(self) -> int | None:
        """Once every entry is taken: the lowest seq of a row of no entry the walk met, or None."""
        if self._next is not None and self.first_orphan is None:
            return self._next[0]
        return self.first_orphan


def _rows_beside(connection: psycopg.Connection[Any], table_id: str, stack: ExitStack) -> list[_RowsBeside]:
    """Each table of rows beside the entries (of those this floor's schema has), a cursor on the
    table's rows by seq, opened in the caller's transaction and closed with ``stack``."""
    opened: list[_RowsBeside] = []
    for name, select in _ROWS_BESIDE:
        row = connection.execute("SELECT to_regclass(%s) IS NOT NULL", (name,)).fetchone()
        if row is None or not row[0]:
            continue  # a floor before the migration that made it
        cursor = stack.enter_context(connection.cursor(name=f"floor_verify_{name}"))
        cursor.itersize = ROWS_BESIDE_PER_FETCH
        cursor.execute(select, (table_id,))
        opened.append(_RowsBeside(name, cursor))
    return opened


def _beside_problem(
    beside: list[_RowsBeside], table_id: str, seq: int, recomputed: dict[str, list[Any]]
) -> str:
    """'' if the rows stored beside entry ``seq`` are exactly those recomputed from it; else one line."""
    for rows_beside in beside:
        name = rows_beside.name
        held = rows_beside.take(seq)
        # numeric and bigint read back as Decimal and int: equal (and hashed alike) to the ints computed.
        expected = set(recomputed[name])
        if held == expected:
            continue
        how = "not its entry's (extra or different)" if held - expected else "missing"
        return f"table {table_id} entry {seq}: a {name} row {how}"
    return ""


def verify_table(
    connection: psycopg.Connection[Any], table_id: str, *, head_required: bool = False
) -> ChainCheck:
    """The table's chain as the floor holds it: ok, or the first problem in one line. ``head_required``
    (`flushtable floor verify`'s walk of the floor): entries of a table with no ``floor_tables`` row (the
    writer writes the row in the entries' own transaction) are a finding, not a chain like any other.

    The entries and each table of rows beside them come through server-side cursors in seq order,
    ENTRIES_PER_FETCH and ROWS_BESIDE_PER_FETCH rows a fetch, walked side by side: a table's chain of
    millions of entries and the rows beside them are never held in memory whole. A cursor needs a
    transaction: the caller's, else one of its own. On a live floor, give it a REPEATABLE READ
    connection (`flushtable floor verify` does): in READ COMMITTED each cursor has its own snapshot, and
    a batch the writer commits between the rows beside and the entries reads as rows missing."""
    with connection.transaction(), ExitStack() as stack:
        # The head the floor records for the table (its projection's last entry): the walk must reach
        # it, or entries were taken off the chain's end (a chain whose tail is deleted still links).
        head = connection.execute(
            "SELECT last_seq, last_hash FROM floor_tables WHERE table_id = %s", (table_id,)
        ).fetchone()
        beside = _rows_beside(connection, table_id, stack)
        cursor = stack.enter_context(connection.cursor(name="floor_verify_entries"))
        cursor.itersize = ENTRIES_PER_FETCH
        cursor.execute(
            "SELECT e.seq, e.time_text, e.round_id, e.source, e.kind, e.version, e.payload, "
            "e.private_digest, e.prev_hash, e.hash, p.private_text, e.time_utc "
            "FROM floor_entries e LEFT JOIN floor_private_shown p "
            "USING (table_id, seq) WHERE e.table_id = %s ORDER BY e.seq",
            (table_id,),
        )
        check = _walk(cursor, table_id, beside, head=(int(head[0]), str(head[1])) if head else None)
    if head_required and head is None and (check.entries or not check.ok):
        return ChainCheck(
            table_id, False, check.entries,
            "no floor_tables row: the floor holds entries of the table and records no head for it"
            + (f"; {check.problem}" if check.problem else ""),
        )  # fmt: skip
    return check


def _walk(
    cursor: psycopg.ServerCursor[Any],
    table_id: str,
    beside: list[_RowsBeside],
    *,
    head: tuple[int, str] | None,
) -> ChainCheck:
    """Each entry of ``cursor`` (a table's, by seq) checked in turn: the first problem, or ok. ``head``:
    the last entry the floor records for the table, read before the entries (None: not projected yet):
    the chain must reach it with its hash. Reaching past it is no problem: read in READ COMMITTED, a
    batch committed between the two reads adds entries beyond the head read first."""
    previous = GENESIS_HASH
    count = 0
    for (
        seq,
        time_text,
        round_id,
        source,
        kind,
        version,
        payload,
        digest,
        prev_hash,
        hash_,
        private_text,
        time_utc,
    ) in cursor:
        count += 1
        if seq != count:
            return ChainCheck(table_id, False, count - 1, f"entry {count} missing (next is {seq})")
        if prev_hash != previous:
            return ChainCheck(
                table_id, False, count - 1, f"entry {seq}: prev_hash is not entry {seq - 1}'s hash"
            )
        recomputed = entry_hash_from_text(
            prev_hash=prev_hash,
            seq=seq,
            time_utc=time_text,
            table_id=table_id,
            round_id=round_id,
            source=source,
            kind=kind,
            version=version,
            payload_text=canonical_json(payload),
            private_digest=digest,
        )
        if recomputed != hash_:
            return ChainCheck(table_id, False, count - 1, f"entry {seq}: hash does not match its contents")
        if private_text is not None and typed.commitment(private_text) != digest:
            return ChainCheck(
                table_id, False, count - 1, f"entry {seq}: private part does not match its commitment"
            )
        if beside:
            try:
                entry = typed.decode_public(kind, canonical_json(payload))
            except typed.EntryError:
                return ChainCheck(
                    table_id, False, count - 1, f"table {table_id} entry {seq}: a payload its class refuses"
                )
            wagers = (
                locked_wager_rows(table_id, seq, round_id, entry)
                if isinstance(entry, typed.BetsLocked)
                else []
            )
            rows_expected = {
                "floor_locked_wagers": wagers,
                "floor_day_figures": day_figure_rows(table_id, seq, time_utc, entry),
            }
            if problem := _beside_problem(beside, table_id, seq, rows_expected):
                return ChainCheck(table_id, False, count - 1, problem)
        previous = hash_
        if head is not None and seq == head[0] and hash_ != head[1]:
            return ChainCheck(
                table_id, False, count - 1, f"entry {seq}: not the hash the floor records as the table's head"
            )
    return _after_the_last(table_id, count, head, beside)


def _after_the_last(
    table_id: str, count: int, head: tuple[int, str] | None, beside: list[_RowsBeside]
) -> ChainCheck:
    """The walk's end, ``count`` entries verified: the floor's head reached, and no row kept beside an
    entry the chain does not hold."""
    if head is not None and count < head[0]:
        return ChainCheck(
            table_id, False, count,
            f"the chain ends at entry {count}, the floor's head for the table is entry {head[0]} "
            "(entries taken off its end?)",
        )  # fmt: skip
    for rows_beside in beside:
        orphan = rows_beside.orphan_after_walk()
        if orphan is not None:  # rows of a seq the table's chain does not hold
            return ChainCheck(
                table_id,
                False,
                count,
                f"table {table_id} entry {orphan}: a {rows_beside.name} row with no entry",
            )
    return ChainCheck(table_id, True, count)


def auditor_session(connection: psycopg.Connection[Any], *, statement_timeout_s: int) -> None:
    """Make ``connection`` (autocommit) `flushtable floor verify`'s: read-only twice over, the role's
    (checked: ``check_read_only_reader``) and the session's; each table's transaction (``verify_table``
    opens one) REPEATABLE READ, so its entries and the rows beside them come from one snapshot while the
    floor service keeps committing; every statement, a fetch of entries included, bounded in time."""
    connection.read_only = True
    connection.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
    connection.execute("SELECT set_config('default_transaction_read_only', 'on', false)")
    connection.execute("SELECT set_config('statement_timeout', %s, false)", (f"{statement_timeout_s}s",))
    check_read_only_reader(connection)


def check_read_only_reader(connection: psycopg.Connection[Any]) -> None:
    """`flushtable floor verify` reads as the floor's read-only reporting role: a connection that is not
    to a floor, or whose role may write the entries (the writer, a superuser), is refused in one line."""
    row = connection.execute(
        "SELECT to_regclass('floor_entries') IS NOT NULL AND to_regclass('floor_tables') IS NOT NULL, "
        "current_user"
    ).fetchone()
    if row is None or not row[0]:
        raise UserError("PostgreSQL: not a floor database (no floor_entries; flushtable floor init-db)")
    writes = connection.execute(
        "SELECT has_table_privilege('floor_entries', 'INSERT') "
        "OR has_table_privilege('floor_entries', 'UPDATE') OR has_table_privilege('floor_entries', 'DELETE')"
    ).fetchone()
    if writes is not None and writes[0]:
        raise UserError(
            f"PostgreSQL role {row[1]} may write floor_entries: floor verify reads as the read-only "
            "reporting role ([panel] reporting_dsn_file)"
        )


# Every table with a floor_tables row, and every table with entries: the second walks floor_entries' key
# one table at a time (a loose index scan: a probe a table, not a scan of every entry), so a table whose
# entries have no row (which the writer never leaves: it writes both in one transaction) is walked too.
_TABLES_HELD = (
    "WITH RECURSIVE with_entries(table_id) AS ("
    "(SELECT table_id FROM floor_entries ORDER BY table_id LIMIT 1) UNION ALL "
    "SELECT (SELECT e.table_id FROM floor_entries e WHERE e.table_id > w.table_id "
    "ORDER BY e.table_id LIMIT 1) FROM with_entries w WHERE w.table_id IS NOT NULL) "
    "SELECT table_id FROM floor_tables UNION "
    "SELECT table_id FROM with_entries WHERE table_id IS NOT NULL ORDER BY table_id"
)


def floor_table_ids(connection: psycopg.Connection[Any], wanted: Sequence[str]) -> list[str]:
    """Every table the floor holds (floor_tables: one row a table, its chain's head; and any table with
    entries but no such row), in order; or the ``wanted`` ones, in the order given, each once, a table
    the floor does not hold refused."""
    rows = connection.execute(_TABLES_HELD).fetchall()
    held = [str(table_id) for (table_id,) in rows]
    if not wanted:
        return held
    known = set(held)
    unknown = [table_id for table_id in wanted if table_id not in known]
    if unknown:
        raise UserError(f"--table {unknown[0]}: no such table on the floor ({len(held)} tables)")
    return list(dict.fromkeys(wanted))


def verify_floor(connection: psycopg.Connection[Any], table_ids: Sequence[str]) -> Iterator[ChainCheck]:
    """Each table's check in turn, read in a transaction of its own (a snapshot per table: the floor
    keeps being written while a big floor is walked), a fetch of each of its cursors in memory at a
    time; a table's entries with no floor_tables row fail (``verify_table``'s ``head_required``)."""
    for table_id in table_ids:
        yield verify_table(connection, table_id, head_required=True)

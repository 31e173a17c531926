"""The floor's PostgreSQL side (docs/floor.md "The floor service"): a table's projection read back from
what the floor holds, the look-ups the checks need, and one batch's writes, all in the caller's
transaction (controller/floor/service.py commits, then acks).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import msgspec
import psycopg

from controller.floor.checks import FloorStored, TableProjection, fold_stored
from controller.floor.gaming_day import FIGURE_KINDS, entry_figures, figure_rows
from controller.floor.theoretical import theoretical_win_cents
from controller.journal import entries as typed
from controller.journal.closing_entries import ClosingEntry
from controller.journal.entry_view import EntryView
from controller.journal.kinds import STATUS_BY_CLOSING_KIND
from controller.journal.state import TableState
from controller.journal.state_parts import Meters
from controller.uplink import wire

Connection = psycopg.AsyncConnection[tuple[Any, ...]]


# The entries whose fault becomes a floor alert row (``Batch.add_entry``); none has a subclass.
_FAULT_CLASSES = frozenset({typed.FaultRaised, typed.FaultAcknowledged, typed.FaultCleared})

# What the floor's readers need of an entry beyond its place, in typed columns of floor_entries (migration
# 12, docs/floor.md "Schema"): its own seat, the state a state_changed entered, and the release a
# software_verified names (release, digest, development); since migration 14 a clock_offset's measurement
# (offset, within bound, bound) and a round_settled's progressive part (present, wagers, unit). Read off
# the typed entry at commit, so no reader parses a payload's JSON.
EntryColumns = tuple[
    int | None, str | None, str | None, str | None, bool | None,
    int | None, bool | None, int | None,
    bool | None, int | None, int | None,
]  # fmt: skip
_NO_COLUMNS: EntryColumns = (None,) * 11
# The stored kinds whose class declares a ``seat`` of its own (read off the classes once): a renamed
# kind is its stored class's (``operator_action`` has none), as the row's payload is.
_SEATED_KINDS = frozenset(
    kind for kind, cls in typed.CLASS_BY_STORED_KIND.items() if "seat" in cls.__struct_fields__
)
_CLOSING_KIND_BY_STATUS = {status: kind for kind, status in STATUS_BY_CLOSING_KIND.items()}
_BIGINT_MIN, _BIGINT_MAX = -(2**63), 2**63 - 1
# floor_entries.seat (an integer) holds a seat of up to 9 digits: migration 12's backfill keeps the same.
_MAX_SEAT_COLUMN = 10**9 - 1


def _bigint(value: int | None) -> int | None:
    # A table's figure past PostgreSQL's bigint would fail the batch's COPY (the floor stuck retrying).
    return value if value is not None and _BIGINT_MIN <= value <= _BIGINT_MAX else None


def entry_columns(kind: str, entry: typed.Entry) -> EntryColumns:
    """The typed columns of a stored entry of ``kind`` (``EntryColumns``)."""
    if kind not in _SEATED_KINDS:
        # By its exact type (none has a subclass): isinstance on a Struct was 1-2 us an entry here.
        if type(entry) is typed.StateChanged:
            return (None, entry.to, None, None, None, None, None, None, None, None, None)
        if type(entry) is typed.SoftwareVerified:
            return (None, None, entry.release, entry.release_digest, entry.development, *_NO_COLUMNS[5:])
        if type(entry) is typed.ClockOffset:
            measured = (_bigint(entry.offset_us), entry.within_bound, _bigint(entry.bound_us))
            return (None, None, None, None, None, *measured, None, None, None)
        if type(entry) is typed.RoundSettled:
            part = entry.settled_progressive()
            if part is None:
                return _NO_COLUMNS
            return (*_NO_COLUMNS[:8], True, part.wagers, part.unit_cents)
        return _NO_COLUMNS
    seat = getattr(entry, "seat", None)  # declared by the kind's class (``_SEATED_KINDS``)
    # The wire refuses a seat past 0..MAX_SHAPE_SEAT; one past integer would fail the batch's COPY for ever.
    return (
        seat if type(seat) is int and -_MAX_SEAT_COLUMN <= seat <= _MAX_SEAT_COLUMN else None,
        *_NO_COLUMNS[1:],
    )


def locked_wager_rows(
    table_id: str, seq: int, round_id: str | None, entry: typed.BetsLocked
) -> list[tuple[Any, ...]]:
    """A bets_locked's wagers as floor_locked_wagers rows (migration 15): (table, seq, round, seat as the
    entry keys it, wager, cents; cents past bigint NULL, as migration 15's backfill reads them)."""
    return [
        (table_id, seq, round_id, seat, wager, _bigint(cents))
        for seat, wagers in entry.wagers.items()
        for wager, cents in wagers.items()
    ]


def day_figure_rows(table_id: str, seq: int, time_utc: Any, entry: typed.Entry) -> list[tuple[Any, ...]]:
    """An entry's gaming-day figures as floor_day_figures rows (migration 16): (table, seq, time,
    measure, label, numerator, denominator), by ``gaming_day.entry_figures``; none for most entries."""
    figures = entry_figures(entry) if entry.kind in FIGURE_KINDS else None
    if figures is None:
        return []
    return [(table_id, seq, time_utc, *row) for row in figure_rows(figures)]


@dataclass
class Batch:
    """One transaction's rows, and the tables it touched (their floor_tables rows are rewritten)."""

    entries: list[tuple[Any, ...]] = field(default_factory=list)
    locked_wagers: list[tuple[Any, ...]] = field(default_factory=list)  # floor_locked_wagers' rows
    day_figures: list[tuple[Any, ...]] = field(default_factory=list)  # floor_day_figures' rows
    privates: list[tuple[Any, ...]] = field(default_factory=list)
    private_texts: dict[tuple[str, int], str] = field(default_factory=dict)
    entry_hashes: dict[tuple[str, int], str] = field(default_factory=dict)  # this batch's, by (table, seq)
    alerts: list[tuple[Any, ...]] = field(default_factory=list)
    quarantine: list[tuple[Any, ...]] = field(default_factory=list)
    fault_raised: list[tuple[Any, ...]] = field(default_factory=list)
    fault_acked: list[tuple[Any, ...]] = field(default_factory=list)
    fault_cleared: list[tuple[Any, ...]] = field(default_factory=list)
    tables: dict[str, TableProjection] = field(default_factory=dict)

    def add_entry(self, entry: wire.EntryMessage, stream_seq: int) -> None:
        """A taken entry's row, and its fault's alert row (raised, acknowledged or cleared)."""
        self.entries.append(
            (
                entry.table_id,
                entry.seq,
                entry.time_utc,
                entry.time_utc,
                entry.round_id,
                entry.source,
                entry.kind,
                entry.version,
                entry.payload_text,  # the canonical text the hash covers; PostgreSQL parses it as jsonb
                entry.private_digest,
                entry.prev_hash,
                entry.hash,
                stream_seq,
                *entry_columns(entry.kind, entry.entry),
                _TYPED_COLUMNS,
            )
        )
        self.entry_hashes[(entry.table_id, entry.seq)] = entry.hash
        typed_entry = entry.entry
        if entry.kind in FIGURE_KINDS:  # a gaming day's figures: closings, faults, kills, the progressive's
            self.day_figures.extend(day_figure_rows(entry.table_id, entry.seq, entry.time_utc, typed_entry))
        if type(typed_entry) not in _FAULT_CLASSES:  # most entries: one look-up, not three isinstance
            if type(typed_entry) is typed.BetsLocked:
                rows = locked_wager_rows(entry.table_id, entry.seq, entry.round_id, typed_entry)
                self.locked_wagers.extend(rows)
            return
        if isinstance(typed_entry, typed.FaultRaised):
            message = f"table {entry.table_id}: {typed_entry.kind_of_fault}: {typed_entry.reason.message}"
            self.fault_raised.append(
                (
                    entry.table_id,
                    entry.seq,
                    typed_entry.kind_of_fault,
                    typed_entry.severity,
                    message,
                    typed_entry.fault_id,
                )
            )
        elif isinstance(typed_entry, typed.FaultAcknowledged):
            self.fault_acked.append((typed_entry.by, entry.time_utc, entry.table_id, typed_entry.fault_id))
        elif isinstance(typed_entry, typed.FaultCleared):
            self.fault_cleared.append((entry.time_utc, entry.table_id, typed_entry.fault_id))

    def add_private(self, table_id: str, private: wire.PrivateMessage, stream_seq: int) -> None:
        self.privates.append((table_id, private.seq, private.private_text, stream_seq))
        self.private_texts[table_id, private.seq] = private.private_text


# ``load_projections`` lets the event loop run after this many entries folded.
_FOLD_YIELD_EVERY = 500

# A table's tail on the floor: its row, the stream seq of its last entry, and the last stream seq of
# anything the floor holds of it (entries or private parts). What a projection is read back from
# (``load_projection``) and what a projection read ahead is checked against (``load_tails``).
_TAIL_SELECT = (
    "SELECT t.table_id, t.last_seq, t.last_hash, t.quarantined_at_seq, t.quarantine_reason, "
    "(SELECT e.stream_seq FROM floor_entries e "
    "WHERE e.table_id = t.table_id AND e.seq = t.last_seq), "
    "GREATEST((SELECT max(e.stream_seq) FROM floor_entries e WHERE e.table_id = t.table_id), "
    "(SELECT max(p.stream_seq) FROM floor_private p WHERE p.table_id = t.table_id)) "
    "FROM floor_tables t "
)
# (last_seq, last_hash, quarantined_at_seq, quarantine_reason, last_stream_seq, last_seen_stream_seq)
Tail = tuple[int, str, int | None, str | None, int, int]


def _tail(row: tuple[Any, ...]) -> Tail:
    return (int(row[1]), str(row[2]), row[3], row[4], int(row[5] or 0), int(row[6] or 0))


def _projection_at(table_id: str, tail: Tail | None) -> TableProjection:
    projection = TableProjection(table_id, state=TableState(table_id))
    if tail is not None:
        projection.last_seq, projection.last_hash = tail[0], tail[1]
        projection.quarantined_at_seq, projection.quarantine_reason = tail[2], tail[3]
        projection.last_stream_seq, projection.last_seen_stream_seq = tail[4], tail[5]
    return projection


async def load_projection(connection: Connection, table_id: str) -> TableProjection:
    """The table as the floor holds it: its chain's tail, its quarantine, and its entries through the
    reducer (a new table if the floor holds none of it). ``load_projections`` of the one table: one
    read of the stored rows for a table read back at its need and for tables read ahead."""
    projection, _tail_read = (await load_projections(connection, [table_id]))[table_id]
    return projection


async def load_tails(connection: Connection, table_ids: Sequence[str]) -> dict[str, Tail]:
    """The tails of ``table_ids`` the floor holds (a table it holds nothing of is absent), in one read."""
    cursor = await connection.execute(_TAIL_SELECT + "WHERE t.table_id = ANY(%s)", (list(table_ids),))
    return {str(row[0]): _tail(row) for row in await cursor.fetchall()}


async def load_projections(
    connection: Connection, table_ids: Sequence[str]
) -> dict[str, tuple[TableProjection, Tail | None]]:
    """``load_projection`` of many tables in two reads (their tails, then their entries in order), each
    with the tail it was read at: what a partition's next holder reads ahead of its takeover
    (controller/floor/partition_services.py). Entries past a table's tail as read (committed between the
    two reads) are left out, so each projection is exactly its tail's."""
    tails = await load_tails(connection, table_ids)
    read: dict[str, tuple[TableProjection, Tail | None]] = {
        table_id: (_projection_at(table_id, tails.get(table_id)), tails.get(table_id))
        for table_id in table_ids
    }
    cursor = await connection.execute(
        "SELECT table_id, seq, time_text, round_id, source, kind, payload::text FROM floor_entries "
        "WHERE table_id = ANY(%s) ORDER BY table_id, seq",
        (sorted(tails),),
    )
    folded = 0
    async for table_id, seq, time_text, round_id, source, kind, payload_text in cursor:
        folded += 1
        if folded % _FOLD_YIELD_EVERY == 0:
            # The rows come buffered: without a yield the whole fold (seconds, at a thousand tables)
            # held the worker's event loop, its lease renewals with it. A yield, not a wait.
            await asyncio.sleep(0)
        projection, tail = read[table_id]
        if tail is not None and seq <= tail[0]:
            # Through fold_stored: a closing kept for its round's row (the one
            # meters fold, not the reducer's settlement read again).
            fold_stored(
                projection,
                FloorStored(
                    seq, time_text, table_id, round_id, source, typed.decode_public(kind, payload_text)
                ),
            )
    return read


async def stored_hash(connection: Connection, table_id: str, seq: int) -> str | None:
    row = await (
        await connection.execute(
            "SELECT hash FROM floor_entries WHERE table_id = %s AND seq = %s", (table_id, seq)
        )
    ).fetchone()
    return None if row is None else str(row[0])


async def held_private(
    connection: Connection, table_id: str, seq: int
) -> tuple[str | None, str | None] | None:
    """(the entry's commitment, its private text if stored), or None if the floor does not hold the entry."""
    row = await (
        await connection.execute(
            "SELECT e.private_digest, p.private_text FROM floor_entries e LEFT JOIN floor_private p "
            "USING (table_id, seq) WHERE e.table_id = %s AND e.seq = %s",
            (table_id, seq),
        )
    ).fetchone()
    return None if row is None else (row[0], row[1])


# floor_entries.typed_columns (migration 12): this writer's typed columns are filled. The column has no
# default, so a previous release's COPY (without the typed columns) is refused, never stored with them NULL.
# 2 since migration 15: a bets_locked's wagers are written beside it (floor_locked_wagers), and the release
# before, which wrote 1 and no such rows, is refused by the check migration 15 adds.
_TYPED_COLUMNS = 2
_COPY_ENTRIES = (
    "COPY floor_entries (table_id, seq, time_utc, time_text, round_id, source, kind, version, payload, "
    "private_digest, prev_hash, hash, stream_seq, seat, state_to, software_release, software_release_digest, "
    "software_development, clock_offset_us, clock_within_bound, clock_bound_us, progressive_settled, "
    "progressive_wagers, progressive_unit_cents, typed_columns) FROM STDIN"
)
_COPY_PRIVATES = "COPY floor_private (table_id, seq, private_text, stream_seq) FROM STDIN"
COPY_DAY_FIGURES = (
    "COPY floor_day_figures (table_id, seq, time_utc, measure, label, numerator, denominator) FROM STDIN"
)
_COPY_LOCKED_WAGERS = (
    "COPY floor_locked_wagers (table_id, seq, round_id, seat, wager, amount_cents) FROM STDIN"
)


async def _copy(
    cursor: psycopg.AsyncCursor[tuple[Any, ...]], statement: str, rows: list[tuple[Any, ...]]
) -> None:
    """Rows into a table by COPY: the batch's bulk, several times cheaper than one INSERT a row on both
    sides. Like the INSERT it replaces, it never skips a row: a (table, seq) the floor already holds
    fails the whole batch (the checks skip resends before, so that would be a bug, not a resend)."""
    async with cursor.copy(statement) as copy:
        # psycopg's own row formatter (in C) called for each row, its full buffers sent: the same bytes
        # ``await copy.write_row(row)`` sends, without a coroutine a row (it had something to send for
        # one row in a few hundred; the coroutines were a third of the COPY's CPU).
        formatter = copy.formatter
        for row in rows:
            if data := formatter.write_row(row):
                await copy.write(data)


async def write_batch(connection: Connection, batch: Batch) -> None:
    async with connection.cursor() as cursor:
        if batch.entries:
            await _copy(cursor, _COPY_ENTRIES, batch.entries)
        if batch.locked_wagers:
            await _copy(cursor, _COPY_LOCKED_WAGERS, batch.locked_wagers)
        if batch.day_figures:
            await _copy(cursor, COPY_DAY_FIGURES, batch.day_figures)
        if batch.privates:
            await _copy(cursor, _COPY_PRIVATES, batch.privates)
        if batch.quarantine:
            await cursor.executemany(
                "INSERT INTO floor_quarantine (stream_seq, subject, table_id, msg_id, reason, body) "
                "VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (stream_seq) DO NOTHING",
                batch.quarantine,
            )
        if batch.alerts:
            await cursor.executemany(
                "INSERT INTO floor_alerts (table_id, seq, stream_seq, origin, kind, message) "
                "VALUES (%s, %s, %s, 'floor', %s, %s) ON CONFLICT DO NOTHING",
                batch.alerts,
            )
        if batch.fault_raised:
            await cursor.executemany(
                "INSERT INTO floor_alerts (table_id, seq, origin, kind, severity, message, fault_id) "
                "VALUES (%s, %s, 'table', %s, %s, %s, %s) ON CONFLICT DO NOTHING",
                batch.fault_raised,
            )
        if batch.fault_acked:
            await cursor.executemany(
                "UPDATE floor_alerts SET acknowledged_by = %s, acknowledged_utc = %s "
                "WHERE table_id = %s AND fault_id = %s",
                batch.fault_acked,
            )
        if batch.fault_cleared:
            await cursor.executemany(
                "UPDATE floor_alerts SET cleared_utc = %s WHERE table_id = %s AND fault_id = %s",
                batch.fault_cleared,
            )
        rounds = list(round_rows(batch.tables.values()))
        if rounds:
            await _upsert(cursor, _ROUNDS_STATEMENT, rounds)
        if batch.tables:
            rows = [table_row(p, encoded_meters=True) for p in batch.tables.values()]
            await _upsert(cursor, _TABLES_STATEMENT, rows)


# The batch's rounds and tables, each in one statement: its rows as one JSON array (json.dumps, in C),
# each row's columns read back and cast in PostgreSQL. ``executemany`` sent one statement a row, each
# adapted and sent on its own (a batch of a busy floor touches a few hundred of each: that cost more than
# all the entries' COPY); arrays a column (unnest) were worse, psycopg quoting each element with a regex.
# A (table) or (table, round) appears once in a batch (the batch's dicts are keyed by them), as one
# INSERT ... ON CONFLICT DO UPDATE requires.
_ROUND_TYPES = (
    "text", "text", "text", "bigint", "timestamptz", "text", "bigint", "timestamptz", "jsonb", "bigint",
    "bigint", "bigint", "bigint",
)  # fmt: skip
_ROUNDS_UPSERT = (
    "INSERT INTO floor_rounds (table_id, round_id, game, started_seq, started_utc, status, closed_seq, "
    "closed_utc, settlement, handle_cents, house_win_cents, rake_cents, theoretical_win_cents) "
    "SELECT {columns} FROM jsonb_array_elements(%s::jsonb) AS r "
    "ON CONFLICT (table_id, round_id) DO UPDATE SET game = excluded.game, "
    "started_seq = COALESCE(excluded.started_seq, floor_rounds.started_seq), "
    "started_utc = COALESCE(excluded.started_utc, floor_rounds.started_utc), status = excluded.status, "
    "closed_seq = excluded.closed_seq, closed_utc = excluded.closed_utc, "
    "settlement = excluded.settlement, handle_cents = excluded.handle_cents, "
    "house_win_cents = excluded.house_win_cents, rake_cents = excluded.rake_cents, "
    "theoretical_win_cents = excluded.theoretical_win_cents"
)
_TABLE_TYPES = (
    "text", "text", "bigint", "text", "bigint", "text", "text", "boolean", "boolean", "text", "integer",
    "jsonb", "timestamptz",
)  # fmt: skip
_TABLES_UPSERT = (
    "INSERT INTO floor_tables (table_id, game, last_seq, last_hash, quarantined_at_seq, "
    "quarantine_reason, phase, held, table_open, last_round_id, open_alerts, meters, last_entry_utc, "
    "updated_utc) SELECT {columns}, now() FROM jsonb_array_elements(%s::jsonb) AS r "
    "ON CONFLICT (table_id) DO UPDATE SET game = excluded.game, last_seq = excluded.last_seq, "
    "last_hash = excluded.last_hash, quarantined_at_seq = excluded.quarantined_at_seq, "
    "quarantine_reason = excluded.quarantine_reason, phase = excluded.phase, held = excluded.held, "
    "table_open = excluded.table_open, last_round_id = excluded.last_round_id, "
    "open_alerts = excluded.open_alerts, meters = excluded.meters, "
    "last_entry_utc = excluded.last_entry_utc, updated_utc = now()"
)


def _column(index: int, kind: str) -> str:
    if kind == "jsonb":  # the value itself; a JSON null is SQL NULL
        return f"nullif(r->{index}, 'null'::jsonb)"
    return f"(r->>{index})::{kind}"


def _statement(template: str, types: tuple[str, ...]) -> str:
    return template.format(columns=", ".join(_column(i, kind) for i, kind in enumerate(types)))


_ROUNDS_STATEMENT = _statement(_ROUNDS_UPSERT, _ROUND_TYPES)
_TABLES_STATEMENT = _statement(_TABLES_UPSERT, _TABLE_TYPES)


# The upserts' document writer: msgspec's, in C and without json.dumps's per-value Python dispatch
# (json.dumps of a batch's rows was 5% of the service's CPU in catch-up: docs/floor.md "The sixth stop").
_ROWS_ENCODER = msgspec.json.Encoder()


def rows_document(rows: list[tuple[Any, ...]]) -> str:
    """The rows as one JSON document: the same values ``json.dumps(rows, ensure_ascii=False)`` writes
    (only spelled otherwise where JSON allows: no escapes of non-ASCII, ``1e16`` for ``1e+16``), which
    is all PostgreSQL's jsonb reads of it. A row msgspec cannot write (a value not JSON's own, a lone
    surrogate) goes through json.dumps as before, so it fails, or is written, as it did."""
    try:
        return _ROWS_ENCODER.encode(rows).decode("utf-8")
    except (msgspec.EncodeError, TypeError, ValueError, OverflowError):
        return json.dumps(rows, ensure_ascii=False, default=_raw_value)


def _raw_value(value: object) -> Any:
    """For json.dumps: a value kept as msgspec's JSON (``_meters_value``) as the document it was written
    from (read back: the same keys in the same order, the same values), so json.dumps writes what it
    wrote of the document itself."""
    if isinstance(value, msgspec.Raw):
        return json.loads(bytes(value))
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


async def _upsert(
    cursor: psycopg.AsyncCursor[tuple[Any, ...]], statement: str, rows: list[tuple[Any, ...]]
) -> None:
    # The rows as they are: ``table_row`` and ``round_rows`` give JSON's own values (a jsonb column's
    # value as its dict), so the document is one encode, in C, with no pass over every value (a pass
    # that unwrapped psycopg's Jsonb was a tenth of a batch's writes).
    await cursor.execute(statement, (rows_document(rows),))


# Each table's meters document as JSON, written once while it is the same document: a catch-up's batch
# rewrites every touched table's row (about 300 a batch at 300 tables), and few of those tables had a
# meter moved since their last row; their meters were three quarters of the tables' document's encode
# (docs/floor.md "Eleventh stop"). ``TableProjection.meters_json`` is replaced, never changed in place
# (checks.fold_entry sets it None when an entry moves a meter), so the document it is tells the JSON.
# Bounded, as the tables are hostile.
_METERS_KEPT = 8_192
_meters_encoded: dict[str, tuple[dict[str, Any], msgspec.Raw]] = {}


def _meters_value(projection: TableProjection, meters: dict[str, Any]) -> dict[str, Any] | msgspec.Raw:
    """The table's meters document as JSON: written before for the same document, else now (the
    document itself if msgspec cannot write it: ``rows_document``'s json.dumps then writes it, or fails,
    as before)."""
    kept = _meters_encoded.get(projection.table_id)
    if kept is not None and kept[0] is meters:
        return kept[1]
    try:
        encoded = msgspec.Raw(_ROWS_ENCODER.encode(meters))
    except (msgspec.EncodeError, TypeError, ValueError, OverflowError):
        return meters
    if len(_meters_encoded) >= _METERS_KEPT:
        _meters_encoded.clear()
    _meters_encoded[projection.table_id] = (meters, encoded)
    return encoded


def table_row(projection: TableProjection, *, encoded_meters: bool = False) -> tuple[Any, ...]:
    """The table's floor_tables row; ``encoded_meters``: its meters as their JSON (``_meters_value``),
    for the upsert's document, not as the document's value."""
    state = projection.state
    meters = projection.meters_json
    if meters is None:  # an entry moved a meter since it was built (checks.fold_entry), or it never was
        meters = projection.meters_json = state.meters.to_json()
    value: dict[str, Any] | msgspec.Raw = _meters_value(projection, meters) if encoded_meters else meters
    return (
        projection.table_id,
        state.game,
        projection.last_seq,
        projection.last_hash,
        projection.quarantined_at_seq,
        projection.quarantine_reason,
        state.phase,
        state.held,
        state.table_open,
        state.last_round_id,
        len(state.open_alerts),
        value,  # jsonb: the document's own value, or its JSON (``_upsert``, ``encoded_meters``)
        state.last_entry_utc or None,
    )


# A closed round's figures (handle, house win, rake, theoretical) as ``round_rows`` last counted them, by
# (table, round), with what they were counted from: a round is touched again by the entries after its
# closing (its state's changes to paying, complete), and a catch-up's batch holds hundreds of such rounds,
# each counted again through the meters fold and the par sheet (docs/floor.md "Eleventh stop"). Used only
# while the same closing entry, settlement, status and game are the round's (each is replaced, never
# changed in place, by the reducer: ``TableState._on_closing``); bounded, as the tables are hostile.
_ROUND_FIGURES_KEPT = 8_192
_round_figures: dict[tuple[str, str], tuple[object, object, str, str, tuple[int, int, int, int]]] = {}


def _closed_round_figures(
    projection: TableProjection, round_id: str, round_state: Any
) -> tuple[int, int, int, int]:
    """(handle, house win, rake, theoretical win) of a closed round with a settlement."""
    # The one meters fold (Meters.count) of the round's typed closing entry, as the reducer, the stored
    # totals and the gaming day count it. The projection keeps the closing of every round its reducer
    # holds (``TableProjection.keep_closing``); were one missing, the reducer's settlement is counted
    # through the same fold, as the view of its closing (and not kept: no entry to tell it by).
    closing: ClosingEntry | EntryView | None = projection.closings.get(round_id)
    key = (projection.table_id, round_id)
    settlement, status, game = round_state.settlement, round_state.status, round_state.game
    if closing is not None:
        kept = _round_figures.get(key)
        if kept is not None and kept[0] is closing and kept[1] is settlement and kept[2:4] == (status, game):
            return kept[4]
    else:
        closing = EntryView(_CLOSING_KIND_BY_STATUS[status], {"settlement": settlement}, None)
    meters = Meters()
    meters.count(closing, round_id)
    theoretical = theoretical_win_cents(game, settlement) if status == "settled" else 0
    figures = (meters.handle_cents, meters.house_win_cents, meters.rake_cents, theoretical)
    if type(closing) is not EntryView:
        if len(_round_figures) >= _ROUND_FIGURES_KEPT:
            _round_figures.clear()
        _round_figures[key] = (closing, settlement, status, game, figures)
    return figures


def round_rows(projections: Iterable[TableProjection]) -> Iterable[tuple[Any, ...]]:
    for projection in projections:
        for round_id in sorted(projection.touched_rounds):
            round_state = projection.state.round(round_id)
            if round_state is None:
                continue
            handle = win = rake = theoretical = 0
            if round_state.settlement is not None and round_state.status != "in_progress":
                handle, win, rake, theoretical = _closed_round_figures(projection, round_id, round_state)
            yield (
                projection.table_id,
                round_id,
                round_state.game,
                round_state.started_seq or None,
                round_state.started_utc or None,
                round_state.status,
                round_state.closed_seq,
                round_state.closed_utc or None,
                round_state.settlement or None,  # jsonb: the document's own value (``_upsert``)
                handle,
                win,
                rake,
                theoretical,
            )

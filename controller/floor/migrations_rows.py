"""The floor's schema migrations from version 15 on (docs/floor.md "Schema"): rows of their own for what
an entry holds as a map, written at commit from the typed entry, so no reader of the floor parses a
payload's JSON. Versions 1 to 14 are controller/floor/migrations.py's; controller/floor/schema.py applies
both lists in order. As there, a migration's text, once released, is never edited.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import psycopg

from controller.errors import UserError
from controller.floor.migrations import Migration

Cursor = psycopg.Cursor[tuple[Any, ...]]


@dataclass(frozen=True, slots=True)
class BackfilledMigration(Migration):
    """A migration whose rows before it are filled by Python after its SQL, in the same transaction
    (controller/floor/schema.py ``migrate``): what only the typed classes and the catalogue can compute
    (a round's theoretical win), read through the same function the writer calls at commit."""

    backfill: Callable[[Cursor], None]


# Rows read and written per step of a backfill: a busy floor's history is not held in memory at once.
_BACKFILL_ROWS = 5_000


def _backfill_day_figures(cursor: Cursor) -> None:
    """floor_day_figures of every entry written before migration 16, from its payload through its typed
    entry: the same rows the writer makes at commit (controller/floor/store.py ``day_figure_rows``)."""
    # The writer's own code, loaded only when a floor is migrated (the store and the catalogue).
    from controller.floor.gaming_day import FIGURE_KINDS  # noqa: PLC0415
    from controller.floor.store import COPY_DAY_FIGURES, day_figure_rows  # noqa: PLC0415
    from controller.journal import entries as typed  # noqa: PLC0415

    # The read is one pass over every entry of these kinds. PostgreSQL plans a cursor for a tenth of its
    # rows (cursor_tuple_fraction 0.1): a walk of the primary key's index over the whole floor, a random
    # heap read an entry (the heap holds the tables interleaved, in arrival order): 20.3 s of PostgreSQL's
    # CPU on 5M entries. Told the cursor is read to its end: one sequential scan and a sort, 4.3 s
    # (docs/operations.md "Upgrading a floor with history"). For this read only: set back after it.
    cursor.execute("SELECT current_setting('cursor_tuple_fraction')")
    fraction_row = cursor.fetchone()
    cursor.execute("SELECT set_config('cursor_tuple_fraction', '1', true)")
    with cursor.connection.cursor(name="floor_day_figures_backfill") as reading:
        reading.execute(
            "SELECT table_id, seq, time_utc, kind, payload::text FROM floor_entries "
            "WHERE kind = ANY(%s) ORDER BY table_id, seq",
            (sorted(FIGURE_KINDS),),
        )
        while batch := reading.fetchmany(_BACKFILL_ROWS):
            rows: list[tuple[Any, ...]] = []
            for table_id, seq, time_utc, kind, payload_text in batch:
                try:
                    entry = typed.decode_public(kind, payload_text)
                except typed.EntryError as error:
                    # Refused, not skipped: an entry left out would make its gaming day silently wrong.
                    # The migration's one transaction rolls back: the floor stays at the version before.
                    reason = str(error).splitlines()[0] if str(error) else type(error).__name__
                    raise UserError(
                        f"init-db: table {table_id} entry {seq}: its stored {kind} payload is one this "
                        f"release's classes refuse ({reason}); migration 16 not applied"
                    ) from None
                rows.extend(day_figure_rows(table_id, seq, time_utc, entry))
            if rows:
                with cursor.copy(COPY_DAY_FIGURES) as copy:
                    for row in rows:
                        copy.write_row(row)
    if fraction_row is not None:
        cursor.execute("SELECT set_config('cursor_tuple_fraction', %s, true)", (str(fraction_row[0]),))


MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        15,
        "the wagers a bets_locked locked, one row each, for the progressive's reconciliation",
        """
-- First the lock the check below takes anyway, before the backfill: a previous release's writer with a
-- batch open waits here until it commits (then the backfill, a statement later, reads its bets_locked),
-- and one that starts later waits for this transaction's end (then the check refuses it). Taken at the
-- check, after the backfill, a lock committed in between had neither the wagers' rows nor the check.
LOCK TABLE floor_entries IN SHARE ROW EXCLUSIVE MODE;
-- docs/floor.md "Schema": a bets_locked's wagers (a map by seat, then wager) as rows, written by the floor
-- service at commit from the typed entry (controller/floor/store.py ``locked_wager_rows``), which the
-- reconciliation of the linked progressive reads (controller/floor/queries.py _ROUNDS_COMPARED) instead
-- of the payload's JSON. The seat as the entry keys it (text); an amount past bigint NULL, as at commit.
CREATE TABLE floor_locked_wagers (
    table_id text NOT NULL,
    seq bigint NOT NULL,       -- the bets_locked entry's (floor_entries' key)
    round_id text,
    seat text NOT NULL,
    wager text NOT NULL,
    amount_cents bigint,
    PRIMARY KEY (table_id, seq, seat, wager)
);
CREATE TRIGGER floor_locked_wagers_append_only BEFORE UPDATE OR DELETE ON floor_locked_wagers
    FOR EACH ROW EXECUTE FUNCTION floor_refuse_change();
-- Outside the entry's hash: a row of an entry the floor does not hold is refused here (and each row is
-- recomputed from its entry by floor verify, controller/floor/verify.py). A foreign key's check, but one
-- anti-join a statement (a COPY) instead of a row lock on the entry a row: a FOREIGN KEY cost the batch's
-- COPY 70% more of PostgreSQL's CPU (docs/floor.md "Schema", bench/bench_floor_row_keys.py), and the lock
-- guards nothing here: floor_entries refuses UPDATE and DELETE by trigger. The same SQLSTATE (23503).
CREATE FUNCTION floor_refuse_rows_without_entry() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM added a WHERE NOT EXISTS (
            SELECT 1 FROM floor_entries e WHERE e.table_id = a.table_id AND e.seq = a.seq)) THEN
        RAISE foreign_key_violation
            USING MESSAGE = TG_TABLE_NAME || ': a row of an entry the floor does not hold';
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER floor_locked_wagers_of_entries AFTER INSERT ON floor_locked_wagers
    REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION floor_refuse_rows_without_entry();
-- The locks written before this migration, backfilled once from their payloads: the one place that reads
-- that JSON (the same map BetsLocked declares: a payload the class refused was never stored).
INSERT INTO floor_locked_wagers (table_id, seq, round_id, seat, wager, amount_cents)
SELECT e.table_id, e.seq, e.round_id, s.key, w.key,
       CASE WHEN jsonb_typeof(w.value) = 'number' AND (w.value::text) ~ '^-?[0-9]{1,19}$'
                 AND (w.value::text)::numeric BETWEEN -9223372036854775808 AND 9223372036854775807
            THEN (w.value::text)::bigint END
FROM floor_entries e
CROSS JOIN LATERAL jsonb_each(CASE WHEN jsonb_typeof(e.payload -> 'wagers') = 'object'
                                   THEN e.payload -> 'wagers' ELSE '{}'::jsonb END) s
CROSS JOIN LATERAL jsonb_each(CASE WHEN jsonb_typeof(s.value) = 'object' THEN s.value ELSE '{}'::jsonb END) w
WHERE e.kind = 'bets_locked';
-- This release's writer marks its rows 2 (its COPY writes the lock's rows beside the entry). The release
-- before wrote 1 and no such rows: left running after init-db, its COPY is refused rather than storing a
-- lock the reconciliation would not see (its batch NAKed, taken again by this release's service). NOT
-- VALID: the rows already held keep their 0 or 1; only new rows are checked.
ALTER TABLE floor_entries ADD CONSTRAINT floor_entries_locked_wager_rows CHECK (typed_columns >= 2) NOT VALID;
""",
    ),
    BackfilledMigration(
        16,
        "each entry's gaming-day figures, one row a measure, for the gaming-day report",
        """
-- docs/floor.md "Schema": what each entry adds to its table's gaming day (controller/floor/gaming_day.py
-- ``entry_figures``: rounds by how they closed, handle, win, dead hands, faults, kills, overrides, the
-- progressive's contributions and awards, each wager's handle, the game, the exact theoretical win as a
-- fraction), written by the floor service at commit from the typed entry (controller/floor/store.py
-- ``day_figure_rows``), which the gaming-day report sums (controller/floor/queries.py DAY_FIGURES_SQL)
-- instead of folding payloads. Written by the same release as migration 15: its rows are marked 2 too.
CREATE TABLE floor_day_figures (
    table_id text NOT NULL,
    seq bigint NOT NULL,              -- the entry's (floor_entries' key)
    time_utc timestamptz NOT NULL,    -- the entry's time: a gaming day is a range of these
    measure text NOT NULL,
    label text NOT NULL,              -- a wager's or a game's name; '' for the others
    numerator numeric NOT NULL,
    denominator numeric NOT NULL,     -- 1 but for the theoretical win's fraction
    PRIMARY KEY (table_id, seq, measure, label)
);
CREATE INDEX floor_day_figures_by_time ON floor_day_figures (time_utc);
CREATE TRIGGER floor_day_figures_append_only BEFORE UPDATE OR DELETE ON floor_day_figures
    FOR EACH ROW EXECUTE FUNCTION floor_refuse_change();
-- As floor_locked_wagers' (migration 15): a row of an entry the floor does not hold refused, one
-- anti-join a statement; each row checked against its entry by floor verify.
CREATE TRIGGER floor_day_figures_of_entries AFTER INSERT ON floor_day_figures
    REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION floor_refuse_rows_without_entry();
-- The entries before this migration are backfilled after this text, in the same transaction, by Python
-- (migrations_rows.py ``_backfill_day_figures``): the theoretical win is the catalogue's, not SQL's.
""",
        _backfill_day_figures,
    ),
)

"""A linked progressive's data in a real floor database, for the floor panel's progressive tests.

``LINK_DDL`` is the link controller's store as controller/floor/progressive_view.py reads it (the
columns it names, nothing more); where the floor's migrations create these tables, ``create_link_tables``
leaves them be. The rows are what the link controller and the floor service write: the link's
parameters and meters, its count of each round's locked wagers, its hits in order; the tables' own
``bets_locked`` entries and closed rounds as the floor service projects them from their journals.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import psycopg

from controller.floor.embedded import EmbeddedFloor
from controller.floor.schema import REPORTING_ROLE, WRITER_ROLE
from controller.rules.progressive import DEFAULT_PROGRESSIVE_PAYTABLE

LINK_DDL = """
CREATE TABLE IF NOT EXISTS floor_progressive_links (
    link_id text PRIMARY KEY, name text NOT NULL DEFAULT '',
    unit_cents bigint NOT NULL, base_cents bigint NOT NULL, reset_cents bigint NOT NULL,
    increment_bp integer NOT NULL, hidden_bp integer NOT NULL, limit_cents bigint,
    paytable jsonb NOT NULL,
    meter_cents bigint NOT NULL, reserve_cents bigint NOT NULL DEFAULT 0,
    overflow_cents bigint NOT NULL DEFAULT 0, updated_utc timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE IF NOT EXISTS floor_progressive_link_tables (
    link_id text NOT NULL, table_id text NOT NULL, PRIMARY KEY (link_id, table_id)
);
CREATE TABLE IF NOT EXISTS floor_progressive_rounds (
    link_id text NOT NULL, table_id text NOT NULL, round_id text NOT NULL,
    wagers integer NOT NULL, in_meter_cents bigint NOT NULL,
    to_meter_cents bigint NOT NULL DEFAULT 0, to_hidden_cents bigint NOT NULL DEFAULT 0,
    to_overflow_cents bigint NOT NULL DEFAULT 0, recorded_utc timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (link_id, table_id, round_id)
);
CREATE TABLE IF NOT EXISTS floor_progressive_hits (
    hit_id bigserial PRIMARY KEY, link_id text NOT NULL, table_id text NOT NULL, round_id text NOT NULL,
    seat integer NOT NULL, line integer NOT NULL, award_cents bigint NOT NULL, meter_before_cents bigint,
    status text NOT NULL CHECK (status IN ('pending', 'paid')),
    recorded_utc timestamptz NOT NULL DEFAULT now(), paid_utc timestamptz, confirmed_by text
);
"""
LINK_TABLES = (
    "floor_progressive_links",
    "floor_progressive_link_tables",
    "floor_progressive_rounds",
    "floor_progressive_hits",
)

UNIT_CENTS = 100
# The day shift of 5 December 2026 (06-14 UTC), and the grave shift before it.
DAY = "2026-12-05T10:00:00+00:00"
GRAVE = "2026-12-05T03:00:00+00:00"


def create_link_tables(floor: EmbeddedFloor) -> None:
    with psycopg.connect(floor.owner_dsn, autocommit=True) as connection:
        connection.execute(LINK_DDL.encode())
        for table in LINK_TABLES:
            connection.execute(f"GRANT SELECT ON {table} TO {REPORTING_ROLE}, {WRITER_ROLE}".encode())


@dataclass
class LinkData:
    """Rows of one link written as its controller and the floor service would write them."""

    floor: EmbeddedFloor
    link_id: str = "L1"
    seqs: dict[str, int] | None = None

    def _execute(self, sql: str, params: tuple[Any, ...]) -> None:
        with psycopg.connect(self.floor.owner_dsn, autocommit=True) as connection:
            connection.execute(sql.encode(), params)

    def link(self, *, meter_cents: int, name: str = "Top Flush Progressive", tables: tuple[str, ...]) -> None:
        self._execute(
            "INSERT INTO floor_progressive_links (link_id, name, unit_cents, base_cents, reset_cents, "
            "increment_bp, hidden_bp, limit_cents, paytable, meter_cents, reserve_cents, overflow_cents) "
            "VALUES (%s, %s, %s, 1000000, 1000000, 1500, 500, 20000000, %s, %s, 4500, 0)",
            (self.link_id, name, UNIT_CENTS, json.dumps(DEFAULT_PROGRESSIVE_PAYTABLE.to_json()), meter_cents),
        )
        for table_id in tables:
            self._execute(
                "INSERT INTO floor_progressive_link_tables (link_id, table_id) VALUES (%s, %s)",
                (self.link_id, table_id),
            )

    def table_round(
        self, table_id: str, round_id: str, *, locked: dict[int, int], counted: int | None, closed: str = DAY
    ) -> None:
        """A closed round at ``table_id``: its journal's bets_locked entry (``locked``: seat -> cents of
        the progressive wager, beside an ante of 500 on every seat) and its floor round; ``counted``: the
        wagers the controller counted for it (None: the controller has no count of the round)."""
        self.seqs = self.seqs or {}
        seq = self.seqs[table_id] = self.seqs.get(table_id, 0) + 1
        wagers = {str(seat): {"ante": 500, "progressive": cents} for seat, cents in locked.items()}
        wagers["7"] = {"ante": 500}  # a seat without the progressive wager
        self._execute(
            "INSERT INTO floor_entries (table_id, seq, time_utc, time_text, round_id, source, kind, version, "
            "payload, prev_hash, hash, stream_seq) VALUES (%s, %s, %s, %s, %s, 'engine', 'bets_locked', 1, "
            "%s, %s, %s, %s)",
            (
                table_id,
                seq,
                closed,
                closed,
                round_id,
                json.dumps({"wagers": wagers}),
                "0" * 64,
                f"{seq:064x}",
                seq,
            ),
        )
        self._execute(
            "INSERT INTO floor_rounds (table_id, round_id, game, status, started_utc, closed_utc) "
            "VALUES (%s, %s, 'top-flush', 'settled', %s, %s)",
            (table_id, round_id, closed, closed),
        )
        if counted is not None:
            wagers_counted = counted // UNIT_CENTS
            self._execute(
                "INSERT INTO floor_progressive_rounds (link_id, table_id, round_id, wagers, in_meter_cents, "
                "to_meter_cents, to_hidden_cents, to_overflow_cents, recorded_utc) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s, 0, %s)",
                (
                    self.link_id,
                    table_id,
                    round_id,
                    wagers_counted,
                    counted,
                    counted * 15 // 100,
                    counted * 5 // 100,
                    closed,
                ),
            )

    def hit(  # noqa: PLR0917 - one hit's columns
        self,
        table_id: str,
        round_id: str,
        seat: int,
        line: int,
        award_cents: int,
        status: str,
        meter_before_cents: int | None = None,
    ) -> None:
        self._execute(
            "INSERT INTO floor_progressive_hits (link_id, table_id, round_id, seat, line, award_cents, "
            "meter_before_cents, status, recorded_utc, paid_utc, confirmed_by) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
            (
                self.link_id,
                table_id,
                round_id,
                seat,
                line,
                award_cents,
                meter_before_cents,
                status,
                DAY,
                DAY if status == "paid" else None,
                "mo" if status == "paid" else None,
            ),
        )

    def set_meter(self, meter_cents: int) -> None:
        self._execute(
            "UPDATE floor_progressive_links SET meter_cents = %s, updated_utc = now() WHERE link_id = %s",
            (meter_cents, self.link_id),
        )

    def set_counted(self, table_id: str, round_id: str, counted: int) -> None:
        self._execute(
            "UPDATE floor_progressive_rounds SET in_meter_cents = %s, wagers = %s "
            "WHERE link_id = %s AND table_id = %s AND round_id = %s",
            (counted, counted // UNIT_CENTS, self.link_id, table_id, round_id),
        )


def standard_link(floor: EmbeddedFloor) -> LinkData:
    """Link L1 over T1-T3: every round agrees but T3's day-shift round R31, where the journal locked three
    wagers (3.00) and the controller counted two (2.00); a paid 5-card hit and a pending 7-card one."""
    create_link_tables(floor)
    data = LinkData(floor)
    data.link(meter_cents=1_234_567, tables=("T1", "T2", "T3"))
    data.table_round("T1", "R11", locked={1: 100, 3: 100}, counted=200)
    data.table_round("T1", "R12", locked={1: 100, 3: 100}, counted=200)
    data.table_round("T1", "R10", locked={2: 100}, counted=100, closed=GRAVE)
    data.table_round("T2", "R21", locked={1: 100}, counted=100)
    data.table_round("T3", "R31", locked={1: 100, 2: 100, 4: 100}, counted=200)
    data.hit("T1", "R12", 3, 5, 50_000, "paid")
    data.hit("T2", "R21", 1, 7, 1_234_000, "pending", meter_before_cents=1_234_000)
    return data

"""A linked progressive's data in a real floor database, for the floor panel's progressive tests.

The link's store is written by the real progressive controller (controller/progressive: its model
decides every event, as on the floor) through :class:`FloorRowsStore`, which keeps the events as the
linked deployment keeps them in PostgreSQL: one row per event in the controller's order, and the link's
row with its meter and every 1.39A meter folded (``MeterState.to_json``). ``LINK_DDL`` is that store's
schema (the floor's migration of the linked deployment), created here only where the floor's own
migrations have not. The tables' side is what the floor service projects from their journals: each
round's ``bets_locked`` entry, a dead seat's ``dead_hand``, and the floor round as it closed.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import psycopg

from controller.floor.embedded import EmbeddedFloor
from controller.floor.schema import REPORTING_ROLE, WRITER_ROLE
from controller.journal import entries as e
from controller.progressive import model
from controller.progressive.controller import ProgressiveController
from controller.progressive.model import Hit

LINK_DDL = """
CREATE TABLE floor_progressive_links (
    link_id text PRIMARY KEY,
    meter_id text NOT NULL,
    tables text[] NOT NULL DEFAULT '{}',
    events bigint NOT NULL DEFAULT 0,
    meter_cents bigint NOT NULL DEFAULT 0,
    reserve_cents bigint NOT NULL DEFAULT 0,
    pending_awards integer NOT NULL DEFAULT 0,
    state jsonb NOT NULL DEFAULT '{}',
    updated_utc timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE TABLE floor_progressive_events (
    link_id text NOT NULL REFERENCES floor_progressive_links (link_id),
    event_no bigint NOT NULL CHECK (event_no > 0),
    kind text NOT NULL,
    table_id text,
    round_id text,
    award_id text,
    claim_number integer,
    amount_cents bigint,
    entry jsonb NOT NULL,
    committed_utc timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (link_id, event_no)
);
CREATE VIEW floor_progressive_awards AS
    SELECT c.link_id, c.claim_number, c.award_id, c.table_id, c.round_id,
           (c.entry->>'seat')::integer AS seat, (c.entry->>'line')::integer AS line,
           c.amount_cents, c.entry->>'paid_from' AS paid_from,
           (c.entry->>'needs_confirmation')::boolean AS needs_confirmation,
           (c.entry->>'meter_before_cents')::bigint AS meter_before_cents,
           (c.entry->>'meter_after_cents')::bigint AS meter_after_cents,
           c.event_no AS claimed_event_no, c.committed_utc AS claimed_utc,
           p.event_no AS paid_event_no, p.committed_utc AS paid_utc, p.entry->>'by' AS paid_by,
           CASE WHEN p.event_no IS NULL THEN 'pending' ELSE 'paid' END AS status
    FROM floor_progressive_events c
    LEFT JOIN floor_progressive_events p
        ON p.link_id = c.link_id AND p.award_id = c.award_id AND p.kind = 'progressive_award_paid'
    WHERE c.kind = 'progressive_award_claimed';
"""
LINK_RELATIONS = ("floor_progressive_links", "floor_progressive_events", "floor_progressive_awards")

UNIT_CENTS = 100
# The day shift of 5 December 2026 (06-14 UTC), and the grave shift before it.
DAY = "2026-12-05T10:00:00+00:00"
GRAVE = "2026-12-05T03:00:00+00:00"


def create_link_tables(floor: EmbeddedFloor) -> None:
    with psycopg.connect(floor.owner_dsn, autocommit=True) as connection:
        row = connection.execute("SELECT to_regclass('floor_progressive_events') IS NOT NULL").fetchone()
        if row is not None and row[0]:
            return  # the floor's migrations made them
        connection.execute(LINK_DDL.encode())
        for relation in LINK_RELATIONS:
            connection.execute(f"GRANT SELECT ON {relation} TO {REPORTING_ROLE}, {WRITER_ROLE}".encode())


@dataclass
class FloorRowsStore:
    """The controller's store as rows of the floor's PostgreSQL (what the linked deployment keeps):
    each commit one transaction, the events in order, the link's row with every meter folded."""

    dsn: str
    link_id: str
    tables: tuple[str, ...]
    committed_utc: str = DAY  # when the next commit happens, as the test says (no wall clock)
    entries: list[e.Entry] = field(default_factory=list)

    def load(self) -> list[e.Entry]:
        return list(self.entries)

    def commit(self, entries: Sequence[e.Entry]) -> None:
        state = model.fold([*self.entries, *entries])
        with psycopg.connect(self.dsn) as connection, connection.transaction():
            connection.execute(
                "INSERT INTO floor_progressive_links (link_id, meter_id, tables) VALUES (%s, %s, %s) "
                "ON CONFLICT (link_id) DO NOTHING",
                (self.link_id, state.meter_id, list(self.tables)),
            )
            for number, entry in enumerate(entries, start=len(self.entries) + 1):
                public = e.public_dict(entry)
                connection.execute(
                    "INSERT INTO floor_progressive_events (link_id, event_no, kind, table_id, round_id, "
                    "award_id, claim_number, amount_cents, entry, committed_utc) "
                    "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                    (
                        self.link_id,
                        number,
                        entry.kind,
                        public.get("table_id"),
                        public.get("round_id"),
                        public.get("award_id"),
                        public.get("claim_number"),
                        public.get("amount_cents"),
                        json.dumps(public),
                        self.committed_utc,
                    ),
                )
            connection.execute(
                "UPDATE floor_progressive_links SET events = %s, meter_cents = %s, reserve_cents = %s, "
                "pending_awards = %s, state = %s, updated_utc = clock_timestamp() WHERE link_id = %s",
                (
                    len(self.entries) + len(entries),
                    state.meter_cents,
                    state.reserve_cents,
                    len(state.pending()),
                    json.dumps(state.to_json()),
                    self.link_id,
                ),
            )
        self.entries.extend(entries)


@dataclass
class LinkData:
    """One link: its controller (the real one, over :class:`FloorRowsStore`) and the tables' side."""

    floor: EmbeddedFloor
    tables: tuple[str, ...]
    link_id: str = "L1"
    seqs: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        create_link_tables(self.floor)
        self.store = FloorRowsStore(self.floor.owner_dsn, self.link_id, self.tables)
        self.controller = ProgressiveController(self.store)
        parameters = model.parse_parameters({
            "unit_cents": UNIT_CENTS, "base_cents": 1_000_000, "reset_cents": 1_000_000,
            "increment_percent": 15, "hidden_percent": 5, "limit_cents": 20_000_000,
            "paytable": "progressive",
        })  # fmt: skip
        self.controller.open_now(f"meter-{self.link_id}", parameters, by="mo")

    def _execute(self, sql: str, params: tuple[Any, ...]) -> None:
        with psycopg.connect(self.floor.owner_dsn, autocommit=True) as connection:
            connection.execute(sql.encode(), params)

    def _entry(self, table_id: str, round_id: str, kind: str, payload: dict[str, Any], at: str) -> None:
        seq = self.seqs[table_id] = self.seqs.get(table_id, 0) + 1
        self._execute(
            "INSERT INTO floor_entries (table_id, seq, time_utc, time_text, round_id, source, kind, "
            "version, payload, prev_hash, hash, stream_seq) "
            "VALUES (%s, %s, %s, %s, %s, 'engine', %s, 1, %s, %s, %s, %s)",
            (table_id, seq, at, at, round_id, kind, json.dumps(payload), "0" * 64, f"{seq:064x}", seq),
        )

    def table_round(
        self,
        table_id: str,
        round_id: str,
        *,
        locked: Sequence[int],
        counted: int | None,
        closed: str = DAY,
        status: str = "settled",
        dead_seats: Sequence[int] = (),
    ) -> None:
        """A round at ``table_id`` as the floor holds it: its bets_locked entry (a Progressive wager of
        one unit on each seat of ``locked``, an ante on each, and a seat 7 with an ante alone), a
        dead_hand entry per dead seat, its floor round ``status`` closed at ``closed``; and the wagers
        the controller was told of (``counted``; None: never told)."""
        wagers = {str(seat): {"ante": 500, "progressive": UNIT_CENTS} for seat in locked}
        wagers["7"] = {"ante": 500}
        self._entry(table_id, round_id, "bets_locked", {"wagers": wagers}, closed)
        for seat in dead_seats:
            self.dead_hand(table_id, round_id, seat, closed)
        self._execute(
            "INSERT INTO floor_rounds (table_id, round_id, game, status, started_utc, closed_utc) "
            "VALUES (%s, %s, 'top-flush', %s, %s, %s)",
            (table_id, round_id, status, closed, closed),
        )
        if counted is not None:
            self.store.committed_utc = closed
            self.controller.contribute_now(table_id, round_id, counted)

    def dead_hand(self, table_id: str, round_id: str, seat: int, at: str = DAY) -> None:
        """A seat's dead_hand entry reaching the floor (its wager returned)."""
        reason = {"code": "killed", "text": "exposed hand"}
        self._entry(table_id, round_id, "dead_hand", {"seat": seat, "reason": reason}, at)

    def claim(self, table_id: str, round_id: str, seat: int, run_length: int, at: str = DAY) -> None:
        self.store.committed_utc = at
        self.controller.claim_now(table_id, round_id, [Hit(seat, run_length)])


def later(moment: str, seconds: int) -> str:
    return (dt.datetime.fromisoformat(moment) + dt.timedelta(seconds=seconds)).isoformat()


def standard_link(floor: EmbeddedFloor) -> LinkData:
    """Link L1 over T1-T3, every round counted as its journal says but T3's day-shift round R31, where
    the journal locked three wagers and the controller was told of two. T2's R22 had seat 2 killed (its
    wager returned: neither side counts it), T1's R13 died (all returned). A 5-card hit at T1 (a fixed
    500 for 1, paid at once) and a 7-card hit at T2 (100% of the meter, pending the supervisor)."""
    data = LinkData(floor, ("T1", "T2", "T3"))
    data.table_round("T1", "R11", locked=[1, 3], counted=2)
    data.table_round("T1", "R12", locked=[1, 3], counted=2, closed=later(DAY, 60))
    data.table_round("T1", "R13", locked=[2], counted=None, status="dead", closed=later(DAY, 120))
    data.table_round("T1", "R10", locked=[2], counted=1, closed=GRAVE)
    data.table_round("T2", "R21", locked=[1], counted=1)
    data.table_round("T2", "R22", locked=[1, 2], counted=1, dead_seats=[2], closed=later(DAY, 60))
    data.table_round("T3", "R31", locked=[1, 2, 4], counted=2)
    data.claim("T1", "R12", 3, 5, at=later(DAY, 61))
    data.claim("T2", "R21", 1, 7, at=later(DAY, 62))
    return data

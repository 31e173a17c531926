"""A linked progressive's data in a real floor database, for the floor panel's progressive tests.

The link's store is written by the real progressive controller (controller/progressive: its model
decides every event) over the floor's own store for a link (controller/floor/progressive.py's
``PostgresStore``, the floor's migration 8), its link row refreshed after each change as the linked
service refreshes it. The tables' side is what the floor service projects from their journals: each
round's ``bets_locked`` entry, a dead seat's ``dead_hand``, and the floor round as it closed (rows
written here as the floor service writes them, for the engine's journals do not yet carry the wager
at every game the tests need).
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import psycopg

from controller.floor.progressive import PostgresStore
from controller.floor.store import locked_wager_rows
from controller.journal import entries as typed
from controller.progressive import model
from controller.progressive.controller import ProgressiveController
from controller.progressive.model import Hit
from controller.simulation.floor.embedded import EmbeddedFloor

UNIT_CENTS = 100
# Today's day shift (06-14 UTC) and the grave shift before it (22-06, named for the day it started):
# within the reconciliation's window whenever the tests run.
TODAY = dt.datetime.now(dt.UTC).date()
DAY = f"{TODAY.isoformat()}T10:00:00+00:00"
GRAVE = f"{TODAY.isoformat()}T03:00:00+00:00"
DAY_SHIFT = f"{TODAY.isoformat()} day"
GRAVE_SHIFT = f"{(TODAY - dt.timedelta(days=1)).isoformat()} grave"


@dataclass
class LinkData:
    """One link: its controller (the real one, over the floor's PostgresStore) and the tables' side."""

    floor: EmbeddedFloor
    tables: tuple[str, ...]
    link_id: str = "L1"
    seqs: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.connection = psycopg.connect(self.floor.writer_dsn, autocommit=True)
        self.store = PostgresStore(self.connection, self.link_id)
        self.store.ensure_link(f"meter-{self.link_id}", self.tables)
        self.controller = ProgressiveController(self.store)
        parameters = model.parse_parameters({
            "unit_cents": UNIT_CENTS, "base_cents": 1_000_000, "reset_cents": 1_000_000,
            "increment_percent": 15, "hidden_percent": 5, "limit_cents": 20_000_000,
            "paytable": "progressive",
        })  # fmt: skip
        self.controller.open_now(f"meter-{self.link_id}", parameters, by="mo")
        self.publish()

    def publish(self) -> None:
        """The link row's meters, as the linked service refreshes them after each change."""
        self.store.publish_state(self.controller.meter_now())

    def close(self) -> None:
        self.connection.close()

    def _execute(self, sql: str, params: tuple[Any, ...]) -> None:
        with psycopg.connect(self.floor.owner_dsn, autocommit=True) as connection:
            connection.execute(sql.encode(), params)

    def _entry(self, table_id: str, round_id: str, kind: str, payload: dict[str, Any], at: str) -> None:
        seq = self.seqs[table_id] = self.seqs.get(table_id, 0) + 1
        seat = payload.get("seat")  # the typed column the service writes at commit (migration 12)
        self._execute(
            "INSERT INTO floor_entries (table_id, seq, time_utc, time_text, round_id, source, kind, "
            "version, payload, prev_hash, hash, stream_seq, seat, typed_columns) "
            "VALUES (%s, %s, %s, %s, %s, 'engine', %s, 1, %s, %s, %s, %s, %s, 2)",
            (table_id, seq, at, at, round_id, kind, json.dumps(payload), "0" * 64, f"{seq:064x}", seq, seat),
        )
        if kind == "bets_locked":  # its wagers' rows, as the service writes them (migration 15)
            lock = typed.BetsLocked(wagers=payload["wagers"])
            for row in locked_wager_rows(table_id, seq, round_id, lock):
                self._execute(
                    "INSERT INTO floor_locked_wagers (table_id, seq, round_id, seat, wager, amount_cents) "
                    "VALUES (%s, %s, %s, %s, %s, %s)",
                    row,
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
        read_by_link: bool = True,
    ) -> None:
        """A round at ``table_id`` as the floor holds it: its bets_locked entry (a Progressive wager of
        one unit on each seat of ``locked``, an ante on each, and a seat 7 with an ante alone), a
        dead_hand entry per dead seat, its floor round ``status`` closed at ``closed``; and the wagers
        the controller was told of (``counted``; None: never told); ``read_by_link``: the link's mark
        moved past the round (False: settled on the floor, not yet read by the link)."""
        wagers = {str(seat): {"ante": 500, "progressive": UNIT_CENTS} for seat in locked}
        wagers["7"] = {"ante": 500}
        self._entry(table_id, round_id, "bets_locked", {"wagers": wagers}, closed)
        for seat in dead_seats:
            self.dead_hand(table_id, round_id, seat, closed)
        self._execute(
            "INSERT INTO floor_rounds (table_id, round_id, game, status, started_utc, closed_utc, "
            "closed_seq) VALUES (%s, %s, 'top-flush', %s, %s, %s, %s)",
            (table_id, round_id, status, closed, closed, self.seqs[table_id]),
        )
        if counted is not None:
            self.contribute(table_id, round_id, counted)
        if read_by_link:
            self.read_by_link(table_id)

    def read_by_link(self, table_id: str) -> None:
        """The link's contribution path has read the table's entries so far (its mark, as pump moves it)."""
        self._execute(
            "UPDATE floor_progressive_marks SET through_seq = %s WHERE link_id = %s AND table_id = %s",
            (self.seqs.get(table_id, 0), self.link_id, table_id),
        )

    def contribute(self, table_id: str, round_id: str, wagers: int) -> None:
        self.controller.contribute_now(table_id, round_id, wagers)
        self.publish()

    def confirm(self, award_id: str, by: str) -> None:
        self.controller.confirm_paid_now(award_id, by=by)
        self.publish()

    def dead_hand(self, table_id: str, round_id: str, seat: int, at: str = DAY) -> None:
        """A seat's dead_hand entry reaching the floor (its wager returned)."""
        reason = {"code": "killed", "text": "exposed hand"}
        self._entry(table_id, round_id, "dead_hand", {"seat": seat, "reason": reason}, at)

    def claim(self, table_id: str, round_id: str, seat: int, run_length: int) -> None:
        self.controller.claim_now(table_id, round_id, [Hit(seat, run_length)])
        self.publish()


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
    data.claim("T1", "R12", 3, 5)
    data.claim("T2", "R21", 1, 7)
    return data

"""Every statement the floor panel runs, as named functions (docs/floor.md "The floor panel"): the
reporting role's reads through one bounded pool, and the writer's few writes (an acknowledgement, a
release, an auditor's disclosure), each on a connection of its own.

The routers (controller/floor/panel/routes/) hold no SQL: they call these and shape what comes back.
Every statement is bounded twice: the wait for a connection (``pool_timeout_s``) and the statement
itself, ended by PostgreSQL (``statement_timeout``, ``lock_timeout``: ``query_timeout_s``). PostgreSQL
down or slower than the bound raises :class:`DatabaseUnavailable` (a page answers 503); text it cannot
hold (a NUL byte, a number past bigint) raises :class:`QueryRefused` (a one-line refusal), so no
router needs the driver's own errors.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psycopg
from psycopg_pool import AsyncConnectionPool

from controller.floor.release import release_table

Params = tuple[Any, ...] | dict[str, Any]
Row = dict[str, Any]

# The meters by table, pit and game: the views of migration 10; by shift: SHIFT_METERS_SQL below.
METER_VIEWS = {"table": "floor_meters_by_table", "pit": "floor_meters_by_pit", "game": "floor_meters_by_game"}
# The meters by shift: each round of floor_round_meters placed in its shift by the shifts' labels and
# their contiguous UTC starts up to the last one's end: width_bucket is a binary search, so a long
# history costs a logarithm per round, not a join.
SHIFT_METERS_SQL = """
SELECT (%(labels)s::text[])[width_bucket(m.closed_utc, %(starts)s::timestamptz[])] AS key,
       count(*) FILTER (WHERE m.status = 'settled') AS rounds_settled,
       sum(m.handle_cents)::bigint AS handle_cents, sum(m.house_win_cents)::bigint AS house_win_cents,
       sum(m.theoretical_win_cents)::bigint AS theoretical_win_cents
FROM floor_round_meters m
WHERE m.closed_utc >= (%(starts)s::timestamptz[])[1] AND m.closed_utc < %(end)s::timestamptz
GROUP BY 1 ORDER BY 1
"""
# Every table's tile (controller/floor/tiles.py), or one table's: one statement, read once a tick for
# the live map.
FLOOR_MAP_SQL = (
    "SELECT t.table_id, COALESCE(c.pit, t.pit) AS pit, t.game, t.phase, t.held, t.table_open, "
    "t.quarantined_at_seq IS NOT NULL AS quarantined, t.quarantine_reason, t.last_round_id, "
    "t.last_seq, t.updated_utc AS last_heard_utc, "
    # How long ago, by PostgreSQL's clock: the one that wrote updated_utc.
    "extract(epoch FROM now() - t.updated_utc)::float8 AS last_heard_age_s, "
    # Why a held table is held: its latched faults not cleared (the table's own words).
    "(SELECT string_agg(a.message, '; ' ORDER BY a.alert_id) FROM floor_alerts a "
    " WHERE a.table_id = t.table_id AND a.origin = 'table' AND a.severity = 'latching' "
    " AND a.cleared_utc IS NULL) AS hold_reason, "
    "(SELECT count(*) FROM floor_alerts a WHERE a.table_id = t.table_id "
    " AND a.acknowledged_utc IS NULL AND a.cleared_utc IS NULL) AS alerts, "
    "t.meters->'handle_cents' AS handle_cents, t.meters->'house_win_cents' AS house_win_cents, "
    # The release the table verified at its last start, learnt from its stream (software_verified;
    # docs/operations.md "Software verification"), and the floor's last seeded check of it.
    "(SELECT concat_ws(' ', e.software_release, left(e.software_release_digest, 16), "
    "  CASE WHEN e.software_development THEN 'DEVELOPMENT' END) "
    " FROM floor_entries e WHERE e.table_id = t.table_id AND e.kind = 'software_verified' "
    " ORDER BY e.seq DESC LIMIT 1) AS software, "
    "(SELECT s.outcome FROM floor_software_checks s WHERE s.table_id = t.table_id "
    " ORDER BY s.check_id DESC LIMIT 1) AS software_check, "
    # The table's last clock measurement against the floor's time source (docs/floor.md "Clocks"): the
    # newest clock_offset entry, found backwards along the primary key.
    "o.clock_offset_us, o.clock_within_bound, o.clock_bound_us, o.time_text AS clock_measured_utc, "
    "f.rounds AS shift_rounds, f.handle_cents AS shift_handle_cents, "
    "f.house_win_cents AS shift_house_win_cents, f.theoretical_win_cents AS shift_theoretical_cents "
    "FROM floor_tables t LEFT JOIN floor_table_config c USING (table_id) "
    # The shift's rounds by table, in the same statement: the rounds closed in the shift, found by
    # floor_rounds_by_time.
    "LEFT JOIN (SELECT r.table_id, count(*) FILTER (WHERE r.status = 'settled') AS rounds, "
    " sum(r.handle_cents)::bigint AS handle_cents, "
    " sum(r.house_win_cents)::bigint AS house_win_cents, "
    " sum(r.theoretical_win_cents)::bigint AS theoretical_win_cents FROM floor_rounds r "
    " WHERE r.closed_utc >= %(shift_start)s AND r.closed_utc < %(shift_end)s "
    " AND r.status <> 'in_progress' GROUP BY r.table_id) f ON f.table_id = t.table_id "
    "LEFT JOIN LATERAL (SELECT e.clock_offset_us, e.clock_within_bound, e.clock_bound_us, e.time_text "
    " FROM floor_entries e "
    " WHERE e.table_id = t.table_id AND e.kind = 'clock_offset' ORDER BY e.seq DESC LIMIT 1) o "
    "ON true "
)
# A gaming day's report (controller/floor/gaming_day.py folds what these return; `flushtable floor
# report` runs them too): each table's pit, and the day's entries of the kinds the report folds.
TABLE_PITS_SQL = (
    "SELECT t.table_id, COALESCE(c.pit, t.pit, '') AS pit FROM floor_tables t "
    "LEFT JOIN floor_table_config c USING (table_id)"
)
# Each table's day summed from the figures the floor wrote at commit for each entry (migration 16,
# controller/floor/gaming_day.py ``entry_figures``): no payload read. Numerators over one denominator
# sum exactly (a theoretical win's fraction); the fold adds the rest (``figures_of_rows``).
DAY_FIGURES_SQL = (
    "SELECT table_id, measure, label, sum(numerator) AS numerator, denominator FROM floor_day_figures "
    "WHERE time_utc >= %s AND time_utc < %s GROUP BY table_id, measure, label, denominator"
)
ROUND_ENTRIES_SQL = (
    "SELECT e.seq, e.time_text, e.round_id, e.source, e.kind, e.payload::text AS payload_text, "
    "p.private_text, e.version, e.private_digest, e.prev_hash, e.hash "
    "FROM floor_entries e LEFT JOIN floor_private_shown p USING (table_id, seq) "
    "WHERE e.table_id = %s AND e.round_id = %s ORDER BY e.seq"
)
# One alert's button acknowledges it even once cleared (its row still asks); the bulk form only the
# alerts still open.
ACKNOWLEDGE_SQL = (
    "UPDATE floor_alerts SET acknowledged_by = %s, acknowledged_utc = now() "
    "WHERE alert_id = ANY(%s) AND acknowledged_utc IS NULL"
)
ACKNOWLEDGE_OPEN_SQL = ACKNOWLEDGE_SQL + " AND cleared_utc IS NULL"


# --- the linked progressive (controller/floor/progressive_view.py shapes what these return) -----------
RELATION_PRESENT_SQL = "SELECT to_regclass(%s) IS NOT NULL AS present"
LINK_IDS_SQL = "SELECT link_id FROM floor_progressive_links ORDER BY link_id"
SIGN_METER_SQL = "SELECT link_id, meter_cents FROM floor_progressive_links WHERE link_id = %s"
SIGN_PENDING_SQL = (
    "SELECT table_id, seat, line, amount_cents FROM floor_progressive_awards "
    "WHERE link_id = %s AND status = 'pending' ORDER BY claim_number"
)
REQUIRED_RELATIONS = (
    "floor_progressive_links",
    "floor_progressive_events",
    "floor_progressive_awards",
    "floor_progressive_marks",
)

LINKS_SQL = (
    "SELECT link_id, meter_id, meter_cents, pending_awards AS pending, cardinality(tables) AS tables, "
    "updated_utc FROM floor_progressive_links ORDER BY link_id"
)
LINK_SQL = (
    "SELECT link_id, meter_id, tables, meter_cents, reserve_cents, pending_awards, "
    "state::text AS state_text, updated_utc FROM floor_progressive_links WHERE link_id = %s"
)
# Contributions by table: the controller's count of each table's settled wagers and what they added.
BY_TABLE_SQL = """
SELECT t.table_id,
       count(c.event_no) AS rounds,
       COALESCE(sum(c.wagers), 0) AS wagers,
       COALESCE(sum(c.in_meter_cents), 0) AS in_meter_cents,
       COALESCE(sum(c.to_meter_cents), 0) AS to_meter_cents,
       COALESCE(sum(c.hidden_cents), 0) AS to_hidden_cents,
       COALESCE((SELECT sum(o.overflow_cents) FROM floor_progressive_events o
                 WHERE o.link_id = %s AND o.kind = 'progressive_overflow' AND o.table_id = t.table_id), 0)
           AS to_overflow_cents
FROM (SELECT DISTINCT unnest(tables) AS table_id FROM floor_progressive_links WHERE link_id = %s
      UNION SELECT DISTINCT table_id FROM floor_progressive_events
      WHERE link_id = %s AND kind = 'progressive_contribution') t
LEFT JOIN floor_progressive_events c
    ON c.link_id = %s AND c.kind = 'progressive_contribution' AND c.table_id = t.table_id
GROUP BY t.table_id ORDER BY t.table_id
"""
HITS_SQL = (
    "SELECT claim_number AS hit_id, claimed_utc AS recorded_utc, table_id, seat, round_id, line, "
    "amount_cents AS award_cents, paid_from, meter_before_cents, status, paid_utc, paid_by AS confirmed_by "
    "FROM floor_progressive_awards WHERE link_id = %s ORDER BY claim_number DESC LIMIT 500"
)
# Who changed what, when: every parameter change (the opening included) and reserve movement, newest
# first, as the controller recorded them.
CHANGES_SQL = (
    "SELECT event_no, committed_utc, kind, by, reason, "
    "parameters_before::text AS before_text, parameters_after::text AS after_text, amount_cents, "
    "reserve_after_cents "
    "FROM floor_progressive_events WHERE link_id = %s "
    "AND kind IN ('progressive_parameters_changed', 'progressive_reserve') ORDER BY event_no DESC LIMIT 200"
)
REFUSALS_SQL = (
    "SELECT refusal_id, refused_utc, table_id, round_id, reason FROM floor_progressive_refusals "
    "WHERE link_id = %s ORDER BY refusal_id DESC LIMIT 200"
)
PENDING_BY_LINE_SQL = (
    "SELECT line, count(*) AS pending, COALESCE(sum(amount_cents), 0) AS pending_cents "
    "FROM floor_progressive_awards WHERE link_id = %s AND status = 'pending' GROUP BY line"
)
# Per (table, round): the journals' Progressive wagers locked and counted against the controller's
# in-meter, for rounds the floor holds as closed (or that only the controller has), placed in a shift.
_ROUNDS_COMPARED = """
WITH members AS (
    SELECT unnest(tables) AS table_id FROM floor_progressive_links WHERE link_id = %(link)s
),
rounds AS (  -- the link's rounds closed within the window (floor_rounds_by_time) that its contribution
             -- path has read past (its mark): a round the link has not read yet is no difference yet
    SELECT r.table_id, r.round_id, r.status, r.closed_utc FROM floor_rounds r
    JOIN floor_progressive_marks m ON m.link_id = %(link)s AND m.table_id = r.table_id
    WHERE r.closed_utc >= now() - make_interval(secs => %(window_s)s) AND r.status <> 'in_progress'
      AND r.table_id IN (SELECT table_id FROM members) AND r.closed_seq <= m.through_seq
),
lock_entry AS (  -- each round's lock as the table wrote it (its last, were there two)
    SELECT DISTINCT ON (e.table_id, e.round_id) e.table_id, e.round_id, e.seq
    FROM rounds r JOIN floor_entries e ON e.table_id = r.table_id AND e.round_id = r.round_id
    WHERE e.kind = 'bets_locked'
    ORDER BY e.table_id, e.round_id, e.seq DESC
),
locks AS (  -- its Progressive wagers, from the lock's rows (migration 15), keyed by the seat's text
    SELECT l.table_id, l.round_id, w.seat, w.amount_cents AS cents
    FROM lock_entry l JOIN floor_locked_wagers w ON w.table_id = l.table_id AND w.seq = l.seq
    WHERE w.wager = 'progressive'
),
dead_seats AS (
    -- the typed seat (migration 12), as text: the lock's wagers are keyed by the seat's text
    SELECT DISTINCT e.table_id, e.round_id, e.seat::text AS seat
    FROM rounds r JOIN floor_entries e ON e.table_id = r.table_id AND e.round_id = r.round_id
    WHERE e.kind = 'dead_hand' AND e.seat IS NOT NULL
),
journal AS (
    SELECT l.table_id, l.round_id, sum(l.cents) AS locked_cents, count(*) AS locked_wagers,
           COALESCE(sum(l.cents) FILTER (WHERE r.status = 'settled' AND d.seat IS NULL), 0) AS counted_cents,
           count(*) FILTER (WHERE r.status = 'settled' AND d.seat IS NULL) AS counted_wagers
    FROM locks l
    JOIN rounds r USING (table_id, round_id)
    LEFT JOIN dead_seats d USING (table_id, round_id, seat)
    GROUP BY l.table_id, l.round_id
),
controller AS (  -- the link's counts of those rounds, and of any round it counted within the window
    SELECT table_id, round_id, in_meter_cents, wagers, committed_utc
    FROM floor_progressive_events
    WHERE link_id = %(link)s AND kind = 'progressive_contribution'
      AND ((table_id, round_id) IN (SELECT table_id, round_id FROM rounds)
           OR committed_utc >= now() - make_interval(secs => %(window_s)s))
),
compared AS (
    SELECT COALESCE(j.table_id, c.table_id) AS table_id, COALESCE(j.round_id, c.round_id) AS round_id,
           COALESCE(j.locked_cents, 0) AS locked_cents, COALESCE(j.locked_wagers, 0) AS locked_wagers,
           COALESCE(j.counted_cents, 0) AS journal_cents, COALESCE(j.counted_wagers, 0) AS journal_wagers,
           COALESCE(c.in_meter_cents, 0) AS controller_cents, COALESCE(c.wagers, 0) AS controller_wagers,
           c.committed_utc
    FROM journal j FULL OUTER JOIN controller c USING (table_id, round_id)
)
SELECT x.*, CASE  -- the property's shifts, their contiguous starts computed in Python (controller/locale.py)
    WHEN COALESCE(r.closed_utc, x.committed_utc) < %(shifts_end)s::timestamptz
    THEN (%(shift_labels)s::text[])[width_bucket(COALESCE(r.closed_utc, x.committed_utc),
                                                 %(shift_starts)s::timestamptz[])]
END AS shift
FROM compared x
LEFT JOIN rounds r USING (table_id, round_id)
LEFT JOIN floor_rounds fr ON fr.table_id = x.table_id AND fr.round_id = x.round_id
-- A round closed within the window; or one the controller counted that the floor holds no closed
-- round for (a round closed before the window is out of it on both sides).
WHERE r.round_id IS NOT NULL
   OR ((fr.status IS NULL OR fr.status = 'in_progress') AND x.controller_cents <> 0)
"""
RECONCILE_SQL = f"""
WITH per_round AS ({_ROUNDS_COMPARED})
SELECT table_id, shift, count(*) AS rounds,
       sum(locked_wagers)::bigint AS locked_wagers, sum(locked_cents)::bigint AS locked_cents,
       sum(journal_wagers)::bigint AS journal_wagers, sum(journal_cents)::bigint AS journal_cents,
       sum(controller_wagers)::bigint AS controller_wagers, sum(controller_cents)::bigint AS controller_cents,
       count(*) FILTER (WHERE journal_cents <> controller_cents) AS rounds_differing,
       (array_agg(round_id ORDER BY round_id) FILTER (WHERE journal_cents <> controller_cents))[1:5]
           AS differing_rounds
FROM per_round GROUP BY table_id, shift ORDER BY shift DESC, table_id
"""


class DatabaseUnavailable(Exception):
    """PostgreSQL did not answer (down, unreachable, or slower than the bound): a page says so, 503."""


class QueryRefused(Exception):
    """PostgreSQL cannot hold what was asked (a NUL byte, an id past bigint): bad input, one line."""


class QueryFailed(Exception):
    """A write PostgreSQL refused for a reason of its own (not the input, not its absence)."""


@dataclass
class PanelStats:
    """What the panel asked of PostgreSQL, counted (tests/floor/test_floor_panel_db.py reads them)."""

    queries: int = 0  # statements on the reporting pool, every page's and the feed's
    feed_reads: int = 0  # live-stream floor maps read (one a tick while any stream is open)


@dataclass(frozen=True, slots=True)
class QueryBounds:
    """The pool's size and the two bounds on every statement (FloorPanelSettings names each)."""

    pool_min_size: int = 1
    pool_max_size: int = 4
    pool_timeout_s: float = 5.0
    query_timeout_s: float = 15.0

    @property
    def connect_timeout_s(self) -> int:
        return max(2, round(self.pool_timeout_s))

    @property
    def server_options(self) -> str:
        """libpq ``options`` by which PostgreSQL ends a statement, or a wait for a lock, after the
        query bound."""
        timeout_ms = max(1, round(self.query_timeout_s * 1000))
        return f"-c statement_timeout={timeout_ms} -c lock_timeout={timeout_ms}"


def first_line(error: BaseException) -> str:
    """An error's first line (psycopg's messages run to several: the detail, a hint)."""
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def unavailable(error: BaseException) -> DatabaseUnavailable:
    if isinstance(error, TimeoutError):
        return DatabaseUnavailable("no answer in time")
    return DatabaseUnavailable(first_line(error))


class FloorQueries:
    """The floor panel's reads (the reporting role's pool) and writes (the writer role's own
    connections, opened for each: a person's click is rare, and no idle writer connection is held)."""

    def __init__(self, reporting_dsn: str, writer_dsn: str | None, bounds: QueryBounds) -> None:
        self.writer_dsn = writer_dsn
        self.bounds = bounds
        self.stats = PanelStats()
        # Opened at start without waiting (PostgreSQL may be down: the pages say so and the pool keeps
        # trying); a connection is checked before each use, so one that died with a restart of
        # PostgreSQL is replaced, not shown as an error. A reconnection that fails for 10 s gives up (the
        # pool's own backoff would otherwise wait up to minutes between tries): the next page starts a
        # fresh one at once, so the panel is back as soon as PostgreSQL is.
        self.pool = AsyncConnectionPool(
            reporting_dsn,
            min_size=bounds.pool_min_size,
            max_size=bounds.pool_max_size,
            timeout=bounds.pool_timeout_s,
            reconnect_timeout=10.0,
            check=AsyncConnectionPool.check_connection,
            kwargs={
                "connect_timeout": bounds.connect_timeout_s,
                # PostgreSQL itself ends a statement at the query bound: the connection comes back at
                # once, where a query cancelled from here costs psycopg's cancellation (up to 10 s).
                "options": bounds.server_options,
            },
            name="floor-panel",
            open=False,
        )

    @property
    def writable(self) -> bool:
        return self.writer_dsn is not None

    async def rows(self, sql: str, params: Params = ()) -> list[Row]:
        """One statement on the reporting pool, its rows as dicts (controller/floor/progressive_view.py
        reads the progressive's through this too)."""
        self.stats.queries += 1
        try:
            # The wait for a connection (pool_timeout_s) and the query itself, both bounded.
            async with asyncio.timeout(self._bound_s):
                async with self.pool.connection() as connection:
                    cursor = await connection.execute(sql.encode(), params)
                    names = [d.name for d in cursor.description or []]
                    return [dict(zip(names, row, strict=True)) for row in await cursor.fetchall()]
        except (psycopg.OperationalError, TimeoutError) as error:
            raise unavailable(error) from None

    @property
    def _bound_s(self) -> float:
        return self.bounds.pool_timeout_s + self.bounds.query_timeout_s

    # --- the map, a table, the workers ----------------------------------------------------------------
    async def floor_map(
        self, shift_start: datetime, shift_end: datetime, table_id: str | None = None
    ) -> list[Row]:
        where = "WHERE t.table_id = %(table)s " if table_id is not None else ""
        return await self.rows(
            FLOOR_MAP_SQL + where + "ORDER BY pit, t.table_id",
            {"table": table_id, "shift_start": shift_start, "shift_end": shift_end},
        )

    async def open_alert_count(self) -> int:
        rows = await self.rows(
            "SELECT count(*) AS n FROM floor_alerts WHERE acknowledged_utc IS NULL AND cleared_utc IS NULL"
        )
        return int(rows[0]["n"])

    async def table_rounds(self, table_id: str) -> list[Row]:
        return await self.rows(
            "SELECT round_id, game, status, started_utc, closed_utc, handle_cents, house_win_cents, "
            "theoretical_win_cents FROM floor_rounds WHERE table_id = %s "
            "ORDER BY started_seq DESC NULLS LAST LIMIT 50",
            (table_id,),
        )

    async def table_open_alerts(self, table_id: str) -> list[Row]:
        return await self.rows(
            "SELECT alert_id, raised_utc, origin, kind, severity, message FROM floor_alerts "
            "WHERE table_id = %s AND acknowledged_utc IS NULL AND cleared_utc IS NULL ORDER BY alert_id DESC",
            (table_id,),
        )

    async def partition_leases(self) -> list[Row]:
        return await self.rows(
            "SELECT partition, partitions, worker, epoch, acquired_utc, renewed_utc, "
            "round(extract(epoch FROM clock_timestamp() - renewed_utc)::numeric, 1) AS renewed_ago_s "
            "FROM floor_partition_leases ORDER BY partition"
        )

    async def nats_nodes(self) -> list[Row]:
        return await self.rows(
            "SELECT node, role, current, offline, lag, seen_by, seen_utc, "
            "round(extract(epoch FROM clock_timestamp() - seen_utc)::numeric, 1) AS seen_ago_s "
            "FROM floor_nats_nodes ORDER BY node"
        )

    # --- alerts and releases --------------------------------------------------------------------------
    async def alerts(self) -> list[Row]:
        return await self.rows(
            "SELECT alert_id, raised_utc, table_id, seq, origin, kind, severity, message, acknowledged_by, "
            "acknowledged_utc, cleared_utc FROM floor_alerts "
            "ORDER BY (acknowledged_utc IS NULL AND cleared_utc IS NULL) DESC, alert_id DESC LIMIT 500"
        )

    async def quarantined_tables(self) -> list[Row]:
        return await self.rows(
            "SELECT table_id, quarantined_at_seq, quarantine_reason FROM floor_tables "
            "WHERE quarantined_at_seq IS NOT NULL ORDER BY table_id"
        )

    async def releases(self) -> list[Row]:
        return await self.rows(
            "SELECT r.release_id, r.released_utc, r.table_id, r.quarantined_at_seq, r.released_by, r.reason, "
            "r.via, r.set_aside, a.applied_utc, a.outcome FROM floor_releases r "
            "LEFT JOIN floor_release_applied a USING (release_id) ORDER BY r.release_id DESC LIMIT 50"
        )

    async def acknowledge(self, user: str, alert_ids: Sequence[int], *, open_only: bool = True) -> int:
        """How many of the alerts were acknowledged under ``user``'s name (none already acknowledged;
        ``open_only``: none cleared either)."""
        sql = ACKNOWLEDGE_OPEN_SQL if open_only else ACKNOWLEDGE_SQL
        try:
            async with asyncio.timeout(self._bound_s), await self._writer() as connection:
                cursor = await connection.execute(sql, (user, list(alert_ids)))
                return cursor.rowcount
        except (psycopg.OperationalError, TimeoutError) as error:
            raise unavailable(error) from None
        except psycopg.DataError as error:  # an id past bigint
            raise QueryRefused(first_line(error)) from None

    async def release(self, table_id: str, *, reason: str, by: str) -> str:
        """Release a quarantined table (controller/floor/release.py: the CLI's check and record); its
        summary. ReleaseRefused in words when the release may not be."""
        writer_dsn = self._writer_dsn()

        def record() -> str:
            # Run in a thread with a synchronous connection: every statement and lock wait bounded by
            # PostgreSQL (query_timeout_s), else a lock held on floor_tables held the thread for good.
            with psycopg.connect(
                writer_dsn,
                connect_timeout=self.bounds.connect_timeout_s,
                options=self.bounds.server_options,
            ) as connection:
                return release_table(connection, table_id, reason=reason, by=by, via="panel").summary()

        try:
            return await asyncio.to_thread(record)
        except psycopg.DataError as error:  # any other text PostgreSQL cannot store: bad input, one line
            raise QueryRefused(first_line(error)) from None
        except psycopg.OperationalError as error:  # down, or past the bound: PostgreSQL down's 503
            raise unavailable(error) from None
        except psycopg.Error as error:
            raise QueryFailed(first_line(error)) from None

    # --- meters, rounds -------------------------------------------------------------------------------
    async def meters(self, by: str) -> list[Row]:
        """The meters grouped by table, pit or game (METER_VIEWS)."""
        return await self.rows(f"SELECT * FROM {METER_VIEWS[by]} ORDER BY key")

    async def round_meters_span(self) -> tuple[datetime, datetime] | None:
        """The first and last round's close, or None with no round closed."""
        span = await self.rows(
            "SELECT min(closed_utc) AS first, max(closed_utc) AS last FROM floor_round_meters"
        )
        if not span or span[0]["first"] is None:
            return None
        return span[0]["first"], span[0]["last"]

    async def meters_by_shift(
        self, labels: Sequence[str], starts: Sequence[datetime], end: datetime
    ) -> list[Row]:
        """The meters by shift: the shifts are the property's (controller/locale.py), given as bounds:
        SQL holds no second definition of them (migration 10 dropped floor_shift)."""
        return await self.rows(SHIFT_METERS_SQL, {"labels": list(labels), "starts": list(starts), "end": end})

    async def search_rounds(
        self, round_id: str, table_id: str, since: datetime | None, until: datetime | None
    ) -> list[Row]:
        """The newest 200 rounds matching what is given (an empty text or None: anything)."""
        conditions: list[str] = ["TRUE"]
        params: list[Any] = []
        for condition, value in (
            ("round_id = %s", round_id),
            ("table_id = %s", table_id),
            ("COALESCE(closed_utc, started_utc) >= %s", since),
            ("COALESCE(closed_utc, started_utc) <= %s", until),
        ):
            if value:
                conditions.append(condition)
                params.append(value)
        try:
            return await self.rows(
                "SELECT table_id, round_id, game, status, started_utc, closed_utc, handle_cents, "
                f"house_win_cents FROM floor_rounds WHERE {' AND '.join(conditions)} "
                "ORDER BY started_utc DESC NULLS LAST LIMIT 200",
                tuple(params),
            )
        except psycopg.DataError as error:
            raise QueryRefused(first_line(error)) from None

    async def round_entries(self, table_id: str, round_id: str) -> list[Row]:
        """A round's entries with the private parts the floor shows; none for an id PostgreSQL cannot
        hold (a NUL byte: no such round)."""
        try:
            return await self.rows(ROUND_ENTRIES_SQL, (table_id, round_id))
        except psycopg.DataError:
            return []

    async def disclose(self, shown: Disclosure, withheld: set[int]) -> dict[int, str]:
        """The withheld private parts of a closed round, by seq, recorded first (in the same
        transaction: no record, no parts) in floor_private_disclosures."""
        try:
            async with asyncio.timeout(self._bound_s):
                async with await self._writer() as connection, connection.transaction():
                    cursor = await connection.execute(
                        "SELECT p.seq, p.private_text FROM floor_private p JOIN floor_entries e "
                        "USING (table_id, seq) WHERE e.table_id = %s AND e.round_id = %s ORDER BY p.seq",
                        (shown.table_id, shown.round_id),
                    )
                    parts = {int(seq): str(text) for seq, text in await cursor.fetchall() if seq in withheld}
                    await connection.execute(
                        "INSERT INTO floor_private_disclosures (table_id, round_id, round_status, "
                        "disclosed_to, role, reason, parts) VALUES (%s, %s, %s, %s, %s, %s, %s)",
                        (shown.table_id, shown.round_id, shown.round_status, shown.user, shown.role,
                         shown.reason, len(parts)),
                    )  # fmt: skip
        except (psycopg.OperationalError, TimeoutError) as error:
            raise unavailable(error) from None
        return parts

    # --- reports, surveillance -----------------------------------------------------------------------
    async def table_pits(self) -> dict[str, str]:
        """Each table's pit (the configured one, else the one it reported)."""
        return {str(r["table_id"]): str(r["pit"]) for r in await self.rows(TABLE_PITS_SQL)}

    async def day_figures(self, start: datetime, end: datetime) -> list[Row]:
        """Each table's gaming-day figures of the entries committed in [start, end), summed by measure:
        what a gaming day's report reads (``gaming_day.figures_of_rows``)."""
        return await self.rows(DAY_FIGURES_SQL, (start, end))

    async def newest_entries(
        self, columns: str, kinds: Sequence[str], table_id: str
    ) -> list[tuple[Any, ...]]:
        """The newest 500 entries of ``kinds``, of one table or all (``table_id`` empty), each the tuple
        of ``columns`` (surveillance's events, controller/floor/surveillance.py ``events_of_rows``)."""
        condition = ""
        params: list[Any] = [list(kinds)]
        if table_id:
            condition = " AND table_id = %s"
            params.append(table_id)
        rows = await self.rows(
            f"SELECT {columns} FROM floor_entries WHERE kind = ANY(%s){condition} "
            "ORDER BY floor_committed_utc DESC, table_id, seq DESC LIMIT 500",
            tuple(params),
        )
        names = [c.strip() for c in columns.split(",")]
        return [tuple(r[c] for c in names) for r in rows]

    # --- the writer ------------------------------------------------------------------------------------
    def _writer_dsn(self) -> str:
        if self.writer_dsn is None:  # the routes refuse every write first when there is no writer
            raise QueryFailed("the panel has no writer connection")
        return self.writer_dsn

    async def _writer(self) -> psycopg.AsyncConnection[Any]:
        return await psycopg.AsyncConnection.connect(
            self._writer_dsn(),
            connect_timeout=self.bounds.connect_timeout_s,
            options=self.bounds.server_options,
        )


@dataclass(frozen=True, slots=True)
class Disclosure:
    """An auditor's disclosure as floor_private_disclosures records it."""

    table_id: str
    round_id: str
    round_status: str
    user: str
    role: str
    reason: str

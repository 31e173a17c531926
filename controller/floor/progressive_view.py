"""The floor's view of a linked progressive (docs/floor.md "Progressive: the page, the sign,
reconciliation"): what the floor panel's progressive page, its sign and its CSV show of one link, and
the reconciliation of the link controller's in-meter against the tables' own journals.

Read only: every figure comes from what the link controller keeps in PostgreSQL (its meters, its
count of each round's locked wagers, its hits) and from the tables' journal entries the floor already
holds (``floor_entries``). Nothing here writes but :func:`raise_reconciliation_alerts`, which the floor
service runs with its writer connection (a reconciliation difference is a floor alert).

The link's tables (the link controller's store, controller/floor's migrations):

- ``floor_progressive_links``: one row a link: its parameters (unit, base, reset, increment and hidden
  rates in basis points, limit, paytable) and its meters (meter, reserve, overflow);
- ``floor_progressive_link_tables``: which tables play on which link;
- ``floor_progressive_rounds``: the controller's count per (table, round): the progressive wagers it
  took at the lock (``wagers``, ``in_meter_cents``: the 1.39A in-meter) and what they added to the
  meter, the reserve and the overflow once settled;
- ``floor_progressive_hits``: each hit in the order the controller recorded it (``hit_id``): table,
  seat, round, paytable line, award, status (``pending`` until paid, then ``paid``).

Reconciliation (PA 670a.10's count, done for the floor): per (table, round) the journal's count is the
sum of the ``progressive`` wagers of its ``bets_locked`` entries (the dealer's lock, as the table wrote
it), the controller's is ``in_meter_cents``; both are summed per table and per shift, a round placed in
the shift its floor round closed in (both sides alike, so a round never straddles two shifts). Only
rounds the floor holds as closed are compared (an open round's lock may be on its way), and a round the
controller counted that the floor holds no lock for is a difference too.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import psycopg

from controller.money import format_money

Query = Callable[[str, tuple[Any, ...]], Awaitable[list[dict[str, Any]]]]
PROGRESSIVE_WAGER = "progressive"  # the wager's name in a bets_locked entry (controller.rules.progressive)
RECONCILE_ALERT_KIND = "progressive_reconciliation"
_FAULT_PREFIX = "progressive_reconcile"
BASIS_POINTS_PER_PERCENT = 100

LINK_TABLE = "floor_progressive_links"

LINKS_SQL = (
    "SELECT link_id, name, meter_cents, updated_utc, "
    "(SELECT count(*) FROM floor_progressive_link_tables t WHERE t.link_id = l.link_id) AS tables, "
    "(SELECT count(*) FROM floor_progressive_hits h WHERE h.link_id = l.link_id AND h.status = 'pending') "
    "AS pending FROM floor_progressive_links l ORDER BY link_id"
)
LINK_SQL = (
    "SELECT link_id, name, unit_cents, base_cents, reset_cents, increment_bp, hidden_bp, limit_cents, "
    "paytable::text AS paytable_text, meter_cents, reserve_cents, overflow_cents, updated_utc, "
    "(SELECT COALESCE(sum(in_meter_cents), 0) FROM floor_progressive_rounds r WHERE r.link_id = l.link_id) "
    "AS in_meter_cents, "
    "(SELECT COALESCE(sum(wagers), 0) FROM floor_progressive_rounds r WHERE r.link_id = l.link_id) AS wagers "
    "FROM floor_progressive_links l WHERE link_id = %s"
)
# Contributions by table: the controller's count of each table's locked wagers and what they added.
BY_TABLE_SQL = (
    "SELECT lt.table_id, count(r.round_id) AS rounds, COALESCE(sum(r.wagers), 0) AS wagers, "
    "COALESCE(sum(r.in_meter_cents), 0) AS in_meter_cents, "
    "COALESCE(sum(r.to_meter_cents), 0) AS to_meter_cents, "
    "COALESCE(sum(r.to_hidden_cents), 0) AS to_hidden_cents, "
    "COALESCE(sum(r.to_overflow_cents), 0) AS to_overflow_cents "
    "FROM floor_progressive_link_tables lt LEFT JOIN floor_progressive_rounds r "
    "ON r.link_id = lt.link_id AND r.table_id = lt.table_id "
    "WHERE lt.link_id = %s GROUP BY lt.table_id ORDER BY lt.table_id"
)
HITS_SQL = (
    "SELECT hit_id, recorded_utc, table_id, seat, round_id, line, award_cents, meter_before_cents, status, "
    "paid_utc, confirmed_by FROM floor_progressive_hits WHERE link_id = %s ORDER BY hit_id DESC LIMIT 500"
)
# 1.39A's hits and wins per level: a level is a paytable line (run length); wins are what was paid.
LEVELS_SQL = (
    "SELECT line, count(*) AS hits, "
    "COALESCE(sum(award_cents) FILTER (WHERE status = 'paid'), 0) AS won_cents, "
    "count(*) FILTER (WHERE status = 'pending') AS pending, "
    "COALESCE(sum(award_cents) FILTER (WHERE status = 'pending'), 0) AS pending_cents "
    "FROM floor_progressive_hits WHERE link_id = %s GROUP BY line"
)
# Per (table, round): the journals' locked progressive wagers against the controller's in-meter, for
# rounds the floor holds as closed (or that only the controller has), placed in a shift.
_ROUNDS_COMPARED = """
WITH members AS (SELECT table_id FROM floor_progressive_link_tables WHERE link_id = %s),
journal AS (
    SELECT e.table_id, e.round_id, sum((w.value ->> 'progressive')::bigint) AS locked_cents,
           count(*) AS wagers
    FROM floor_entries e
    CROSS JOIN LATERAL jsonb_each(e.payload -> 'wagers') AS w
    WHERE e.kind = 'bets_locked' AND e.table_id IN (SELECT table_id FROM members)
      AND w.value ? 'progressive'
    GROUP BY e.table_id, e.round_id
),
controller AS (
    SELECT table_id, round_id, in_meter_cents, wagers, recorded_utc
    FROM floor_progressive_rounds WHERE link_id = %s
),
compared AS (
    SELECT COALESCE(j.table_id, c.table_id) AS table_id, COALESCE(j.round_id, c.round_id) AS round_id,
           COALESCE(j.locked_cents, 0) AS journal_cents, COALESCE(j.wagers, 0) AS journal_wagers,
           COALESCE(c.in_meter_cents, 0) AS controller_cents, COALESCE(c.wagers, 0) AS controller_wagers,
           c.recorded_utc
    FROM journal j FULL OUTER JOIN controller c USING (table_id, round_id)
)
SELECT x.table_id, x.round_id, floor_shift(COALESCE(fr.closed_utc, x.recorded_utc)) AS shift,
       x.journal_cents, x.journal_wagers, x.controller_cents, x.controller_wagers
FROM compared x
LEFT JOIN floor_rounds fr ON fr.table_id = x.table_id AND fr.round_id = x.round_id
WHERE (fr.status IS NOT NULL AND fr.status <> 'in_progress')
   OR (fr.status IS NULL AND x.recorded_utc IS NOT NULL)
"""
RECONCILE_SQL = f"""
WITH per_round AS ({_ROUNDS_COMPARED})
SELECT table_id, shift, count(*) AS rounds,
       sum(journal_wagers)::bigint AS journal_wagers, sum(journal_cents)::bigint AS journal_cents,
       sum(controller_wagers)::bigint AS controller_wagers, sum(controller_cents)::bigint AS controller_cents,
       count(*) FILTER (WHERE journal_cents <> controller_cents) AS rounds_differing,
       (array_agg(round_id ORDER BY round_id) FILTER (WHERE journal_cents <> controller_cents))[1:5]
           AS differing_rounds
FROM per_round GROUP BY table_id, shift ORDER BY shift DESC, table_id
"""


@dataclass(frozen=True, slots=True)
class Difference:
    """One table's shift whose journals and controller disagree on the progressive wagers locked."""

    link_id: str
    table_id: str
    shift: str
    journal_cents: int
    controller_cents: int
    differing_rounds: tuple[str, ...]

    @property
    def fault_id(self) -> str:
        # The amounts are in it: a difference that changes is a new alert (the old one is cleared), so an
        # acknowledged alert never silently stands for another amount.
        return f"{_FAULT_PREFIX}:{self.link_id}:{self.shift}:{self.journal_cents}:{self.controller_cents}"

    def message(self) -> str:
        delta = self.controller_cents - self.journal_cents
        rounds = ", ".join(self.differing_rounds)
        return (
            f"progressive link {self.link_id}, shift {self.shift}: the controller's in-meter holds "
            f"{format_money(self.controller_cents)} of progressive wagers, the table's journal locked "
            f"{format_money(self.journal_cents)} ({format_money(delta, signed=True)}); rounds {rounds}"
        )


def reconciliation_rows(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """RECONCILE_SQL's rows with whole-cent ints (PostgreSQL's sums are Decimal) and the difference."""
    out = []
    for row in rows:
        journal, controller = int(row["journal_cents"] or 0), int(row["controller_cents"] or 0)
        out.append({
            "table_id": row["table_id"], "shift": row["shift"], "rounds": int(row["rounds"]),
            "journal_wagers": int(row["journal_wagers"] or 0), "journal_cents": journal,
            "controller_wagers": int(row["controller_wagers"] or 0), "controller_cents": controller,
            "difference_cents": controller - journal,
            "differing_rounds": tuple(row["differing_rounds"] or ()),
        })  # fmt: skip
    return out


def differences(link_id: str, rows: Sequence[Mapping[str, Any]]) -> list[Difference]:
    return [
        Difference(
            link_id,
            r["table_id"],
            r["shift"],
            r["journal_cents"],
            r["controller_cents"],
            r["differing_rounds"],
        )
        for r in reconciliation_rows(rows)
        if r["difference_cents"] != 0
    ]


def levels(paytable_text: str, unit_cents: int, rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One row per paytable line, longest first: its award as text, and 1.39A's hits and wins."""
    try:
        paytable = json.loads(paytable_text)
    except (TypeError, ValueError):
        paytable = {}
    by_line = {int(r["line"]): r for r in rows}
    lines = sorted({int(k) for k in paytable if str(k).isdigit()} | set(by_line), reverse=True)
    out = []
    for line in lines:
        award = paytable.get(str(line))
        if isinstance(award, dict) and "meter_share_percent" in award:
            award_text = f"{award['meter_share_percent']}% of the meter"
        elif isinstance(award, int) and not isinstance(award, bool):
            award_text = f"{award} for 1 ({format_money(award * unit_cents)})"
        else:
            award_text = "not on the paytable"
        row = by_line.get(line, {})
        out.append({
            "line": line, "award": award_text, "hits": int(row.get("hits") or 0),
            "won_cents": int(row.get("won_cents") or 0), "pending": int(row.get("pending") or 0),
            "pending_cents": int(row.get("pending_cents") or 0),
        })  # fmt: skip
    return out


def percent_text(basis_points: int | None) -> str:
    if basis_points is None:
        return ""
    whole, rest = divmod(int(basis_points), BASIS_POINTS_PER_PERCENT)
    return f"{whole}%" if rest == 0 else f"{whole}.{rest:02d}".rstrip("0") + "%"


async def links_exist(query: Query) -> bool:
    """False on a floor whose schema has no progressive link tables (nothing to show or reconcile)."""
    rows = await query("SELECT to_regclass(%s) IS NOT NULL AS present", (LINK_TABLE,))
    return bool(rows and rows[0]["present"])


async def link_list(query: Query) -> list[dict[str, Any]]:
    if not await links_exist(query):
        return []
    return await query(LINKS_SQL, ())


async def link_detail(query: Query, link_id: str) -> dict[str, Any] | None:
    """Everything the progressive page shows of one link, or None when the floor has no such link."""
    if "\x00" in link_id or not await links_exist(query):
        return None
    found = await query(LINK_SQL, (link_id,))
    if not found:
        return None
    link = found[0]
    reconciled = reconciliation_rows(await query(RECONCILE_SQL, (link_id, link_id)))
    return {
        "link": link,
        "parameters": {
            "unit_cents": int(link["unit_cents"]), "base_cents": int(link["base_cents"]),
            "reset_cents": int(link["reset_cents"]), "increment": percent_text(link["increment_bp"]),
            "hidden": percent_text(link["hidden_bp"]),
            "limit_cents": None if link["limit_cents"] is None else int(link["limit_cents"]),
        },
        "meters": {
            "meter_cents": int(link["meter_cents"]), "in_meter_cents": int(link["in_meter_cents"]),
            "wagers": int(link["wagers"]), "reserve_cents": int(link["reserve_cents"]),
            "overflow_cents": int(link["overflow_cents"]),
        },
        "levels": levels(link["paytable_text"], int(link["unit_cents"]), await query(LEVELS_SQL, (link_id,))),
        "tables": await query(BY_TABLE_SQL, (link_id,)),
        "hits": await query(HITS_SQL, (link_id,)),
        "reconciliation": reconciled,
        "differences": [r for r in reconciled if r["difference_cents"] != 0],
    }  # fmt: skip


async def sign_frame(query: Query, link_id: str) -> dict[str, Any] | None:
    """What the sign over the pit shows: the meter, and the prizes pending (the winning tables)."""
    if "\x00" in link_id or not await links_exist(query):
        return None
    rows = await query(
        "SELECT link_id, name, meter_cents, updated_utc FROM floor_progressive_links WHERE link_id = %s",
        (link_id,),
    )
    if not rows:
        return None
    pending = await query(
        "SELECT table_id, seat, line, award_cents FROM floor_progressive_hits "
        "WHERE link_id = %s AND status = 'pending' ORDER BY hit_id",
        (link_id,),
    )
    meter_cents = int(rows[0]["meter_cents"])
    return {
        "link_id": link_id,
        "name": rows[0]["name"],
        "meter_cents": meter_cents,
        "meter_text": format_money(meter_cents),
        "pending": [
            {
                "table_id": p["table_id"],
                "seat": p["seat"],
                "line": p["line"],
                "award_text": format_money(int(p["award_cents"])),
            }
            for p in pending
        ],
    }


# --- the floor service's part: differences raised as floor alerts -------------------------------------
async def raise_reconciliation_alerts(connection: psycopg.AsyncConnection[Any]) -> int:
    """Reconcile every link and make the floor's alerts say so: a difference not yet alerted is raised
    (one alert per table, shift and amounts), an alert whose difference is gone or has changed is
    cleared. Returns the number of alerts raised. Run by the floor service in its own transaction."""

    async def query(sql: str, params: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
        cursor = await connection.execute(sql, params)
        names = [d.name for d in cursor.description or []]
        return [dict(zip(names, row, strict=True)) for row in await cursor.fetchall()]

    raised = 0
    async with connection.transaction():
        if not await links_exist(query):
            return 0
        links = await query("SELECT link_id FROM floor_progressive_links ORDER BY link_id")
        found: list[Difference] = []
        for link in links:
            link_id = str(link["link_id"])
            found += differences(link_id, await query(RECONCILE_SQL, (link_id, link_id)))
        current = {(d.table_id, d.fault_id) for d in found}
        open_rows = await query(
            "SELECT table_id, fault_id FROM floor_alerts WHERE kind = %s AND cleared_utc IS NULL",
            (RECONCILE_ALERT_KIND,),
        )
        for row in open_rows:
            if (row["table_id"], row["fault_id"]) not in current:
                await connection.execute(
                    "UPDATE floor_alerts SET cleared_utc = now() WHERE table_id = %s AND fault_id = %s",
                    (row["table_id"], row["fault_id"]),
                )
        for difference in found:
            cursor = await connection.execute(
                "INSERT INTO floor_alerts (table_id, origin, kind, severity, message, fault_id) "
                "VALUES (%s, 'floor', %s, 'alert', %s, %s) "
                # The same difference again after it had gone (cleared): the alert opens again.
                "ON CONFLICT (table_id, fault_id) WHERE fault_id IS NOT NULL DO UPDATE "
                "SET cleared_utc = NULL WHERE floor_alerts.cleared_utc IS NOT NULL",
                (difference.table_id, RECONCILE_ALERT_KIND, difference.message(), difference.fault_id),
            )
            raised += cursor.rowcount
    return raised

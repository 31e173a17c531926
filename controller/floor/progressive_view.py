"""The floor's view of a linked progressive (docs/floor.md "Progressive: the page, the sign,
reconciliation"): what the floor panel's progressive page, its sign and its CSV show of one link, and
the reconciliation of the link controller's in-meter against the tables' own journals.

Read only: every figure comes from the link controller's store in PostgreSQL and from the tables'
journal entries the floor already holds (``floor_entries``), by the statements of
controller/floor/queries.py (the floor panel's one query module; this module shapes what they
return). Nothing here writes but :func:`raise_reconciliation_alerts`, which the floor service runs
with its writer connection (a reconciliation difference is a floor alert).

The link controller's store (controller/floor's migrations, the linked deployment of
controller/progressive):

- ``floor_progressive_links``: one row a link: its tables, its display meter, reserve and pending
  awards, and ``state``, every 1.39A parameter and meter as the controller folds them
  (``MeterState.to_json``: ``parameters``, ``in_meter_cents``, ``wagers``, ``overflow_cents``,
  ``hits_by_line``, ``wins_by_line_cents``, ...);
- ``floor_progressive_events``: the meter's typed entries in the controller's order; a
  ``progressive_contribution`` per (table, round) holds the controller's count of that round's
  Progressive wagers (``wagers``, ``in_meter_cents``) and what they added to the meter and the reserve;
- ``floor_progressive_awards``: each award with its table, seat, round, line, claim number (the order
  the controller recorded it, the order it is paid in) and status (``pending`` until paid).

Reconciliation (PA 670a.10's count, done for the floor): per (table, round) the journal's count is the
Progressive wagers of the round's ``bets_locked`` entry (the dealer's lock, as the table wrote it)
less those returned (a dead or voided round's, a dead seat's: docs/rules.md, "not for one returned by
a dead hand or a void"), the controller's is its contribution's ``in_meter_cents``; both are summed per table
and per shift, a round placed in the shift its floor round closed in (both sides alike, so a round never
straddles two shifts). Only rounds the floor holds as closed and the link's contribution path has read
past (``floor_progressive_marks``) are compared: a round settled a moment ago that the link has not
counted yet is no difference; a round the controller counted that the floor holds no closed round for
is compared too, placed by the controller's time, and is a difference.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import structlog

from controller.floor.queries import (
    BY_TABLE_SQL,
    CHANGES_SQL,
    HITS_SQL,
    LINK_IDS_SQL,
    LINK_SQL,
    LINKS_SQL,
    PENDING_BY_LINE_SQL,
    RECONCILE_SQL,
    REFUSALS_SQL,
    RELATION_PRESENT_SQL,
    REQUIRED_RELATIONS,
    SIGN_METER_SQL,
    SIGN_PENDING_SQL,
)
from controller.locale import DEFAULT_PROPERTY, PropertySettings, shifts_between
from controller.money import MoneyFormat

log = structlog.get_logger("flushtable.floor")

Params = tuple[Any, ...] | dict[str, Any]
Query = Callable[[str, Params], Awaitable[list[dict[str, Any]]]]
PROGRESSIVE_WAGER = "progressive"  # the wager's name in a bets_locked entry (controller.rules.progressive)
RECONCILE_ALERT_KIND = "progressive_reconciliation"
# The rounds reconciled: those closed within this many seconds (the page's default, and the floor
# service's every run), read through the floor's index by close time, never the whole record again.
RECONCILE_WINDOW_S = 7 * 24 * 3600.0


def reconcile_params(
    link_id: str, window_s: float, prop: PropertySettings, now: datetime | None = None
) -> dict[str, Any]:
    """RECONCILE_SQL's parameters: the link, the window and the property's shifts that cover it (a day
    either side: the database's clock and ours may differ a little)."""
    now = now or datetime.now(UTC)
    shifts = shifts_between(now - timedelta(seconds=window_s, days=1), now + timedelta(days=1), prop)
    return {
        "link": link_id,
        "window_s": window_s,
        "shift_labels": [label for label, _, _ in shifts],
        "shift_starts": [start for _, start, _ in shifts],
        "shifts_end": shifts[-1][2],
    }


MAX_WINDOW_DAYS = 366
_FAULT_PREFIX = "progressive_reconcile"


# The tables the page reads: a floor without them (no linked progressive) shows no link.
@dataclass(frozen=True, slots=True)
class Difference:
    """One table's shift whose journals and controller disagree on the progressive wagers locked."""

    link_id: str
    table_id: str
    shift: str
    journal_cents: int
    controller_cents: int
    differing_rounds: tuple[str, ...]
    money: MoneyFormat = field(default=MoneyFormat(), compare=False)  # the property's (controller/locale.py)

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
            f"{self.money(self.controller_cents)} of Progressive wagers, the table's journal "
            f"{self.money(self.journal_cents)} (locked at the lock, less any returned) "
            f"({self.money(delta, signed=True)}); rounds {rounds}"
        )


def reconciliation_rows(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """RECONCILE_SQL's rows with whole-cent ints (PostgreSQL's sums are Decimal) and the difference."""
    out = []
    for row in rows:
        journal, controller = int(row["journal_cents"] or 0), int(row["controller_cents"] or 0)
        out.append({
            "table_id": row["table_id"], "shift": row["shift"], "rounds": int(row["rounds"]),
            "locked_wagers": int(row["locked_wagers"] or 0), "locked_cents": int(row["locked_cents"] or 0),
            "journal_wagers": int(row["journal_wagers"] or 0), "journal_cents": journal,
            "controller_wagers": int(row["controller_wagers"] or 0), "controller_cents": controller,
            "difference_cents": controller - journal,
            "differing_rounds": tuple(row["differing_rounds"] or ()),
        })  # fmt: skip
    return out


def differences(
    link_id: str, rows: Sequence[Mapping[str, Any]], prop: PropertySettings = DEFAULT_PROPERTY
) -> list[Difference]:
    return [
        Difference(
            link_id,
            r["table_id"],
            r["shift"],
            r["journal_cents"],
            r["controller_cents"],
            r["differing_rounds"],
            prop.money,
        )
        for r in reconciliation_rows(rows)
        if r["difference_cents"] != 0
    ]


def _cents(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def levels(
    state: Mapping[str, Any],
    pending_rows: Sequence[Mapping[str, Any]],
    prop: PropertySettings = DEFAULT_PROPERTY,
) -> list[dict[str, Any]]:
    """One row per paytable line (a level: the longest straight-flush run), longest first: its award,
    and 1.39A's hits and wins (the amounts awarded) per level, with what is pending."""
    parameters = state.get("parameters") or {}
    paytable = parameters.get("paytable") or {}
    unit_cents = _cents(parameters.get("unit_cents"))
    hits = state.get("hits_by_line") or {}
    wins = state.get("wins_by_line_cents") or {}
    pending = {int(r["line"]): r for r in pending_rows}
    lines = {int(k) for k in (*paytable, *hits, *wins) if str(k).isdigit()} | set(pending)
    out = []
    for line in sorted(lines, reverse=True):
        award = paytable.get(str(line))
        if isinstance(award, dict) and "meter_share_percent" in award:
            award_text = f"{award['meter_share_percent']}% of the meter"
        elif isinstance(award, int) and not isinstance(award, bool):
            award_text = f"{award} for 1 ({prop.money(award * unit_cents)})"
        else:
            award_text = "not on the paytable now"
        waiting = pending.get(line, {})
        out.append({
            "line": line, "award": award_text, "hits": _cents(hits.get(str(line))),
            "won_cents": _cents(wins.get(str(line))), "pending": int(waiting.get("pending") or 0),
            "pending_cents": int(waiting.get("pending_cents") or 0),
        })  # fmt: skip
    return out


def _percent(value: object) -> str:
    return "" if value is None else f"{value}%"


async def _has(query: Query, relation: str) -> bool:
    rows = await query(RELATION_PRESENT_SQL, (relation,))
    return bool(rows and rows[0]["present"])


async def links_exist(query: Query) -> bool:
    """False on a floor whose schema has no progressive link tables (nothing to show or reconcile)."""
    for relation in REQUIRED_RELATIONS:
        if not await _has(query, relation):
            return False
    return True


async def link_list(query: Query) -> list[dict[str, Any]]:
    if not await links_exist(query):
        return []
    return await query(LINKS_SQL, ())


async def link_detail(
    query: Query,
    link_id: str,
    *,
    window_s: float = RECONCILE_WINDOW_S,
    prop: PropertySettings = DEFAULT_PROPERTY,
) -> dict[str, Any] | None:
    """Everything the progressive page shows of one link (its reconciliation over the rounds closed
    within ``window_s``), or None when the floor has no such link."""
    if "\x00" in link_id or not await links_exist(query):
        return None
    found = await query(LINK_SQL, (link_id,))
    if not found:
        return None
    link = found[0]
    try:
        state = json.loads(link["state_text"] or "{}")
    except ValueError:
        state = {}
    state = state if isinstance(state, dict) else {}
    parameters = state.get("parameters") or {}
    reconciled = reconciliation_rows(await query(RECONCILE_SQL, reconcile_params(link_id, window_s, prop)))
    return {
        "link": link,
        "opened": bool(parameters),
        "parameters": {
            "unit_cents": parameters.get("unit_cents"), "base_cents": parameters.get("base_cents"),
            "reset_cents": parameters.get("reset_cents"),
            "increment": _percent(parameters.get("increment_percent")),
            "hidden": _percent(parameters.get("hidden_percent")),
            "limit_cents": parameters.get("limit_cents"), "signoff_cents": parameters.get("signoff_cents"),
            "max_round_wagers": parameters.get("max_round_wagers"),
            "paytable_name": parameters.get("paytable_name") or "",
        },
        "meters": {
            "meter_cents": int(link["meter_cents"]),
            **{name: _cents(state.get(name)) for name in (
                "in_meter_cents", "wagers", "reserve_cents", "overflow_cents", "increments_cents",
                "hidden_cents", "resets", "resets_cents", "resets_from_reserve_cents",
                "resets_house_added_cents", "meter_awards_cents", "fixed_awards_cents", "paid_cents")},
        },
        "equations_hold": state.get("equations_hold"),
        "levels": levels(state, await query(PENDING_BY_LINE_SQL, (link_id,)), prop),
        "tables": await query(BY_TABLE_SQL, (link_id, link_id, link_id, link_id)),
        "hits": await query(HITS_SQL, (link_id,)),
        "changes": await query(CHANGES_SQL, (link_id,)),
        "refusals": (
            await query(REFUSALS_SQL, (link_id,)) if await _has(query, "floor_progressive_refusals") else []
        ),
        "reconciliation": reconciled,
        "differences": [r for r in reconciled if r["difference_cents"] != 0],
    }  # fmt: skip


async def sign_frame(
    query: Query, link_id: str, prop: PropertySettings = DEFAULT_PROPERTY
) -> dict[str, Any] | None:
    """What the sign over the pit shows: the meter, and the prizes pending (the winning tables)."""
    if "\x00" in link_id or not await links_exist(query):
        return None
    rows = await query(SIGN_METER_SQL, (link_id,))
    if not rows:
        return None
    pending = await query(SIGN_PENDING_SQL, (link_id,))
    meter_cents = int(rows[0]["meter_cents"])
    return {
        "link_id": link_id,
        "meter_cents": meter_cents,
        "meter_text": prop.money(meter_cents),
        "pending": [
            {
                "table_id": p["table_id"],
                "seat": p["seat"],
                "line": p["line"],
                "award_text": prop.money(int(p["amount_cents"])),
            }
            for p in pending
        ],
    }


# --- the floor service's part: differences raised as floor alerts -------------------------------------
async def reconcile_alerts(connection: psycopg.AsyncConnection[Any], *, prop: PropertySettings) -> int:
    """``raise_reconciliation_alerts`` for the floor service, in a transaction of its caller's: a failure
    of PostgreSQL is the service's (retried like any); any other error of the reconciliation is logged
    and 0 returned, the consumer goes on: a report's fault never stops the floor taking the tables'
    journals. Returns how many alerts were raised."""
    try:
        raised = await raise_reconciliation_alerts(connection, prop=prop)
    except psycopg.OperationalError:
        raise
    except psycopg.Error as error:
        log.error("floor_progressive_reconcile_failed", error=str(error).splitlines()[0][:300])
        return 0
    if raised:
        log.warning("floor_progressive_reconcile_difference", alerts=raised)
    return raised


async def raise_reconciliation_alerts(
    connection: psycopg.AsyncConnection[Any],
    *,
    window_s: float = RECONCILE_WINDOW_S,
    prop: PropertySettings = DEFAULT_PROPERTY,
) -> int:
    """Reconcile every link and make the floor's alerts say so: a difference not yet alerted is raised
    (one alert per table, shift and amounts), an alert whose difference is gone or has changed is
    cleared. Returns the number of alerts raised. Run by the floor service in its own transaction."""

    async def query(sql: str, params: Params = ()) -> list[dict[str, Any]]:
        cursor = await connection.execute(sql, params)
        names = [d.name for d in cursor.description or []]
        return [dict(zip(names, row, strict=True)) for row in await cursor.fetchall()]

    raised = 0
    async with connection.transaction():
        if not await links_exist(query):
            return 0
        links = await query(LINK_IDS_SQL)
        found: list[Difference] = []
        for link in links:
            link_id = str(link["link_id"])
            rows = await query(RECONCILE_SQL, reconcile_params(link_id, window_s, prop))
            found += differences(link_id, rows, prop)
        current = {(d.table_id, d.fault_id) for d in found}
        # Only alerts raised within the window are cleared by their difference's going: an older one's
        # rounds are out of this run's reach, and it stays for a person to acknowledge.
        open_rows = await query(
            "SELECT table_id, fault_id FROM floor_alerts WHERE kind = %s AND cleared_utc IS NULL "
            "AND raised_utc >= now() - make_interval(secs => %s)",
            (RECONCILE_ALERT_KIND, window_s),
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

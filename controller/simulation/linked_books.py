"""The check of a linked progressive's books to the cent, after a run of controller/simulation/
linked_floor.py (bench/bench_progressive.py, the linked floor's tests): the floor's event sums from
PostgreSQL's rows (not the controller's fold), balanced against the link row, the awards' order and
payment, every claim the tables made, and the tables' journals."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import psycopg

if TYPE_CHECKING:
    from controller.simulation.floor.embedded import EmbeddedFloor
    from controller.simulation.linked_floor import LinkedTables

LINK_ID = "L1"


def journal_wagers(path: Path) -> int:
    """The Progressive wagers settled in one table's journal (its round_settled entries' count)."""
    from controller.journal.store import Journal  # noqa: PLC0415

    total = 0
    with Journal.open_existing(path, readonly=True) as journal:
        for stored in journal.replay(kinds=["round_settled"]):
            progressive = getattr(stored.entry, "settlement", {}).get("progressive")
            if isinstance(progressive, dict):
                total += int(progressive["contributions"]["wagers"])
    return total


def _event_sums(connection: psycopg.Connection[Any]) -> tuple[Any, ...]:
    """The link's event sums ``check_books`` balances: increments, hidden, wagers, in-meter, overflow,
    meter awards, resets and what the reserve funded of them, the reset and contribution counts, events."""
    sums = connection.execute(
        "SELECT "
        " COALESCE(sum((entry->>'to_meter_cents')::bigint)"
        "  FILTER (WHERE kind = 'progressive_contribution'), 0),"
        " COALESCE(sum((entry->>'hidden_cents')::bigint)"
        "  FILTER (WHERE kind = 'progressive_contribution'), 0),"
        " COALESCE(sum((entry->>'wagers')::bigint) FILTER (WHERE kind = 'progressive_contribution'), 0),"
        " COALESCE(sum((entry->>'in_meter_cents')::bigint)"
        "  FILTER (WHERE kind = 'progressive_contribution'), 0),"
        " COALESCE(sum((entry->>'overflow_cents')::bigint)"
        "  FILTER (WHERE kind = 'progressive_overflow'), 0),"
        " COALESCE(sum(amount_cents) FILTER (WHERE kind = 'progressive_award_claimed' "
        "   AND entry->>'paid_from' = 'meter'), 0),"
        " COALESCE(sum(amount_cents) FILTER (WHERE kind = 'progressive_reset'), 0),"
        " COALESCE(sum((entry->>'from_reserve_cents')::bigint)"
        "  FILTER (WHERE kind = 'progressive_reset'), 0),"
        " count(*) FILTER (WHERE kind = 'progressive_reset'),"
        " count(*) FILTER (WHERE kind = 'progressive_contribution'),"
        " count(*)"
        " FROM floor_progressive_events WHERE link_id = %s",
        (LINK_ID,),
    ).fetchone()
    assert sums is not None
    return tuple(sums)


def _last_meter_and_reserve(connection: psycopg.Connection[Any], base_cents: int) -> tuple[int, int]:
    """The meter and the reserve as the link's last event that carries each leaves them."""
    last_meter = connection.execute(
        "SELECT (entry->>'meter_after_cents')::bigint FROM floor_progressive_events WHERE link_id = %s "
        "AND entry ? 'meter_after_cents' AND entry->>'meter_after_cents' IS NOT NULL "
        "ORDER BY event_no DESC LIMIT 1",
        (LINK_ID,),
    ).fetchone()
    last_reserve = connection.execute(
        "SELECT (entry->>'reserve_after_cents')::bigint FROM floor_progressive_events WHERE link_id = %s "
        "AND entry ? 'reserve_after_cents' ORDER BY event_no DESC LIMIT 1",
        (LINK_ID,),
    ).fetchone()
    meter = base_cents if last_meter is None else int(last_meter[0])
    reserve = 0 if last_reserve is None else int(last_reserve[0])
    return meter, reserve


def _award_problems(
    awards: Sequence[Any], paid_rows: Sequence[Any], tables: LinkedTables, problems: list[str]
) -> int:
    """The awards' order and payment checked against every claim the tables made (each problem appended
    to ``problems``); the number of claims."""
    numbers = [int(row[0]) for row in awards]
    if numbers != list(range(1, len(awards) + 1)):
        problems.append("claim numbers are not 1..n")
    claimed_order = [int(row[6]) for row in awards]
    if claimed_order != sorted(claimed_order):
        problems.append("awards were not recorded in claim-number order")
    paid_counts = {str(award_id): int(count) for award_id, count in paid_rows}
    unpaid = [row[1] for row in awards if paid_counts.get(str(row[1]), 0) != 1]
    if unpaid:
        problems.append(f"{len(unpaid)} awards not paid exactly once, e.g. {unpaid[:3]}")
    # Paid in the order recorded: among the awards confirmed by a supervisor, a later claim is never
    # paid before an earlier one (a fixed award under the sign-off is paid with its claim).
    paid_order = [int(row[7]) for row in awards if row[7] is not None and row[8]]
    if paid_order != sorted(paid_order):
        problems.append("awards were not paid in the order the controller recorded them")
    # Every claim a table made has its awards, once, for the seats it named.
    by_round: dict[tuple[str, str], list[int]] = {}
    for row in awards:
        by_round.setdefault((str(row[2]), str(row[3])), []).append(int(row[4]))
    claims = 0
    for table in tables.tables.values():
        for claim in table.claims:
            claims += 1
            seats = sorted(hit.seat for hit in claim.hits)
            if sorted(by_round.get((table.table_id, claim.round_id), [])) != seats:
                got = by_round.get((table.table_id, claim.round_id))
                problems.append(f"{table.table_id} {claim.round_id}: awards for seats {got}, claimed {seats}")
    return claims


def check_books(floor: EmbeddedFloor, tables: LinkedTables) -> dict[str, Any]:
    """The must-show equations, from PostgreSQL's rows (sums over the events as stored, not the
    controller's fold) and the tables' journals. ``problems`` empty: every one holds to the cent."""
    problems: list[str] = []
    with psycopg.connect(floor.reporting_dsn) as connection:

        def one(query: str, *args: Any) -> Any:
            row = connection.execute(query, (LINK_ID, *args)).fetchone()
            return None if row is None else row[0]

        base = int(one("SELECT (entry->'after'->>'base_cents')::bigint FROM floor_progressive_events "
                       "WHERE link_id = %s AND event_no = 1"))  # fmt: skip
        sums = _event_sums(connection)
        (increments, hidden, wagers, in_meter, overflow, meter_awards, resets, resets_funded,
         reset_count, contribution_rows, events) = (int(v) for v in sums)  # fmt: skip
        meter, reserve = _last_meter_and_reserve(connection, base)
        link_row = connection.execute(
            "SELECT meter_cents, reserve_cents, events FROM floor_progressive_links WHERE link_id = %s",
            (LINK_ID,),
        ).fetchone()
        if link_row is None or (int(link_row[0]), int(link_row[1]), int(link_row[2])) != (
            meter,
            reserve,
            events,
        ):
            problems.append(f"the link row {link_row} is not the events' ({meter}, {reserve}, {events})")
        if base + increments + resets - meter_awards != meter:
            problems.append(f"meter: {base} + {increments} + resets {resets} - {meter_awards} != {meter}")
        if hidden - resets_funded + overflow != reserve:
            problems.append(f"reserve: {hidden} - {resets_funded} + {overflow} != {reserve}")
        awards = connection.execute(
            "SELECT claim_number, award_id, table_id, round_id, seat, status, claimed_event_no, "
            "paid_event_no, "
            "needs_confirmation "
            "FROM floor_progressive_awards WHERE link_id = %s ORDER BY claim_number",
            (LINK_ID,),
        ).fetchall()
        paid_rows = connection.execute(
            "SELECT award_id, count(*) FROM floor_progressive_events WHERE link_id = %s "
            "AND kind = 'progressive_award_paid' GROUP BY award_id",
            (LINK_ID,),
        ).fetchall()
        refusals = int(one("SELECT count(*) FROM floor_progressive_refusals WHERE link_id = %s"))
    claims = _award_problems(awards, paid_rows, tables, problems)
    journal_count = sum(journal_wagers(tables.directory / f"{t}.sqlite") for t in tables.ids)
    simulated = sum(table.wagers_settled for table in tables.tables.values())
    unit = tables.parameters.settings.unit_cents
    if not wagers == journal_count == simulated or in_meter != journal_count * unit:
        problems.append(
            f"in-meter {wagers} wagers / {in_meter} cents; journals {journal_count}; tables {simulated}"
        )
    return {
        "base_cents": base,
        "increments_cents": increments,
        "resets": reset_count,
        "resets_cents": resets,
        "meter_awards_cents": meter_awards,
        "meter_cents": meter,
        "hidden_cents": hidden,
        "resets_funded_cents": resets_funded,
        "overflow_cents": overflow,
        "reserve_cents": reserve,
        "in_meter_wagers": wagers,
        "in_meter_cents": in_meter,
        "journal_wagers": journal_count,
        "contributions": contribution_rows,
        "awards": len(awards),
        "claims": claims,
        "refused_claims": refusals,
        "events": events,
        "problems": problems,
    }

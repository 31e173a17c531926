"""The bench's confirmation phase (controller/simulation/linked_floor.py ``confirm_all``) when a
supervisor's confirmation is committed by the floor but its answer does not reach the table in time:
the table says "link is down", the harness asks again, and the floor rightly answers the same request
``replayed``. That is a confirmation (the award paid exactly once), not a failure of the run.

Real parts: the floor process (`flushtable floor serve`), nats-server and PostgreSQL. The lost answer is
made by holding the link row's lock in PostgreSQL (as a slow commit on a loaded machine holds it) until
the table has given up on its first attempt."""

from __future__ import annotations

import asyncio
from pathlib import Path

import psycopg

from controller.progressive.model import Hit
from controller.simulation.linked_floor import (
    LINK_ID,
    FloorProcess,
    LinkedTables,
    check_books,
    confirm_all,
    default_parameters,
    floor_holds_journals,
    paid_events,
    wait_for,
    write_spec,
)
from tests.floor.conftest import MakeFloor
from tests.floor.helpers import table_ids

BOUND_S = 120.0  # a bound on conditions (a loaded machine), never a window the test relies on


def test_a_confirmation_committed_but_unanswered_is_confirmed_once_on_its_replay(
    tmp_path: Path, make_floor: MakeFloor
) -> None:
    floor = make_floor(table_ids(1), ack_wait_s=2)
    parameters = default_parameters()
    process = FloorProcess(
        write_spec(tmp_path / "floor-process.json", floor, floor.table_ids, parameters.to_json())
    )

    async def scenario() -> tuple[int, dict[str, object]]:
        process.start()
        tables = LinkedTables(
            floor, tmp_path / "tables", list(floor.table_ids), parameters, link_timeout_s=1.0
        )
        tables.start()
        try:
            await wait_for(tables.all_up, BOUND_S, "the table's link up")
            table_id = tables.ids[0]
            table, client = tables.tables[table_id], tables.clients[table_id]
            claim = table.play_round(7, [Hit(1, 7)])  # a 100% meter award: it waits for a supervisor
            assert claim is not None
            client.submit(claim.round_id, claim.hits, through_seq=claim.through_seq)
            await wait_for(lambda: tables.pending() == 0, BOUND_S, "the claim answered")
            await wait_for(
                lambda: floor_holds_journals(floor, tables), BOUND_S, "the floor holding the journal"
            )
            with psycopg.connect(floor.writer_dsn) as holder:  # the floor's commit waits on this lock
                holder.execute(
                    "SELECT 1 FROM floor_progressive_links WHERE link_id = %s FOR UPDATE", (LINK_ID,)
                )
                client.unanswered_since_s = None
                confirming = asyncio.create_task(confirm_all(floor, tables, timeout_s=BOUND_S))
                # The table gave up on its first attempt (no answer within its bound): "link is down".
                await wait_for(
                    lambda: client.unanswered_since_s is not None, BOUND_S, "the first attempt lost"
                )
                holder.commit()  # the floor commits that attempt now; its answer goes nowhere
            confirmed = await asyncio.wait_for(confirming, BOUND_S)
            await wait_for(
                lambda: floor_holds_journals(floor, tables), BOUND_S, "the floor holding the journal"
            )
            answer = client.answers[claim.round_id].answer
            assert answer is not None
            award_ids = [award.claimed.award_id for award in answer.awards]
            assert [paid_events(floor, award_id) for award_id in award_ids] == [1]
            return confirmed, check_books(floor, tables)
        finally:
            await tables.close()
            process.stop()

    confirmed, books = asyncio.run(scenario())
    assert confirmed == 1
    assert books["problems"] == [], books
    assert books["awards"] == 1

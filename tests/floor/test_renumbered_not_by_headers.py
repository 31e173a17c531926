"""No false ``stream_renumbered``: the floor judges a renumbered stream by the messages' bodies (table,
seq, hash: what the chain covers), never by the position header any publisher with a table's credentials
may set, and a resend or a real gap is not a renumbering. (From a review of the first version, which read
the header: a resend of entry 1 with a forged header ``999.0`` raised the alert 9 times in 5 s, the table
read again from the start at every sweep; a true resend, or an entry without the header, followed by a
gap raised it beside the gap.) Each case waits for three idle sweeps after the act, not for a time."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path

from controller.floor.service import FloorService
from controller.simulation.floor.embedded import EmbeddedFloor
from controller.uplink import wire
from tests.floor.conftest import MakeFloor
from tests.floor.helpers import Running, Tables, wait_until
from tests.floor.test_bad_input import _alerts, _all_on_the_floor, _next_entry_json, _publish_as


def _run_with_sweeps(
    floor: EmbeddedFloor, tables: Tables, table_id: str, act: Callable[[], Awaitable[None]]
) -> None:
    async def scenario() -> None:
        running = Running(floor, tables)
        running.start_uplinks()
        service = FloorService(floor.floor_config(sweep_interval_s=0.2, fetch_timeout_s=0.1))
        running.tasks.append(asyncio.create_task(service.run(running.stop)))
        try:
            await _all_on_the_floor(floor, tables, [table_id], "before")
            await act()
            swept = service.status.sweeps

            async def three_more_sweeps() -> bool:
                return service.status.sweeps >= swept + 3

            await wait_until(three_more_sweeps, 120, "three idle sweeps after the act")
        finally:
            await running.close()

    asyncio.run(scenario())


def test_a_resend_with_a_forged_position_header_is_no_renumbering(
    tmp_path: Path, make_floor: MakeFloor
) -> None:
    floor = make_floor(["A"], ack_wait_s=2)
    tables = Tables(tmp_path / "tables", ["A"])
    tables.play("A", 1)
    first = next(iter(tables.journals["A"].entries()))

    async def act() -> None:
        # Entry 1 again, valid, beyond the duplicate window (another id), its position header a lie.
        await _publish_as(
            floor, "A", wire.entry_body(first.public_json()), "A:again", {wire.POSITION: "999.0"}
        )

    _run_with_sweeps(floor, tables, "A", act)
    assert _alerts(floor) == []
    tables.close()


def test_a_resend_then_a_gap_is_a_gap_and_no_renumbering(tmp_path: Path, make_floor: MakeFloor) -> None:
    floor = make_floor(["C"], ack_wait_s=2)
    tables = Tables(tmp_path / "tables", ["C"])
    tables.play("C", 1)
    first = next(iter(tables.journals["C"].entries()))

    async def act() -> None:
        await _publish_as(floor, "C", wire.entry_body(first.public_json()), "C:again", {wire.POSITION: "1.0"})
        gap = _next_entry_json(tables, "C")
        gap["seq"] += 3
        await _publish_as(floor, "C", wire.entry_body(gap), "C:gap")

    _run_with_sweeps(floor, tables, "C", act)
    assert [kind for _, _, kind, _ in _alerts(floor)] == ["gap"]
    tables.close()


def test_an_entry_without_its_header_then_a_gap_is_a_gap_and_no_renumbering(
    tmp_path: Path, make_floor: MakeFloor
) -> None:
    floor = make_floor(["B"], ack_wait_s=2)
    tables = Tables(tmp_path / "tables", ["B"])
    tables.play("B", 1)

    async def act() -> None:
        following = _next_entry_json(tables, "B")
        await _publish_as(floor, "B", wire.entry_body(following), "B:next")  # chained, no position header
        gap = dict(following)
        gap["seq"] += 3
        await _publish_as(floor, "B", wire.entry_body(gap), "B:gap")

    _run_with_sweeps(floor, tables, "B", act)
    assert [kind for _, _, kind, _ in _alerts(floor)] == ["gap"]
    tables.close()

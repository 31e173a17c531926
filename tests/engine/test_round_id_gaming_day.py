"""Round ids are dated by the gaming day (controller/locale.py) of the table's clock, and the floor
demo's simulated tables run on the demo's injected wall clock: their ids are the day the demo runs
(issue 24: they were dated 2027-01-15 whatever the day). Real journals; the clock is injected."""

from __future__ import annotations

import functools
import random
from datetime import UTC, datetime
from pathlib import Path

from controller.journal.store import Journal
from controller.locale import DEFAULT_PROPERTY, property_settings
from controller.names import ROUND_ID_PATTERN
from controller.simulation.floor.demo import sim_tables
from controller.simulation.floor_tables import SimTable

BERLIN = property_settings(time_zone="Europe/Berlin")


def _days(journal: Journal) -> set[str]:
    ids = {entry.round_id for entry in journal.entries(kinds=["round_started"])}
    days = set()
    for round_id in ids:
        match = ROUND_ID_PATTERN.match(str(round_id))
        assert match is not None, round_id
        days.add(match["day"])
    return days


def test_the_demo_s_tables_date_their_rounds_by_the_injected_clock_s_gaming_day(tmp_path: Path) -> None:
    ids = ["D1", "D2"]
    journals = {t: Journal.open(tmp_path / f"{t}.sqlite", t, synchronous="OFF") for t in ids}
    now_s = datetime(2026, 12, 4, 12, 0, tzinfo=UTC).timestamp()
    try:
        for sim in sim_tables(journals, ids, random.Random(3), clock=lambda: now_s):
            for _ in range(3):
                sim.play_round()
        for journal in journals.values():
            assert _days(journal) == {"20261204"}
    finally:
        for journal in journals.values():
            journal.close()


def test_a_round_after_midnight_is_dated_by_its_gaming_day(tmp_path: Path) -> None:
    """03:00 UTC on 5 December is the grave shift of the 4th's gaming day (it starts at 06:00 UTC); in
    Berlin 05:30 UTC (06:30 CET) is already the 5th's."""
    cases = [
        (datetime(2026, 12, 5, 3, 0, tzinfo=UTC), DEFAULT_PROPERTY, "20261204"),
        (datetime(2026, 12, 5, 5, 30, tzinfo=UTC), BERLIN, "20261205"),
        (datetime(2026, 12, 5, 4, 30, tzinfo=UTC), BERLIN, "20261204"),
    ]
    for index, (moment, prop, day) in enumerate(cases):
        with Journal.open(tmp_path / f"T{index}.sqlite", f"T{index}", synchronous="OFF") as journal:
            now_s = moment.timestamp()
            sim = SimTable(
                journal,
                "high-card-flush",
                random.Random(index),
                property_settings=prop,
                clock=functools.partial(float, now_s),
            )
            sim.play_round()
            assert _days(journal) == {day}, (moment, day)

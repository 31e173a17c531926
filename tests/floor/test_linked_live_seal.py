"""A table linked to the floor's progressive seals its journal while it runs (docs/journal.md "Sealing
while the table runs", docs/floor.md "Linked progressive"): `flushtable run` as a child process with
[uplink] and a [progressive] link, the real floor (nats-server, PostgreSQL) and its linked progressive
serving, a tiny ``segment_entries``. The link's lookup of a settled round in the journal opens its
connection per read: one held for the daemon's life kept SQLite from leaving WAL mode, so every seal
waited for the next start ("cannot seal now: database is locked (another connection?)")."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from controller.floor.progressive import LinkedProgressive
from controller.floor.service import FloorService
from controller.journal.seals import read_seal, seal_numbers
from controller.journal.segments import verify_segments
from controller.journal.store import Journal
from controller.simulation import linked_floor as lf
from tests.floor.conftest import MakeFloor
from tests.floor.helpers import run_daemon_until, write_linked_table

SEGMENT_ENTRIES = 300
# Only a failing test waits this long: the table plays until two seals are made (a loaded machine).
RUN_TIMEOUT_S = 300.0
# What a seal refused by another connection on the file says (controller/journal/segments.py SealBusy):
# the bug this test was written for. The daemon's other deferrals (records waiting to be committed, the
# checkpoint thread copying, the uplink reading, a claim the floor has not answered yet) are its
# ordinary waits on a busy machine: the seal is made at a later round's close.
ANOTHER_CONNECTION = "cannot seal now"


def seal_deferrals(output: str) -> list[str]:
    """The reasons of the daemon's ``journal_seal_deferred`` lines (its log is one JSON object a line)."""
    reasons: list[str] = []
    for line in output.splitlines():
        if not line.startswith("{"):
            continue  # not the daemon's structured log (asyncio's own warnings)
        try:
            record = json.loads(line)
        except ValueError:
            continue  # a line cut short at the end of the read
        if isinstance(record, dict) and record.get("event") == "journal_seal_deferred":
            reasons.append(str(record.get("reason")))
    return reasons


def busy_file_deferrals(output: str) -> list[str]:
    return [reason for reason in seal_deferrals(output) if ANOTHER_CONNECTION in reason]


def test_a_linked_table_seals_while_it_runs(tmp_path: Path, make_floor: MakeFloor) -> None:
    floor = make_floor(["SIM1"], ack_wait_s=2)
    journal_path = tmp_path / "tables" / "SIM1.sqlite"
    config_path, floor_file = write_linked_table(
        floor, tmp_path, journal_path, segment_entries=SEGMENT_ENTRIES
    )
    linked_config = lf.linked_config_of(floor_file)
    log_path = tmp_path / "daemon.log"

    async def scenario() -> int:
        stop = asyncio.Event()
        service = asyncio.create_task(FloorService(floor.floor_config()).run(stop))
        progressive = LinkedProgressive(linked_config)
        progressive_task = asyncio.create_task(progressive.run(stop))
        await lf.wait_for(progressive.ready.is_set, 60, "the linked progressive serving")
        # The table plays until two seals are made, then is stopped (SIGTERM: the round in play
        # finishes). A fixed count of rounds raced the seals: on a loaded machine a seal can wait a
        # round or more for the daemon's ordinary reasons, and the last round ended before the second.
        try:

            def sealed_twice(output: str) -> bool:
                # The bug refused every seal: fail on its first line, not after the wait's bound.
                assert not busy_file_deferrals(output), busy_file_deferrals(output)[:5]
                return len(seal_numbers(journal_path)) >= 2

            returncode = await run_daemon_until(
                config_path, log_path, sealed_twice, RUN_TIMEOUT_S, "two seals while the table runs"
            )
        finally:
            stop.set()
            await asyncio.gather(progressive_task, service)
        return returncode

    returncode = asyncio.run(scenario())
    output = log_path.read_text(errors="replace")
    assert returncode == 0, output[-2000:]
    # A new journal: nothing is due at its start, so every seal was made while the table ran.
    numbers = seal_numbers(journal_path)
    assert len(numbers) >= 2, (numbers, seal_deferrals(output)[:5])
    first = read_seal(journal_path, numbers[0])
    assert first is not None
    with Journal.open_existing(journal_path) as journal:
        opened = list(journal.entries(kinds=["table_opened"]))
        last = journal.last_entry()
    assert len(opened) == 1  # one start: the seals were not made by a second one
    assert last is not None
    assert last.seq > first.last_seq
    # No seal was refused for another connection on the file (the link's lookups hold none between
    # reads); the daemon's ordinary waits are allowed.
    assert busy_file_deferrals(output) == [], seal_deferrals(output)
    verdicts = verify_segments(journal_path, key=None)
    assert verdicts
    assert all(verdict.ok for verdict in verdicts), [verdict.line for verdict in verdicts]

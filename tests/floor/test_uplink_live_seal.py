"""A table with ``[uplink]`` seals its journal while it runs (docs/journal.md "Sealing while the table
runs", docs/floor.md): `flushtable run` as a child process, the real floor (nats-server, PostgreSQL), a
tiny ``segment_entries`` so that segments are sealed between rounds while the uplink streams. The uplink
reads the journal only under its lock (never during a seal) and keeps its mark beside the journal, so
the sealed files are never written after their seal (their sha256 holds) and the floor holds every
entry exactly once, its chain verified."""

from __future__ import annotations

import asyncio
from pathlib import Path

from controller.config import DEFAULT_CONFIG_TOML
from controller.floor.service import FloorService
from controller.journal.seals import read_seal, seal_numbers
from controller.journal.segments import verify_segments
from controller.journal.store import Journal
from controller.uplink.uplink import Uplink, mark_path, read_high_water_mark
from controller.uplink.wire import STREAM_NAME, stored_subject
from tests.floor.conftest import MakeFloor
from tests.floor.helpers import (
    expected_messages,
    floor_count,
    floor_problems,
    last_seq,
    private_count,
    run_daemon_until,
    wait_until,
)

SEGMENT_ENTRIES = 300
# Only a failing test waits this long: the table runs until its uplink is past a seal (a loaded machine).
RUN_TIMEOUT_S = 300.0


def test_a_table_with_uplink_seals_while_it_runs_and_the_floor_holds_every_entry_once(
    tmp_path: Path, make_floor: MakeFloor
) -> None:
    floor = make_floor(["SIM1"], ack_wait_s=2)
    assert floor.tls is not None
    assert floor.nats is not None
    journal_path = tmp_path / "var" / "journal.sqlite"
    (tmp_path / "nats.pw").write_text(floor.passwords["nats:table:SIM1"] + "\n")
    config = DEFAULT_CONFIG_TOML.replace(
        'path = "var/journal.sqlite"',
        f'path = "{journal_path}"\nsegment_entries = {SEGMENT_ENTRIES}\nsegment_per_gaming_day = false',
    ) + (
        "\n[uplink]\n"
        f'servers = ["{floor.nats.url}"]\n'
        'site = "main"\n'
        'user = "table-SIM1"\n'
        'password_file = "nats.pw"\n'
        f'ca_file = "{floor.tls.ca_cert}"\n'
    )
    config_path = tmp_path / "table.toml"
    config_path.write_text(config)

    def read_past_a_seal() -> bool:
        """Two seals made, and the daemon's uplink acked past the first one's last entry."""
        numbers = seal_numbers(journal_path)
        first_seal = read_seal(journal_path, numbers[0]) if numbers else None
        mark = read_high_water_mark(journal_path)
        return (
            len(numbers) >= 2
            and first_seal is not None
            and mark is not None
            and mark.position.entry_seq > first_seal.last_seq
        )

    async def scenario() -> None:
        stop = asyncio.Event()
        service = FloorService(floor.floor_config())
        service_task = asyncio.create_task(service.run(stop))
        # The table plays until its uplink has read on across a seal, then is stopped (SIGTERM: the
        # round in play finishes). A fixed count of rounds made that a race: on a loaded machine the
        # uplink, slower than the table, could still be short of the first seal when the last round ended.
        log_path = tmp_path / "daemon.log"
        returncode = await run_daemon_until(
            config_path,
            log_path,
            lambda _output: read_past_a_seal(),
            RUN_TIMEOUT_S,
            "the uplink acked past the first seal",
        )
        output = log_path.read_text(errors="replace")
        assert returncode == 0, output[-2000:]
        # A new journal: nothing is due at its start, so every seal was made while the table ran.
        numbers = seal_numbers(journal_path)
        assert len(numbers) >= 2, (numbers, output[-2000:])
        assert mark_path(journal_path).is_file()
        assert read_past_a_seal()  # the daemon's uplink published past the first seal: read on across it
        # Whatever its last moments left unsent, an uplink started again sends (nothing twice).
        uplink = Uplink(floor.uplink_config("SIM1"), journal_path, "SIM1")
        uplink_task = asyncio.create_task(uplink.run(stop))
        with Journal.open_existing(journal_path) as journal:
            total = last_seq(journal)
        hashes, privates = expected_messages(journal_path, "SIM1")
        assert sorted(hashes) == list(range(1, total + 1))

        async def all_there() -> bool:
            return floor_count(floor) == total and private_count(floor) == len(privates)

        await wait_until(all_there, 60, "the table's journal on the floor")
        stop.set()
        await asyncio.gather(service_task, uplink_task)
        # Exactly once on the stream too: one message per entry and per released private part.
        admin = await floor.connect_admin()
        subject = stored_subject(floor.site, "SIM1")
        info = await admin.jetstream().stream_info(STREAM_NAME, subjects_filter=subject)
        await admin.close()
        assert info.state.subjects is not None
        assert info.state.subjects[subject] == total + len(privates)

    asyncio.run(scenario())
    assert floor_problems(floor, {"SIM1": journal_path}) == []
    # The sealed files were not written after their seals: each one's sha256 still matches.
    verdicts = verify_segments(journal_path, key=None)
    assert verdicts
    assert all(verdict.ok for verdict in verdicts), [verdict.line for verdict in verdicts]

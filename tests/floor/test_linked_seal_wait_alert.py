"""A linked table whose seal waits for a claim the floor has not answered says so (docs/journal.md
"Sealing while the table runs"): `flushtable run` as a child process with [uplink] and a [progressive]
link, the real floor (nats-server, PostgreSQL), a tiny ``segment_entries``, and a journal holding a claim
its floor never answered (its linked progressive down). The table deals on; its open segment passes
due and then the bound (a tenth of segment_entries past due), and the daemon journals a non-latching
``journal_error`` alert naming the wait. The linked progressive comes back, the claim is answered, the
seal proceeds, and the alert is cleared (a ``fault_cleared`` of the same fault id)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

from controller.floor.progressive import LinkedProgressive
from controller.floor.service import FloorService
from controller.journal.seals import seal_numbers, segments_dir
from controller.journal.segments import verify_segments
from controller.progressive.linked import unanswered_claims
from controller.progressive.model import Hit, parse_parameters
from controller.simulation import linked_floor as lf
from tests.floor.conftest import MakeFloor
from tests.floor.helpers import LINKED_PROGRESSIVE, write_linked_table

SEGMENT_ENTRIES = 300  # the bound: 330 entries, about four rounds
SEAL_WAIT_BY = "journal-seal"
BOUND_S = 240  # each wait's bound, far above what a loaded machine takes


def _entries(journal_path: Path, kind: str) -> list[dict[str, object]] | None:
    """The payloads of ``kind`` across the journal's files, oldest first, each with its ``seq`` added
    (None: a seal moved a file while it was read; ask again)."""
    files = [*sorted(segments_dir(journal_path).glob("segment-*.sqlite")), journal_path]
    found: list[tuple[int, dict[str, object]]] = []
    for file in files:
        if not file.exists():
            return None
        try:
            connection = sqlite3.connect(f"file:{file}?mode=ro", uri=True)
            try:
                rows = connection.execute(
                    "SELECT seq, payload FROM journal WHERE kind = ? ORDER BY seq", (kind,)
                ).fetchall()
            finally:
                connection.close()
        except sqlite3.Error:
            return None
        found.extend((int(seq), {**json.loads(payload), "seq": int(seq)}) for seq, payload in rows)
    return [payload for _seq, payload in sorted(found, key=lambda pair: pair[0])]


def _seal_wait_alerts(journal_path: Path) -> list[dict[str, object]]:
    raised = _entries(journal_path, "fault_raised") or []
    return [payload for payload in raised if payload.get("by") == SEAL_WAIT_BY]


def _cleared(journal_path: Path) -> list[dict[str, object]]:
    cleared = _entries(journal_path, "fault_cleared") or []
    return [payload for payload in cleared if payload.get("by") == SEAL_WAIT_BY]


def test_a_seal_waiting_for_an_unanswered_claim_raises_an_alert_and_clears_it(
    tmp_path: Path, make_floor: MakeFloor
) -> None:
    floor = make_floor(["SIM1"], ack_wait_s=2)
    tables_dir = tmp_path / "tables"
    journal_path = tables_dir / "SIM1.sqlite"
    config_path, floor_file = write_linked_table(
        floor, tmp_path, journal_path, segment_entries=SEGMENT_ENTRIES
    )
    linked_config = lf.linked_config_of(floor_file)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    command = [sys.executable, "-m", "controller.cli", "run", "--config", str(config_path), "--seed", "5",
               "--time-scale", "20", "--no-panel", "--log-level", "warning"]  # fmt: skip

    async def scenario() -> tuple[int, str]:
        stop = asyncio.Event()
        service = asyncio.create_task(FloorService(floor.floor_config()).run(stop))
        progressive_stop = asyncio.Event()
        progressive = LinkedProgressive(linked_config)
        progressive_task = asyncio.create_task(progressive.run(progressive_stop))
        await lf.wait_for(progressive.ready.is_set, 60, "the linked progressive serving")
        # A claim the floor never answers: the table's real writer and link client, the floor's
        # linked progressive down at the claim.
        tables = lf.LinkedTables(floor, tables_dir, ["SIM1"], parse_parameters(LINKED_PROGRESSIVE))
        tables.start()
        table, client = tables.tables["SIM1"], tables.clients["SIM1"]
        await lf.wait_for(tables.all_up, 60, "the link up")
        progressive_stop.set()
        await progressive_task
        lost = table.play_round(3, [Hit(1, 4)])
        assert lost is not None
        assert (await client.claim(lost.round_id, lost.hits, through_seq=lost.through_seq)).pending
        await tables.close()
        assert [claim.round_id for claim in unanswered_claims(journal_path)] == [lost.round_id]
        anchored = await asyncio.to_thread(
            subprocess.run,
            [sys.executable, "-m", "controller.cli", "journal", "anchor", "--config", str(config_path)],
            env=env, capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert anchored.returncode == 0, anchored.stderr
        # The daemon deals on with the claim unanswered: its seal comes due and waits past the bound.
        # Its output to files, not pipes: a pipe nobody reads until the end fills (64 KiB of warnings
        # while the claim waits), and the daemon then blocked on its next write: it dealt no more, never
        # cleared the alert, and did not stop on SIGTERM (a CI run: both waits timed out, 362 s).
        daemon_err = (tmp_path / "daemon.err").open("w+")
        daemon = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=daemon_err, text=True)
        try:
            await lf.wait_for(lambda: _seal_wait_alerts(journal_path), BOUND_S, "the seal-wait alert")
            assert seal_numbers(journal_path) == []  # it waited: nothing sealed
            # The floor's linked progressive comes back: the claim is answered, the seal proceeds.
            progressive_stop = asyncio.Event()
            again = LinkedProgressive(linked_config)
            progressive_task = asyncio.create_task(again.run(progressive_stop))
            await lf.wait_for(lambda: _cleared(journal_path), BOUND_S, "the seal-wait alert cleared")
        finally:
            daemon.send_signal(signal.SIGTERM)
            await asyncio.to_thread(daemon.wait, timeout=120)
            daemon_err.seek(0)
            err = daemon_err.read()
            daemon_err.close()
            progressive_stop.set()
            await progressive_task
            stop.set()
            await service
        return daemon.returncode, err

    returncode, err = asyncio.run(scenario())
    assert returncode == 0, err[-3000:]
    cleared = _cleared(journal_path)
    assert cleared, "the seal-wait alert was never cleared"
    # Once per wait: one alert before the seal that ended the wait. The table deals on until the test
    # stops it, so the next segment may come due and wait again (another claim in flight): that is
    # another wait, with its own alert, after the seal.
    alerts = [a for a in _seal_wait_alerts(journal_path) if int(str(a["seq"])) < int(str(cleared[0]["seq"]))]
    assert len(alerts) == 1, alerts
    alert = alerts[0]
    assert alert["kind"] == "journal_error"
    assert alert["severity"] == "alert"  # not latching: the table deals on
    reason = alert["reason"]
    assert isinstance(reason, dict)
    assert "segment not sealed" in str(reason["message"])
    assert "waits:" in str(reason["message"])  # the wait named (the claim, as a rule)
    assert cleared[0]["fault_id"] == alert["fault_id"]
    assert "sealed" in str(cleared[0]["reason"])
    assert seal_numbers(journal_path)  # the seal proceeded
    verdicts = verify_segments(journal_path, key=None)
    assert all(verdict.ok for verdict in verdicts), [verdict.line for verdict in verdicts]

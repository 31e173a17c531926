"""A linked table restarted with claims unanswered (docs/floor.md "Linked progressive", restart): the
real table daemon (a child process) started on a journal whose rounds settled with Progressive hits
while the table's claims got no answer it kept. One claim the floor had recorded (its answer lost with
the table's memory), one never answered (the floor's progressive down at the claim). At the start the
daemon re-derives both from its journal and asks again with the same (table, round) key once the link is
back: the floor records the second once and answers the first with its first answer. The floor's rows
and the table's journal show each claim once; a third start asks nothing."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import psycopg

from controller.floor.progressive import LinkedProgressive
from controller.floor.service import FloorService
from controller.progressive.linked import ANSWERED_KIND, unanswered_claims
from controller.progressive.model import Hit, parse_parameters
from controller.simulation import linked_floor as lf
from tests.floor.conftest import MakeFloor
from tests.floor.helpers import LINKED_PROGRESSIVE, write_linked_table


def _answered_rounds(journal_path: Path) -> list[str]:
    connection = sqlite3.connect(f"file:{journal_path}?mode=ro", uri=True)
    try:
        rows = connection.execute(
            "SELECT round_id FROM journal WHERE kind = ? ORDER BY seq", (ANSWERED_KIND,)
        ).fetchall()
    finally:
        connection.close()
    return [str(row[0]) for row in rows]


def _floor_claims(dsn: str) -> list[tuple[str, int]]:
    with psycopg.connect(dsn) as connection:
        rows = connection.execute(
            "SELECT round_id, seat FROM floor_progressive_awards WHERE table_id = 'SIM1' "
            "ORDER BY claim_number"
        ).fetchall()
    return [(str(round_id), int(seat)) for round_id, seat in rows]


def test_a_restarted_linked_table_asks_again_and_is_paid_once(tmp_path: Path, make_floor: MakeFloor) -> None:
    floor = make_floor(["SIM1"], ack_wait_s=2)
    tables_dir = tmp_path / "tables"
    journal_path = tables_dir / "SIM1.sqlite"
    config_path, floor_file = write_linked_table(floor, tmp_path, journal_path)
    linked_config = lf.linked_config_of(floor_file)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    command = [sys.executable, "-m", "controller.cli", "run", "--config", str(config_path), "--no-autoplay",
               "--no-panel", "--log-level", "warning"]  # fmt: skip

    async def scenario() -> tuple[str, str]:
        stop = asyncio.Event()
        service = asyncio.create_task(FloorService(floor.floor_config()).run(stop))
        progressive_stop = asyncio.Event()
        progressive = LinkedProgressive(linked_config)
        progressive_task = asyncio.create_task(progressive.run(progressive_stop))
        await lf.wait_for(progressive.ready.is_set, 60, "the linked progressive serving")
        # Before the restart: the table's journal (the real writer) and its link client, real uplink.
        tables = lf.LinkedTables(floor, tables_dir, ["SIM1"], parse_parameters(LINKED_PROGRESSIVE))
        tables.start()
        table, client = tables.tables["SIM1"], tables.clients["SIM1"]
        await lf.wait_for(tables.all_up, 60, "the link up")
        recorded = table.play_round(3, [Hit(2, 3)])
        assert recorded is not None
        asked_again = False
        for _ in range(600):  # the floor answers once it holds the round (each request bounded)
            answer = await client.claim(recorded.round_id, recorded.hits, through_seq=recorded.through_seq)
            if not answer.pending:
                break
            asked_again = True
        # Asked again after an answer that did not come in time (a loaded machine), the floor may have
        # recorded the first ask: its answer to the same request is then "replayed" (recorded once; the
        # floor's rows are checked below).
        assert answer.status == "recorded" or (asked_again and answer.status == "replayed"), answer
        # The floor's progressive goes down; the next round settles with a hit, its claim unanswered.
        progressive_stop.set()
        await progressive_task
        lost = table.play_round(3, [Hit(1, 4)])
        assert lost is not None
        assert (await client.claim(lost.round_id, lost.hits, through_seq=lost.through_seq)).pending
        await tables.close()  # the table stops: what it kept in memory is gone
        assert [c.round_id for c in unanswered_claims(journal_path)] == [recorded.round_id, lost.round_id]
        # The link comes back; the table daemon starts on the same journal.
        progressive_stop = asyncio.Event()
        again = LinkedProgressive(linked_config)
        progressive_task = asyncio.create_task(again.run(progressive_stop))
        await lf.wait_for(again.ready.is_set, 60, "the linked progressive serving again")
        anchored = await asyncio.to_thread(
            subprocess.run,
            [sys.executable, "-m", "controller.cli", "journal", "anchor", "--config", str(config_path)],
            env=env, capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert anchored.returncode == 0, anchored.stderr  # the journal's first writer was not the daemon
        daemon = _started(command, env, tmp_path / "daemon.err")
        try:
            await lf.wait_for(lambda: len(_answered_rounds(journal_path)) >= 2, 60, "both claims answered")
        except AssertionError:
            _code, err = await _stopped(daemon, tmp_path / "daemon.err")
            raise AssertionError(f"no answers journaled; the daemon said: {err[-3000:]!r}") from None
        code, err = await _stopped(daemon, tmp_path / "daemon.err")
        assert code == 0, err[-2000:]
        # A third start: nothing left to ask.
        assert unanswered_claims(journal_path) == []
        opened, ready = _opened(journal_path), _count(journal_path, "device_ready")
        third = _started(command, env, tmp_path / "third.err")
        await lf.wait_for(lambda: _opened(journal_path) > opened, 120, "the third start journaled")
        # Its devices ready: journaled once the daemon handles SIGTERM (its table_opened comes before its
        # signal handlers are installed; a SIGTERM in between is the default one's: exit -15).
        await lf.wait_for(
            lambda: _count(journal_path, "device_ready") > ready, 120, "the third start's devices"
        )
        code, err = await _stopped(third, tmp_path / "third.err")
        assert code == 0, err[-2000:]
        progressive_stop.set()
        stop.set()
        await asyncio.gather(progressive_task, service)
        return recorded.round_id, lost.round_id

    recorded_round, lost_round = asyncio.run(scenario())
    assert _answered_rounds(journal_path) == [recorded_round, lost_round]  # each once, in claim order
    assert _floor_claims(floor.reporting_dsn) == [(recorded_round, 2), (lost_round, 1)]  # each once
    with psycopg.connect(floor.reporting_dsn) as connection:
        row = connection.execute(
            "SELECT count(*) FROM floor_progressive_events WHERE kind = 'progressive_award_claimed'"
        ).fetchone()
    assert row is not None
    assert int(row[0]) == 2
    details = _details(journal_path)
    assert "replayed" in details[0]  # the floor's first answer: recorded before the restart
    assert "replayed" not in details[1]


def _details(journal_path: Path) -> list[str]:
    connection = sqlite3.connect(f"file:{journal_path}?mode=ro", uri=True)
    try:
        rows = connection.execute(
            "SELECT payload FROM journal WHERE kind = ? ORDER BY seq", (ANSWERED_KIND,)
        ).fetchall()
    finally:
        connection.close()
    return [str(json.loads(row[0])["answer"]) for row in rows]


def _opened(journal_path: Path) -> int:
    """How many times a daemon opened the table on this journal (its start entry, table_opened)."""
    return _count(journal_path, "table_opened")


def _count(journal_path: Path, kind: str) -> int:
    connection = sqlite3.connect(f"file:{journal_path}?mode=ro", uri=True)
    try:
        row = connection.execute("SELECT count(*) FROM journal WHERE kind = ?", (kind,)).fetchone()
    finally:
        connection.close()
    return 0 if row is None else int(row[0])


def _started(command: list[str], env: dict[str, str], err_path: Path) -> subprocess.Popen[bytes]:
    """The daemon, its output to a file: a pipe read only at the end can fill while it runs (a warning a
    round while its link is down), and the daemon then blocks on its next write
    (tests/floor/test_linked_seal_wait_alert.py's CI failure)."""
    with err_path.open("wb") as err:
        return subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=err)


async def _stopped(daemon: subprocess.Popen[bytes], err_path: Path) -> tuple[int, str]:
    """SIGTERM, its exit waited for (bounded); its exit code and what it wrote."""
    daemon.send_signal(signal.SIGTERM)
    code = await asyncio.to_thread(daemon.wait, timeout=120)
    return code, err_path.read_text(errors="replace")

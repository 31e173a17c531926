"""The daemon's group commit (TableDaemon.act_now and its committer): journal first for every command;
calls whose outputs are records only wait up to the commit delay to share one transaction; a call with
a command, an alert or a refusal is committed at once. A real SQLite journal, the real committer task,
and a command queue that checks the journal at the moment a command is queued."""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import time
from pathlib import Path
from typing import Any

from controller.config import DEFAULT_COMMIT_DELAY_MS, load_config
from controller.daemon import RunOptions, TableDaemon, engine_config_for
from controller.engine import Alert, JournalRecord, TableEngine
from controller.engine.outputs import Output
from controller.journal.store import Journal
from drivers.events import DomainCommand, ShowText


def daemon_on(path: Path, commit_delay_s: float | None) -> TableDaemon:
    """A TableDaemon with its journal and engine as run() makes them (no devices, no panel)."""
    config = load_config(None)
    daemon = TableDaemon(
        config,
        RunOptions(
            journal_path=path, print_rounds=False, commit_delay_s=commit_delay_s, integrity_every_rounds=0
        ),
    )
    daemon._journal = Journal.open(path, config.table_id)
    daemon._engine = TableEngine(engine_config_for(config))
    return daemon


def card(index: int) -> JournalRecord:
    return JournalRecord("card_dealt", {"card": "As", "index": index, "position": 1}, None, "shuffler")


def transactions(path: Path) -> list[list[int]]:
    """The journal's entries grouped by transaction (one time_utc per append_many)."""
    with contextlib.closing(sqlite3.connect(path)) as db:
        rows = db.execute("SELECT time_utc, seq FROM journal ORDER BY seq").fetchall()
    groups: dict[str, list[int]] = {}
    for time_utc, seq in rows:
        groups.setdefault(time_utc, []).append(seq)
    return list(groups.values())


def committed_count(path: Path) -> int:
    with contextlib.closing(sqlite3.connect(path)) as db:
        return int(db.execute("SELECT count(*) FROM journal").fetchone()[0])


class JournalCheckingQueue(asyncio.Queue[DomainCommand]):
    """A device's command queue that records how many entries were committed when each command came."""

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = path
        self.committed_when_queued: list[int] = []

    def put_nowait(self, item: DomainCommand) -> None:
        self.committed_when_queued.append(committed_count(self.path))
        super().put_nowait(item)


async def with_committer(daemon: TableDaemon, work: Any) -> Any:
    daemon._committer_task = asyncio.get_running_loop().create_task(daemon._committer())
    try:
        return await work()
    finally:
        daemon._committer_task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await daemon._committer_task


def test_records_only_share_one_transaction_within_the_delay(tmp_path: Path) -> None:
    path = tmp_path / "journal.sqlite"
    daemon = daemon_on(path, commit_delay_s=0.05)

    async def work() -> None:
        for index in range(5):
            daemon.act_now([card(index)], received_mono_s=time.monotonic())
            await asyncio.sleep(0.001)
        assert committed_count(path) == 0  # still inside the delay: nothing acts on these yet
        await asyncio.sleep(0.2)

    try:
        asyncio.run(with_committer(daemon, work))
    finally:
        daemon.journal.close()
    assert transactions(path) == [[1, 2, 3, 4, 5]]
    assert len(daemon.summary.commit_latencies_s) == 5
    assert max(daemon.summary.commit_latencies_s) < 0.05 + 0.1  # the delay, and the loop's slack


def test_a_call_with_a_command_commits_at_once_and_its_command_follows_its_records(tmp_path: Path) -> None:
    path = tmp_path / "journal.sqlite"
    daemon = daemon_on(path, commit_delay_s=30.0)  # records alone would wait half a minute
    queue = JournalCheckingQueue(path)
    daemon._command_queues["display"] = queue

    async def work() -> float:
        daemon.act_now([card(0)])
        daemon.act_now([card(1)])
        await asyncio.sleep(0.05)
        assert committed_count(path) == 0
        started_s = time.monotonic()
        outputs: list[Output] = [card(2), ShowText("display", "NO MORE BETS")]
        daemon.act_now(outputs)
        while queue.empty():
            await asyncio.sleep(0.001)
            assert time.monotonic() - started_s < 5, "the command never went out"
        return time.monotonic() - started_s

    try:
        waited_s = asyncio.run(with_committer(daemon, work))
    finally:
        daemon.journal.close()
    assert waited_s < 1.0  # not the 30 s delay
    # The records waiting before it went in the same transaction, and the command only after it.
    assert transactions(path) == [[1, 2, 3]]
    assert queue.committed_when_queued == [3]


def test_an_alert_commits_at_once(tmp_path: Path) -> None:
    path = tmp_path / "journal.sqlite"
    daemon = daemon_on(path, commit_delay_s=30.0)

    async def work() -> None:
        alert = Alert(kind="past_posting", severity="latching", message="chips moved", round_id=None)
        daemon.act_now([card(0), alert])
        for _ in range(1000):
            if committed_count(path):
                return
            await asyncio.sleep(0.001)

    try:
        asyncio.run(with_committer(daemon, work))
    finally:
        daemon.journal.close()
    assert transactions(path) == [[1]]


def test_no_delay_commits_each_call_as_it_comes(tmp_path: Path) -> None:
    path = tmp_path / "journal.sqlite"
    daemon = daemon_on(path, commit_delay_s=0.0)

    async def work() -> None:
        for index in range(3):
            daemon.act_now([card(index)])
            await asyncio.sleep(0.02)

    try:
        asyncio.run(with_committer(daemon, work))
    finally:
        daemon.journal.close()
    assert transactions(path) == [[1], [2], [3]]


def test_act_and_commit_commits_everything_waiting_before_it_returns(tmp_path: Path) -> None:
    path = tmp_path / "journal.sqlite"
    daemon = daemon_on(path, commit_delay_s=30.0)

    async def work() -> None:
        daemon.act_now([card(0)])
        daemon.act_and_commit([card(1)])  # a supervisor's action from the panel
        assert committed_count(path) == 2

    try:
        asyncio.run(with_committer(daemon, work))
    finally:
        daemon.journal.close()
    assert transactions(path) == [[1, 2]]


def test_the_default_delay_comes_from_the_configuration(tmp_path: Path) -> None:
    config = load_config(None)
    assert config.journal_commit_delay_ms == DEFAULT_COMMIT_DELAY_MS == 2
    assert config.to_json()["journal_commit_delay_ms"] == 2

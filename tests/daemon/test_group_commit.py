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

import pytest

from controller.config import DEFAULT_COMMIT_DELAY_MS, DEFAULT_CONFIG_TOML, load_config
from controller.daemon import RunOptions, TableDaemon, engine_config_for
from controller.engine import Alert, JournalRecord, Refused, TableEngine
from controller.engine.outputs import Output
from controller.journal.store import Journal, JournalError
from drivers.events import DomainCommand, ShowText


def daemon_on(path: Path, commit_delay_s: float | None, config_path: Path | None = None) -> TableDaemon:
    """A TableDaemon with its journal and engine as run() makes them (no devices, no panel)."""
    config = load_config(config_path)
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
    return JournalRecord.of("card_dealt", {"card": "As", "index": index, "position": 1}, None, "shuffler")


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
        with contextlib.suppress(asyncio.CancelledError, JournalError):
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


@pytest.mark.parametrize(
    "urgent",
    [
        Alert(kind="past_posting", severity="latching", message="chips moved", round_id=None),
        Refused("start_round", "the table is held"),
    ],
    ids=["alert", "refusal"],
)
def test_an_alert_or_a_refusal_commits_at_once(tmp_path: Path, urgent: Output) -> None:
    path = tmp_path / "journal.sqlite"
    daemon = daemon_on(path, commit_delay_s=30.0)  # records alone would wait half a minute

    async def work() -> None:
        daemon.act_now([card(0), urgent])
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


def test_the_delay_comes_from_the_configuration(tmp_path: Path) -> None:
    assert load_config(None).journal_commit_delay_ms == DEFAULT_COMMIT_DELAY_MS == 2
    config_path = tmp_path / "table.toml"
    text = DEFAULT_CONFIG_TOML.replace(
        'path = "var/journal.sqlite"', 'path = "j.sqlite"\ncommit_delay_ms = 10'
    )
    config_path.write_text(text, encoding="utf-8")
    assert load_config(config_path).to_json()["journal_commit_delay_ms"] == 10
    path = tmp_path / "journal.sqlite"
    daemon = daemon_on(path, commit_delay_s=None, config_path=config_path)  # the option defers to it

    async def work() -> tuple[int, int]:
        daemon.act_now([card(0)])
        await asyncio.sleep(0.003)
        early = committed_count(path)  # within the configured 10 ms
        await asyncio.sleep(0.1)
        return early, committed_count(path)

    try:
        assert asyncio.run(with_committer(daemon, work)) == (0, 1)
    finally:
        daemon.journal.close()


def test_after_a_journal_failure_nothing_more_is_written_or_acted_on(tmp_path: Path) -> None:
    """A commit refused once (a full disk that frees a moment later, a lock held too long): the table
    stops; what waited is dropped, never acted on; nothing later is written, so no round in the
    journal has a hole where the refused entries were."""
    path = tmp_path / "journal.sqlite"
    daemon = daemon_on(path, commit_delay_s=0.0)
    queue = JournalCheckingQueue(path)
    daemon._command_queues["display"] = queue
    real_append = daemon.journal.append_many
    failures = [JournalError("journal j.sqlite: cannot append card_dealt: database or disk is full")]

    def append_failing_once(items: Any) -> Any:
        if failures:
            raise failures.pop()
        return real_append(items)

    daemon.journal.append_many = append_failing_once  # type: ignore[method-assign]

    async def work() -> None:
        daemon.act_now([card(0), ShowText("display", "NO MORE BETS")])
        for _ in range(1000):
            if daemon.journal_failure is not None:
                break
            await asyncio.sleep(0.001)
        daemon.act_now([card(1)])  # decided after the failure: dropped
        with pytest.raises(JournalError, match="database or disk is full"):
            daemon.act_and_commit([card(2)])  # a supervisor's action: refused, not written
        await asyncio.sleep(0.02)

    try:
        asyncio.run(with_committer(daemon, work))
    finally:
        daemon.journal.close()
    assert not failures  # the append did fail once, and would have worked again
    assert committed_count(path) == 0
    assert queue.empty()  # the command of the refused commit never went out
    assert daemon.journal_failure is not None
    assert daemon._stopping

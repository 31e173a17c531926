"""The group commit (controller/journal/group_commit.py), through its public interface: calls whose
records wait share one transaction; a call someone waits for makes the commit due at once; effects come
back only from the commit that made their records durable, in call order; a failed commit drops what
waited and refuses every later call. A real SQLite journal; time is a virtual clock moved by the test.

Then the daemon's use of it: an operator's action on the one queue is answered only once its effect is
committed (QueuedTableActions, the panel's way in), and a refusal is ActionRefused with the engine's
reason. The real daemon in the simulation harness, nobody at the table."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from controller.config import load_config
from controller.daemon import QueuedTableActions
from controller.engine import JournalRecord
from controller.engine import actions as a
from controller.journal.group_commit import CommitFailed, GroupCommit
from controller.journal.store import AppendItem, Journal, JournalEntry, JournalError
from controller.panel.backend import ActionRefused
from controller.simulation.table import SimulatedTable
from tests.daemon.harness import simulated_table
from tests.device_harness.leaks import run_async


class VirtualClock:
    def __init__(self) -> None:
        self.now_s = 100.0

    def __call__(self) -> float:
        return self.now_s


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


@pytest.fixture
def journal(tmp_path: Path) -> Any:
    with Journal.open(tmp_path / "journal.sqlite", "T1") as opened:
        yield opened


def test_records_alone_wait_for_the_delay_and_then_share_one_transaction(journal: Journal) -> None:
    clock = VirtualClock()
    group: GroupCommit[str] = GroupCommit(journal.append_many, clock=clock, max_delay_s=0.05)
    assert group.due_in_s() is None  # nothing waits
    for index in range(5):
        group.add([card(index)], f"call {index}", received_s=clock.now_s - 0.001)
        clock.now_s += 0.001
    assert not group.due()
    assert group.due_in_s() == pytest.approx(0.045)
    clock.now_s += 0.045
    assert group.due()
    committed = group.commit()
    assert transactions(journal.path) == [[1, 2, 3, 4, 5]]
    assert [entry.seq for entry in committed.entries] == [1, 2, 3, 4, 5]
    assert committed.effects == ["call 0", "call 1", "call 2", "call 3", "call 4"]
    # Each from its event's arrival to the commit, on the injected clock.
    assert committed.latencies_s == pytest.approx([0.051, 0.050, 0.049, 0.048, 0.047])
    assert group.waiting == 0
    assert group.due_in_s() is None


def test_an_idle_caller_commits_at_once_even_right_after_a_commit(journal: Journal) -> None:
    """Issue 28: an event waits for no more than the commit in flight and its own. What arrived while a
    commit ran is handled, and then, the queue idle, committed at once: no delay since the last commit
    (which only added to every such event's wait: event-to-commit p99 2.6-4.3x the disk's commit)."""
    clock = VirtualClock()
    group: GroupCommit[int] = GroupCommit(journal.append_many, clock=clock, max_delay_s=0.002)
    group.add([card(0)], 0, received_s=clock.now_s)
    assert not group.due()  # more may come: the delay
    assert group.due(idle=True)  # nothing more comes: no reason to wait
    group.commit()
    # Two events arrived during that commit: handled behind it, then the queue is idle.
    clock.now_s += 0.0005
    group.add([card(1)], 1, received_s=clock.now_s - 0.0004)
    group.add([card(2)], 2, received_s=clock.now_s - 0.0001)
    assert not group.due()  # busy: the oldest record has waited nothing of its 2 ms
    assert group.due_in_s() == pytest.approx(0.002)
    assert group.due(idle=True)  # idle: at once, though a commit was made 0.5 ms ago
    committed = group.commit()
    assert committed.effects == [1, 2]
    assert committed.latencies_s == pytest.approx([0.0004, 0.0001])
    assert transactions(journal.path) == [[1], [2, 3]]


def test_an_urgent_call_is_due_at_once_and_takes_the_calls_before_it_in_order(journal: Journal) -> None:
    clock = VirtualClock()
    group: GroupCommit[str] = GroupCommit(journal.append_many, clock=clock, max_delay_s=30.0)
    group.add([card(0)], "card 0")
    group.add([card(1)], "card 1")
    assert not group.due()  # records alone would wait half a minute
    group.add([card(2)], "command after card 2", urgent=True)
    assert group.due()
    committed = group.commit()
    assert committed.effects == ["card 0", "card 1", "command after card 2"]
    assert transactions(journal.path) == [[1, 2, 3]]


def test_effects_with_no_records_are_due_at_once_and_write_nothing(journal: Journal) -> None:
    group: GroupCommit[str] = GroupCommit(journal.append_many, clock=VirtualClock(), max_delay_s=30.0)
    group.add([], "a log line")
    assert group.due()
    committed = group.commit()
    assert (committed.entries, committed.effects, committed.latencies_s) == ([], ["a log line"], [])
    assert transactions(journal.path) == []


def test_no_delay_makes_every_call_due_as_it_comes(journal: Journal) -> None:
    group: GroupCommit[int] = GroupCommit(journal.append_many, clock=VirtualClock(), max_delay_s=0.0)
    for index in range(3):
        group.add([card(index)], index)
        assert group.due()
        assert group.commit().effects == [index]
    assert transactions(journal.path) == [[1], [2], [3]]


def test_a_failed_commit_drops_what_waited_and_refuses_every_later_call(journal: Journal) -> None:
    """A commit refused once (a full disk that frees a moment later): what waited is handed back as
    dropped (whoever waits must be told), never as committed; nothing later is accepted, so no round in
    the journal has a hole where the refused entries were."""
    failures = [JournalError("journal j.sqlite: cannot append card_dealt: database or disk is full")]

    def append_failing_once(records: Sequence[AppendItem]) -> list[JournalEntry]:
        if failures:
            raise failures.pop()
        return journal.append_many(records)

    group: GroupCommit[str] = GroupCommit(append_failing_once, clock=VirtualClock())
    group.add([card(0)], "card 0")
    group.add([card(1)], "command", urgent=True)
    with pytest.raises(CommitFailed, match="database or disk is full") as failed:
        group.commit()
    assert failed.value.dropped.effects == ["card 0", "command"]
    assert failed.value.dropped.entries == 2
    assert not failures  # the append did fail once, and would have worked again
    with pytest.raises(JournalError, match="database or disk is full"):
        group.add([card(2)], "decided after the failure")
    with pytest.raises(JournalError, match="database or disk is full"):
        group.commit()
    assert group.waiting == 0
    assert transactions(journal.path) == []


# --- the daemon's queue ---------------------------------------------------------------------------
def test_an_operator_action_is_answered_once_committed_and_a_refusal_is_action_refused(
    tmp_path: Path,
) -> None:
    path = tmp_path / "journal.sqlite"
    seen: dict[str, Any] = {}

    async def operator(table: SimulatedTable) -> None:
        actions = QueuedTableActions(table.daemon)
        try:
            await actions.perform(a.CloseTable(by="sue", reason="end of shift"))
            # Answered: the journal already holds the effect (read on a connection of its own).
            with Journal.open_existing(path) as reader:
                seen["closed"] = [entry.payload for entry in reader.entries(kinds=["table_closed"])]
            with pytest.raises(ActionRefused) as refused:
                await actions.perform(a.ClearFault("no-such-fault", by="sue", reason="checked"))
            seen["refused"] = str(refused.value)
        finally:
            table.daemon.request_stop()

    table = simulated_table(
        load_config(None), path, autoplay=False, print_rounds=False, companions=[operator]
    )
    run_async(table.run, timeout_s=60.0)
    assert seen["closed"] == [{"by": "sue", "reason": "end of shift"}]
    assert "no-such-fault" in seen["refused"]

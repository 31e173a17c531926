"""The daemon's journal side (controller/daemon_journal.py, ``DaemonJournal``) on its own, through its
public interface, with a real SQLite journal opened by its own start-up proof: journal first (a call's
command is acted on, and its caller answered, only once its records are in the journal), and the
journal's failure (the real journal refuses an append: what waited is dropped and never acted on,
whoever waits is told, the table is halted once, and nothing more is written). The daemon's callbacks
are plain recorders; no event loop beyond the test's own, no clock windows."""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from collections import deque
from collections.abc import Sequence
from pathlib import Path

import pytest

from controller import daemon_checkpoints
from controller.daemon_checkpoints import CHECKPOINT_EVERY_COMMITS
from controller.daemon_journal import DaemonJournal
from controller.engine import JournalRecord
from controller.engine.outputs import Output
from controller.journal.anchor import anchor_path, read_anchor
from controller.journal.store import JournalError
from controller.journal.wal import CHECKPOINT_BACKSTOP_PAGES, SQLITE_AUTOCHECKPOINT_PAGES
from drivers.events import ShowText
from tests.device_harness.leaks import run_async

ROUND_ID = "RT1-20261201-000001"


def round_started() -> JournalRecord:
    payload = {"round_id": ROUND_ID, "game": "high-card-flush", "banking": {"mode": "house"}, "seats": [1]}
    return JournalRecord.of("round_started", payload, ROUND_ID, "engine")


def kinds_in(path: Path) -> list[str]:
    with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
        return [row[0] for row in db.execute("SELECT kind FROM journal ORDER BY seq")]


class Recorder:
    """The daemon's side of the callbacks: what was acted on (with the journal's kinds at that moment),
    how often the panel was told and the table halted."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.acted: list[tuple[list[str], list[str]]] = []  # (outputs' kinds, the journal's kinds then)
        self.notified = 0
        self.halted = 0

    def act(self, outputs: Sequence[Output]) -> None:
        names = [item.kind if isinstance(item, JournalRecord) else type(item).__name__ for item in outputs]
        self.acted.append((names, kinds_in(self.path)))

    def notify(self) -> None:
        self.notified += 1

    def halt(self) -> None:
        self.halted += 1


def side(path: Path, recorder: Recorder) -> DaemonJournal:
    return DaemonJournal(
        path,
        "T1",
        commit_delay_s=10.0,  # records alone would wait long: only urgency or idleness commits here
        idle=lambda: True,
        act=recorder.act,
        notify=recorder.notify,
        halt=recorder.halt,
        latencies_s=deque(maxlen=10),
    )


def test_a_command_and_its_answer_come_only_once_their_records_are_in_the_journal(tmp_path: Path) -> None:
    path = tmp_path / "journal.sqlite"
    recorder = Recorder(path)

    async def main() -> list[Output]:
        ledger = side(path, recorder)
        ledger.open(new_journal=True)
        try:
            answer: asyncio.Future[list[Output]] = asyncio.get_running_loop().create_future()
            outputs: list[Output] = [round_started(), ShowText("display", "place your bets")]
            ledger.add(outputs, answer=answer, received_mono_s=0.0)
            assert recorder.acted == []  # nothing acted on
            assert kinds_in(path) == []  # nothing written
            ledger.after_burst()
            return await answer
        finally:
            ledger.close()

    answered = run_async(main)
    assert [type(item).__name__ for item in answered] == ["JournalRecord", "ShowText"]
    # Acted on once, after the journal held its record (the panel was told of the entry).
    assert recorder.acted == [(["round_started", "ShowText"], ["round_started"])]
    assert recorder.notified == 1
    assert recorder.halted == 0
    assert kinds_in(path) == ["round_started"]


def test_a_refused_append_drops_what_waited_halts_once_and_writes_nothing_more(tmp_path: Path) -> None:
    path = tmp_path / "journal.sqlite"
    recorder = Recorder(path)

    async def main() -> tuple[str, str, str | None]:
        ledger = side(path, recorder)
        ledger.open(new_journal=True)
        try:
            ledger.append([round_started()])
            # The same round started again: the journal itself refuses it (a round starts once).
            answer: asyncio.Future[list[Output]] = asyncio.get_running_loop().create_future()
            ledger.add([round_started(), ShowText("display", "never shown")], answer=answer)
            ledger.after_burst()
            with pytest.raises(JournalError) as waited:
                await answer
            # Every later call is refused at once, and the daemon's own entries too.
            later: asyncio.Future[list[Output]] = asyncio.get_running_loop().create_future()
            ledger.add([ShowText("display", "after the failure")], answer=later)
            with pytest.raises(JournalError) as refused_later:
                await later
            with pytest.raises(JournalError):
                ledger.append(
                    [JournalRecord.of("table_closed", {"by": "daemon", "reason": "x"}, None, "engine")]
                )
            return str(waited.value), str(refused_later.value), ledger.failure
        finally:
            ledger.close()

    waited, refused_later, failure = run_async(main)
    assert failure is not None
    assert "a round starts once" in failure, failure
    assert waited == failure
    assert refused_later == failure
    assert recorder.acted == []  # the dropped command never went out
    assert recorder.halted == 1
    assert kinds_in(path) == ["round_started"]  # the first start only


def wal_frames(path: Path) -> int:
    """The WAL's frames now (a reader's own PASSIVE checkpoint reports them, and copies them too)."""
    with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as reader:
        return int(reader.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()[0][1])


@pytest.mark.parametrize("thread_passes", [daemon_checkpoints.CHECKPOINT_PASSES, 0])
def test_the_checkpoints_run_beside_the_commits_and_the_wal_starts_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, thread_passes: int
) -> None:
    """While the anchor's thread runs, no commit checkpoints (the writer's automatic checkpoint is only
    a backstop); the thread checkpoints every CHECKPOINT_EVERY_COMMITS commits, on its own connection,
    so the WAL is copied into the database and the next commit starts it again from its beginning.
    With no pass of the thread's catching up (``thread_passes`` 0: as when commits keep coming faster
    than its passes), the writer finishes the checkpoint itself between two commits, to the same end."""
    monkeypatch.setattr(daemon_checkpoints, "CHECKPOINT_PASSES", thread_passes)
    path = tmp_path / "journal.sqlite"
    recorder = Recorder(path)

    async def main() -> tuple[int, int]:
        ledger = side(path, recorder)
        ledger.open(new_journal=True)
        try:
            ledger.checkpoints.start()
            assert ledger.journal.wal.pragma("wal_autocheckpoint") == CHECKPOINT_BACKSTOP_PAGES
            ledger.append([round_started()])

            def commit_one(number: int) -> None:  # one commit each: a command is urgent
                record = JournalRecord.of("dealer_key", {"key": "next", "seat": None}, ROUND_ID, "display")
                ledger.add([record, ShowText("display", f"shown {number}")])
                ledger.after_burst()

            for number in range(CHECKPOINT_EVERY_COMMITS):  # the last one hands the thread a checkpoint
                commit_one(number)
            # Waits for the thread's catch-up; its report back to the loop (where the writer finishes
            # it when the thread did not) was queued before this await's own, so it has run after it.
            await asyncio.to_thread(ledger.checkpoints.stop)
            # The thread's checkpoints have stopped: the writer's commits checkpoint by themselves again.
            assert ledger.journal.wal.pragma("wal_autocheckpoint") == SQLITE_AUTOCHECKPOINT_PAGES
            ledger.append([JournalRecord.of("table_closed", {"by": "daemon", "reason": "x"}, None, "engine")])
            return wal_frames(path), len(recorder.acted)
        finally:
            ledger.close()

    frames, acted = run_async(main)
    assert acted == CHECKPOINT_EVERY_COMMITS
    # The WAL started again after the checkpoint: it holds the last commit's pages only (each of the
    # commits before wrote at least two: without the checkpoint they would all be there).
    assert 0 < frames < 10
    assert kinds_in(path).count("dealer_key") == CHECKPOINT_EVERY_COMMITS


# --- issue 30: a round's close is anchored before anything acts on it ------------------------------------
def round_voided() -> JournalRecord:
    payload = {"round": {}, "settlement": {}, "reason": "by a supervisor", "by": "operator:alice"}
    return JournalRecord.of("round_voided", payload, ROUND_ID, "operator:alice")


class AnchorWatcher(Recorder):
    """A recorder that also notes, at each act and each notify, the seq the anchor on disk names: what
    survives a SIGKILL at that moment."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.anchor_at_act: list[int] = []
        self.anchor_at_notify: list[int] = []

    def anchored_seq(self) -> int:
        anchor = read_anchor(self.path)
        return -1 if anchor is None else anchor.seq

    def act(self, outputs: Sequence[Output]) -> None:
        super().act(outputs)
        self.anchor_at_act.append(self.anchored_seq())

    def notify(self) -> None:
        super().notify()
        self.anchor_at_notify.append(self.anchored_seq())


def test_a_round_close_is_acted_on_only_once_the_anchor_covering_it_is_durable(tmp_path: Path) -> None:
    """The defect of issue 30: the closing commit's effects (the round printed, the panel told, the
    dealer's display told to pay) went out before the anchor covered it, so a SIGKILL then and one
    byte flipped in that WAL transaction voided a round that was paid, and the table opened. With the
    checkpoints' thread running, as in the daemon."""
    path = tmp_path / "journal.sqlite"
    recorder = AnchorWatcher(path)

    async def main() -> list[Output]:
        ledger = side(path, recorder)
        ledger.open(new_journal=True)
        try:
            ledger.checkpoints.start()
            ledger.append([round_started()])
            answer: asyncio.Future[list[Output]] = asyncio.get_running_loop().create_future()
            ledger.add([round_voided(), ShowText("display", "pay the table")], answer=answer)
            ledger.after_burst()
            answered = await answer
            await asyncio.to_thread(ledger.checkpoints.stop)
            return answered
        finally:
            ledger.close()

    run_async(main)
    assert kinds_in(path) == ["round_started", "round_voided"]
    assert recorder.acted == [(["round_voided", "ShowText"], ["round_started", "round_voided"])]
    # At the moment the display was told (and the panel notified), the anchor on disk already named
    # the closing entry (seq 2).
    assert recorder.anchor_at_act == [2]
    assert recorder.anchor_at_notify[-1] == 2


def test_an_anchor_that_cannot_be_written_drops_the_close_unacted_and_halts(tmp_path: Path) -> None:
    path = tmp_path / "journal.sqlite"
    recorder = Recorder(path)

    async def main() -> tuple[str, str | None]:
        ledger = side(path, recorder)
        ledger.open(new_journal=True)
        try:
            ledger.append([round_started()])
            # The anchor's place taken by a directory with something in it: the rename fails.
            anchor_path(path).unlink()
            anchor_path(path).mkdir()
            (anchor_path(path) / "in-the-way").write_bytes(b"")
            answer: asyncio.Future[list[Output]] = asyncio.get_running_loop().create_future()
            ledger.add([round_voided(), ShowText("display", "never shown")], answer=answer)
            ledger.after_burst()
            with pytest.raises(JournalError) as waited:
                await answer
            return str(waited.value), ledger.failure
        finally:
            ledger.close()

    waited, failure = run_async(main)
    assert failure is not None
    assert "cannot write" in failure, failure
    assert waited == failure
    assert recorder.acted == []  # the close was committed but never acted on: no anchor covers it
    assert recorder.halted == 1

"""The table daemon's journal side (controller/daemon.py): the journal it opens, the group commit
(controller/journal/group_commit.py) in front of it, the anchor beside it, and what happens when it
fails. The daemon hands it each engine call's outputs; it hands back, only once their records are
committed, the outputs to act on and the answers to whoever waits.

Each engine call's outputs wait in call order; a commit writes the records of everything waiting in
ONE transaction and only then acts on those calls' commands, alerts, logs and answers, in order.
"Journal first" holds for every command and every answer: nothing goes out before the records of the
engine call that decided it, and of every call before it, are committed. With synchronous=FULL each
commit is an fsync, done on the loop: a worker thread was measured and was slower (its SQLite calls
wait for the busy loop to let go of the GIL; docs/engine.md).

When: at once when a call waiting has a command, an alert, a refusal or a caller waiting for its
answer; records alone as soon as the queue is idle, and while it stays busy at the latest [journal]
commit_delay_ms after the oldest record waiting (the committer's timer). A lone event is committed at
once; what arrives during a commit shares the next one (controller/journal/group_commit.py).

A commit that holds a round's closing entry (settled, dead, voided) is anchored before anything acts
on it: the anchor naming its last entry is written durably here, on the loop, and only then is the
round printed, the panel told and the dealer's display sent its commands. A settlement anyone saw or
paid is therefore always covered by the anchor, and a journal that lost it (a damaged write-ahead log)
is refused at the next start instead of having the round voided (docs/journal.md "The anchor").

No commit runs a WAL checkpoint while the table runs: a thread of its own does, on a connection of its
own, every CHECKPOINT_EVERY_COMMITS commits (controller/daemon_checkpoints.py; docs/journal.md
"Checkpoints"). The segments are sealed at start and between rounds by controller/daemon_sealing.py,
after a commit that ends between rounds.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import structlog

from controller.daemon_checkpoints import CheckpointThread
from controller.daemon_sealing import SegmentSealer
from controller.engine import JournalRecord
from controller.engine.outputs import Output
from controller.journal.anchor import Anchor, write_anchor
from controller.journal.group_commit import CommitFailed, Committed, GroupCommit
from controller.journal.kinds import CLOSING_KINDS
from controller.journal.proof import prepare_for_run
from controller.journal.store import Journal, JournalEntry, JournalError

log = structlog.get_logger("flushtable.daemon")

Answer = asyncio.Future[list[Output]]


@dataclass(frozen=True, slots=True)
class _Effect:
    """One engine call's outputs and who waits for them: what the group commit hands back."""

    outputs: Sequence[Output]
    answer: Answer | None = None


def _urgent(outputs: Sequence[Output]) -> bool:
    """A call whose outputs release a command, an alert or a refusal: the table (or a person) waits."""
    return any(not isinstance(item, JournalRecord) for item in outputs)


class DaemonJournal:
    """The journal of one running table, written through the group commit.

    ``idle``: whether the daemon's queue is empty just now (a lone event's records are committed at
    once). ``act``: the daemon acts on one committed call's outputs (commands, alerts, round closes).
    ``notify``: entries were written (the panel reads them). ``halt``: the journal failed, the table
    must stop now. ``latencies_s``: device event received -> its records committed, kept here."""

    def __init__(  # noqa: PLR0913 - keyword-only callbacks into the daemon, each named at the one call site
        self,
        path: Path,
        table_id: str,
        *,
        commit_delay_s: float,
        idle: Callable[[], bool],
        act: Callable[[Sequence[Output]], None],
        notify: Callable[[], None],
        halt: Callable[[], None],
        latencies_s: deque[float],
        anchor_key: bytes | None = None,
    ) -> None:
        self.path = path
        self._anchor_key = anchor_key
        self._table_id = table_id
        self._idle = idle
        self._act = act
        self._notify = notify
        self._halt = halt
        self._latencies_s = latencies_s
        self._journal: Journal | None = None
        self._group: GroupCommit[_Effect] = GroupCommit(
            self._append_records, clock=time.monotonic, max_delay_s=commit_delay_s
        )
        self._commit_wake = asyncio.Event()  # records wait: the committer sees when they are due
        # The anchor the journal was proven against at start, then each one written.
        self.anchored: Anchor | None = None
        self.failure: str | None = None  # the journal refused an append: nothing more is written
        # The journal's wall clock (its entries' times; default the system's): a test steps it back.
        self.wall_clock: Callable[[], datetime] | None = None
        # The WAL's checkpoints, on a thread of their own (controller/daemon_checkpoints.py), and the
        # segments' seals at start and between rounds (controller/daemon_sealing.py).
        self.checkpoints = CheckpointThread(path, lambda: self.journal, lambda: self.failure is not None)
        self.seals = SegmentSealer(self, self.checkpoints, anchor_key)

    @property
    def journal(self) -> Journal:
        assert self._journal is not None, "the journal opens in run()"
        return self._journal

    @property
    def opened(self) -> bool:
        return self._journal is not None

    def open(self, *, new_journal: bool) -> Journal:
        """The journal proves itself (chain, triggers, SQLite's integrity, its anchor and the anchor's
        key) before anything, recovery included, is appended to it; a journal that fails is refused in
        one line."""
        self.anchored = prepare_for_run(
            self.path, self._table_id, key=self._anchor_key, new_journal=new_journal
        )
        self._journal = self._opened()
        return self._journal

    def _opened(self) -> Journal:
        if self.wall_clock is None:
            return Journal.open(self.path, self._table_id)
        return Journal.open(self.path, self._table_id, clock=self.wall_clock)

    def anchor_at(self, seq: int, hash_hex: str) -> None:
        """A seal's last step: the anchor beside the journal moved to the sealed segment's end."""
        self.anchored = write_anchor(
            self.path, Anchor.of(self._table_id, seq, hash_hex), key=self._anchor_key
        )

    def reopened_around(self, between: Callable[[], None]) -> None:
        """The journal closed while ``between`` runs (a seal at start: no other connection, nothing
        appended), and opened again after it whatever it did."""
        self.journal.close()
        self._journal = None
        try:
            between()
        finally:
            self._journal = self._opened()  # with the journal's wall clock, as opened at first

    @property
    def records_waiting(self) -> bool:
        """Records wait in the group commit (a live seal waits for them to be committed)."""
        return bool(self._group.waiting)

    def close(self) -> None:
        self.checkpoints.close()
        self.journal.close()

    # --- the group commit ------------------------------------------------------------------------------
    def add(
        self,
        outputs: Sequence[Output],
        *,
        answer: Answer | None = None,
        received_mono_s: float | None = None,
        urgent: bool = False,
    ) -> None:
        """One engine call's outputs, to be acted on once committed (``answer`` is given them then)."""
        records = [item for item in outputs if isinstance(item, JournalRecord)]
        if self.failure is not None:
            if answer is not None and not answer.done():
                answer.set_exception(JournalError(self.failure))
            if records:
                log.critical("journal_failed_dropped", engine_calls=1, entries=len(records))
            return
        self._group.add(
            records,
            _Effect(outputs, answer),
            urgent=urgent or answer is not None or _urgent(outputs),
            received_s=received_mono_s,
        )

    def after_burst(self) -> None:
        """The queue's loop handled a burst: commit now if due, else let the committer's timer do it."""
        if self._group.due(idle=self._idle()):
            self.commit()
        elif self._group.waiting:
            self._commit_wake.set()

    async def committer(self) -> None:
        """Commits records that wait while the queue stays busy, at the latest when they are due."""
        while True:
            await self._commit_wake.wait()
            self._commit_wake.clear()
            while (due_in_s := self._group.due_in_s(idle=self._idle())) is not None:
                if due_in_s > 0:
                    await asyncio.sleep(due_in_s)
                    continue
                self.commit()

    def commit(self) -> None:
        """Commit every waiting call's records in one transaction, then act on each in order."""
        if not self._group.waiting:
            return
        try:
            committed: Committed[_Effect] = self._group.commit()
        except JournalError as error:
            self.fail(error)
            return
        self._latencies_s.extend(committed.latencies_s)
        if any(entry.kind in CLOSING_KINDS for entry in committed.entries) and not self._keep_anchor(
            committed.entries[-1], committed.effects
        ):
            return
        if committed.entries:
            self._notify()
        for effect in committed.effects:
            self._act(effect.outputs)
            if effect.answer is not None and not effect.answer.done():
                effect.answer.set_result(list(effect.outputs))
        if committed.entries and committed.entries[-1].round_id is None and self.seals.live:
            # Between rounds: the round closed and its tail (the table cleared, the dealer's "next")
            # is written too, so every entry of a round stays in one segment.
            self.seals.seal_live_if_due(
                self.wall_clock() if self.wall_clock is not None else datetime.now(UTC)
            )
        if committed.entries:
            self.checkpoints.committed()

    def _append_records(self, records: Sequence[Any]) -> list[JournalEntry]:
        written = self.journal.append_many(records)
        self.seals.fold(written)
        return written

    def append(self, records: Sequence[JournalRecord]) -> None:
        """Outside the group commit: the daemon's own entries at start and at the very end."""
        if self.failure is not None:
            raise JournalError(self.failure)
        try:
            written = self.journal.append_many(records)
        except JournalError as error:
            self.fail(error)
            raise
        self.seals.fold(written)
        self._notify()
        if written:
            self._keep_anchor(written[-1], [])

    def _keep_anchor(self, last: JournalEntry, effects: Sequence[_Effect]) -> bool:
        """The anchor beside the journal follows its head (controller/journal/anchor.py): after the
        table opens, at every commit holding a round's close and at shutdown; keyed when an anchor key
        is configured. Written here, durably, before the commit's effects are acted on (the caller acts
        only on True): a settlement is never shown, printed or paid before an anchor covers it, so a
        journal that later loses it cannot open. Measured: about 1 ms a write, once a round
        (docs/operations.md "Measured").

        One that cannot be written stops the table as a journal failure does, and the commit's effects
        are dropped, never acted on: entries lost after it could no longer be detected."""
        try:
            self.anchored = write_anchor(
                self.path, Anchor.of(self._table_id, last.seq, last.hash), key=self._anchor_key
            )
        except JournalError as error:
            for effect in effects:
                if effect.answer is not None and not effect.answer.done():
                    effect.answer.set_exception(JournalError(str(error)))
            if effects:
                # Committed, but never acted on: without an anchor covering it, no one may be paid.
                log.critical("anchor_failed_close_not_acted_on", engine_calls=len(effects), seq=last.seq)
            self.fail(error)
            return False
        return True

    # --- the journal's failure ---------------------------------------------------------------------------
    def fail(self, error: JournalError) -> None:
        # Nothing may happen at the table that the journal did not record: stop the table now, and
        # write nothing more (a later entry committed after a lost one would leave a hole in the
        # round: even if the journal works again a moment later, this run appends no more). What was
        # decided and not committed is dropped, never acted on; whoever waits for it is told. Open
        # rounds are voided with every wager returned at the next start.
        log.critical("journal_error", error=str(error))
        self.failure = str(error)
        dropped = error.dropped if isinstance(error, CommitFailed) else self._group.fail(str(error))
        if dropped.effects:
            log.critical("journal_failed_dropped", engine_calls=len(dropped.effects), entries=dropped.entries)
        for effect in dropped.effects:
            if effect.answer is not None and not effect.answer.done():
                effect.answer.set_exception(JournalError(self.failure))
        self._halt()

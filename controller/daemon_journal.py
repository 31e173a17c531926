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
own, every CHECKPOINT_EVERY_COMMITS commits (docs/journal.md "Checkpoints").
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import sqlite3
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import structlog

from controller.engine import JournalRecord
from controller.engine.outputs import Output
from controller.journal.anchor import Anchor, write_anchor
from controller.journal.checkpoint import refold_reason, state_from_checkpoint, state_to_checkpoint
from controller.journal.group_commit import CommitFailed, Committed, GroupCommit
from controller.journal.kinds import CLOSING_KINDS
from controller.journal.proof import prepare_for_run
from controller.journal.seals import Seal, last_seal
from controller.journal.segments import SealBusy, seal_due, seal_open_segment
from controller.journal.state import TableState
from controller.journal.store import Journal, JournalEntry, JournalError

if TYPE_CHECKING:
    from controller.config import SegmentPolicy

log = structlog.get_logger("flushtable.daemon")

CHECKPOINT_EVERY_COMMITS = 50  # about 550 WAL pages (2 MB) at the benchmark's 11 pages a commit
CHECKPOINT_PASSES = 3  # the thread's passes in one catch-up before the writer finishes it

Answer = asyncio.Future[list[Output]]


def _sealed_fields(seal: Seal) -> dict[str, int]:
    """What the log says of a seal, at start and while running alike."""
    return {"segment": seal.segment, "first_seq": seal.first_seq, "last_seq": seal.last_seq}


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
        # Checkpoints: run by a thread of their own on a connection of their own (see _checkpoint_now).
        self._checkpoint_thread: concurrent.futures.ThreadPoolExecutor | None = None
        self._checkpointer: Journal | None = None
        # The anchor the journal was proven against at start, then each one written.
        self.anchored: Anchor | None = None
        self._commits_since_checkpoint = 0
        self._checkpoint_running = False
        self.failure: str | None = None  # the journal refused an append: nothing more is written
        # The journal's wall clock (its entries' times; default the system's): a test steps it back.
        self.wall_clock: Callable[[], datetime] | None = None
        # Sealing while the table runs (``seal_live_if_due``): the reducer's state at the journal's
        # last entry, folded on at every commit (None: not sealing live), and the policy.
        self._live_state: TableState | None = None
        self._live_policy: SegmentPolicy | None = None
        self.live_seals: list[Seal] = []
        self.live_seal_deferred: str | None = None  # why the last due seal waits for the next round
        # Others reading the file (the uplink): each says why a seal must wait now (None: it need not).
        # Asked on the loop, where the seal runs: a reader that is not reading now cannot start to.
        self.file_users: list[Callable[[], str | None]] = []
        # A seal that failed (a full disk, a segments directory it may not write, a checkpoint that
        # cannot be written): the open segment stays open and whole, the table goes on, and the daemon
        # raises a journal_error alert with the line (``on_seal_failed``). Not tried again until the
        # segment has grown by a tenth of [journal] segment_entries: a seal reads the whole file.
        self.on_seal_failed: Callable[[str], None] | None = None
        self.seal_failures: list[str] = []
        self._seal_retry_at_entries = 0
        # A due seal that keeps waiting for a reason other than an open round (a linked table's claim
        # the floor has not answered, say): once the open segment has grown a tenth of segment_entries
        # past due, the daemon raises an alert (``on_seal_waiting``, once per wait), and clears it when
        # a seal proceeds (``on_sealed``): a start folds the whole open segment, so one that never
        # seals makes every start slower, unseen (docs/journal.md "Sealing while the table runs").
        self.on_seal_waiting: Callable[[str], None] | None = None
        self.on_sealed: Callable[[Seal], None] | None = None
        self.seal_wait_alerted = False

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
        if self.wall_clock is None:
            self._journal = Journal.open(self.path, self._table_id)
        else:
            self._journal = Journal.open(self.path, self._table_id, clock=self.wall_clock)
        return self._journal

    def seal_if_due(
        self,
        state: TableState,
        policy: SegmentPolicy,
        now: datetime,
        *,
        waits: Callable[[], str | None] | None = None,
    ) -> Seal | None:
        """At start, after recovery and before the table opens (no round open, no other connection):
        seal the open segment when the policy says it is due, and open the next one
        (docs/journal.md "Segments and seals"). ``state``: the reducer's state at the journal's end.
        ``waits``: why the seal must wait (None: it need not), asked only when one is due."""
        last = last_seal(self.path) if self.journal.file.base.segment > 1 else None
        why, entries = self._why_due(
            policy, now, last_checkpoint_refolds=None if last is None else refold_reason(last.checkpoint)
        )
        if why is None:
            return None
        wait = None if waits is None else waits()
        if wait is not None:
            self._defer_live_seal(wait)
            return None
        self.journal.close()
        self._journal = None

        seal: Seal | None = None
        try:
            seal = seal_open_segment(
                self.path, state, key=self._anchor_key, write_anchor_at_end=self._anchor_at
            )
        except JournalError as error:  # the table opens all the same, on its open segment
            self._seal_failed(str(error), entries, policy)
        finally:
            self._journal = Journal.open(self.path, self._table_id)
        if seal is not None:
            log.info("journal_segment_sealed", **_sealed_fields(seal), reason=why)
        return seal

    def _anchor_at(self, seq: int, hash_hex: str) -> None:
        """A seal's last step: the anchor beside the journal moved to the sealed segment's end."""
        self.anchored = write_anchor(
            self.path, Anchor.of(self._table_id, seq, hash_hex), key=self._anchor_key
        )

    def seal_while_running(self, state: TableState, policy: SegmentPolicy) -> None:
        """From here on, seal the open segment between rounds when the policy says it is due
        (``seal_live_if_due``). ``state``: the reducer's state at the journal's last entry now; it is
        folded on at every commit (a copy: the caller's is not touched)."""
        self._live_state = state_from_checkpoint(state_to_checkpoint(state))
        self._live_policy = policy

    def _fold(self, written: Sequence[JournalEntry]) -> None:
        if self._live_state is not None:
            self._live_state.apply_all(written)

    def seal_live_if_due(self, now: datetime) -> Seal | None:
        """Between rounds, while the table runs: seal the open segment when the policy says it is due
        (docs/journal.md "Segments and seals"). On the loop, between two commits, so nothing is written
        during the switch; the journal object is switched in place (``Journal.switch_file``), so the
        embedded panel and recall, which hold it, follow. Refused (waits for the next round's close)
        while a round is open, records wait to be committed, the checkpoint thread is copying, or another
        connection holds the file (SQLite cannot leave WAL mode then): nothing is changed by a refusal,
        and the next commit between rounds tries again."""
        state, policy = self._live_state, self._live_policy
        if state is None or policy is None or self.failure is not None or self._journal is None:
            return None
        due = self._live_seal_due(state, policy, now)
        if due is None:
            return None
        why, entries = due
        last = self.journal.last_entry()
        if last is not None and state.last_seq < last.seq:
            # Entries another process wrote (`flushtable clear`): the state folds them on too.
            state.apply_all(self.journal.entries(since_seq=state.last_seq))
        seal = self._switch_to_a_new_segment(state, entries, policy)
        if seal is not None:
            self._live_sealed(seal, why)
        return seal

    def _why_due(
        self, policy: SegmentPolicy, now: datetime, *, last_checkpoint_refolds: str | None = None
    ) -> tuple[str | None, int]:
        """Why the open segment is due to be sealed by ``policy`` now (None: it is not), and its entries:
        the one reading of the policy's triggers, at start and while the table runs."""
        entries, first_utc = self.journal.reader.segment_summary()
        why = seal_due(
            entries,
            first_utc,
            now,
            every_entries=policy.entries,
            per_gaming_day=policy.per_gaming_day,
            gaming_day_start_utc=policy.gaming_day_start_utc,
            last_checkpoint_refolds=last_checkpoint_refolds,
        )
        return why, entries

    def _live_seal_due(
        self, state: TableState, policy: SegmentPolicy, now: datetime
    ) -> tuple[str, int] | None:
        """Why the open segment is due now, and its entries; None: not due, or its seal must wait (the
        wait said, and alerted once it has lasted past its bound)."""
        why, entries = self._why_due(policy, now)
        if why is None or entries < self._seal_retry_at_entries:
            return None
        waits = (
            "a round is open"
            if state.open_rounds
            else "records wait to be committed"
            if self._group.waiting
            else "the checkpoint thread is copying"
            if self._checkpoint_running
            else next((why for why in (user() for user in self.file_users) if why is not None), None)
        )
        if waits is not None:
            if not state.open_rounds:  # an open round is the usual wait: not worth a line
                self._defer_live_seal(waits)
                self._alert_if_waited_too_long(waits, entries, policy)
            return None
        return why, entries

    def _switch_to_a_new_segment(self, state: TableState, entries: int, policy: SegmentPolicy) -> Seal | None:
        """The open segment sealed and the journal switched to a new one, the checkpoint thread's
        connection closed meanwhile (SQLite leaves WAL mode only with none); None: not sealed (why is
        logged, deferred, or the table's failure)."""
        sealed: list[Seal] = []

        def seal_now() -> None:
            seal = seal_open_segment(
                self.path, state, key=self._anchor_key, write_anchor_at_end=self._anchor_at
            )
            if seal is not None:
                sealed.append(seal)

        checkpointing = self._checkpointer is not None
        if self._checkpointer is not None:
            self._checkpointer.close()  # a connection of ours: SQLite leaves WAL mode only with none
            self._checkpointer = None
        try:
            self.journal.switch_file(seal_now)
        except (JournalError, sqlite3.Error, OSError) as error:
            if self.journal.switch_failed is not None:
                # No file to append to: the table stops now (as for any journal failure); the next
                # start finishes the seal.
                self._failed(JournalError(self.journal.switch_failed))
                return None
            if isinstance(error, SealBusy):
                # Another connection on the file (`flushtable panel`, a watch's child): the segment
                # stays open and whole (a seal changes nothing until its first step succeeds); the
                # next commit between rounds tries again.
                self._defer_live_seal(str(error))
            else:
                self._seal_failed(str(error), entries, policy)
        if checkpointing:
            self._reopen_checkpointer()
        return sealed[0] if sealed else None

    def _reopen_checkpointer(self) -> None:
        try:
            self._checkpointer = Journal.open_existing(self.path, readonly=False)
            self.journal.wal.defer_checkpoints()
        except JournalError as error:
            # Nothing is lost: the writer checkpoints by itself again (SQLite's own threshold).
            log.warning("journal_checkpoint_failed", error=str(error))
            self._checkpointer = None
            with contextlib.suppress(JournalError):
                self.journal.wal.resume_checkpoints()

    def _live_sealed(self, seal: Seal, why: str) -> None:
        """A seal while running proceeded: kept, its wait's alert cleared, the daemon told."""
        self.live_seals.append(seal)
        self.live_seal_deferred = None
        self.seal_wait_alerted = False
        if self.on_sealed is not None:
            self.on_sealed(seal)
        # The retry bound after a failure counts the failed segment's entries: the next segment is due
        # by the policy again, not by that count.
        self._seal_retry_at_entries = 0
        log.info("journal_segment_sealed", **_sealed_fields(seal), reason=why, while_running=True)

    def _seal_failed(self, line: str, entries: int, policy: SegmentPolicy) -> None:
        """A seal failed for a reason waiting will not cure: logged, kept, and handed to the daemon
        (its journal_error alert); the open segment goes on, and the seal is tried again once it has
        grown by a tenth of segment_entries (at least one entry)."""
        line = " ".join(line.split())  # one line, whatever the error's text held
        log.warning("journal_seal_failed", reason=line)
        self.seal_failures.append(line)
        self.live_seal_deferred = line
        self._seal_retry_at_entries = entries + max(1, policy.entries // 10)
        if self.on_seal_failed is not None:
            self.on_seal_failed(line)

    def _alert_if_waited_too_long(self, why: str, entries: int, policy: SegmentPolicy) -> None:
        """The alert of a due seal that waits past its bound: the open segment a tenth of
        segment_entries (at least one entry) past due. Once per wait: cleared when a seal proceeds."""
        bound = policy.entries + max(1, policy.entries // 10)
        if self.seal_wait_alerted or policy.entries <= 0 or entries < bound:
            return
        self.seal_wait_alerted = True
        line = (
            f"the open segment holds {entries} entries, due to be sealed at {policy.entries}, and its seal "
            f"waits: {why}"
        )
        log.warning("journal_seal_waiting", reason=line)
        if self.on_seal_waiting is not None:
            self.on_seal_waiting(line)

    def _defer_live_seal(self, why: str) -> None:
        if why != self.live_seal_deferred:
            log.warning("journal_seal_deferred", reason=why)
        self.live_seal_deferred = why

    def close(self) -> None:
        if self._checkpointer is not None:
            self._checkpointer.close()
            self._checkpointer = None
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
            self._failed(error)
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
        if committed.entries and committed.entries[-1].round_id is None and self._live_state is not None:
            # Between rounds: the round closed and its tail (the table cleared, the dealer's "next")
            # is written too, so every entry of a round stays in one segment.
            self.seal_live_if_due(self.wall_clock() if self.wall_clock is not None else datetime.now(UTC))
        if committed.entries:
            self._commits_since_checkpoint += 1
            if self._commits_since_checkpoint >= CHECKPOINT_EVERY_COMMITS:
                self._checkpoint_now()

    # --- checkpoints (docs/journal.md "Checkpoints") ----------------------------------------------------
    def _checkpoint_now(self) -> None:
        """Copy the WAL into the database off the loop, so no COMMIT carries a checkpoint.

        SQLite's automatic checkpoint runs inside the COMMIT that crosses its threshold: that commit,
        and every event waiting for it, also waits for about a thousand pages to be copied and the
        database fsynced (a bare commit's p99 4.5 ms with it, 0.7-1.2 ms without; docs/operations.md).
        While the checkpoint thread runs, the writer's automatic checkpoint is only a backstop
        (WalControl.defer_checkpoints) and this thread checkpoints every CHECKPOINT_EVERY_COMMITS commits,
        on a connection of its own (a PASSIVE checkpoint never blocks the writer). The WAL is reset by
        the next commit only once a checkpoint has copied all of it with no commit in between, so the
        thread checkpoints again until it catches up (each pass copies only what was committed during
        the one before); if it has not after CHECKPOINT_PASSES, the writer copies the little that is
        left itself, between two commits (``_checkpointed``). The WAL stays a few megabytes."""
        if self._checkpointer is None or self._checkpoint_thread is None or self._checkpoint_running:
            return
        self._commits_since_checkpoint = 0
        self._checkpoint_running = True
        loop = asyncio.get_running_loop()
        done = self._checkpoint_thread.submit(_catch_up, self._checkpointer)
        done.add_done_callback(lambda finished: loop.call_soon_threadsafe(self._checkpointed, finished))

    def _checkpointed(self, done: concurrent.futures.Future[bool]) -> None:
        self._checkpoint_running = False
        error = done.exception()
        if error is None and not done.result() and self.failure is None:
            # The commits kept coming faster than the thread's passes (a slow disk): the WAL, all but
            # its last few commits copied, would never be reset and would grow, and every fsync with
            # it. The writer copies that little rest itself, here between two commits, so the next
            # commit resets the WAL.
            try:
                self.journal.wal.checkpoint()
            except JournalError as failed:
                error = failed
        if error is not None:
            # Nothing is lost (the entries are in the WAL, fsynced); the next checkpoint retries, and
            # the writer's backstop keeps the WAL bounded meanwhile.
            log.warning("journal_checkpoint_failed", error=str(error))

    def _append_records(self, records: Sequence[Any]) -> list[JournalEntry]:
        written = self.journal.append_many(records)
        self._fold(written)
        return written

    def append(self, records: Sequence[JournalRecord]) -> None:
        """Outside the group commit: the daemon's own entries at start and at the very end."""
        if self.failure is not None:
            raise JournalError(self.failure)
        try:
            written = self.journal.append_many(records)
        except JournalError as error:
            self._failed(error)
            raise
        self._fold(written)
        self._notify()
        if written:
            self._keep_anchor(written[-1], [])

    # --- checkpoints' thread, and the anchor (controller/journal/anchor.py) ---------------------------
    def start_checkpoints(self) -> None:
        """The thread that runs the checkpoints while the table runs."""
        self._checkpoint_thread = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="checkpoint")
        self.journal.wal.defer_checkpoints()
        self._checkpointer = Journal.open_existing(self.path, readonly=False)

    def stop_checkpoints(self) -> None:
        """The checkpoint in progress (if any) finishes. The writer checkpoints by itself again from here
        on, at SQLite's default threshold (WalControl.resume_checkpoints: nothing else runs checkpoints
        now; closing the journal checkpoints it all)."""
        if self._checkpoint_thread is not None:
            self._checkpoint_thread.shutdown(wait=True)
            self._checkpoint_thread = None
        if self._checkpointer is not None:
            self._checkpointer.close()
            self._checkpointer = None
            try:
                self.journal.wal.resume_checkpoints()
            except JournalError as error:
                # Nothing is lost: the commits are fsynced in the WAL, and the backstop still bounds it.
                log.warning("journal_checkpoint_failed", error=str(error))

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
            self._failed(error)
            return False
        return True

    # --- the journal's failure ---------------------------------------------------------------------------
    def _failed(self, error: JournalError) -> None:
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


def _catch_up(checkpointer: Journal) -> bool:
    """PASSIVE checkpoints until one finds the WAL all copied and unchanged since the pass before (no
    commit in between: the writer's next commit then starts the WAL again from its beginning); False
    when CHECKPOINT_PASSES did not get there."""
    wal_pages = -1
    for _ in range(CHECKPOINT_PASSES):
        result = checkpointer.wal.checkpoint()
        if result.complete and result.wal_pages == wal_pages:
            return True
        wal_pages = result.wal_pages
    return False

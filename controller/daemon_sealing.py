"""The daemon's journal segments sealed (docs/journal.md "Segments and seals"): at start, after recovery
and before the table opens, when the sealing policy says the open segment is due; and while the table
runs, between rounds, on the loop, between two commits of the group commit (controller/daemon_journal.py
calls ``seal_live_if_due`` after a commit that ends between rounds). A seal that must wait (a round
open, records waiting, the checkpoint thread copying, another reader of the file) waits for the next
round's close, and is alerted once it has waited past its bound; one that fails is alerted and tried
again once the segment has grown.

Its doors: the journal's side (``SealingLedger``: the journal, whether records wait, the anchor, the
journal's failure) and the checkpoint thread (controller/daemon_checkpoints.py: copying now, its
connection released around a seal).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import structlog

from controller.daemon_checkpoints import CheckpointThread
from controller.journal.checkpoint import refold_reason, state_from_checkpoint, state_to_checkpoint
from controller.journal.seals import Seal, last_seal
from controller.journal.segments import SealBusy, seal_due, seal_open_segment
from controller.journal.state import TableState
from controller.journal.store import Journal, JournalEntry, JournalError

if TYPE_CHECKING:
    from controller.config import SegmentPolicy

log = structlog.get_logger("flushtable.daemon")


def sealed_fields(seal: Seal) -> dict[str, int]:
    """What the log says of a seal, at start and while running alike."""
    return {"segment": seal.segment, "first_seq": seal.first_seq, "last_seq": seal.last_seq}


class SealingLedger(Protocol):
    """What the sealer needs of the journal's side (controller/daemon_journal.py ``DaemonJournal``)."""

    path: Path
    failure: str | None

    @property
    def journal(self) -> Journal: ...

    @property
    def opened(self) -> bool: ...

    @property
    def records_waiting(self) -> bool: ...

    def reopened_around(self, between: Callable[[], None]) -> None: ...

    def anchor_at(self, seq: int, hash_hex: str) -> None: ...

    def fail(self, error: JournalError) -> None: ...


class SegmentSealer:
    """The seals of one running table's journal (``ledger``), keyed with ``anchor_key`` when given."""

    def __init__(
        self, ledger: SealingLedger, checkpoints: CheckpointThread, anchor_key: bytes | None
    ) -> None:
        self._ledger = ledger
        self._checkpoints = checkpoints
        self._anchor_key = anchor_key
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
        last = last_seal(self._ledger.path) if self._ledger.journal.file.base.segment > 1 else None
        why, entries = self._why_due(
            policy, now, last_checkpoint_refolds=None if last is None else refold_reason(last.checkpoint)
        )
        if why is None:
            return None
        wait = None if waits is None else waits()
        if wait is not None:
            self._defer_live_seal(wait)
            return None
        sealed: list[Seal] = []

        def seal_now() -> None:
            try:
                seal = seal_open_segment(
                    self._ledger.path, state, key=self._anchor_key, write_anchor_at_end=self._ledger.anchor_at
                )
            except JournalError as error:  # the table opens all the same, on its open segment
                self._seal_failed(str(error), entries, policy)
                return
            if seal is not None:
                sealed.append(seal)

        self._ledger.reopened_around(seal_now)
        seal = sealed[0] if sealed else None
        if seal is not None:
            log.info("journal_segment_sealed", **sealed_fields(seal), reason=why)
        return seal

    def seal_while_running(self, state: TableState, policy: SegmentPolicy) -> None:
        """From here on, seal the open segment between rounds when the policy says it is due
        (``seal_live_if_due``). ``state``: the reducer's state at the journal's last entry now; it is
        folded on at every commit (a copy: the caller's is not touched)."""
        self._live_state = state_from_checkpoint(state_to_checkpoint(state))
        self._live_policy = policy

    @property
    def live(self) -> bool:
        """Sealing while the table runs (``seal_while_running`` was called)."""
        return self._live_state is not None

    def fold(self, written: Sequence[JournalEntry]) -> None:
        """Entries committed: the live state folds them on (nothing when not sealing live)."""
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
        ledger = self._ledger
        if state is None or policy is None or ledger.failure is not None or not ledger.opened:
            return None
        due = self._live_seal_due(state, policy, now)
        if due is None:
            return None
        why, entries = due
        last = ledger.journal.last_entry()
        if last is not None and state.last_seq < last.seq:
            # Entries another process wrote (`flushtable clear`): the state folds them on too.
            state.apply_all(ledger.journal.entries(since_seq=state.last_seq))
        seal = self._switch_to_a_new_segment(state, entries, policy)
        if seal is not None:
            self._live_sealed(seal, why)
        return seal

    def _why_due(
        self, policy: SegmentPolicy, now: datetime, *, last_checkpoint_refolds: str | None = None
    ) -> tuple[str | None, int]:
        """Why the open segment is due to be sealed by ``policy`` now (None: it is not), and its entries:
        the one reading of the policy's triggers, at start and while the table runs."""
        entries, first_utc = self._ledger.journal.reader.segment_summary()
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
            if self._ledger.records_waiting
            else "the checkpoint thread is copying"
            if self._checkpoints.running
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
                ledger.path, state, key=self._anchor_key, write_anchor_at_end=ledger.anchor_at
            )
            if seal is not None:
                sealed.append(seal)

        ledger = self._ledger
        # A connection of ours: SQLite leaves WAL mode only with none.
        checkpointing = self._checkpoints.release()
        try:
            ledger.journal.switch_file(seal_now)
        except (JournalError, sqlite3.Error, OSError) as error:
            if ledger.journal.switch_failed is not None:
                # No file to append to: the table stops now (as for any journal failure); the next
                # start finishes the seal.
                ledger.fail(JournalError(ledger.journal.switch_failed))
                return None
            if isinstance(error, SealBusy):
                # Another connection on the file (`flushtable panel`, a watch's child): the segment
                # stays open and whole (a seal changes nothing until its first step succeeds); the
                # next commit between rounds tries again.
                self._defer_live_seal(str(error))
            else:
                self._seal_failed(str(error), entries, policy)
        if checkpointing:
            self._checkpoints.reopen()
        return sealed[0] if sealed else None

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
        log.info("journal_segment_sealed", **sealed_fields(seal), reason=why, while_running=True)

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

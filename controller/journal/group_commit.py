"""The group commit: many calls' journal records in one transaction (one fsync), each call's effects
acted on only once its records are committed.

    group = GroupCommit(journal.append_many, clock=time.monotonic, max_delay_s=0.002)
    group.add(records, effect, urgent=...)     # in call order; nothing is written yet
    if group.due(): committed = group.commit()  # one transaction; then act on committed.effects in order

"Journal first": an effect (a command for a device, an answer to a person) is handed back only by the
commit that made its records durable, together with the effects of every call added before it, in
order; so nothing acts on a decision before the journal holds it, and nothing acts out of order.

When a commit is due (``due_in_s``, on the injected clock):
- at once when a waiting call is urgent (an effect someone waits for: a command, an answer);
- at once when the caller is idle (nothing more to add just now): the events that arrived while the
  last commit ran have been handled behind it and share this one, so an event waits for no more than
  the one commit in flight and its own (issue 28; an older rule also waited ``max_delay_s`` since the
  last commit, which only lengthened every such event's wait: docs/operations.md "Issue 28: event
  to commit, and the whole stack against its engine");
- otherwise, while the caller stays busy, ``max_delay_s`` after the oldest waiting record: a burst
  longer than the caller's handling shares commits, one per ``max_delay_s`` besides the urgent ones.
Commits cannot overlap (each runs on the caller's thread), so a burst that arrives during a commit
shares the next one: the fsyncs of a burst are bounded by its length, not by its number of events.

A failed commit (the journal refused it) drops everything waiting, never hands its effects back, and
refuses every later call: a record lost in the middle would leave a hole that a later commit would hide.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from controller.journal.store import AppendItem, JournalEntry, JournalError

EffectT = TypeVar("EffectT")


@dataclass(frozen=True, slots=True)
class Committed(Generic[EffectT]):
    """One commit: the entries written (in order) and the effects of the calls it covered, in order."""

    entries: list[JournalEntry]
    effects: list[EffectT]
    latencies_s: list[float]  # for each call added with received_s and records: received -> committed


@dataclass(frozen=True, slots=True)
class Dropped(Generic[EffectT]):
    """What a failure dropped: never written, never to be acted on (whoever waits must be told)."""

    effects: list[EffectT]
    entries: int


class CommitFailed(JournalError):
    """The journal refused a commit: everything that waited is dropped (``dropped``)."""

    def __init__(self, reason: str, dropped: Dropped[Any]) -> None:
        super().__init__(reason)
        self.dropped = dropped


@dataclass(slots=True)
class _Waiting(Generic[EffectT]):
    records: Sequence[AppendItem]
    effect: EffectT
    received_s: float | None
    added_s: float


@dataclass(slots=True)
class GroupCommit(Generic[EffectT]):
    """Calls waiting to be committed together. ``append`` writes records in one transaction (the
    journal's ``append_many``); ``clock`` is in seconds (monotonic in the daemon, virtual in tests)."""

    append: Callable[[Sequence[AppendItem]], list[JournalEntry]]
    clock: Callable[[], float]
    max_delay_s: float = 0.0
    failure: str | None = None
    _waiting: list[_Waiting[EffectT]] = field(default_factory=list)
    _urgent: bool = False
    _oldest_record_s: float | None = None

    def add(
        self,
        records: Sequence[AppendItem],
        effect: EffectT,
        *,
        urgent: bool = False,
        received_s: float | None = None,
    ) -> None:
        """One call's records and what to do once they are committed. ``urgent``: someone waits for the
        effect (a command, an answer): the commit is due at once. ``received_s`` (on ``clock``): when
        the event that caused the call arrived, for the event-to-commit latency."""
        if self.failure is not None:
            raise JournalError(self.failure)
        now_s = self.clock()
        self._waiting.append(_Waiting(records, effect, received_s, now_s))
        self._urgent = self._urgent or urgent
        if records and self._oldest_record_s is None:
            self._oldest_record_s = now_s

    @property
    def waiting(self) -> int:
        """How many calls wait for the next commit."""
        return len(self._waiting)

    def due_in_s(self, *, idle: bool = False) -> float | None:
        """How long until a commit is due: None with nothing waiting, 0 when it is due now. ``idle``:
        the caller has nothing more to add just now (its queue is empty)."""
        if not self._waiting:
            return None
        if self._urgent or self._oldest_record_s is None:  # urgent, or effects with no record at all
            return 0.0
        if idle:
            # Nothing more to add just now: waiting would only add to every record's wait. The
            # events that arrived during the last commit are this commit's company already.
            return 0.0
        return max(0.0, self._oldest_record_s + self.max_delay_s - self.clock())

    def due(self, *, idle: bool = False) -> bool:
        return self.due_in_s(idle=idle) == 0.0

    def commit(self) -> Committed[EffectT]:
        """Write every waiting call's records in one transaction; return their effects, in order. If
        the journal refuses, CommitFailed: everything waiting is dropped (see :meth:`fail`)."""
        if self.failure is not None:
            raise JournalError(self.failure)
        batch, self._waiting = self._waiting, []
        self._urgent = False
        self._oldest_record_s = None
        records = [record for call in batch for record in call.records]
        entries: list[JournalEntry] = []
        if records:
            try:
                entries = self.append(records)
            except JournalError as error:
                self._waiting = batch + self._waiting  # anything added meanwhile is dropped too
                raise CommitFailed(str(error), self.fail(str(error))) from error
        committed_s = self.clock()
        latencies_s = [
            committed_s - call.received_s for call in batch if call.received_s is not None and call.records
        ]
        return Committed(entries, [call.effect for call in batch], latencies_s)

    def fail(self, reason: str) -> Dropped[EffectT]:
        """The journal failed (here or elsewhere): drop what waits, and refuse every later call."""
        dropped = Dropped(
            [call.effect for call in self._waiting], sum(len(call.records) for call in self._waiting)
        )
        self.failure = self.failure or reason
        self._waiting = []
        self._urgent = False
        self._oldest_record_s = None
        return dropped


__all__ = ["CommitFailed", "Committed", "Dropped", "GroupCommit"]

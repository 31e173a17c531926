"""What the engine hands back to the shell: journal records, device commands, alerts and refusals.

``TableEngine.handle`` returns a list of these, in the order the shell must act on them: append each
``JournalRecord`` (docs/journal.md) before sending the commands that follow it, so the journal always
records a decision before the table acts on it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from controller.journal import entries
from controller.journal.entries import Entry
from drivers.events import DomainCommand

AlertSeverity = Literal["info", "alert", "latching"]


@dataclass(frozen=True, slots=True, init=False)
class JournalRecord:
    """One journal entry to append: ``journal.append(kind, payload, round_id=..., source=...)``. The
    payload is the typed entry (controller/journal/entries/), built when the engine decides it, so a
    field that does not fit its kind is refused there."""

    kind: str
    entry: Entry
    round_id: str | None
    source: str

    def __init__(self, kind: str, entry: Entry, round_id: str | None, source: str) -> None:
        # The engine makes ~110 of these a round: the fields are written through their slots, not a
        # frozen dataclass's generated __init__ (object.__setattr__ by name, four times: it cost about a
        # tenth of the engine core's time). Still frozen: an assignment after this raises.
        _SET_KIND(self, kind)
        _SET_ENTRY(self, entry)
        _SET_ROUND_ID(self, round_id)
        _SET_SOURCE(self, source)

    @classmethod
    def typed(cls, entry: Entry, round_id: str | None, source: str) -> JournalRecord:
        """The record of an entry built where it was decided: its kind is the entry's own tag."""
        return cls(entry.kind, entry, round_id, source)

    @classmethod
    def of(cls, kind: str, fields: Mapping[str, Any], round_id: str | None, source: str) -> JournalRecord:
        """The record of ``kind`` with these fields, typed now (a field that does not fit is refused).
        No production code writes through it (tests/engine/test_entries_typed.py): the tests and benches
        that build a record from a stored row's fields (a journal's own rows, a fixture) do."""
        return cls(kind, entries.build(kind, fields), round_id, source)

    @property
    def payload(self) -> dict[str, Any]:
        """Both parts as one object, as the journal's trusted readers see them (tests, the shell)."""
        return entries.merged_payload(
            self.kind, entries.public_dict(self.entry), entries.private_dict(self.entry)
        )


# The slots' own setters (dataclass(slots=True) made the class these belong to).
_SET_KIND: Callable[[JournalRecord, str], None] = vars(JournalRecord)["kind"].__set__
_SET_ENTRY: Callable[[JournalRecord, Entry], None] = vars(JournalRecord)["entry"].__set__
_SET_ROUND_ID: Callable[[JournalRecord, str | None], None] = vars(JournalRecord)["round_id"].__set__
_SET_SOURCE: Callable[[JournalRecord, str], None] = vars(JournalRecord)["source"].__set__


@dataclass(frozen=True, slots=True)
class Alert:
    """Something a floor supervisor must see now (the panel shows it; the shell logs it)."""

    severity: AlertSeverity
    kind: str
    message: str
    round_id: str | None = None
    fault_id: str | None = None


@dataclass(frozen=True, slots=True)
class Refused:
    """An operator action or dealer key the engine refused, with the reason (one line)."""

    action: str
    reason: str


Output = DomainCommand | JournalRecord | Alert | Refused

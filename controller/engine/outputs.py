"""What the engine hands back to the shell: journal records, device commands, alerts and refusals.

``TableEngine.handle`` returns a list of these, in the order the shell must act on them: append each
``JournalRecord`` (docs/journal.md) before sending the commands that follow it, so the journal always
records a decision before the table acts on it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from controller.journal import entries
from controller.journal.entries import Entry
from drivers.events import DomainCommand

AlertSeverity = Literal["info", "alert", "latching"]


@dataclass(frozen=True, slots=True)
class JournalRecord:
    """One journal entry to append: ``journal.append(kind, payload, round_id=..., source=...)``. The
    payload is the typed entry (controller/journal/entries.py), built when the engine decides it, so a
    field that does not fit its kind is refused there."""

    kind: str
    entry: Entry
    round_id: str | None
    source: str

    @classmethod
    def of(cls, kind: str, fields: Mapping[str, Any], round_id: str | None, source: str) -> JournalRecord:
        """The record of ``kind`` with these fields, typed now (a field that does not fit is refused)."""
        return cls(kind, entries.build(kind, fields), round_id, source)

    @property
    def payload(self) -> dict[str, Any]:
        """Both parts as one object, as the journal's trusted readers see them (tests, the shell)."""
        return entries.merged_payload(
            self.kind, entries.public_dict(self.entry), entries.private_dict(self.entry)
        )


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

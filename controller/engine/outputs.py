"""What the engine hands back to the shell: journal records, device commands, alerts and refusals.

Every engine entry point returns a list of these, in the order the shell must act on them: append each
``JournalRecord`` (CONTRACTS.md) before sending the commands that follow it, so the journal always
records a decision before the table acts on it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from drivers.events import DomainCommand

AlertSeverity = Literal["info", "alert", "latching"]


@dataclass(frozen=True, slots=True)
class JournalRecord:
    """One journal entry to append: ``journal.append(kind, payload, round_id=..., source=...)``."""

    kind: str
    payload: Mapping[str, object]
    round_id: str | None
    source: str


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

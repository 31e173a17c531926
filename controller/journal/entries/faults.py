"""Faults: raised, acknowledged, cleared (docs/operations.md "Faults")."""

from __future__ import annotations

from typing import ClassVar

import msgspec

from controller.journal.entries.base import (
    Entry,
    Part,
    Reason,
    ReasonDetail,
)


class FaultRaised(Entry, frozen=True, tag="fault_raised"):
    fault_id: str
    kind_of_fault: str = msgspec.field(name="kind")
    severity: str
    device: str | None
    reason: Reason
    by: str | None = None  # who raised it, when not the engine itself (the integrity watch)
    private: ReasonDetail | None = None
    PRIVATE: ClassVar[type[Part] | None] = ReasonDetail


class FaultAcknowledged(Entry, frozen=True, tag="fault_acknowledged"):
    fault_id: str
    by: str


class FaultCleared(Entry, frozen=True, tag="fault_cleared"):
    fault_id: str
    by: str
    reason: str

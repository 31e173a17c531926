"""The stand-alone store: one table's meter kept in the table's own journal (controller/journal/).

Its records are the progressive's typed entries (``progressive_*``), chained with the table's other
entries, so `flushtable journal verify` covers them and the reducer (controller/journal/state.py) folds
them like every kind: a restart restores the meter exactly. The envelope's ``round_id`` is the round an
entry is about (None for a change of parameters or a reserve movement); its source is ``progressive``
(or the person's, ``operator:NAME``, for what a person did)."""

from __future__ import annotations

from collections.abc import Sequence

from controller.journal import entries as e
from controller.journal.kinds import PROGRESSIVE_KINDS
from controller.journal.store import Journal, PendingEntry

SOURCE = "progressive"
MACHINE_WRITERS = frozenset({"engine", "daemon", "config", SOURCE})
"""``by`` values that are no person: the entry's source is the progressive itself."""


def _round_of(entry: e.Entry) -> str | None:
    round_id = getattr(entry, "round_id", None)
    return round_id if isinstance(round_id, str) else None


def _source_of(entry: e.Entry) -> str:
    by = getattr(entry, "by", None)
    if isinstance(by, str) and by not in MACHINE_WRITERS:
        return f"operator:{by}"  # a person's: a manager's change, a supervisor's confirmation
    return SOURCE


class JournalStore:
    """:class:`~controller.progressive.controller.ProgressiveStore` over a table's journal."""

    def __init__(self, journal: Journal) -> None:
        self.journal = journal

    def load(self) -> list[e.Entry]:
        return [stored.entry for stored in self.journal.replay(kinds=sorted(PROGRESSIVE_KINDS))]

    def commit(self, entries: Sequence[e.Entry]) -> None:
        self.journal.append_many(
            [PendingEntry(entry.kind, entry, _round_of(entry), _source_of(entry)) for entry in entries]
        )

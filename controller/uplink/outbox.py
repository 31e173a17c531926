"""The journal as the outbox: which messages a table sends to the floor, in which order (pure, no I/O).

Every committed entry goes out as an ``entry`` message (public part and the private part's commitment),
in seq order. An entry's private part waits until the one reducer says its round's cards are revealed
(``TableState.private_visible``, the same gate every viewer goes through, controller/journal/privacy.py):
it is then released right after the entry that revealed it, as a ``private`` message. A dead hand's, a
dead or voided round's, and a private part outside any round are never released.

The sequence of messages is a function of the journal alone, so each has a stable position
(``wire.Position``): the uplink resumes after the last position the server holds, whatever it sent
before, and a resend carries the same de-duplication id as the first sending.
"""

from __future__ import annotations

from dataclasses import dataclass

from controller.journal.state import TableState
from controller.journal.store import JournalEntry
from controller.uplink import wire


@dataclass(frozen=True, slots=True)
class OutMessage:
    position: wire.Position
    msg_id: str
    body: bytes
    entry_seq: int  # the entry it carries (or whose private part it carries)
    private: bool


class Outbox:
    """Feed the journal's entries in order; each ``feed`` returns the messages due after that entry."""

    def __init__(self, table_id: str) -> None:
        self.table_id = table_id
        self.state = TableState(table_id)
        self.last_seq = 0
        self._pending: dict[str, list[JournalEntry]] = {}  # round -> entries whose private part waits

    def feed(self, stored: JournalEntry) -> list[OutMessage]:
        if stored.seq != self.last_seq + 1:
            raise ValueError(f"outbox: entry {stored.seq} after {self.last_seq}")
        if stored.table_id != self.table_id:
            raise ValueError(
                f"outbox: entry {stored.seq} is table {stored.table_id!r}, not {self.table_id!r}"
            )
        self.state.apply(stored)
        self.last_seq = stored.seq
        body = wire.entry_body(stored.public_json())
        out = [
            OutMessage(
                wire.Position(stored.seq, 0), wire.msg_id(self.table_id, stored.seq, body), body, stored.seq,
                private=False,
            )
        ]  # fmt: skip
        if stored.private_text is not None and stored.round_id is not None:
            self._pending.setdefault(stored.round_id, []).append(stored)
        rounds = [stored.round_id] if stored.round_id in self._pending else []
        if stored.round_id is None:
            rounds = list(self._pending)  # a table-wide entry may move a round's phase
        for round_id in rounds:
            out.extend(self._release(round_id, stored.seq, len(out)))
        return out

    def _release(self, round_id: str, by_seq: int, already: int) -> list[OutMessage]:
        waiting = self._pending.get(round_id, [])
        released: list[OutMessage] = []
        still: list[JournalEntry] = []
        for stored in waiting:
            if self.state.private_visible(stored):
                assert stored.private_text is not None
                body = wire.private_body(self.table_id, stored.seq, stored.private_text)
                released.append(
                    OutMessage(
                        wire.Position(by_seq, already + len(released)),
                        wire.msg_id(self.table_id, stored.seq, body, private=True),
                        body,
                        stored.seq,
                        private=True,
                    )
                )
            else:
                still.append(stored)
        round_state = self.state.round(round_id)
        if not still or (round_state is not None and not round_state.open):
            # A closed round's parts that are not shown now never will be (a dead hand's).
            self._pending.pop(round_id, None)
        else:
            self._pending[round_id] = still
        return released

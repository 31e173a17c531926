"""The one gate between the journal and anyone who views it.

An entry leaves the daemon (SSE, every `/api` route and page, recall, `journal show/tail`) as its
public part, plus its private part only when the reducer says the round's cards are revealed
(``TableState.private_visible``): a dead hand's never. Nothing here looks inside text: the private part
is dropped whole, by type (controller/journal/entries/ says which fields are private). The logs
never carry a private part at all (controller/journal/writer.py logs the public part).

``with_private=True`` is for the auditor's explicit flag (`journal show --private`, `recall
--private`), never for a viewer.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import TYPE_CHECKING, Any

from controller.journal.rows import refuse_newer
from controller.journal.state import TableState
from controller.journal.store import Journal, JournalEntry

if TYPE_CHECKING:
    from controller.journal.entries import Entry


def shows_private(stored: JournalEntry, state: TableState, *, with_private: bool = False) -> bool:
    """Does the entry's private part go out with it now: it has one, and the round is revealed (not a
    dead hand's), or an auditor asked for every private part."""
    return stored.private is not None and (with_private or state.private_visible(stored))


def viewer_entry(stored: JournalEntry, state: TableState, *, with_private: bool = False) -> dict[str, Any]:
    """The entry as a viewer may see it now: ``payload`` is the public part, and ``private`` the
    private part when the round is revealed (None otherwise, ``hidden`` then says so)."""
    shown = shows_private(stored, state, with_private=with_private)
    return {
        **stored.public_json(),
        "private": stored.private if shown else None,
        "hidden": stored.private is not None and not shown,
    }


def viewer_event(stored: JournalEntry, state: TableState, *, with_private: bool = False) -> dict[str, Any]:
    """The entry as the panel's stream and recall's events show it: its envelope, ``payload`` (both
    parts merged once shown, the public part before), ``private`` and ``hidden``."""
    shown = shows_private(stored, state, with_private=with_private)
    return {
        "seq": stored.seq,
        "time_utc": stored.time_utc,
        "round_id": stored.round_id,
        "source": stored.source,
        "kind": stored.kind,
        "payload": stored.payload if shown else dict(stored.public),
        "private": stored.private if shown else None,
        "hidden": stored.private is not None and not shown,
    }


def viewer_typed(stored: JournalEntry, state: TableState, *, with_private: bool = False) -> Entry:
    """The typed entry as a viewer may see it now: with its private part once the round is revealed,
    its public view (the private part None) before, and a dead hand's never (what the panel's sentences
    read: controller/journal/sentence.py)."""
    import msgspec  # noqa: PLC0415 - the typed entries' library: the panel's sentences, not recall's

    entry = stored.entry
    if entry.private_part() is None or shows_private(stored, state, with_private=with_private):
        return entry
    return msgspec.structs.replace(entry, private=None)


def viewer_payload(stored: JournalEntry, state: TableState, *, with_private: bool = False) -> dict[str, Any]:
    """The payload a viewer may see: both parts merged once revealed, the public part before."""
    return stored.payload if shows_private(stored, state, with_private=with_private) else dict(stored.public)


class RevealOracle:
    """The gate's answer for any entry of a journal, read by a command (`journal show`, `tail`). A
    private part is only ever shown within its round, so each round is folded from its own entries
    alone, when first asked, and brought up to date as the journal grows (`tail --follow`); nothing
    else of the journal is read. The most recent ``CACHED_ROUNDS`` rounds are kept. The rounds are
    folded from their stored rows through their views (``TableState(views=True)``): the command loads
    no typed classes (issue 28)."""

    CACHED_ROUNDS = 16

    def __init__(self, journal: Journal) -> None:
        self._journal = journal
        self._rounds: OrderedDict[str, TableState] = OrderedDict()
        # Outside a round: nothing to fold.
        self._outside = TableState(journal.table_id, views=True, journal_path=journal.path)

    def state_for(self, entry: JournalEntry) -> TableState:
        round_id = entry.round_id
        if round_id is None:
            return self._outside
        state = self._rounds.pop(round_id, None) or TableState(
            self._journal.table_id, views=True, journal_path=self._journal.path
        )
        if state.last_seq < entry.seq:  # the round as far as the journal holds it now
            state.apply_all(self._journal.entries(since_seq=state.last_seq, round_id=round_id))
        self._rounds[round_id] = state
        while len(self._rounds) > self.CACHED_ROUNDS:
            self._rounds.popitem(last=False)
        return state

    def viewer_entry(self, entry: JournalEntry, *, with_private: bool = False) -> dict[str, Any]:
        # The entry shown is refused as the fold's are (a newer release's row), outside a round too.
        refuse_newer(entry, self._journal.path)
        return viewer_entry(entry, self.state_for(entry), with_private=with_private)

"""Game recall: closed rounds as records, folded by the one reducer and shown through the one gate.

``{"round_id", "status": "settled" | "dead" | "void", "round": <settle input>, "settlement": <settle
output>, "bank_by_seat" (a designated player's settled round only), "faults": [fault_raised payloads
of the round], "dead_hands": {seat: why, in the dead_hand entry's public words}, "events":
[{"seq", "time_utc", "source", "kind", "payload", "private", "hidden"} of the round]}``
(docs/journal.md "Recall"). A settled round is revealed, so its record carries its cards (never a dead
seat's: they are not in its round); a dead or voided round's record carries no card, and its entries'
private parts are withheld unless an auditor asks for them (``with_private``). Only closed rounds are
recalled: an open round is either being played (its cards must not show) or will be voided by recovery at
the next start.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypedDict, Unpack

from controller.errors import UserError
from controller.journal.kinds import CLOSING_KINDS, ROUND_STARTED, STATUS_BY_CLOSING_KIND
from controller.journal.privacy import viewer_event, viewer_payload
from controller.journal.state import TableState
from controller.journal.store import Journal, JournalEntry

DEFAULT_LAST = 10


class RecallFilters(TypedDict, total=False):
    """A recall's filters (``recall_from``'s keywords), each a command-line option."""

    last: int | None
    round_id: str | None
    with_private: bool
    start_utc: str | None
    end_utc: str | None
    seat: int | None


def recall_records(path: str | Path, **filters: Unpack[RecallFilters]) -> list[dict[str, Any]]:
    """Records of the journal's closed rounds, oldest first: the last ``last`` (all when None), or the
    one round ``round_id``; of the rounds closed in [start_utc, end_utc) and with a wager of ``seat``
    when given."""
    last = filters.get("last")
    if last is not None and last < 1:
        raise UserError(f"last: must be at least 1, not {last}")
    with Journal.open_existing(path) as journal:
        return recall_from(journal, **filters)


def recall_from(  # noqa: PLR0913 - keyword-only filters of a recall, each a command-line option
    journal: Journal,
    *,
    last: int | None = None,
    round_id: str | None = None,
    with_private: bool = False,
    start_utc: str | None = None,
    end_utc: str | None = None,
    seat: int | None = None,
) -> list[dict[str, Any]]:
    if round_id is not None:
        closed = journal.reader.round_closing(round_id, sorted(CLOSING_KINDS))
        if closed is None:
            started = journal.reader.round_closing(round_id, [ROUND_STARTED]) is not None
            if started:
                raise UserError(f"round {round_id}: not closed yet (in play, or voided at the next start)")
            raise UserError(f"round {round_id}: not in the journal {journal.path}")
        return [_record(journal, closed, with_private)]
    if start_utc is not None or end_utc is not None or seat is not None:
        return [
            _record(journal, entry, with_private)
            for entry in _closings_in(journal, start_utc=start_utc, end_utc=end_utc, seat=seat, last=last)
        ]
    if last is not None:
        closing = journal.last_entries(last, sorted(CLOSING_KINDS))
    else:
        closing = list(journal.entries(kinds=sorted(CLOSING_KINDS)))
    return [_record(journal, entry, with_private) for entry in closing]


def _closings_in(
    journal: Journal, *, start_utc: str | None, end_utc: str | None, seat: int | None, last: int | None
) -> list[JournalEntry]:
    """The closing entries of the rounds closed in the range with a wager of the seat, oldest first:
    through the round index (totals.py), or, in a journal of an earlier schema read as it is, by
    reading every closing entry."""
    if journal.file.has_totals:
        seqs = journal.indexes.closed_round_seqs(start_utc=start_utc, end_utc=end_utc, seat=seat, last=last)
        return [entry for entry in map(journal.entry, seqs) if entry is not None]
    found = [
        entry
        for entry in journal.entries(kinds=sorted(CLOSING_KINDS))
        if (start_utc is None or entry.time_utc >= start_utc)
        and (end_utc is None or entry.time_utc < end_utc)
        and (seat is None or seat in _wager_seats(journal, entry))
    ]
    return found[-last:] if last is not None else found


def _wager_seats(journal: Journal, closing: JournalEntry) -> tuple[int, ...]:
    """The seats with a wager in a closing entry, read as the round index reads them (totals.py
    ``round_row``); a closing whose settlement is not its kind's shape (a damaged file's: not an
    object, seats not a list) is the round index's scan's one ``JournalError`` naming the journal and
    the seq (``damaged_entry``), not a traceback."""
    # Only a journal of an earlier schema comes here: the totals' module loads for it alone.
    from controller.journal.totals import PAYLOAD_DAMAGE, damaged_entry, round_row  # noqa: PLC0415

    try:
        row = round_row(closing.seq, closing.kind, closing.round_id, closing.time_utc, closing.public)
    except PAYLOAD_DAMAGE as error:
        raise damaged_entry(journal.path, closing.seq, closing.kind, error) from None
    return row.seats if row is not None else ()


def _record(journal: Journal, closing: JournalEntry, with_private: bool) -> dict[str, Any]:
    assert closing.round_id is not None  # the store refuses a closing entry without one
    events = journal.reader.round_entries(closing.round_id, closing.seq)  # its one segment
    record = round_record(journal.table_id, events, with_private=with_private, journal_path=journal.path)
    assert record is not None  # the round's own entries hold its closing entry
    # Where the round is kept, when not in the open segment (docs/journal.md "Segments and seals").
    return {**record, **_stored(journal, closing.seq)}


def round_record(
    table_id: str,
    events: Sequence[JournalEntry],
    *,
    with_private: bool = False,
    in_play: bool = False,
    journal_path: Path | None = None,
) -> dict[str, Any] | None:
    """The record of one round from its own entries, in order: the table's recall, and the floor's
    round page (controller/floor/panel/views.py), which reads the same entries from PostgreSQL. A round
    without a closing entry (in play) is None, or with ``in_play`` a record of status ``in_progress``
    with no round and no settlement (its entries through the same gate: no card before the reveal).
    ``journal_path``: the journal named in a row's refusal (``rows.stored_view``)."""
    closing = next((entry for entry in events if entry.kind in CLOSING_KINDS), None)
    round_id = closing.round_id if closing is not None else next((e.round_id for e in events), None)
    if round_id is None or (closing is None and not in_play):
        return None
    # The round's own entries folded by the reducer: its reveal and its dead seats, as the live view
    # saw them, decide what the gate lets through.
    state = TableState(table_id, views=True, journal_path=journal_path)
    for entry in events:
        try:
            state.apply(entry)
        except UserError:
            raise  # already one line naming the journal and the seq (a view's refusal)
        except Exception as error:
            # A row of its kind's columns whose settlement is not its shape (a damaged file's: seats
            # not a list, a seat's wagers not an object): the meters' fold cannot count it. One line
            # naming the journal and the seq, as the round index's scan refuses it; the floor's round
            # page (no journal path) keeps its own handling. Only a damaged file comes here: the
            # totals' module loads for it alone.
            from controller.journal.totals import PAYLOAD_DAMAGE, damaged_entry  # noqa: PLC0415

            if journal_path is None or not isinstance(error, PAYLOAD_DAMAGE):
                raise
            raise damaged_entry(journal_path, entry.seq, entry.kind, error) from None
    closing_payload = viewer_payload(closing, state, with_private=with_private) if closing is not None else {}
    return {
        "round_id": round_id,
        "status": STATUS_BY_CLOSING_KIND[closing.kind] if closing is not None else "in_progress",
        "round": closing_payload.get("round"),
        "settlement": closing_payload.get("settlement") or {},
        # Designated player: the bank after each seat is paid (round_settled's, when it has one).
        **({"bank_by_seat": closing_payload["bank_by_seat"]} if closing_payload.get("bank_by_seat") else {}),
        "faults": [
            viewer_payload(entry, state, with_private=with_private)
            for entry in events
            if entry.kind == "fault_raised"
        ],
        # Why each dead seat is dead, in the dead_hand entry's public words ("killed by a supervisor:
        # exposed hand"): the settlement only knows the seat had no cards, which it reads as a wrong
        # card count; a kill is recalled as a kill.
        "dead_hands": {
            str(entry.payload["seat"]): str((entry.payload.get("reason") or {}).get("message", ""))
            for entry in events
            if entry.kind == "dead_hand" and entry.payload.get("seat") is not None
        },
        "events": [_event(entry, state, with_private) for entry in events],
    }


def _stored(journal: Journal, seq: int) -> dict[str, Any]:
    """``{"stored": {"segment", "file", "archived"}}`` for a round in a sealed segment (an archived one
    is read from its archive), nothing for one in the open segment."""
    if seq > journal.file.base.base_seq:
        return {}
    from controller.journal.seals import segment_of_seq, segments_dir  # noqa: PLC0415

    found = segment_of_seq(journal.path, seq)
    if found is None:
        return {}
    segment, file = found
    return {
        "stored": {
            "segment": segment,
            "file": str(file),
            "archived": file.parent != segments_dir(journal.path),
        }
    }


def _event(entry: JournalEntry, state: TableState, with_private: bool) -> dict[str, Any]:
    # docs/journal.md "Recall": the public part, or both parts once shown (as "round" and "faults").
    event = viewer_event(entry, state, with_private=with_private)
    del event["round_id"]  # the record's own
    return event

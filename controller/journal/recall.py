"""Game recall: closed rounds as records (CONTRACTS.md "Recall record").

``{"round_id", "status": "settled" | "dead" | "void", "round": <settle input>, "settlement": <settle
output>, "faults": [fault_raised payloads of the round], "events": [{"seq", "time_utc", "source",
"kind", "payload"} of the round]}``. Only closed rounds are recalled: an open round is either being
played (its cards must not show) or will be voided by recovery at the next start.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from controller.errors import UserError
from controller.journal.kinds import CLOSING_KINDS, FAULT_RAISED, ROUND_STARTED, STATUS_BY_CLOSING_KIND
from controller.journal.store import Journal, JournalEntry

DEFAULT_LAST = 10


def recall_records(
    path: str | Path, last: int | None = None, round_id: str | None = None
) -> list[dict[str, Any]]:
    """Records of the journal's closed rounds, oldest first: the last ``last`` (all when None), or the
    one round ``round_id``."""
    if last is not None and last < 1:
        raise UserError(f"last: must be at least 1, not {last}")
    with Journal.open_existing(path) as journal:
        return recall_from(journal, last=last, round_id=round_id)


def recall_from(
    journal: Journal, *, last: int | None = None, round_id: str | None = None
) -> list[dict[str, Any]]:
    if round_id is not None:
        closing = list(journal.entries(round_id=round_id, kinds=sorted(CLOSING_KINDS)))
        if not closing:
            started = any(True for _ in journal.entries(round_id=round_id, kinds=[ROUND_STARTED]))
            if started:
                raise UserError(f"round {round_id}: not closed yet (in play, or voided at the next start)")
            raise UserError(f"round {round_id}: not in the journal {journal.path}")
        return [_record(journal, closing[0])]
    if last is not None:
        closing = journal.last_entries(last, sorted(CLOSING_KINDS))
    else:
        closing = list(journal.entries(kinds=sorted(CLOSING_KINDS)))
    return [_record(journal, entry) for entry in closing]


def _record(journal: Journal, closing: JournalEntry) -> dict[str, Any]:
    assert closing.round_id is not None  # the store refuses a closing entry without one
    events = list(journal.entries(round_id=closing.round_id))
    return {
        "round_id": closing.round_id,
        "status": STATUS_BY_CLOSING_KIND[closing.kind],
        "round": closing.payload["round"],
        "settlement": closing.payload["settlement"],
        "faults": [entry.payload for entry in events if entry.kind == FAULT_RAISED],
        "events": [entry.event_json() for entry in events],
    }

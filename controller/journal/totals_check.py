"""`flushtable journal verify --totals`: the per-period totals kept beside each segment's entries
(controller/journal/totals.py) against those entries folded again, segment by segment (docs/journal.md
"Totals and indexes").

The totals are derived, not evidence (the hash chain does not cover them), and the readers trust them:
this is how an auditor sees that they still say what the entries say. Each file is held to the reading
its schema was written with: a schema-3 file (a sealed segment is never migrated: its seal signs its
bytes) counted a round's balance without the progressive's net, and is compared by that reading; its
readers fold its entries instead wherever its totals hold a Progressive wager
(controller/journal/indexes.py), so what they show is this release's reading either way."""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from controller.journal.errors import JournalError, sqlite_reason
from controller.journal.handle import JournalFile
from controller.journal.schema import counted_rows
from controller.journal.store import Journal
from controller.journal.totals import holds_progressive_wager, totals_by_period

_DIFFERENCES_SHOWN = 5  # a damaged file differs everywhere: the first few say enough


@dataclass(frozen=True, slots=True)
class TotalsVerdict:
    """One file's verdict: ``line`` is what `journal verify --totals` prints for it."""

    ok: bool
    line: str


def check_totals(journal: Journal) -> list[TotalsVerdict]:
    """Every sealed segment's totals, oldest first, then the open segment's."""
    verdicts = [
        _check_file(f"segment {sealed.file.base.segment}", sealed.file) for sealed in journal.sealed.after()
    ]
    verdicts.append(_check_file(f"segment {journal.file.base.segment} (open)", journal.file))
    return verdicts


def _check_file(label: str, file: JournalFile) -> TotalsVerdict:
    if not file.has_totals:
        return TotalsVerdict(
            True, f"{label}: no totals (schema {file.schema_version}): its readers fold its entries"
        )
    old_reading = not file.totals_current
    try:
        rows, stored_rows = _read_in_one_snapshot(file)
    except sqlite3.Error as error:
        return TotalsVerdict(
            False, f"{label}: cannot read its entries or totals: {sqlite_reason(error, file.path)}"
        )
    except JournalError as error:
        reason = str(error).removeprefix(f"journal {file.path}: ")
        return TotalsVerdict(False, f"{label}: cannot recount its entries: {reason}")
    folding: list[_Row] = []  # the entry being folded: named when its payload is not its kind's shape

    def tracked() -> Iterator[_Row]:
        for row in rows:
            folding[:] = [row]
            yield row

    try:
        folded = totals_by_period(tracked(), before_progressive_net=old_reading)
    except (LookupError, TypeError, ValueError, AttributeError) as error:
        # A JSON object that is not its kind's shape (an edited payload; the chain check says so too).
        what = f"entry {folding[0][0]}: payload is not a {folding[0][1]}" if folding else "an entry is not"
        return TotalsVerdict(
            False, f"{label}: cannot recount its entries: {what} ({type(error).__name__}: {error})"
        )
    stored: dict[str, Counter[str]] = {}
    for period, key, value in stored_rows:
        if not isinstance(value, int):
            return TotalsVerdict(
                False, f"{label}: cannot read its totals: {period} {key} is {value!r}, not cents"
            )
        stored.setdefault(str(period), Counter())[str(key)] = value
    differences = [
        f"{period} {key}: stored {stored.get(period, Counter()).get(key)}, the entries give "
        f"{folded.get(period, Counter()).get(key)}"
        for period in sorted(set(stored) | set(folded))
        for key in sorted(set(stored.get(period, {})) | set(folded.get(period, {})))
        if stored.get(period, Counter()).get(key) != folded.get(period, Counter()).get(key)
    ]
    if differences:
        shown = "; ".join(differences[:_DIFFERENCES_SHOWN])
        more = (
            f" (and {len(differences) - _DIFFERENCES_SHOWN} more)"
            if len(differences) > _DIFFERENCES_SHOWN
            else ""
        )
        return TotalsVerdict(False, f"{label}: totals differ from its entries: {shown}{more}")
    line = f"{label}: totals of {len(stored)} periods agree with its entries"
    if old_reading:
        line += (
            f" as schema {file.schema_version} counted them (the progressive's net left out of each "
            "round's balance)"
        )
        if holds_progressive_wager(stored.get("all", Counter())):
            line += "; the meters fold its entries instead"
    return TotalsVerdict(True, line)


_Row = tuple[int, str, str | None, str, Mapping[str, Any]]


def _read_in_one_snapshot(file: JournalFile) -> tuple[list[_Row], list[tuple[Any, ...]]]:
    """The entries and the stored totals, read in one read transaction: one WAL snapshot, so a round
    appended by the live table between the two reads is in neither (in autocommit each SELECT takes its
    own snapshot, and the totals would hold a round the recount never saw: a false difference)."""
    with file.lock:
        connection = file.connection
        owned = not connection.in_transaction
        if owned:
            connection.execute("BEGIN")
        try:
            rows = list(counted_rows(connection, file.path))
            stored_rows = connection.execute("SELECT period, key, value FROM journal_totals").fetchall()
        finally:
            if owned and connection.in_transaction:
                connection.execute("COMMIT")  # only read: ends the snapshot, writes nothing
    return rows, stored_rows

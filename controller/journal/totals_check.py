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

from collections import Counter
from dataclasses import dataclass

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
    with file.lock:
        rows = list(counted_rows(file.connection, file.path))
        stored_rows = file.connection.execute("SELECT period, key, value FROM journal_totals").fetchall()
    folded = totals_by_period(rows, before_progressive_net=old_reading)
    stored: dict[str, Counter[str]] = {}
    for period, key, value in stored_rows:
        stored.setdefault(str(period), Counter())[str(key)] = int(value)
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

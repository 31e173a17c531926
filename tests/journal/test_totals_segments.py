"""The totals and the round index across sealed segments (docs/journal.md "Totals and indexes",
"Segments and seals"): each segment file keeps its own entries' totals; the journal's meters, a range's
and recall by range and seat read them all and equal the fold of the whole journal."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from controller.journal import Journal
from controller.journal.meters import compute_meters, fold_meters, range_totals
from controller.journal.seals import seal_numbers
from controller.panel.shift_meters import RANGE_KINDS, day_range, fold_range
from tests.journal.test_segments import three_segments

CLOSING = ("round_settled", "round_dead", "round_voided")


def test_totals_and_the_round_index_span_every_segment(tmp_path: Path) -> None:
    path = tmp_path / "journal.sqlite"
    three_segments(path)
    assert seal_numbers(path) == [1, 2, 3]
    with Journal.open_existing(path) as journal:
        assert journal.file.has_totals
        assert compute_meters(journal).to_json() == fold_meters(journal).to_json()
        entries = list(journal.entries(kinds=list(RANGE_KINDS)))
        first = datetime.fromisoformat(entries[0].time_utc.removesuffix("Z")).replace(tzinfo=UTC)
        last = datetime.fromisoformat(entries[-1].time_utc.removesuffix("Z")).replace(tzinfo=UTC)
        start_utc, end_utc = day_range(first.date().isoformat(), last.date().isoformat())
        stored = range_totals(journal, start_utc, end_utc)
        assert stored is not None
        folded = fold_range(entries, start_utc, end_utc)
        assert stored.meters.to_json() == folded.meters.to_json()
        assert list(stored.meters.history) == list(folded.meters.history)
        closings = [entry for entry in entries if entry.kind in CLOSING]
        assert len({entry.seq for entry in closings}) == 12
        assert journal.indexes.closed_round_seqs() == [entry.seq for entry in closings]
        assert journal.indexes.closed_round_seqs(last=5) == [entry.seq for entry in closings][-5:]
        seat_one = [
            entry.seq
            for entry in closings
            if 1 in {seat["seat"] for seat in (entry.public.get("settlement") or {}).get("seats") or []}
        ]
        assert journal.indexes.closed_round_seqs(seat=1, start_utc=start_utc, end_utc=end_utc) == seat_one

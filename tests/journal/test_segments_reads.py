"""Reads across sealed segments in time independent of the journal's age (docs/journal.md "Segments and
seals", "Totals and indexes"): an entry, a round's entries and a range by seat read the segment that
holds them, found by the seals (a binary search), never the segments between them and the journal's
end. Shown on real files by moving every other sealed segment away: the reads still answer."""

from __future__ import annotations

import os
from pathlib import Path

from controller.journal import Journal
from controller.journal.kinds import CLOSING_KINDS
from controller.journal.recall import recall_from
from controller.journal.segments import read_seal, segment_file
from tests.journal.test_segments import three_segments


def _seats(settlement: object) -> list[int]:
    seats = settlement.get("seats") if isinstance(settlement, dict) else None
    return [int(s["seat"]) for s in seats or [] if isinstance(s, dict) and s.get("seat") is not None]


def test_a_round_of_the_first_segment_is_read_from_it_alone(tmp_path: Path) -> None:
    path = tmp_path / "journal.sqlite"
    three_segments(path)
    first, second = read_seal(path, 1), read_seal(path, 2)
    assert first is not None
    assert second is not None
    with Journal.open_existing(path) as journal:
        closing = next(
            entry
            for entry in journal.entries(kinds=sorted(CLOSING_KINDS))
            if entry.seq <= first.last_seq and _seats(entry.public.get("settlement"))
        )
    assert closing.round_id is not None
    seat = _seats(closing.public.get("settlement"))[0]
    away = tmp_path / "away"
    away.mkdir()
    for number in (2, 3):  # the segments between it and the open one: reading them would fail
        os.replace(segment_file(path, number), away / segment_file(path, number).name)
    with Journal.open_existing(path) as journal:
        entry = journal.entry(closing.seq)
        assert entry is not None
        assert entry.hash == closing.hash
        events = journal.round_entries(closing.round_id, closing.seq)
        assert [e.seq for e in events][-1] >= closing.seq
        assert {e.round_id for e in events} == {closing.round_id}
        found = recall_from(journal, start_utc=closing.time_utc, end_utc=second.first_utc, seat=seat, last=20)
    assert found[0]["round_id"] == closing.round_id
    assert found[0]["stored"]["segment"] == 1

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
from tests.journal.test_segments import batches, build, three_segments


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


def test_a_sealed_segment_in_use_is_not_closed_when_other_reads_push_it_out(tmp_path: Path) -> None:
    """The journal keeps the last few sealed segments open for its readers; the panel reads on threads
    of its own, so a segment pushed out of those few while a reader still holds it stays open for that
    reader and is closed by it (a reviewer's finding: it was closed under the reader)."""
    path = tmp_path / "journal.sqlite"
    rounds = batches()
    build(path, [rounds[i : i + 2] for i in range(0, 12, 2)] + [rounds[12:]])
    seals = [read_seal(path, number) for number in range(1, 7)]
    assert all(seal is not None for seal in seals)
    firsts = [seal.first_seq for seal in seals if seal is not None]
    with Journal.open_existing(path) as journal:
        with journal._sealed_holding(firsts[0]) as held:  # a reader on another thread, say
            assert held is not None
            for seq in firsts[1:]:  # other readers read five other sealed segments meanwhile
                assert journal.entry(seq) is not None
            entry = held.entry(firsts[0])  # the first reader goes on in its segment
        assert entry is not None
        assert entry.seq == firsts[0]
        assert journal.entry(firsts[0]) is not None  # and it is read again after, opened anew

"""Reads across sealed segments in time independent of the journal's age (docs/journal.md "Segments and
seals", "Totals and indexes"): an entry, a round's entries and a range by seat read the segment that
holds them, found by the seals (a binary search), never the segments between them and the journal's
end. Shown on real files by moving every other sealed segment away: the reads still answer."""

from __future__ import annotations

import dataclasses
import functools
import os
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import msgspec

from controller.journal import Journal
from controller.journal.kinds import CLOSING_KINDS
from controller.journal.meters import range_totals
from controller.journal.proof import prepare_for_run
from controller.journal.recall import recall_from
from controller.journal.seals import read_seal, segment_file
from controller.names import format_round_id
from tests.journal.test_segments import KEY, anchor_head, batches, build, seal_now, three_segments


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
        events = journal.reader.round_entries(closing.round_id, closing.seq)
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
        with journal.sealed.holding(firsts[0]) as held:  # a reader on another thread, say
            assert held is not None
            for seq in firsts[1:]:  # other readers read five other sealed segments meanwhile
                assert journal.entry(seq) is not None
            entry = held.entry(firsts[0])  # the first reader goes on in its segment
        assert entry is not None
        assert entry.seq == firsts[0]
        assert journal.entry(firsts[0]) is not None  # and it is read again after, opened anew


def _at(moment: datetime) -> datetime:
    return moment


def _numbered(rounds: list[list[Any]]) -> list[list[Any]]:
    """The rounds with the ids a table gives them (names.format_round_id: day and the journal's count of
    rounds started), as `run` numbers them (Journal.next_round_id)."""
    out: list[list[Any]] = []
    count = 0
    ids: dict[str, str] = {}
    for batch in rounds:
        records = []
        for record in batch:
            if record.round_id is None:
                records.append(record)
                continue
            if record.kind == "round_started":
                count += 1
                ids[record.round_id] = format_round_id("T1", date(2026, 12, 1), count)
            new_id = ids[record.round_id]
            changes: dict[str, Any] = {"round_id": new_id}
            if record.kind == "round_started":
                if hasattr(record, "entry"):
                    changes["entry"] = msgspec.structs.replace(record.entry, round_id=new_id)
                else:
                    changes["payload"] = {**record.payload, "round_id": new_id}
            records.append(dataclasses.replace(record, **changes))
        out.append(records)
    return out


def test_a_numbered_round_and_a_shifts_meters_of_the_first_segment_are_read_from_it_alone(
    tmp_path: Path,
) -> None:
    """A round's id names its number (the count of rounds started): the seals' counts name the segment it
    is in, found by bisection, not by walking every newer segment (`recall --round`, the panel's
    /recall/{id}). A range's hour and day totals are read from the segments whose times cover it (a
    shift's meters, the panel's /meters), not from every sealed segment. Before: "sealed segment 3 is
    missing" for both."""
    path = tmp_path / "journal.sqlite"
    rounds = _numbered(batches())
    parts = [rounds[:4], rounds[4:8], rounds[8:12], rounds[12:]]
    prepare_for_run(path, "T1", key=KEY)
    for index, part in enumerate(parts):  # each segment dealt in an hour of its own
        at = datetime(2026, 12, 1, 6 + index, 5, tzinfo=UTC)
        with Journal.open(path, "T1", synchronous="OFF", clock=functools.partial(_at, at)) as journal:
            for batch in part:
                journal.append_many(batch)
            anchor_head(path, journal, KEY)
        if index < len(parts) - 1:
            seal_now(path, KEY)
    first = read_seal(path, 1)
    assert first is not None
    with Journal.open_existing(path) as journal:
        closing = next(journal.entries(kinds=sorted(CLOSING_KINDS)))
        assert closing.seq <= first.last_seq
        assert closing.round_id is not None
        hour = closing.time_utc[:13] + ":00:00.000000Z"
        whole = journal.indexes.period_totals([f"h:{closing.time_utc[:13]}"])
    end = (datetime.fromisoformat(hour.removesuffix("Z")) + timedelta(hours=1)).strftime(
        "%Y-%m-%dT%H:%M:%S.%fZ"
    )
    away = tmp_path / "away"
    away.mkdir()
    for number in (2, 3):  # the segments between it and the open one: reading them would fail
        os.replace(segment_file(path, number), away / segment_file(path, number).name)
    with Journal.open_existing(path) as journal:
        found = recall_from(journal, round_id=closing.round_id)
        totals = range_totals(journal, hour, end)
        assert journal.indexes.period_totals([f"h:{closing.time_utc[:13]}"]) == whole
    assert found[0]["round_id"] == closing.round_id
    assert found[0]["stored"]["segment"] == 1
    assert totals is not None
    assert totals.meters.rounds_started == whole["rounds_started"]

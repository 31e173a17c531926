"""The append counts its totals from the typed entries it has just built (controller/journal/writer.py
``_prepare_entry`` -> controller/journal/totals.py ``record_typed``), never decoding a metered entry a
second time from its public part, and the totals it stores are the same rows as before.

A real journal through the real engine (tests/journal/scripted.py): rounds settled, dead and voided,
faults raised and cleared. Its typed entries are appended again to a second journal with the decoder
from public parts (``entries.from_parts``) made to fail: the append succeeds, and the second file's
totals and round index equal the first's row for row.
"""

from __future__ import annotations

import random
import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from controller.journal import Journal
from controller.journal import entries as typed
from controller.journal.kinds import METER_KINDS
from controller.journal.rows import PendingEntry
from tests.journal.scripted import play_round

# One fixed time for both journals: their totals' periods and round rows then compare as they are.
AT = datetime(2026, 11, 30, 21, 0, tzinfo=UTC)


def _stored(path: Path) -> dict[str, list[tuple[Any, ...]]]:
    with sqlite3.connect(path) as connection:
        return {
            table: connection.execute(f"SELECT * FROM {table} ORDER BY 1, 2").fetchall()
            for table in ("journal_totals", "journal_rounds", "journal_round_seats")
        }


def test_the_append_counts_the_typed_entries_it_built_without_decoding_them_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(4)
    first = tmp_path / "first.sqlite"
    with Journal.open(first, "T1", clock=lambda: AT, synchronous="OFF") as journal:
        for game, outcome in (
            ("high-card-flush", "settled"),
            ("top-flush", "dead"),
            ("chase-the-flush", "void"),
            ("top-flush", "settled"),
        ):
            play_round(journal, rng, game=game, outcome=outcome, past_post=True)  # type: ignore[arg-type]
    with Journal.open_existing(first) as journal:
        # Each stored entry's typed entry, decoded now (before the decoder is made to fail).
        pending = [PendingEntry(s.kind, s.entry, s.round_id, s.source) for s in journal.entries()]
    assert {p.kind for p in pending} >= set(METER_KINDS)

    def no_second_decode(kind: str, public: Any, private: Any) -> typed.Entry:
        raise AssertionError(f"{kind} decoded again from its public part on the append")

    monkeypatch.setattr(typed, "from_parts", no_second_decode)
    second = tmp_path / "second.sqlite"
    with Journal.open(second, "T1", clock=lambda: AT, synchronous="OFF") as journal:
        for start in range(0, len(pending), 25):  # commits of a few entries, as the engine's
            journal.append_many(pending[start : start + 25])
    monkeypatch.undo()

    before, after = _stored(first), _stored(second)
    assert before["journal_totals"], "the first journal counted nothing"
    assert after == before

"""Property: whatever entry a crash cuts a table's life at, recovery closes every round exactly once,
returns exactly what every interrupted round held (its locked wagers and every raise, play or all-in
already decided — the crash points include the decision entries), and the meters balance."""

from __future__ import annotations

import random
import tempfile
from collections.abc import Iterable
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from controller.journal import Journal, JournalEntry
from controller.journal.meters import compute_meters
from controller.journal.recovery import recover
from controller.journal.store import AppendItem
from controller.journal.verify import verify_chain
from tests.journal.scripted import Outcome, play_round
from tests.journal.wagered import returned_stakes, wagered_in_round


class Crash(Exception):
    """The process died here."""


class CrashingJournal(Journal):
    """Dies (raises) when asked for its ``crash_after``-th entry: that entry is never committed."""

    crash_after = 10**9

    def append_many(self, items: Iterable[AppendItem]) -> list[JournalEntry]:
        pending = list(items)
        if self.crash_after < len(pending):
            super().append_many(pending[: self.crash_after])
            raise Crash
        self.crash_after -= len(pending)
        return super().append_many(pending)


def closing_entries(journal: Journal) -> list[JournalEntry]:
    return list(journal.entries(kinds=["round_settled", "round_dead", "round_voided"]))


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32), lives=st.lists(st.integers(0, 180), min_size=1, max_size=5))
def test_any_crash_point_recovers_exactly(seed: int, lives: list[int]) -> None:
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "journal.sqlite"
        for entries_before_crash in lives:  # each life: start, recover, play until the crash
            # The logic is under test here, not the disk (test_crash and test_append_only cover that).
            journal = CrashingJournal.open(path, "T1", synchronous="OFF")
            assert isinstance(journal, CrashingJournal)
            recover(journal)
            journal.crash_after = entries_before_crash
            try:
                for _ in range(5):
                    game = rng.choice(("high-card-flush", "top-flush", "chase-the-flush"))
                    mode = (
                        "designated-player" if game == "high-card-flush" and rng.random() < 0.4 else "house"
                    )
                    outcome: Outcome = rng.choice(("settled", "settled", "dead"))
                    play_round(
                        journal, rng, game=game, banking_mode=mode, outcome=outcome, batch=rng.random() < 0.5
                    )
            except Crash:
                pass
            journal.close()
        with Journal.open(path, "T1") as journal:
            recover(journal)
            started = [str(entry.round_id) for entry in journal.entries(kinds=["round_started"])]
            closed = [str(entry.round_id) for entry in closing_entries(journal)]
            assert sorted(closed) == sorted(started)  # every round closed, none twice
            for voided in journal.entries(kinds=["round_voided"]):
                # Everything the round held goes back: the locked wagers and every decided raise/play/all-in.
                expected = wagered_in_round(journal, voided.round_id)
                assert returned_stakes(voided.payload["settlement"]) == expected
            assert compute_meters(journal).balanced
        assert verify_chain(path).ok

"""Every reader of the meters counts a journal alike (docs/journal.md "Meters": the one fold).

One real journal through the real engine (tests/journal/scripted.py) holds every closing kind — rounds
settled (house-banked and designated-player), dead, voided by a supervisor and voided by recovery after a
restart — and faults raised and cleared. The reducer's meters, the panel's range fold, the stored totals,
the floor's gaming-day figures, the floor's round rows and the daemon's run summary are read from it and
compared field by field: a reader that counted one kind otherwise (a void as dead, say) would differ here.
And the one fold changed (a closing or a fault counted otherwise) reaches the floor's readers too: they
count through it, not beside it.
"""

from __future__ import annotations

import io
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TextIO

import pytest

from controller.config import TableConfig, load_config
from controller.daemon_outputs import CommittedOutputs
from controller.daemon_start import RunOptions, RunSummary
from controller.engine import JournalRecord
from controller.floor.checks import FloorStored, TableProjection, fold_stored
from controller.floor.gaming_day import DayEntry, fold_day
from controller.floor.store import round_rows
from controller.journal import Journal
from controller.journal.kinds import CLOSING_KINDS, FAULT_RAISED, METER_KINDS
from controller.journal.meters import compute_meters, fold_meters, range_totals
from controller.journal.recovery import recover
from controller.journal.state import TableState
from controller.journal.state_parts import Meters
from controller.panel.shift_meters import RANGE_KINDS, day_range, fold_range
from tests.journal.scripted import Outcome, play_round

START = datetime(2026, 11, 30, 21, 0, tzinfo=UTC)
# (game, banking, outcome) of each round, in order: every closing kind, both bankings; the last round of
# the first run is left open (the controller died) and the restart's recovery voids it.
FIRST_RUN: tuple[tuple[str, str, Outcome], ...] = (
    ("high-card-flush", "house", "settled"),
    ("top-flush", "house", "dead"),
    ("chase-the-flush", "house", "void"),
    ("high-card-flush", "designated-player", "settled"),
    ("top-flush", "house", "settled"),
    ("high-card-flush", "house", "open_after_lock"),
)
SECOND_RUN: tuple[tuple[str, str, Outcome], ...] = (
    ("chase-the-flush", "house", "settled"),
    ("high-card-flush", "designated-player", "void"),
    ("high-card-flush", "house", "dead"),
    ("top-flush", "house", "settled"),
)


class SteppingClock:
    """The journal's clock, injected: a few seconds on at each reading, past midnight on the way."""

    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> datetime:
        self.now += timedelta(seconds=97)
        return self.now


class RunInTheTest:
    """The daemon's run as CommittedOutputs reads it (``RunsTheTable``): its summary and options; no
    rounds printed, no integrity check, no stop (a test double: no daemon runs here)."""

    def __init__(self, journal: Journal, config: TableConfig) -> None:
        self.summary = RunSummary()
        self.options = RunOptions(print_rounds=False, integrity_every_rounds=0)
        self.out: TextIO = io.StringIO()
        self.config = config
        self._journal = journal

    @property
    def journal(self) -> Journal:
        return self._journal

    def request_stop(self) -> None:
        raise AssertionError("no stop was asked for")


def _play(journal: Journal, rng: random.Random, rounds: tuple[tuple[str, str, Outcome], ...]) -> None:
    for game, banking, outcome in rounds:
        play_round(
            journal,
            rng,
            game=game,
            banking_mode=banking,
            outcome=outcome,
            over_limit_rate=0.3,
            past_post=True,
        )


def _floor_figures(meters: Meters) -> dict[str, Any]:
    """The meters as the floor's gaming day names them (controller/floor/gaming_day.py DayFigures)."""
    return {
        "rounds_settled": meters.rounds_settled,
        "rounds_dead": meters.rounds_dead,
        "rounds_voided": meters.rounds_voided,
        "handle_cents": meters.handle_cents,
        "win_cents": meters.house_win_cents,
        "dead_hands": meters.dead_hands,
        "faults": meters.faults_raised,
        "handle_by_wager_cents": {w: m.stake_cents for w, m in meters.by_wager.items() if m.stake_cents},
    }


def _journal_of_every_closing(tmp_path: Path) -> Path:
    rng = random.Random(29)
    clock = SteppingClock()
    path = tmp_path / "journal.sqlite"
    with Journal.open(path, "T1", clock=clock, synchronous="OFF") as journal:
        _play(journal, rng, FIRST_RUN)
    with Journal.open(path, "T1", clock=clock, synchronous="OFF") as journal:
        recover(journal)  # the restart: the round left open is voided
        _play(journal, rng, SECOND_RUN)
    return path


# The columns of a floor_rounds row (controller/floor/store.py ``round_rows``) that hold its meters.
_HANDLE, _WIN, _RAKE = 9, 10, 11


def _floor_round_meters(journal: Journal) -> dict[str, int]:
    """The floor's round rows of the journal, summed: every entry read back as the floor holds it
    (``FloorStored``) through the floor's fold (``fold_stored``), every round touched, its row written."""
    projection = TableProjection("T1", state=TableState("T1"))
    for stored in journal.entries():
        fold_stored(
            projection,
            FloorStored(stored.seq, stored.time_utc, "T1", stored.round_id, stored.source, stored.entry),
        )
        if stored.round_id is not None:
            projection.touched_rounds.add(stored.round_id)
    rows = list(round_rows([projection]))
    assert {row[5] for row in rows} == {"settled", "dead", "void"}
    return {
        "handle_cents": sum(row[_HANDLE] for row in rows),
        "house_win_cents": sum(row[_WIN] for row in rows),
        "rake_cents": sum(row[_RAKE] for row in rows),
    }


def _reducer_round_meters(meters: Meters) -> dict[str, int]:
    return {
        "handle_cents": meters.handle_cents,
        "house_win_cents": meters.house_win_cents,
        "rake_cents": meters.rake_cents,
    }


def test_the_reducer_the_panel_the_totals_the_floor_and_the_daemon_count_alike(tmp_path: Path) -> None:
    path = _journal_of_every_closing(tmp_path)
    with Journal.open_existing(path) as journal:
        entries = list(journal.entries(kinds=list(RANGE_KINDS)))
        kinds = [stored.kind for stored in entries]
        # The journal holds what the comparison is about: every closing kind, faults raised and cleared,
        # a designated-player round, a wager returned, a dead hand.
        reducer = fold_meters(journal)
        assert {"round_settled", "round_dead", "round_voided", "fault_raised", "fault_cleared"} <= set(kinds)
        assert (reducer.rounds_started, reducer.rounds_settled, reducer.rounds_dead) == (10, 5, 2)
        assert reducer.rounds_voided == 3  # two by a supervisor, one by recovery
        assert reducer.dp_net_cents != 0
        assert reducer.returned_cents > 0
        assert reducer.dead_hands > 0
        expected = reducer.to_json()

        # The panel's range fold and the stored totals, over every day the journal covers.
        first, last = entries[0].time_utc[:10], entries[-1].time_utc[:10]
        whole = day_range(first, last)
        folded = fold_range(entries, *whole)
        assert folded.meters.to_json() == expected
        assert list(folded.meters.history) == list(reducer.history)
        assert compute_meters(journal).to_json() == expected
        stored = range_totals(journal, *whole)
        assert stored is not None
        assert stored.meters.to_json() == expected
        assert (stored.stakes, stored.dp_rounds) == (folded.stakes, folded.dp_rounds)
        assert folded.dp_rounds == 2
        assert folded.stakes

        # The floor's gaming-day fold of the same entries (their public parts, as a table sends them).
        rows = [
            DayEntry("T1", stored_entry.kind, stored_entry.time_utc, stored_entry.public)
            for stored_entry in entries
        ]
        figures = fold_day(rows, *whole)["T1"]
        floor = {name: getattr(figures, name) for name in _floor_figures(reducer)}
        assert floor == _floor_figures(reducer)
        # The floor's round rows (floor_rounds: the meters by table, pit, game and shift sum them).
        assert _floor_round_meters(journal) == _reducer_round_meters(reducer)

        # The one fold moves a meter for exactly the kinds the readers read (METER_KINDS), no other.
        every = list(journal.entries())
        moved = {stored_entry.kind for stored_entry in every if Meters().count(stored_entry.entry, "")}
        assert moved == set(METER_KINDS)
        assert len({stored_entry.kind for stored_entry in every}) > len(METER_KINDS)

        # The daemon's run summary, counting the same closing entries as they were committed.
        run = RunInTheTest(journal, load_config())
        outputs = CommittedOutputs(run, send=lambda _command: None, start_integrity_check=lambda: None)
        outputs.act([JournalRecord.typed(s.entry, s.round_id, "engine") for s in entries])
        summary = run.summary
        assert (summary.rounds_settled, summary.rounds_dead, summary.rounds_voided) == (
            reducer.rounds_settled,
            reducer.rounds_dead,
            reducer.rounds_voided,
        )
        # The rounds the run closed, against the journal's closing entries counted here, not through the
        # one fold (the line above compares the run's three counts with the reducer's, both by
        # Meters.count): each closing entry a different round, each counted once.
        closings = list(journal.entries(kinds=sorted(CLOSING_KINDS)))
        assert len({closing.round_id for closing in closings}) == len(closings)
        assert summary.rounds_closed == len(closings)


def test_a_change_to_the_one_fold_reaches_the_floors_round_rows_and_gaming_day(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fold changed (a cent more of handle for each closed round, each fault counted twice): the
    floor's round rows and gaming-day figures move with the reducer's, since they count through it."""
    path = _journal_of_every_closing(tmp_path)
    count, count_closing = Meters.count, Meters.count_closing

    def count_otherwise(self: Meters, entry: Any, round_id: str, *, time_utc: str = "") -> bool:
        moved = count(self, entry, round_id, time_utc=time_utc)
        if entry.kind == FAULT_RAISED:
            self.faults_raised += 1
        return moved

    def count_closing_otherwise(self: Meters, entry: Any, round_id: str, *, time_utc: str = "") -> None:
        count_closing(self, entry, round_id, time_utc=time_utc)
        self.handle_cents += 1

    monkeypatch.setattr(Meters, "count", count_otherwise)
    monkeypatch.setattr(Meters, "count_closing", count_closing_otherwise)
    with Journal.open_existing(path) as journal:
        reducer = fold_meters(journal)
        entries = list(journal.entries(kinds=list(RANGE_KINDS)))
        closed = sum(1 for stored in entries if stored.kind in CLOSING_KINDS)
        faults = sum(1 for stored in entries if stored.kind == FAULT_RAISED)
        assert (closed, faults) != (0, 0)
        assert reducer.faults_raised == 2 * faults  # the reducer counts through the changed fold
        assert _floor_round_meters(journal) == _reducer_round_meters(reducer)
        whole = day_range(entries[0].time_utc[:10], entries[-1].time_utc[:10])
        rows = [DayEntry("T1", stored.kind, stored.time_utc, stored.public) for stored in entries]
        figures = fold_day(rows, *whole)["T1"]
        assert (figures.handle_cents, figures.faults) == (reducer.handle_cents, reducer.faults_raised)

"""The per-period totals and the round index (controller/journal/totals.py) equal the fold, exactly.

Random journals through the real engine and journal (tests/journal/scripted.py): games, banking, dead
and open rounds, over-limit refusals and past-posting, supervisors' faults, with the clock jumping across
hours and days, and the journal closed and reopened (a restart) between batches. Whatever the journal,
the stored totals read as the reducer's fold gives: the whole journal's meters, any shift's or day's or
range of days', and recall by time range and seat lists what a full scan lists. (Across SIGKILL at random
moments: tests/journal/test_crash.py checks the same after every kill.)
"""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controller.journal import Journal
from controller.journal.meters import compute_meters, fold_meters, range_totals
from controller.journal.recall import recall_from
from controller.journal.recovery import recover
from controller.journal.schema import counted_rows
from controller.journal.totals import RoundFilter, range_periods, round_row, scanned_round_seqs
from controller.panel.shift_meters import RANGE_KINDS, day_range, fold_range, shift_range
from tests.journal.scripted import play_round

START = datetime(2026, 11, 30, 21, 0, tzinfo=UTC)
GAMES = ("high-card-flush", "top-flush", "chase-the-flush")
OUTCOMES = ("settled", "settled", "settled", "dead")
OPEN_OUTCOMES = ("open_after_lock", "open_before_lock", "open_mid_deal")


class SteppingClock:
    """The journal's clock: each reading a few seconds on, sometimes hours (a quiet night)."""

    def __init__(self, rng: random.Random) -> None:
        self.now = START
        self.rng = rng

    def __call__(self) -> datetime:
        roll = self.rng.random()
        self.now += timedelta(hours=self.rng.randint(1, 9)) if roll < 0.25 else timedelta(seconds=roll * 400)
        return self.now


def _play(journal: Journal, rng: random.Random, rounds: int, *, leave_open: bool = False) -> None:
    """``rounds`` rounds; with ``leave_open`` the last one stops mid-way, as if the controller died (the
    next start voids it)."""
    for number in range(rounds):
        game = rng.choice(GAMES)
        banking = "designated-player" if game == "high-card-flush" and rng.random() < 0.25 else "house"
        outcome = rng.choice(OPEN_OUTCOMES if leave_open and number == rounds - 1 else OUTCOMES)
        play_round(
            journal,
            rng,
            game=game,
            banking_mode=banking,
            outcome=outcome,  # type: ignore[arg-type]
            over_limit_rate=0.2,
            past_post=rng.random() < 0.15,
        )


def _ranges(first: datetime, last: datetime) -> list[tuple[str, str]]:
    """Every shift of every day the journal covers, each day, and the whole span in days."""
    out: list[tuple[str, str]] = []
    day = first.date() - timedelta(days=1)
    while day <= last.date():
        text = day.isoformat()
        out.extend(shift_range(text, shift) for shift in ("day", "swing", "grave"))
        out.append(day_range(text, text))
        day += timedelta(days=1)
    out.append(day_range(first.date().isoformat(), last.date().isoformat()))
    return out


def _check(journal: Journal) -> None:
    assert journal.file.has_totals
    assert compute_meters(journal).to_json() == fold_meters(journal).to_json()
    entries = list(journal.entries(kinds=list(RANGE_KINDS)))
    if not entries:
        return
    first = datetime.fromisoformat(entries[0].time_utc.removesuffix("Z")).replace(tzinfo=UTC)
    last = datetime.fromisoformat(entries[-1].time_utc.removesuffix("Z")).replace(tzinfo=UTC)
    for start_utc, end_utc in _ranges(first, last):
        stored = range_totals(journal, start_utc, end_utc)
        assert stored is not None
        assert range_periods(start_utc, end_utc) is not None
        folded = fold_range(entries, start_utc, end_utc)
        assert stored.meters.to_json() == folded.meters.to_json(), (start_utc, end_utc)
        assert list(stored.meters.history) == list(folded.meters.history), (start_utc, end_utc)
        assert stored.stakes == folded.stakes
        assert stored.dp_rounds == folded.dp_rounds
    # Recall by range and by seat through the round index lists the rounds a scan of every closing
    # entry finds.
    closings = [e for e in entries if e.kind in ("round_settled", "round_dead", "round_voided")]
    for start_utc, end_utc in _ranges(first, last)[-4:]:
        for seat in (None, 1, 3):
            expected = [
                e.round_id
                for e in closings
                if start_utc <= e.time_utc < end_utc
                and (
                    seat is None
                    or seat in {s["seat"] for s in (e.public.get("settlement") or {}).get("seats") or []}
                )
            ]
            found = recall_from(journal, start_utc=start_utc, end_utc=end_utc, seat=seat)
            assert [r["round_id"] for r in found] == expected
    for seat in (1, 3):  # a seat alone, all of its rounds and its last two
        expected_seqs = [
            e.seq
            for e in closings
            if seat in {s["seat"] for s in (e.public.get("settlement") or {}).get("seats") or []}
        ]
        assert journal.indexes.closed_round_seqs(seat=seat) == expected_seqs
        assert journal.indexes.closed_round_seqs(seat=seat, last=2) == expected_seqs[-2:]


@settings(
    max_examples=6,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    seed=st.integers(0, 10**6),
    batches=st.lists(st.tuples(st.integers(1, 8), st.booleans()), min_size=1, max_size=3),
)
def test_stored_totals_equal_the_fold_over_random_journals_and_restarts(
    tmp_path: Path, seed: int, batches: list[tuple[int, bool]]
) -> None:
    rng = random.Random(seed)
    clock = SteppingClock(random.Random(seed + 1))
    path = tmp_path / f"journal-{seed}-{len(batches)}-{sum(r for r, _ in batches)}.sqlite"
    for rounds, leave_open in batches:
        # Each batch is a restart: a new process opens the journal the same way and voids what the
        # last one left open (recovery, as the daemon's start does).
        with Journal.open(path, "T1", clock=clock, synchronous="OFF") as journal:
            recover(journal)
            _play(journal, rng, rounds, leave_open=leave_open)
            _check(journal)
    with Journal.open_existing(path) as reader:
        _check(reader)


def test_a_range_off_the_hour_is_folded(tmp_path: Path) -> None:
    rng = random.Random(3)
    with Journal.open(tmp_path / "j.sqlite", "T1", clock=SteppingClock(rng), synchronous="OFF") as journal:
        _play(journal, rng, 4)
        start_utc, end_utc = "2026-11-30T21:00:30.000000Z", "2026-12-01T00:00:00.000000Z"
        assert range_totals(journal, start_utc, end_utc) is None  # not whole hours: the caller folds
        assert range_periods("2026-11-30T21:00:00.000000Z", end_utc) == [
            "h:2026-11-30T21",
            "h:2026-11-30T22",
            "h:2026-11-30T23",
        ]
        assert range_periods("2026-11-30T00:00:00.000000Z", "2026-12-01T02:00:00.000000Z") == [
            "d:2026-11-30",
            "h:2026-12-01T00",
            "h:2026-12-01T01",
        ]


def test_a_file_without_the_round_index_finds_the_rounds_the_index_finds(tmp_path: Path) -> None:
    """The two ways one file answers ``closed_round_seqs``: the round index's SQL, and a scan of the
    closings (a file written before the index): one RoundFilter, the same seqs for every filter."""
    rng = random.Random(7)
    with Journal.open(tmp_path / "j.sqlite", "T1", clock=SteppingClock(rng), synchronous="OFF") as journal:
        _play(journal, rng, 12)
        with journal.file.lock:
            rows = list(counted_rows(journal.file.connection, journal.file.path))
        times = sorted(row[3] for row in rows)
        middle_utc = times[len(times) // 2]
        closed = [made for made in (round_row(*row) for row in rows) if made is not None]
        statuses = {made.status for made in closed}
        assert statuses >= {"settled", "dead"}  # the filter by status has something to tell apart
        found_any = 0
        for start_utc, end_utc in ((None, None), (None, middle_utc), (middle_utc, None)):
            for seat in (None, 1, 3):
                for status in (None, "settled", "dead"):
                    for last in (None, 2):
                        wanted = RoundFilter(start_utc, end_utc, seat, status)
                        indexed = journal.indexes.own_closed_round_seqs(wanted, last)
                        assert scanned_round_seqs(rows, wanted, last) == indexed, (wanted, last)
                        found_any += len(indexed)
        assert found_any > 0

"""SIGKILL while the daemon seals segments between rounds (docs/journal.md "Segments and seals"):
`flushtable run` with a tiny `segment_entries` (100: a round writes about 95 entries, so a segment is
due after nearly every round and sealed while the table runs) is killed at random moments and
restarted. Afterwards every sealed segment verifies on its own, the entries run 1..N with no gap and no
duplicate across the segments, `journal verify` passes and every round is closed exactly once. (The
seal's own steps killed one by one: tests/journal/test_segments_crash.py.)"""

from __future__ import annotations

from pathlib import Path

from controller.journal.seals import seal_numbers
from controller.journal.segments import verify_segments
from tests.daemon.crash import crash_repeatedly, daemon_command
from tests.daemon.harness import check_every_round_closed_once, entries, flushtable
from tests.daemon.test_segments_daemon import segmented_config

KILLS = 8
SEED = 20261205


def test_sigkill_while_sealing_between_rounds_loses_nothing_and_doubles_nothing(tmp_path: Path) -> None:
    config = segmented_config(tmp_path, segment_entries=100)
    journal_path = tmp_path / "journal.sqlite"
    report = crash_repeatedly(journal_path, kills=KILLS, seed=SEED, config=config, max_after_ready_s=2.0)
    assert report.kills >= KILLS
    sealed_before = len(seal_numbers(journal_path))
    final = flushtable(*daemon_command(journal_path, SEED, 50.0, rounds=3, config=config)[1:], timeout_s=120)
    assert final.returncode == 0, final.stderr[-2000:]
    numbers = seal_numbers(journal_path)
    assert numbers == list(range(1, len(numbers) + 1))
    # Three rounds of ~95 entries in one run: a start seals once at most, so the others were sealed
    # while it ran.
    assert len(numbers) >= sealed_before + 2, (sealed_before, numbers)
    verdicts = verify_segments(journal_path, key=None)
    assert all(verdict.ok for verdict in verdicts), [verdict.line for verdict in verdicts]
    all_entries = entries(journal_path)
    assert [entry.seq for entry in all_entries] == list(range(1, len(all_entries) + 1))
    verify = flushtable("journal", "verify", "--journal", str(journal_path))
    assert verify.returncode == 0, verify.stdout + verify.stderr
    check_every_round_closed_once(all_entries)

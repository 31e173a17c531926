"""Crash safety: a process appending to the journal is killed with SIGKILL at random moments; after
every kill the chain verifies and the last entry it saw committed is there, intact; recovery at the
next start voids the interrupted round once; at the end the meters balance.

SIGKILL leaves the operating system's buffers alone, so this tests SQLite's transaction and WAL
recovery against a process dying mid-write, not power loss (synchronous=FULL is what covers that,
checked in test_append_only)."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from controller.journal import Journal
from controller.journal.meters import compute_meters, fold_meters
from controller.journal.recovery import rebuild_state, recover
from controller.journal.verify import verify_chain
from tests.journal.wagered import returned_stakes, wagered_in_round

KILLS = 20
REPO = Path(__file__).resolve().parents[2]


def run_and_kill(journal_path: Path, seed: int, run_s: float, checkpoints: str) -> list[tuple[int, str]]:
    """Start the appender, let it run ``run_s`` after it is ready, SIGKILL it; the entries it reported."""
    child = subprocess.Popen(
        [sys.executable, "-m", "tests.journal.appender", str(journal_path), str(seed), checkpoints],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert child.stdout is not None
    try:
        assert child.stdout.readline() == "ready\n"
        time.sleep(run_s)
        os.kill(child.pid, signal.SIGKILL)
        out = child.stdout.read()
    finally:
        child.kill()
        child.wait(timeout=10)
        child.stdout.close()
    assert child.returncode == -signal.SIGKILL
    # A line cut off by the kill (no newline) was not reported.
    complete = out[: out.rfind("\n") + 1]
    return [(int(seq), hash_hex) for seq, hash_hex in (line.split() for line in complete.splitlines())]


# "sqlite": SQLite's automatic checkpoint inside the commits; "deferred": as the daemon runs them, a
# thread checkpointing beside the appends (docs/journal.md "Checkpoints").
@pytest.mark.parametrize("checkpoints", ["sqlite", "deferred"])
def test_sigkill_at_random_moments_never_breaks_the_chain_or_loses_a_commit(
    tmp_path: Path, checkpoints: str
) -> None:
    journal_path = tmp_path / "journal.sqlite"
    rng = random.Random(5)
    committed_total = 0
    for kill in range(KILLS):
        run_s = rng.uniform(0.02, 0.25)
        reported = run_and_kill(journal_path, seed=kill, run_s=run_s, checkpoints=checkpoints)
        result = verify_chain(journal_path)
        assert result.ok, f"after kill {kill}: {result.summary()}"
        with Journal.open_existing(journal_path) as journal:
            if reported:
                last_seq, last_hash = reported[-1]
                entry = journal.entry(last_seq)
                assert entry is not None, f"after kill {kill}: committed entry {last_seq} lost"
                assert entry.hash == last_hash
                # At most the one append in flight may have committed without being reported.
                assert journal.last_entry().seq in (last_seq, last_seq + 1)  # type: ignore[union-attr]
                committed_total += len(reported)
            # Each start voids what the previous run left open: never more than one round.
            assert len(rebuild_state(journal).open_rounds) <= 1
            # The totals and the round index are written in each append's own transaction: after any
            # kill they equal the fold of what was committed, nothing lost and nothing doubled.
            assert compute_meters(journal).to_json() == fold_meters(journal).to_json(), f"after kill {kill}"
            closing_seqs = [
                entry.seq for entry in journal.entries(kinds=["round_settled", "round_dead", "round_voided"])
            ]
            assert journal.indexes.closed_round_seqs() == closing_seqs, f"after kill {kill}"
    print(f"{KILLS} kills, {committed_total} entries reported committed")
    assert committed_total > KILLS  # the kills really landed among appends
    with Journal.open(journal_path, "T1") as journal:
        recover(journal)
        state = rebuild_state(journal)
        meters = compute_meters(journal)
        closings = [
            entry.round_id for entry in journal.entries(kinds=["round_settled", "round_dead", "round_voided"])
        ]
        # Every voided round gave back exactly what it held (the locked wagers and every decided raise,
        # play or all-in): money is conserved across the kills.
        for voided in journal.entries(kinds=["round_voided"]):
            expected = wagered_in_round(journal, voided.round_id)
            assert returned_stakes(voided.payload["settlement"]) == expected
    assert state.open_rounds == []
    assert len(closings) == len(set(closings)) == state.rounds_started  # every round closed exactly once
    assert meters.balanced
    print(f"rounds {state.rounds_started}, voided {meters.rounds_voided}, settled {meters.rounds_settled}")
    assert meters.rounds_voided >= 1
    assert verify_chain(journal_path).ok
